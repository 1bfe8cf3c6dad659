"""The profiles both schedulers run: one spec feeds kube-scheduler's configuration and our
SchedulingProfile, so any difference is the schedulers', not the configuration's."""

from __future__ import annotations

import copy
from typing import Any

from policy_scheduler.devcluster.versions import ControlPlaneVersions
from policy_scheduler.policy.compile import compile_profile_objects
from policy_scheduler.policy.constants import API_VERSION, SCHEDULING_PROFILE_KIND
from policy_scheduler.scheduler.config import ResolvedProfile
from policy_scheduler.scheduler.plugins.registry import implemented_plugin_names
from policy_scheduler.scheduler.profile_resolution import resolve_profile
from policy_scheduler.scheduler.versioning.features import Features
from policy_scheduler.scheduler.versioning.version import KubernetesVersion

GPU = "example.com/gpu"

# KubeSchedulerProfile specs by schedulerName; every field is also a SchedulingProfile field.
PROFILE_SPECS: dict[str, dict[str, Any]] = {
    "parity-default": {},
    "parity-most": {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "MostAllocated",
                        "resources": [
                            {"name": "cpu", "weight": 1},
                            {"name": "memory", "weight": 1},
                            {"name": GPU, "weight": 3},
                        ],
                    }
                },
            },
            {
                "name": "NodeResourcesBalancedAllocation",
                "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": GPU, "weight": 1}]},
            },
        ]
    },
    "parity-ratio": {
        "pluginConfig": [
            {
                "name": "NodeResourcesFit",
                "args": {
                    "scoringStrategy": {
                        "type": "RequestedToCapacityRatio",
                        "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}],
                        "requestedToCapacityRatio": {
                            "shape": [
                                {"utilization": 0, "score": 0},
                                {"utilization": 60, "score": 10},
                                {"utilization": 100, "score": 3},
                            ]
                        },
                    }
                },
            }
        ]
    },
    "parity-weights": {
        "plugins": {
            "score": {
                "enabled": [
                    {"name": "TaintToleration", "weight": 1},
                    {"name": "NodeAffinity", "weight": 4},
                    {"name": "PodTopologySpread", "weight": 5},
                    {"name": "InterPodAffinity", "weight": 3},
                    {"name": "ImageLocality", "weight": 3},
                ],
                "disabled": [{"name": "NodeResourcesBalancedAllocation"}],
            }
        },
        "pluginConfig": [
            {"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 7}},
            {
                "name": "NodeAffinity",
                "args": {
                    "addedAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 20,
                                "preference": {
                                    "matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]
                                },
                            }
                        ]
                    }
                },
            },
        ],
    },
    "parity-ignore-preferred": {
        "pluginConfig": [
            {"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": True}},
        ]
    },
}
SCHEDULER_NAMES: tuple[str, ...] = tuple(PROFILE_SPECS)


# Plugins both sides run without (none: DynamicResources is compared, docs/parity.md).
NOT_COMPARED: tuple[str, ...] = ()


def profile_spec(scheduler_name: str) -> dict[str, Any]:
    spec = copy.deepcopy(PROFILE_SPECS[scheduler_name])
    plugins = spec.setdefault("plugins", {})
    if NOT_COMPARED:
        plugins["multiPoint"] = {"disabled": [{"name": name} for name in NOT_COMPARED]}
    return {"schedulerName": scheduler_name, "percentageOfNodesToScore": 100, **spec}


def scheduling_profile(scheduler_name: str) -> dict[str, Any]:
    """Our SchedulingProfile custom resource for one reference profile."""
    return {
        "apiVersion": API_VERSION,
        "kind": SCHEDULING_PROFILE_KIND,
        "metadata": {"name": scheduler_name},
        "spec": profile_spec(scheduler_name),
    }


def kube_scheduler_config(kubeconfig: str) -> dict[str, Any]:
    """KubeSchedulerConfiguration: every profile, all nodes scored, no leader election."""
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": {"kubeconfig": kubeconfig, "qps": 500, "burst": 1000},
        "leaderElection": {"leaderElect": False},
        "percentageOfNodesToScore": 100,
        "profiles": [profile_spec(name) for name in SCHEDULER_NAMES],
    }


def resolved_profiles(features: Features) -> dict[str, ResolvedProfile]:
    """Our resolved profiles, by schedulerName, for the reference's release (compiled as the
    operator compiles CRs on a cluster of that release)."""
    implemented = implemented_plugin_names()
    configs = compile_profile_objects(
        [scheduling_profile(name) for name in SCHEDULER_NAMES], features=features
    )
    return {c.scheduler_name: resolve_profile(c, implemented, features=features) for c in configs}


def reference_features(versions: ControlPlaneVersions) -> Features:
    """The release semantics of the reference kube-scheduler `versions` names, with its defaults."""
    return Features(KubernetesVersion.parse(versions.kubernetes))
