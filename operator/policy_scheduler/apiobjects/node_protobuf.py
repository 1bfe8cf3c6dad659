"""Node lists in Kubernetes' protobuf encoding, decoded into the same `structs.Node` as JSON.

Why: the API server encodes a large node list as protobuf with far less CPU than as JSON, and
the protobuf list is much smaller (docs/benchmarks.md has the figures); that list is what the
first bind after a start waits for. kube-scheduler reads nodes and pods as protobuf for the same
reason (client-go's ContentType for core types).

The schema below declares, with upstream's field numbers (k8s.io/api core/v1 and
k8s.io/apimachinery generated.proto, v0.35.4), only the fields that `node_from_api` and the
informer read: the parser skips every other field without building it, as msgspec does for
JSON, and reading a field of a parsed message builds a Python object each time, so the
structs get those fields only; the others keep their defaults. tests/apiobjects/test_node_protobuf.py
holds both paths to the same nodes. The messages are built at import into a private
descriptor pool; no generated code, no protoc.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from google.protobuf.message import DecodeError

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.decode import ListResult, decode_list
from policy_scheduler.scheduler.resource_names import MEMORY

# Every protobuf body starts with this, then a runtime.Unknown that wraps the object's bytes.
MAGIC = b"k8s\x00"

_PACKAGE = "policy_scheduler.k8s"
# field type names: a scalar ("string", "int64", ...), a message of this schema, "X*" for a
# repeated X, "map:X" for map<string, X>.
Schema = Mapping[str, tuple[tuple[str, int, str], ...]]

# (message, ((field, number, type), ...)): upstream's names and numbers, a subset of the fields.
SCHEMA: Schema = {
    # k8s.io/apimachinery/pkg/runtime
    "Unknown": (("raw", 2, "bytes"),),
    # k8s.io/apimachinery/pkg/apis/meta/v1
    "ListMeta": (("resourceVersion", 2, "string"), ("continue", 3, "string")),
    "ObjectMeta": (
        ("name", 1, "string"),
        ("uid", 5, "string"),
        ("resourceVersion", 6, "string"),
        ("labels", 11, "map:string"),
    ),
    # k8s.io/apimachinery/pkg/api/resource
    "Quantity": (("string", 1, "string"),),
    # k8s.io/api/core/v1
    "Taint": (("key", 1, "string"), ("value", 2, "string"), ("effect", 3, "string")),
    "NodeSpec": (("unschedulable", 4, "bool"), ("taints", 5, "Taint*")),
    "ContainerImage": (("names", 1, "string*"), ("sizeBytes", 2, "int64")),
    "NodeCondition": (("type", 1, "string"), ("status", 2, "string")),
    "NodeStatus": (
        ("capacity", 1, "map:Quantity"),
        ("allocatable", 2, "map:Quantity"),
        ("conditions", 4, "NodeCondition*"),
        ("images", 8, "ContainerImage*"),
        ("declaredFeatures", 14, "string*"),
    ),
    "Node": (("metadata", 1, "ObjectMeta"), ("spec", 2, "NodeSpec"), ("status", 3, "NodeStatus")),
    "NodeList": (("metadata", 1, "ListMeta"), ("items", 2, "Node*")),
}

_F = descriptor_pb2.FieldDescriptorProto
_SCALARS = {
    "string": _F.TYPE_STRING,
    "bytes": _F.TYPE_BYTES,
    "bool": _F.TYPE_BOOL,
    "int32": _F.TYPE_INT32,
    "int64": _F.TYPE_INT64,
}


def _field(message: descriptor_pb2.DescriptorProto, name: str, number: int, type_: str) -> None:
    field = message.field.add(name=name, number=number, json_name=name)
    if type_.startswith("map:"):
        # map<string, V>: a repeated nested XEntry {key = 1; value = 2} marked as a map entry.
        entry = message.nested_type.add(name=name[0].upper() + name[1:] + "Entry")
        entry.options.map_entry = True
        _field(entry, "key", 1, "string")
        _field(entry, "value", 2, type_[4:])
        field.label = _F.LABEL_REPEATED
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{_PACKAGE}.{message.name}.{entry.name}"
        return
    repeated = type_.endswith("*")
    type_ = type_.rstrip("*")
    field.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
    if type_ in _SCALARS:
        field.type = _SCALARS[type_]
    else:
        field.type = _F.TYPE_MESSAGE
        field.type_name = f".{_PACKAGE}.{type_}"


def message_classes(schema: Schema = SCHEMA) -> dict[str, Any]:
    """The message classes of `schema`, in a pool of their own (proto2, as upstream)."""
    file = descriptor_pb2.FileDescriptorProto(
        name="policy_scheduler_k8s.proto", package=_PACKAGE, syntax="proto2"
    )
    for name, fields in schema.items():
        message = file.message_type.add(name=name)
        for field_name, number, type_ in fields:
            _field(message, field_name, number, type_)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{name}"))
        for name in schema
    }


_CLASSES = message_classes()
_UNKNOWN = _CLASSES["Unknown"]
_NODE_LIST = _CLASSES["NodeList"]


# ---- messages -> structs ----------------------------------------------------------------------------


def _quantities(values: Any) -> dict[str, structs.Quantity] | None:
    return {name: q.string for name, q in values.items()} if values else None


def _capacity(
    capacity: Any, allocatable: dict[str, structs.Quantity] | None
) -> dict[str, structs.Quantity] | None:
    """All of it without allocatable (SetDefaults_NodeStatus: allocatable defaults to capacity),
    else only the memory that node pressure counts against."""
    if allocatable is None:
        return _quantities(capacity)
    return {MEMORY: capacity[MEMORY].string} if MEMORY in capacity else None


def _node(n: Any) -> structs.Node:
    meta, spec, status = n.metadata, n.spec, n.status
    labels, taints, images, conditions = meta.labels, spec.taints, status.images, status.conditions
    allocatable = _quantities(status.allocatable)
    return structs.Node(
        metadata=structs.ObjectMeta(
            name=meta.name,
            uid=meta.uid,
            labels=dict(labels.items()) if labels else None,
            resource_version=meta.resourceVersion,
        ),
        spec=structs.NodeSpec(
            unschedulable=spec.unschedulable,
            taints=[structs.Taint(key=t.key, value=t.value, effect=t.effect) for t in taints]
            if taints
            else None,
        ),
        status=structs.NodeStatus(
            allocatable=allocatable,
            capacity=_capacity(status.capacity, allocatable),
            conditions=[structs.NodeCondition(type=c.type, status=c.status) for c in conditions]
            if conditions
            else None,
            images=[
                structs.ContainerImage(names=list(i.names) or None, size_bytes=i.sizeBytes) for i in images
            ]
            if images
            else None,
            declared_features=list(status.declaredFeatures) or None,
        ),
    )


def decode_node_list(body: bytes) -> ListResult[structs.Node]:
    """A NodeList body, protobuf or (if the server answered so) JSON. Raises DecodeError for a
    protobuf body that is cut short or does not parse."""
    if not body.startswith(MAGIC):
        return decode_list(body, structs.Node)
    envelope = _UNKNOWN.FromString(body[len(MAGIC) :])
    if not envelope.HasField("raw"):  # an answer cut before its list: never an empty list
        raise DecodeError("protobuf answer without its list")
    node_list = _NODE_LIST.FromString(envelope.raw)
    meta = node_list.metadata
    # `continue` is a Python keyword: the field is only reachable by name.
    return ListResult([_node(n) for n in node_list.items], meta.resourceVersion, getattr(meta, "continue"))
