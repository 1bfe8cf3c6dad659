"""Seeded random scenarios in the format `policy-scheduler simulate` reads.

A scenario is 3-8 nodes, 0-10 running pods (spec.nodeName set) and 1-8 pending pods, all
for one of the reference profiles. The same seed always gives the same scenario; `prefix`
only renames nodes and namespaces so that scenarios can share a cluster.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from policy_scheduler.parity import dra_scenarios
from policy_scheduler.parity import podspec as ps
from policy_scheduler.parity.podspec import chance, pick
from policy_scheduler.parity.profiles import GPU, SCHEDULER_NAMES, scheduling_profile
from policy_scheduler.parity.storage import add_storage

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
ZONES = ("zone-a", "zone-b", "zone-c")
TAINTS: tuple[dict[str, str], ...] = (
    {"key": "dedicated", "value": "infra", "effect": "NoSchedule"},
    {"key": "dedicated", "value": "batch", "effect": "PreferNoSchedule"},
    {"key": "gpu", "effect": "NoSchedule"},
    {"key": "spot", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "effect": "NoExecute"},
    {"key": "noisy", "value": "yes", "effect": "PreferNoSchedule"},
)


@dataclass(slots=True)
class Scenario:
    seed: int
    scheduler_name: str
    prefix: str = ""
    namespaces: list[dict[str, Any]] = field(default_factory=list)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    running: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    # StorageClasses, PVs, CSINodes and PersistentVolumeClaims (parity/storage.py)
    storage: list[dict[str, Any]] = field(default_factory=list)
    # DeviceClasses, ResourceSlices and ResourceClaims (parity/dra_scenarios.py)
    dra: list[dict[str, Any]] = field(default_factory=list)

    def manifests(self) -> list[dict[str, Any]]:
        """Everything `simulate` needs, in the order it reads best."""
        return [
            *self.namespaces,
            *priority_class_manifests(),
            scheduling_profile(self.scheduler_name),
            *self.nodes,
            *self.storage,
            *self.dra,
            *self.pdbs,
            *self.running,
            *self.pending,
        ]

    def to_yaml(self) -> str:
        header = f"# parity scenario seed={self.seed} profile={self.scheduler_name}\n"
        return header + yaml.safe_dump_all(self.manifests(), sort_keys=False)

    def renamed(self, prefix: str) -> Scenario:
        """The same scenario with every node and namespace name under a new prefix."""
        if not self.prefix:
            raise ValueError("only a prefixed scenario can be renamed")
        text = json.dumps(
            [self.namespaces, self.nodes, self.running, self.pending, self.pdbs, self.storage, self.dra]
        )
        namespaces, nodes, running, pending, pdbs, storage, dra = json.loads(
            text.replace(self.prefix, prefix)
        )
        return replace(
            self,
            prefix=prefix,
            namespaces=namespaces,
            nodes=nodes,
            running=running,
            pending=pending,
            pdbs=pdbs,
            storage=storage,
            dra=dra,
        )

    def without(
        self, *, node: int | None = None, running: int | None = None, pending: int | None = None
    ) -> Scenario:
        """A copy with one object removed (running pods on a removed node go too)."""
        nodes = [n for i, n in enumerate(self.nodes) if i != node]
        names = {n["metadata"]["name"] for n in nodes}
        keep = [p for i, p in enumerate(self.running) if i != running and p["spec"]["nodeName"] in names]
        pend = [p for i, p in enumerate(self.pending) if i != pending]
        return replace(self, nodes=nodes, running=keep, pending=pend)


def priority_class_manifests() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": name},
            "value": value,
            "preemptionPolicy": policy,
        }
        for name, (value, policy) in ps.PRIORITY_CLASSES.items()
    ]


def generate(seed: int, prefix: str = "", *, pod_level: bool = True) -> Scenario:
    """Scenario `seed`; `pod_level=False` leaves out pod-level resources (spec.resources)
    without changing anything else about the scenario."""
    rng = random.Random(seed)
    scenario = Scenario(seed=seed, scheduler_name=pick(rng, *SCHEDULER_NAMES), prefix=prefix)
    ns_names = [f"{prefix}ns-a"] + ([f"{prefix}ns-b"] if chance(rng, 0.4) else [])
    scenario.namespaces = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"team": t}}}
        for n, t in zip(ns_names, ("x", "y"), strict=False)
    ]
    zones = ZONES[: rng.randint(1, 3)]
    scenario.nodes = [_node(rng, f"{prefix}n{i}", zones) for i in range(rng.randint(3, 8))]
    universe = ps.Universe(tuple(n["metadata"]["name"] for n in scenario.nodes), tuple(ns_names), zones)
    for i in range(rng.randint(0, 10)):
        pod = _pod(rng, f"r{i}", universe, pending=False, pod_level=pod_level)
        pod["spec"]["nodeName"] = pick(rng, *universe.node_names)
        scenario.running.append(pod)
    for i in range(rng.randint(1, 8)):
        pod = _pod(rng, f"p{i}", universe, pending=True, pod_level=pod_level)
        pod["spec"]["schedulerName"] = scenario.scheduler_name
        scenario.pending.append(pod)
    if chance(rng, 0.3):
        # one budget per app at most: the disruption controller keeps only one of several
        # budgets that select a pod up to date, so overlapping budgets go stale
        apps = rng.sample(ps.APPS, pick(rng, 1, 1, 2))
        scenario.pdbs = [_pdb(rng, f"pdb{i}", app, universe) for i, app in enumerate(apps)]
    scenario.storage = add_storage(seed, prefix, scenario.nodes, scenario.running, scenario.pending)
    if dra_scenarios.wants_dra(seed):
        scenario.dra = dra_scenarios.add_claims(seed, prefix, list(universe.node_names), scenario.pending)
    return scenario


def _pdb(rng: random.Random, name: str, app: str, u: ps.Universe) -> dict[str, Any]:
    """An integer minAvailable: the only kind the disruption controller can compute for pods
    without a controller (so its status is settled and known when a pod is judged)."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": name, "namespace": pick(rng, *u.namespaces)},
        "spec": {
            "minAvailable": pick(rng, 0, 1, 1, 2, 3),
            "selector": {"matchLabels": {"app": app}},
        },
    }


