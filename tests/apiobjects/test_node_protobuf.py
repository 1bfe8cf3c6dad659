"""Node lists as protobuf decode to the same nodes as the same lists in JSON.

The bodies are encoded with a wider schema than the decoder's (upstream's field numbers, plus
fields the decoder does not declare, as the API server sends them), so the decoder is tested
on skipping what it does not read too. The decoder's field numbers are checked against
upstream's .proto files in e2e/test_node_protobuf_upstream.py.
"""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.convert_cluster import node_from_api, node_from_dict
from policy_scheduler.apiobjects.decode import decode_list
from policy_scheduler.apiobjects.node_protobuf import (
    MAGIC,
    SCHEMA,
    decode_node_list,
    message_classes,
)

# What the API server also sends: fields the decoder skips.
WIDER = {
    **SCHEMA,
    "TypeMeta": (("apiVersion", 1, "string"), ("kind", 2, "string")),
    "Unknown": (("typeMeta", 1, "TypeMeta"), *SCHEMA["Unknown"], ("contentType", 4, "string")),
    "Time": (("seconds", 1, "int64"), ("nanos", 2, "int32")),
    "ManagedFieldsEntry": (("manager", 1, "string"), ("operation", 2, "string")),
    "ObjectMeta": (
        *SCHEMA["ObjectMeta"],
        ("creationTimestamp", 8, "Time"),
        ("annotations", 12, "map:string"),
        ("managedFields", 17, "ManagedFieldsEntry*"),
    ),
    "NodeCondition": (*SCHEMA["NodeCondition"], ("lastHeartbeatTime", 3, "Time"), ("reason", 5, "string")),
    "Taint": (*SCHEMA["Taint"], ("timeAdded", 4, "Time")),
    "NodeStatus": (*SCHEMA["NodeStatus"], ("phase", 3, "string")),
    "NodeSpec": (("podCIDR", 1, "string"), *SCHEMA["NodeSpec"]),
}
_WIDE = message_classes(WIDER)

