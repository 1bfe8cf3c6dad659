"""Quantities and pod requests.

Quantity cases come from apimachinery's quantity_test.go; request cases from component-helpers'
resource/helpers_test.go (TestPodResourceRequests, TestPodLevelResourceRequests) and the
scheduler's framework/types_test.go (TestPodInfoCalculateResources), v1.35.4.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from decimal import Decimal

import pytest

from policy_scheduler.scheduler.model import Container, Pod
from policy_scheduler.scheduler.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    QuantityError,
    canonical,
    canonical_list,
    parse_quantity,
    pod_non_zero_requests,
    pod_requests,
)

KI, MI, GI = 1 << 10, 1 << 20, 1 << 30
INT64_MAX = (1 << 63) - 1

# ---- quantities ---------------------------------------------------------------------------------------

# input -> (Value(), MilliValue()): both round up, as Quantity.Value/MilliValue do.
QUANTITIES: list[tuple[str, int, int]] = [
    ("0", 0, 0),
    ("0n", 0, 0),
    ("0u", 0, 0),
    ("0m", 0, 0),
    ("0Ki", 0, 0),
    ("0k", 0, 0),
    ("0Mi", 0, 0),
    ("0M", 0, 0),
    ("0Gi", 0, 0),
    ("0G", 0, 0),
    ("0Ti", 0, 0),
    ("0T", 0, 0),
    ("1", 1, 1000),
    ("1Ki", KI, KI * 1000),
    ("8Ki", 8 * KI, 8 * KI * 1000),
    ("7Mi", 7 * MI, 7 * MI * 1000),
    ("6Gi", 6 * GI, 6 * GI * 1000),
    ("5Ti", 5 << 40, (5 << 40) * 1000),
    ("4Pi", 4 << 50, (4 << 50) * 1000),
    ("3Ei", 3 << 60, INT64_MAX),
    ("100Ti", 100 << 40, (100 << 40) * 1000),
    ("5n", 1, 1),
    ("4u", 1, 1),
    ("3m", 1, 3),
    ("9", 9, 9000),
    ("8k", 8000, 8_000_000),
    ("50k", 50_000, 50_000_000),
    ("7M", 7_000_000, 7_000_000_000),
    ("6G", 6 * 10**9, 6 * 10**12),
    ("5T", 5 * 10**12, 5 * 10**15),
    ("2P", 2 * 10**15, 2 * 10**18),
    ("1E", 10**18, INT64_MAX),
    ("1E-3", 1, 1),
    ("1e3", 1000, 1_000_000),
    ("1E6", 10**6, 10**9),
    ("1e9", 10**9, 10**12),
    ("1E18", 10**18, INT64_MAX),
    ("100.035k", 100_035, 100_035_000),
    ("0.001", 1, 1),
    ("0.0005k", 1, 500),
    ("0.5", 1, 500),
    ("0.5e0", 1, 500),
    ("0.5e-1", 1, 50),
    ("0.5e-2", 1, 5),
    ("10.035M", 10_035_000, 10_035_000_000),
    ("1.2e3", 1200, 1_200_000),
    ("1.3E+6", 1_300_000, 1_300_000_000),
    ("9.01", 10, 9010),
    ("8.1k", 8100, 8_100_000),
    ("2.5P", 25 * 10**14, 25 * 10**17),
    ("1.01E", 101 * 10**16, INT64_MAX),
    ("3.001n", 1, 1),
    ("0.0000000001", 1, 1),
    ("0.00000012345", 1, 1),
    ("9Ei", INT64_MAX, INT64_MAX),  # saturates like the API's maxAllowed
    ("9223372036854775807Ki", INT64_MAX, INT64_MAX),
    ("100.035Ki", 102_436, 102_435_840),
    ("0.5Mi", MI // 2, MI // 2 * 1000),
    ("0.05Gi", 53_687_092, 53_687_091_200),
    (".001", 1, 1),
    (".0001k", 1, 100),
    ("1.", 1, 1000),
    ("1.G", 10**9, 10**12),
    ("100m", 1, 100),
    ("1.5", 2, 1500),
    ("0.1m", 1, 1),
    ("+2", 2, 2000),
]


@pytest.mark.parametrize(("text", "value", "milli"), QUANTITIES)
def test_quantity_value_and_milli_value(text: str, value: int, milli: int) -> None:
    assert canonical("memory", text) == value
    assert canonical("cpu", text) == milli


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1.1.M",
        "1+1.0M",
        "0.1mi",
        "0.1am",
        "aoeu",
        ".5i",
        "1i",
        "-3.01i",
        "-3.01e-",
        " 1",
        "1 ",
        "1e",
        "Mi",
        "1 Mi",
        "1KI",
        "1mi",
        "1\n",
    ],
)
def test_invalid_quantities(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("value", "milli"),
    [(1, 1000), (0.5, 500), (2.0001, 2001), (0, 0), (10**6, 10**9)],
)
def test_numbers_from_yaml(value: float, milli: int) -> None:
    assert canonical("cpu", value) == milli


@pytest.mark.parametrize("value", [True, False, float("inf"), float("nan"), float("-inf")])
def test_non_quantity_numbers_are_rejected(value: float) -> None:
    with pytest.raises(QuantityError):
        canonical("cpu", value)


def test_exact_decimal_and_list() -> None:
    assert parse_quantity("1.5Gi") == 1610612736
    assert parse_quantity("100m") == Decimal("0.1")
    assert parse_quantity("1e-3") == Decimal("0.001")
    assert canonical_list({"cpu": "250m", "memory": "64Mi", "example.com/gpu": "2"}) == {
        "cpu": 250,
        "memory": 64 * MI,
        "example.com/gpu": 2,
    }
    assert canonical_list(None) == {}


# ---- pod requests -------------------------------------------------------------------------------------


def c(requests: Mapping[str, int], name: str = "c", sidecar: bool = False) -> Container:
    return Container(name, requests=dict(requests), restart_policy="Always" if sidecar else None)


def make(
    containers: list[Container],
    init: list[Container] | None = None,
    overhead: Mapping[str, int] | None = None,
    pod_level: Mapping[str, int] | None = None,
) -> Pod:
    return Pod(
        "p",
        containers=tuple(containers),
        init_containers=tuple(init or []),
        overhead=dict(overhead or {}),
        pod_requests=dict(pod_level) if pod_level is not None else None,
    )


CPU = "cpu"
MEM = "memory"


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(make([c({CPU: 1000})], [c({CPU: 4000})]), {CPU: 4000}, id="larger init container"),
        pytest.param(
            make([c({CPU: 2000}), c({CPU: 3000})], [c({CPU: 2000})]), {CPU: 5000}, id="larger containers"
        ),
        pytest.param(
            make([c({CPU: 2000}), c({CPU: 3000})], [c({CPU: 2000})], overhead={CPU: 1000, MEM: GI}),
            {CPU: 6000, MEM: GI},
            id="pod overhead included",
        ),
        pytest.param(
            make([c({CPU: 1000})], [c({CPU: 1000}, sidecar=True)]),
            {CPU: 2000},
            id="restartable init container",
        ),
        pytest.param(
            make(
                [c({CPU: 1000})],
                [
                    c({CPU: 5000}),
                    c({CPU: 1000}, sidecar=True),
                    c({CPU: 2000}, sidecar=True),
                    c({CPU: 3000}, sidecar=True),
                ],
            ),
            {CPU: 7000},
            id="multiple restartable init containers",
        ),
        pytest.param(
            make(
                [c({CPU: 1000})],
                [
                    c({CPU: 5000}),
                    c({CPU: 1000}, sidecar=True),
                    c({CPU: 2000}, sidecar=True),
                    c({CPU: 5000}),
                    c({CPU: 3000}, sidecar=True),
                ],
            ),
            {CPU: 8000},
            id="multiple restartable and regular init containers",
        ),
        pytest.param(
            make([c({CPU: 100_000})], [c({CPU: 10_000}, sidecar=True), c({CPU: 200_000})]),
            {CPU: 210_000},
            id="restartable-init, init and regular",
        ),
        pytest.param(make([]), {}, id="nil"),
        pytest.param(make([c({})]), {}, id="requestless container"),
        # TestPodLevelResourceRequests
        pytest.param(make([], pod_level={MEM: 2 * MI}), {MEM: 2 * MI}, id="pod level memory"),
        pytest.param(
            make([c({CPU: 2})], pod_level={MEM: 2 * MI}),
            {MEM: 2 * MI, CPU: 2},
            id="pod level memory and container cpu",
        ),
        pytest.param(
            make([c({"storage": 3 * MI})], pod_level={"storage": 2 * MI}),
            {"storage": 3 * MI},
            id="unsupported pod level resource at both levels",
        ),
        pytest.param(
            make([c({MEM: 3 * MI})], pod_level={"storage": 2 * MI}),
            {MEM: 3 * MI},
            id="unsupported pod level resource only",
        ),
        pytest.param(
            make([c({MEM: 3 * MI, CPU: 2})], pod_level={MEM: 6 * MI, CPU: 8}),
            {MEM: 6 * MI, CPU: 8},
            id="both levels",
        ),
        pytest.param(
            make([c({MEM: 3 * MI, CPU: 2})], [c({MEM: 5 * MI, CPU: 4})]),
            {MEM: 5 * MI, CPU: 4},
            id="init container",
        ),
        pytest.param(
            make([c({MEM: 3 * MI, CPU: 2})], [c({MEM: 5 * MI, CPU: 4}, sidecar=True)]),
            {MEM: 8 * MI, CPU: 6},
            id="sidecar",
        ),
        pytest.param(
            make(
                [c({MEM: 3 * MI, CPU: 2})], [c({MEM: 5 * MI, CPU: 4}, sidecar=True), c({MEM: 6 * MI, CPU: 8})]
            ),
            {MEM: 11 * MI, CPU: 12},
            id="init and sidecar",
        ),
        pytest.param(
            make(
                [c({MEM: 3 * MI, CPU: 2})],
                [c({MEM: 5 * MI, CPU: 4}, sidecar=True), c({MEM: 6 * MI, CPU: 8})],
                pod_level={MEM: 15 * MI, CPU: 18},
            ),
            {MEM: 15 * MI, CPU: 18},
            id="pod level wins over init and sidecar",
        ),
        pytest.param(
            make([], pod_level={MEM: 10 * MI, "hugepages-2Mi": 2 * MI}),
            {MEM: 10 * MI, "hugepages-2Mi": 2 * MI},
            id="pod level hugepages",
        ),
        pytest.param(
            make([c({"hugepages-2Mi": 6 * MI})], pod_level={CPU: 1000, "hugepages-2Mi": 10 * MI}),
            {CPU: 1000, "hugepages-2Mi": 10 * MI},
            id="pod level hugepages override containers",
        ),
        pytest.param(
            make([c({CPU: 100})], pod_level={CPU: 500}, overhead={CPU: 10, MEM: 5}),
            {CPU: 510, MEM: 5},
            id="overhead on top of pod level",
        ),
        pytest.param(
            make([c({CPU: 100, "example.com/gpu": 1})], [c({"example.com/gpu": 2})]),
            {CPU: 100, "example.com/gpu": 2},
            id="extended resources follow the same rules",
        ),
    ],
)
def test_pod_requests(pod: Pod, want: dict[str, int]) -> None:
    assert pod_requests(pod) == want
    assert pod.requests == want  # the cached property


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            make([c({})]), (DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST), id="requestless container"
        ),
        pytest.param(make([c({CPU: 500, MEM: 500 * MI})]), (500, 500 * MI), id="1X container with requests"),
        pytest.param(
            make([c({CPU: 500, MEM: 500 * MI}), c({CPU: 700, MEM: 800 * MI})]),
            (1200, 1300 * MI),
            id="2X containers",
        ),
        pytest.param(
            make(
                [c({CPU: 500, MEM: 500 * MI})],
                [c({CPU: 500, MEM: 500 * MI})],
                pod_level={CPU: 1200, MEM: 1200 * MI},
            ),
            (1200, 1200 * MI),
            id="init container with pod-level requests",
        ),
        pytest.param(
            make(
                [c({CPU: 500, MEM: 500 * MI})],
                [c({CPU: 500, MEM: 500 * MI}, sidecar=True)],
                pod_level={CPU: 1200, MEM: 1200 * MI},
            ),
            (1200, 1200 * MI),
            id="sidecar with pod-level requests",
        ),
        pytest.param(
            make([c({})], [c({})], pod_level={MEM: 1200 * MI}),
            (DEFAULT_MILLI_CPU_REQUEST, 1200 * MI),
            id="pod-level memory",
        ),
        pytest.param(
            make([c({})], [c({})], pod_level={CPU: 500}), (500, DEFAULT_MEMORY_REQUEST), id="pod-level cpu"
        ),
        pytest.param(
            make(
                [c({"ephemeral-storage": 800 * MI})],
                [c({"ephemeral-storage": 500 * MI})],
                pod_level={CPU: 500},
            ),
            (500, DEFAULT_MEMORY_REQUEST),
            id="unsupported container resources and pod-level cpu",
        ),
        # Defaults apply per container, to a missing key only: an explicit zero stays zero.
        pytest.param(make([c({CPU: 0, MEM: 0})]), (0, 0), id="explicit zero requests"),
        pytest.param(
            make([c({CPU: 300}), c({MEM: MI})]),
            (300 + DEFAULT_MILLI_CPU_REQUEST, MI + DEFAULT_MEMORY_REQUEST),
            id="per container defaults",
        ),
        pytest.param(
            make([c({CPU: 300})], [c({CPU: 1000})]),
            (1000, DEFAULT_MEMORY_REQUEST),
            id="init containers get defaults too",
        ),
        pytest.param(
            make([c({})], overhead={CPU: 50, MEM: 10}),
            (DEFAULT_MILLI_CPU_REQUEST + 50, DEFAULT_MEMORY_REQUEST + 10),
            id="overhead counts in non-zero requests",
        ),
        # A key present with zero (here from an init container) is not "missing" for pod-level defaults.
        pytest.param(
            make([c({})], [c({CPU: 0})], pod_level={MEM: MI}), (0, MI), id="pod level: zero cpu key kept"
        ),
        pytest.param(
            make([], overhead={CPU: 0}, pod_level={MEM: MI}), (0, MI), id="pod level: zero overhead key kept"
        ),
    ],
)
def test_non_zero_requests(pod: Pod, want: tuple[int, int]) -> None:
    assert pod_non_zero_requests(pod) == want
    assert pod.non_zero_requests == want


def test_requests_key_presence_matches_max_semantics() -> None:
    # maxResourceList sets a key it has not seen even when the value is zero.
    assert pod_requests(make([c({})], [c({CPU: 0})])) == {CPU: 0}
    assert pod_requests(make([c({CPU: 0})])) == {CPU: 0}


def test_replace_recomputes_cached_requests() -> None:
    pod = make([c({CPU: 100})])
    assert pod.requests == {CPU: 100}
    assert pod.non_zero_requests == (100, DEFAULT_MEMORY_REQUEST)
    bigger = dataclasses.replace(pod, containers=(c({CPU: 700, MEM: MI}),))
    assert bigger.requests == {CPU: 700, MEM: MI}
    assert bigger.non_zero_requests == (700, MI)
    moved = dataclasses.replace(pod, node_name="n1")
    assert moved.requests == {CPU: 100}
