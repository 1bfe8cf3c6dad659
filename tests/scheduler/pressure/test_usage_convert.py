"""API shapes into the model's plain data: metrics.k8s.io, the Summary API, KubeletConfiguration."""

from __future__ import annotations

from typing import Any

import pytest

from policy_scheduler.apiobjects.convert import pod_from_dict
from policy_scheduler.apiobjects.errors import ConversionError
from policy_scheduler.apiobjects.usage import (
    disk_layout,
    eviction_settings,
    kubelet_config_from_dict,
    node_metrics_from_dict,
    node_stats_from_metrics,
    node_stats_from_summary,
    pod_metrics_from_dict,
    pod_usage_from_metrics,
    pod_usage_from_summary,
    summary_from_dict,
)
from policy_scheduler.scheduler.pressure.observations import (
    FsStats,
    SignalObservation,
    make_signal_observations,
)
from policy_scheduler.scheduler.pressure.pods import local_volume_names, pod_facts
from policy_scheduler.scheduler.pressure.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE,
    IMAGEFS_AVAILABLE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    PID_AVAILABLE,
    DiskLayout,
)

GI, MI = 1024**3, 1024**2


def test_node_metrics_give_memory_available_against_capacity() -> None:
    m = node_metrics_from_dict(
        {
            "apiVersion": "metrics.k8s.io/v1beta1",
            "kind": "NodeMetrics",
            "metadata": {"name": "n1", "creationTimestamp": None},
            "timestamp": "2026-01-10T10:00:00Z",
            "window": "20s",
            "usage": {"cpu": "250m", "memory": "3Gi"},
        }
    )
    stats = node_stats_from_metrics(m, 8 * GI)
    assert make_signal_observations(stats) == {
        MEMORY_AVAILABLE: SignalObservation(5 * GI, 8 * GI, 1768039200.0)
    }
    # no capacity: no memory data (never a guess)
    assert make_signal_observations(node_stats_from_metrics(m, None)) == {}


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        ({"memory": "-1Mi"}, 'usage.memory: "-1Mi": must not be negative'),
        ({"memory": "1Gx"}, 'usage.memory: invalid quantity "1Gx"'),
        ({"memory": "9Gi"}, "usage.memory: 9663676416 is more than the node's memory capacity (8589934592)"),
    ],
)
def test_bad_node_metrics(usage: dict[str, str], message: str) -> None:
    m = node_metrics_from_dict({"kind": "NodeMetrics", "metadata": {"name": "n1"}, "usage": usage})
    with pytest.raises(ConversionError) as caught:
        node_stats_from_metrics(m, 8 * GI)
    assert str(caught.value) == message


def test_pod_metrics_sum_the_containers() -> None:
    m = pod_metrics_from_dict(
        {
            "kind": "PodMetrics",
            "metadata": {"name": "p", "namespace": "ns"},
            "containers": [
                {"name": "a", "usage": {"memory": "100Mi"}},
                {"name": "b", "usage": {"memory": "28Mi"}},
            ],
        }
    )
    assert pod_usage_from_metrics(m).memory_working_set == 128 * MI
    with pytest.raises(ConversionError, match="containers"):
        pod_usage_from_metrics(m, memory_limit=100 * MI)
    empty = pod_metrics_from_dict({"kind": "PodMetrics", "metadata": {"name": "p"}, "containers": []})
    assert pod_usage_from_metrics(empty).memory_working_set is None


def fs(available: int, capacity: int, **more: int) -> dict[str, Any]:
    return {"availableBytes": available, "capacityBytes": capacity, **more}


SUMMARY: dict[str, Any] = {
    "node": {
        "nodeName": "n1",
        "memory": {"availableBytes": 2 * GI, "workingSetBytes": 6 * GI, "usageBytes": 7 * GI},
        "systemContainers": [{"name": "pods", "memory": {"availableBytes": GI, "workingSetBytes": 5 * GI}}],
        "fs": fs(10 * GI, 100 * GI, inodesFree=1000, inodes=5000),
        "runtime": {"imageFs": fs(10 * GI, 100 * GI, inodesFree=1000, inodes=5000)},
        "rlimit": {"maxpid": 1000, "curproc": 900},
    },
    "pods": [
        {
            "podRef": {"name": "p", "namespace": "default", "uid": "u1"},
            "memory": {"workingSetBytes": 300 * MI},
            "containers": [
                {"name": "a", "rootfs": {"usedBytes": 10 * MI, "inodesUsed": 5}, "logs": {"usedBytes": MI}},
                {"name": "b", "rootfs": {"usedBytes": 20 * MI}},
            ],
            "volume": [
                {"name": "scratch", "usedBytes": 100 * MI, "inodesUsed": 7},
                {"name": "tmpfs", "usedBytes": 50 * MI},
                {"name": "config", "usedBytes": 1 * MI},
            ],
            "ephemeral-storage": {"usedBytes": 132 * MI},
            "process_stats": {"process_count": 12},
        }
    ],
}


def test_summary_node_observations() -> None:
    stats = node_stats_from_summary(summary_from_dict(SUMMARY))
    assert stats.layout == DiskLayout()  # imageFs reported as the node's own filesystem
    observed = make_signal_observations(stats)
    assert observed[MEMORY_AVAILABLE] == SignalObservation(2 * GI, 8 * GI)
    assert observed[ALLOCATABLE_MEMORY_AVAILABLE] == SignalObservation(GI, 6 * GI)
    assert observed[NODEFS_AVAILABLE] == observed[IMAGEFS_AVAILABLE] == SignalObservation(10 * GI, 100 * GI)
    assert observed[PID_AVAILABLE] == SignalObservation(100, 1000)


