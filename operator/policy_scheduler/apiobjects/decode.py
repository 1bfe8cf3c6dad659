"""Fast JSON decoding of LIST bodies and WATCH lines into the structs.

The happy path decodes a whole body with one cached, typed msgspec decoder. Only when that
fails validation (an object the API server accepted but our declared types do not) do we fall
back to decoding item by item, so one odd object never hides the rest: it comes back as a
`DecodeFailure` carrying whatever metadata could be read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

import msgspec

from policy_scheduler.apiobjects import structs
from policy_scheduler.apiobjects.errors import ConversionError

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class DecodeFailure:
    """An object that could not be decoded into its struct type."""

    metadata: structs.ObjectMeta
    error: str  # msgspec's message, naming the field ("... - at `$.spec.priority`")
    event_type: str = ""  # the watch event type, "" for list items
    # Read leniently so a broken pod can still be attributed to its scheduler and node.
    scheduler_name: str = ""
    node_name: str = ""

    def describe(self, collection_path: str) -> str:
        """In the user's terms, the object as kubectl names it and the field:
        ``resourceslices/gpu-0: spec.devices[0].capacity.memory.value: Expected ...``."""
        meta = self.metadata
        key = f"{meta.namespace}/{meta.name}" if meta.namespace else meta.name
        where = f"{collection_path.rsplit('/', 1)[-1]}/{key}"
        return str(ConversionError.from_msgspec(self.error, where))


@dataclass(slots=True)
class ListResult(Generic[T]):
    items: list[T]
    resource_version: str
    continue_token: str
    failures: list[DecodeFailure] = field(default_factory=list)


_KNOWN = (
    structs.Pod,
    structs.Node,
    structs.Namespace,
    structs.PriorityClass,
    structs.PodDisruptionBudget,
)
_Decoder = msgspec.json.Decoder[Any]
# One decoder per (envelope, type): msgspec compiles a type into a decoding plan once.
_DECODERS: dict[tuple[str, Any], _Decoder] = {}
_RAW_LIST = msgspec.json.Decoder(structs.ObjectList[msgspec.Raw])
_RAW_EVENT = msgspec.json.Decoder(structs.WatchEvent[msgspec.Raw])
_STATUS_EVENT = msgspec.json.Decoder(structs.WatchEvent[structs.Status])
STATUS_DECODER = msgspec.json.Decoder(structs.Status)


def _decoder(envelope: str, item_type: Any) -> _Decoder:
    dec = _DECODERS.get((envelope, item_type))
    if dec is None:
        target: Any = item_type
        if envelope == "list":
            target = structs.ObjectList[item_type]
        elif envelope == "event":
            target = structs.WatchEvent[item_type]
        dec = _DECODERS[envelope, item_type] = msgspec.json.Decoder(target)
    return dec


for _t in _KNOWN:
    for _envelope in ("item", "list", "event"):
        _decoder(_envelope, _t)


def item_decoder(item_type: type[T]) -> msgspec.json.Decoder[T]:
    return cast("msgspec.json.Decoder[T]", _decoder("item", item_type))


def _str(d: dict[str, Any], key: str) -> str:
    value = d.get(key)
    return value if isinstance(value, str) else ""


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _lenient_meta(meta: dict[str, Any]) -> structs.ObjectMeta:
    try:
        return msgspec.convert(meta, structs.ObjectMeta)
    except msgspec.ValidationError:
        # Even metadata is odd: keep the identity strings that are readable.
        return structs.ObjectMeta(
            name=_str(meta, "name"),
            namespace=_str(meta, "namespace"),
            uid=_str(meta, "uid"),
            resource_version=_str(meta, "resourceVersion"),
        )


def _failure(raw: bytes | msgspec.Raw, error: Exception, event_type: str = "") -> DecodeFailure:
    try:
        obj = _dict(msgspec.json.decode(raw))
    except msgspec.DecodeError:
        obj = {}
    spec = _dict(obj.get("spec"))
    return DecodeFailure(
        metadata=_lenient_meta(_dict(obj.get("metadata"))),
        error=str(error),
        event_type=event_type,
        scheduler_name=_str(spec, "schedulerName"),
        node_name=_str(spec, "nodeName"),
    )


def decode_list(body: bytes, item_type: type[T]) -> ListResult[T]:
    """Decode a LIST response body. Raises msgspec.DecodeError only for a body that is not a list."""
    try:
        lst = _decoder("list", item_type).decode(body)
        return ListResult(lst.items or [], lst.metadata.resource_version, lst.metadata.continue_)
    except msgspec.ValidationError:
        pass
    raw_list = _RAW_LIST.decode(body)
    dec = item_decoder(item_type)
    items: list[T] = []
    failures: list[DecodeFailure] = []
    for raw in raw_list.items or ():
        try:
            items.append(dec.decode(raw))
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            failures.append(_failure(raw, exc))
    meta = raw_list.metadata
    return ListResult(items, meta.resource_version, meta.continue_, failures)


def decode_watch_event(
    line: bytes, item_type: type[T]
) -> structs.WatchEvent[T] | structs.Status | DecodeFailure:
    """Decode one line of a watch stream.

    ERROR events come back as their `Status`; an object that does not fit `item_type` comes
    back as a `DecodeFailure` (with the event type) rather than raising. Raises
    msgspec.DecodeError only for a line that is not a watch event at all.
    """
    try:
        event = cast("structs.WatchEvent[T]", _decoder("event", item_type).decode(line))
    except msgspec.ValidationError as exc:
        raw_event = _RAW_EVENT.decode(line)
        if raw_event.type == "ERROR":
            return _STATUS_EVENT.decode(line).object
        return _failure(raw_event.object, exc, raw_event.type)
    if event.type == "ERROR":
        # The object of an ERROR event is a Status, not an item: decode it again as one.
        return _STATUS_EVENT.decode(line).object
    return event


def decode_status(body: bytes) -> structs.Status | None:
    """The Status in an error response body, or None when the body is not one."""
    try:
        return STATUS_DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
