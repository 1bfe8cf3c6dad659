"""Plugin interfaces, in batch form: filter and score plugins see all candidate nodes at once.

A plugin class subclasses `Plugin` and every extension-point mixin it implements. Filter and
score work on `rows` (numpy indices into the NodeTable) and return arrays aligned with them.
Custom plugins that prefer to think one node at a time subclass `NodeFilterPlugin` /
`NodeScorePlugin`; the adapters below turn them into the batch form.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import ClusterEventWithHint
from policy_scheduler.scheduler.framework.plugin_args import ArgsType, decode_args
from policy_scheduler.scheduler.framework.services import ClusterServices
from policy_scheduler.scheduler.framework.status import SUCCESS, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import BoolArray, IntArray, NodeTable, Rows
from policy_scheduler.scheduler.storage.api import VolumeBindingAPI
from policy_scheduler.scheduler.storage.lister import StorageLister, StorageObjects
from policy_scheduler.scheduler.versioning.features import Features, default_features

if TYPE_CHECKING:
    from policy_scheduler.scheduler.framework.diagnosis import Diagnosis
    from policy_scheduler.scheduler.framework.outcomes import FilterOutcome
    from policy_scheduler.scheduler.framework.waiting_pod import WaitingPod

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


# ---- results ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FilterResult:
    """Per-row outcome of a filter plugin; `status_index[i]` names the status of a failed row."""

    passed: BoolArray
    status_index: npt.NDArray[np.int32] | None = None
    statuses: tuple[Status, ...] = ()

    @staticmethod
    def all_pass(count: int) -> FilterResult:
        return FilterResult(np.ones(count, dtype=np.bool_))

    @staticmethod
    def reject_where(failed: BoolArray, status: Status) -> FilterResult:
        """Every failed row gets the same status."""
        return FilterResult(~failed, np.zeros(len(failed), dtype=np.int32), (status,))

    @staticmethod
    def reject_all(count: int, status: Status) -> FilterResult:
        return FilterResult.reject_where(np.ones(count, dtype=np.bool_), status)

    def status_of(self, i: int) -> Status:
        if self.passed[i]:
            return SUCCESS
        assert self.status_index is not None
        return self.statuses[int(self.status_index[i])]


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """Node narrowing from PreFilter; None means all nodes."""

    node_names: frozenset[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    # Filled by preemption: victims chosen on the nominated node (for the caller to evict).
    victims: tuple[Pod, ...] = ()
    # Gang preemption: the preemptor's group members that will use the freed room, each with its
    # node; they are nominated there too, so no other pod takes that room meanwhile.
    nominations: tuple[tuple[Pod, str], ...] = ()


@dataclass(slots=True)
class QueuedPodInfo:
    pod: Pod
    timestamp: float  # last time it was added to the queue; PrioritySort's tie-break
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    # Backoff counts as upstream: rejections by plugins, and failures with no rejecting plugin
    # (errors) in a row; the latter, when non-zero, decides the backoff.
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gating_plugin: str = ""
    backoff_expiration: float = 0.0
    # Moved out of the unschedulable pool by its timeout (flushUnschedulableEntitiesLeftover)
    # and not attempted since: counted by scheduler_pod_scheduled_after_flush_total if bound.
    was_flushed_from_unschedulable: bool = False

    @property
    def gated(self) -> bool:
        return bool(self.gating_plugin)


@dataclass(slots=True)
class NodeInfo:
    """One node's view for per-node plugins (built on demand from the table)."""

    node: Node
    row: int
    pods: list[Pod]
    requested: dict[str, int]
    allocatable: dict[str, int]

    @staticmethod
    def from_table(table: NodeTable, row: int) -> NodeInfo:
        names = table.resource_names
        return NodeInfo(
            node=table.nodes[row],
            row=row,
            pods=list(table.pods_on(row)),
            requested={n: int(table.requested[i, row]) for i, n in enumerate(names)},
            allocatable={n: int(table.allocatable[i, row]) for i, n in enumerate(names)},
        )


# ---- the handle plugins get --------------------------------------------------------------------


class Binder(Protocol):
    """Writes a binding; the operator's adapter calls the API, simulate updates memory."""

    async def bind(self, pod: Pod, node_name: str) -> None: ...


class AlreadyBound(Exception):
    """A Binder found the pod bound to another node by an earlier binding of ours whose
    answer was lost: the pod is scheduled, just not where this cycle put it."""

    def __init__(self, pod_key: str, node_name: str) -> None:
        super().__init__(f"pod {pod_key} was bound to node {node_name} by an earlier binding")
        self.node_name = node_name


class NotLeading(Exception):
    """A write refused because this replica may not act as the leader now (its lease lapsed by
    its own clock, or it has not renewed since a pause). The decision behind the write is
    dropped, not failed: nothing is reported, and the pod goes back to the queue untouched."""


class Nominator(Protocol):
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]: ...

    # Node -> highest nominated priority; the same object until the nominations change.
    def nominated_priorities(self) -> Mapping[str, int]: ...


class _NoNominations:
    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return []

    def nominated_priorities(self) -> Mapping[str, int]:
        return {}


