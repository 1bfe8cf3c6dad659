"""Scheduler cache: assumed pods, confirmation, forgetting, expiry and pods of unknown nodes.

Follows backend/cache/cache_test.go (v1.35.4) where our semantics match; the ttl is ours
(upstream keeps assumed pods until the informer sees them, see docs/differences.md).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from policy_scheduler.scheduler.cache import Cache, CacheError
from policy_scheduler.scheduler.model import Node
from policy_scheduler.scheduler.nodetable import ABSENT, NodeTable
from tests.builders import make_node, make_pod
from tests.fakeclock import FakeClock

MIB = 1 << 20
ALLOC = {"cpu": 4000, "memory": 1 << 32, "pods": 110}


def table_state(table: NodeTable) -> dict[str, Any]:
    """Per node name: requested resources, counts, pods and ports (exactly what placement changes)."""
    out: dict[str, Any] = {}
    for row, n in enumerate(table.nodes):
        out[n.name] = {
            "requested": {
                r: int(table.requested[i, row])
                for i, r in enumerate(table.resource_names)
                if table.requested[i, row]
            },
            "non_zero": table.non_zero_requested[:, row].tolist(),
            "pods": sorted(table.pods[row]),
            "count": int(table.pod_count[row]),
            "ports": sorted(k for k, users in table.host_ports.items() if row in users),
        }
    return out


def cpu_on(cache: Cache, name: str) -> int:
    table = cache.table
    return int(table.requested[table.resource_index["cpu"], table.row(name)])


@pytest.fixture
def cache(fake_clock: FakeClock) -> Cache:
    c = Cache(clock=fake_clock, assumed_ttl=30.0)
    c.add_node(make_node("n1", hostname=True, allocatable=ALLOC))
    c.add_node(make_node("n2", hostname=True, allocatable=ALLOC))
    return c


def test_assume_places_a_copy_on_the_node(cache: Cache) -> None:
    p = make_pod("p", cpu=500, memory=MIB, ports=[8080])
    assumed = cache.assume_pod(p, "n1")
    assert assumed.node_name == "n1"
    assert p.node_name == "", "the queued pod is not modified"
    assert cache.is_assumed(p)
    assert cpu_on(cache, "n1") == 500
    assert ("TCP", 8080) in cache.table.host_ports
    assert cache.get_pod(p.key) is assumed
    assert cache.pod_count == 1
    with pytest.raises(CacheError, match="can't be assumed"):
        cache.assume_pod(p, "n2")


def test_assume_finish_binding_then_add_pod_confirms(cache: Cache, fake_clock: FakeClock) -> None:
    p = make_pod("p", cpu=500, memory=MIB)
    assumed = cache.assume_pod(p, "n1")
    cache.finish_binding(assumed)
    bound = dataclasses.replace(p, node_name="n1", resource_version="7")
    cache.add_pod(bound)
    assert not cache.is_assumed(p)
    assert cache.get_pod(p.key) is bound
    assert cpu_on(cache, "n1") == 500, "confirmation does not double count"
    assert cache.table.pod_count[cache.table.row("n1")] == 1
    fake_clock.advance(1000)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cpu_on(cache, "n1") == 500


def test_confirmation_on_another_node_moves_the_pod(cache: Cache) -> None:
    p = make_pod("p", cpu=300, memory=MIB)
    cache.assume_pod(p, "n1")
    cache.add_pod(dataclasses.replace(p, node_name="n2"))
    assert cpu_on(cache, "n1") == 0
    assert cpu_on(cache, "n2") == 300
    assert not cache.is_assumed(p)


def test_forget_reverts_the_table_exactly(cache: Cache) -> None:
    cache.add_pod(make_pod("existing", node_name="n1", cpu=250, memory=MIB, ports=[80]))
    before = table_state(cache.table)
    p = make_pod("p", cpu=700, memory=MIB, ports=[9090])
    cache.assume_pod(p, "n1")
    assert table_state(cache.table) != before
    cache.forget_pod(p)
    assert table_state(cache.table) == before
    assert cache.get_pod(p.key) is None
    assert not cache.is_assumed(p)
    assert cache.pod_count == 1


def test_forget_ignores_confirmed_and_unknown_pods(cache: Cache) -> None:
    confirmed = make_pod("c", node_name="n1", cpu=100, memory=MIB)
    cache.add_pod(confirmed)
    cache.forget_pod(confirmed)
    assert cpu_on(cache, "n1") == 100
    cache.forget_pod(make_pod("never-seen", cpu=100, memory=MIB))
    assert cache.pod_count == 1


def test_expiry_only_after_binding_finished_and_ttl(cache: Cache, fake_clock: FakeClock) -> None:
    unfinished = make_pod("unfinished", cpu=100, memory=MIB)
    finished = make_pod("finished", cpu=200, memory=MIB)
    cache.assume_pod(unfinished, "n1")
    cache.assume_pod(finished, "n1")
    fake_clock.advance(10)
    cache.finish_binding(finished)  # deadline now + 30
    fake_clock.advance(29)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cpu_on(cache, "n1") == 300
    fake_clock.advance(1)
    expired = cache.cleanup_expired_assumed_pods()
    assert [p.key for p in expired] == ["default/finished"]
    assert cpu_on(cache, "n1") == 100
    assert cache.is_assumed(unfinished), "binding still in flight: never expires"
    fake_clock.advance(10_000)
    assert cache.cleanup_expired_assumed_pods() == []


def test_finish_binding_of_confirmed_pod_is_a_noop(cache: Cache, fake_clock: FakeClock) -> None:
    p = make_pod("p", node_name="n1", cpu=100, memory=MIB)
    cache.add_pod(p)
    cache.finish_binding(p)
    fake_clock.advance(10_000)
    assert cache.cleanup_expired_assumed_pods() == []
    assert cache.get_pod(p.key) is p


def test_add_pod_after_expiration_adds_it_back(cache: Cache, fake_clock: FakeClock) -> None:
    p = make_pod("p", cpu=400, memory=MIB)
    cache.finish_binding(cache.assume_pod(p, "n1"))
    fake_clock.advance(31)
    cache.cleanup_expired_assumed_pods()
    assert cpu_on(cache, "n1") == 0
    cache.add_pod(dataclasses.replace(p, node_name="n1"))
    assert cpu_on(cache, "n1") == 400


def test_update_pod_moves_it_between_nodes_and_updates_requests(cache: Cache) -> None:
    p = make_pod("p", node_name="n1", cpu=100, memory=MIB)
    cache.add_pod(p)
    cache.update_pod(make_pod("p", node_name="n1", cpu=150, memory=MIB))
    assert cpu_on(cache, "n1") == 150
    cache.update_pod(make_pod("p", node_name="n2", cpu=150, memory=MIB))
    assert cpu_on(cache, "n1") == 0
    assert cpu_on(cache, "n2") == 150
    assert table_state(cache.table)["n1"]["pods"] == []
    assert table_state(cache.table)["n2"]["pods"] == ["default/p"]


def test_remove_pod(cache: Cache) -> None:
    p = make_pod("p", node_name="n1", cpu=100, memory=MIB, ports=[443])
    cache.add_pod(p)
    cache.remove_pod(dataclasses.replace(p, node_name=""))  # a missed delete: last known state
    assert cpu_on(cache, "n1") == 0
    assert cache.table.host_ports == {}
    assert cache.get_pod(p.key) is None
    cache.remove_pod(p)  # already gone: no error


def test_pods_of_unknown_nodes_are_kept_and_placed_when_the_node_appears(cache: Cache) -> None:
    early = make_pod("early", node_name="n3", cpu=600, memory=MIB)
    cache.add_pod(early)
    assert "n3" not in cache.table
    assert cache.get_pod(early.key) is early
    cache.add_node(make_node("n3", hostname=True, allocatable=ALLOC))
    assert cpu_on(cache, "n3") == 600
    # An orphan deleted before its node appears leaves nothing behind.
    gone = make_pod("gone", node_name="n4", cpu=50, memory=MIB)
    cache.add_pod(gone)
    cache.remove_pod(gone)
    cache.add_node(make_node("n4", hostname=True, allocatable=ALLOC))
    assert cpu_on(cache, "n4") == 0


def test_removed_node_keeps_its_pods_and_re_adding_places_them(cache: Cache) -> None:
    a = make_pod("a", node_name="n1", cpu=100, memory=MIB)
    b = make_pod("b", node_name="n1", cpu=200, memory=MIB)
    cache.add_pod(a)
    cache.add_pod(b)
    cache.remove_node("n1")
    assert "n1" not in cache.table
    assert cache.node_count == 1
    assert cache.get_pod(a.key) is a
    cache.remove_pod(a)  # deleted while its node is away
    cache.update_pod(make_pod("b", node_name="n1", cpu=250, memory=MIB))  # updated while its node is away
    cache.add_node(make_node("n1", hostname=True, allocatable=ALLOC))
    assert table_state(cache.table)["n1"]["pods"] == ["default/b"]
    assert cpu_on(cache, "n1") == 250
    cache.remove_node("unknown")  # no error


def test_assumed_pod_on_removed_node_can_be_forgotten(cache: Cache) -> None:
    p = make_pod("p", cpu=100, memory=MIB)
    cache.assume_pod(p, "n1")
    cache.remove_node("n1")
    cache.forget_pod(p)
    cache.add_node(make_node("n1", hostname=True, allocatable=ALLOC))
    assert cpu_on(cache, "n1") == 0


def test_update_node_keeps_pods(cache: Cache) -> None:
    cache.add_pod(make_pod("p", node_name="n1", cpu=100, memory=MIB))
    cache.update_node(Node("n1", labels={"new": "label"}, allocatable={"cpu": 8000}))
    row = cache.table.row("n1")
    assert cpu_on(cache, "n1") == 100
    assert cache.table.label_codes("new")[row] != ABSENT
    assert int(cache.table.allocatable[cache.table.resource_index["cpu"], row]) == 8000
