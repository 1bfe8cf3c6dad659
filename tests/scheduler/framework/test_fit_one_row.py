"""NodeResourcesFit's one-row path (preemption's dry runs) decides exactly as the batch path."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.model import Container, Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.noderesources.fit import NodeResourcesFit

GPU = "example.com/gpu"
requests = st.fixed_dictionaries(
    {},
    optional={"cpu": st.integers(0, 3000), "memory": st.integers(0, 4000), GPU: st.integers(0, 3)},
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    nodes=st.lists(
        st.fixed_dictionaries(
            {"cpu": st.integers(0, 3000), "memory": st.integers(0, 4000), "pods": st.integers(0, 3)},
            optional={GPU: st.integers(0, 2)},
        ),
        min_size=2,
        max_size=6,
    ),
    placed=st.lists(st.tuples(requests, st.integers(0, 5)), max_size=8),
    pod_requests=requests,
    ignore_gpu=st.booleans(),
)
def test_one_row_matches_batch(
    nodes: list[dict[str, int]],
    placed: list[tuple[dict[str, int], int]],
    pod_requests: dict[str, int],
    ignore_gpu: bool,
) -> None:
    table = NodeTable()
    for i, allocatable in enumerate(nodes):
        table.set_node(Node(f"n{i}", allocatable=allocatable))
    for j, (reqs, row) in enumerate(placed):
        table.add_pod(
            Pod(f"e{j}", uid=f"e{j}", containers=(Container("c", requests=reqs),)), row % len(nodes)
        )
    args = {"ignoredResources": [GPU]} if ignore_gpu else {}
    fit = NodeResourcesFit.from_profile(Handle(table), args)
    pod = Pod("p", uid="p", containers=(Container("c", requests=pod_requests),))
    state = CycleState()
    fit.pre_filter(state, pod)
    rows = np.arange(len(table), dtype=np.intp)
    batch = fit.filter(state, pod, rows)
    for row in rows.tolist():
        one = fit.filter(state, pod, np.asarray([row], dtype=np.intp))
        assert one.status_of(0) == batch.status_of(row)
