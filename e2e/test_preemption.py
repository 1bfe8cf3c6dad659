"""Preemption on the real control plane: victims chosen as kube-scheduler does, evicted through
the Eviction API (the real disruption controller keeps the budgets), under EvictionPolicies.

Each test has its own namespace, SchedulingProfile/schedulerName and tainted kwok nodes that
only its pods tolerate, so other tests' pods never land there. Victims are placed with
spec.nodeName; a victim carrying the HOLD finalizer stays Terminating until the test lets go.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

import pytest

from kubectl import Kubectl, condition, namespace, pod, profile
from policy_scheduler.devcluster.cluster import DevCluster
from polling import holds_for, wait_until

GROUP_VERSION = "scheduling.policy-scheduler.io/v1alpha1"
NODE_LABEL = "e2e-preemption"
ROLE_LABEL = "e2e-preemption-role"
HOLD = "e2e.policy-scheduler.io/hold"
PRIORITIES = {"p100": 100, "p200": 200, "p500": 500, "p900": 900, "p1000": 1000}
NEVER = "p2000-never"


def pc_name(short: str) -> str:
    return f"e2e-preempt-{short}"


@pytest.fixture(scope="module")
def priority_classes(kubectl: Kubectl) -> Iterator[None]:
    classes: list[dict[str, Any]] = [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc_name(k)},
            "value": v,
        }
        for k, v in PRIORITIES.items()
    ]
    classes.append(
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": pc_name(NEVER)},
            "value": 2000,
            "preemptionPolicy": "Never",
        }
    )
    kubectl.apply(*classes)
    yield
    for pc in classes:
        kubectl.delete("priorityclass", pc["metadata"]["name"])


class Scene:
    """One test's namespace, nodes, scheduler and (optional) EvictionPolicy."""

    def __init__(self, kubectl: Kubectl, cluster: DevCluster, tag: str) -> None:
        self.kubectl = kubectl
        self.cluster = cluster
        self.tag = tag
        self.ns = f"e2e-preempt-{tag}"
        self.scheduler = f"preempt-{tag}"
        self.name = f"e2e-preempt-{tag}"  # of the profile and the policy
        self.nodes: list[str] = []
        self.has_policy = False
        kubectl.apply(namespace(self.ns))

    # ---- setup ------------------------------------------------------------------------------------

    def add_nodes(self, count: int, cpu: str = "4", role: str = "any") -> list[str]:
        labels = {NODE_LABEL: self.tag, ROLE_LABEL: role}
        names = self.cluster.create_nodes(
            count, prefix=f"pre-{self.tag}-{role}", cpu=cpu, memory="16Gi", labels=labels
        )
        for name in names:
            self.kubectl.run("taint", "nodes", name, f"{NODE_LABEL}={self.tag}:NoSchedule", "--overwrite")
        self.nodes += names
        return names

    def start(self, policy: dict[str, Any] | None = None) -> None:
        """Apply the policy (if any), wait until it is accepted, then the profile referencing it."""
        spec: dict[str, Any] = {}
        if policy is not None:
            self.has_policy = True
            self.kubectl.apply(
                {
                    "apiVersion": GROUP_VERSION,
                    "kind": "EvictionPolicy",
                    "metadata": {"name": self.name},
                    "spec": policy,
                }
            )
            wait_until(
                f"EvictionPolicy {self.name} accepted",
                lambda: self._true("evictionpolicy", "Accepted"),
                timeout=30,
            )
            spec["evictionPolicyName"] = self.name
        self.kubectl.apply(profile(self.name, self.scheduler, **spec))
        wait_until(
            f"SchedulingProfile {self.name} ready",
            lambda: self._true("schedulingprofile", "Ready"),
            timeout=30,
        )

    def _true(self, kind: str, type_: str) -> bool:
        cond = condition(self.kubectl.get(kind, self.name), type_)
        return bool(cond and cond["status"] == "True")

    def cleanup(self) -> None:
        for p in self.kubectl.items("pods", self.ns):
            if HOLD in (p["metadata"].get("finalizers") or []):
                self.release(p["metadata"]["name"])
        self.kubectl.delete("namespace", self.ns)
        self.kubectl.delete("schedulingprofile", self.name)
        if self.has_policy:
            self.kubectl.delete("evictionpolicy", self.name)
        for node in self.nodes:
            self.kubectl.delete("node", node)

    # ---- pods -------------------------------------------------------------------------------------

    def place(
        self,
        name: str,
        node: str,
        pc: str,
        cpu: str,
        labels: dict[str, str] | None = None,
        hold: bool = False,
    ) -> None:
        """A running pod put on `node` directly (no scheduler involved)."""
        manifest = pod(
            name,
            self.ns,
            self.scheduler,
            cpu=cpu,
            memory="256Mi",
            labels=labels,
            priority_class=pc_name(pc),
            extra_spec={"nodeName": node},
        )
        if hold:
            manifest["metadata"]["finalizers"] = [HOLD]
        self.kubectl.create(manifest)

    def pending(self, name: str, pc: str, cpu: str, role: str | None = None) -> None:
        """A pod for our scheduler, restricted to this test's nodes (of `role`, if given)."""
        selector = {NODE_LABEL: self.tag, **({ROLE_LABEL: role} if role else {})}
        toleration = {"key": NODE_LABEL, "operator": "Equal", "value": self.tag, "effect": "NoSchedule"}
        self.kubectl.create(
            pod(
                name,
                self.ns,
                self.scheduler,
                cpu=cpu,
                memory="256Mi",
                priority_class=pc_name(pc),
                extra_spec={"nodeSelector": selector, "tolerations": [toleration]},
            )
        )

    def pods(self) -> dict[str, dict[str, Any]]:
        return {p["metadata"]["name"]: p for p in self.kubectl.items("pods", self.ns)}

    def get(self, name: str) -> dict[str, Any] | None:
        return self.pods().get(name)

    def wait_ready(self, *names: str) -> None:
        def ready() -> bool:
            pods = self.pods()
            return all(
                n in pods and (condition(pods[n], "Ready") or {}).get("status") == "True" for n in names
            )

        wait_until(f"{names} running and ready", ready, timeout=60)

    def wait_bound(self, name: str, timeout: float = 60) -> str:
        return str(
            wait_until(
                f"{name} bound",
                lambda: (self.get(name) or {}).get("spec", {}).get("nodeName"),
                timeout=timeout,
            )
        )

    def terminating(self) -> set[str]:
        return {n for n, p in self.pods().items() if p["metadata"].get("deletionTimestamp")}

    def release(self, name: str) -> None:
        self.kubectl.run(
            "patch",
            "pod",
            name,
            "-n",
            self.ns,
            "--type",
            "merge",
            "-p",
            '{"metadata":{"finalizers":null}}',
            check=False,
        )

    def events(self, reason: str) -> list[dict[str, Any]]:
        return [e for e in self.kubectl.items("events.events.k8s.io", self.ns) if e.get("reason") == reason]

    def policy_status(self) -> dict[str, Any]:
        return dict(self.kubectl.get("evictionpolicy", self.name).get("status") or {})

    def preemptions(self, at_least: int = 1) -> int:
        """The profile's preemption count (after it reached `at_least`; status is batched)."""

        def count() -> int:
            status = self.kubectl.get("schedulingprofile", self.name).get("status") or {}
            return int(status.get("preemptions") or 0)

        wait_until(f"{at_least} preemption(s) in the profile status", lambda: count() >= at_least, timeout=30)
        time.sleep(2.5)  # one more status write
        return count()

    def scheduled_message(self, name: str) -> str:
        return str((condition(self.get(name) or {}, "PodScheduled") or {}).get("message", ""))

    def pdb(self, name: str, labels: dict[str, str], min_available: int, expect_allowed: int = 0) -> None:
        self.kubectl.apply(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": self.ns},
                "spec": {"minAvailable": min_available, "selector": {"matchLabels": labels}},
            }
        )

        def settled() -> bool:
            status = self.kubectl.get("pdb", name, self.ns).get("status") or {}
            return (
                status.get("currentHealthy", 0) >= min_available
                and status.get("disruptionsAllowed") == expect_allowed
            )

        wait_until(f"PDB {name} allows {expect_allowed} disruptions", settled, timeout=60)


