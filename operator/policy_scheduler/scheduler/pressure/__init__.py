"""The kubelet's node-pressure eviction as a pure model (issue 35; docs/pressure.md).

Ported from kubernetes v1.37.2 pkg/kubelet/eviction (identical to v1.35.4 in everything
modelled here). Inputs are plain data (observations.NodeStats, PodUsage, pods.PodFacts,
thresholds.KubeletEvictionSettings); converters from API shapes live in apiobjects/.
"""

from policy_scheduler.scheduler.pressure.assess import (
    NodeAssessment,
    NodeInput,
    RankedPod,
    SignalAssessment,
    ThresholdCheck,
    assess,
)
from policy_scheduler.scheduler.pressure.manager import ManagerState, SyncResult, admits, synchronize
from policy_scheduler.scheduler.pressure.observations import (
    FsStats,
    MemoryStats,
    NodeStats,
    PodUsage,
    RlimitStats,
    SignalObservation,
    make_signal_observations,
)
from policy_scheduler.scheduler.pressure.pods import PodFacts, local_volume_names, pod_facts
from policy_scheduler.scheduler.pressure.signals import DiskLayout
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_CONFIG,
    EvictionConfig,
    KubeletEvictionSettings,
    Threshold,
    ThresholdError,
    ThresholdValue,
    eviction_config,
)

__all__ = [
    "DEFAULT_CONFIG",
    "DiskLayout",
    "EvictionConfig",
    "FsStats",
    "KubeletEvictionSettings",
    "ManagerState",
    "MemoryStats",
    "NodeAssessment",
    "NodeInput",
    "NodeStats",
    "PodFacts",
    "PodUsage",
    "RankedPod",
    "RlimitStats",
    "SignalAssessment",
    "SignalObservation",
    "SyncResult",
    "Threshold",
    "ThresholdCheck",
    "ThresholdError",
    "ThresholdValue",
    "admits",
    "assess",
    "eviction_config",
    "local_volume_names",
    "make_signal_observations",
    "pod_facts",
    "synchronize",
]
