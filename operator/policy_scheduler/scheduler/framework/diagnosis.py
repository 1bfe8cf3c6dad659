"""Why a pod did not fit: per-node statuses and kube-scheduler's FitError message."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.status import Code, Status

NO_NODE_AVAILABLE = "0/{} nodes are available"


@dataclass(slots=True)
class Diagnosis:
    # node name -> status of nodes that were evaluated and rejected
    node_to_status: NodeToStatus = field(default_factory=NodeToStatus)
    # status for nodes not in node_to_status (PreFilter rejection or narrowing)
    absent_nodes_status: Status = field(default_factory=lambda: Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE))
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    post_filter_msg: str = ""

    def add_plugin_status(self, status: Status) -> None:
        """framework.Diagnosis.AddPluginStatus."""
        if not status.plugin:
            return
        if status.code == Code.PENDING:
            self.pending_plugins.add(status.plugin)
        elif status.is_rejected:
            self.unschedulable_plugins.add(status.plugin)

    def status_of(self, node_name: str) -> Status:
        return self.node_to_status.get(node_name, self.absent_nodes_status)

    def status_counts(self) -> list[tuple[Status, int]]:
        """Each distinct Status object of node_to_status with its number of nodes."""
        return self.node_to_status.counts()


@dataclass(slots=True)
class FitError(Exception):
    pod_key: str
    num_all_nodes: int
    diagnosis: Diagnosis

    def __str__(self) -> str:
        return fit_error_message(self.num_all_nodes, self.diagnosis)


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    """framework.FitError.Error(), byte for byte."""
    message = NO_NODE_AVAILABLE.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        message += f" {diagnosis.pre_filter_msg}."
    else:
        reasons: Counter[str] = Counter()
        # Thousands of nodes share a handful of statuses: count those, then their reasons.
        for status, nodes in diagnosis.status_counts():
            for reason in status.reasons:
                reasons[reason] += nodes
        absent = num_all_nodes - len(diagnosis.node_to_status)
        if absent > 0:
            for reason in diagnosis.absent_nodes_status.reasons:
                reasons[reason] += absent
        histogram = sorted(f"{count} {reason}" for reason, count in reasons.items())
        if histogram:
            message += f" {', '.join(histogram)}."
    if diagnosis.post_filter_msg:
        message += f" {diagnosis.post_filter_msg}"
    return message
