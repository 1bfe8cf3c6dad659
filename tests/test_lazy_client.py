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
