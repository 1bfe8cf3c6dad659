"""Random pieces of pod specs: resources, ports, tolerations, node and pod affinity, spreading.

Each function draws from a small catalog so that pods often interact (same labels, same
ports, matching taints) and every scheduling plugin gets something to decide.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from policy_scheduler.parity.profiles import GPU
from policy_scheduler.scheduler.resources import canonical

ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
APPS = ("web", "db", "cache")
TIERS = ("frontend", "backend")
# (name in the pod spec, names the node reports, size in bytes)
IMAGES: tuple[tuple[str, tuple[str, ...], int], ...] = (
    ("nginx:1.25", ("docker.io/library/nginx:1.25", "nginx:1.25"), 140_000_000),
    ("redis", ("redis:latest",), 40_000_000),
    ("busybox:1.36", ("busybox:1.36",), 4_000_000),
    ("registry.example.com/app:v1", ("registry.example.com/app:v1",), 300_000_000),
    ("registry.example.com/ml:v2", ("registry.example.com/ml:v2",), 1_800_000_000),
    ("postgres:16", ("docker.io/library/postgres:16",), 420_000_000),
)
HOST_PORTS = (8080, 8081, 9090)
PRIORITY_CLASSES: dict[str, tuple[int, str]] = {
    "parity-low": (100, "PreemptLowerPriority"),
    "parity-mid": (1000, "PreemptLowerPriority"),
    "parity-high": (10000, "PreemptLowerPriority"),
    "parity-high-never": (10000, "Never"),
}


@dataclass(frozen=True, slots=True)
class Universe:
    """What pods of one scenario may refer to."""

    node_names: tuple[str, ...]
    namespaces: tuple[str, ...]
    zones: tuple[str, ...]


def pick(rng: random.Random, *options: Any) -> Any:
    return options[rng.randrange(len(options))]


def chance(rng: random.Random, p: float) -> bool:
    return rng.random() < p


# ---- resources --------------------------------------------------------------------------------


def _requests(rng: random.Random, heavy: bool) -> dict[str, str]:
    cpus = ("2", "3", "6") if heavy else (None, "100m", "250m", "500m", "1", "1500m")
    mems = ("4Gi", "12Gi") if heavy else (None, "128Mi", "512Mi", "1Gi", "2Gi")
    out = {}
    cpu, mem = pick(rng, *cpus), pick(rng, *mems)
    if cpu:
        out["cpu"] = cpu
    if mem:
        out["memory"] = mem
    if chance(rng, 0.1):
        out["ephemeral-storage"] = pick(rng, "1Gi", "20Gi")
    return out


def container(rng: random.Random, name: str, *, heavy: bool = False, ports: bool = False) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": pick(rng, *IMAGES)[0]}
    requests = _requests(rng, heavy)
    resources: dict[str, Any] = {}
    if requests and chance(rng, 0.1):
        resources["limits"] = requests  # the API server copies limits into requests
    elif requests:
        resources["requests"] = requests
    if chance(rng, 0.08):
        gpus = str(pick(rng, 1, 1, 2))
        resources.setdefault("requests", {})[GPU] = gpus
        resources.setdefault("limits", {})[GPU] = gpus
    if resources:
        c["resources"] = resources
    if ports:
        c["ports"] = [_port(rng, port) for port in rng.sample(HOST_PORTS, pick(rng, 1, 1, 2))]
    return c


def _port(rng: random.Random, host_port: int) -> dict[str, Any]:
    port: dict[str, Any] = {"containerPort": host_port, "hostPort": host_port}
    if chance(rng, 0.2):
        port["protocol"] = "UDP"
    if chance(rng, 0.2):
        port["hostIP"] = "127.0.0.1"
    return port


def init_containers(rng: random.Random) -> list[dict[str, Any]]:
    """An init container or a sidecar (restartable init container), each with requests."""
    requests = _requests(rng, chance(rng, 0.3)) or {"cpu": "200m"}
    c: dict[str, Any] = {"name": "init", "image": "busybox:1.36", "resources": {"requests": requests}}
    if chance(rng, 0.5):
        c["restartPolicy"] = "Always"
    return [c]


def _total(containers: list[dict[str, Any]], resource: str) -> int:
    """Requests, or the limits the API server copies into missing requests."""
    total = 0
    for c in containers:
        res = c.get("resources", {})
        total += canonical(
            resource, res.get("requests", {}).get(resource) or res.get("limits", {}).get(resource, 0)
        )
    return total


def pod_level_resources(
    rng: random.Random, containers: list[dict[str, Any]], inits: list[dict[str, Any]]
) -> dict[str, Any]:
    """spec.resources.requests (PodLevelResources, beta and on in v1.35): at least what the
    containers ask for together, as validation demands."""
    cpu = _total(containers, "cpu") + _total(inits, "cpu") + pick(rng, 0, 250, 1000)
    memory = _total(containers, "memory") + _total(inits, "memory") + pick(rng, 0, 2**28, 2**30)
    requests: dict[str, str] = {"cpu": f"{cpu}m"} if cpu else {}
    if memory and chance(rng, 0.7):
        requests["memory"] = str(memory)
    return {"requests": requests or {"cpu": "100m"}}


# ---- tolerations and node affinity ---------------------------------------------------------


TOLERATIONS: tuple[dict[str, Any], ...] = (
    {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
    {"key": "dedicated", "operator": "Exists"},
    {"key": "gpu", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"},
    {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60},
    {"key": "dedicated", "operator": "Equal", "value": "batch"},
    {"operator": "Exists"},
)


def tolerations(rng: random.Random) -> list[dict[str, Any]]:
    count = pick(rng, 1, 1, 2, 3)
    chosen = rng.sample(range(len(TOLERATIONS) - 1), count)
    if chance(rng, 0.05):
        chosen = [len(TOLERATIONS) - 1]  # tolerates everything
    return [dict(TOLERATIONS[i]) for i in chosen]


def _node_requirement(rng: random.Random, u: Universe) -> dict[str, Any]:
    kind = rng.randrange(7)
    if kind == 0:
        return {"key": "disk", "operator": pick(rng, "In", "NotIn"), "values": [pick(rng, "ssd", "hdd")]}
    if kind == 1:
        return {"key": "gen", "operator": pick(rng, "Gt", "Lt"), "values": [str(rng.randint(1, 5))]}
    if kind == 2:
        return {"key": pick(rng, "disk", "gpu", "pool"), "operator": pick(rng, "Exists", "DoesNotExist")}
    if kind == 3:
        zones = rng.sample(u.zones, min(len(u.zones), pick(rng, 1, 2)))
        return {"key": ZONE, "operator": pick(rng, "In", "NotIn"), "values": zones}
    if kind == 4:
        return {"key": "pool", "operator": "In", "values": rng.sample(("a", "b", "c"), pick(rng, 1, 2))}
    if kind == 5:
        names = rng.sample(u.node_names, min(len(u.node_names), pick(rng, 1, 2, 3)))
        return {"key": HOSTNAME, "operator": pick(rng, "In", "NotIn"), "values": names}
    return {"key": "gen", "operator": "In", "values": [str(rng.randint(1, 5)), str(rng.randint(1, 5))]}


def _node_term(rng: random.Random, u: Universe) -> dict[str, Any]:
    term: dict[str, Any] = {
        "matchExpressions": [_node_requirement(rng, u) for _ in range(pick(rng, 1, 1, 2))]
    }
    if chance(rng, 0.1):
        name = pick(rng, *u.node_names)  # the API allows exactly one value here
        term["matchFields"] = [
            {"key": "metadata.name", "operator": pick(rng, "In", "NotIn"), "values": [name]}
        ]
    return term


def node_selector(rng: random.Random, u: Universe) -> dict[str, str]:
    kind = rng.randrange(3)
    if kind == 0:
        return {"disk": "ssd"}
    if kind == 1:
        return {"pool": pick(rng, "a", "b")}
    return {ZONE: pick(rng, *u.zones)}


def node_affinity(rng: random.Random, u: Universe, required: bool, preferred: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required:
        terms = [_node_term(rng, u) for _ in range(pick(rng, 1, 1, 2))]
        out["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": terms}
    if preferred:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "preference": _node_term(rng, u)}
            for _ in range(pick(rng, 1, 2, 3))
        ]
    return out


# ---- pod affinity and spreading ----------------------------------------------------------------


def _label_selector(rng: random.Random, own_app: str) -> dict[str, Any]:
    kind = rng.randrange(4)
    if kind == 0:
        return {"matchLabels": {"app": own_app}}
    if kind == 1:
        return {"matchLabels": {"app": pick(rng, *APPS)}}
    if kind == 2:
        return {"matchExpressions": [{"key": "app", "operator": "In", "values": rng.sample(APPS, 2)}]}
    return {"matchExpressions": [{"key": "tier", "operator": pick(rng, "Exists", "NotIn"), "values": []}]}


def _fix_values(selector: dict[str, Any]) -> dict[str, Any]:
    for expr in selector.get("matchExpressions", ()):
        if expr["operator"] in ("Exists", "DoesNotExist"):
            expr.pop("values", None)
        elif not expr.get("values"):
            expr["values"] = ["frontend"]
    return selector


def _affinity_term(rng: random.Random, u: Universe, own_app: str, hostname_bias: float) -> dict[str, Any]:
    term: dict[str, Any] = {
        "labelSelector": _fix_values(_label_selector(rng, own_app)),
        "topologyKey": HOSTNAME if chance(rng, hostname_bias) else ZONE,
    }
    kind = rng.randrange(6)
    if kind == 0 and len(u.namespaces) > 1:
        term["namespaces"] = list(u.namespaces)
    elif kind == 1:
        term["namespaceSelector"] = {}
    elif kind == 2:
        term["namespaceSelector"] = {"matchLabels": {"team": pick(rng, "x", "y")}}
    if chance(rng, 0.08) and "tier" not in str(term["labelSelector"]):
        term["matchLabelKeys"] = ["tier"]
    return term


def pod_affinity(rng: random.Random, u: Universe, own_app: str, anti: bool, required: bool) -> dict[str, Any]:
    bias = 0.7 if anti else 0.3
    out: dict[str, Any] = {}
    if required:
        out["requiredDuringSchedulingIgnoredDuringExecution"] = [_affinity_term(rng, u, own_app, bias)]
    else:
        out["preferredDuringSchedulingIgnoredDuringExecution"] = [
            {"weight": rng.randint(1, 100), "podAffinityTerm": _affinity_term(rng, u, own_app, bias)}
            for _ in range(pick(rng, 1, 1, 2))
        ]
    return out


def spread_constraints(rng: random.Random, own_app: str) -> list[dict[str, Any]]:
    out = []
    keys = rng.sample((ZONE, HOSTNAME), pick(rng, 1, 1, 2))
    for key in keys:
        hard = chance(rng, 0.6)
        c: dict[str, Any] = {
            "maxSkew": pick(rng, 1, 1, 2),
            "topologyKey": key,
            "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": own_app if chance(rng, 0.8) else pick(rng, *APPS)}},
        }
        if hard and chance(rng, 0.25):
            c["minDomains"] = pick(rng, 2, 3, 4)
        if chance(rng, 0.15):
            c["nodeAffinityPolicy"] = pick(rng, "Honor", "Ignore")
        if chance(rng, 0.15):
            c["nodeTaintsPolicy"] = pick(rng, "Honor", "Ignore")
        if chance(rng, 0.08):
            c["matchLabelKeys"] = ["tier"]
        out.append(c)
    return out
