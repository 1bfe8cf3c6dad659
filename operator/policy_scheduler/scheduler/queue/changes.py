"""Cluster-event helpers for the queue: upstream's event matching, labels and change extraction."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    Action,
    ClusterEvent,
    Resource,
)
from policy_scheduler.scheduler.model import Node, Pod

# Event labels the queue uses for pods moved by itself (framework/events.go).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF_Q = "PopFromBackoffQ"
FORCE_ACTIVATE_LABEL = "ForceActivate"

EVENT_ASSIGNED_POD_ADD = ClusterEvent(Resource.ASSIGNED_POD, Action.ADD)
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(Resource.ASSIGNED_POD, Action.UPDATE)
EVENT_ASSIGNED_POD_DELETE = ASSIGNED_POD_DELETE
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE)
EVENT_UNSCHEDULED_POD_DELETE = ClusterEvent(Resource.UNSCHEDULED_POD, Action.DELETE)
EVENT_NODE_ADD = ClusterEvent(Resource.NODE, Action.ADD)
EVENT_NODE_DELETE = ClusterEvent(Resource.NODE, Action.DELETE)
EVENT_UNSCHEDULABLE_TIMEOUT = UNSCHEDULABLE_TIMEOUT
EVENT_FORCE_ACTIVATE = FORCE_ACTIVATE


def _action_name(action: Action) -> str:
    if action == Action.ALL:
        return "All"
    if action == Action.UPDATE:
        return "Update"
    names = [m.name for m in Action if m.name and (m & action) == m and bin(m.value).count("1") == 1]
    return "|".join("".join(part.capitalize() for part in n.split("_")) for n in names)


def event_label(event: ClusterEvent) -> str:
    """ClusterEvent.Label(): the custom label, else resource + action (e.g. NodeAdd)."""
    return event.label or f"{event.resource.value}{_action_name(event.action)}"


def is_wildcard(event: ClusterEvent) -> bool:
    """ClusterEventIsWildCard: */All moves every pod regardless of its rejecting plugins."""
    return event.resource == Resource.WILDCARD and event.action == Action.ALL


def _resources_match(registered: Resource, incoming: Resource) -> bool:
    if registered == incoming or registered == Resource.WILDCARD:
        return True
    return registered == Resource.POD and (
        incoming == Resource.ASSIGNED_POD or incoming == Resource.UNSCHEDULED_POD
    )


def match_cluster_events(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """framework.MatchClusterEvents: `incoming` must be the same as or more specific than `registered`.

    Stricter than ClusterEvent.matches: a general Node/Update does not match a registration for only
    Node/UpdateNodeLabel (incoming action must be a subset-or-lower of the registered one).
    """
    # int's own operators: IntFlag's `&` builds a flag object in Python code, and this runs
    # for every hint entry of every waiting pod on every cluster event.
    return is_wildcard(registered) or (
        _resources_match(registered.resource, incoming.resource)
        and int.__and__(registered.action, incoming.action) != 0
        and int.__le__(incoming.action, registered.action)
    )


def pod_scheduling_properties_change(new: Pod, old: Pod) -> list[ClusterEvent]:
    """framework.PodSchedulingPropertiesChange: the UpdatePodXYZ events an update represents."""
    resource = Resource.ASSIGNED_POD if new.node_name else Resource.UNSCHEDULED_POD
    actions: list[Action] = []
    if new.labels != old.labels:
        actions.append(Action.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(Action.UPDATE_POD_SCALE_DOWN)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(Action.UPDATE_POD_TOLERATION)
    if new.resource_claim_statuses != old.resource_claim_statuses:
        actions.append(Action.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(Action.UPDATE)
    return [ClusterEvent(resource, action) for action in actions]


def _scaled_down(new: Pod, old: Pod) -> bool:
    new_requests = new.requests
    for name, old_value in old.requests.items():
        if name not in new_requests or old_value > new_requests[name]:
            return True
    return False


def node_scheduling_properties_change(new: Node, old: Node) -> list[ClusterEvent]:
    """framework.NodeSchedulingPropertiesChange over the fields our Node model carries."""
    actions: list[Action] = []
    if new.unschedulable != old.unschedulable and not new.unschedulable:
        actions.append(Action.UPDATE_NODE_TAINT)  # upstream reports spec.unschedulable as a taint change
    if new.allocatable != old.allocatable:
        actions.append(Action.UPDATE_NODE_ALLOCATABLE)
    if new.labels != old.labels:
        actions.append(Action.UPDATE_NODE_LABEL)
    if new.taints != old.taints:
        actions.append(Action.UPDATE_NODE_TAINT)
    if new.declared_features != old.declared_features:
        actions.append(Action.UPDATE_NODE_DECLARED_FEATURE)
    return [ClusterEvent(Resource.NODE, action) for action in actions]
