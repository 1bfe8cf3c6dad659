"""The binding cycle: Permit wait, PreBind, Bind and PostBind, run as its own task per pod."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from policy_scheduler.scheduler.cycle_contracts import BindingTask
from policy_scheduler.scheduler.cycle_failure import one_node_rejection, reason_of
from policy_scheduler.scheduler.framework.events import ASSIGNED_POD_DELETE
from policy_scheduler.scheduler.framework.interfaces import AlreadyBound
from policy_scheduler.scheduler.framework.status import Code, Status

if TYPE_CHECKING:
    from policy_scheduler.scheduler.schedule_one import ScheduleOne

log = logging.getLogger(__name__)


async def binding_cycle(sched: ScheduleOne, task: BindingTask) -> None:
    """bindingCycle; a failure unreserves, forgets the assumed pod and requeues it."""
    framework, state, pod, node = task.framework, task.state, task.assumed, task.node_name
    permit_rejected = False
    try:
        status = await framework.wait_on_permit(pod)
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
    except Exception as exc:  # a plugin bug must not kill the scheduler
        log.exception("binding cycle failed", extra={"pod": pod.key})
        status = Status(Code.ERROR, (str(exc),))
    if not status.is_success:
        framework.run_unreserve(state, pod, node)
        sched.cache.forget_pod(pod)
        message = one_node_rejection(task.info, node, status) if permit_rejected else status.message
        reason = reason_of(status)
        # The assumed pod freed its place: pods waiting for room may fit now. After a rejection
        # upstream announces it once the pod is back in the queue, and not to the pod itself.
        if status.is_rejected:
            sched.fail(framework, task.info, reason, message, None, task.started, "unschedulable")
            key = pod.key
            sched.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, pod, None, lambda other: other.key != key
            )
        else:
            sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
            sched.fail(framework, task.info, reason, message, None, task.started, "error")
        return
    sched.cache.finish_binding(pod)
    framework.run_post_bind(state, pod, node)
    sched.queue.done(pod.uid)
    if sched.observer is not None:
        sched.observer.bound(task.info, framework.scheduler_name, node)
    sched.hooks.scheduled(pod, node, framework)
    sched.hooks.cycle_finished(framework, "scheduled", time.monotonic() - task.started)


def _bound_elsewhere(sched: ScheduleOne, task: BindingTask, bound_node: str) -> None:
    """An earlier binding of ours went through after all (its answer was lost and that cycle
    failed): the pod is on `bound_node`. Free this cycle's node, do not requeue, and report the
    binding that happened; the watch brings the pod into the cache where it is."""
    framework, pod = task.framework, task.assumed
    framework.run_unreserve(task.state, pod, task.node_name)
    sched.cache.forget_pod(pod)
    sched.queue.done(pod.uid)
    key = pod.key
    sched.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None, lambda other: other.key != key)
    log.info("bound by an earlier binding", extra={"pod": key, "node": bound_node, "chosen": task.node_name})
    sched.hooks.scheduled(pod, bound_node, framework)
    sched.hooks.cycle_finished(framework, "scheduled", time.monotonic() - task.started)
