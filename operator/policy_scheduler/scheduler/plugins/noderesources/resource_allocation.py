"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation.

Ports resource_allocation.go, least_allocated.go, most_allocated.go,
requested_to_capacity_ratio.go and helper/shape_score.go. Scorers take `requested` and
`allocatable` as int64 [resource, row] matrices and return one int64 score per row; a
resource whose allocatable is 0 on a row is left out of that row's weighted mean, as upstream.
Integer arithmetic follows Go's int64 semantics (division truncates toward zero).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from policy_scheduler.scheduler.dra.extended import served_by_dra
from policy_scheduler.scheduler.field_errors import Problem, raise_problems
from policy_scheduler.scheduler.framework.interfaces import MAX_NODE_SCORE, Handle
from policy_scheduler.scheduler.model import Pod
from policy_scheduler.scheduler.nodetable import IntArray, NodeTable, Rows
from policy_scheduler.scheduler.resource_names import CPU, EPHEMERAL_STORAGE, MEMORY, is_scalar_resource_name
from policy_scheduler.scheduler.resources import pod_container_requests
from policy_scheduler.scheduler.versioning.gates import DRA_EXTENDED_RESOURCE

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10  # config.MaxCustomPriorityScore: shape scores are 0..10

FloatArray = npt.NDArray[np.float64]
Scorer = Callable[[IntArray, IntArray], IntArray]


@dataclass(frozen=True, slots=True)
class ResourceSpec:
    name: str
    weight: int = 1


DEFAULT_RESOURCES = (ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1))


def parse_resources(raw: Any, field: str) -> tuple[ResourceSpec, ...]:
    """v1 defaulting of a resources list: empty → cpu and memory; weight 0 or absent → 1."""
    if not raw:
        return DEFAULT_RESOURCES
    specs = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping) or not isinstance(item.get("name"), str):
            raise ValueError(f"{field}[{i}]: expected an object with a string name")
        weight = item.get("weight") or 1
        if not isinstance(weight, int) or isinstance(weight, bool):
            raise ValueError(f"{field}[{i}].weight: must be an integer")
        specs.append(ResourceSpec(item["name"], weight))
    return tuple(specs)


def dra_served_requests(handle: Handle, pod: Pod) -> frozenset[str]:
    """With DRAExtendedResource, the pod's requested scalar resources a DeviceClass serves."""
    cache = handle.services.dra.store.extended_resources
    if not cache or not handle.features.enabled(DRA_EXTENDED_RESOURCE):
        return frozenset()
    scalars = {n: q for n, q in pod.requests.items() if is_scalar_resource_name(n)}
    return served_by_dra(scalars, cache)


# ---- Go arithmetic ------------------------------------------------------------------------------


def go_div(a: IntArray | int, b: IntArray | int) -> IntArray:
    """int64 division truncating toward zero (numpy's // floors). b must be non-zero."""
    a_arr = np.asarray(a, dtype=np.int64)
    b_arr = np.asarray(b, dtype=np.int64)
    quotient = np.abs(a_arr) // np.abs(b_arr)
    return np.where((a_arr < 0) != (b_arr < 0), -quotient, quotient)


def go_round(x: FloatArray) -> IntArray:
    """math.Round (half away from zero), then int64 conversion."""
    whole = np.trunc(x)
    bump = np.where(np.abs(x - whole) >= 0.5, np.sign(x), 0.0)
    return (whole + bump).astype(np.int64)


# ---- pod and node quantities (resourceAllocationScorer) ----------------------------------------


def pod_resource_requests(
    pod: Pod, resources: Sequence[ResourceSpec], use_requested: bool, *, pod_level: bool = True
) -> list[int]:
    """calculatePodResourceRequestList: cpu/memory use the 100m/200Mi defaults unless use_requested.

    `pod_level=False` is SkipPodLevelResources, which v1.35.4's NodeResourcesFit scorer has
    in effect (its scorer never gets the PodLevelResources gate)."""
    if not pod_level:
        reqs = pod_container_requests(pod, non_zero=not use_requested)
        return [reqs.get(spec.name, 0) for spec in resources]
    cpu, memory = (pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0))
    if not use_requested:
        cpu, memory = pod.non_zero_requests
    out = []
    for spec in resources:
        if spec.name == CPU:
            out.append(cpu)
        elif spec.name == MEMORY:
            out.append(memory)
        else:
            out.append(pod.requests.get(spec.name, 0))
    return out


# (resource, rows) -> (devices, allocated) per row, None when no class serves the resource.
DraColumns = Callable[[str, Rows], tuple[IntArray, IntArray] | None]


