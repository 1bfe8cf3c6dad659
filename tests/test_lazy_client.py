"""kube/lazy_client: kubernetes_asyncio's generated packages resolve names on first use, same names."""

from __future__ import annotations

from tests.fresh_interpreter import run_python as _run  # the packages must not be imported yet


def test_start_path_imports_no_generated_model_and_every_name_still_resolves() -> None:
    out = _run(
        """
        import sys
        from policy_scheduler.kube import lazy_client
        lazy_client.install()
        import kopf  # noqa: F401  (imports kubernetes_asyncio.client itself)
        import policy_scheduler.kube.client  # noqa: F401
        print(sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models.")))
        from kubernetes_asyncio import client
        from kubernetes_asyncio.client import models
        assert client.V1Lease is models.V1Lease
        assert client.V1Lease.__module__ == "kubernetes_asyncio.client.models.v1_lease"
        assert client.CoordinationV1Api.__module__ == "kubernetes_asyncio.client.api.coordination_v1_api"
        from kubernetes_asyncio.leaderelection.resourcelock.leaselock import LeaseLock  # noqa: F401
        missing = [name for name in client.__all__ if getattr(client, name, None) is None]
        print(len(client.__all__), missing, client.__version__)
        try:
            client.NoSuchThing
        except AttributeError:
            print("AttributeError")
        """
    )
    models, counts, error = out.splitlines()
    # kopf's thirdparty import takes V1ObjectMeta and V1OwnerReference, nothing else.
    assert models == str(
        [
            "kubernetes_asyncio.client.models.v1_object_meta",
            "kubernetes_asyncio.client.models.v1_owner_reference",
        ]
    )
    eager = _run("from kubernetes_asyncio import client; print(len(client.__all__), [], client.__version__)")
    assert counts == eager
    assert error == "AttributeError"


def test_modules_unused_at_start_run_on_first_attribute_access() -> None:
    out = _run(
        """
        import sys, types
        from policy_scheduler.kube import lazy_client
        lazy_client.install()
        import kopf  # noqa: F401
        import policy_scheduler.kube.client  # noqa: F401
        # LazyLoader turns a module into a plain module when it runs: until then its type differs.
        print(sorted(name for name in lazy_client.LAZY_MODULES if type(sys.modules[name]) is types.ModuleType))
        import urllib3
        print(urllib3.util.make_headers(basic_auth="a:b"))
        from kubernetes_asyncio import watch
        print(watch.Watch.__name__, type(sys.modules["urllib3"]) is types.ModuleType)
        """
    )
    executed, header, watch = out.splitlines()
    assert executed == "[]"
    assert header == "{'authorization': 'Basic YTpi'}"
    assert watch == "Watch True"