class FrameworkHandle(Protocol):
    """What a plugin may call back on its profile's framework (preemption's dry runs)."""

    @property
    def scheduler_name(self) -> str: ...
    @property
    def table(self) -> NodeTable: ...
    @property
    def node_only_filters(self) -> frozenset[str]: ...
    def trial_placements(self, state: CycleState) -> AbstractContextManager[None]: ...
    def run_filters_with_nominated_pods(self, state: CycleState, pod: Pod, rows: Rows) -> FilterOutcome: ...
    def adjusting_filter(self, state: CycleState) -> FilterPlugin | None: ...
    def filter_row_with_nominated_pods(
        self,
        state: CycleState,
        pod: Pod,
        row: int,
        adjusted: FilterPlugin | None = None,
        removed: Sequence[Pod] = (),
    ) -> Status: ...
    def fits_adding_in_turn(
        self,
        state: CycleState,
        pod: Pod,
        row: int,
        adjusted: FilterPlugin,
        removed: Sequence[Pod],
        candidates: Sequence[Pod],
    ) -> list[bool]: ...
    def run_pre_filter(
        self, state: CycleState, pod: Pod
    ) -> tuple[PreFilterResult | None, Status, set[str]]: ...
    def run_pre_filter_add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status: ...
    def run_pre_filter_remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status: ...
    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]: ...


def _no_activation(pods: Iterable[Pod]) -> None:
    return None


@dataclass(slots=True)
class Handle:
    """What the framework gives plugins: the live node table and cluster-side services."""

    table: NodeTable
    nominator: Nominator = field(default_factory=_NoNominations)
    binder: Binder | None = None
    rng: random.Random = field(default_factory=random.Random)
    clock: Callable[[], float] = time.time
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    services: ClusterServices = field(default_factory=ClusterServices)
    # PV/PVC/StorageClass/CSI objects for the volume plugins (fed by informers or simulate).
    storage: StorageLister = field(default_factory=StorageObjects)
    volume_api: VolumeBindingAPI | None = None  # VolumeBinding's PreBind writes
    # The profile's framework: Framework puts itself here in the copy it gives its plugins.
    framework: FrameworkHandle | None = None
    # The release and feature gates the plugins follow: Framework puts its profile's here.
    features: Features = field(default_factory=default_features)
    # handle.Activate: move these pods from the unschedulable pool or backoffQ to activeQ.
    activate: Callable[[Iterable[Pod]], None] = _no_activation


# ---- plugin bases ------------------------------------------------------------------------------


# (key, value) pairs a plugin contributes to a pod's signature; values only need ==.
SignFragments = tuple[tuple[str, object], ...]


class Plugin:
    name: ClassVar[str] = ""
    # The type the profile's args are decoded into (defaulted and validated) before the plugin is
    # built; None: the plugin gets the profile's JSON-shaped args as they are.
    args_type: ClassVar[type[ArgsType] | None] = None

    def __init__(self, handle: Handle, args: object) -> None:
        # An instance of `args_type`, or the JSON-shaped args when the plugin has none.
        self.handle = handle
        self.args = args

    @classmethod
    def from_profile(cls, handle: Handle, raw_args: Mapping[str, Any] | None) -> Self:
        """The plugin as a profile configures it: `raw_args` (pluginConfig, JSON-shaped) decoded
        into `args_type` once, here; ArgsError or ValueError when they are invalid."""
        if cls.args_type is None:
            return cls(handle, raw_args)
        return cls(handle, decode_args(cls.args_type, {} if raw_args is None else raw_args, handle.features))

    @property
    def table(self) -> NodeTable:
        return self.handle.table

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """Cluster events that may make a pod this plugin rejected schedulable (EnqueueExtensions)."""
        return []

    @classmethod
    def points_absent_in(cls, features: Features) -> frozenset[str]:
        """Extension points this class implements that the plugin does not have in `features`'
        release (upstream added them later): profile resolution leaves them out there."""
        return frozenset()

    # SignPlugin (opportunistic batching, KEP-5598): a profile batches only when every PreFilter,
    # Filter, PreScore and Score plugin signs pods.
    signs_pods: ClassVar[bool] = False

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        """The parts of the pod this plugin's results depend on, as (key, value) pairs; None when
        this pod cannot be signed (its results depend on more than the pod and its node)."""
        return None


class PreEnqueuePlugin(Plugin):
    def pre_enqueue(self, pod: Pod) -> Status:
        raise NotImplementedError


class QueueSortPlugin(Plugin):
    def sort_key(self, info: QueuedPodInfo) -> tuple[Any, ...]:
        """Smaller keys pop first."""
        raise NotImplementedError


class PreFilterPlugin(Plugin):
    # True when add_pod/remove_pod are implemented (PreFilterExtensions).
    has_extensions: ClassVar[bool] = False

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        raise NotImplementedError

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, row: int) -> Status:
        return SUCCESS

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, row: int) -> Status:
        return SUCCESS


