"""Eviction ranking: helpers_test.go (v1.37.2) TestOrderedByExceedsRequestMemory,
TestOrderedByExceedsRequestDisk, TestOrderedByPriority, TestOrderedbyDisk, TestOrderedbyInodes,
TestOrderedByPriorityDisk, TestOrderedByPriorityInodes, TestOrderedByMemory,
TestOrderedByPriorityMemory, TestOrderedByPriorityProcess, TestStatsNotFoundForPod; the rank
functions per disk layout (buildSignalToRankFunc); the victims the kubelet's loop takes."""

from __future__ import annotations

import numpy as np
import pytest

from policy_scheduler.scheduler.pressure.observations import PodUsage
from policy_scheduler.scheduler.pressure.ranking import (
    EXCEEDS_REQUESTS,
    PRIORITY,
    USAGE,
    PodColumns,
    evictions,
    measure,
    rank,
)
from policy_scheduler.scheduler.pressure.signals import (
    CONTAINERFS_AVAILABLE,
    EPHEMERAL_STORAGE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    IMAGES,
    INODES,
    LOCAL_VOLUMES,
    LOGS,
    MEMORY,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    PIDS,
    ROOT,
    DiskLayout,
    RankFunction,
    rank_function,
)

from ._build import (
    DEFAULT_PRIORITY,
    HIGH_PRIORITY,
    LOW_PRIORITY,
    columns,
    disk_stats,
    inode_stats,
    local_volume,
    memory_stats,
    names,
    new_container,
    new_pod,
    new_resource_list,
    process_stats,
    q,
)

DISK = RankFunction(EPHEMERAL_STORAGE, frozenset({ROOT, LOGS, LOCAL_VOLUMES}))
DISK_INODES = RankFunction(INODES, frozenset({ROOT, LOGS, LOCAL_VOLUMES}))
MEM = RankFunction(MEMORY)
PID = RankFunction(PIDS, priority_first=True)


def ordered(cols: PodColumns, by: RankFunction, criteria: tuple[str, ...]) -> list[str]:
    return names(cols, rank(cols, measure(cols, by), criteria))


def test_ordered_by_exceeds_request_memory() -> None:
    below = new_pod("below-requests", -1, [new_container("below-requests", new_resource_list("", "200Mi"))])
    exceeds = new_pod(
        "exceeds-requests", 1, [new_container("exceeds-requests", new_resource_list("", "100Mi"))]
    )
    cols = columns(
        [below, exceeds], {"below-requests": memory_stats("199Mi"), "exceeds-requests": memory_stats("101Mi")}
    )
    assert ordered(cols, MEM, (EXCEEDS_REQUESTS,)) == ["exceeds-requests", "below-requests"]


def test_ordered_by_exceeds_request_disk() -> None:
    below = new_pod(
        "below-requests", -1, [new_container("below-requests", {"ephemeral-storage": q("200Mi")})]
    )
    exceeds = new_pod(
        "exceeds-requests", 1, [new_container("exceeds-requests", {"ephemeral-storage": q("100Mi")})]
    )
    stats = {
        "below-requests": disk_stats(below, "100Mi", "99Mi", "0Mi"),
        "exceeds-requests": disk_stats(exceeds, "90Mi", "11Mi", "0Mi"),
    }
    assert ordered(columns([below, exceeds], stats), DISK, (EXCEEDS_REQUESTS,)) == [
        "exceeds-requests",
        "below-requests",
    ]


def test_ordered_by_priority() -> None:
    low = new_pod("low-priority", -134, [new_container("low-priority")])
    medium = new_pod(
        "medium-priority", 1, [new_container("medium-priority", new_resource_list("100m", "100Mi"))]
    )
    high = new_pod(
        "high-priority", 12534, [new_container("high-priority", new_resource_list("200m", "200Mi"))]
    )
    cols = columns([high, medium, low], {})
    assert ordered(cols, MEM, (PRIORITY,)) == ["low-priority", "medium-priority", "high-priority"]


def _disk_pods(requests: list[str]) -> list:  # type: ignore[type-arg]
    made = [
        "best-effort-high",
        "best-effort-low",
        "burstable-high",
        "burstable-low",
        "guaranteed-high",
        "guaranteed-low",
    ]
    return [
        new_pod(
            name, DEFAULT_PRIORITY, [new_container(name, new_resource_list("", "", req))], [local_volume()]
        )
        for name, req in zip(made, requests, strict=True)
    ]


