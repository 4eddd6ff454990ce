"""The protobuf wire format, as much of it as the Perfetto writer encodes by hand: varints,
field tags, length-delimited fields, and typed DebugAnnotation values (nested dicts and
arrays included).

The writer's hot path (a slice's begin, its end, a counter packet, each request's
`context` dict of about 45 annotation leaves) is encoded here straight to bytes instead of
through protobuf objects: setting fields one by one on a message and serialising it cost
about 90 µs per request, the largest part of the writer (docs/performance.md). Fields are
written in field-number order, as protobuf's own serialiser writes them, so the bytes are
the same as the objects gave (checked once: every export of the corpus byte for byte).

Field numbers and wire types are those of perfetto/protos (trace_packet.proto,
track_event.proto, debug_annotation.proto, interned_data.proto); none of those repeated
scalars is packed (proto2 without [packed = true])."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

_BYTE = [bytes((i,)) for i in range(128)]


def varint(value: int) -> bytes:
    """A non-negative integer as a base-128 varint (a negative int64 is taken modulo 2**64
    first, as protobuf writes it: ten bytes)."""
    if value < 0x80:
        if value >= 0:
            return _BYTE[value]
        value += 1 << 64
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def tag(field: int, wire_type: int) -> bytes:
    """A field's key: (field number << 3) | wire type, as a varint."""
    return varint(field << 3 | wire_type)


VARINT, FIXED64, LENGTH = 0, 1, 2


def field_bytes(field: int, data: bytes) -> bytes:
    """A length-delimited field (a message, a string, bytes)."""
    return tag(field, LENGTH) + varint(len(data)) + data


def field_varint(field: int, value: int) -> bytes:
    return tag(field, VARINT) + varint(value)


def record(packet: bytes) -> bytes:
    """One `Trace.packet` (field 1): a Trace is its packets back to back."""
    return b"\x0a" + varint(len(packet)) + packet


# DebugAnnotation (debug_annotation.proto): the name and one value of a oneof.
_NAME_IID = tag(1, VARINT)
_BOOL = {True: tag(2, VARINT) + b"\x01", False: tag(2, VARINT) + b"\x00"}
_UINT = tag(3, VARINT)
_INT = tag(4, VARINT)
_DOUBLE = tag(5, FIXED64)
_STRING = tag(6, LENGTH)
_DICT_ENTRY = tag(11, LENGTH)
_ARRAY_VALUE = tag(12, LENGTH)
_STRING_IID = tag(17, VARINT)
_pack_double = struct.Struct("<d").pack


def name_iid_field(iid: int) -> bytes:
    """An annotation's `name_iid`: the bytes every annotation of that name starts with."""
    return _NAME_IID + varint(iid)


def string_iid_field(iid: int) -> bytes:
    return _STRING_IID + varint(iid)


class AnnotationEncoder:
    """Typed debug annotations (TRACE_CONTRACT §4) as bytes: uint for non-negative
    integers, int for negative ones, double, bool, string (interned or not), arrays and
    dicts. `name_field(name)` and `string_field(value)` give the cached `name_iid` and
    `string_value_iid` fields (interning the text when it is new); `unique` names the keys
    whose string values are never interned; longer strings than `max_interned` are not."""

    __slots__ = ("max_interned", "name_field", "string_field", "unique")

    def __init__(
        self,
        name_field: Callable[[str], bytes],
        string_field: Callable[[str], bytes],
        unique: frozenset[str],
        max_interned: int = 64,
    ) -> None:
        self.name_field = name_field
        self.string_field = string_field
        self.unique = unique
        self.max_interned = max_interned

    def annotation(self, name: str | None, value: Any) -> bytes:
        """One DebugAnnotation message's bytes (without its own tag and length).

        This runs about 70 times per request (the `context` dict), so it dispatches on
        the exact type, and the interned fields come from caches of bytes."""
        head = b"" if name is None else self.name_field(name)
        kind = type(value)
        if kind is str:
            if len(value) > self.max_interned or name in self.unique:
                data: bytes = value.encode()
                return head + _STRING + varint(len(data)) + data
            return head + self.string_field(value)
        if kind is int:
            if 0 <= value < 0x80:
                small: bytes = _BYTE[value]
                return head + _UINT + small
            if 0 <= value < 1 << 64:
                return head + _UINT + varint(value)
            if -(1 << 63) <= value < 0:
                return head + _INT + varint(value + (1 << 64))
            data = str(value).encode()  # out of the wire's range
            return head + _STRING + varint(len(data)) + data
        if kind is dict:
            parts = [head]
            for key, item in value.items():
                entry = self.annotation(str(key), item)
                parts.append(_DICT_ENTRY + varint(len(entry)) + entry)
            return b"".join(parts)
        if kind is bool:
            return head + _BOOL[value]
        if kind is list or kind is tuple:
            # An empty list leaves the annotation with a name and no value (an empty array).
            parts = [head]
            for item in value:
                entry = self.annotation(None, item)
                parts.append(_ARRAY_VALUE + varint(len(entry)) + entry)
            return b"".join(parts)
        if kind is float:
            return head + _DOUBLE + _pack_double(value)
        if isinstance(value, str):  # str subclasses (StrEnum members)
            return head + self.annotation(None, str(value))
        if isinstance(value, int):  # int subclasses (IntEnum)
            return head + self.annotation(None, int(value))
        data = str(value).encode()
        return head + _STRING + varint(len(data)) + data
