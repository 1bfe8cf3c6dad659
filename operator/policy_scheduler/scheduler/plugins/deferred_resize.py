"""The PreFilter v1.37 gave NodeUnschedulable and TaintToleration: it only skips pods whose
in-place resize is deferred (InPlacePodVerticalScalingSchedulerPreemption, off, and not
implemented), so it changes no decision; the plugins are listed at preFilter as upstream lists
them from that release on."""

from __future__ import annotations

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import PreFilterPlugin, PreFilterResult
from policy_scheduler.scheduler.framework.status import SUCCESS, Status
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.versioning.features import Features


class DeferredResizePreFilter(PreFilterPlugin):
    @classmethod
    def points_absent_in(cls, features: Features) -> frozenset[str]:
        return frozenset() if features.behaviour.deferred_resize_pre_filters else frozenset({"preFilter"})

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[PreFilterResult | None, Status]:
        return None, SUCCESS
