"""DefaultPreemption: the PostFilter plugin that picks a node and the victims to evict there.

It only chooses: the scheduler hands the PostFilterResult to hooks.preempting (the operator
evicts through the Eviction API, simulate deletes at once) and records the nomination.
Victims are restricted by the profile's eviction policy (see policy.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.diagnosis import Diagnosis, fit_error_message
from policy_scheduler.scheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from policy_scheduler.scheduler.framework.interfaces import (
    Handle,
    PostFilterPlugin,
    PostFilterResult,
    PreEnqueuePlugin,
)
from policy_scheduler.scheduler.framework.node_to_status import NodeToStatus
from policy_scheduler.scheduler.framework.status import (
    SUCCESS,
    Code,
    Status,
    error,
    unresolvable,
    unschedulable,
)
from policy_scheduler.scheduler.gang import PodGroup, PodGroupStore
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.plugins.defaultpreemption.args import DefaultPreemptionArgs
from policy_scheduler.scheduler.plugins.defaultpreemption.candidates import (
    calculate_num_candidates,
    dry_run_preemption,
    nodes_where_preemption_might_help,
    select_candidate,
)
from policy_scheduler.scheduler.plugins.defaultpreemption.gang import (
    FallTogether,
    plan_group_preemption,
    whole_group_eligible,
    with_whole_groups,
)
from policy_scheduler.scheduler.plugins.defaultpreemption.policy import (
    DEFAULT_POLICY,
    GANG_WHOLE,
    EvictionPolicyConfig,
    may_be_victim,
)
from policy_scheduler.scheduler.selectors import aggregate_message
from policy_scheduler.scheduler.versioning.gates import GENERIC_WORKLOAD, WORKLOAD_AWARE_PREEMPTION
from policy_scheduler.scheduler.versioning.version import V1_37

NAME = "DefaultPreemption"
NOT_ELIGIBLE_NEVER = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
NOT_HELPFUL = "Preemption is not helpful for scheduling"
WAITING_FOR_PREEMPTION = "waiting for the preemption for this pod to be finished"
WAITING_FOR_GROUP_PREEMPTION = "waiting for the preemption for this pod group to be finished"


def _skip_after_pod_delete(pod: Pod, old: object, new: object) -> QueueingHint:
    """isPodSchedulableAfterPodDeletion: the plugins that rejected the pod decide, not this one."""
    return QueueingHint.SKIP


class DefaultPreemption(PreEnqueuePlugin, PostFilterPlugin):
    name = NAME
    args_type = DefaultPreemptionArgs

    def __init__(self, handle: Handle, args: DefaultPreemptionArgs) -> None:
        super().__init__(handle, args)
        self.min_candidate_nodes_percentage = args.min_candidate_nodes_percentage
        self.min_candidate_nodes_absolute = args.min_candidate_nodes_absolute
        self.explains_success = handle.features.behaviour.preemption_success_explains
        # Workload-aware preemption for the Workload API's PodGroups: behind WorkloadAwarePreemption
        # in v1.36, part of GenericWorkload from v1.37 (v1.35 preempts pod by pod).
        features = handle.features
        self.workload_aware = features.enabled(GENERIC_WORKLOAD) and (
            features.version >= V1_37 or features.enabled(WORKLOAD_AWARE_PREEMPTION)
        )

    # ---- PreEnqueue / events (async preemption) ----------------------------------------------

    def pre_enqueue(self, pod: Pod) -> Status:
        services = self.handle.services
        if self.workload_aware and services.workload_groups.key_of(pod):
            # A Workload API gang preempts as one: its members wait while any of them preempts.
            # Without its PodGroup the pod is not held here (GangScheduling's business).
            store = services.workload_groups
            if store.group_of(pod) is None:
                return SUCCESS
            members = store.state(store.key_of(pod)).members.values()
            if any(services.preemption_in_progress(member) for member in members):
                return unresolvable(WAITING_FOR_GROUP_PREEMPTION)
            return SUCCESS
        if services.preemption_in_progress(pod):
            return unresolvable(WAITING_FOR_PREEMPTION)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE), _skip_after_pod_delete)]

    # ---- PostFilter ----------------------------------------------------------------------------

    def policy(self, pod: Pod) -> EvictionPolicyConfig:
        framework = self.handle.framework
        scheduler_name = framework.scheduler_name if framework is not None else pod.scheduler_name
        policy = self.handle.services.eviction_policy(scheduler_name)
        return DEFAULT_POLICY if policy is None else policy

    def is_eligible_victim(self, policy: EvictionPolicyConfig, victim: Pod, preemptor: Pod) -> bool:
        return may_be_victim(policy, victim, preemptor, self.handle.namespace_labels)

    def num_candidates(self, num_nodes: int) -> int:
        return calculate_num_candidates(
            num_nodes, self.min_candidate_nodes_percentage, self.min_candidate_nodes_absolute
        )

    def post_filter(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        result, status = self.preempt(state, pod, diagnosis)
        if status.message:
            return result, Status(status.code, ("preemption: " + status.message,))
        return result, status

    def pod_eligible_to_preempt_others(
        self, pod: Pod, nominated_node_status: Status, policy: EvictionPolicyConfig
    ) -> tuple[bool, str]:
        """PodEligibleToPreemptOthers. A pod whose earlier victims are still terminating on its
        nominated node waits for them instead of preempting more."""
        if pod.preemption_policy == "Never":
            return False, NOT_ELIGIBLE_NEVER
        nominated = pod.nominated_node_name
        if nominated:
            if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""  # the nominated node cannot work any more: preempt again
            row = self.table.index.get(nominated)
            if row is not None:
                for other in self.table.pods_on(row):
                    if other.terminating and self.is_eligible_victim(policy, other, pod):
                        return False, NOT_ELIGIBLE_TERMINATING
        return True, ""

    def preempt(
        self, state: CycleState, pod: Pod, diagnosis: Diagnosis
    ) -> tuple[PostFilterResult | None, Status]:
        """Evaluator.Preempt without the API calls."""
        framework = self.handle.framework
        if framework is None:
            return None, error("the preemption plugin needs handle.framework")
        policy = self.policy(pod)
        if policy.unavailable_reason is not None:
            return None, unschedulable(policy.unavailable_reason)  # fail safe: no victims at all
        eligible, message = self.pod_eligible_to_preempt_others(
            pod, diagnosis.status_of(pod.nominated_node_name), policy
        )
        if not eligible:
            return None, unschedulable(message)

        table = self.table
        if len(table) == 0:
            return None, error("no nodes available")
        victim_ok: Callable[[Pod], bool] = lambda victim: self.is_eligible_victim(policy, victim, pod)  # noqa: E731
        units = self._fall_together(policy)
        if units:
            victim_ok = whole_group_eligible(units, table, victim_ok)
        found_group = self._group_of(pod)
        if found_group is not None:
            return self._preempt_for_group(pod, *found_group, victim_ok, policy, units)
        rows = nodes_where_preemption_might_help(table, diagnosis)
        node_to_status: dict[str, Status] = {}
        candidates = []
        if len(rows):
            now = self.handle.clock()
            found = dry_run_preemption(
                framework,
                state,
                pod,
                rows,
                self.handle.services.list_pdbs(),
                self.handle.rng.randrange(len(rows)),
                self.num_candidates(len(rows)),
                victim_ok,
                now,
                policy.enforce_budgets,
            )
            if found.errors and not found.candidates:
                return None, Status(Code.ERROR, (aggregate_message(found.errors),))
            candidates, node_to_status = found.candidates, found.node_to_status
            best = select_candidate(candidates, now)
            if best is not None:
                victims = with_whole_groups(units, table, best.victims)
                return PostFilterResult(best.name, victims), self._preempting(best.name, victims)

        # A FitError of its own; the empty nomination clears the pod's nominatedNodeName.
        fit = Diagnosis(NodeToStatus(node_to_status), absent_nodes_status=unresolvable(NOT_HELPFUL))
        return PostFilterResult(""), unschedulable(fit_error_message(len(table), fit))

    def _fall_together(self, policy: EvictionPolicyConfig) -> list[FallTogether]:
        """Whose members are victims only together: scheduler-plugins PodGroups under
        gangDisruption Whole, Workload API PodGroups with disruptionMode All (workload-aware)."""
        services = self.handle.services
        units: list[FallTogether] = []
        # A store without groups makes every pod fall alone: leaving it out skips a lookup per
        # potential victim on every candidate node.
        if policy.gang_disruption == GANG_WHOLE and services.pod_groups.groups:
            units.append(FallTogether(services.pod_groups))
        if self.workload_aware and services.workload_groups.groups:
            units.append(FallTogether(services.workload_groups, lambda group: group.disrupt_all))
        return units

    def _group_of(self, pod: Pod) -> tuple[PodGroupStore, PodGroup] | None:
        """The gang `pod` preempts for: its scheduler-plugins PodGroup, or (workload-aware) its
        Workload API PodGroup with a gang policy."""
        services = self.handle.services
        group = services.pod_groups.group_of(pod)
        if group is not None:
            return services.pod_groups, group
        if self.workload_aware:
            group = services.workload_groups.group_of(pod)
            if group is not None and group.gang:
                return services.workload_groups, group
        return None

    def _preempt_for_group(
        self,
        pod: Pod,
        store: PodGroupStore,
        group: PodGroup,
        eligible: Callable[[Pod], bool],
        policy: EvictionPolicyConfig,
        units: Sequence[FallTogether],
    ) -> tuple[PostFilterResult | None, Status]:
        """The group preempts as one: victims for every member it lacks, or none at all."""
        framework = self.handle.framework
        assert framework is not None
        plan = plan_group_preemption(
            framework,
            store,
            group,
            pod,
            self.handle.services.list_pdbs(),
            eligible,
            self.num_candidates,
            self.handle.clock(),
            policy.enforce_budgets,
        )
        if isinstance(plan, str):
            return PostFilterResult(""), unschedulable(plan)
        if not plan.victims:
            return None, unschedulable(NOT_HELPFUL)
        victims = with_whole_groups(units, self.table, plan.victims)
        return PostFilterResult(plan.node_name, victims, plan.nominations), self._preempting(
            plan.node_name, victims
        )

    def _preempting(self, node_name: str, victims: Sequence[Pod]) -> Status:
        """Evaluator.Preempt's success: from v1.37 it says where and how many victims."""
        if not self.explains_success:
            return SUCCESS
        return Status(
            Code.SUCCESS,
            (f"found a potential placement for pod on node {node_name}, preempting {len(victims)} victims",),
        )
