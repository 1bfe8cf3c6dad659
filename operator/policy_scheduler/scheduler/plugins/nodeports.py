"""NodePorts: a pod's host ports must be free on the node (same protocol and port, overlapping IP)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Status, error, unschedulable
from policy_scheduler.scheduler.model import ContainerPort, Pod
from policy_scheduler.scheduler.nodetable import Rows

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_KEY = "PreFilterNodePorts"
BIND_ALL = "0.0.0.0"

HostPort = tuple[str, str, int]  # (ip, protocol, port), sanitized as HostPortInfo does


def wanted_host_ports(pod: Pod) -> list[ContainerPort]:
    """util.GetHostPorts: only restartable (sidecar) init containers run alongside the pod."""
    sidecars = (c for c in pod.init_containers if c.restart_policy == "Always")
    return [p for c in (*sidecars, *pod.containers) for p in c.ports if p.host_port > 0]


def sanitize(port: ContainerPort) -> HostPort:
    return (port.host_ip or BIND_ALL, port.protocol or "TCP", port.host_port)


def conflicts(want: HostPort, used_ips: Iterable[str]) -> bool:
    """HostPortInfo.CheckConflict for one (protocol, port): 0.0.0.0 overlaps every IP."""
    ip = want[0]
    return any(ip == BIND_ALL or used in (BIND_ALL, ip) for used in used_ips)


def fits_ports(want: Iterable[ContainerPort], in_use: set[HostPort]) -> bool:
    for port in want:
        ip, protocol, number = sanitize(port)
        same = (
            used_ip
            for used_ip, used_protocol, used_number in in_use
            if used_protocol == protocol and used_number == number
        )
        if conflicts((ip, protocol, number), same):
            return False
    return True


class NodePorts(PreFilterPlugin, FilterPlugin):
    name = "NodePorts"
    signs_pods = True

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        ports = {p.host_port for c in (*pod.containers, *pod.init_containers) for p in c.ports if p.host_port}
        return (("HostPorts", tuple(sorted(ports))),)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        ports = wanted_host_ports(pod)
        if not ports:
            return None, SKIP
        state.write(PRE_FILTER_KEY, tuple(sanitize(p) for p in ports))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        wanted: tuple[HostPort, ...] | None = state.read(PRE_FILTER_KEY)
        if wanted is None:  # as upstream, Filter without PreFilter is an error
            return FilterResult.reject_all(
                len(rows), error(f'reading "{PRE_FILTER_KEY}" from cycleState: not found')
            )
        table = self.table
        conflict = np.zeros(table.n, dtype=np.bool_)
        for want in wanted:
            # The index is sparse: only nodes already using this protocol and port are looked at.
            for row, ips in table.host_ports.get((want[1], want[2]), {}).items():
                if conflicts(want, ips):
                    conflict[row] = True
        return FilterResult.reject_where(conflict[rows], unschedulable(ERR_REASON))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # The queueing-hint variant (SchedulerQueueingHints is GA and locked on in v1.35).
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE), self._after_pod_deleted),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
        ]

    @staticmethod
    def _after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(old, Pod):
            return QueueingHint.QUEUE
        if not old.node_name and not old.nominated_node_name:
            return QueueingHint.SKIP  # an unscheduled pod held no ports
        freed = wanted_host_ports(old)
        if not freed or fits_ports(wanted_host_ports(pod), {sanitize(p) for p in freed}):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
