"""NodeDeclaredFeatures (pkg/scheduler/framework/plugins/nodedeclaredfeatures): a pod that needs
node features (restart-all-containers rules, user namespaces with host network, ...) fits only
nodes whose status.declaredFeatures list them. A default plugin from v1.36 (its gate on).

PreFilter infers what the pod needs from the release's feature registry (features.py) and skips
pods that need nothing; Filter checks the node. Without the gate the plugin does nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    unexpected_objects,
)
from policy_scheduler.scheduler.framework.interfaces import (
    FilterPlugin,
    FilterResult,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    SignFragments,
)
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status, unresolvable
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import Rows
from policy_scheduler.scheduler.plugins.nodedeclaredfeatures.features import (
    REGISTRIES,
    infer_for_pod_scheduling,
    unsatisfied,
)
from policy_scheduler.scheduler.versioning.gates import NODE_DECLARED_FEATURES

NAME = "NodeDeclaredFeatures"
PRE_FILTER_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"
FEATURES_SIGNER = "Features"  # fwk.FeaturesSignerName


@dataclass(frozen=True, slots=True)
class _State:
    required: frozenset[str]

    def clone(self) -> _State:
        return self


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin):
    name = NAME
    node_only = True  # reads the node object only
    signs_pods = True

    def __init__(self, handle: Handle, args: Any) -> None:
        super().__init__(handle, args)
        features = handle.features
        self.enabled = features.enabled(NODE_DECLARED_FEATURES)
        self.registry = REGISTRIES[features.version]
        self.release = features.version
        self.lists_missing = not features.behaviour.node_declared_features_generic_reason

    def required(self, pod: Pod) -> frozenset[str]:
        return infer_for_pod_scheduling(self.registry, pod, self.release)

    def sign_pod(self, pod: Pod) -> SignFragments | None:
        return ((FEATURES_SIGNER, tuple(sorted(self.required(pod)))),)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, SKIP
        required = self.required(pod)
        if not required:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _State(required))
        return None, SUCCESS

    def _required_or_error(self, state: CycleState) -> frozenset[str] | Status:
        found = state.read(PRE_FILTER_KEY)
        if not isinstance(found, _State):
            return Status(Code.ERROR, (f'error reading "{PRE_FILTER_KEY}" from cycle-state: not found',))
        return found.required

    def _verdict(self, required: frozenset[str], node: Node) -> Status:
        missing = unsatisfied(required, node.declared_features)
        if not missing:
            return SUCCESS
        if self.lists_missing:
            return unresolvable(
                f"node declared features check failed - unsatisfied requirements: {', '.join(missing)}"
            )
        return unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS)

    def filter(self, state: CycleState, pod: Pod, rows: Rows) -> FilterResult:
        if not self.enabled:
            return FilterResult.all_pass(len(rows))
        required = self._required_or_error(state)
        if isinstance(required, Status):
            return FilterResult.reject_all(len(rows), required)
        nodes = self.table.nodes
        verdicts = [self._verdict(required, nodes[row]) for row in rows.tolist()]
        statuses = tuple(dict.fromkeys(v for v in verdicts if not v.is_success))
        index = {status: i for i, status in enumerate(statuses)}
        passed = np.fromiter((v.is_success for v in verdicts), dtype=np.bool_, count=len(verdicts))
        which = np.fromiter((index.get(v, 0) for v in verdicts), dtype=np.int32, count=len(verdicts))
        return FilterResult(passed, which, statuses)

    def filter_row(self, state: CycleState, pod: Pod, row: int) -> Status:
        if not self.enabled:
            return SUCCESS
        required = self._required_or_error(state)
        if isinstance(required, Status):
            return required
        return self._verdict(required, self.table.nodes[row])

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_DECLARED_FEATURE),
                self._after_node_change,
            )
        ]

    @staticmethod
    def _after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
        if unexpected_objects(old, new, Node):
            return QueueingHint.QUEUE
        if old is not None and old.declared_features == new.declared_features:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
