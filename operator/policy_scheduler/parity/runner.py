"""Run scenarios on a real cluster: kube-scheduler decides, our core is judged pod by pod.

For every pending pod, in order: our core evaluates it on the cluster's current state, then
the pod is created and kube-scheduler's answer is read from its log. A pod kube-scheduler
leaves pending is deleted at once, so the state both see for the next pod is identical and
one disagreement never cascades. Nothing proceeds before kube-scheduler's cache has seen
every node and pod change (its event log lines), so it never decides on stale state.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policy_scheduler.parity.api import JSON, ClusterApi
from policy_scheduler.parity.cacheorder import CacheOrder
from policy_scheduler.parity.compare import Reference, Verdict, judge
from policy_scheduler.parity.generator import Scenario, priority_class_manifests
from policy_scheduler.parity.ours import Decision, evaluate
from policy_scheduler.parity.pdbsync import settled
from policy_scheduler.parity.profiles import resolved_profiles
from policy_scheduler.parity.schedlog import SchedulerLog
from policy_scheduler.parity.storage import CLUSTER_SCOPED
from policy_scheduler.scheduler.versioning.features import Features

POLL = 0.005
PDB_INFORMER_DELAY = 0.05
STORAGE_INFORMER_DELAY = 0.1  # kube-scheduler's storage informers have no log line either
# The PV controller may see a claim before the PV it names (two informers): it then binds at
# its next resync (--pvclaimbinder-sync-period, 15 s).
PV_BINDER_TIMEOUT = 40.0
# kube-scheduler logs nothing when its DRA informers see a slice, class or claim
DRA_INFORMER_DELAY = 0.3
DECISION_TIMEOUT = 15.0
REBIND_WINDOW = 2.0


class HarnessError(RuntimeError):
    """The cluster or kube-scheduler did not behave (not a scheduling disagreement)."""


@dataclass(slots=True)
class PodResult:
    key: str
    reference: Reference
    ours: Decision
    verdict: Verdict
    # the state the pod was judged on: running pod manifests with spec.nodeName set
    state: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)  # with the status they had
    followup: bool = False  # the second attempt of a preemptor


@dataclass(slots=True)
class ScenarioResult:
    scenario: Scenario
    pods: list[PodResult] = field(default_factory=list)
    seconds: float = 0.0


def wait_until(what: str, check: Callable[[], bool], log: SchedulerLog, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while True:
        log.poll()
        if check():
            return
        if time.monotonic() > deadline:
            raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(POLL)


BIND_COMPLETED = "pv.kubernetes.io/bind-completed"


def _key(obj: Mapping[str, Any]) -> str:
    return f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"


class Runner:
    def __init__(
        self,
        api: ClusterApi,
        log: SchedulerLog,
        features: Features,
        alive: Callable[[], bool] = lambda: True,
    ) -> None:
        """`features`: the reference kube-scheduler's release; our side decides as it does."""
        self.api = api
        self.log = log
        self.alive = alive
        self.profiles = resolved_profiles(features)
        self.order = CacheOrder()
        self._created: set[str] = set()
        for pc in priority_class_manifests():
            api.create(pc, exist_ok=True)

    def _wait(self, what: str, check: Callable[[], bool], timeout: float = DECISION_TIMEOUT) -> None:
        if not self.alive():
            raise HarnessError("kube-scheduler is not running")
        wait_until(what, check, self.log, timeout)

    # ---- one scenario ---------------------------------------------------------------------------

    def run(self, scenario: Scenario) -> ScenarioResult:
        started = time.monotonic()
        result = ScenarioResult(scenario)
        try:
            self._setup(scenario)
            manifests = {_key(p): p for p in scenario.running}
            for pod in scenario.pending:
                result.pods.extend(self._one_pod(scenario, pod, manifests))
        finally:
            self._teardown(scenario)
        result.seconds = time.monotonic() - started
        return result

    def _setup(self, scenario: Scenario) -> None:
        for ns in scenario.namespaces:
            self.api.create(ns)
        for pdb in scenario.pdbs:
            self.api.create(pdb)
        self._created = set()
        for node in scenario.nodes:
            self.api.create(node)
            self._created.add(node["metadata"]["name"])
        for obj in scenario.dra:
            self.api.create(obj)
        if scenario.dra:
            time.sleep(DRA_INFORMER_DELAY)
        names = set(self._created)
        self._wait("kube-scheduler to see the nodes", lambda: names <= self.log.nodes_added)
        self._setup_storage(scenario)
        for pod in scenario.running:
            self.api.create(pod)
        keys = {_key(p) for p in scenario.running}
        self._wait("kube-scheduler to see the running pods", lambda: keys <= self.log.scheduled_added)
        self._nodes = self.api.nodes()
        self._namespace_labels = self.api.namespace_labels()
        self._pdbs: list[JSON] = []
        self._dra: list[JSON] = []

    def _setup_storage(self, scenario: Scenario) -> None:
        """Create the storage objects; wait until the PV controller has completed the claims
        bound ahead of time (kube-scheduler would otherwise judge them half bound)."""
        self._storage: list[JSON] = []
        # PVs before their claims: a claim synced while its PV is missing waits for the PV
        # controller's periodic resync (15 s) to be bound.
        for obj in sorted(scenario.storage, key=lambda o: o["kind"] == "PersistentVolumeClaim"):
            self.api.create(obj)
        prebound = {
            _key(o)
            for o in scenario.storage
            if o["kind"] == "PersistentVolumeClaim" and o["spec"].get("volumeName")
        }

        def completed() -> bool:
            objects = self.api.storage()
            claims = {_key(o): o for o in objects if o["kind"] == "PersistentVolumeClaim"}
            return all(
                k in claims
                and (claims[k].get("status") or {}).get("phase") == "Bound"
                and BIND_COMPLETED in (claims[k]["metadata"].get("annotations") or {})
                for k in prebound
            )

        if prebound:
            self._wait("the PV controller to bind the pre-bound claims", completed, PV_BINDER_TIMEOUT)
        if scenario.storage:
            time.sleep(STORAGE_INFORMER_DELAY)

    def _teardown(self, scenario: Scenario) -> None:
        for ns in scenario.namespaces:
            self.api.delete_pods(ns["metadata"]["name"])
        namespaces = {ns["metadata"]["name"] for ns in scenario.namespaces}
        for obj in scenario.dra:
            if obj["kind"] == "ResourceClaim":
                self.api.release_claim(obj)
            else:
                self.api.delete(obj)
        # The claims kube-scheduler created for extended resources (DRAExtendedResource).
        for obj in self.api.dra_objects() if scenario.dra else ():
            if obj["kind"] == "ResourceClaim" and obj["metadata"].get("namespace") in namespaces:
                self.api.release_claim(obj)
        for node in scenario.nodes:
            self.api.delete(node)
        for ns in scenario.namespaces:
            self.api.delete(ns)
        for obj in scenario.storage:
            if obj["kind"] in CLUSTER_SCOPED:
                self.api.delete(obj)
        names = set(self._created)  # a failed setup may have created fewer
        self._wait("kube-scheduler to forget the nodes", lambda: names <= self.log.nodes_deleted)

    def _state(self, scenario: Scenario) -> list[JSON]:
        """Bound pods once kwok has started them (preemption ranks victims by start time) and
        the scenario's budgets once the disruption controller has counted them."""
        deadline = time.monotonic() + 10.0
        while True:
            pods = self.api.bound_pods()
            started = all(p.get("status", {}).get("startTime") for p in pods)
            self._pdbs = [self.api.get(pdb) for pdb in scenario.pdbs]
            namespaces = {pdb["metadata"]["namespace"] for pdb in scenario.pdbs}
            members = [p for p in pods if p["metadata"]["namespace"] in namespaces]
            if started and all(settled(pdb, members) for pdb in self._pdbs):
                if self._pdbs:
                    time.sleep(PDB_INFORMER_DELAY)  # kube-scheduler's PDB informer has no log line
                if scenario.storage:
                    self._storage = self.api.storage()
                return pods
            if time.monotonic() > deadline:
                raise HarnessError("pods not started or budgets not settled after 10s")
            time.sleep(0.02)

    def _one_pod(
        self, scenario: Scenario, pod: dict[str, Any], manifests: dict[str, dict[str, Any]]
    ) -> list[PodResult]:
        key = _key(pod)
        profile = self.profiles[scenario.scheduler_name]
        bound = self._state(scenario)
        # claims as kube-scheduler finds them: read before it allocates them for this pod
        self._dra = self.api.dra_objects() if scenario.dra else []
        api_pod = self.api.create(pod)  # the stored object (defaults, admission) is what we judge
        ref = self._reference(key)
        # kube-scheduler's cache order as it was when the pod entered its queue
        bound = self._in_cache_order(bound, self.log.pods[key].added_at, manifests)
        ours = evaluate(
            profile,
            self._nodes,
            bound,
            api_pod,
            self._namespace_labels,
            self._pdbs,
            storage=self._storage,
            dra=self._dra,
        )
        state = _frozen_state(bound, manifests)
        results = [PodResult(key, ref, ours, judge(ref, ours), state, _frozen_pdbs(self._pdbs))]
        if ref.outcome == "preempt":
            for victim in ref.victims:
                manifests.pop(victim, None)
            followup = self._after_preemption(scenario, key, api_pod, profile, manifests)
            if followup is not None:
                results.append(followup)
        if self.log.pods[key].attempts and self.log.pods[key].attempts[-1].outcome == "bound":
            manifests[key] = pod
        else:
            self._drop(pod)
        return results

    def _in_cache_order(
        self, bound: list[JSON], upto: int, manifests: Mapping[str, dict[str, Any]]
    ) -> list[JSON]:
        known = {k: str(m["spec"].get("nodeName", "")) for k, m in manifests.items()}
        known.update((_key(p), p["spec"]["nodeName"]) for p in bound)
        self.order.consume(self.log.cache_ops, upto, known)
        return [dict(p) for p in self.order.sort(bound)]

    def _drop(self, pod: dict[str, Any]) -> None:
        """Delete a pod kube-scheduler left pending, and wait until its queue forgot it."""
        key = _key(pod)
        self.api.delete(pod)
        podlog = self.log.pods[key]
        self._wait(
            f"kube-scheduler to drop {key}",
            lambda: podlog.deleted_unscheduled or key in self.log.scheduled_deleted,
        )

    def _reference(self, key: str) -> Reference:
        podlog = self.log.pods[key]

        def decided() -> bool:
            return podlog.gated or bool(podlog.attempts and podlog.attempts[0].outcome)

        try:
            self._wait(f"kube-scheduler's decision on {key}", decided)
        except HarnessError as exc:
            return Reference("timeout", message=str(exc))
        if podlog.gated and not podlog.attempts:
            return Reference("gated")
        first = podlog.attempts[0]
        ref = Reference(
            first.outcome, first.node, first.feasible, dict(first.scores), first.plugin_scores, first.message
        )
        if first.outcome == "unschedulable" and first.preemption_node:
            ref.outcome, ref.node = "preempt", first.preemption_node
            self._wait(f"the preemption of {key}", lambda: podlog.preemption_done)
            ref.victims = list(podlog.victims)
            victims = set(ref.victims)
            self._wait("kube-scheduler to forget the victims", lambda: victims <= self.log.scheduled_deleted)
        return ref

    def _after_preemption(
        self, scenario: Scenario, key: str, api_pod: JSON, profile: Any, manifests: dict[str, dict[str, Any]]
    ) -> PodResult | None:
        """Judge the preemptor's next attempt if kube-scheduler makes it soon. (It may not:
        a victim deleted while the preemption is still in flight leaves the preemptor in
        the unschedulable queue for minutes, upstream behaviour.)"""
        podlog = self.log.pods[key]
        try:
            self._wait(
                f"{key} to bind after preempting",
                lambda: len(podlog.attempts) > 1 and bool(podlog.attempts[-1].outcome),
                REBIND_WINDOW,
            )
        except HarnessError:
            return None
        final = podlog.attempts[-1]
        bound = [p for p in self._state(scenario) if _key(p) != key]
        bound = self._in_cache_order(bound, len(self.log.cache_ops), manifests)
        retry = copy.deepcopy(api_pod)
        retry.setdefault("status", {})["nominatedNodeName"] = podlog.attempts[0].preemption_node
        # victims hold no claims (parity/dra_scenarios.py): the claims are as before the first attempt
        ours = evaluate(
            profile,
            self._nodes,
            bound,
            retry,
            self._namespace_labels,
            self._pdbs,
            storage=self._storage,
            dra=self._dra,
        )
        ref = Reference(
            final.outcome, final.node, final.feasible, dict(final.scores), final.plugin_scores, final.message
        )
        state = _frozen_state(bound, manifests)
        return PodResult(key, ref, ours, judge(ref, ours), state, _frozen_pdbs(self._pdbs), followup=True)


def _frozen_pdbs(pdbs: list[JSON]) -> list[dict[str, Any]]:
    """The budgets as manifests with the status they had (simulate reads status)."""
    keep = ("disruptionsAllowed", "currentHealthy", "desiredHealthy", "expectedPods")
    return [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": p["metadata"]["name"], "namespace": p["metadata"]["namespace"]},
            "spec": p["spec"],
            "status": {k: v for k, v in (p.get("status") or {}).items() if k in keep},
        }
        for p in pdbs
    ]


def _frozen_state(bound: list[JSON], manifests: Mapping[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The scenario's bound pods as manifests with spec.nodeName, for a minimal repro."""
    out = []
    for api_pod in bound:
        original = manifests.get(_key(api_pod))
        if original is None:
            continue  # not the scenario's (another user's pod on a shared cluster)
        frozen = copy.deepcopy(original)
        frozen["spec"]["nodeName"] = api_pod["spec"]["nodeName"]
        out.append(frozen)
    return out
