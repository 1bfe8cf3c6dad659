"""How a failed attempt is worded: the pod's reason, and a one-node rejection as a FitError."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, fit_error_message
from policy_scheduler.scheduler.framework.interfaces import QueuedPodInfo
from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.status import Status

REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


def reason_of(status: Status) -> str:
    return REASON_UNSCHEDULABLE if status.is_rejected else REASON_SCHEDULER_ERROR


def one_node_rejection(info: QueuedPodInfo, node_name: str, status: Status) -> str:
    """A rejection at Reserve, Permit or in the binding cycle is a FitError over the one chosen
    node, as upstream; its plugin goes into the pod's unschedulable plugins for the queueing hints."""
    diagnosis = Diagnosis(NodeToStatus({node_name: status}))
    diagnosis.add_plugin_status(status)
    info.unschedulable_plugins = set(diagnosis.unschedulable_plugins)
    info.pending_plugins = set(diagnosis.pending_plugins)
    return fit_error_message(1, diagnosis)
