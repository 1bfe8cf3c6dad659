"""The framework: runs a profile's plugins at each extension point, in batch over node rows."""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.framework.batch import OpportunisticBatch, Signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.events import ClusterEventWithHint
from policy_scheduler.scheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    FilterPlugin,
    Handle,
    Plugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfo,
)
from policy_scheduler.scheduler.framework.nominated_filter import NominatedPodsFilter
from policy_scheduler.scheduler.framework.outcomes import (
    PASSED,
    FilterOutcome,
    FrameworkError,
    ScoreOutcome,
    plugin_failure,
)
from policy_scheduler.scheduler.framework.points import batchable_signers, build_points
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status, error, filter_failure
from policy_scheduler.scheduler.framework.waiting_pod import MAX_PERMIT_WAIT_SECONDS, WaitingPod
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, Rows
from policy_scheduler.scheduler.plugins.nodepressure import NodePressure
from policy_scheduler.scheduler.versioning.gates import OPPORTUNISTIC_BATCHING

_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class PluginMetrics(Protocol):
    """Per-plugin counters and (sampled) durations: upstream's plugin_evaluation_total and
    plugin_execution_duration_seconds, without a metrics library in the core."""

    def evaluated(self, profile: str, plugin: str, point: str, count: int) -> None: ...

    def executed(self, plugin: str, point: str, code: str, seconds: float) -> None: ...


