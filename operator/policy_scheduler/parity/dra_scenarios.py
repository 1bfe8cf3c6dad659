"""DRA in parity scenarios: a test driver's ResourceSlices, DeviceClasses with CEL selectors,
and ResourceClaims that some pending pods reference.

Node-local slices sit on some nodes; one network-attached slice (allNodes) is visible
everywhere. Claims cover one device, an exact count, All, matchAttribute constraints,
firstAvailable, a claim shared by two pods and claims nothing can satisfy. Some pods without
claims ask for an extended resource a DeviceClass serves (DRAExtendedResource, its own random
stream so the rest of a scenario stays as it was): the scheduler creates their claims. Every
name is under the scenario's prefix, so scenarios never share DRA objects.

The shapes of later releases come from a second random stream, so the scenarios above stay as
they were: partitions of one GPU drawing on a shared counter set (DRAPartitionableDevices), a
few devices tainted NoSchedule, claims asking for a partition or tolerating the taint
(DRADeviceTaints), and NICs that allow multiple allocations, shared by claims asking for
bandwidth (DRAConsumableCapacity). Where a release has those gates off, its API server drops the fields and
both schedulers see plain devices.

Pods with claims take the top priority: they are never preemption victims, whose claims
the resource-claim controller would release at its own pace (kube-scheduler and our side
could then see different claim states).
"""

from __future__ import annotations

import random
from typing import Any

from policy_scheduler.parity.podspec import chance, pick

DRIVER = "parity.example.com"
RESOURCE_API = "resource.k8s.io/v1"
DRA_PRIORITY = "parity-high"
# The share of scenarios with DRA objects; a separate stream keeps the other scenarios as they were.
DRA_SHARE = 0.35
_STREAM = 0x0D5A
_STREAM_LATER = 0x0D5B
TAINT_KEY = f"{DRIVER}/unhealthy"
_EXTENDED_STREAM = 0x0E47
# The share of pending pods without claims that ask for the extended resource (1, 2 or 9 GPUs).
EXTENDED_SHARE = 0.3

_CLASSES: dict[str, str | None] = {
    "gpu": f'device.attributes["{DRIVER}"].type == "gpu"',
    "big-gpu": (
        f'device.attributes["{DRIVER}"].type == "gpu" && '
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("40Gi")) >= 0'
    ),
    "nic": f'device.attributes["{DRIVER}"].type == "nic"',
    "fabric": f'device.attributes["{DRIVER}"].type == "fpga"',
    "partition": f'device.attributes["{DRIVER}"].type == "partition"',
    "shared-nic": f'device.attributes["{DRIVER}"].type == "shared-nic"',
    "any": None,
}
_MODELS = ("a100", "h100", "l4")


def dra_rng(seed: int) -> random.Random:
    return random.Random(seed * 7919 + _STREAM)


def wants_dra(seed: int) -> bool:
    return chance(dra_rng(seed), DRA_SHARE)


def device_classes(prefix: str) -> list[dict[str, Any]]:
    out = []
    for name, expression in _CLASSES.items():
        selectors = [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
        if expression is not None:
            selectors.append({"cel": {"expression": expression}})
        out.append(
            {
                "apiVersion": RESOURCE_API,
                "kind": "DeviceClass",
                "metadata": {"name": f"{prefix}{name}"},
                "spec": {"selectors": selectors},
            }
        )
    return out


def _device(rng: random.Random, name: str, kind: str, index: int) -> dict[str, Any]:
    attributes: dict[str, Any] = {"type": {"string": kind}, "index": {"int": index}}
    capacity: dict[str, Any] = {}
    if kind == "gpu":
        attributes["model"] = {"string": pick(rng, *_MODELS)}
        attributes["numa"] = {"int": rng.randint(0, 1)}
        capacity["memory"] = {"value": pick(rng, "24Gi", "40Gi", "80Gi")}
    if kind == "nic":
        attributes["numa"] = {"int": rng.randint(0, 1)}
    device: dict[str, Any] = {"name": name, "attributes": attributes}
    if capacity:
        device["capacity"] = capacity
    return device


def _slice(
    name: str, pool: str, devices: list[dict[str, Any]] | None, count: int = 1, **where: Any
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "driver": DRIVER,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
    }
    if devices is not None:
        spec["devices"] = devices
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {**spec, **where},
    }


def _taint(device: dict[str, Any]) -> None:
    device["taints"] = [{"key": TAINT_KEY, "value": "true", "effect": "NoSchedule"}]


