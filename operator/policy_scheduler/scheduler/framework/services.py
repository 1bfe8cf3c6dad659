"""What the cluster side gives plugins beyond the node table: typed, with safe defaults.

Whoever builds the Engine (operator, simulate, parity) fills these in; `ClusterServices()`
is a scheduler with no PDBs, the default eviction policy, no preemption in flight and no
owner selectors (PodTopologySpread's system defaults then match every pod).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from policy_scheduler.scheduler.dra.services import DraServices
from policy_scheduler.scheduler.framework.unserved import UnservedApis
from policy_scheduler.scheduler.gang.store import PodGroupStore, workload_pod_groups
from policy_scheduler.scheduler.model import LabelSelector, Pod
from policy_scheduler.scheduler.pressure.headroom import NodeUsageStore
from policy_scheduler.scheduler.pressure.view import NodePressureView

if TYPE_CHECKING:
    from policy_scheduler.scheduler.plugins.defaultpreemption.policy import EvictionPolicyConfig


class PDB(Protocol):
    """What preemption reads of a PodDisruptionBudget (apiobjects' PDBInfo has these)."""

    @property
    def namespace(self) -> str: ...
    @property
    def selector(self) -> LabelSelector | None: ...
    @property
    def disruptions_allowed(self) -> int: ...
    @property
    def disrupted_pods(self) -> Collection[str]: ...


def no_pdbs() -> Sequence[PDB]:
    return ()


def no_eviction_policy(scheduler_name: str) -> EvictionPolicyConfig | None:
    return None


def no_preemption_in_progress(pod: Pod) -> bool:
    return False


def no_owner_selectors(pod: Pod) -> LabelSelector | None:
    return None


def uncounted_volume_stage_failures(operation: str, count: int) -> None:
    return None


@dataclass(frozen=True, slots=True)
class ClusterServices:
    # getPodDisruptionBudgets: the PDBs preemption must respect.
    list_pdbs: Callable[[], Sequence[PDB]] = no_pdbs
    # The EvictionPolicy of a profile by schedulerName; None means DEFAULT_POLICY.
    eviction_policy: Callable[[str], EvictionPolicyConfig | None] = no_eviction_policy
    # IsPodRunningPreemption: True while the evictions of the pod's last preemption are still
    # being issued (DefaultPreemption's PreEnqueue gate).
    preemption_in_progress: Callable[[Pod], bool] = no_preemption_in_progress
    # helper.DefaultSelector: the merged selector of the pod's Services and controllers.
    owner_selectors: Callable[[Pod], LabelSelector | None] = no_owner_selectors
    # DRA: slices, classes and claims, the CEL selector compiler and the claim status writer.
    dra: DraServices = field(default_factory=DraServices)
    # PodGroups and their members (gang scheduling); the Engine feeds it pod events.
    pod_groups: PodGroupStore = field(default_factory=PodGroupStore)
    # The Workload API's pod groups (scheduling.k8s.io PodGroups, or v1.35's Workloads) and their
    # members: the GangScheduling plugin's.
    workload_groups: PodGroupStore = field(default_factory=workload_pod_groups)
    # Nodes' real usage and eviction thresholds (EvictionHeadroom; issue 35). Empty: no data,
    # which that plugin scores as neutral.
    node_usage: NodeUsageStore = field(default_factory=NodeUsageStore)
    # The nodes pressure relief holds under pressure, and the EvictionPolicies that relieve
    # (the NodePressure filter of their profiles). Empty: no relief anywhere.
    node_pressure: NodePressureView = field(default_factory=NodePressureView)
    # The APIs the cluster does not serve (API discovery): the plugins that read one are off.
    unserved: UnservedApis = field(default_factory=UnservedApis)
    # VolumeBinding's failed stages ("predicate", "assume", "bind") and how many, for the
    # volume binder's scheduler_volume_scheduling_stage_error_total.
    volume_stage_failed: Callable[[str, int], None] = uncounted_volume_stage_failures