class FilterPlugin(Plugin):
    # True when the verdict depends only on the pod and the node object, never on the pods
    # placed on the node: preemption then need not ask again while it adds victims back.
    node_only: ClassVar[bool] = False
    # True when filter_row_adjusted and fits_adding_in_turn answer: with only node_only filters
    # besides it, dry runs and the pass with nominated pods need not place pods on the table.
    answers_adjusted: ClassVar[bool] = False

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        raise NotImplementedError

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        """`filter` on one row. Preemption's dry runs ask about one node at a time, hundreds of
        times per cycle; plugins on that path override this with plain Python."""
        return self.filter(state, pod, np.asarray([row], dtype=np.intp)).status_of(0)

    def filter_adjusted(
        self, state: CycleState, pod: Pod, rows: Rows, added: Sequence[Sequence[Pod]]
    ) -> FilterResult:
        """`filter` as if `added[i]` were placed on `rows[i]`, without placing them. Only plugins
        with `answers_adjusted` are asked."""
        raise NotImplementedError

    def filter_row_adjusted(
        self, state: CycleState, pod: Pod, row: int, added: Sequence[Pod], removed: Sequence[Pod]
    ) -> Status:
        """`filter_row` as if `added` were placed on the row and `removed` taken off, without
        placing them. Only plugins with `answers_adjusted` are asked."""
        raise NotImplementedError

    def fits_adding_in_turn(
        self,
        state: CycleState,
        row: int,
        added: Sequence[Pod],
        removed: Sequence[Pod],
        candidates: Sequence[Pod],
    ) -> list[bool] | None:
        """For preemption's reprieve, when this is the only filter reading the node's pods: with
        `added` placed on the row and `removed` taken off, put each candidate back in turn if the
        pod still fits; whether each was put back. None: the cycle state lacks what the plugin's
        PreFilter writes. Only plugins with `answers_adjusted` are asked."""
        raise NotImplementedError


class PostFilterPlugin(Plugin):
    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        raise NotImplementedError


class PreScorePlugin(Plugin):
    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        raise NotImplementedError


class ScorePlugin(Plugin):
    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        raise NotImplementedError

    def normalize_score(self, state: CycleState, pod: Pod, scores: IntArray) -> IntArray:
        return scores


class ReservePlugin(Plugin):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        raise NotImplementedError

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


class PermitPlugin(Plugin):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status, float]:
        """Success, Wait (with a timeout in seconds) or a rejection."""
        raise NotImplementedError


class PreBindPlugin(Plugin):
    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        raise NotImplementedError


class BindPlugin(Plugin):
    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Skip passes the pod on to the next bind plugin."""
        raise NotImplementedError


class PostBindPlugin(Plugin):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        raise NotImplementedError


# ---- per-node plugin API, adapted to batch -------------------------------------------------------


class NodeFilterPlugin(FilterPlugin):
    """Per-node filter for custom plugins; the batch method loops in Python (not for hot paths)."""

    def filter_node(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status:
        raise NotImplementedError

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        statuses: list[Status] = []
        index_of: dict[Status, int] = {}
        passed = np.ones(len(rows), dtype=np.bool_)
        codes = np.zeros(len(rows), dtype=np.int32)
        for i, row in enumerate(rows):
            status = self.filter_node(state, pod, NodeInfo.from_table(self.table, int(row)))
            if status.is_success:
                continue
            passed[i] = False
            if status not in index_of:
                index_of[status] = len(statuses)
                statuses.append(status)
            codes[i] = index_of[status]
        return FilterResult(passed, codes, tuple(statuses))


class NodeScorePlugin(ScorePlugin):
    """Per-node score for custom plugins, adapted to the batch form."""

    def score_node(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        raise NotImplementedError

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        return np.fromiter(
            (self.score_node(state, pod, NodeInfo.from_table(self.table, int(r))) for r in rows),
            dtype=np.int64,
            count=len(rows),
        )


def default_normalize(scores: IntArray, reverse: bool = False) -> IntArray:
    """helper.DefaultNormalizeScore: scale to 0..100 by the maximum, optionally reversed."""
    if len(scores) == 0:
        return scores
    max_score = max(int(scores.max()), 0)  # upstream starts its running maximum at 0
    if max_score == 0:
        if reverse:
            return np.full_like(scores, MAX_NODE_SCORE)
        return scores
    normalized = MAX_NODE_SCORE * scores // max_score
    if reverse:
        normalized = MAX_NODE_SCORE - normalized
    return normalized


def implemented_points(plugin_type: type[Plugin]) -> set[str]:
    """Extension points a plugin class implements, in KubeSchedulerConfiguration names."""
    points = {
        "preEnqueue": PreEnqueuePlugin,
        "queueSort": QueueSortPlugin,
        "preFilter": PreFilterPlugin,
        "filter": FilterPlugin,
        "postFilter": PostFilterPlugin,
        "preScore": PreScorePlugin,
        "score": ScorePlugin,
        "reserve": ReservePlugin,
        "permit": PermitPlugin,
        "preBind": PreBindPlugin,
        "bind": BindPlugin,
        "postBind": PostBindPlugin,
    }
    return {point for point, base in points.items() if issubclass(plugin_type, base)}


def unique_names(plugins: Iterable[Plugin]) -> list[str]:
    return list(dict.fromkeys(p.name for p in plugins))
