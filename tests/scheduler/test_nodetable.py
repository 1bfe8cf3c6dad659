"""NodeTable: columns, swap-remove, growth, interning, ports, images, listeners and zone order.

The order() cases are ported from backend/cache/node_tree_test.go (v1.35.4).
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import numpy as np
import pytest

from policy_scheduler.scheduler.model import (
    Container,
    ContainerImage,
    ContainerPort,
    Node,
    Pod,
    Taint,
)
from policy_scheduler.scheduler.nodetable import ABSENT, NodeTable, PodListener, zone_key
from tests.builders import make_node, make_pod

REGION = "topology.kubernetes.io/region"
ZONE = "topology.kubernetes.io/zone"
BETA_REGION = "failure-domain.beta.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
GPU = "example.com/gpu"


# ---- helpers -------------------------------------------------------------------------------------


def build(nodes: list[Node], pods: list[Pod]) -> NodeTable:
    table = NodeTable()
    for n in nodes:
        table.set_node(n)
    for p in pods:
        table.add_pod(p, table.row(p.node_name))
    return table


def row_view(table: NodeTable, row: int) -> dict[str, Any]:
    """Everything the table knows about one row, by names (codes and interning ids resolved)."""
    names = table.resource_names
    labels = {}
    for key in table.labels:
        code = int(table.label_codes(key)[row])
        if code != ABSENT:
            labels[key] = table.label_values(key)[code]
    ports = {key: dict(users[row]) for key, users in table.host_ports.items() if row in users}
    return {
        "node": table.nodes[row],
        "allocatable": {
            n: int(table.allocatable[i, row]) for i, n in enumerate(names) if table.allocatable[i, row]
        },
        "requested": {
            n: int(table.requested[i, row]) for i, n in enumerate(names) if table.requested[i, row]
        },
        "non_zero": (int(table.non_zero_requested[0, row]), int(table.non_zero_requested[1, row])),
        "pod_count": int(table.pod_count[row]),
        "unschedulable": bool(table.unschedulable[row]),
        "taints": table.taint_sets[int(table.taint_set[row])],
        "labels": labels,
        "pods": sorted(table.pods[row]),
        "images": dict(table.images[row]),
        "ports": ports,
        "zone": table.zone_of_row[row],
    }


def view(table: NodeTable) -> dict[str, Any]:
    return {
        "rows": {table.nodes[r].name: row_view(table, r) for r in range(len(table))},
        "image_node_count": dict(table.image_node_count),
        "port_keys": sorted(table.host_ports),
    }


def check_invariants(table: NodeTable) -> None:
    n = len(table)
    assert [table.index[x.name] for x in table.nodes] == list(range(n))
    assert len(table.pods) == len(table.images) == len(table.zone_of_row) == n
    # Rows past n are clean, so vectorized code over the whole capacity sees nothing stale.
    assert not table.allocatable[:, n:].any()
    assert not table.requested[:, n:].any()
    assert not table.non_zero_requested[:, n:].any()
    assert not table.pod_count[n:].any()
    assert not table.unschedulable[n:].any()
    assert not table.taint_set[n:].any()
    for column in table.labels.values():
        assert (column.codes[n:] == ABSENT).all()
        assert len(column.codes) == table.capacity
    for users in table.host_ports.values():
        assert users, "no empty port entries"
        for row, ips in users.items():
            assert 0 <= row < n
            assert ips
            assert all(c > 0 for c in ips.values())
    assert sorted(table.order().tolist()) == list(range(n))
    counts: Counter[str] = Counter()
    for images in table.images:
        counts.update(images.keys())
    assert dict(counts) == dict(table.image_node_count)


def tcp(port: int, ip: str = "") -> ContainerPort:
    return ContainerPort(container_port=port, host_port=port, host_ip=ip)


# ---- add / update / remove -------------------------------------------------------------------------


def test_add_node_writes_columns() -> None:
    table = NodeTable()
    row = table.set_node(
        make_node(
            "a",
            labels={"k": "v", ZONE: "z1"},
            allocatable={"cpu": 4000, "memory": 8 << 30, "pods": 110, GPU: 2},
            taints=(Taint("t", "x", "NoSchedule"),),
            unschedulable=True,
        )
    )
    assert row == 0
    assert len(table) == 1
    assert "a" in table
    got = row_view(table, 0)
    assert got["allocatable"] == {"cpu": 4000, "memory": 8 << 30, "pods": 110, GPU: 2}
    assert got["unschedulable"] is True
    assert got["taints"] == (Taint("t", "x", "NoSchedule"),)
    assert got["labels"] == {"k": "v", ZONE: "z1"}
    assert got["zone"] == ":\x00:z1"
    check_invariants(table)


def test_update_node_keeps_pods_and_rewrites_columns() -> None:
    table = build([make_node("a", labels={"old": "1"}, allocatable={"cpu": 1000, GPU: 1})], [])
    table.add_pod(make_pod("p", node_name="a", requests={"cpu": 200}), 0)
    generation = table.generation
    table.set_node(make_node("a", labels={"new": "2"}, allocatable={"cpu": 2000}))
    assert table.generation > generation
    got = row_view(table, 0)
    assert got["allocatable"] == {"cpu": 2000}  # the gpu vanished from the node
    assert got["labels"] == {"new": "2"}
    assert got["requested"] == {"cpu": 200}
    assert got["pods"] == ["default/p"]
    check_invariants(table)


def _random_cluster(rng: random.Random, count: int) -> tuple[list[Node], list[Pod]]:
    nodes, pods = [], []
    for i in range(count):
        labels = {f"l{rng.randrange(4)}": f"v{rng.randrange(3)}"}
        if rng.random() < 0.7:
            labels[ZONE] = f"z{rng.randrange(3)}"
        taints = tuple(Taint(f"t{rng.randrange(3)}", "", "NoSchedule") for _ in range(rng.randrange(3)))
        images = tuple(
            ContainerImage((f"img{rng.randrange(5)}:1",), 100 + i) for _ in range(rng.randrange(3))
        )
        allocatable = {"cpu": 4000, "memory": 1 << 33, "pods": 110}
        if rng.random() < 0.3:
            allocatable[GPU] = 4
        nodes.append(make_node(f"n{i}", labels=labels, allocatable=allocatable, taints=taints, images=images))
        for j in range(rng.randrange(4)):
            requests = {"cpu": rng.randrange(0, 500, 50), "memory": rng.randrange(0, 1 << 30, 1 << 20)}
            if rng.random() < 0.2:
                requests[GPU] = 1
            ports = (
                (tcp(8000 + rng.randrange(3), rng.choice(["", "10.0.0.1"])),) if rng.random() < 0.5 else ()
            )
            pods.append(make_pod(f"p{i}-{j}", node_name=f"n{i}", requests=requests, ports=ports))
    return nodes, pods


@pytest.mark.parametrize("seed", range(8))
def test_swap_remove_matches_a_fresh_table(seed: int) -> None:
    rng = random.Random(seed)
    nodes, pods = _random_cluster(rng, 20)
    table = build(nodes, pods)
    removed: set[str] = set()
    for victim in rng.sample([n.name for n in nodes], 12):
        returned = table.remove_node(victim)
        assert sorted(p.key for p in returned) == sorted(p.key for p in pods if p.node_name == victim)
        removed.add(victim)
        check_invariants(table)
        fresh = build(
            [n for n in nodes if n.name not in removed], [p for p in pods if p.node_name not in removed]
        )
        assert view(table) == view(fresh)


def test_remove_pod_reverts_exactly() -> None:
    nodes, pods = _random_cluster(random.Random(42), 6)
    table = build(nodes, [])
    before = view(table)
    for p in pods:
        table.add_pod(p, table.row(p.node_name))
    for p in reversed(pods):
        table.remove_pod(p, table.row(p.node_name))
    after = view(table)
    # Port entries are gone and every requested column is back to zero (resource rows may stay).
    assert after == before
    check_invariants(table)


def test_remove_unknown_pod_is_a_noop() -> None:
    table = build(
        [make_node("a", allocatable={"cpu": 1000})], [make_pod("p", node_name="a", requests={"cpu": 100})]
    )
    generation = table.generation
    table.remove_pod(make_pod("other", node_name="a", requests={"cpu": 500}), 0)
    assert int(table.requested[table.resource_index["cpu"], 0]) == 100
    assert table.generation == generation


def test_capacity_grows_past_64_rows() -> None:
    table = NodeTable()
    table.set_node(make_node("early", labels={"only-early": "x"}, allocatable={"cpu": 1}))
    table.add_pod(make_pod("p-early", node_name="early", requests={"cpu": 1}), 0)
    for i in range(1, 150):
        table.set_node(make_node(f"n{i}", labels={"i": str(i % 7)}, allocatable={"cpu": 1000 + i}))
        table.add_pod(make_pod(f"p{i}", node_name=f"n{i}", requests={"cpu": i}), i)
    assert len(table) == 150
    assert table.capacity >= 150
    assert table.capacity == 256
    cpu = table.resource_index["cpu"]
    assert table.allocatable[cpu, :150].tolist() == [1] + [1000 + i for i in range(1, 150)]
    assert table.requested[cpu, :150].tolist() == [1, *range(1, 150)]
    assert table.pod_count[:150].tolist() == [1] * 150
    # A label column made while capacity was 64 grew with ABSENT for the new rows.
    early = table.label_codes("only-early")
    assert len(early) == 150
    assert early[0] != ABSENT
    assert (early[1:] == ABSENT).all()
    check_invariants(table)
    for i in range(1, 150, 2):
        table.remove_node(f"n{i}")
    check_invariants(table)
    assert sorted(n.name for n in table.nodes) == sorted(["early"] + [f"n{i}" for i in range(2, 150, 2)])


def test_extended_resource_on_pod_before_any_node_has_it() -> None:
    table = build([make_node("a", allocatable={"cpu": 1000})], [])
    assert GPU not in table.resource_index
    table.add_pod(make_pod("p", node_name="a", requests={GPU: 2, "cpu": 10}), 0)
    gpu = table.resource_index[GPU]
    assert table.requested.shape[0] == table.allocatable.shape[0] == len(table.resource_names)
    assert int(table.requested[gpu, 0]) == 2
    assert int(table.allocatable[gpu, 0]) == 0
    table.set_node(make_node("b", allocatable={GPU: 8}))
    assert table.resource_index[GPU] == gpu
    assert int(table.allocatable[gpu, 1]) == 8
    table.remove_pod(make_pod("p", node_name="a", requests={}), 0)
    assert int(table.requested[gpu, 0]) == 0
    check_invariants(table)


def test_label_columns_and_codes() -> None:
    table = build(
        [
            make_node("a", labels={"zone": "z1", "x": "1"}),
            make_node("b", labels={"zone": "z2"}),
            make_node("c", labels={"zone": "z1"}),
            make_node("d"),
        ],
        [],
    )
    codes = table.label_codes("zone")
    assert codes.dtype == np.int32
    assert len(codes) == 4
    z1, z2 = table.label_value_code("zone", "z1"), table.label_value_code("zone", "z2")
    assert z1 is not None
    assert z2 is not None
    assert z1 != z2
    assert codes.tolist() == [z1, z2, z1, ABSENT]
    assert table.label_values("zone")[z1] == "z1"
    assert table.label_value_code("zone", "nope") is None
    assert table.label_value_code("missing-key", "z1") is None
    assert table.label_codes("missing-key").tolist() == [ABSENT] * 4
    assert table.label_values("missing-key") == []
    assert table.label_codes("x").tolist()[1:] == [ABSENT] * 3
    # Relabelling a node rewrites its codes; a removed key becomes ABSENT.
    table.set_node(make_node("a", labels={"zone": "z2"}))
    assert table.label_codes("zone").tolist()[0] == z2
    assert table.label_codes("x").tolist()[0] == ABSENT


def test_taint_sets_are_interned() -> None:
    t1, t2 = Taint("a", "1", "NoSchedule"), Taint("b", "", "NoExecute")
    table = build(
        [
            make_node("plain"),
            make_node("ab", taints=(t1, t2)),
            make_node("ba", taints=(t2, t1)),
            make_node("a", taints=(t1,)),
            make_node("a-other-effect", taints=(Taint("a", "1", "PreferNoSchedule"),)),
        ],
        [],
    )
    ids = table.taint_set[: len(table)].tolist()
    assert ids[0] == 0
    assert table.taint_sets[0] == ()
    assert ids[1] == ids[2], "order of taints does not matter"
    assert len({ids[1], ids[3], ids[4]}) == 3
    assert set(table.taint_sets[ids[1]]) == {t1, t2}
    count = len(table.taint_sets)
    table.set_node(make_node("x", taints=(t2, t1)))
    assert len(table.taint_sets) == count
    assert int(table.taint_set[5]) == ids[1]


def test_host_ports_accounting() -> None:
    table = build([make_node("a"), make_node("b")], [])
    p1 = make_pod("p1", node_name="a", requests={}, ports=(tcp(80), tcp(443, "10.0.0.1")))
    p2 = make_pod("p2", node_name="a", requests={}, ports=(tcp(80),))
    udp = Pod("p3", uid="p3", containers=(Container("c", ports=(ContainerPort(53, 53, "UDP"),)),))
    no_host = Pod("p4", uid="p4", containers=(Container("c", ports=(ContainerPort(8080),)),))
    sidecar = Pod(
        "p5",
        uid="p5",
        init_containers=(
            Container("side", ports=(tcp(9000),), restart_policy="Always"),
            Container("init", ports=(tcp(9001),)),
        ),
    )
    table.add_pod(p1, 0)
    table.add_pod(p2, 0)
    table.add_pod(udp, 1)
    table.add_pod(no_host, 1)
    table.add_pod(sidecar, 1)
    assert table.host_ports[("TCP", 80)] == {0: Counter({"0.0.0.0": 2})}
    assert table.host_ports[("TCP", 443)] == {0: Counter({"10.0.0.1": 1})}
    assert table.host_ports[("UDP", 53)] == {1: Counter({"0.0.0.0": 1})}
    assert table.host_ports[("TCP", 9000)] == {1: Counter({"0.0.0.0": 1})}
    assert ("TCP", 9001) not in table.host_ports, "plain init containers have exited"
    assert ("TCP", 8080) not in table.host_ports
    table.remove_pod(p1, 0)
    assert table.host_ports[("TCP", 80)] == {0: Counter({"0.0.0.0": 1})}
    assert ("TCP", 443) not in table.host_ports
    table.remove_pod(p2, 0)
    assert ("TCP", 80) not in table.host_ports
    check_invariants(table)


def test_host_ports_follow_swap_remove() -> None:
    table = build([make_node("a"), make_node("b"), make_node("c")], [])
    table.add_pod(make_pod("pa", node_name="a", requests={}, ports=(tcp(80),)), 0)
    table.add_pod(make_pod("pc", node_name="c", requests={}, ports=(tcp(81),)), 2)
    table.remove_node("a")  # c moves into row 0
    assert table.row("c") == 0
    assert ("TCP", 80) not in table.host_ports
    assert table.host_ports[("TCP", 81)] == {0: Counter({"0.0.0.0": 1})}
    check_invariants(table)


def test_images_counts() -> None:
    table = build(
        [
            make_node("a", images=(ContainerImage(("nginx:1.25", "docker.io/nginx:1.25"), 100),)),
            make_node("b", images=(ContainerImage(("nginx:1.25",), 100), ContainerImage(("redis",), 50))),
        ],
        [],
    )
    assert table.image_node_count["nginx:1.25"] == 2
    assert table.image_node_count["docker.io/nginx:1.25"] == 1
    assert table.image_node_count["redis"] == 1  # node names are kept as reported
    assert table.images[1] == {"nginx:1.25": 100, "redis": 50}
    table.set_node(make_node("b", images=(ContainerImage(("busybox:1",), 5),)))
    assert "redis" not in table.image_node_count
    assert table.image_node_count["nginx:1.25"] == 1
    assert table.image_node_count["busybox:1"] == 1
    table.remove_node("a")
    assert dict(table.image_node_count) == {"busybox:1": 1}
    check_invariants(table)


def test_listeners_see_rows_after_swap_remove() -> None:
    events: list[tuple[str, str, int]] = []
    table = build([make_node("a"), make_node("b"), make_node("c")], [])
    table.listeners.append(
        PodListener(
            on_add=lambda p, row: events.append(("add", p.name, row)),
            on_remove=lambda p, row: events.append(("remove", p.name, row)),
        )
    )
    table.add_pod(make_pod("pa", node_name="a", requests={}), 0)
    table.add_pod(make_pod("pc1", node_name="c", requests={}), 2)
    table.add_pod(make_pod("pc2", node_name="c", requests={}), 2)
    events.clear()
    table.remove_node("a")
    assert events == [
        ("remove", "pa", 0),
        ("remove", "pc1", 2),
        ("add", "pc1", 0),
        ("remove", "pc2", 2),
        ("add", "pc2", 0),
    ]
    # Replaying the events on a row-keyed index gives the table's own placement.
    index: dict[str, int] = {}
    table2 = build([make_node("a"), make_node("b"), make_node("c")], [])
    table2.listeners.append(
        PodListener(
            on_add=lambda p, row: index.__setitem__(p.name, row),
            on_remove=lambda p, row: index.__delitem__(p.name),
        )
    )
    for p, row in (
        (make_pod("pa", node_name="a", requests={}), 0),
        (make_pod("pc1", node_name="c", requests={}), 2),
        (make_pod("b1", node_name="b", requests={}), 1),
    ):
        table2.add_pod(p, row)
    table2.remove_node("a")
    assert index == {"pc1": table2.row("c"), "b1": table2.row("b")}
    events.clear()
    table.remove_node("c")  # the last row: nothing moves
    assert events == [("remove", "pc1", 0), ("remove", "pc2", 0)]


def test_generation_bumps_on_every_change() -> None:
    table = NodeTable()
    seen = [table.generation]
    table.set_node(make_node("a"))
    seen.append(table.generation)
    table.add_pod(make_pod("p", node_name="a", requests={}), 0)
    seen.append(table.generation)
    table.remove_pod(make_pod("p", node_name="a", requests={}), 0)
    seen.append(table.generation)
    table.set_node(make_node("a", labels={"x": "y"}))
    seen.append(table.generation)
    table.remove_node("a")
    seen.append(table.generation)
    assert seen == sorted(set(seen))


# ---- zone interleaving (node_tree_test.go) -----------------------------------------------------------

ALL_NODES = [
    make_node("node-0"),
    make_node("node-1", labels={REGION: "region-1"}),
    make_node("node-2", labels={ZONE: "zone-2"}),
    make_node("node-3", labels={REGION: "region-1", ZONE: "zone-2"}),
    make_node("node-4", labels={REGION: "region-1", ZONE: "zone-2"}),
    make_node("node-5", labels={REGION: "region-1", ZONE: "zone-3"}),
    make_node("node-6", labels={REGION: "region-2", ZONE: "zone-2"}),
    make_node("node-7", labels={REGION: "region-2", ZONE: "zone-2"}),
    make_node("node-8", labels={REGION: "region-2", ZONE: "zone-2"}),
    make_node(
        "node-9", labels={REGION: "region-2", ZONE: "zone-2", BETA_REGION: "region-2", BETA_ZONE: "zone-2"}
    ),
    make_node("node-10", labels={BETA_REGION: "region-2", BETA_ZONE: "zone-3"}),
]


def names_in_order(table: NodeTable) -> list[str]:
    return table.names_of(table.order().tolist())


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        ({}, ""),
        ({REGION: "region-1"}, "region-1:\x00:"),
        ({ZONE: "zone-2"}, ":\x00:zone-2"),
        ({REGION: "region-1", ZONE: "zone-2"}, "region-1:\x00:zone-2"),
        ({BETA_REGION: "region-2", BETA_ZONE: "zone-3"}, "region-2:\x00:zone-3"),
        # GetZoneKey prefers the deprecated labels when both are set.
        ({BETA_ZONE: "old", ZONE: "new", REGION: "r"}, "r:\x00:old"),
        ({BETA_REGION: "", REGION: "r", ZONE: "z"}, ":\x00:z"),
    ],
)
def test_zone_key(labels: dict[str, str], want: str) -> None:
    assert zone_key(labels) == want


@pytest.mark.parametrize(
    ("added", "want"),
    [
        ([], []),
        (ALL_NODES[:1], ["node-0"]),
        (ALL_NODES[:4], ["node-0", "node-1", "node-2", "node-3"]),
        (
            ALL_NODES[:9],
            ["node-0", "node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-7", "node-8"],
        ),
        (ALL_NODES[9:], ["node-9", "node-10"]),
    ],
    ids=["empty tree", "one node", "four nodes", "all nodes", "deprecated labels"],
)
def test_order_list(added: list[Node], want: list[str]) -> None:
    assert names_in_order(build(added, [])) == want


def test_order_adding_same_node_twice_keeps_one() -> None:
    table = build([ALL_NODES[0]], [])
    table.set_node(ALL_NODES[0])
    assert names_in_order(table) == ["node-0"]
    assert len(table) == 1


@pytest.mark.parametrize(
    ("to_add", "to_remove", "ops", "want"),
    [
        (ALL_NODES[2:9], ALL_NODES[2:9], "aaarrr", []),
        (ALL_NODES[2:9], ALL_NODES[2:9], "aaar", ["node-3", "node-4"]),
        (ALL_NODES[2:9], ALL_NODES[2:9], "aaarrra", ["node-5"]),
        (
            [*ALL_NODES[4:9], ALL_NODES[3]],
            [],
            "aaaaaa",
            ["node-4", "node-5", "node-6", "node-3", "node-7", "node-8"],
        ),
        ([*ALL_NODES[3:5], *ALL_NODES[6:8]], ALL_NODES[3:5], "aaraar", ["node-6", "node-7"]),
    ],
    ids=[
        "add and remove all nodes",
        "add and remove some nodes",
        "remove three nodes",
        "add more nodes to an exhausted zone",
        "remove zone and add new",
    ],
)
def test_order_multi_operations(to_add: list[Node], to_remove: list[Node], ops: str, want: list[str]) -> None:
    table = NodeTable()
    adds, removes = iter(to_add), iter(to_remove)
    for op in ops:
        if op == "a":
            table.set_node(next(adds))
        else:
            table.remove_node(next(removes).name)
    assert names_in_order(table) == want
    check_invariants(table)


def test_order_zone_emptied_and_readded_goes_last() -> None:
    table = build(
        [
            make_node("a1", labels={ZONE: "a"}),
            make_node("b1", labels={ZONE: "b"}),
            make_node("c1", labels={ZONE: "c"}),
        ],
        [],
    )
    table.set_node(make_node("a2", labels={ZONE: "a"}))
    assert names_in_order(table) == ["a1", "b1", "c1", "a2"]
    table.remove_node("a1")
    table.remove_node("a2")
    table.set_node(make_node("a3", labels={ZONE: "a"}))
    assert names_in_order(table) == ["b1", "c1", "a3"]


@pytest.mark.parametrize(
    ("existing", "updated", "want"),
    [
        # TestNodeTree_UpdateNode: a node changing zone is appended to its new zone.
        (
            ALL_NODES[:7],
            make_node("node-0", labels={REGION: "region-1", ZONE: "zone-2"}),
            ["node-1", "node-2", "node-3", "node-5", "node-6", "node-4", "node-0"],
        ),
        (ALL_NODES[:1], make_node("node-0", labels={REGION: "region-1", ZONE: "zone-2"}), ["node-0"]),
        (
            ALL_NODES[:1],
            make_node("node-new", labels={REGION: "region-1", ZONE: "zone-2"}),
            ["node-0", "node-new"],
        ),
    ],
    ids=["update a node without label", "update the only existing node", "update non-existing node"],
)
def test_order_update_node(existing: list[Node], updated: Node, want: list[str]) -> None:
    table = build(existing, [])
    table.set_node(updated)
    assert names_in_order(table) == want
    check_invariants(table)


def test_order_update_without_zone_change_keeps_position() -> None:
    table = build(ALL_NODES[:5], [])
    before = names_in_order(table)
    table.set_node(make_node("node-3", labels={REGION: "region-1", ZONE: "zone-2", "extra": "x"}))
    assert names_in_order(table) == before


def test_order_is_rows_not_names_after_swap_remove() -> None:
    table = build(
        [
            make_node("a", labels={ZONE: "1"}),
            make_node("b", labels={ZONE: "2"}),
            make_node("c", labels={ZONE: "1"}),
        ],
        [],
    )
    table.remove_node("a")
    order = table.order().tolist()
    # Zone "1" keeps its place (c is still in it); rows are c's new row, then b's.
    assert [table.nodes[r].name for r in order] == ["c", "b"]
    assert order == [table.row("c"), table.row("b")] == [0, 1]


def test_names_array_follows_added_removed_and_moved_rows() -> None:
    table = NodeTable()
    for name in ("a", "b", "c", "d"):
        table.set_node(make_node(name))
    assert table.names_array().tolist() == ["a", "b", "c", "d"]
    table.remove_node("b")  # "d" moves into b's row
    assert table.names_array().tolist() == [node.name for node in table.nodes] == ["a", "d", "c"]
    table.set_node(make_node("e"))
    names = table.names_array()
    assert names[[table.row("e"), table.row("d")]].tolist() == ["e", "d"]
    table.set_node(make_node("a", labels={"x": "y"}))  # an update in place keeps the rows
    assert table.names_array() is names


class _CountingIndex:
    """Pods per row, fed by the table's listener hook."""

    def __init__(self, table: NodeTable) -> None:
        self.pods = Counter(row for row in range(len(table)) for _ in table.pods_on(row))
        table.listeners.append(PodListener(self.on_add, self.on_remove))

    def on_add(self, pod: Any, row: int) -> None:
        self.pods[row] += 1

    def on_remove(self, pod: Any, row: int) -> None:
        self.pods[row] -= 1


def test_shared_index_is_built_once_per_table_and_follows_it() -> None:
    table = build([make_node("a"), make_node("b")], [make_pod("p", node_name="a", requests={})])
    index = table.shared_index(_CountingIndex)
    assert table.shared_index(_CountingIndex) is index
    assert len(table.listeners) == 1
    assert index.pods == Counter({0: 1})
    table.add_pod(make_pod("q", node_name="b", requests={}), 1)
    assert index.pods == Counter({0: 1, 1: 1})
    other = build([make_node("a")], [])
    assert other.shared_index(_CountingIndex) is not index
