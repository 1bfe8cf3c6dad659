"""scheduler_perf's SchedulingWithResourceClaimTemplate (test/integration/scheduler_perf/dra,
v1.35.4): a test driver's ResourceSlice on every node, a DeviceClass selecting the driver,
one ResourceClaimTemplate, and measured pods that each get a claim from it.

Upstream's 2000pods_100nodes publishes maxClaimsPerNode=20 devices per node and lets the
scheduler place 1000 init pods with claims first, leaving 10 free devices per node. Our init
pods are created bound (no scheduler works on them), which claims cannot be, so every slice
publishes just those free devices instead: the measured pods meet the same free capacity.
The driver is named after the run, so runs never see each other's devices.
"""

from __future__ import annotations

from collections.abc import Sequence

from policy_scheduler.bench_e2e.workloads import JSON, Workload, pod

RESOURCE_API = "resource.k8s.io/v1"
FREE_DEVICES_PER_NODE = 10  # maxClaimsPerNode 20 - initPods 1000 / nodes 100
TEMPLATE = "test-claim-template"
CLAIM = "resource"


def driver(namespace: str) -> str:
    return f"{namespace}.test-driver.cdi.k8s.io"


def device_class_name(namespace: str) -> str:
    return f"{namespace}-test-class"


def _slice(namespace: str, node: str) -> JSON:
    devices = [
        {
            "name": f"instance-{i}",
            "attributes": {
                "model": {"string": "A100"},
                "family": {"string": "GPU"},
                "driverVersion": {"version": "1.2.3"},
                "dra.example.com/numa": {"int": i},
            },
            "capacity": {"memory": {"value": "1Gi"}},
        }
        for i in range(FREE_DEVICES_PER_NODE)
    ]
    return {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceSlice",
        "metadata": {"name": f"{namespace}-{node}"},
        "spec": {
            "driver": driver(namespace),
            "nodeName": node,
            "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
            "devices": devices,
        },
    }


def objects(namespace: str, nodes: Sequence[str]) -> list[JSON]:
    """The DeviceClass, one ResourceSlice per node, and the claim template (in `namespace`)."""
    device_class = {
        "apiVersion": RESOURCE_API,
        "kind": "DeviceClass",
        "metadata": {"name": device_class_name(namespace)},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{driver(namespace)}"'}}]},
    }
    request = {"name": "req-0", "exactly": {"deviceClassName": device_class_name(namespace)}}
    template = {
        "apiVersion": RESOURCE_API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": TEMPLATE, "namespace": namespace},
        "spec": {"spec": {"devices": {"requests": [request]}}},
    }
    return [device_class, *(_slice(namespace, n) for n in nodes), template]


def _no_init(namespace: str, scheduler: str, nodes: Sequence[str]) -> list[JSON]:
    return []


def _measured(name: str, namespace: str, scheduler: str) -> JSON:
    """pod-with-claim-template.yaml: one claim from the template, used by the container."""
    body = pod(
        name, namespace, scheduler, resourceClaims=[{"name": CLAIM, "resourceClaimTemplateName": TEMPLATE}]
    )
    body["spec"]["containers"][0]["resources"]["claims"] = [{"name": CLAIM}]
    return body


DRA_WORKLOADS = (
    Workload(
        "SchedulingWithResourceClaimTemplate",
        f"a ResourceSlice of {FREE_DEVICES_PER_NODE} devices per node; measured pods each get a claim "
        "from one ResourceClaimTemplate (the noop binder cannot allocate: n/a)",
        _no_init,
        _measured,
        max_measured=lambda nodes: nodes * FREE_DEVICES_PER_NODE,
        objects=objects,
        claims=True,
    ),
)


def collection(obj: JSON) -> str:
    """Where `obj` (one of `objects()`) is created."""
    plural = {"DeviceClass": "deviceclasses", "ResourceSlice": "resourceslices"}.get(obj["kind"])
    if plural is not None:
        return f"/apis/{RESOURCE_API}/{plural}"
    return f"/apis/{RESOURCE_API}/namespaces/{obj['metadata']['namespace']}/resourceclaimtemplates"


def cluster_scoped(namespace: str) -> list[tuple[str, dict[str, str]]]:
    """DELETE requests (path, params) for what namespace deletion leaves behind."""
    return [
        (f"/apis/{RESOURCE_API}/resourceslices", {"fieldSelector": f"spec.driver={driver(namespace)}"}),
        (f"/apis/{RESOURCE_API}/deviceclasses/{device_class_name(namespace)}", {}),
    ]


def claims_path(namespace: str) -> str:
    return f"/apis/{RESOURCE_API}/namespaces/{namespace}/resourceclaims"
