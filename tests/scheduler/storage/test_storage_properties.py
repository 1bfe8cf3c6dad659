"""Property: whatever the PVs, claims and pods, no PV is promised to two pods, every bound pod
sits on the node of its PVs, and pods with missing claims are never bound."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.scheduler.plugins._build_storage import GI, HOSTNAME, WAIT_SC, make_pvc
from tests.scheduler.storage.test_storage_engine import local_pv, setup, with_claims

NODES = ("n0", "n1")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pv_nodes=st.lists(st.sampled_from(NODES), max_size=4),
    pods=st.lists(st.lists(st.integers(0, 5), min_size=1, max_size=2, unique=True), min_size=1, max_size=5),
    missing=st.integers(0, 5),
)
def test_no_pv_is_given_twice(pv_nodes: list[str], pods: list[list[int]], missing: int) -> None:
    pvs = [local_pv(f"pv-{i}", node) for i, node in enumerate(pv_nodes)]
    claims = [make_pvc(f"c{i}", WAIT_SC.name, request=GI, version="1") for i in range(6) if i != missing]
    engine, hooks, binder, api, storage = setup(*pvs, *claims, args={"bindTimeoutSeconds": 1})
    # Each claim belongs to the first pod naming it; later pods keep the rest of their list.
    claims_of: dict[str, list[str]] = {}
    used: set[int] = set()
    for j, wanted in enumerate(pods):
        mine = [k for k in wanted if k not in used]
        used.update(mine)
        if mine:
            claims_of[f"p{j}"] = [f"c{k}" for k in mine]
            engine.pod_added(with_claims(f"p{j}", *claims_of[f"p{j}"]))
    api.gate = asyncio.Event()

    async def go() -> None:
        assert api.gate is not None
        while engine.schedule_next():
            pass
        api.gate.set()
        await engine.scheduler.drain_binding()

    asyncio.run(go())
    # Reserve's assumptions keep a second pod off a PV already promised: no PreBind ever
    # waits for a binding that another pod's write took away.
    assert not [f for f in hooks.failures if "binding volumes" in f[2]]
    owners = [pv.claim_ref.name for pv in storage.list_pvs() if pv.claim_ref is not None]
    assert len(owners) == len(set(owners)), "a claim got two PVs"
    for name, node in binder.bound:
        assert f"c{missing}" not in claims_of[name], "a pod with a missing claim was bound"
        for claim_name in claims_of[name]:
            claim = storage.get_pvc("default", claim_name)
            assert claim is not None
            assert claim.fully_bound
            pv = storage.get_pv(claim.volume_name)
            assert pv is not None
            assert pv.claim_ref is not None
            assert pv.claim_ref.name == claim_name
            assert pv.node_affinity is not None
            requirement = pv.node_affinity[0].match_expressions[0]
            assert (requirement.key, requirement.values) == (HOSTNAME, (node,)), "PV on another node"
    # A pod is bound exactly when its claims all found PVs on one node (no provisioner here).
    assert len(binder.bound) <= len(pv_nodes)
