"""The scheduling queue: activeQ, backoffQ and the unschedulable pool, shared by all profiles.

Use SchedulingQueue (asyncio: `await pop()`, `run_flushers()`, `close()`); its synchronous core
is PriorityQueue, which tests drive directly with a fake clock.
"""

from policy_scheduler.scheduler.queue.active import InFlightEvent
from policy_scheduler.scheduler.queue.backoff import calculate_backoff_duration
from policy_scheduler.scheduler.queue.changes import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_DELETE,
    EVENT_ASSIGNED_POD_UPDATE,
    EVENT_FORCE_ACTIVATE,
    EVENT_NODE_ADD,
    EVENT_NODE_DELETE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_DELETE,
    EVENT_UNSCHEDULED_POD_UPDATE,
    event_label,
    match_cluster_events,
    node_scheduling_properties_change,
    pod_scheduling_properties_change,
)
from policy_scheduler.scheduler.queue.core import PreCheck, PriorityQueue, le_priority_precheck
from policy_scheduler.scheduler.queue.nominator import PodLister, PodNominator
from policy_scheduler.scheduler.queue.scheduling_queue import QueueClosed, SchedulingQueue
from policy_scheduler.scheduler.queue.types import BackoffSettings, FrameworkSource, QueueFramework

__all__ = [
    "EVENT_ASSIGNED_POD_ADD",
    "EVENT_ASSIGNED_POD_DELETE",
    "EVENT_ASSIGNED_POD_UPDATE",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_NODE_ADD",
    "EVENT_NODE_DELETE",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_UNSCHEDULED_POD_ADD",
    "EVENT_UNSCHEDULED_POD_DELETE",
    "EVENT_UNSCHEDULED_POD_UPDATE",
    "BackoffSettings",
    "FrameworkSource",
    "InFlightEvent",
    "PodLister",
    "PodNominator",
    "PreCheck",
    "PriorityQueue",
    "QueueClosed",
    "QueueFramework",
    "SchedulingQueue",
    "calculate_backoff_duration",
    "event_label",
    "le_priority_precheck",
    "match_cluster_events",
    "node_scheduling_properties_change",
    "pod_scheduling_properties_change",
]