@pytest.fixture
def scene(
    operator_process: Any, kubectl: Kubectl, dev_cluster: DevCluster, priority_classes: None
) -> Iterator[Callable[[str], Scene]]:
    made: list[Scene] = []

    def make(tag: str) -> Scene:
        made.append(Scene(kubectl, dev_cluster, tag))
        return made[-1]

    yield make
    for s in made:
        s.cleanup()


def parse_time(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


# ---- tests -----------------------------------------------------------------------------------------------


def test_preempts_lowest_priority_pods_on_the_cheapest_node(scene: Callable[[str], Scene]) -> None:
    s = scene("basic")
    s.start()
    cheap, dear = s.add_nodes(2)
    for i in (1, 2):
        s.place(f"a100-{i}", cheap, "p100", "1", hold=True)
        s.place(f"a200-{i}", cheap, "p200", "1")
        s.place(f"b500-{i}", dear, "p500", "2")
    s.wait_ready("a100-1", "a100-2", "a200-1", "a200-2", "b500-1", "b500-2")

    s.pending("high", "p1000", "2")
    wait_until(
        "nomination",
        lambda: (s.get("high") or {}).get("status", {}).get("nominatedNodeName") == cheap,
        timeout=30,
    )
    wait_until(
        "the two lowest-priority pods terminating",
        lambda: s.terminating() == {"a100-1", "a100-2"},
        timeout=30,
    )
    high = s.get("high")
    assert high is not None
    assert not high["spec"].get("nodeName")

    for name in ("a100-1", "a100-2"):
        target = condition(s.get(name) or {}, "DisruptionTarget")
        assert target is not None, target
        assert target["status"] == "True", target
        assert target["reason"] == "PreemptionByScheduler", target
        assert target["message"] == f"{s.scheduler}: preempting to accommodate a higher priority pod"
    notes = {e["regarding"]["name"]: e["note"] for e in s.events("Preempted")}
    assert set(notes) == {"a100-1", "a100-2"}
    assert all(high["metadata"]["uid"] in note and cheap in note for note in notes.values())

    s.release("a100-1")
    s.release("a100-2")
    assert s.wait_bound("high") == cheap
    assert {"a200-1", "a200-2", "b500-1", "b500-2"} <= set(s.pods())
    assert s.preemptions() == 1  # waiting for its victims, it never preempted again


def test_enforce_prefers_another_node_then_waits(scene: Callable[[str], Scene]) -> None:
    s = scene("enforce")
    s.start({"budgetMode": "Enforce"})
    guarded, free = s.add_nodes(2)
    for i in (1, 2):
        s.place(f"g-{i}", guarded, "p100", "2", labels={"app": "guarded"})
        s.place(f"f-{i}", free, "p500", "2")
    s.wait_ready("g-1", "g-2", "f-1", "f-2")
    s.pdb("guard", {"app": "guarded"}, min_available=2)

    # Cheaper victims sit under a budget that allows no disruption: the other node is used.
    s.pending("high", "p1000", "2")
    assert s.wait_bound("high") == free
    assert len({"f-1", "f-2"} & set(s.pods())) == 1
    assert {"g-1", "g-2"} <= set(s.pods())
    assert not s.terminating()

    # Now only the guarded node could make room: the preemptor waits, nothing is evicted.
    s.pending("big", "p1000", "4")
    wait_until(
        "big reported unschedulable", lambda: "PodDisruptionBudget" in s.scheduled_message("big"), timeout=30
    )
    holds_for("guarded pods untouched", lambda: {"g-1", "g-2"} <= set(s.pods()) and not s.terminating(), 8)
    big = s.get("big") or {}
    assert not big["spec"].get("nodeName")
    assert not big.get("status", {}).get("nominatedNodeName")


def test_enforce_abandons_a_candidate_when_a_budget_refuses(scene: Callable[[str], Scene]) -> None:
    s = scene("late-pdb")
    # One eviction every 20 s: time to put a budget in place between the two evictions.
    s.start({"budgetMode": "Enforce", "rateLimit": {"evictionsPerMinute": 3, "burst": 1}})
    (node,) = s.add_nodes(1)
    for i in (1, 2):
        s.place(f"v-{i}", node, "p100", "2", labels={"app": "victim"})
    s.wait_ready("v-1", "v-2")

    s.pending("high", "p1000", "4")
    first = wait_until("first victim evicted", lambda: {"v-1", "v-2"} - set(s.pods()), timeout=30)
    (survivor,) = {"v-1", "v-2"} - first
    s.pdb("late", {"app": "victim"}, min_available=1)

    def blocked() -> dict[str, Any] | None:
        status = s.policy_status()
        return status if (status.get("counters") or {}).get("blockedByBudget", 0) >= 1 else None

    status = wait_until("eviction refused by the budget", blocked, timeout=60)
    refused = [e for e in status["recentEvictions"] if e["result"] == "BlockedByBudget"]
    assert refused
    assert refused[0]["name"] == survivor
    assert s.events("PreemptionBlocked")
    wait_until(
        "nomination cleared",
        lambda: not (s.get("high") or {}).get("status", {}).get("nominatedNodeName"),
        timeout=30,
    )
    holds_for(
        "survivor kept, preemptor pending",
        lambda: (
            survivor in s.pods() and not s.terminating() and not (s.get("high") or {})["spec"].get("nodeName")
        ),
        6,
    )


def test_best_effort_deletes_victims_like_kube_scheduler(scene: Callable[[str], Scene]) -> None:
    s = scene("besteffort")
    s.start({"budgetMode": "BestEffort"})
    (node,) = s.add_nodes(1)
    for i in (1, 2):
        s.place(f"g-{i}", node, "p100", "2", labels={"app": "guarded"})
    s.wait_ready("g-1", "g-2")
    s.pdb("guard", {"app": "guarded"}, min_available=2)

    s.pending("high", "p1000", "4")
    assert s.wait_bound("high") == node
    assert not {"g-1", "g-2"} & set(s.pods())

    def counted() -> dict[str, Any] | None:
        counters = s.policy_status().get("counters") or {}
        return counters if counters.get("evicted", 0) >= 2 else None

    counters = wait_until("status counters", counted, timeout=30)
    assert counters["blockedByBudget"] >= 2  # the Eviction API refused; the pods were deleted


def test_rate_limit_spaces_out_evictions(scene: Callable[[str], Scene]) -> None:
    s = scene("rate")
    per_minute = 12  # one eviction every 5 s once the burst of 1 is spent
    s.start({"rateLimit": {"evictionsPerMinute": per_minute, "burst": 1, "maxInFlight": 10}})
    nodes = s.add_nodes(4)
    for i, node in enumerate(nodes):
        s.place(f"low-{i}", node, "p100", "4")
    s.wait_ready(*(f"low-{i}" for i in range(4)))

    for i in range(4):
        s.pending(f"high-{i}", "p1000", "4")
    for i in range(4):
        s.wait_bound(f"high-{i}", timeout=90)

    def all_recorded() -> dict[str, Any] | None:
        status = s.policy_status()
        return status if (status.get("counters") or {}).get("evicted", 0) >= 4 else None

    status = wait_until("4 evictions in the policy status", all_recorded, timeout=30)
    times = sorted(parse_time(e["time"]) for e in status["recentEvictions"] if e["result"] == "Evicted")
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert len(times) == 4, gaps
    assert all(gap >= 60 / per_minute - 0.5 for gap in gaps), gaps
    assert status["counters"]["rateLimited"] >= 3
    preempted = sorted(parse_time(e["eventTime"]) for e in s.events("Preempted"))
    assert len(preempted) == 4
    assert preempted[-1] - preempted[0] >= 3 * 60 / per_minute - 1.5
    assert s.preemptions(4) == 4


def test_dry_run_evicts_nothing_and_reports(scene: Callable[[str], Scene]) -> None:
    s = scene("dryrun")
    s.start({"dryRun": True})
    (node,) = s.add_nodes(1)
    for i in (1, 2):
        s.place(f"v-{i}", node, "p100", "2")
    s.wait_ready("v-1", "v-2")

    s.pending("high", "p1000", "4")

    def reported() -> dict[str, Any] | None:
        status = s.policy_status()
        return status if (status.get("counters") or {}).get("wouldEvict", 0) >= 2 else None

    status = wait_until("wouldEvict reported", reported, timeout=30)
    high = s.get("high") or {}
    would = {e["name"] for e in status["recentEvictions"] if e["result"] == "WouldEvict"}
    assert would == {"v-1", "v-2"}
    assert all(e.get("preemptorUid") == high["metadata"]["uid"] for e in status["recentEvictions"])
    assert status["counters"]["evicted"] == 0
    assert {e["regarding"]["name"] for e in s.events("PreemptionDryRun")} == {"v-1", "v-2"}
    ready = condition(s.kubectl.get("evictionpolicy", s.name), "Ready") or {}
    assert ready.get("reason") == "DryRun"

    wait_until(
        "nomination cleared",
        lambda: not (s.get("high") or {}).get("status", {}).get("nominatedNodeName"),
        timeout=30,
    )
    holds_for("nothing evicted", lambda: {"v-1", "v-2"} <= set(s.pods()) and not s.terminating(), 6)
    for name in ("v-1", "v-2"):
        assert condition(s.get(name) or {}, "DisruptionTarget") is None
    assert not (s.get("high") or {})["spec"].get("nodeName")
    assert not s.events("Preempted")
    assert s.policy_status()["counters"]["wouldEvict"] == 2  # retries repeat no report
    assert s.preemptions() <= 2  # the preemptor retries every 30 s, not in a loop


def test_equal_priority_protected_and_never_are_respected(scene: Callable[[str], Scene]) -> None:
    s = scene("never")
    s.start(
        {"protected": [{"podSelector": {"matchLabels": {"protected": "yes"}}}], "minProtectedPriority": 800}
    )
    equal, labelled, important = s.add_nodes(3, role="keep")
    (open_node,) = s.add_nodes(1, role="open")
    for i in (1, 2):
        s.place(f"eq-{i}", equal, "p1000", "2")  # same priority as the preemptor
        s.place(f"prot-{i}", labelled, "p100", "2", labels={"protected": "yes"})
        s.place(f"imp-{i}", important, "p900", "2")  # at or above minProtectedPriority
        s.place(f"open-{i}", open_node, "p100", "2")
    victims = [f"{k}-{i}" for k in ("eq", "prot", "imp", "open") for i in (1, 2)]
    s.wait_ready(*victims)

    s.pending("high", "p1000", "4", role="keep")
    s.pending("never", NEVER, "4", role="open")  # preemptionPolicy: Never
    wait_until(
        "high found no victims", lambda: "preemption" in s.scheduled_message("high").lower(), timeout=30
    )
    wait_until(
        "never did not preempt", lambda: "preemptionPolicy=Never" in s.scheduled_message("never"), timeout=30
    )
    holds_for("no pod evicted", lambda: set(victims) <= set(s.pods()) and not s.terminating(), 8)
    assert not s.events("Preempted")
    pods = s.pods()
    for name in ("high", "never"):
        assert not pods[name]["spec"].get("nodeName")
        assert not pods[name].get("status", {}).get("nominatedNodeName")
