"""Issue 11, security: the operator's ServiceAccount (manifests/rbac.yaml) is refused what its
role does not grant, and nothing secret leaks: no token and no pod content in the operator's
info-level log, no pod content or name in /metrics."""

from __future__ import annotations

import secrets
from collections.abc import Callable

import pytest
import yaml

from fixtures_faults import FaultEnv, Scene
from fixtures_operator import service_account_token
from kubectl import condition, wait_for
from policy_scheduler.devcluster.kubeapi import ApiError, KubeApi


def test_service_account_is_refused_outside_its_role(faults: FaultEnv) -> None:
    (node,) = faults.cluster.create_nodes(1, prefix="security")
    try:
        sa = KubeApi(faults.cluster.server, service_account_token(faults.admin), faults.cluster.ca_file)
        refused = [
            ("DELETE", f"/api/v1/nodes/{node}"),
            ("GET", "/api/v1/namespaces/kube-system/secrets"),
            ("GET", "/api/v1/secrets"),
            ("PATCH", f"/api/v1/nodes/{node}"),
        ]
        for method, path in refused:
            body = {"metadata": {"labels": {"x": "y"}}} if method == "PATCH" else None
            with pytest.raises(ApiError) as err:
                sa.request(method, path, body)
            assert err.value.status == 403, (method, path, err.value)
        assert faults.admin.get("node", node)["metadata"]["name"] == node  # still there
    finally:
        faults.admin.delete("node", node)


def test_no_tokens_or_pod_contents_in_log_or_metrics(
    faults: FaultEnv, fault_scene: Callable[..., Scene]
) -> None:
    s = fault_scene("leaks")
    s.add_nodes(1, cpu="4")
    marker = f"do-not-log-{secrets.token_hex(6)}"
    spec = {
        "containers": [
            {
                "name": "c",
                "image": f"registry.example/{marker}:1",
                "command": ["/bin/sh", "-c", f"echo {marker}"],
                "env": [{"name": "PASSWORD", "value": marker}],
                "resources": {"requests": {"cpu": "100m"}},
            }
        ]
    }
    fits, too_big = s.pod("fits"), s.pod("too-big", cpu="64")
    for manifest in (fits, too_big):
        manifest["metadata"]["annotations"] = {"secret": marker}
        manifest["spec"]["containers"][0].update(spec["containers"][0])
    too_big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "64"}}
    s.create([fits, too_big])
    s.wait_bound(["fits"])

    def unschedulable() -> bool:
        cond = condition(s.pods()["too-big"], "PodScheduled")
        return bool(cond and cond["status"] == "False")

    wait_for("too-big reported unschedulable", unschedulable, timeout=60)

    log = faults.log_since(0)
    kubeconfig = yaml.safe_load(faults.operator_args[0].read_text())
    tokens = [faults.cluster.token, kubeconfig["users"][0]["user"]["token"]]
    assert all(token not in log for token in tokens), "a bearer token is in the operator's log"
    assert marker not in log, "pod contents are in the operator's log"
    metrics = faults.operator.metrics()
    assert marker not in metrics
    assert "too-big" not in metrics, "pod names are in /metrics"
    assert '"fits"' not in metrics, "pod names are in /metrics"