def test_ordered_by_disk() -> None:
    pods = _disk_pods(["", "", "100Mi", "100Mi", "400Mi", "400Mi"])
    usage = [
        ("50Mi", "100Mi", "150Mi"),  # 300Mi - 0 = 300Mi
        ("25Mi", "25Mi", "50Mi"),  # 100Mi - 0 = 100Mi
        ("150Mi", "150Mi", "50Mi"),  # 350Mi - 100Mi = 250Mi
        ("25Mi", "35Mi", "50Mi"),  # 110Mi - 100Mi = 10Mi
        ("225Mi", "100Mi", "50Mi"),  # 375Mi - 400Mi = -25Mi
        ("25Mi", "45Mi", "50Mi"),  # 120Mi - 400Mi = -280Mi
    ]
    stats = {p.name: disk_stats(p, *u) for p, u in zip(pods, usage, strict=True)}
    got = ordered(columns(pods, stats), DISK, (USAGE,))
    p = [pod.name for pod in pods]
    assert got == [p[0], p[2], p[1], p[3], p[4], p[5]]


def test_ordered_by_inodes() -> None:
    pods = [
        new_pod(n, DEFAULT_PRIORITY, [new_container(n)], [local_volume()]) for n in ("low", "medium", "high")
    ]
    usage = [("50000", "100000", "50000"), ("100000", "150000", "50000"), ("200000", "150000", "50000")]
    stats = {p.name: inode_stats(p, *u) for p, u in zip(pods, usage, strict=True)}
    assert ordered(columns(pods, stats), DISK_INODES, (USAGE,)) == ["high", "medium", "low"]


def _eight(requests: list[dict[str, int]]) -> list:  # type: ignore[type-arg]
    made = [
        ("above-requests-low-priority-high-usage", LOW_PRIORITY),
        ("above-requests-low-priority-low-usage", LOW_PRIORITY),
        ("above-requests-high-priority-high-usage", HIGH_PRIORITY),
        ("above-requests-high-priority-low-usage", HIGH_PRIORITY),
        ("below-requests-low-priority-high-usage", LOW_PRIORITY),
        ("below-requests-low-priority-low-usage", LOW_PRIORITY),
        ("below-requests-high-priority-high-usage", HIGH_PRIORITY),
        ("below-requests-high-priority-low-usage", HIGH_PRIORITY),
    ]
    return [
        new_pod(name, priority, [new_container(name, req)], [local_volume()])
        for (name, priority), req in zip(made, requests, strict=True)
    ]


def test_ordered_by_priority_disk() -> None:
    none, small, big = (
        new_resource_list(),
        new_resource_list("", "", "100Mi"),
        new_resource_list("", "", "1Gi"),
    )
    pods = _eight([none, none, small, small, big, big, big, big])
    usage = [
        ("200Mi", "100Mi", "200Mi"),
        ("10Mi", "10Mi", "30Mi"),
        ("200Mi", "150Mi", "250Mi"),
        ("90Mi", "50Mi", "10Mi"),
        ("500Mi", "200Mi", "100Mi"),
        ("50Mi", "100Mi", "50Mi"),
        ("250Mi", "500Mi", "50Mi"),
        ("100Mi", "60Mi", "40Mi"),
    ]
    stats = {p.name: disk_stats(p, *u) for p, u in zip(pods, usage, strict=True)}
    cols = columns(list(reversed(pods)), stats)
    assert ordered(cols, DISK, (EXCEEDS_REQUESTS, PRIORITY, USAGE)) == [p.name for p in pods]


def test_ordered_by_priority_inodes() -> None:
    made = [
        ("low-priority-high-usage", LOW_PRIORITY),
        ("low-priority-low-usage", LOW_PRIORITY),
        ("high-priority-high-usage", HIGH_PRIORITY),
        ("high-priority-low-usage", HIGH_PRIORITY),
    ]
    pods = [new_pod(n, prio, [new_container(n)], [local_volume()]) for n, prio in made]
    usage = [
        ("50000", "100000", "250000"),
        ("60000", "30000", "10000"),
        ("150000", "150000", "50000"),
        ("10000", "40000", "100000"),
    ]
    stats = {p.name: inode_stats(p, *u) for p, u in zip(pods, usage, strict=True)}
    cols = columns(list(reversed(pods)), stats)
    assert ordered(cols, DISK_INODES, (PRIORITY, USAGE)) == [p.name for p in pods]
    # rankDiskPressureFunc for inodes checks exceedDiskRequests first: no pod requests inodes,
    # so any pod using inodes "exceeds" and the order is the same.
    assert ordered(cols, DISK_INODES, (EXCEEDS_REQUESTS, PRIORITY, USAGE)) == [p.name for p in pods]