def _node(rng: random.Random, name: str, zones: tuple[str, ...]) -> dict[str, Any]:
    labels = {ps.HOSTNAME: name}
    if chance(rng, 0.92):
        labels[ps.ZONE] = pick(rng, *zones)
    if chance(rng, 0.7):
        labels["disk"] = pick(rng, "ssd", "hdd")
    if chance(rng, 0.7):
        labels["gen"] = str(rng.randint(1, 5))
    if chance(rng, 0.6):
        labels["pool"] = pick(rng, "a", "b", "c")
    capacity = {
        "cpu": pick(rng, "2", "4", "4", "8", "3500m", "16"),
        "memory": pick(rng, "4Gi", "8Gi", "8Gi", "16Gi", "32Gi"),
        "pods": str(pick(rng, 3, 5, 10, 110, 110)),
        "ephemeral-storage": pick(rng, "10Gi", "100Gi"),
    }
    if chance(rng, 0.3):
        capacity[GPU] = str(rng.randint(1, 4))
        labels["gpu"] = "true"
    spec: dict[str, Any] = {}
    if chance(rng, 0.3):
        spec["taints"] = [dict(TAINTS[i]) for i in rng.sample(range(len(TAINTS)), pick(rng, 1, 1, 2))]
    if chance(rng, 0.04):
        spec["unschedulable"] = True
    images = [{"names": list(names), "sizeBytes": size} for _, names, size in ps.IMAGES if chance(rng, 0.35)]
    status: dict[str, Any] = {"capacity": capacity, "allocatable": dict(capacity)}
    if images:
        status["images"] = images
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "annotations": {KWOK_ANNOTATION: "fake"}},
        "spec": spec,
        "status": status,
    }


def _pod(rng: random.Random, name: str, u: ps.Universe, *, pending: bool, pod_level: bool) -> dict[str, Any]:
    app = pick(rng, *ps.APPS)
    labels = {"app": app}
    if chance(rng, 0.5):
        labels["tier"] = pick(rng, *ps.TIERS)
    heavy = pending and chance(rng, 0.12)
    ports = chance(rng, 0.15)
    containers = [ps.container(rng, "c0", heavy=heavy, ports=ports)]
    if chance(rng, 0.2):
        containers.append(ps.container(rng, "c1"))
    spec: dict[str, Any] = {"terminationGracePeriodSeconds": 0, "containers": containers}
    if chance(rng, 0.12):
        spec["initContainers"] = ps.init_containers(rng)
    if chance(rng, 0.08):
        resources = ps.pod_level_resources(rng, containers, spec.get("initContainers", []))
        if pod_level:
            spec["resources"] = resources
    if chance(rng, 0.55 if pending else 0.5):
        spec["priorityClassName"] = (
            pick(rng, *ps.PRIORITY_CLASSES) if pending else pick(rng, "parity-low", "parity-mid")
        )
    if chance(rng, 0.45):
        spec["tolerations"] = ps.tolerations(rng)
    if pending:
        _placement(rng, spec, u, app)
    affinity: dict[str, Any] = {}
    for key, anti in (("podAffinity", False), ("podAntiAffinity", True)):
        required = chance(rng, 0.1 if pending else 0.12) and (pending or anti)
        preferred = chance(rng, 0.2)
        if required or preferred:
            affinity[key] = ps.pod_affinity(rng, u, app, anti, required)
    if "nodeAffinity" in spec:
        affinity["nodeAffinity"] = spec.pop("nodeAffinity")
    if affinity:
        spec["affinity"] = affinity
    if pending and chance(rng, 0.3):
        spec["topologySpreadConstraints"] = ps.spread_constraints(rng, app)
    if pending and chance(rng, 0.03):
        spec["schedulingGates"] = [{"name": "example.com/gate"}]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": pick(rng, *u.namespaces), "labels": labels},
        "spec": spec,
    }


def _placement(rng: random.Random, spec: dict[str, Any], u: ps.Universe, app: str) -> None:
    if chance(rng, 0.2):
        spec["nodeSelector"] = ps.node_selector(rng, u)
    required, preferred = chance(rng, 0.2), chance(rng, 0.3)
    if required or preferred:
        spec["nodeAffinity"] = ps.node_affinity(rng, u, required, preferred)