def resource_column(table: NodeTable, matrix: IntArray, name: str, rows: Rows) -> IntArray:
    """One resource's row of `table.allocatable` / `table.requested` at `rows`; 0 if unknown."""
    index = table.resource_index.get(name)
    if index is None:
        return np.zeros(len(rows), dtype=np.int64)
    column: IntArray = matrix[index, rows]
    return column


def requested_and_allocatable(
    table: NodeTable,
    rows: Rows,
    resources: Sequence[ResourceSpec],
    pod_requests: Sequence[int],
    use_requested: bool,
    dra_devices: DraColumns | None = None,
) -> tuple[IntArray, IntArray]:
    """calculateResourceAllocatableRequest for every resource and row: (requested, allocatable),
    both [resource, row]; (0, 0) marks a resource left out of that row's score. `dra_devices`
    (DRAExtendedResource) gives a resource a DeviceClass serves its (devices, allocated) on the
    rows: where the node does not list the resource, those count instead."""
    index = table.resource_index
    if all(spec.name in (CPU, MEMORY) and spec.name in index for spec in resources):
        # cpu and memory only (the default): all rows of both matrices in one indexing each.
        alloc_rows = np.array([[index[spec.name]] for spec in resources], dtype=np.intp)
        if use_requested:
            used = table.requested[alloc_rows, rows]
        else:
            used = table.non_zero_requested[[[0 if spec.name == CPU else 1] for spec in resources], rows]
        allocatable_cm: IntArray = table.allocatable[alloc_rows, rows]
        added = used + np.asarray(pod_requests, dtype=np.int64)[:, None]
        requested_cm: IntArray = np.where(allocatable_cm != 0, added, 0)
        return requested_cm, allocatable_cm
    requested = np.zeros((len(resources), len(rows)), dtype=np.int64)
    allocatable = np.zeros((len(resources), len(rows)), dtype=np.int64)
    for i, (spec, pod_request) in enumerate(zip(resources, pod_requests, strict=True)):
        name = spec.name
        if name in (CPU, MEMORY):
            if use_requested:
                used = resource_column(table, table.requested, name, rows)
            else:
                used = table.non_zero_requested[0 if name == CPU else 1, rows]
        elif name == EPHEMERAL_STORAGE or is_scalar_resource_name(name):
            # A scalar resource the pod does not request is skipped; names that are neither
            # native nor scalar (e.g. "pods") are absent from NodeInfo's scalar map upstream.
            if pod_request == 0 and name != EPHEMERAL_STORAGE:
                continue
            used = resource_column(table, table.requested, name, rows)
        else:
            continue
        alloc = resource_column(table, table.allocatable, name, rows)
        if dra_devices is not None and name not in (CPU, MEMORY, EPHEMERAL_STORAGE):
            counted = dra_devices(name, rows)
            if counted is not None:
                via_dra = (alloc == 0) & (counted[0] > 0)
                alloc = np.where(via_dra, counted[0], alloc)
                used = np.where(via_dra, counted[1], used)
        present = alloc != 0
        allocatable[i] = alloc
        requested[i] = np.where(present, used + pod_request, 0)
    return requested, allocatable


# ---- strategies ----------------------------------------------------------------------------------


def _weighted_mean(
    scores: IntArray, counted: npt.NDArray[np.bool_], weights: IntArray
) -> tuple[IntArray, IntArray]:
    weight_col = weights[:, None]
    node_score = np.where(counted, scores * weight_col, 0).sum(axis=0, dtype=np.int64)
    weight_sum = np.where(counted, weight_col, 0).sum(axis=0, dtype=np.int64)
    return node_score, weight_sum


def _integer_mean(node_score: IntArray, weight_sum: IntArray) -> IntArray:
    return np.where(weight_sum == 0, 0, go_div(node_score, np.where(weight_sum == 0, 1, weight_sum)))


def least_allocated_general(requested: IntArray, allocatable: IntArray, weights: IntArray) -> IntArray:
    """leastResourceScorer over rows, any row may leave resources out (allocatable 0)."""
    present = allocatable != 0
    capacity = np.where(present, allocatable, 1)
    per_resource = np.where(
        requested > allocatable, 0, go_div((capacity - requested) * MAX_NODE_SCORE, capacity)
    )
    return _integer_mean(*_weighted_mean(per_resource, present, weights))