class Framework:
    """One profile's plugin instances wired to the extension points."""

    def __init__(
        self,
        profile: ResolvedProfile,
        registry: Mapping[str, type[Plugin]],
        handle: Handle,
    ) -> None:
        self.profile = profile
        # The plugins' handle is a copy that points back here (the caller's stays untouched) and
        # carries the profile's release semantics and feature gates.
        self.handle = dataclasses.replace(handle, framework=self, features=profile.features)
        self.plugins: dict[str, Plugin] = {}
        self.waiting_pods: dict[str, WaitingPod] = {}
        self.nominated = NominatedPodsFilter(self)
        # Permit deadlines follow this clock (the Engine's: a fake one in tests).
        self.clock: Callable[[], float] = time.monotonic
        # observe(extension point, status code name, seconds): metrics without a metrics library.
        self.observe: Callable[[str, str, float], None] | None = None
        self.plugin_metrics: PluginMetrics | None = None
        self.points = build_points(profile, lambda name: self._instance(name, registry))
        if profile.eviction_policy_name:
            # Pressure relief under the profile's EvictionPolicy keeps its pods off the nodes it
            # relieves (a no-op while that policy has no pressureRelief).
            relief = NodePressure(self.handle, profile.eviction_policy_name)
            self.plugins[relief.name] = relief
            self.points.filter.append(relief)
        signers = batchable_signers(self.points) if profile.features.enabled(OPPORTUNISTIC_BATCHING) else None
        self.signers: list[Plugin] = signers or []
        self.signatures_enabled = signers is not None
        self.batch = OpportunisticBatch(time.monotonic)

    def _instance(self, name: str, registry: Mapping[str, type[Plugin]]) -> Plugin:
        plugin = self.plugins.get(name)
        if plugin is None:
            factory = registry.get(name)
            if factory is None:
                raise FrameworkError(f"unknown plugin {name!r}")
            plugin = factory.from_profile(self.handle, self.profile.plugin_config.get(name, {}))
            self.plugins[name] = plugin
        return plugin

    @property
    def scheduler_name(self) -> str:
        return self.profile.scheduler_name

    @property
    def table(self) -> NodeTable:
        return self.handle.table

    @property
    def node_only_filters(self) -> frozenset[str]:
        """Filter plugins whose verdict ignores the pods on the node (see FilterPlugin.node_only)."""
        return frozenset(p.name for p in self.points.filter if p.node_only)

    @property
    def has_filter_plugins(self) -> bool:
        return bool(self.points.filter)

    @property
    def has_score_plugins(self) -> bool:
        return bool(self.points.score)

    def effective_plugins(self) -> dict[str, list[str]]:
        return {point: [ref.name for ref in refs] for point, refs in self.profile.points.items() if refs}

    def events_to_register(self) -> dict[str, list[ClusterEventWithHint]]:
        return {name: plugin.events_to_register() for name, plugin in self.plugins.items()}

    # ---- queue -----------------------------------------------------------------------------------

    def run_pre_enqueue(self, pod: Pod) -> Status:
        for plugin in self.points.pre_enqueue:
            status = plugin.pre_enqueue(pod)
            if not status.is_success:
                return status.with_plugin(plugin.name)
        return SUCCESS

    def queue_sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        return self.points.queue_sort[0].sort_key(info)

    # ---- batching --------------------------------------------------------------------------------

    def sign_pod(self, pod: Pod) -> Signature | None:
        """SignPod: pods with equal signatures get the same filter and score results on the same
        nodes. None when signatures are off for this profile or a plugin cannot sign the pod."""
        if not self.signatures_enabled:
            return None
        signature: dict[str, object] = {"SchedulerName": pod.scheduler_name}
        for plugin in self.signers:
            fragments = plugin.sign_pod(pod)
            if fragments is None:
                return None
            signature.update(fragments)
        return signature

    # ---- filtering -------------------------------------------------------------------------------

    def timed(self, point: str, started: float, status: Status | None = None) -> None:
        if self.observe is not None:
            code = "Success" if status is None else _CODE_NAMES[status.code]
            self.observe(point, code, time.perf_counter() - started)

    def _plugin_ran(
        self, state: CycleState, plugin: str, point: str, count: int, started: float, status: Status | None
    ) -> None:
        metrics = self.plugin_metrics
        if metrics is None:
            return
        metrics.evaluated(self.profile.scheduler_name, plugin, point, count)
        if state.record_plugin_metrics:
            code = "Success" if status is None else _CODE_NAMES[status.code]
            metrics.executed(plugin, point, code, time.perf_counter() - started)

    def run_pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status, set[str]]:
        started = time.perf_counter()
        result = self._run_pre_filter(state, pod)
        self.timed("PreFilter", started, result[1])
        return result

    def _run_pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status, set[str]]:
        """RunPreFilterPlugins: Unschedulable continues, UnschedulableAndUnresolvable stops."""
        result: PreFilterResult | None = None
        with_nodes: set[str] = set()
        returned = SUCCESS
        state.skip_filter = set()
        for plugin in self.points.pre_filter:
            started = time.perf_counter()
            narrowed, status = plugin.pre_filter(state, pod)
            self._plugin_ran(state, plugin.name, "PreFilter", 1, started, status)
            if status.code == Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if not status.is_success:
                status = status.with_plugin(plugin.name)
                if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                    return None, status, set()
                if status.code == Code.UNSCHEDULABLE:
                    returned = status
                    continue
                # %q quoting, as upstream's message
                return None, error(f'running PreFilter plugin "{plugin.name}": {status.message}'), set()
            if narrowed is not None and narrowed.node_names is not None:
                with_nodes.add(plugin.name)
            result = narrowed if result is None else result.merge(narrowed)
            if result is not None and result.node_names is not None and not result.node_names:
                names = sorted(with_nodes)
                message = (
                    f"node(s) didn't satisfy plugin {names[0]}"
                    if len(names) == 1
                    else f"node(s) didn't satisfy plugin(s) [{' '.join(names)}] simultaneously"
                )
                return result, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (message,)), with_nodes
        return result, returned, with_nodes

    def run_filters(self, state: CycleState, pod: Pod, rows: Rows) -> FilterOutcome:
        """RunFilterPlugins over many nodes: per node, the first failing plugin decides."""
        status_ref = np.full(len(rows), PASSED, dtype=np.int32)
        statuses: list[Status] = []
        alive: Rows | None = None  # positions still passing; None while that is every row
        if len(rows) == 0:
            return FilterOutcome(rows, status_ref, statuses)
        for plugin in self.points.filter:
            if plugin.name in state.skip_filter:
                continue
            started = time.perf_counter()
            batch = rows if alive is None else rows[alive]
            result = plugin.filter(state, pod, batch)
            failed = ~result.passed
            any_failed = bool(failed.any())
            if self.plugin_metrics is not None:
                first = result.statuses[0] if any_failed and result.statuses else None
                self._plugin_ran(state, plugin.name, "Filter", len(batch), started, first)
            if not any_failed:
                continue
            assert result.status_index is not None, f"{plugin.name} rejected rows without a status"
            offset = len(statuses)
            statuses.extend(filter_failure(s, plugin.name) for s in result.statuses)
            positions = np.flatnonzero(failed) if alive is None else alive[failed]
            status_ref[positions] = offset + result.status_index[failed]
            alive = np.flatnonzero(status_ref == PASSED)
            if len(alive) == 0:
                break
        return FilterOutcome(rows, status_ref, statuses)

    def filter_row(
        self,
        state: CycleState,
        pod: Pod,
        row: int,
        adjusted: FilterPlugin | None = None,
        added: Sequence[Pod] = (),
        removed: Sequence[Pod] = (),
    ) -> Status:
        """`run_filters` on one row, without arrays: the status of the first failing plugin.
        With `adjusted` (see `adjusting_filter`), that plugin answers as if `added` were placed
        on the row and `removed` taken off; the others read only the node."""
        metrics = self.plugin_metrics
        for plugin in self.points.filter:
            if plugin.name in state.skip_filter:
                continue
            started = time.perf_counter()
            if plugin is adjusted:
                status = plugin.filter_row_adjusted(state, pod, row, added, removed)
            else:
                status = plugin.filter_row(state, pod, row)
            if metrics is not None:
                self._plugin_ran(
                    state, plugin.name, "Filter", 1, started, None if status.is_success else status
                )
            if not status.is_success:
                return filter_failure(status, plugin.name)
        return SUCCESS

    def adjusting_filter(self, state: CycleState) -> FilterPlugin | None:
        """The one running filter that reads the pods on a node, when it can answer for pods
        added or removed without placing them (`answers_adjusted`, NodeResourcesFit) and every
        other running filter reads only the node: then the pass with nominated pods and
        preemption's dry runs need not touch the table. None otherwise, or when a PreFilter
        extension (whose state follows placements) runs."""
        if self.nominated.has_active_extensions(state):
            return None
        found: FilterPlugin | None = None
        for plugin in self.points.filter:
            if plugin.name in state.skip_filter or plugin.node_only:
                continue
            if found is not None or not plugin.answers_adjusted:
                return None
            found = plugin
        return found

    def run_filters_with_nominated_pods(self, state: CycleState, pod: Pod, rows: Rows) -> FilterOutcome:
        return self.nominated.run(state, pod, rows)

    def filter_row_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        row: int,
        adjusted: FilterPlugin | None = None,
        removed: Sequence[Pod] = (),
    ) -> Status:
        """RunFilterPluginsWithNominatedPods on one row. With `adjusted` (this state's
        `adjusting_filter`), answered without touching the table, `removed` counting as taken
        off the row (preemption's dry run)."""
        return self.nominated.run_row(state, pod, row, adjusted, removed)

    def fits_adding_in_turn(
        self,
        state: CycleState,
        pod: Pod,
        row: int,
        adjusted: FilterPlugin,
        removed: Sequence[Pod],
        candidates: Sequence[Pod],
    ) -> list[bool]:
        """SelectVictimsOnNode's reprieve with `removed` taken off the row, answered by
        `adjusted` (this state's `adjusting_filter`; the node-only filters passed and are not
        asked again): each step would otherwise re-filter the row with and without the
        nominated pods. Evaluations are counted as those filter calls would be."""
        added = self.nominated.nominated_on(row, pod)
        kept = adjusted.fits_adding_in_turn(state, row, added, removed, candidates)
        if kept is None:
            raise FrameworkError(f"{adjusted.name}: its PreFilter state is missing from the cycle")
        if self.plugin_metrics is not None:
            # With nominated pods upstream filters twice when the first pass succeeds.
            evaluations = sum(2 if added and fits else 1 for fits in kept)
            self.plugin_metrics.evaluated(self.profile.scheduler_name, adjusted.name, "Filter", evaluations)
        return kept

    @contextlib.contextmanager
    def trial_placements(self, state: CycleState) -> Iterator[None]:
        """A block whose pod placements are all undone before it ends (dry runs): indexes whose
        only reader does not filter this pod skip them, adds and removes alike, so they come
        out unchanged. Everything in the block must be synchronous."""
        table = self.handle.table
        running = {p.name for p in self.points.filter if p.name not in state.skip_filter}
        listeners = table.listeners
        table.listeners = [entry for entry in listeners if not entry.reader or entry.reader in running]
        try:
            yield
        finally:
            table.listeners = listeners

    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        return self._run_pre_filter_extensions(state, lambda p: p.add_pod(state, pod, added, row))

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        return self._run_pre_filter_extensions(state, lambda p: p.remove_pod(state, pod, removed, row))

    def _run_pre_filter_extensions(
        self, state: CycleState, call: Callable[[PreFilterPlugin], Status]
    ) -> Status:
        """AddPod/RemovePod of the PreFilter plugins that have extensions and run for this pod."""
        for plugin in self.points.pre_filter:
            if plugin.has_extensions and plugin.name not in state.skip_filter:
                status = call(plugin)
                if not status.is_success:
                    return status.with_plugin(plugin.name)
        return SUCCESS

    def run_post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """RunPostFilterPlugins: the first success wins; otherwise the rejection messages."""
        rejections: list[Status] = []
        for plugin in self.points.post_filter:
            started = time.perf_counter()
            result, status = plugin.post_filter(state, pod, diagnosis)
            self._plugin_ran(state, plugin.name, "PostFilter", 1, started, status)
            if status.is_success:
                return result, status.with_plugin(plugin.name)
            if status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return result, status.with_plugin(plugin.name)
            if status.code != Code.UNSCHEDULABLE:
                return None, status.with_plugin(plugin.name)
            rejections.append(status.with_plugin(plugin.name))
        reasons = tuple(r for s in rejections for r in s.reasons)
        plugin_name = rejections[0].plugin if rejections else ""
        return None, Status(Code.UNSCHEDULABLE, reasons, plugin_name)

    # ---- scoring ---------------------------------------------------------------------------------

    def run_pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        state.skip_score = set()
        for plugin in self.points.pre_score:
            started = time.perf_counter()
            status = plugin.pre_score(state, pod, rows)
            self._plugin_ran(state, plugin.name, "PreScore", 1, started, status)
            if status.code == Code.SKIP:
                state.skip_score.add(plugin.name)
                continue
            if not status.is_success:
                return error(f'running PreScore plugin "{plugin.name}": {status.message}')
        return SUCCESS

    def run_score(self, state: CycleState, pod: Pod, rows: Rows) -> ScoreOutcome:
        running = [
            (plugin, weight) for plugin, weight in self.points.score if plugin.name not in state.skip_score
        ]
        normalized = np.empty((len(running), len(rows)), dtype=np.int64)
        for i, (plugin, _) in enumerate(running):
            started = time.perf_counter()
            # same_kind: a plugin returning float scores fails loudly instead of being truncated
            np.copyto(
                normalized[i], plugin.normalize_score(state, pod, plugin.score(state, pod, rows)), "same_kind"
            )
            self._plugin_ran(state, plugin.name, "Score", len(rows), started, None)
        # One range check for all plugins; the error names the first plugin in order.
        if normalized.size and (normalized.max() > MAX_NODE_SCORE or normalized.min() < MIN_NODE_SCORE):
            for (plugin, _), scores in zip(running, normalized, strict=True):
                out_of_range = (scores > MAX_NODE_SCORE) | (scores < MIN_NODE_SCORE)
                if out_of_range.any():
                    bad = int(scores[out_of_range][0])
                    raise FrameworkError(  # upstream's text; the first bad score in node order
                        f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" returns '
                        f"an invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, "
                        f"{MAX_NODE_SCORE}] after normalizing"
                    )
        weights = np.fromiter((weight for _, weight in running), dtype=np.int64, count=len(running))
        weighted: IntArray = normalized * weights[:, None]
        total: IntArray = weighted.sum(axis=0, dtype=np.int64)
        return ScoreOutcome(total, tuple(plugin.name for plugin, _ in running), weighted)

    # ---- reserve, permit, bind -------------------------------------------------------------------

    def run_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.points.reserve:
            status = plugin.reserve(state, pod, node_name)
            if not status.is_success:
                return plugin_failure(status, plugin.name, 'running Reserve plugin "{plugin}": {error}')
        return SUCCESS

    def run_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in reversed(self.points.reserve):
            plugin.unreserve(state, pod, node_name)

    def run_permit(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        deadlines: dict[str, float] = {}
        waits: dict[str, float] = {}
        for plugin in self.points.permit:
            status, timeout = plugin.permit(state, pod, node_name)
            if status.code == Code.WAIT:
                waits[plugin.name] = min(timeout, MAX_PERMIT_WAIT_SECONDS)
                deadlines[plugin.name] = self.clock() + waits[plugin.name]
            elif not status.is_success:
                return plugin_failure(status, plugin.name, 'running Permit plugin "{plugin}": {error}')
        if deadlines:
            self.waiting_pods[pod.uid or pod.key] = WaitingPod(pod, deadlines, waits=waits)
            return Status(Code.WAIT)
        return SUCCESS

    def waiting_pod(self, uid: str) -> WaitingPod | None:
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]:
        return self.waiting_pods.values()

    def reject_expired_waiting_pods(self) -> None:
        """Reject the pods whose Permit wait is over by `clock` (a fake clock does not fire timers)."""
        now = self.clock()
        for waiting in list(self.waiting_pods.values()):
            waiting.expire(now)

    async def wait_on_permit(self, pod: Pod, waited: Callable[[str, float], None] | None = None) -> Status:
        """`waited(result, seconds)` if the pod did wait (upstream's permit_wait_duration_seconds)."""
        waiting = self.waiting_pods.get(pod.uid or pod.key)
        if waiting is None:
            return SUCCESS
        started = time.perf_counter()
        try:
            status = await waiting.wait(self.clock)
        finally:
            self.waiting_pods.pop(pod.uid or pod.key, None)
        if waited is not None:
            waited(_CODE_NAMES[status.code], time.perf_counter() - started)
        return status

    async def run_pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.points.pre_bind:
            status = await plugin.pre_bind(state, pod, node_name)
            if status.code == Code.SKIP:
                continue
            if not status.is_success:
                return plugin_failure(status, plugin.name, 'running PreBind plugin "{plugin}": {error}')
        return SUCCESS

    async def run_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        for plugin in self.points.bind:
            status = await plugin.bind(state, pod, node_name)
            if status.code == Code.SKIP:
                continue
            if status.is_success:
                return status.with_plugin(plugin.name)
            return plugin_failure(status, plugin.name, 'running Bind plugin "{plugin}": {error}')
        return SKIP

    def run_post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in self.points.post_bind:
            plugin.post_bind(state, pod, node_name)
