"""Gang workloads: measured pods in scheduler-plugins PodGroups, bound whole or not at all.

Shapes of the gang runs the lead asked for ("1000 gangs of 3", "10 gangs of 500" at 5000 nodes);
v1.35.4's scheduler_perf has no gang workload to copy (its Workload API and GangScheduling plugin
are alpha and off). Pods join with the `scheduling.x-k8s.io/pod-group` label; one PodGroup per
gang, minMember = its pod count. kube-scheduler (default profile) cannot gang-schedule: it binds
the same pods one by one, a non-gang reference; the noop binder is the ceiling. policy-scheduler
serves a profile with Coscheduling, so its figures include the wait at Permit for whole gangs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policy_scheduler.apiobjects.podgroup_api import API_VERSION, PLURAL
from policy_scheduler.bench_e2e.workloads import JSON, Workload, pod
from policy_scheduler.scheduler.gang import POD_GROUP_LABEL

# A 500-pod gang is assumed member after member before Permit lets any of them bind: on a loaded
# machine that may take longer than Coscheduling's default 60 s (a timeout would release it all).
PERMIT_WAITING_TIME_SECONDS = 600
PROFILE: JSON = {
    "plugins": {
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"disabled": [{"name": "PrioritySort"}]},
    },
    "pluginConfig": [
        {"name": "Coscheduling", "args": {"permitWaitingTimeSeconds": PERMIT_WAITING_TIME_SECONDS}}
    ],
}


def collection(namespace: str) -> str:
    return f"/apis/{API_VERSION}/namespaces/{namespace}/{PLURAL}"


def pod_group(name: str, namespace: str, min_member: int) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


def _grouped(size: Callable[[int], int]) -> Callable[[str, list[JSON], int], list[JSON]]:
    """Labels the measured pods into gangs of `size(nodes)` (the last one may be smaller) and
    returns their PodGroups."""

    def make(namespace: str, pods: list[JSON], nodes: int) -> list[JSON]:
        step = max(size(nodes), 1)
        groups: list[JSON] = []
        for start in range(0, len(pods), step):
            members = pods[start : start + step]
            name = f"gang-{start // step}"
            for member in members:
                member["metadata"]["labels"][POD_GROUP_LABEL] = name
            groups.append(pod_group(name, namespace, len(members)))
        return groups

    return make


def _measured(name: str, namespace: str, scheduler: str) -> JSON:
    return pod(name, namespace, scheduler)


def _no_init(namespace: str, scheduler: str, nodes: Sequence[str]) -> list[JSON]:
    return []


def _small_gangs(nodes: int) -> int:
    return max(nodes // 5, 1)  # 1000 gangs at 5000 nodes


def _large_gang_size(nodes: int) -> int:
    return max(nodes // 10, 1)  # 500 at 5000 nodes


GANG_WORKLOADS: tuple[Workload, ...] = (
    Workload(
        "GangSmall",
        "nodes/5 gangs of 3 default pods (1000 x 3 at 5000 nodes), one PodGroup each, empty cluster",
        _no_init,
        _measured,
        max_measured=lambda nodes: 3 * _small_gangs(nodes),
        groups=_grouped(lambda nodes: 3),
        profile=PROFILE,
    ),
    Workload(
        "GangLarge",
        "10 gangs of nodes/10 default pods (10 x 500 at 5000 nodes), one PodGroup each, empty cluster",
        _no_init,
        _measured,
        max_measured=lambda nodes: 10 * _large_gang_size(nodes),
        groups=_grouped(_large_gang_size),
        profile=PROFILE,
    ),
)
