"""Pure parts of the end-to-end benchmark: throughput samples, report ratios, the PNG writer."""

from __future__ import annotations

import struct
import zlib

from policy_scheduler.bench_e2e.png import bar_chart, encode_png
from policy_scheduler.bench_e2e.rates import one_second_samples, percentile, slice_rates, throughput
from policy_scheduler.bench_e2e.report import markdown, rows
from policy_scheduler.bench_e2e.runner import RunResult, summarize


def test_samples_are_full_seconds_from_the_first_bind() -> None:
    # 3 binds in second 0, 5 in second 1, 2 in second 2, and a partial third second.
    times = [10.0, 10.2, 10.9, *(11.0 + i / 10 for i in range(5)), 12.1, 12.5, 13.2]
    assert one_second_samples(times) == [3, 5, 2]
    rates = throughput(times)
    assert rates.average == 3.5  # the first sample is left out
    assert (rates.p50, rates.p90, rates.p99) == (2, 5, 5)


def test_short_run_falls_back_to_binds_over_the_span() -> None:
    assert throughput([0.0, 0.25, 0.5]).average == 4.0
    assert throughput([7.0]).average == 1.0


def test_percentile_nearest_rank() -> None:
    assert percentile([], 50) == 0.0
    assert percentile(list(range(1, 101)), 99) == 99
    assert percentile([4, 1, 3, 2], 50) == 2


def _result(contender: str, rate: float) -> RunResult:
    return RunResult("SchedulingBasic", 100, contender, 10, bound=10, pods_per_second=rate)


def test_rows_carry_ratios_to_kube_scheduler_and_the_ceiling() -> None:
    out = rows([_result("noop", 400.0), _result("kube-scheduler", 200.0), _result("policy-scheduler", 100.0)])
    policy = out[2]
    assert (policy["vs_kube_scheduler"], policy["vs_ceiling"]) == (0.5, 0.25)
    lonely = rows([_result("policy-scheduler", 100.0)])[0]
    assert (lonely["vs_kube_scheduler"], lonely["vs_ceiling"]) == (None, None)
    table = markdown({"results": out})
    assert "| SchedulingBasic | 100 | policy-scheduler | 10 | 10 | 100.0 |" in table


def test_table_shows_the_control_plane_cost_and_the_machine_load() -> None:
    result = _result("policy-scheduler", 100.0)
    result.cluster_cpu_seconds = {"kube-apiserver": 0.03, "etcd": 0.01}
    result.cluster_cpu_ms_per_pod = 4.0
    result.machine_busy = 0.973
    result.machine_busy_before = 0.41
    table = markdown({"results": rows([result])})
    header, _, row = table.splitlines()[:3]
    cells = dict(
        zip((h.strip() for h in header.split("|")), (c.strip() for c in row.split("|")), strict=True)
    )
    assert (cells["control plane ms/pod over background"], cells["machine busy % before, during"]) == (
        "4.0",
        "41, 97",
    )


def test_png_is_a_valid_image_with_bars_in_their_colours() -> None:
    rows_, width = bar_chart([[1.0, 0.5]], [(255, 0, 0), (0, 0, 255)], height=100)
    data = encode_png(rows_, width)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    _length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (width, 100)
    idat_at = data.index(b"IDAT")
    (idat_len,) = struct.unpack(">I", data[idat_at - 4 : idat_at])
    raw = zlib.decompress(data[idat_at + 4 : idat_at + 4 + idat_len])
    stride = 1 + 3 * width
    assert len(raw) == 100 * stride

    def pixel(x: int, y: int) -> tuple[int, ...]:
        return tuple(raw[y * stride + 1 + 3 * x : y * stride + 4 + 3 * x])

    assert pixel(15, 20) == (255, 0, 0)  # the full-height bar reaches near the top
    assert pixel(29, 20) == (255, 255, 255)  # the half bar does not
    assert pixel(29, 80) == (0, 0, 255)


def test_control_plane_cost_per_pod_is_what_the_run_added_over_the_background() -> None:
    result = RunResult("SchedulingBasic", 5000, "noop", 4)
    # 10 s of run; the control plane kept 1.5 cores busy before it started (lease renewals)
    result.cluster_cpu_seconds = {"kube-apiserver": 12.0, "etcd": 3.0, "kwok": 4.0}
    result.cluster_background_cores = 1.5
    result.window_seconds = 10.0
    summarize(result, [100.0, 101.0, 102.0, 103.0], started=99.0)
    assert result.cluster_cpu_ms_per_pod == 1000.0  # (19 - 15) CPU-s over 4 pods
    # a background that the run squeezed out never makes the cost negative
    result.cluster_background_cores = 3.0
    summarize(result, [100.0, 101.0, 102.0, 103.0], started=99.0)
    assert result.cluster_cpu_ms_per_pod == 0.0


def test_slice_rates_show_a_cost_per_pod_that_grows() -> None:
    # 4 binds per second for the first 8 binds (the first starts the clock), then 2 per second.
    times = [i * 0.25 for i in range(8)] + [1.75 + 0.5 * i for i in range(1, 5)]
    assert slice_rates(times, 4) == [3 / 0.75, 4 / 1.0, 4 / 2.0]
    assert slice_rates([5.0], 4) == []


def test_table_lists_slice_rates_for_runs_of_several_slices() -> None:
    one, many = _result("kube-scheduler", 100.0), _result("policy-scheduler", 100.0)
    one.slice_rates = [100.0]
    many.slice_rates = [410.4, 399.6, 402.0]
    table = markdown({"results": rows([one, many])})
    assert "| SchedulingBasic | 100 | policy-scheduler | 410, 400, 402 |" in table
    assert "kube-scheduler | 100 |" not in table.split("pods/s per 10,000-pod slice")[1]
