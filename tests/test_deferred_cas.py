"""kube/deferred_cas: aiohttp's default contexts get the system CAs after start-up, the same ones."""

from __future__ import annotations

import json
import os
import ssl

import pytest

from tests.fresh_interpreter import run_python


def _run(code: str, env: dict[str, str] | None = None) -> dict[str, object]:
    # A fresh interpreter: aiohttp must not have been imported yet.
    result: dict[str, object] = json.loads(run_python(code, env))
    return result


CHECK = """
    import json, os, ssl
    from policy_scheduler.kube import deferred_cas

    def cas():
        import aiohttp.connector as c
        contexts = [v for v in vars(c).values() if isinstance(v, ssl.SSLContext)]
        return [x.cert_store_stats()["x509_ca"] for x in contexts]

    first = deferred_cas.import_aiohttp()
    again = deferred_cas.import_aiohttp()
    before = cas()
    env = {name: os.environ.get(name) for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")}
    deferred_cas.load()
    after = cas()
    deferred_cas.load()
    print(json.dumps({"first": first, "again": again, "before": before, "after": after, "env": env,
                      "fresh": ssl.create_default_context().cert_store_stats()["x509_ca"]}))
"""


def test_the_contexts_start_without_cas_and_get_the_systems_own() -> None:
    if not ssl.create_default_context().cert_store_stats()["x509_ca"]:
        pytest.skip("this machine has no system CA certificates to load")
    out = _run(CHECK)
    assert out["first"] is True
    assert out["again"] is False  # imported already: nothing done
    # aiohttp's verified and unverified defaults, without CAs until `load`
    assert out["before"] == [0, 0]
    after = out["after"]
    # what aiohttp's own import would have loaded: the system's default CAs
    assert after == [out["fresh"], out["fresh"]]
    # as it was: this machine's own setting or none
    assert out["env"] == {name: os.environ.get(name) for name in ("SSL_CERT_FILE", "SSL_CERT_DIR")}


def test_a_ca_file_set_by_the_user_is_restored_and_is_what_gets_loaded(tmp_path: object) -> None:
    # The user's SSL_CERT_FILE: one CA (the system bundle's first certificate).
    bundle = ssl.get_default_verify_paths().cafile
    if bundle is None or not os.path.exists(bundle):
        pytest.skip("this machine has no CA bundle file")
    with open(bundle) as handle:
        text = handle.read()
    end = "-----END CERTIFICATE-----"
    one = text[text.index("-----BEGIN CERTIFICATE-----") : text.index(end) + len(end)] + "\n"
    path = os.path.join(str(tmp_path), "one.pem")
    with open(path, "w") as handle:
        handle.write(one)
    out = _run(CHECK, env={"SSL_CERT_FILE": path, "SSL_CERT_DIR": str(tmp_path)})
    assert out["env"] == {"SSL_CERT_FILE": path, "SSL_CERT_DIR": str(tmp_path)}
    assert out["before"] == [0, 0]
    assert out["after"] == [1, 1] == [out["fresh"], out["fresh"]]


def test_run_imports_aiohttp_through_it() -> None:
    out = _run(
        """
        import json, sys, types
        from unittest import mock
        from policy_scheduler.app import cli
        from policy_scheduler.kube import deferred_cas, prefetch
        # Stand-ins for what follows: no lists asked for, no operator run.
        stand_in = types.ModuleType("policy_scheduler.service.operator")
        stand_in.run_operator = lambda config: 0
        sys.modules[stand_in.__name__] = stand_in
        with mock.patch.object(prefetch, "start"):
            code = cli._run(cli.build_parser().parse_args(["run"]))
        print(json.dumps({"code": code, "deferred": len(deferred_cas._deferred)}))
        """
    )
    assert out == {"code": 0, "deferred": 2}
