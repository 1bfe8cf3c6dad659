"""The framework: runs a profile's plugins at each extension point, in batch over node rows."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.framework.batch import OpportunisticBatch, Signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
from policy_scheduler.scheduler.framework.events import ClusterEventWithHint
from policy_scheduler.scheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueuedPodInfo,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status, error
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, Rows

PASSED = -1  # status_ref of a row that passed every filter
MAX_PERMIT_WAIT_SECONDS = 15 * 60.0  # upstream's maxTimeout for Permit waits
_CODE_NAMES = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class FrameworkError(RuntimeError):
    pass


def plugin_failure(status: Status, plugin: str, message: str) -> Status:
    """A failed plugin's status: rejections keep their reasons, anything else becomes an Error
    whose message wraps the plugin's, as upstream's fmt.Errorf("running ... %q: %w")."""
    if status.is_rejected:
        return status.with_plugin(plugin)
    return Status(Code.ERROR, (message.format(plugin=plugin, error=status.message),), plugin)


def go_duration(seconds: float) -> str:
    """time.Duration.String(), for messages upstream formats with %v (e.g. "50ms", "1m30s")."""
    ns = round(seconds * 1e9)
    sign, u = ("-" if ns < 0 else ""), abs(ns)

    def frac(value: int, digits: int) -> str:
        whole, rest = divmod(value, 10**digits)
        tail = str(rest).rjust(digits, "0").rstrip("0")
        return f"{whole}.{tail}" if tail else str(whole)

    if u == 0:
        return "0s"
    if u < 1_000:
        return f"{sign}{u}ns"
    if u < 1_000_000:
        return f"{sign}{frac(u, 3)}µs"
    if u < 1_000_000_000:
        return f"{sign}{frac(u, 6)}ms"
    secs = u // 1_000_000_000
    text = frac(u % 60_000_000_000, 9) + "s"
    minutes = secs // 60
    if minutes:
        text = f"{minutes % 60}m{text}"
        if minutes // 60:
            text = f"{minutes // 60}h{text}"
    return sign + text


class PluginMetrics(Protocol):
    """Per-plugin counters and (sampled) durations: upstream's plugin_evaluation_total and
    plugin_execution_duration_seconds, without a metrics library in the core."""

    def evaluated(self, profile: str, plugin: str, point: str, count: int) -> None: ...

    def executed(self, plugin: str, point: str, code: str, seconds: float) -> None: ...


@dataclass(slots=True)
class FilterOutcome:
    """Batch filter result over `rows`: which passed and, for the others, the first failing status."""

    rows: Rows
    status_ref: npt.NDArray[np.int32]
    statuses: list[Status]

    @property
    def passed(self) -> npt.NDArray[np.bool_]:
        passed: npt.NDArray[np.bool_] = self.status_ref == PASSED
        return passed

    def status_at(self, i: int) -> Status:
        ref = int(self.status_ref[i])
        return SUCCESS if ref == PASSED else self.statuses[ref]

    def error(self) -> Status | None:
        return next((s for s in self.statuses if s.code == Code.ERROR), None)


@dataclass(slots=True)
class ScoreOutcome:
    total: IntArray
    by_plugin: dict[str, IntArray]  # weighted scores, kept for explanations


@dataclass(slots=True)
class WaitingPod:
    """A pod held at Permit; plugins allow or reject it by name, or their timeout rejects it."""

    pod: Pod
    deadlines: dict[str, float]
    result: asyncio.Future[Status] | None = None
    waits: dict[str, float] = field(default_factory=dict)  # plugin -> wait in seconds, for messages
    outcome: Status | None = None

    def allow(self, plugin: str) -> None:
        self.deadlines.pop(plugin, None)
        if not self.deadlines:
            self._finish(SUCCESS)

    def reject(self, plugin: str, message: str) -> None:
        self._finish(Status(Code.UNSCHEDULABLE, (message,), plugin))

    def _finish(self, status: Status) -> None:
        if self.outcome is not None:
            return
        self.outcome = status
        if self.result is not None and not self.result.done():
            self.result.set_result(status)

    async def wait(self, clock: Any = time.monotonic) -> Status:
        if self.outcome is not None:
            return self.outcome
        self.result = asyncio.get_running_loop().create_future()
        while self.outcome is None:
            deadline = min(self.deadlines.values())
            try:
                return await asyncio.wait_for(asyncio.shield(self.result), max(0.0, deadline - clock()))
            except TimeoutError:
                self.expire(clock())
        return self.outcome

    def expire(self, now: float) -> None:
        """Reject the pod if a plugin's wait is over at `now`."""
        for plugin, deadline in list(self.deadlines.items()):
            if self.outcome is None and now >= deadline:
                waited = go_duration(self.waits.get(plugin, 0.0))
                self.reject(plugin, f"rejected due to timeout after waiting {waited} at plugin {plugin}")


