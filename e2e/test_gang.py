"""Gang scheduling on the real control plane: scheduler-plugins PodGroups with Coscheduling.

Each test has its own namespace, profile/schedulerName and tainted kwok nodes that only its pods
tolerate. The PodGroup CRD comes from --install-crds.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from polling import holds_for, wait_until

PG_API = "scheduling.x-k8s.io/v1alpha1"
PG_LABEL = "scheduling.x-k8s.io/pod-group"
NODE_LABEL = "e2e-gang"
HOLD = "e2e-gang/hold"


class Gang:
    def __init__(
        self,
        kubectl: Kubectl,
        cluster: DevCluster,
        tag: str,
        policy: dict[str, Any] | None = None,
        **args: Any,
    ) -> None:
        self.kubectl, self.cluster, self.tag = kubectl, cluster, tag
        self.ns = f"e2e-gang-{tag}"
        self.scheduler = f"gang-{tag}"
        self.nodes: list[str] = []
        kubectl.apply(namespace(self.ns))
        spec = {
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"disabled": [{"name": "PrioritySort"}]},
            },
            "pluginConfig": [{"name": "Coscheduling", "args": args}] if args else [],
        }
        self.policy = policy
        if policy is not None:
            kubectl.apply(
                {
                    "apiVersion": "scheduling.policy-scheduler.io/v1alpha1",
                    "kind": "EvictionPolicy",
                    "metadata": {"name": self.scheduler},
                    "spec": policy,
                }
            )
            spec["evictionPolicyName"] = self.scheduler
        kubectl.apply(profile(self.scheduler, self.scheduler, **spec))
        wait_until(f"profile {self.scheduler} ready", self._ready, timeout=30)

    def _ready(self) -> bool:
        cond = condition(self.kubectl.get("schedulingprofile", self.scheduler), "Ready")
        return bool(cond and cond["status"] == "True")

    def add_nodes(self, count: int, cpu: str) -> None:
        names = self.cluster.create_nodes(
            count, prefix=f"gang-{self.tag}", cpu=cpu, memory="16Gi", labels={NODE_LABEL: self.tag}
        )
        for name in names:
            self.kubectl.run("taint", "nodes", name, f"{NODE_LABEL}={self.tag}:NoSchedule", "--overwrite")
        self.nodes += names

    def group(self, name: str, min_member: int, **spec: Any) -> None:
        self.kubectl.apply(
            {
                "apiVersion": PG_API,
                "kind": "PodGroup",
                "metadata": {"name": name, "namespace": self.ns},
                "spec": {"minMember": min_member, **spec},
            }
        )

    def member(self, name: str, group: str | None, cpu: str, pc: str | None = None) -> None:
        toleration = {"key": NODE_LABEL, "operator": "Equal", "value": self.tag, "effect": "NoSchedule"}
        self.kubectl.create(
            pod(
                name,
                self.ns,
                self.scheduler,
                cpu=cpu,
                labels={PG_LABEL: group} if group else {},
                priority_class=pc,
                extra_spec={"nodeSelector": {NODE_LABEL: self.tag}, "tolerations": [toleration]},
            )
        )

    def bound(self, prefix: str = "") -> list[str]:
        return sorted(
            p["metadata"]["name"]
            for p in self.kubectl.items("pods", self.ns)
            if p["spec"].get("nodeName") and p["metadata"]["name"].startswith(prefix)
        )

    def pg_status(self, name: str) -> dict[str, Any]:
        return dict(self.kubectl.get("podgroup", name, self.ns).get("status") or {})

    def cleanup(self) -> None:
        self.kubectl.delete("namespace", self.ns)
        self.kubectl.delete("schedulingprofile", self.scheduler)
        if self.policy is not None:
            self.kubectl.delete("evictionpolicy", self.scheduler)
        for node in self.nodes:
            self.kubectl.delete("node", node)


@pytest.fixture
def gang(operator_process: Any, kubectl: Kubectl, dev_cluster: DevCluster) -> Iterator[Callable[..., Gang]]:
    made: list[Gang] = []

    def make(tag: str, **args: Any) -> Gang:
        made.append(Gang(kubectl, dev_cluster, tag, **args))
        return made[-1]

    yield make
    for g in made:
        g.cleanup()


def waiting_message(status: dict[str, Any]) -> str:
    cond = next((c for c in status.get("conditions") or [] if c.get("type") == "Scheduled"), None)
    return str(cond.get("message", "")) if cond and cond.get("status") == "False" else ""


def test_group_of_eight_where_six_fit_stays_pending_then_binds_when_nodes_arrive(
    gang: Callable[..., Gang],
) -> None:
    g = gang("eight")
    g.add_nodes(3, cpu="2")  # 6 x 1 cpu fit
    g.group("job", 8)
    for i in range(8):
        g.member(f"job-{i}", "job", cpu="1")
    # Once all 8 exist, the reason is the group's own (waiting at Permit, or rejected as a whole).
    wait_until(
        "the group's waiting reason",
        lambda: "PodGroup e2e-gang-eight/job" in waiting_message(g.pg_status("job")) or None,
        timeout=30,
    )
    # Members hold nodes only while waiting at Permit; none binds while the group cannot complete.
    holds_for("no member bound", lambda: g.bound() == [], seconds=5)
    assert g.pg_status("job")["phase"] in ("Pending", "Scheduling")
    g.add_nodes(2, cpu="1")
    wait_until("all 8 members bound", lambda: len(g.bound()) == 8 or None, timeout=60)
    wait_until(
        "status Scheduled", lambda: g.pg_status("job").get("phase") in ("Scheduled", "Running") or None
    )


def test_timed_out_group_releases_its_room_for_a_normal_pod(gang: Callable[..., Gang]) -> None:
    g = gang("timeout", permitWaitingTimeSeconds=3)
    g.add_nodes(2, cpu="2")
    g.group("job", 4, scheduleTimeoutSeconds=3)
    for i in range(3):
        g.member(f"job-{i}", "job", cpu="1")
    g.member("job-3", "job", cpu="3")  # fits no node: the others wait at Permit, then time out
    wait_until(
        "a member waits at Permit", lambda: "waits at Permit" in waiting_message(g.pg_status("job")) or None
    )
    g.member("plain", None, cpu="2")
    wait_until("the normal pod bound", lambda: "plain" in g.bound() or None, timeout=60)
    assert g.bound("job") == []


def test_two_gangs_that_cannot_both_fit_end_one_complete_one_pending(gang: Callable[..., Gang]) -> None:
    g = gang("two")
    g.add_nodes(2, cpu="2")
    g.group("a", 4)
    g.group("b", 4)
    for i in range(4):
        g.member(f"a-{i}", "a", cpu="1")
        g.member(f"b-{i}", "b", cpu="1")
    wait_until("one group complete", lambda: len(g.bound()) == 4 or None, timeout=60)
    bound = g.bound()
    groups = {name.split("-")[0] for name in bound}
    assert len(groups) == 1, bound
    other = "b" if groups == {"a"} else "a"
    wait_until("the other group says why it waits", lambda: waiting_message(g.pg_status(other)) or None)
    assert len(g.bound()) == 4


@pytest.fixture
def priority_classes(kubectl: Kubectl) -> Iterator[None]:
    classes: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
        }
        for name, value in (("e2e-gang-low", 10), ("e2e-gang-high", 1000))
    ]
    kubectl.apply(*classes)
    yield
    for pc in classes:
        kubectl.delete("priorityclass", pc["metadata"]["name"])


def test_high_priority_gang_preempts_a_lower_gang_as_a_whole(
    gang: Callable[..., Gang], priority_classes: None
) -> None:
    g = gang("preempt", policy={"gangDisruption": "Whole"})
    g.add_nodes(2, cpu="2")
    g.group("low", 3)
    for i in range(4):
        g.member(f"low-{i}", "low", cpu="1", pc="e2e-gang-low")
    wait_until("the low gang bound", lambda: len(g.bound("low")) == 4 or None, timeout=60)
    # A finalizer keeps each victim terminating, so the freed room stays promised for a while.
    hold = json.dumps({"metadata": {"finalizers": [HOLD]}})
    for i in range(4):
        g.kubectl.run("patch", "pod", f"low-{i}", "-n", g.ns, "--type", "merge", "-p", hold)
    g.group("high", 4)
    for i in range(4):
        g.member(f"high-{i}", "high", cpu="1", pc="e2e-gang-high")

    def nominations() -> dict[str, str] | None:
        found = {
            p["metadata"]["name"]: p["status"].get("nominatedNodeName", "")
            for p in g.kubectl.items("pods", g.ns)
            if p["metadata"]["name"].startswith("high-")
        }
        return found if len(found) == 4 and all(found.values()) else None

    # Every member that will use the freed room is nominated to it, two per 2-cpu node.
    nominated = wait_until("every high member nominated", nominations, timeout=60)
    assert sorted(Counter(nominated.values()).values()) == [2, 2]
    assert g.bound("high") == []
    release = json.dumps({"metadata": {"finalizers": None}})
    for i in range(4):
        g.kubectl.run("patch", "pod", f"low-{i}", "-n", g.ns, "--type", "merge", "-p", release)
    wait_until("the high gang bound", lambda: len(g.bound("high")) == 4 or None, timeout=90)
    # The low gang went as a whole (gangDisruption Whole), through the Eviction API.
    wait_until("no low member left", lambda: not g.bound("low") or None, timeout=30)

    def evicted() -> set[str] | None:
        status = g.kubectl.get("evictionpolicy", g.scheduler).get("status") or {}
        names = {e["name"] for e in status.get("recentEvictions") or [] if e.get("result") == "Evicted"}
        return names if len(names) >= 4 else None

    assert wait_until("the evictions recorded", evicted, timeout=30) == {f"low-{i}" for i in range(4)}
