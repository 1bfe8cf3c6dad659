"""The engine: cache, queue, live profiles and the scheduling loop, fed by cluster events.

The operator feeds it from its watches, `simulate` from YAML, tests directly. It imports no
Kubernetes client: side effects go out through SchedulerHooks and the Binder.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

import numpy as np

from policy_scheduler.scheduler.cache import Cache
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.cycle_contracts import SchedulerHooks
from policy_scheduler.scheduler.cycle_failure import REASON_UNSCHEDULABLE
from policy_scheduler.scheduler.diagnosis_recorder import CycleObserver
from policy_scheduler.scheduler.framework.events import ASSIGNED_POD_DELETE, Action, ClusterEvent, Resource
from policy_scheduler.scheduler.framework.interfaces import Binder, Handle, Plugin
from policy_scheduler.scheduler.framework.runtime import Framework, PluginMetrics
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.gang import PodGroup, PodGroupStore
from policy_scheduler.scheduler.model import Node, Pod, same_but_version
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.registry import plugin_registry
from policy_scheduler.scheduler.queue.changes import EVENT_ASSIGNED_POD_UPDATE, EVENT_UNSCHEDULED_POD_ADD
from policy_scheduler.scheduler.queue.core import le_priority_precheck
from policy_scheduler.scheduler.queue.nominator import PodNominator
from policy_scheduler.scheduler.queue.scheduling_queue import QueueClosed, SchedulingQueue
from policy_scheduler.scheduler.schedule_one import ScheduleOne
from policy_scheduler.scheduler.storage.api import VolumeBindingAPI
from policy_scheduler.scheduler.storage.events import storage_event
from policy_scheduler.scheduler.storage.lister import StorageLister, StorageObject, StorageObjects

log = logging.getLogger(__name__)


class _QueueFacade:
    """Adapts the queue and nominator to what ScheduleOne needs."""

    def __init__(self, queue: SchedulingQueue, latest: Callable[[str], Pod | None]) -> None:
        self.queue = queue
        self.latest = latest

    def done(self, uid: str) -> None:
        self.queue.done(uid)

    def add_unschedulable_if_not_present(self, info: Any, scheduling_cycle: int) -> None:
        current = self.latest(info.pod.key)
        if current is None or current.node_name:
            self.queue.done(info.pod.uid)  # deleted or bound meanwhile: nothing to retry
            return
        info.pod = current
        self.queue.add_unschedulable_if_not_present(info, scheduling_cycle)

    def requeue(self, info: Any) -> None:
        """Back to activeQ as if just added (no attempt counted, no backoff): the cycle's decision
        was dropped, not failed. Not if it was deleted or bound meanwhile."""
        self.queue.done(info.pod.uid)
        current = self.latest(info.pod.key)
        if current is not None and not current.node_name and not current.terminating:
            self.queue.add(current)

    def move_all_to_active_or_backoff(
        self, event: Any, old: Any, new: Any, precheck: Callable[[Pod], bool] | None = None
    ) -> None:
        self.queue.move_all_to_active_or_backoff(event, old, new, precheck)

    def activate_nominated(self, pod: Pod, node_name: str) -> None:
        """Record the nomination from preemption ("" clears a stale one)."""
        self.queue.nominator.add_nominated_pod(pod, node_name)

    def delete_nominated(self, pod: Pod) -> None:
        self.queue.nominator.delete_nominated_pod_if_exists(pod)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.queue.nominator.nominated_pods_for_node(node_name)


class Engine:
    def __init__(
        self,
        *,
        hooks: SchedulerHooks | None = None,
        binder: Binder | None = None,
        seed: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        registry: Mapping[str, type[Plugin]] | None = None,
        services: ClusterServices | None = None,
        observe: Callable[[str, str, str, float], None] | None = None,
        storage: StorageLister | None = None,
        volume_api: VolumeBindingAPI | None = None,
        observer: CycleObserver | None = None,
        plugin_metrics: PluginMetrics | None = None,
    ) -> None:
        # observe(profile, extension point, status, seconds), e.g. a Prometheus histogram.
        self.observe = observe
        self.clock = clock
        self.plugin_metrics = plugin_metrics
        self.table = NodeTable()
        self.cache = Cache(self.table, clock=clock)
        # Every unassigned pod we saw, whatever its schedulerName: a profile created later
        # must find its pods without a relist.
        self.unassigned: dict[str, Pod] = {}
        self.registry = dict(registry or plugin_registry())
        self.frameworks: dict[str, Framework] = {}
        self.nominator = PodNominator()
        self.queue = SchedulingQueue(lambda: self.frameworks, clock, nominator=self.nominator)
        self.base_handle = Handle(
            table=self.table,
            nominator=self.nominator,
            binder=binder,
            rng=random.Random(seed),
            clock=time.time,
            services=services if services is not None else ClusterServices(),
            storage=storage if storage is not None else StorageObjects(),
            volume_api=volume_api,
            activate=self.queue.activate,
        )
        self.scheduler = ScheduleOne(
            self.cache,
            _QueueFacade(self.queue, self.unassigned.get),
            lambda: self.frameworks,
            hooks=hooks,
            rng=np.random.default_rng(seed),
            observer=observer,
        )
        # Every unassigned pod we saw, whatever its schedulerName: a profile created later
        # must find its pods without a relist.

    # ---- profiles (live) ---------------------------------------------------------------------------

    def retry_pending(self, scheduler_name: str) -> None:
        """Move every pending pod of a profile to activeQ: its EvictionPolicy resolved again, so
        pods that could not preempt may now (upstream has no live policies, so no such event)."""
        self.queue.activate([p for p in self.queue.pending_pods() if p.scheduler_name == scheduler_name])

    def set_profiles(self, profiles: Iterable[ResolvedProfile]) -> None:
        """Replace the active profiles. Queued pods stay; cycles already running keep their framework."""
        frameworks: dict[str, Framework] = {}
        for profile in profiles:
            current = self.frameworks.get(profile.scheduler_name)
            if current is not None and current.profile == profile:
                frameworks[profile.scheduler_name] = current  # unchanged: keep its plugin state
                continue
            framework = Framework(profile, self.registry, self.base_handle)
            framework.clock = self.clock
            if self.observe is not None:
                framework.observe = functools.partial(self.observe, profile.scheduler_name)
            framework.plugin_metrics = self.plugin_metrics
            frameworks[profile.scheduler_name] = framework
        previous = set(self.frameworks)
        changed = {name for name, fw in frameworks.items() if self.frameworks.get(name) is not fw}
        self.frameworks = frameworks
        if changed or previous - set(frameworks):
            self.queue.resort()
        for name in set(frameworks) - previous:
            for pod in self.unassigned.values():
                if pod.scheduler_name == name and not pod.terminating:
                    self.queue.add(pod)
        for name in previous - set(frameworks):
            for pod in self.unassigned.values():
                if pod.scheduler_name == name:
                    self.queue.delete(pod)
                    self.scheduler.hooks.failed(
                        pod,
                        REASON_UNSCHEDULABLE,
                        f"no SchedulingProfile serves schedulerName {name!r} any more",
                        None,
                        None,
                    )

    def responsible_for(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.frameworks

    # ---- cluster events ------------------------------------------------------------------------------

    @property
    def pod_groups(self) -> PodGroupStore:
        return self.base_handle.services.pod_groups

    @property
    def workload_groups(self) -> PodGroupStore:
        return self.base_handle.services.workload_groups

    def _gang_stores(self) -> tuple[PodGroupStore, PodGroupStore]:
        return self.pod_groups, self.workload_groups

    def pod_added(self, pod: Pod) -> None:
        for store in self._gang_stores():
            store.pod_seen(pod)
        if pod.node_name:
            self.unassigned.pop(pod.key, None)
            self.cache.add_pod(pod)
            self.nominator.delete_nominated_pod_if_exists(pod)
            self.queue.delete(pod)
            self.queue.assigned_pod_added(pod)
            return
        self.unassigned[pod.key] = pod
        if pod.nominated_node_name:
            self.nominator.add_nominated_pod(pod, pod.nominated_node_name)
        if self.responsible_for(pod) and not pod.terminating:
            self.queue.add(pod)
        for store in self._gang_stores():
            if store.key_of(pod):
                # A new member may complete its group: wake the siblings PreEnqueue held back.
                # Only they can care, and only once minMember pods exist: offering every arrival
                # to every unschedulable pod cost O(pods x unschedulable) hint calls (docs/gang.md).
                siblings = store.siblings_to_wake(pod)
                if siblings:
                    self.queue.move_to_active_or_backoff(siblings, EVENT_UNSCHEDULED_POD_ADD, None, pod)

    def pod_updated(self, old: Pod, new: Pod) -> None:
        for store in self._gang_stores():
            store.pod_seen(new)
        if new.node_name:
            if not old.node_name:
                self.pod_added(new)  # just bound (by us or anyone): leaves the queue
                return
            if self._only_version_changed(old, new):
                return
            self.cache.update_pod(new)
            self.queue.assigned_pod_updated(old, new)
            return
        self.unassigned[new.key] = new
        if old.resource_version and old.resource_version == new.resource_version:
            return  # a periodic resync, not a change
        self.nominator.update_nominated_pod(old, new)
        if self.responsible_for(new):
            if new.terminating:
                self.queue.delete(new)
            else:
                self.queue.update(old, new)
        if old.nominated_node_name and old.nominated_node_name != new.nominated_node_name:
            # Room reserved for this pod is free again for pods of lower or equal priority.
            self.queue.move_all_to_active_or_backoff(
                ASSIGNED_POD_DELETE, old, None, le_priority_precheck(old.priority)
            )

    def _only_version_changed(self, old: Pod, new: Pod) -> bool:
        """An assigned pod's update that changes nothing the model holds (kwok's status writes,
        echoes of our binds): only the stored resourceVersion moves. Such an update is the
        generic AssignedPodUpdate event upstream, so it is skipped only if no hint wants that."""
        stored = self.cache.get_pod(new.key)
        if stored is None or self.cache.is_assumed(new):
            return False
        if not (same_but_version(old, new) and same_but_version(stored, new)):
            return False
        if self.queue.is_event_of_interest(EVENT_ASSIGNED_POD_UPDATE):
            return False
        stored.resource_version = new.resource_version
        return True

    def pod_deleted(self, pod: Pod) -> None:
        for store in self._gang_stores():
            store.pod_gone(pod)
        self.unassigned.pop(pod.key, None)
        self.nominator.delete_nominated_pod_if_exists(pod)
        if pod.node_name or self.cache.get_pod(pod.key) is not None:
            stored = self.cache.get_pod(pod.key) or pod
            self.cache.remove_pod(stored)
            self.queue.assigned_pod_deleted(stored)
        else:
            self.queue.delete(pod)
            if pod.nominated_node_name:
                self.queue.move_all_to_active_or_backoff(
                    ASSIGNED_POD_DELETE, pod, None, le_priority_precheck(pod.priority)
                )

    def node_added(self, node: Node) -> None:
        self.cache.add_node(node)
        self.queue.node_added(node)

    def node_updated(self, old: Node, new: Node) -> None:
        self.cache.update_node(new)
        self.queue.node_updated(old, new)

    def node_deleted(self, node: Node) -> None:
        self.cache.remove_node(node.name)
        self.queue.node_deleted(node)

    def pod_group_set(self, group: PodGroup) -> None:
        """A PodGroup added or changed: its held-back or rejected members may go now."""
        old = self.pod_groups.set_group(group)
        action = Action.ADD if old is None else Action.UPDATE
        if old is None or old.creation_timestamp != group.creation_timestamp:
            self.queue.active.heap.rebuild()  # the members' place in the queue follows the group
        self.queue.move_all_to_active_or_backoff(ClusterEvent(Resource.POD_GROUP, action), old, group)

    def pod_group_deleted(self, key: str) -> None:
        self.pod_groups.delete_group(key)

    def workload_group_set(self, group: PodGroup) -> None:
        """A Workload API pod group added or changed (a scheduling.k8s.io PodGroup, or one
        podGroups entry of a v1.35 Workload): its held-back members may go now."""
        old = self.workload_groups.set_group(group)
        action = Action.ADD if old is None else Action.UPDATE
        self.queue.move_all_to_active_or_backoff(
            ClusterEvent(Resource.WORKLOAD_POD_GROUP, action), old, group
        )

    def workload_group_deleted(self, key: str) -> None:
        self.workload_groups.delete_group(key)

    def activate_with_group(self, pod: Pod) -> None:
        """Activate a preemptor whose evictions are over, with the pending members of its Workload
        API gang: workload-aware DefaultPreemption held them while it preempted for the group."""
        store = self.workload_groups
        key = store.key_of(pod)
        members = store.state(key).members if key and key in store.states else {}
        siblings = [p for k in members if k != pod.key and (p := self.unassigned.get(k)) is not None]
        self.queue.activate([pod, *siblings])

    def reject_expired_waiting_pods(self) -> None:
        """Time out Permit waits by the engine's clock (tests with a fake clock call this)."""
        for framework in self.frameworks.values():
            framework.reject_expired_waiting_pods()

    def storage_changed(self, old: StorageObject | None, new: StorageObject | None) -> None:
        """A PV/PVC/StorageClass/CSI object was added (old None), updated or deleted (new None).

        Updates the in-memory lister (when the engine owns one) and offers the event to the
        pods the volume plugins rejected."""
        storage = self.base_handle.storage
        if isinstance(storage, StorageObjects):
            if new is not None:
                storage.upsert(new)
            elif old is not None:
                storage.delete(old)
        self.queue.move_all_to_active_or_backoff(storage_event(old, new), old, new)

    def dra_changed(self, resource: Resource, old: object | None, new: object | None) -> None:
        """A ResourceSlice, DeviceClass or ResourceClaim changed; services.dra.store already has it."""
        action = Action.ADD if old is None else Action.DELETE if new is None else Action.UPDATE
        self.queue.move_all_to_active_or_backoff(ClusterEvent(resource, action), old, new)

    def set_namespace_labels(self, labels: Mapping[str, Mapping[str, str]]) -> None:
        self.base_handle.namespace_labels = labels
        self.queue.namespace_labels = labels
        for framework in self.frameworks.values():
            framework.handle.namespace_labels = labels

    # ---- the loop ------------------------------------------------------------------------------------

    def schedule_next(self) -> bool:
        """Pop and schedule one pod without waiting; False when nothing is ready."""
        info = self.queue.try_pop()
        if info is None:
            return False
        task = self.scheduler.schedule_one(info)
        if task is not None:
            self.scheduler.start_binding(task)
        return True

    def expire_assumed_pods(self) -> list[Pod]:
        """Forget assumed pods whose binding finished but never showed up in the watch."""
        expired = self.cache.cleanup_expired_assumed_pods()
        for pod in expired:
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
        return expired

    async def _expire_assumed_periodically(self, interval: float = 1.0) -> None:
        while True:
            await asyncio.sleep(interval)
            self.expire_assumed_pods()

    async def run(
        self,
        should_schedule: Callable[[], bool] = lambda: True,
        until_leading: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """Schedule until the queue is closed. `should_schedule` pauses when leadership is lost;
        `until_leading` returns once it is (re)gained, so a standby's first cycle follows the
        lease at once (without it, a paused loop polls twice a second)."""
        loop = asyncio.get_running_loop()
        flushers = loop.create_task(self.queue.run_flushers())
        expiry = loop.create_task(self._expire_assumed_periodically())
        try:
            while True:
                try:
                    info = await self.queue.pop()
                except QueueClosed:
                    return
                if not should_schedule():
                    # Not the leader: put it back untouched and wait.
                    self.queue.done(info.pod.uid)
                    self.queue.add(info.pod)
                    if until_leading is None:
                        await asyncio.sleep(0.5)
                    else:
                        await until_leading()
                    continue
                task = self.scheduler.schedule_one(info)
                if task is not None:
                    self.scheduler.start_binding(task)
                # Let binding tasks and watch callbacks run between cycles.
                await asyncio.sleep(0)
        finally:
            flushers.cancel()
            expiry.cancel()
            await self.scheduler.drain_binding()

    def close(self) -> None:
        self.queue.close()