@dataclass(slots=True)
class _Points:
    pre_enqueue: list[PreEnqueuePlugin] = field(default_factory=list)
    queue_sort: list[QueueSortPlugin] = field(default_factory=list)
    pre_filter: list[PreFilterPlugin] = field(default_factory=list)
    filter: list[FilterPlugin] = field(default_factory=list)
    post_filter: list[PostFilterPlugin] = field(default_factory=list)
    pre_score: list[PreScorePlugin] = field(default_factory=list)
    score: list[tuple[ScorePlugin, int]] = field(default_factory=list)
    reserve: list[ReservePlugin] = field(default_factory=list)
    permit: list[PermitPlugin] = field(default_factory=list)
    pre_bind: list[PreBindPlugin] = field(default_factory=list)
    bind: list[BindPlugin] = field(default_factory=list)
    post_bind: list[PostBindPlugin] = field(default_factory=list)


_POINT_TYPES: dict[str, tuple[str, type[Plugin]]] = {
    "preEnqueue": ("pre_enqueue", PreEnqueuePlugin),
    "queueSort": ("queue_sort", QueueSortPlugin),
    "preFilter": ("pre_filter", PreFilterPlugin),
    "filter": ("filter", FilterPlugin),
    "postFilter": ("post_filter", PostFilterPlugin),
    "preScore": ("pre_score", PreScorePlugin),
    "reserve": ("reserve", ReservePlugin),
    "permit": ("permit", PermitPlugin),
    "preBind": ("pre_bind", PreBindPlugin),
    "bind": ("bind", BindPlugin),
    "postBind": ("post_bind", PostBindPlugin),
}


