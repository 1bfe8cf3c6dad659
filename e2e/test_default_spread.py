"""PodTopologySpread default constraints on the real control plane: a profile with
`defaultingType: List` spreads the pods of a Deployment (its ReplicaSet) and of a Service over
zones, though the pods set no topologySpreadConstraints of their own.

The profile scores with NodeResourcesFit MostAllocated only, so without default spreading the
replicas would pile onto one node (the control pods, selected by nothing, do just that).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from polling import wait_until

SCHEDULER = "default-spread-scheduler"
PROFILE = "e2e-default-spread"
NODE_LABEL = "e2e-spread"
ZONE = "topology.kubernetes.io/zone"
ZONES = ("spread-zone-a", "spread-zone-b", "spread-zone-c")
CPU = "4"

PROFILE_SPEC: dict[str, Any] = {
    "plugins": {"score": {"disabled": [{"name": "NodeResourcesBalancedAllocation"}]}},
    "pluginConfig": [
        {
            "name": "PodTopologySpread",
            "args": {
                "defaultingType": "List",
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"},
                ],
            },
        },
        {
            "name": "NodeResourcesFit",
            "args": {
                "scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}]}
            },
        },
    ],
}


@dataclass(frozen=True)
class SpreadNodes:
    zones: dict[str, str]  # node name -> zone
    token: str  # their NODE_LABEL value

    def zone_of(self, node: str) -> str:
        assert node in self.zones, f"pod on {node!r}, not one of our nodes"
        return self.zones[node]

    def node_selector(self) -> dict[str, Any]:
        return {"nodeSelector": {NODE_LABEL: self.token}}


@pytest.fixture(scope="module")
def spread_nodes(dev_cluster: DevCluster, kubectl: Kubectl, operator_process: Any) -> Iterator[SpreadNodes]:
    """Three nodes of our own, one per zone, and the profile."""
    # A value of this run only: nodes a crashed earlier run left behind are no candidates.
    token = f"run-{os.getpid()}"
    names = dev_cluster.create_nodes(
        3, prefix="spread", cpu="64", memory="256Gi", zones=ZONES, labels={NODE_LABEL: token}
    )
    kubectl.apply(profile(PROFILE, SCHEDULER, **PROFILE_SPEC))
    try:
        wait_until(
            "profile Ready",
            lambda: (
                (condition(kubectl.get("schedulingprofile", PROFILE), "Ready") or {}).get("status") == "True"
            ),
            timeout=30,
        )
        zones = {n: kubectl.get("node", n)["metadata"]["labels"][ZONE] for n in names}
        assert sorted(zones.values()) == sorted(ZONES)
        yield SpreadNodes(zones, token)
    finally:
        kubectl.delete("schedulingprofile", PROFILE)
        for name in names:
            kubectl.delete("node", name)


def _bound(kubectl: Kubectl, ns: str, count: int, selector: str) -> list[dict[str, Any]]:
    def all_bound() -> list[dict[str, Any]] | None:
        pods = kubectl.items("pods", ns, selector=selector)
        return pods if len(pods) == count and all(p["spec"].get("nodeName") for p in pods) else None

    result: list[dict[str, Any]] = wait_until(f"{count} pods bound in {ns}", all_bound, timeout=60)
    return result


def test_deployment_replicas_spread_over_zones(kubectl: Kubectl, spread_nodes: SpreadNodes) -> None:
    ns = "e2e-default-spread-deploy"
    kubectl.apply(namespace(ns))
    try:
        template = pod(
            "unused",
            ns,
            SCHEDULER,
            cpu=CPU,
            memory="1Gi",
            labels={"app": "spread-web"},
            extra_spec=spread_nodes.node_selector(),
        )
        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": ns},
            "spec": {
                "replicas": 6,
                "selector": {"matchLabels": {"app": "spread-web"}},
                "template": {"metadata": {"labels": {"app": "spread-web"}}, "spec": template["spec"]},
            },
        }
        kubectl.apply(deployment)
        pods = _bound(kubectl, ns, 6, "app=spread-web")
        for p in pods:
            [owner] = p["metadata"]["ownerReferences"]
            assert owner["kind"] == "ReplicaSet"
            assert owner["controller"] is True
        zones = Counter(spread_nodes.zone_of(p["spec"]["nodeName"]) for p in pods)
        assert zones == dict.fromkeys(ZONES, 2), zones
    finally:
        kubectl.delete("namespace", ns)


def test_service_pods_spread_and_unselected_pods_pile_up(kubectl: Kubectl, spread_nodes: SpreadNodes) -> None:
    ns = "e2e-default-spread-svc"
    kubectl.apply(namespace(ns))
    node_selector = spread_nodes.node_selector()
    try:
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "api", "namespace": ns},
            "spec": {"selector": {"app": "spread-api"}, "ports": [{"port": 80}]},
        }
        kubectl.apply(service)
        # Control first: pods no Service or controller selects get no default constraints, and
        # MostAllocated puts them all on one node.
        kubectl.create(
            *(
                pod(
                    f"loner-{i}",
                    ns,
                    SCHEDULER,
                    cpu=CPU,
                    memory="1Gi",
                    labels={"app": "loner"},
                    extra_spec=node_selector,
                )
                for i in range(3)
            )
        )
        loners = _bound(kubectl, ns, 3, "app=loner")
        assert len({p["spec"]["nodeName"] for p in loners}) == 1, [p["spec"]["nodeName"] for p in loners]

        kubectl.create(
            *(
                pod(
                    f"api-{i}",
                    ns,
                    SCHEDULER,
                    cpu=CPU,
                    memory="1Gi",
                    labels={"app": "spread-api"},
                    extra_spec=node_selector,
                )
                for i in range(6)
            )
        )
        pods = _bound(kubectl, ns, 6, "app=spread-api")
        zones = Counter(spread_nodes.zone_of(p["spec"]["nodeName"]) for p in pods)
        assert zones == dict.fromkeys(ZONES, 2), zones
    finally:
        kubectl.delete("namespace", ns)
