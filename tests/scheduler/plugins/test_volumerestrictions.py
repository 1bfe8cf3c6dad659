"""VolumeRestrictions: ports of volume_restrictions_test.go (disk conflicts per in-tree source,
ReadWriteOncePod access-mode conflicts) plus the PreFilter extensions preemption relies on."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from policy_scheduler.scheduler.framework.cycle_state import CycleState
from policy_scheduler.scheduler.framework.interfaces import Handle
from policy_scheduler.scheduler.framework.status import SKIP, SUCCESS, Code, Status
from policy_scheduler.scheduler.model import Node, Pod
from policy_scheduler.scheduler.nodetable import NodeTable
from policy_scheduler.scheduler.plugins.volumerestrictions import VolumeRestrictions
from policy_scheduler.scheduler.storage.lister import StorageObjects
from policy_scheduler.scheduler.storage.types import READ_WRITE_ONCE_POD, PersistentVolumeClaim
from policy_scheduler.scheduler.storage.volumes import AWS_EBS, GCE_PD, ISCSI, PVC, RBD, Volume

DISK = Status(Code.UNSCHEDULABLE, ("node(s) had no available disk",))
RWOP = Status(
    Code.UNSCHEDULABLE,
    (
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode "
        "already in-use by another pod",
    ),
)
_n = 0


def pod(*volumes: Volume, node: str = "") -> Pod:
    global _n
    _n += 1
    return Pod(f"p{_n}", uid=f"u{_n}", volumes=volumes, node_name=node)


def claim(name: str) -> Volume:
    return Volume(name, PVC, claim_name=name)


def plugin_with(existing: list[Pod], pvcs: Sequence[PersistentVolumeClaim] = ()) -> VolumeRestrictions:
    table = NodeTable()
    table.set_node(Node("node-1"))
    for p in existing:
        table.add_pod(p, 0)
    return VolumeRestrictions(Handle(table=table, storage=StorageObjects(list(pvcs))), {})


def run(plugin: VolumeRestrictions, incoming: Pod) -> tuple[Status, Status | None]:
    state = CycleState()
    _, pre = plugin.pre_filter(state, incoming)
    if not pre.is_success:
        return pre, None
    return pre, plugin.filter(state, incoming, np.array([0])).status_of(0)


DISKS = {
    GCE_PD: (Volume("a", GCE_PD, source_id="foo"), Volume("b", GCE_PD, source_id="bar")),
    AWS_EBS: (Volume("a", AWS_EBS, source_id="foo"), Volume("b", AWS_EBS, source_id="bar")),
    RBD: (
        Volume("a", RBD, source_id="foo/bar", rbd_monitors=("a", "b")),
        Volume("b", RBD, source_id="foo/bar", rbd_monitors=("c", "d")),
    ),
    ISCSI: (
        Volume("a", ISCSI, source_id="iqn.2014-12.server:storage.target01"),
        Volume("b", ISCSI, source_id="iqn.2014-12.server:storage.target02"),
    ),
}


@pytest.mark.parametrize("kind", list(DISKS))
def test_disk_conflicts(kind: str) -> None:
    state1, state2 = DISKS[kind]
    assert run(plugin_with([]), pod()) == (SKIP, None)  # nothing
    assert run(plugin_with([pod(state1)]), pod()) == (SKIP, None)  # one state
    assert run(plugin_with([pod(state1)]), pod(state1)) == (SUCCESS, DISK)  # same state
    assert run(plugin_with([pod(state1)]), pod(state2)) == (SUCCESS, SUCCESS)  # different state
    assert run(plugin_with([]), pod(Volume("x"))) == (SKIP, None)  # no restrictions


def test_read_only_disks_do_not_conflict_except_ebs() -> None:
    ro = Volume("a", GCE_PD, source_id="foo", read_only=True)
    assert run(plugin_with([pod(ro)]), pod(ro))[1] == SUCCESS
    ebs = Volume("a", AWS_EBS, source_id="foo", read_only=True)
    assert run(plugin_with([pod(ebs)]), pod(ebs))[1] == DISK


RWOP_1 = PersistentVolumeClaim("claim-with-rwop-1", access_modes=(READ_WRITE_ONCE_POD,))
RWOP_2 = PersistentVolumeClaim("claim-with-rwop-2", access_modes=(READ_WRITE_ONCE_POD,))
RWX = PersistentVolumeClaim("claim-with-rwx", access_modes=("ReadWriteMany",))


def test_access_mode_conflicts() -> None:
    with_one = pod(claim("claim-with-rwop-1"), node="node-1")
    with_two = pod(claim("claim-with-rwop-1"), claim("claim-with-rwop-2"), node="node-1")
    rwx = pod(claim("claim-with-rwx"), node="node-1")
    assert run(plugin_with([]), pod()) == (SKIP, None)
    assert run(plugin_with([]), pod(claim("claim-with-rwop-1"))) == (
        Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ('persistentvolumeclaim "claim-with-rwop-1" not found',)),
        None,
    )
    assert run(plugin_with([rwx], [RWOP_1, RWX]), pod(claim("claim-with-rwop-1"))) == (SKIP, None)
    assert run(plugin_with([with_one, rwx], [RWOP_1, RWX]), pod(claim("claim-with-rwop-1"))) == (
        SUCCESS,
        RWOP,
    )
    two = pod(claim("claim-with-rwop-1"), claim("claim-with-rwop-2"))
    assert run(plugin_with([with_two, rwx], [RWOP_1, RWOP_2, RWX]), two) == (SUCCESS, RWOP)


def test_preemption_can_free_a_read_write_once_pod_claim() -> None:
    holder = pod(claim("claim-with-rwop-1"), node="node-1")
    plugin = plugin_with([holder], [RWOP_1])
    incoming = pod(claim("claim-with-rwop-1"))
    state = CycleState()
    assert plugin.pre_filter(state, incoming)[1] == SUCCESS
    rows = np.array([0])
    assert not plugin.filter(state, incoming, rows).passed[0]
    dry_run = state.clone()
    assert plugin.remove_pod(dry_run, incoming, holder, 0) == SUCCESS
    assert plugin.filter(dry_run, incoming, rows).passed[0]
    assert not plugin.filter(state, incoming, rows).passed[0], "the clone must not share the count"
    assert plugin.add_pod(dry_run, incoming, holder, 0) == SUCCESS
    assert not plugin.filter(dry_run, incoming, rows).passed[0]


def test_removing_the_holder_from_the_table_frees_the_claim() -> None:
    holder = pod(claim("claim-with-rwop-1"), node="node-1")
    plugin = plugin_with([holder], [RWOP_1])
    plugin.table.remove_pod(holder, 0)
    assert run(plugin, pod(claim("claim-with-rwop-1"))) == (SKIP, None)


def test_usage_index_survives_replacement_and_row_moves() -> None:
    from policy_scheduler.scheduler.storage.usage import VolumeUsage

    table = NodeTable()
    for name in ("a", "b"):
        table.set_node(Node(name))
    holder = pod(claim("claim-with-rwop-1"), node="b")
    table.add_pod(holder, 1)
    usage = VolumeUsage.of(table)
    table.add_pod(holder, 1)  # re-added without a removal (an update)
    assert usage.pvc_rows == {"default/claim-with-rwop-1": {1: 1}}
    table.remove_node("a")  # node b moves to row 0
    assert usage.pvc_rows == {"default/claim-with-rwop-1": {0: 1}}
    table.remove_node("b")
    assert usage.pvc_rows == {}
    assert not usage.is_pvc_used("default/claim-with-rwop-1")