def least_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = np.array([r.weight for r in resources], dtype=np.int64)
    weight_sum = int(weights.sum())

    def score(requested: IntArray, allocatable: IntArray) -> IntArray:
        if weight_sum == 0 or not (allocatable != 0).all():
            return least_allocated_general(requested, allocatable, weights)
        # Every row counts every resource (the usual case): one weighted sum, and with all
        # quantities non-negative Go's truncating division is numpy's floor division.
        free = (allocatable - requested) * MAX_NODE_SCORE // allocatable
        per_resource = np.where(requested > allocatable, 0, free)
        node_score: IntArray = (per_resource * weights[:, None]).sum(axis=0) // weight_sum
        return node_score

    return score


def most_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = np.array([r.weight for r in resources], dtype=np.int64)

    def score(requested: IntArray, allocatable: IntArray) -> IntArray:
        present = allocatable != 0
        capacity = np.where(present, allocatable, 1)
        # requested can exceed capacity because pods without requests count 100m/200Mi.
        used = np.minimum(requested, capacity)
        per_resource = go_div(used * MAX_NODE_SCORE, capacity)
        return _integer_mean(*_weighted_mean(per_resource, present, weights))

    return score


def broken_linear(shape: Sequence[tuple[int, int]], p: IntArray) -> IntArray:
    """helper.BuildBrokenLinearFunction over an array of utilizations; shape is (utilization, score)."""
    out = np.full(np.shape(p), shape[-1][1], dtype=np.int64)
    # Walk the points backwards so the first point with p <= utilization wins, as in the Go loop.
    for i in range(len(shape) - 1, -1, -1):
        utilization, point_score = shape[i]
        if i == 0:
            value: IntArray | int = point_score
        else:
            prev_u, prev_s = shape[i - 1]
            value = prev_s + go_div((point_score - prev_s) * (p - prev_u), utilization - prev_u)
        out = np.where(p <= utilization, value, out)
    return out


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[tuple[int, int]]
) -> Scorer:
    """buildRequestedToCapacityRatioScorerFunction; `shape` scores are used as given (already scaled)."""
    weights = np.array([r.weight for r in resources], dtype=np.int64)
    points = tuple(shape)

    def score(requested: IntArray, allocatable: IntArray) -> IntArray:
        present = allocatable != 0
        capacity = np.where(present, allocatable, 1)
        utilization = np.where(
            requested > capacity, MAX_UTILIZATION, go_div(requested * MAX_UTILIZATION, capacity)
        )
        per_resource = broken_linear(points, utilization)
        node_score, weight_sum = _weighted_mean(per_resource, present & (per_resource > 0), weights)
        safe_sum = np.where(weight_sum == 0, 1, weight_sum)
        mean = go_round(node_score.astype(np.float64) / safe_sum.astype(np.float64))
        return np.where(weight_sum == 0, 0, mean)

    return score


SHAPE_PATH = "scoringStrategy.requestedToCapacityRatio.shape"


def parse_shape(raw: Any, path: str = SHAPE_PATH) -> tuple[tuple[int, int], ...]:
    """The (utilization, score) points of a JSON shape, unvalidated and unscaled."""
    points: list[tuple[int, int]] = []
    for i, item in enumerate(raw or ()):
        if not isinstance(item, Mapping):
            raise ValueError(f"{path}[{i}]: expected an object")
        utilization, point_score = item.get("utilization", 0), item.get("score", 0)
        if not isinstance(utilization, int) or not isinstance(point_score, int):
            raise ValueError(f"{path}[{i}]: utilization and score must be integers")
        points.append((utilization, point_score))
    return tuple(points)


def shape_problems(points: Sequence[tuple[int, int]], path: str = SHAPE_PATH) -> list[Problem]:
    """validateFunctionShape (upstream reports the path as scoringStrategy.shape)."""
    if not points:
        return [Problem(path, None, "at least one point must be specified", kind="Required")]
    found: list[Problem] = []
    for i in range(1, len(points)):
        if points[i - 1][0] >= points[i][0]:
            found.append(
                Problem(f"{path}[{i}].utilization", points[i][0], "values must be sorted in increasing order")
            )
            break
    for i, (utilization, point_score) in enumerate(points):
        if not 0 <= utilization <= MAX_UTILIZATION:
            found.append(Problem(f"{path}[{i}].utilization", utilization, "not in valid range [0, 100]"))
        if not 0 <= point_score <= MAX_CUSTOM_PRIORITY_SCORE:
            found.append(Problem(f"{path}[{i}].score", point_score, "not in valid range [0, 10]"))
    return found


def scale_shape(points: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Scores 0..10 to the node score range 0..100."""
    return tuple((u, score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, score in points)


def scaled_shape(raw: Any) -> tuple[tuple[int, int], ...]:
    """Validate a JSON utilization shape and scale its scores to 0..100."""
    points = parse_shape(raw)
    raise_problems(shape_problems(points))
    return scale_shape(points)