def _six_memory() -> tuple[list, dict[str, PodUsage]]:  # type: ignore[type-arg]
    made = [
        ("best-effort-high", new_resource_list(), "500Mi"),  # 500 relative to request
        ("best-effort-low", new_resource_list(), "300Mi"),  # 300 relative to request
        ("burstable-high", new_resource_list("", "100Mi"), "800Mi"),  # 700 relative to request
        ("burstable-low", new_resource_list("", "100Mi"), "300Mi"),  # 200 relative to request
        ("guaranteed-high", new_resource_list("", "1Gi"), "800Mi"),  # -200 relative to request
        ("guaranteed-low", new_resource_list("", "1Gi"), "200Mi"),  # -800 relative to request
    ]
    pods = [new_pod(n, DEFAULT_PRIORITY, [new_container(n, r)]) for n, r, _ in made]
    return pods, {n: memory_stats(u) for n, _, u in made}


def test_ordered_by_memory() -> None:
    pods, stats = _six_memory()
    got = ordered(columns(pods, stats), MEM, (USAGE,))
    assert got == [
        "burstable-high",
        "best-effort-high",
        "best-effort-low",
        "burstable-low",
        "guaranteed-high",
        "guaranteed-low",
    ]


def test_ordered_by_priority_memory() -> None:
    none, small, big = new_resource_list(), new_resource_list("", "100Mi"), new_resource_list("", "1Gi")
    pods = _eight([none, none, small, small, big, big, big, big])
    usage = ["500Mi", "50Mi", "600Mi", "150Mi", "800Mi", "200Mi", "800Mi", "200Mi"]
    stats = {p.name: memory_stats(u) for p, u in zip(pods, usage, strict=True)}
    cols = columns(list(reversed(pods)), stats)
    assert ordered(cols, MEM, (EXCEEDS_REQUESTS, PRIORITY, USAGE)) == [p.name for p in pods]


def test_ordered_by_priority_process() -> None:
    made = [
        ("low-priority-high-usage", LOW_PRIORITY, 20),
        ("low-priority-low-usage", LOW_PRIORITY, 6),
        ("high-priority-high-usage", HIGH_PRIORITY, 20),
        ("high-priority-low-usage", HIGH_PRIORITY, 5),
    ]
    pods = [new_pod(n, prio) for n, prio, _ in made]
    stats = {n: process_stats(c) for n, _, c in made}
    cols = columns(list(reversed(pods)), stats)
    assert ordered(cols, PID, (PRIORITY, USAGE)) == [p.name for p in pods]


@pytest.mark.parametrize("by", [MEM, DISK, DISK_INODES, PID], ids=["memory", "disk", "inodes", "process"])
@pytest.mark.parametrize("criterion", [EXCEEDS_REQUESTS, USAGE])
def test_stats_not_found_for_pod(by: RankFunction, criterion: str) -> None:
    """Two pods without stats compare equal: the tie-break (namespace/name) decides."""
    pods = [
        new_pod("fake-pod2", DEFAULT_PRIORITY, [new_container("c")]),
        new_pod("fake-pod1", 0, [new_container("c")]),
    ]
    assert ordered(columns(pods, {}), by, (criterion,)) == ["fake-pod1", "fake-pod2"]


def test_pod_without_stats_ranks_first_but_priority_comes_first() -> None:
    """prioritize evicting the pod for which no stats were found: in every comparison but priority."""
    pods = [new_pod("with-stats", 0, [new_container("c")]), new_pod("no-stats", 5, [new_container("c")])]
    stats = {"with-stats": memory_stats("1Gi")}
    assert ordered(columns(pods, stats), MEM, (EXCEEDS_REQUESTS, PRIORITY, USAGE)) == [
        "no-stats",
        "with-stats",
    ]
    process = {"with-stats": process_stats(100)}
    assert ordered(columns(pods, process), PID, (PRIORITY, USAGE)) == ["with-stats", "no-stats"]


