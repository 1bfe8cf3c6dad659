"""Threshold parsing and defaulting: helpers_test.go (v1.37.2) TestParseThresholdConfig,
TestAddAllocatableThresholds, TestParsePercentage, TestCompareThresholdValue,
TestAddContainerFsThresholds, TestGetReclaimableThreshold, TestSortByEvictionPriority; plus the
kubelet's evictionHard defaulting (cmd/kubelet/app/server.go) and GetThresholdQuantity."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from policy_scheduler.scheduler.pressure.manager import by_eviction_priority, reclaimable_threshold
from policy_scheduler.scheduler.pressure.signals import (
    ALLOCATABLE_MEMORY_AVAILABLE as ALLOCATABLE,
)
from policy_scheduler.scheduler.pressure.signals import (
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    DiskLayout,
)
from policy_scheduler.scheduler.pressure.thresholds import (
    DEFAULT_EVICTION_HARD,
    SOURCE_KUBELET_CONFIG,
    SOURCE_KUBELET_DEFAULTS,
    KubeletEvictionSettings,
    Threshold,
    ThresholdError,
    ThresholdValue,
    add_allocatable_thresholds,
    eviction_config,
    parse_percentage,
    parse_threshold_config,
    update_containerfs_thresholds,
)

from ._build import q

MEM = MEMORY_AVAILABLE


def f32(value: float) -> float:
    return float(np.float32(value))


def v(value: str | float) -> ThresholdValue:
    return ThresholdValue(q(value)) if isinstance(value, str) else ThresholdValue(percentage=f32(value))


def t(
    signal: str, value: str | float, grace: float = 0.0, min_reclaim: str | float | None = None
) -> Threshold:
    return Threshold(signal, v(value), grace, None if min_reclaim is None else v(min_reclaim))


Maps = dict[str, str]

# name: (allocatable, hard, soft, grace, min reclaim, expected thresholds or None for an error)
PARSE_CASES: dict[str, tuple[list[str], Maps, Maps, Maps, Maps, list[Threshold] | None]] = {
    "no values": ([], {}, {}, {}, {}, []),
    "all memory eviction values": (
        ["pods"],
        {MEM: "150Mi"},
        {MEM: "300Mi"},
        {MEM: "30s"},
        {MEM: "0"},
        [t(ALLOCATABLE, "150Mi", 0, "0"), t(MEM, "150Mi", 0, "0"), t(MEM, "300Mi", 30, "0")],
    ),
    "all memory eviction values in percentages": (
        [],
        {MEM: "10%"},
        {MEM: "30%"},
        {MEM: "30s"},
        {MEM: "5%"},
        [t(MEM, 0.1, 0, 0.05), t(MEM, 0.3, 30, 0.05)],
    ),
    "disk eviction values": (
        [],
        {IMAGEFS_AVAILABLE: "150Mi", NODEFS_AVAILABLE: "100Mi"},
        {IMAGEFS_AVAILABLE: "300Mi", NODEFS_AVAILABLE: "200Mi"},
        {IMAGEFS_AVAILABLE: "30s", NODEFS_AVAILABLE: "30s"},
        {IMAGEFS_AVAILABLE: "2Gi", NODEFS_AVAILABLE: "1Gi"},
        [
            t(IMAGEFS_AVAILABLE, "150Mi", 0, "2Gi"),
            t(NODEFS_AVAILABLE, "100Mi", 0, "1Gi"),
            t(IMAGEFS_AVAILABLE, "300Mi", 30, "2Gi"),
            t(NODEFS_AVAILABLE, "200Mi", 30, "1Gi"),
        ],
    ),
    "disk eviction values in percentages": (
        [],
        {IMAGEFS_AVAILABLE: "15%", NODEFS_AVAILABLE: "10.5%"},
        {IMAGEFS_AVAILABLE: "30%", NODEFS_AVAILABLE: "20.5%"},
        {IMAGEFS_AVAILABLE: "30s", NODEFS_AVAILABLE: "30s"},
        {IMAGEFS_AVAILABLE: "10%", NODEFS_AVAILABLE: "5%"},
        [
            t(IMAGEFS_AVAILABLE, 0.15, 0, 0.1),
            t(NODEFS_AVAILABLE, 0.105, 0, 0.05),
            t(IMAGEFS_AVAILABLE, 0.3, 30, 0.1),
            t(NODEFS_AVAILABLE, 0.205, 30, 0.05),
        ],
    ),
    "inode eviction values": (
        [],
        {IMAGEFS_INODES_FREE: "150Mi", NODEFS_INODES_FREE: "100Mi"},
        {IMAGEFS_INODES_FREE: "300Mi", NODEFS_INODES_FREE: "200Mi"},
        {IMAGEFS_INODES_FREE: "30s", NODEFS_INODES_FREE: "30s"},
        {IMAGEFS_INODES_FREE: "2Gi", NODEFS_INODES_FREE: "1Gi"},
        [
            t(IMAGEFS_INODES_FREE, "150Mi", 0, "2Gi"),
            t(NODEFS_INODES_FREE, "100Mi", 0, "1Gi"),
            t(IMAGEFS_INODES_FREE, "300Mi", 30, "2Gi"),
            t(NODEFS_INODES_FREE, "200Mi", 30, "1Gi"),
        ],
    ),
    "disable via 0%": ([], {MEM: "0%"}, {MEM: "0%"}, {}, {}, []),
    "disable via 100%": ([], {MEM: "100%"}, {MEM: "100%"}, {}, {}, []),
    "invalid-signal": ([], {"mem.available": "150Mi"}, {}, {}, {}, None),
    "hard-signal-negative": ([], {MEM: "-150Mi"}, {}, {}, {}, None),
    "hard-signal-negative-percentage": ([], {MEM: "-15%"}, {}, {}, {}, None),
    "hard-signal-percentage-greater-than-100%": ([], {MEM: "150%"}, {}, {}, {}, None),
    "soft-signal-negative": ([], {}, {MEM: "-150Mi"}, {}, {}, None),
    "valid-and-invalid-signal": ([], {MEM: "150Mi", "invalid.foo": "150Mi"}, {}, {}, {}, None),
    "soft-no-grace-period": ([], {}, {MEM: "150Mi"}, {}, {}, None),
    "soft-negative-grace-period": ([], {}, {MEM: "150Mi"}, {MEM: "-30s"}, {}, None),
    "negative-reclaim": ([], {}, {}, {}, {MEM: "-300Mi"}, None),
    "min-reclaim-invalid-signal": ([], {}, {}, {}, {"mem.available": "300Mi"}, None),
    "min-reclaim-empty-value": ([], {}, {}, {}, {MEM: ""}, None),
    "min-reclaim-negative-percentage": ([], {}, {}, {}, {MEM: "-15%"}, None),
    "min-reclaim-invalid-percentage": ([], {}, {}, {}, {MEM: "10..5%"}, None),
    "hard-signal-empty-eviction-value": ([], {MEM: ""}, {}, {}, {}, None),
    "hard-signal-invalid-float-percentage": ([], {MEM: "10..5%"}, {}, {}, {}, None),
    "soft-grace-period-invalid-signal": ([], {}, {MEM: "150Mi"}, {"mem.available": "30s"}, {}, None),
    "soft-invalid-grace-period": ([], {}, {MEM: "150Mi"}, {MEM: "30mins"}, {}, None),
    # ours: a value that is both a quantity and a percentage
    "hard-signal-quantity-and-percentage": ([], {MEM: "10Mi%"}, {}, {}, {}, None),
}


@pytest.mark.parametrize("name", list(PARSE_CASES))
def test_parse_threshold_config(name: str) -> None:
    allocatable, hard, soft, grace, reclaim, expected = PARSE_CASES[name]
    if expected is None:
        with pytest.raises(ThresholdError):
            parse_threshold_config(allocatable, hard, soft, grace, reclaim)
        return
    got = parse_threshold_config(allocatable, hard, soft, grace, reclaim)
    # thresholdsEqual: the same thresholds, in any order
    assert Counter(got) == Counter(expected)


@pytest.mark.parametrize(
    ("hard", "path", "fragment"),
    [
        ({"mem.available": "1Gi"}, "evictionHard[mem.available]", "unsupported eviction signal"),
        ({MEM: "-150Mi"}, "evictionHard[memory.available]", "must be positive"),
        ({MEM: "150%"}, "evictionHard[memory.available]", "must be <= 100%"),
        ({MEM: "10Mi%"}, "evictionHard[memory.available]", "both a quantity and a percentage"),
        ({MEM: "1Gx"}, "evictionHard[memory.available]", 'invalid quantity "1Gx"'),
    ],
)
def test_threshold_errors_name_the_field(hard: Maps, path: str, fragment: str) -> None:
    with pytest.raises(ThresholdError) as caught:
        parse_threshold_config([], hard)
    assert caught.value.path == path
    assert fragment in caught.value.message


def test_soft_threshold_without_grace_period_names_the_grace_field() -> None:
    with pytest.raises(ThresholdError) as caught:
        parse_threshold_config([], {}, {MEM: "1Gi"}, {NODEFS_AVAILABLE: "1m"})
    assert caught.value.path == "evictionSoftGracePeriod[memory.available]"
    assert (
        caught.value.message
        == "grace period must be specified for the soft eviction threshold memory.available"
    )


ALLOCATABLE_CASES: dict[str, tuple[list[Threshold], list[Threshold]]] = {
    "non-memory-signal": ([t(IMAGEFS_AVAILABLE, "150Mi", 0, "0")], [t(IMAGEFS_AVAILABLE, "150Mi", 0, "0")]),
    "memory-signal-with-grace": ([t(MEM, "150Mi", 10, "0")], [t(MEM, "150Mi", 10, "0")]),
    "memory-signal-without-grace": (
        [t(MEM, "150Mi", 0, "0")],
        [t(ALLOCATABLE, "150Mi", 0, "0"), t(MEM, "150Mi", 0, "0")],
    ),
    "memory-signal-without-grace-two-thresholds": (
        [t(MEM, "150Mi", 0, "0"), t(MEM, "200Mi", 0, "1Gi")],
        [
            t(ALLOCATABLE, "150Mi", 0, "0"),
            t(MEM, "150Mi", 0, "0"),
            t(ALLOCATABLE, "200Mi", 0, "1Gi"),
            t(MEM, "200Mi", 0, "1Gi"),
        ],
    ),
}


@pytest.mark.parametrize("name", list(ALLOCATABLE_CASES))
def test_add_allocatable_thresholds(name: str) -> None:
    given, expected = ALLOCATABLE_CASES[name]
    assert Counter(add_allocatable_thresholds(given)) == Counter(expected)


@pytest.mark.parametrize(
    ("text", "value"),
    [("blah", None), ("25.5%", f32(0.255)), ("foo%", None), ("12%345", None), ("10%", f32(0.1))],
)
def test_parse_percentage(text: str, value: float | None) -> None:
    if value is None:
        with pytest.raises(ValueError, match="invalid percentage"):
            parse_percentage(text)
    else:
        assert parse_percentage(text) == value


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (ThresholdValue(123), ThresholdValue(123), True),
        (ThresholdValue(123), ThresholdValue(456), False),
        (ThresholdValue(123), ThresholdValue(percentage=f32(0.1)), False),
        (ThresholdValue(percentage=f32(0.1)), ThresholdValue(percentage=f32(0.1)), True),
        (ThresholdValue(percentage=f32(0.2)), ThresholdValue(percentage=f32(0.1)), False),
    ],
)
def test_compare_threshold_value(a: ThresholdValue, b: ThresholdValue, equal: bool) -> None:
    assert (a == b) is equal
    assert (b == a) is equal


def test_threshold_quantity_of_a_percentage_truncates_like_go() -> None:
    # int64(float64(capacity) * float64(float32(0.1))): float32(0.1) is slightly above 0.1
    ten_percent = v(0.1)
    assert ten_percent.resolve(1000) == 100
    assert ten_percent.resolve(10 * 1024**3) == int(float(10 * 1024**3) * float(np.float32(0.1)))
    # figures printed by the same arithmetic in Go (strconv.ParseFloat(s, 32), float32 / 100)
    assert ten_percent.resolve(10 * 1024**3) == 1073741840  # not 1073741824: float32's 0.1
    assert ThresholdValue(percentage=parse_percentage("15%")).resolve(100 * 1000**3) == 15000000596
    assert v("1Gi").resolve(12345) == 1024**3


# TestAddContainerFsThresholds: which filesystem's thresholds containerfs.* copies per layout.
BASE = [
    t(NODEFS_AVAILABLE, "100Mi", 0, "1Gi"),
    t(NODEFS_AVAILABLE, "200Mi", 1e-9, "1Gi"),
    t(NODEFS_INODES_FREE, "200Mi", 1e-9, "2Gi"),
    t(NODEFS_INODES_FREE, "100Mi", 0, "1Gi"),
    t(IMAGEFS_AVAILABLE, "150Mi", 0, "1.5Gi"),
    t(IMAGEFS_AVAILABLE, "300Mi", 1e-9, "3Gi"),
    t(IMAGEFS_INODES_FREE, "150Mi", 1e-9, "2Gi"),
    t(IMAGEFS_INODES_FREE, "150Mi", 0, "2Gi"),
]
CONTAINERFS_CASES = {
    "single filesystem": (DiskLayout(False, False), NODEFS_AVAILABLE, NODEFS_INODES_FREE),
    "image filesystem": (DiskLayout(True, False), IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE),
    "container and image are separate": (DiskLayout(True, True), NODEFS_AVAILABLE, NODEFS_INODES_FREE),
}


def _copied(thresholds: list[Threshold], source: str, target: str, hard: bool) -> Threshold:
    origin = next(x for x in thresholds if x.signal == source and x.hard == hard)
    return Threshold(target, origin.value, origin.grace_period, origin.min_reclaim)


@pytest.mark.parametrize("existing", [False, True])
@pytest.mark.parametrize("name", list(CONTAINERFS_CASES))
def test_update_containerfs_thresholds(name: str, existing: bool) -> None:
    layout, bytes_source, inodes_source = CONTAINERFS_CASES[name]
    given = list(BASE)
    if existing:  # "...; existing containerfsstats": the user's containerfs settings are replaced
        given += [
            t(CONTAINERFS_AVAILABLE, "500Mi", 0, "5Gi"),
            t(CONTAINERFS_INODES_FREE, "500Mi", 1e-9, "5Gi"),
        ]
    got, warnings = update_containerfs_thresholds(given, layout)
    assert bool(warnings) is existing
    for target, source in ((CONTAINERFS_AVAILABLE, bytes_source), (CONTAINERFS_INODES_FREE, inodes_source)):
        for hard in (True, False):
            found = [x for x in got if x.signal == target and x.hard == hard]
            assert found == [_copied(BASE, source, target, hard)], (target, hard)


def test_update_containerfs_thresholds_copies_zero_threshold_when_source_unset() -> None:
    got, _ = update_containerfs_thresholds([t(MEM, "100Mi")], DiskLayout())
    containerfs = [x for x in got if x.signal == CONTAINERFS_AVAILABLE]
    assert [x.value.resolve(10**9) for x in containerfs] == [0, 0]  # never met


def test_get_reclaimable_threshold() -> None:
    thresholds = [
        t(ALLOCATABLE, "150Mi", 0, "0"),
        t(MEM, "150Mi", 0, "0"),
        t(IMAGEFS_AVAILABLE, "150Mi", 0, "2Gi"),
        t(NODEFS_AVAILABLE, "100Mi", 0, "1Gi"),
        t(CONTAINERFS_AVAILABLE, "100Mi", 0, "1Gi"),
    ]
    found = reclaimable_threshold(by_eviction_priority(thresholds))
    assert found is not None
    assert (found[0].signal, found[1], found[0].value) == (MEM, "memory", v("150Mi"))
    assert reclaimable_threshold([]) is None
    assert reclaimable_threshold([Threshold("mem.available", ThresholdValue())]) is None


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ([], []),
        ([NODEFS_AVAILABLE, PID_AVAILABLE, MEM], [MEM, NODEFS_AVAILABLE, PID_AVAILABLE]),
        ([NODEFS_AVAILABLE, PID_AVAILABLE, ALLOCATABLE], [ALLOCATABLE, NODEFS_AVAILABLE, PID_AVAILABLE]),
    ],
)
def test_sort_by_eviction_priority(given: list[str], expected: list[str]) -> None:
    thresholds = [Threshold(signal, ThresholdValue()) for signal in given]
    assert [x.signal for x in by_eviction_priority(thresholds)] == expected


def test_defaults_when_no_kubelet_config() -> None:
    config = eviction_config(None)
    assert config.source == SOURCE_KUBELET_DEFAULTS
    assert config.pressure_transition_period == 300
    hard = {x.signal: str(x.value) for x in config.thresholds if x.signal != ALLOCATABLE}
    assert hard == dict(DEFAULT_EVICTION_HARD)
    # enforceNodeAllocatable defaults to ["pods"]: the memory threshold is copied for the pods' cgroup
    assert [x.value for x in config.thresholds if x.signal == ALLOCATABLE] == [v("100Mi")]


def test_setting_one_threshold_drops_the_other_defaults() -> None:
    config = eviction_config(
        KubeletEvictionSettings(eviction_hard={MEM: "500Mi"}, enforce_node_allocatable=())
    )
    assert config.source == SOURCE_KUBELET_CONFIG
    assert [(x.signal, x.value) for x in config.thresholds] == [(MEM, v("500Mi"))]


def test_merge_default_eviction_settings_keeps_the_other_defaults() -> None:
    settings = KubeletEvictionSettings(
        eviction_hard={MEM: "500Mi"}, merge_default_eviction_settings=True, enforce_node_allocatable=()
    )
    values = {x.signal: str(x.value) for x in eviction_config(settings).thresholds}
    assert values == {**DEFAULT_EVICTION_HARD, MEM: "500Mi"}