class Framework:
    """One profile's plugin instances wired to the extension points."""

    def __init__(
        self,
        profile: ResolvedProfile,
        registry: Mapping[str, type[Plugin]],
        handle: Handle,
    ) -> None:
        self.profile = profile
        # The plugins' handle is a copy that points back here (the caller's stays untouched).
        self.handle = dataclasses.replace(handle, framework=self)
        self.plugins: dict[str, Plugin] = {}
        self.points = _Points()
        self.waiting_pods: dict[str, WaitingPod] = {}
        # (nominated priorities object, table rows_generation, highest nominated priority per row)
        self._nominated_cache: tuple[Mapping[str, int], int, npt.NDArray[np.int64]] | None = None
        # Permit deadlines follow this clock (the Engine's: a fake one in tests).
        self.clock: Callable[[], float] = time.monotonic
        # observe(extension point, status code name, seconds): metrics without a metrics library.
        self.observe: Callable[[str, str, float], None] | None = None
        self.plugin_metrics: PluginMetrics | None = None
        for point, refs in profile.points.items():
            for ref in refs:
                plugin = self._instance(ref.name, registry)
                if point == "score":
                    if not isinstance(plugin, ScorePlugin):
                        raise FrameworkError(f"plugin {ref.name} does not implement score")
                    self.points.score.append((plugin, ref.weight or 1))
                    continue
                attr, base = _POINT_TYPES[point]
                if not isinstance(plugin, base):
                    raise FrameworkError(f"plugin {ref.name} does not implement {point}")
                getattr(self.points, attr).append(plugin)
        # computeBatchablePlugins: signatures only if every (pre)filter/(pre)score plugin signs.
        candidates = [*self.points.pre_filter, *self.points.filter, *self.points.pre_score]
        candidates += [plugin for plugin, _ in self.points.score]
        self.signers: list[Plugin] = list({p.name: p for p in candidates}.values())
        if not all(p.signs_pods for p in self.signers):
            self.signers = []
            self.signatures_enabled = False
        else:
            self.signatures_enabled = True
        self.batch = OpportunisticBatch(time.monotonic)
        if len(self.points.queue_sort) != 1:
            raise FrameworkError("a profile needs exactly one queueSort plugin")
        if not self.points.bind:
            raise FrameworkError("a profile needs at least one bind plugin")

    def _instance(self, name: str, registry: Mapping[str, type[Plugin]]) -> Plugin:
        plugin = self.plugins.get(name)
        if plugin is None:
            factory = registry.get(name)
            if factory is None:
                raise FrameworkError(f"unknown plugin {name!r}")
            plugin = factory(self.handle, self.profile.plugin_config.get(name, {}))
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
            if self.plugin_metrics is not None:
                first = result.statuses[0] if failed.any() and result.statuses else None
                self._plugin_ran(state, plugin.name, "Filter", len(batch), started, first)
            if not failed.any():
                continue
            assert result.status_index is not None, f"{plugin.name} rejected rows without a status"
            offset = len(statuses)
            # Anything but a rejection is an Error; its message is wrapped where it is reported
            # ('running "X" filter plugin: ...'), as the preemption dry run does too.
            statuses.extend(
                s.with_plugin(plugin.name) if s.is_rejected else Status(Code.ERROR, s.reasons, plugin.name)
                for s in result.statuses
            )
            positions = np.flatnonzero(failed) if alive is None else alive[failed]
            status_ref[positions] = offset + result.status_index[failed]
            alive = np.flatnonzero(status_ref == PASSED)
            if len(alive) == 0:
                break
        return FilterOutcome(rows, status_ref, statuses)

    def run_filters_with_nominated_pods(self, state: CycleState, pod: Pod, rows: Rows) -> FilterOutcome:
        """RunFilterPluginsWithNominatedPods in batch: nodes with nominated pods of equal or higher
        priority must pass both with those pods placed and without them.

        Upstream runs the pass with the nominated pods first, so when it fails its status is the
        node's status even if the pass without them failed too.
        """
        outcome = self.run_filters(state, pod, rows)
        positions = self._rows_with_nominations(rows, pod)
        if not positions:
            return outcome
        nominator = self.handle.nominator
        nodes, on_node = self.handle.table.nodes, self.handle.table.pods
        added: list[tuple[int, int, list[Pod]]] = []  # (position, row, pods to add there)
        for i in positions:
            row = int(rows[i])
            nominated = [
                p
                for p in nominator.nominated_pods_for_node(nodes[row].name)
                if p.priority >= pod.priority
                and p.uid != pod.uid
                and p.key != pod.key
                # already on the node (a gang preemption's scratch placement): counted once
                and p.key not in on_node[row]
            ]
            if nominated:
                added.append((i, row, nominated))
        if not self._has_active_extensions(state):
            statuses = self._filter_rows_with_added_pods(state, pod, added)
        else:
            statuses = [self._filter_with_added_pods(state, pod, row, pods) for _, row, pods in added]
        for (i, _, _), status in zip(added, statuses, strict=True):
            if not status.is_success:
                outcome.statuses.append(status)
                outcome.status_ref[i] = len(outcome.statuses) - 1
        return outcome

    def _rows_with_nominations(self, rows: Rows, pod: Pod) -> list[int]:
        """Positions of rows whose node holds a nominated pod of priority >= the pod's, in row
        order (upstream's addGENominatedPods adds nothing elsewhere).

        Few rows (preemption's one-node dry runs) are looked up by name; many rows go through
        a per-row array of the highest nominated priority, rebuilt only when the nominations
        or the rows change.
        """
        tops = self.handle.nominator.nominated_priorities()
        if not tops:
            return []
        if len(rows) <= len(tops):
            nodes = self.handle.table.nodes
            return [
                i
                for i, row in enumerate(rows.tolist())
                if tops.get(nodes[row].name, pod.priority - 1) >= pod.priority
            ]
        top_by_row = self._top_by_row(tops)
        positions: list[int] = np.flatnonzero(top_by_row[rows] >= pod.priority).tolist()
        return positions

    def _top_by_row(self, tops: Mapping[str, int]) -> npt.NDArray[np.int64]:
        table = self.handle.table
        cached = self._nominated_cache
        if cached is not None and cached[0] is tops and cached[1] == table.rows_generation:
            return cached[2]
        # Below any int32 priority: rows without nominations never qualify.
        top_by_row = np.full(len(table), np.iinfo(np.int64).min, dtype=np.int64)
        for name, priority in tops.items():
            row = table.index.get(name)
            if row is not None:
                top_by_row[row] = priority
        self._nominated_cache = (tops, table.rows_generation, top_by_row)
        return top_by_row

    def _has_active_extensions(self, state: CycleState) -> bool:
        """Whether a PreFilter plugin with AddPod/RemovePod extensions runs for this pod: then the
        cycle state depends on which pods are added and each node needs its own state."""
        return any(p.has_extensions and p.name not in state.skip_filter for p in self.points.pre_filter)

    def _filter_rows_with_added_pods(
        self, state: CycleState, pod: Pod, added: list[tuple[int, int, list[Pod]]]
    ) -> list[Status]:
        """The pass with nominated pods for many nodes at once. Without active PreFilter
        extensions the cycle state does not depend on the added pods, and filters read only
        their own row of the table, so placing every node's nominated pods together and
        filtering those rows in one batch gives each node the status it would get alone."""
        table = self.handle.table
        placed: list[tuple[Pod, int]] = []
        with self.trial_placements(state):
            try:
                for _, row, pods in added:
                    for other in pods:
                        table.add_pod(other, row)
                        placed.append((other, row))
                rows = np.asarray([row for _, row, _ in added], dtype=np.intp)
                batch = self.run_filters(state.clone(), pod, rows)
                return [batch.status_at(j) for j in range(len(added))]
            finally:
                for other, row in placed:
                    table.remove_pod(other, row)

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

    def _filter_with_added_pods(self, state: CycleState, pod: Pod, row: int, added: list[Pod]) -> Status:
        table = self.handle.table
        trial_state = state.clone()
        placed: list[Pod] = []
        try:
            for other in added:
                table.add_pod(other, row)
                placed.append(other)
                status = self.run_pre_filter_add_pod(trial_state, pod, other, row)
                if not status.is_success:
                    return error(f"adding nominated pod {other.key}: {status.message}")
            single = self.run_filters(trial_state, pod, np.asarray([row], dtype=np.intp))
            return single.status_at(0)
        finally:
            for other in placed:
                table.remove_pod(other, row)

    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        for plugin in self.points.pre_filter:
            if plugin.has_extensions and plugin.name not in state.skip_filter:
                status = plugin.add_pod(state, pod, added, row)
                if not status.is_success:
                    return status.with_plugin(plugin.name)
        return SUCCESS

    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        for plugin in self.points.pre_filter:
            if plugin.has_extensions and plugin.name not in state.skip_filter:
                status = plugin.remove_pod(state, pod, removed, row)
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
        total = np.zeros(len(rows), dtype=np.int64)
        by_plugin: dict[str, IntArray] = {}
        for plugin, weight in self.points.score:
            if plugin.name in state.skip_score:
                continue
            started = time.perf_counter()
            scores = plugin.normalize_score(state, pod, plugin.score(state, pod, rows))
            self._plugin_ran(state, plugin.name, "Score", len(rows), started, None)
            if len(scores) and (scores.max() > MAX_NODE_SCORE or scores.min() < MIN_NODE_SCORE):
                bad = int(scores[(scores > MAX_NODE_SCORE) | (scores < MIN_NODE_SCORE)][0])
                raise FrameworkError(  # upstream's text; the first bad score in node order
                    f'applying score defaultWeights on Score plugins: plugin "{plugin.name}" returns an '
                    f"invalid score {bad}, it should in the range of [{MIN_NODE_SCORE}, {MAX_NODE_SCORE}] "
                    "after normalizing"
                )
            weighted = scores * weight
            by_plugin[plugin.name] = weighted
            total += weighted
        return ScoreOutcome(total, by_plugin)

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

    async def wait_on_permit(self, pod: Pod) -> Status:
        waiting = self.waiting_pods.get(pod.uid or pod.key)
        if waiting is None:
            return SUCCESS
        try:
            return await waiting.wait(self.clock)
        finally:
            self.waiting_pods.pop(pod.uid or pod.key, None)

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