NODES: list[dict[str, Any]] = [
    {
        "metadata": {
            "name": "plain",
            "uid": "u-1",
            "resourceVersion": "11",
            "labels": {"kubernetes.io/hostname": "plain", "topology.kubernetes.io/zone": "z1"},
        },
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    },
    {
        "metadata": {"name": "tainted", "uid": "u-2", "resourceVersion": "12"},
        "spec": {
            "unschedulable": True,
            "taints": [
                {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"},
                {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            ],
        },
        "status": {
            "allocatable": {
                "cpu": "3500m",
                "memory": "1000000Ki",
                "example.com/gpu": "2",
                "ephemeral-storage": "20G",
            },
            "capacity": {"cpu": "4", "memory": "2Gi"},
            "images": [
                {
                    "names": ["registry.k8s.io/pause:3.10", "registry.k8s.io/pause@sha256:abc"],
                    "sizeBytes": 300000,
                },
                {"names": ["busybox:1.36"], "sizeBytes": 4000000},
            ],
            "declaredFeatures": ["RestartAllContainersOnContainerExits", "UserNamespacesHostNetworkSupport"],
        },
    },
    {  # no allocatable: it defaults to capacity
        "metadata": {"name": "capacity-only", "uid": "u-3", "resourceVersion": "13", "labels": {"a": ""}},
        "status": {"capacity": {"cpu": "2", "memory": "4Gi"}},
    },
    {"metadata": {"name": "bare", "uid": "u-4", "resourceVersion": "14"}},
    {  # under pressure, as the kubelet's eviction reports it
        "metadata": {"name": "pressed", "uid": "u-5", "resourceVersion": "15"},
        "status": {
            "allocatable": {"cpu": "4", "memory": "7Gi"},
            "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
            "conditions": [
                {"type": "PIDPressure", "status": "True", "reason": "KubeletHasInsufficientPID"},
                {"type": "DiskPressure", "status": "False"},
                {"type": "MemoryPressure", "status": "True", "reason": "KubeletHasInsufficientMemory"},
            ],
        },
    },
]

# What the wider encoding adds to every node: skipped by the decoder.
NOISE: dict[str, Any] = {
    "metadata": {
        "creationTimestamp": {"seconds": 1_790_000_000, "nanos": 5},
        "annotations": {"kwok.x-k8s.io/node": "fake"},
        "managedFields": [{"manager": "kwok", "operation": "Update"}],
    },
    "spec": {"podCIDR": "10.0.0.0/24"},
    "status": {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": {"seconds": 1}}],
    },
}


def _fill(message: Any, value: dict[str, Any]) -> None:
    for name, item in value.items():
        field = getattr(message, name)
        if isinstance(item, dict) and hasattr(field, "keys"):  # a map
            for key, entry in item.items():
                if isinstance(field[key], str):
                    field[key] = entry
                else:
                    field[key].string = entry  # map<string, Quantity>
        elif isinstance(item, dict):
            _fill(field, item)
        elif isinstance(item, list) and item and isinstance(item[0], dict):
            for entry in item:
                _fill(field.add(), entry)
        elif isinstance(item, list):
            field.extend(item)
        else:
            setattr(message, name, item)


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        if isinstance(value, dict):
            out[key] = _merge(out.get(key, {}), value)
        elif isinstance(value, list):
            out[key] = [*out.get(key, []), *value]
        else:
            out[key] = value
    return out


def protobuf_list(nodes: list[dict[str, Any]], resource_version: str, continue_token: str = "") -> bytes:
    node_list = _WIDE["NodeList"]()
    node_list.metadata.resourceVersion = resource_version
    if continue_token:
        setattr(node_list.metadata, "continue", continue_token)
    for node in nodes:
        _fill(node_list.items.add(), _merge(node, NOISE))
    envelope = _WIDE["Unknown"](
        raw=node_list.SerializeToString(), contentType="application/vnd.kubernetes.protobuf"
    )
    envelope.typeMeta.apiVersion, envelope.typeMeta.kind = "v1", "NodeList"
    encoded: bytes = envelope.SerializeToString()
    return MAGIC + encoded


def json_list(nodes: list[dict[str, Any]], resource_version: str, continue_token: str = "") -> bytes:
    meta = {"resourceVersion": resource_version, **({"continue": continue_token} if continue_token else {})}
    return msgspec.json.encode({"kind": "NodeList", "apiVersion": "v1", "metadata": meta, "items": nodes})


def test_protobuf_and_json_lists_give_the_same_nodes() -> None:
    from_protobuf = decode_node_list(protobuf_list(NODES, "99", "token"))
    from_json = decode_list(json_list(NODES, "99", "token"), structs.Node)
    assert (from_protobuf.resource_version, from_protobuf.continue_token) == ("99", "token")
    assert (from_json.resource_version, from_json.continue_token) == ("99", "token")
    assert from_protobuf.failures == []
    assert [node_from_api(n) for n in from_protobuf.items] == [node_from_api(n) for n in from_json.items]
    assert [node_from_api(n) for n in from_protobuf.items] == [node_from_dict(n) for n in NODES]


def test_the_nodes_read_what_the_scheduler_needs() -> None:
    by_name = {n.name: n for n in map(node_from_api, decode_node_list(protobuf_list(NODES, "1")).items)}
    tainted = by_name["tainted"]
    assert tainted.unschedulable
    assert [(t.key, t.value, t.effect) for t in tainted.taints] == [
        ("dedicated", "gpu", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "", "NoSchedule"),
    ]
    assert tainted.allocatable["example.com/gpu"] == 2
    assert tainted.allocatable["cpu"] == 3500  # millicores: allocatable, not capacity
    assert tainted.images[0].names == (
        "registry.k8s.io/pause:3.10",
        "registry.k8s.io/pause@sha256:abc",
    )
    assert tainted.declared_features == (
        "RestartAllContainersOnContainerExits",
        "UserNamespacesHostNetworkSupport",
    )
    assert by_name["plain"].declared_features == ()
    assert by_name["capacity-only"].allocatable["cpu"] == 2000
    assert by_name["capacity-only"].labels == {"a": ""}
    assert by_name["plain"].resource_version == "11"
    assert by_name["bare"].uid == "u-4"


def test_the_nodes_read_what_node_pressure_needs() -> None:
    """status.capacity.memory (memory.available's capacity with NodeMetrics) is read even when
    allocatable is set, and the pressure conditions whose status is True, in a fixed order."""
    for items in (
        decode_node_list(protobuf_list(NODES, "1")).items,
        decode_list(json_list(NODES, "1"), structs.Node).items,
    ):
        by_name = {n.name: n for n in map(node_from_api, items)}
        assert by_name["pressed"].memory_capacity == 8 * 2**30
        assert by_name["pressed"].allocatable["memory"] == 7 * 2**30
        assert by_name["pressed"].pressure_conditions == ("MemoryPressure", "PIDPressure")
        assert by_name["tainted"].memory_capacity == 2 * 2**30
        assert by_name["capacity-only"].memory_capacity == 4 * 2**30
        assert by_name["plain"].memory_capacity is None  # only allocatable reported
        assert by_name["plain"].pressure_conditions == ()  # Ready is not a pressure condition


def test_an_answer_in_json_is_decoded_as_json() -> None:
    """The API server answers JSON for what it cannot encode as protobuf (Accept allows both)."""
    result = decode_node_list(json_list(NODES, "7"))
    assert [n.metadata.name for n in result.items] == [n["metadata"]["name"] for n in NODES]
    assert result.resource_version == "7"


def test_a_protobuf_body_that_ends_early_or_does_not_parse_raises() -> None:
    with pytest.raises(DecodeError):
        decode_node_list(MAGIC + b"\x12\xff\xff\xff")  # the list's length never ends
    with pytest.raises(DecodeError):
        decode_node_list(MAGIC + b"\x12\x04\x12\x02\xff\xff")  # one item, not a Node


@given(end=st.integers(min_value=0))
def test_a_protobuf_list_cut_short_is_never_taken_for_a_whole_one(end: int) -> None:
    body = protobuf_list(NODES, "5")
    # The envelope's fields after the list (contentType) may be cut: the list itself is whole.
    trailer = _WIDE["Unknown"](contentType="application/vnd.kubernetes.protobuf").SerializeToString()
    short = body[: end % (len(body) - len(trailer))]
    with pytest.raises((DecodeError, msgspec.DecodeError)):  # too short to be told from JSON
        decode_node_list(short)
