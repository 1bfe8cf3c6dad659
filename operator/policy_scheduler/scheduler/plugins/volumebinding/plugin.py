"""VolumeBinding: PVCs of a pod — bound ones checked against the node, WaitForFirstConsumer
ones matched to available PVs or dynamically provisioned, Immediate unbound ones rejected."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from policy_scheduler.scheduler.framework.batch import VOLUMES_SIGNER, volumes_signature
from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import ClusterEventWithHint
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    Handle,
    NotLeading,
    PreBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    ReservePlugin,
    ScorePlugin,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status, error, unresolvable
from policy_scheduler.scheduler.framework.unserved import CSI_STORAGE_CAPACITIES
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, Rows
from policy_scheduler.scheduler.plugins.noderesources.resource_allocation import scale_shape
from policy_scheduler.scheduler.plugins.volumebinding.args import VolumeBindingArgs
from policy_scheduler.scheduler.plugins.volumebinding.assume_cache import AssumeError, assume_cache_for
from policy_scheduler.scheduler.plugins.volumebinding.binder import VolumeBinder
from policy_scheduler.scheduler.plugins.volumebinding.claims import (
    BinderError,
    PodVolumeClaims,
    get_pod_volume_claims,
    pod_has_pvcs,
)
from policy_scheduler.scheduler.plugins.volumebinding.hints import volume_binding_events
from policy_scheduler.scheduler.plugins.volumebinding.matching import (
    NO_ERROR,
    REASONS,
    FindResult,
    PodVolumes,
    find_pod_volumes,
)
from policy_scheduler.scheduler.plugins.volumebinding.scoring import capacity_scores
from policy_scheduler.scheduler.versioning.gates import STORAGE_CAPACITY_SCORING

log = logging.getLogger(__name__)

STATE_KEY = "VolumeBinding"
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class _State:
    claims: PodVolumeClaims | None = None  # None: the pod has no PVCs
    node_name: str = ""  # the reserved node
    volumes: PodVolumes | None = None  # what Reserve assumed there
    all_bound: bool = False

    def clone(self) -> _State:
        return self  # upstream shares it between clones too


class VolumeBinding(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin, PreBindPlugin):
    name = "VolumeBinding"
    signs_pods = True

    args_type = VolumeBindingArgs

    def __init__(self, handle: Handle, args: VolumeBindingArgs) -> None:
        super().__init__(handle, args)
        # Score does nothing without the StorageCapacityScoring gate (the args have no shape then).
        scoring = handle.features.enabled(STORAGE_CAPACITY_SCORING)
        self.shape = scale_shape(args.shape) if scoring and args.shape is not None else None
        self.cache = assume_cache_for(handle.table, handle.storage)
        self.binder = VolumeBinder(
            self.cache, handle.storage, handle.volume_api, float(args.bind_timeout_seconds), self._node_labels
        )

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((VOLUMES_SIGNER, volumes_signature(pod)),)

    def _capacity_unserved(self) -> str | None:
        reason: str | None = self.handle.services.unserved.reason(CSI_STORAGE_CAPACITIES)
        return reason

    def _node_labels(self, node_name: str) -> dict[str, str] | None:
        row = self.table.index.get(node_name)
        return None if row is None else self.table.nodes[row].labels

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return volume_binding_events()

    # ---- PreFilter / Filter ---------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        has_pvc, message = pod_has_pvcs(pod, self.handle.storage)
        if message is not None:
            return None, unresolvable(message)
        if not has_pvc:
            state.write(STATE_KEY, _State())
            return None, SKIP
        try:
            claims = get_pod_volume_claims(pod, self.cache, self.handle.storage)
        except BinderError as exc:
            return None, error(str(exc))
        if claims.immediate:
            return None, unresolvable(ERR_UNBOUND_IMMEDIATE)
        state.write(STATE_KEY, _State(claims))
        return None, SUCCESS

    def _find(self, state: CycleState, rows: Rows) -> FindResult | Status:
        data = state.read(STATE_KEY)
        if not isinstance(data, _State) or data.claims is None:
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        return find_pod_volumes(
            self.table, rows, data.claims, self.cache, self.handle.storage, self._capacity_unserved()
        )

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        found = self._find(state, rows)
        if isinstance(found, Status):
            return FilterResult.reject_all(len(rows), found)
        failed = int(np.count_nonzero(found.error != NO_ERROR))
        if failed:  # FindPodVolumes failed on these nodes (upstream counts each call)
            self.handle.services.volume_stage_failed("predicate", failed)
        # One status per distinct reason set, then errors (which win over reasons).
        bits = found.reasons.astype(np.int32)
        statuses: list[Status] = []
        index = np.zeros(len(rows), dtype=np.int32)
        for combo in np.unique(bits[bits > 0]):
            index[bits == combo] = len(statuses)
            statuses.append(unresolvable(*(text for bit, text in REASONS if combo & bit)))
        for k, message in enumerate(found.errors):
            index[found.error == k] = len(statuses)
            statuses.append(error(message))
        passed = (bits == 0) & (found.error == NO_ERROR)
        return FilterResult(passed, index, tuple(statuses))

    # ---- Score ----------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, rows: Rows) -> Status:
        if self.shape is None:
            return SKIP
        data = state.read(STATE_KEY)
        return SUCCESS if isinstance(data, _State) and data.claims is not None else SKIP

    def score(self, state: CycleState, pod: Pod, rows: Rows) -> IntArray:
        found = self._find(state, rows)
        if self.shape is None or isinstance(found, Status):
            return np.zeros(len(rows), dtype=np.int64)
        return capacity_scores(found, self.shape)

    # ---- Reserve / PreBind ----------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        data = state.read(STATE_KEY)
        if not isinstance(data, _State):
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        row = self.table.index.get(node_name)
        if data.claims is None or row is None:
            data.all_bound = True
            return SUCCESS
        found = find_pod_volumes(
            self.table,
            np.array([row]),
            data.claims,
            self.cache,
            self.handle.storage,
            self._capacity_unserved(),
        )
        volumes = found.pod_volumes(0)
        try:
            data.all_bound = self.binder.assume(pod, node_name, volumes)
        except (AssumeError, BinderError) as exc:
            self.handle.services.volume_stage_failed("assume", 1)
            return error(str(exc))
        data.node_name, data.volumes = node_name, volumes
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data = state.read(STATE_KEY)
        if isinstance(data, _State) and data.volumes is not None and data.node_name == node_name:
            self.binder.revert(data.volumes)

    async def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        data = state.read(STATE_KEY)
        if not isinstance(data, _State):
            return error(f'reading "{STATE_KEY}" from cycleState: not found')
        if data.all_bound:
            return SUCCESS
        if data.volumes is None or data.node_name != node_name:
            return error(f'no pod volume found for node "{node_name}"')
        try:
            await self.binder.bind(pod, node_name, data.volumes)
        except NotLeading:
            raise  # not a failure: the binding cycle drops the decision
        except Exception as exc:  # fwk.AsStatus(err): API failures and timeouts are Errors
            self.handle.services.volume_stage_failed("bind", 1)
            log.debug("binding volumes failed", extra={"pod": pod.key, "error": str(exc)})
            return Status(Code.ERROR, (str(exc),))
        return SUCCESS