def test_summary_pod_usage_counts_local_volumes_only() -> None:
    pod = pod_from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "uid": "u1"},
            "spec": {
                "containers": [{"name": "a"}, {"name": "b"}],
                "volumes": [
                    {"name": "scratch", "emptyDir": {}},
                    {"name": "tmpfs", "emptyDir": {"medium": "Memory"}},
                    {"name": "config", "configMap": {"name": "c"}},
                    {"name": "data", "persistentVolumeClaim": {"claimName": "d"}},
                ],
            },
        }
    )
    assert local_volume_names(pod) == {"scratch", "config"}
    summary = summary_from_dict(SUMMARY)
    assert summary.pods is not None
    usage = pod_usage_from_summary(summary.pods[0], local_volume_names(pod), "pods[0]")
    assert (usage.memory_working_set, usage.rootfs_bytes, usage.logs_bytes) == (300 * MI, 30 * MI, MI)
    assert (usage.local_volume_bytes, usage.rootfs_inodes, usage.local_volume_inodes) == (101 * MI, 5, 7)
    assert usage.logs_inodes is None  # no container reported it
    assert usage.processes == 12


@pytest.mark.parametrize(
    ("patch", "message"),
    [
        ({"fs": fs(11, 10)}, "node.fs.availableBytes: 11 is more than capacityBytes (10)"),
        ({"fs": fs(-1, 10)}, "node.fs.availableBytes: -1: must not be negative"),
        (
            {"rlimit": {"maxpid": 10, "curproc": 11}},
            "node.rlimit.curproc: 11 is more than node.rlimit.maxpid (10)",
        ),
        (
            {"fs": fs(2**64, 2**64)},
            "node.fs.availableBytes: 18446744073709551616: larger than any real figure",
        ),
    ],
)
def test_bad_summary_node(patch: dict[str, Any], message: str) -> None:
    body = {"node": {**SUMMARY["node"], **patch}}
    with pytest.raises(ConversionError) as caught:
        node_stats_from_summary(summary_from_dict(body))
    assert str(caught.value).startswith(message)


def test_disk_layout_from_the_filesystems_reported() -> None:
    node = FsStats(1, 100, inodes=10)
    other = FsStats(1, 500, inodes=10)
    assert disk_layout(node, node, node) == DiskLayout(False, False)
    assert disk_layout(node, other, other) == DiskLayout(True, False)
    assert disk_layout(node, other, node) == DiskLayout(True, True)
    assert disk_layout(node, None, None) == DiskLayout(False, False)


def test_kubelet_configuration_and_configz() -> None:
    body = {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "evictionHard": {"memory.available": "1Gi"},
        "evictionSoft": {"memory.available": "2Gi"},
        "evictionSoftGracePeriod": {"memory.available": "1m30s"},
        "evictionPressureTransitionPeriod": "0s",
        "evictionMaxPodGracePeriod": 30,
        "enforceNodeAllocatable": [],
        "clusterDNS": ["10.0.0.10"],
    }
    settings = eviction_settings(kubelet_config_from_dict(body))
    assert settings.eviction_hard == {"memory.available": "1Gi"}
    assert settings.eviction_pressure_transition_period == 300  # 0 means the default
    assert settings.eviction_max_pod_grace_period == 30
    assert settings.enforce_node_allocatable == ()
    configz = {"kubeletconfig": {k: v for k, v in body.items() if k not in ("apiVersion", "kind")}}
    assert eviction_settings(kubelet_config_from_dict(configz)) == settings
    with pytest.raises(ConversionError, match="apiVersion"):
        kubelet_config_from_dict({**body, "apiVersion": "kubelet.config.k8s.io/v2"})
    with pytest.raises(ConversionError, match="evictionPressureTransitionPeriod"):
        eviction_settings(kubelet_config_from_dict({**body, "evictionPressureTransitionPeriod": "5 minutes"}))


def test_pod_facts_from_an_api_pod() -> None:
    pod = pod_from_dict(
        {
            "kind": "Pod",
            "metadata": {
                "name": "etcd",
                "namespace": "kube-system",
                "annotations": {"kubernetes.io/config.source": "file"},
            },
            "spec": {
                "priority": 2000001000,
                "containers": [
                    {"name": "c", "resources": {"requests": {"memory": "1Gi", "ephemeral-storage": "2Gi"}}}
                ],
                "overhead": {"memory": "10Mi", "cpu": "10m"},
            },
            "status": {"qosClass": "Burstable"},
        }
    )
    facts = pod_facts(pod)
    assert (facts.memory_request, facts.ephemeral_storage_request) == (GI + 10 * MI, 2 * GI)
    assert facts.qos == "Burstable"
    assert facts.static
    assert facts.critical
    assert facts.never_evicted == "static pod"
    # overhead counts only when the pod requests the resource (GetResourceRequestQuantity)
    bare = pod_from_dict(
        {
            "kind": "Pod",
            "metadata": {"name": "b"},
            "spec": {"containers": [{"name": "c"}], "overhead": {"memory": "10Mi"}},
        }
    )
    assert pod_facts(bare).memory_request == 0
