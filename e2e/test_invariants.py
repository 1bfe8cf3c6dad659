"""The invariant checker catches each violation it claims to (no cluster needed)."""

from __future__ import annotations

from typing import Any

from invariants import Snapshot, violations


def node(
    name: str, cpu: str = "4", zone: str = "a", taints: list[dict[str, str]] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"zone": zone, "kubernetes.io/hostname": name}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "10"}},
    }


def pod(name: str, node_name: str = "", cpu: str = "1", **spec: Any) -> dict[str, Any]:
    labels = spec.pop("labels", {"app": "x"})
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": f"uid-{name}", "labels": labels},
        "spec": {
            "nodeName": node_name,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def snap(
    pods: list[dict[str, Any]], nodes: list[dict[str, Any]], events: list[dict[str, Any]] | None = None
) -> Snapshot:
    return Snapshot(pods, {n["metadata"]["name"]: n for n in nodes}, events or [], pods)


def event(reason: str, regarding: str, related: str = "", at: str = "2026-01-01T00:00:00Z") -> dict[str, Any]:
    e: dict[str, Any] = {
        "reason": reason,
        "regarding": {"name": regarding, "namespace": "ns", "uid": f"uid-{regarding}"},
        "eventTime": at,
        "metadata": {"creationTimestamp": at},
    }
    if related:
        e["related"] = {"name": related, "namespace": "ns"}
    return e


def test_a_clean_state_has_no_violations() -> None:
    s = snap([pod("a", "n1", "2"), pod("b", "n1", "2")], [node("n1")], [event("Scheduled", "a")])
    assert violations(s, expect_bound=["ns/a", "ns/b"]) == []


def test_each_violation_is_found() -> None:
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}}
            ]
        }
    }
    cases = {
        "not bound": snap([pod("a")], [node("n1")]),
        "more than once": snap([pod("a", "n1")], [node("n1")], [event("Scheduled", "a")] * 2),
        "allocatable cpu": snap([pod("a", "n1", "3"), pod("b", "n1", "2")], [node("n1")]),
        "node selection": snap([pod("a", "n1", nodeSelector={"zone": "b"})], [node("n1")]),
        "does not tolerate": snap(
            [pod("a", "n1")], [node("n1", taints=[{"key": "k", "effect": "NoExecute"}])]
        ),
        "anti-affinity": snap([pod("a", "n1", affinity=anti), pod("b", "n2")], [node("n1"), node("n2")]),
    }
    for what, s in cases.items():
        found = violations(s, expect_bound=["ns/a"])
        assert any(what in v for v in found), (what, found)


def test_spread_skew_and_preemption_rules() -> None:
    spread = [{"maxSkew": 1, "topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "x"}}}]
    pods = [pod(f"p{i}", "n1", "100m", topologySpreadConstraints=spread) for i in range(2)]
    found = violations(snap(pods, [node("n1", zone="a"), node("n2", zone="b")]))
    assert any("skew" in v for v in found), found

    priorities = {"ns/low": 1, "ns/high": 10, "ns/peer": 10}
    preempted = [event("Preempted", "peer", related="high"), event("Preempted", "low", related="high")]
    found = violations(snap([], [], preempted), priority_of=priorities.get)
    assert found == ["ns/peer (priority 10) evicted for ns/high (priority 10)"]

    burst = [event("Preempted", f"low{i}", related="high") for i in range(5)]
    assert violations(snap([], [], burst), priority_of=lambda _k: 1 if _k != "ns/high" else 10) == []
    found = violations(
        snap([], [], burst), priority_of=lambda k: 1 if k != "ns/high" else 10, eviction_rate=(60.0, 2)
    )
    assert any("exceed the policy's rate" in v for v in found), found