@pytest.mark.parametrize(
    ("signal", "layout", "resource", "parts"),
    [
        (MEMORY_AVAILABLE, DiskLayout(), MEMORY, set()),
        (PID_AVAILABLE, DiskLayout(), PIDS, set()),
        # without an imagefs every signal looks at all the pod's disk usage
        (NODEFS_AVAILABLE, DiskLayout(), EPHEMERAL_STORAGE, {IMAGES, ROOT, LOGS, LOCAL_VOLUMES}),
        (IMAGEFS_AVAILABLE, DiskLayout(), EPHEMERAL_STORAGE, {IMAGES, ROOT, LOGS, LOCAL_VOLUMES}),
        (NODEFS_INODES_FREE, DiskLayout(), INODES, {IMAGES, ROOT, LOGS, LOCAL_VOLUMES}),
        # a dedicated imagefs: nodefs holds logs and local volumes, imagefs the writable layers
        (NODEFS_AVAILABLE, DiskLayout(True), EPHEMERAL_STORAGE, {LOGS, LOCAL_VOLUMES}),
        (IMAGEFS_AVAILABLE, DiskLayout(True), EPHEMERAL_STORAGE, {ROOT, IMAGES}),
        (IMAGEFS_INODES_FREE, DiskLayout(True), INODES, {ROOT, IMAGES}),
        (CONTAINERFS_AVAILABLE, DiskLayout(True), EPHEMERAL_STORAGE, {ROOT, IMAGES}),
        # writable layers split from images: they count on nodefs; imagefs holds images only
        (NODEFS_AVAILABLE, DiskLayout(True, True), EPHEMERAL_STORAGE, {LOGS, LOCAL_VOLUMES, ROOT}),
        (IMAGEFS_AVAILABLE, DiskLayout(True, True), EPHEMERAL_STORAGE, {IMAGES}),
        (CONTAINERFS_AVAILABLE, DiskLayout(True, True), EPHEMERAL_STORAGE, {LOGS, LOCAL_VOLUMES, ROOT}),
    ],
)
def test_rank_function_per_disk_layout(
    signal: str, layout: DiskLayout, resource: str, parts: set[str]
) -> None:
    got = rank_function(signal, layout)
    assert (got.resource, set(got.fs_stats), got.priority_first) == (resource, parts, signal == PID_AVAILABLE)


def test_disk_usage_that_counts_depends_on_the_layout() -> None:
    pod = new_pod("p", 0, [new_container("c")], [local_volume()])
    cols = columns([pod], {"p": disk_stats(pod, "100Mi", "10Mi", "1Mi")})
    for signal, layout, expected in [
        (NODEFS_AVAILABLE, DiskLayout(), "111Mi"),
        (NODEFS_AVAILABLE, DiskLayout(True), "11Mi"),
        (IMAGEFS_AVAILABLE, DiskLayout(True), "100Mi"),
        (IMAGEFS_AVAILABLE, DiskLayout(True, True), "0"),
    ]:
        assert int(measure(cols, rank_function(signal, layout)).usage[0]) == q(expected), (signal, layout)


def test_inodes_subtract_the_ephemeral_storage_request_as_upstream() -> None:
    """disk() subtracts the ephemeral-storage request whatever it ranks, inodes included."""
    a = new_pod("a", 0, [new_container("c", new_resource_list("", "", "1000"))])
    b = new_pod("b", 0, [new_container("c")])
    stats = {"a": inode_stats(a, "600", "0", "0"), "b": inode_stats(b, "100", "0", "0")}
    # a: 600 - 1000 = -400; b: 100 - 0 = 100
    assert ordered(columns([a, b], stats), DISK_INODES, (USAGE,)) == ["b", "a"]


def test_victims_until_threshold_plus_min_reclaim() -> None:
    pods, stats = _six_memory()
    cols = columns(pods, stats)
    m = measure(cols, MEM)
    order = rank(cols, m, (EXCEEDS_REQUESTS, PRIORITY, USAGE))
    need = q("900Mi")  # burstable-high frees 800Mi, best-effort-high 500Mi: two pods
    ev = evictions(cols, m, order, np.asarray([need], dtype=np.int64))
    victims = [cols.facts[int(i)].name for i, victim in zip(ev.order, ev.victim, strict=True) if victim]
    assert victims == ["burstable-high", "best-effort-high"]
    assert ev.position.tolist() == [1, 2, 3, 4, 5, 6]
    nothing = evictions(cols, m, order, np.asarray([0], dtype=np.int64))
    assert not nothing.victim.any()


def test_victims_skip_critical_pods() -> None:
    mirror = new_pod("mirror", 0, [new_container("c")], annotations={"kubernetes.io/config.mirror": "x"})
    plain = new_pod("plain", 0, [new_container("c")])
    cols = columns([mirror, plain], {"mirror": memory_stats("2Gi"), "plain": memory_stats("100Mi")})
    m = measure(cols, MEM)
    order = rank(cols, m, (EXCEEDS_REQUESTS, PRIORITY, USAGE))
    ev = evictions(cols, m, order, np.asarray([q("1Gi")], dtype=np.int64))
    assert names(cols, ev.order) == ["mirror", "plain"]  # ranked first, never evicted
    assert ev.victim.tolist() == [False, True]
