"""The items of a Kubernetes protobuf list answer, cut out as the answer arrives.

A protobuf answer is MAGIC, then a runtime.Unknown whose `raw` (field 2) holds the list message:
its ListMeta is field 1 and each item is one field 2, every one length-delimited (upstream's
generated.proto). `ListSplitter` reads only those frames, so a caller can decode each item while
the rest of the answer is still on the way: a large cluster's node list takes a while to arrive,
and decoding it meanwhile keeps that work off the path to the first bind.
"""

from __future__ import annotations

# runtime.Unknown and the list messages: the field that holds the list, and its items.
RAW_FIELD = 2
LIST_META_FIELD = 1
ITEMS_FIELD = 2

_VARINT, _FIXED64, _LENGTH_DELIMITED, _FIXED32 = 0, 1, 2, 5
_COMPACT_AT = 1 << 20  # drop consumed bytes once this many have piled up


class TruncatedList(ValueError):
    """The answer ended before its list did, or holds what a protobuf list cannot."""


def _varint(buf: bytearray, pos: int) -> tuple[int, int] | None:
    """(value, position after it), or None if the buffer ends inside it."""
    value = shift = 0
    while pos < len(buf):
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise TruncatedList("varint longer than 64 bits")
    return None


class ListSplitter:
    """Feed it the answer's bytes after MAGIC (the runtime.Unknown), in any pieces; it returns
    each item's bytes once complete."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._pos = 0
        self._list_end: int | None = None  # where the list message ends, once known
        self._done = False
        self.list_meta = b""

    def feed(self, chunk: bytes) -> list[bytes]:
        self._buf += chunk
        items: list[bytes] = []
        while not self._done:
            in_list = self._list_end is not None
            frame = self._frame()
            if frame is None:
                break
            number, value = frame
            if in_list and value is not None:
                if number == ITEMS_FIELD:
                    items.append(value)
                elif number == LIST_META_FIELD:
                    self.list_meta = value
            if self._list_end is not None and self._pos >= self._list_end:
                self._done = True
        if self._pos >= _COMPACT_AT:
            del self._buf[: self._pos]
            if self._list_end is not None:
                self._list_end -= self._pos
            self._pos = 0
        return items

    def close(self) -> None:
        """The answer is complete: raises TruncatedList unless the whole list was seen."""
        if not self._done:
            raise TruncatedList("the answer ended inside the list")

    def _frame(self) -> tuple[int, bytes | None] | None:
        """The next field: (number, bytes of a length-delimited field's value, else None), or
        None if the buffer ends inside it. The envelope's `raw` field is entered, not read: the
        list's fields are the next frames."""
        buf, pos = self._buf, self._pos
        tag = _varint(buf, pos)
        if tag is None:
            return None
        key, pos = tag
        number, wire_type = key >> 3, key & 7
        if wire_type == _VARINT:
            skipped = _varint(buf, pos)
            if skipped is None:
                return None
            self._pos = skipped[1]
            return number, None
        if wire_type in (_FIXED64, _FIXED32):
            end = pos + (8 if wire_type == _FIXED64 else 4)
            if end > len(buf):
                return None
            self._pos = end
            return number, None
        if wire_type != _LENGTH_DELIMITED:
            raise TruncatedList(f"unsupported wire type {wire_type}")
        length = _varint(buf, pos)
        if length is None:
            return None
        size, pos = length
        if self._list_end is None and number == RAW_FIELD:
            self._pos = pos
            self._list_end = pos + size
            return number, None
        end = pos + size
        if end > len(buf):
            return None
        self._pos = end
        return number, bytes(buf[pos:end])
