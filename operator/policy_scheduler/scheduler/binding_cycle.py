"""The binding cycle: Permit wait, PreBind, Bind and PostBind, run as its own task per pod."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from policy_scheduler.scheduler.cycle_contracts import BindingTask
from policy_scheduler.scheduler.cycle_failure import one_node_rejection, reason_of
from policy_scheduler.scheduler.framework.events import ASSIGNED_POD_DELETE
from policy_scheduler.scheduler.framework.interfaces import AlreadyBound, NotLeading
from policy_scheduler.scheduler.framework.status import Code, Status
from policy_scheduler.scheduler.model import Pod

if TYPE_CHECKING:
    from policy_scheduler.scheduler.schedule_one import ScheduleOne

log = logging.getLogger(__name__)


async def binding_cycle(sched: ScheduleOne, task: BindingTask) -> None:
    """bindingCycle; a failure unreserves, forgets the assumed pod and requeues it. A write the
    fence refused (NotLeading: this replica may no longer act as the leader) drops the decision:
    the same, without reporting anything and without backoff."""
    framework, state, pod, node = task.framework, task.state, task.assumed, task.node_name
    permit_rejected = False
    try:
        status = await framework.wait_on_permit(pod, sched.observer.permit_waited if sched.observer else None)
        permit_rejected = status.is_rejected
        if status.is_success:
            started = time.perf_counter()
            status = await framework.run_pre_bind(state, pod, node)
            framework.timed("PreBind", started, status)
        if status.is_success:
            started = time.perf_counter()
            status = await framework.run_bind(state, pod, node)
            framework.timed("Bind", started, status)
            if status.code == Code.SKIP:
                status = Status(Code.ERROR, ("no bind plugin bound the pod",))
    except AlreadyBound as bound:
        _bound_elsewhere(sched, task, bound.node_name)
        return
    except NotLeading:
        _dropped(sched, task)
        return
    except Exception as exc:  # a plugin bug must not kill the scheduler
        log.exception("binding cycle failed", extra={"pod": pod.key})
        status = Status(Code.ERROR, (str(exc),))
    if not status.is_success:
        _release(sched, task)
        message = one_node_rejection(task.info, node, status) if permit_rejected else status.message
        reason = reason_of(status)
        # The assumed pod freed its place: pods waiting for room may fit now. After a rejection
        # upstream announces it once the pod is back in the queue, and not to the pod itself.
        if status.is_rejected:
            sched.fail(framework, task.info, reason, message, None, task.started, "unschedulable")
            _announce_room(sched, pod, to_itself=False)
        else:
            _announce_room(sched, pod, to_itself=True)
            sched.fail(framework, task.info, reason, message, None, task.started, "error")
        return
    sched.cache.finish_binding(pod)
    framework.run_post_bind(state, pod, node)
    sched.queue.done(pod.uid)
    if sched.observer is not None:
        sched.observer.bound(task.info, framework.scheduler_name, node)
    _report_scheduled(sched, task, node)


def _bound_elsewhere(sched: ScheduleOne, task: BindingTask, bound_node: str) -> None:
    """An earlier binding of ours went through after all (its answer was lost and that cycle
    failed): the pod is on `bound_node`. Free this cycle's node, do not requeue, and report the
    binding that happened; the watch brings the pod into the cache where it is."""
    pod = task.assumed
    _release(sched, task)
    sched.queue.done(pod.uid)
    _announce_room(sched, pod, to_itself=False)
    log.info(
        "bound by an earlier binding", extra={"pod": pod.key, "node": bound_node, "chosen": task.node_name}
    )
    _report_scheduled(sched, task, bound_node)


def _dropped(sched: ScheduleOne, task: BindingTask) -> None:
    """The decision was taken while this replica led, and may be stale now that it does not: free
    the node's room and put the pod back as it was. Whoever leads now decides for it."""
    pod = task.assumed
    _release(sched, task)
    sched.queue.requeue(task.info)
    _announce_room(sched, pod, to_itself=False)
    log.info("binding dropped: not the leader any more", extra={"pod": pod.key, "node": task.node_name})


def _release(sched: ScheduleOne, task: BindingTask) -> None:
    """Unreserve and forget the assumed pod: its node's room is free again."""
    task.framework.run_unreserve(task.state, task.assumed, task.node_name)
    sched.cache.forget_pod(task.assumed)


def _announce_room(sched: ScheduleOne, pod: Pod, *, to_itself: bool) -> None:
    """The room the assumed pod held may let waiting pods in (the pod itself only if asked)."""
    key = pod.key
    only_others: Callable[[Pod], bool] | None = None if to_itself else (lambda other: other.key != key)
    sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None, only_others)


def _report_scheduled(sched: ScheduleOne, task: BindingTask, node_name: str) -> None:
    sched.hooks.scheduled(task.assumed, node_name, task.framework)
    sched.hooks.cycle_finished(task.framework, "scheduled", time.monotonic() - task.started)