def partitioned_gpus(
    rng: random.Random, node_names: list[str], slices: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Some nodes' GPU split into partitions drawing on one 40Gi counter set, and some devices
    (partitions and plain ones) tainted NoSchedule."""
    out = []
    for node in node_names:
        if not chance(rng, 0.4):
            continue
        pool = f"{node}-gpu-0"
        counters = [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]
        parts = []
        for i in range(rng.randint(2, 4)):
            size = pick(rng, "10Gi", "20Gi")
            part = {
                "name": f"gpu-0-part-{i}",
                "attributes": {"type": {"string": "partition"}, "index": {"int": i}},
                "capacity": {"memory": {"value": size}},
                "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": size}}}],
            }
            if chance(rng, 0.2):
                _taint(part)
            parts.append(part)
        out.append(_slice(f"{node}-{DRIVER}-counters", pool, None, 2, nodeName=node, sharedCounters=counters))
        out.append(_slice(f"{node}-{DRIVER}-parts", pool, parts, 2, nodeName=node))
    for s in slices:
        for device in s["spec"].get("devices") or ():
            if chance(rng, 0.15):
                _taint(device)
    for node in node_names:
        if not chance(rng, 0.3):
            continue
        policy = {"default": "1G", "validRange": {"min": "1G", "step": pick(rng, "1G", "2G")}}
        nic = {
            "name": "nic-shared",
            "attributes": {"type": {"string": "shared-nic"}},
            "allowMultipleAllocations": True,
            "capacity": {"bandwidth": {"value": pick(rng, "4G", "10G"), "requestPolicy": policy}},
        }
        out.append(_slice(f"{node}-{DRIVER}-shared", f"{node}-shared", [nic], nodeName=node))
    return out


def resource_slices(rng: random.Random, prefix: str, node_names: list[str]) -> list[dict[str, Any]]:
    out = []
    for node in node_names:
        if not chance(rng, 0.6):
            continue
        devices = [_device(rng, f"gpu-{i}", "gpu", i) for i in range(rng.randint(1, 4))]
        devices += [_device(rng, f"nic-{i}", "nic", i) for i in range(pick(rng, 0, 1, 2))]
        out.append(_slice(f"{node}-{DRIVER}", node, devices, nodeName=node))
    fabric = [_device(rng, f"fpga-{i}", "fpga", i) for i in range(rng.randint(1, 2))]
    out.append(_slice(f"{prefix}fabric", f"{prefix}fabric", fabric, allNodes=True))
    return out


def _exact(prefix: str, cls: str, **extra: Any) -> dict[str, Any]:
    return {"deviceClassName": f"{prefix}{cls}", **extra}


def _cel(expression: str) -> list[dict[str, Any]]:
    return [{"cel": {"expression": expression}}]


def later_claim_spec(rng: random.Random, prefix: str) -> dict[str, Any]:
    """A partition (one or two, maybe tolerating the taint) or a GPU that tolerates the taint."""
    kind = pick(rng, "partition", "pair", "tolerant", "bandwidth", "bandwidth")
    tolerations = [{"key": TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}]
    if kind == "bandwidth":
        exact = _exact(prefix, "shared-nic")
        if chance(rng, 0.8):  # else the policy's default
            exact["capacity"] = {"requests": {"bandwidth": pick(rng, "1G", "1500M", "3G", "5G")}}
    elif kind == "tolerant":
        exact = _exact(prefix, pick(rng, "gpu", "any"), tolerations=tolerations)
    else:
        exact = _exact(prefix, "partition", count=2 if kind == "pair" else 1)
        if chance(rng, 0.5):
            exact["tolerations"] = tolerations
    return {"devices": {"requests": [{"name": "r", "exactly": exact}]}}


def claim_spec(rng: random.Random, prefix: str) -> dict[str, Any]:
    """One of the request shapes the brief lists."""
    kind = pick(rng, "single", "count", "all", "match", "first", "fabric", "model", "impossible")
    model = pick(rng, *_MODELS)
    if kind == "single":
        requests = [{"name": "r", "exactly": _exact(prefix, pick(rng, "gpu", "big-gpu", "nic", "any"))}]
        return {"devices": {"requests": requests}}
    if kind == "count":
        requests = [{"name": "r", "exactly": _exact(prefix, "gpu", count=rng.randint(2, 3))}]
        return {"devices": {"requests": requests}}
    if kind == "all":
        requests = [{"name": "r", "exactly": _exact(prefix, pick(rng, "nic", "gpu"), allocationMode="All")}]
        return {"devices": {"requests": requests}}
    if kind == "match":
        second = pick(rng, "gpu", "nic")
        requests = [
            {"name": "a", "exactly": _exact(prefix, "gpu")},
            {"name": "b", "exactly": _exact(prefix, second)},
        ]
        attribute = pick(rng, "model", "numa") if second == "gpu" else "numa"  # nics have no model
        constraint = {"requests": ["a", "b"], "matchAttribute": f"{DRIVER}/{attribute}"}
        return {"devices": {"requests": requests, "constraints": [constraint]}}
    if kind == "first":
        subrequests = [
            {"name": "two", **_exact(prefix, "gpu", count=2, selectors=_cel(_model_is(model)))},
            {"name": "big", **_exact(prefix, "big-gpu")},
            {"name": "one", **_exact(prefix, "gpu")},
        ]
        return {"devices": {"requests": [{"name": "r", "firstAvailable": subrequests[rng.randint(0, 1) :]}]}}
    if kind == "fabric":
        requests = [{"name": "r", "exactly": _exact(prefix, "fabric")}]
        if chance(rng, 0.5):
            requests.append({"name": "g", "exactly": _exact(prefix, "gpu")})
        return {"devices": {"requests": requests}}
    if kind == "model":
        requests = [{"name": "r", "exactly": _exact(prefix, "gpu", selectors=_cel(_model_is(model)))}]
        return {"devices": {"requests": requests}}
    # nothing matches: a model no driver publishes, or more devices than any node has
    impossible = pick(
        rng,
        _exact(prefix, "gpu", selectors=_cel(_model_is("v100"))),
        _exact(prefix, "gpu", count=9),
    )
    return {"devices": {"requests": [{"name": "r", "exactly": impossible}]}}


def _model_is(model: str) -> str:
    return f'device.attributes["{DRIVER}"].model == "{model}"'


def _claim(name: str, namespace: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _use(pod: dict[str, Any], claim: str) -> None:
    spec = pod["spec"]
    spec.setdefault("resourceClaims", []).append({"name": "dev", "resourceClaimName": claim})
    spec["containers"][0].setdefault("resources", {})["claims"] = [{"name": "dev"}]
    spec["priorityClassName"] = DRA_PRIORITY


def extended_resource(prefix: str) -> str:
    return f"{DRIVER}/{prefix}gpu"


def extended_class(prefix: str) -> dict[str, Any]:
    """A class serving the scenario's extended resource with its GPUs (those claims use too)."""
    return {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": f"{prefix}ext-gpu"},
        "spec": {
            "extendedResourceName": extended_resource(prefix),
            "selectors": [
                {"cel": {"expression": f'device.driver == "{DRIVER}"'}},
                {"cel": {"expression": _CLASSES["gpu"]}},
            ],
        },
    }


def _ask_extended(rng: random.Random, prefix: str, pod: dict[str, Any]) -> None:
    count = str(pick(rng, 1, 1, 2, 9))  # 9: more than any node has
    resources = pod["spec"]["containers"][0].setdefault("resources", {})
    resources.setdefault("requests", {})[extended_resource(prefix)] = count
    resources.setdefault("limits", {})[extended_resource(prefix)] = count
    pod["spec"]["priorityClassName"] = DRA_PRIORITY


def add_claims(
    seed: int, prefix: str, node_names: list[str], pending: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The DRA objects of scenario `seed`, and claim references on some of `pending` (in place)."""
    rng = dra_rng(seed)
    rng.random()  # the draw wants_dra made
    later = random.Random(seed * 7919 + _STREAM_LATER)
    slices = resource_slices(rng, prefix, node_names)
    objects = [*device_classes(prefix), *slices, *partitioned_gpus(later, node_names, slices)]
    users = [p for p in pending if chance(rng, 0.6)] or pending[:1]
    i = 0
    while users:
        pod = users.pop(0)
        namespace = pod["metadata"]["namespace"]
        name = f"claim{i}"
        i += 1
        spec = claim_spec(rng, prefix)
        if chance(later, 0.4):
            spec = later_claim_spec(later, prefix)
        objects.append(_claim(name, namespace, spec))
        _use(pod, name)
        partner = next((p for p in users if p["metadata"]["namespace"] == namespace), None)
        if partner is not None and chance(rng, 0.3):  # a shared claim
            users.remove(partner)
            _use(partner, name)
    extended = random.Random(seed * 7919 + _EXTENDED_STREAM)
    objects.append(extended_class(prefix))
    for pod in pending:
        if not pod["spec"].get("resourceClaims") and chance(extended, EXTENDED_SHARE):
            _ask_extended(extended, prefix, pod)
    return objects
