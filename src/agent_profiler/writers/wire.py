"""The protobuf wire format, as much of it as the Perfetto writer encodes by hand: varints,
field tags, length-delimited fields, and typed DebugAnnotation values (nested dicts and
arrays included).

The writer's hot path (a slice's begin, its end, a counter packet, a slice's arguments
as a dict; direct.py the heaviest, each request's, from the model) is encoded straight to
bytes instead of through protobuf objects: setting fields one by one on a message and
serialising it cost about 90 µs per request, the largest part of the writer
(docs/performance.md). Fields are written in field-number order, as protobuf's own
serialiser writes them, so the bytes are the same as the objects gave (checked once: every
export of the corpus byte for byte).

Field numbers and wire types are those of perfetto/protos (trace_packet.proto,
track_event.proto, debug_annotation.proto, interned_data.proto); none of those repeated
scalars is packed (proto2 without [packed = true])."""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

_BYTE = [bytes((i,)) for i in range(128)]
_NEGATIVE_TAIL = b"\xff\xff\xff\xff\xff\x01"  # bits 28–63 of -2**28 … -1, as int64


def varint(value: int) -> bytes:
    """A non-negative integer as a base-128 varint (a negative int64 is taken modulo 2**64
    first, as protobuf writes it: ten bytes). Up to five bytes are written without a
    loop: delta timestamps (a millisecond is 10**6 ns, three bytes; a few seconds, five)
    and token counts are most varints of more than one byte."""
    if value < 0x80:
        if value >= 0:
            return _BYTE[value]
        if value >= -0x10000000:  # a small negative (a delta): its 36 high bits all ones
            value &= 0xFFFFFFF  # its low 28 bits, four bytes (as below), all continued
            return (
                value
                + (value & 0x3F80)
                + 3 * (value & 0x1FC000)
                + 7 * (value & 0xFE00000)
                + 0x80808080
            ).to_bytes(4, "little") + _NEGATIVE_TAIL
        value += 1 << 64
    # The varint as the little-endian int of its bytes: each 7-bit group moved up one bit
    # per group below it (the value once, plus what each group gains), the continuation
    # bits added; int.to_bytes makes it in one call, a third cheaper than bytes((…)).
    elif value < 0x4000:  # token counts, lengths: most varints are one or two bytes
        return (value + (value & 0x3F80) + 0x80).to_bytes(2, "little")
    elif value < 0x200000:
        return (value + (value & 0x3F80) + 3 * (value & 0x1FC000) + 0x8080).to_bytes(3, "little")
    elif value < 0x10000000:
        return (
            value + (value & 0x3F80) + 3 * (value & 0x1FC000) + 7 * (value & 0xFE00000) + 0x808080
        ).to_bytes(4, "little")
    elif value < 0x800000000:
        return (
            value
            + (value & 0x3F80)
            + 3 * (value & 0x1FC000)
            + 7 * (value & 0xFE00000)
            + 15 * (value & 0x7F0000000)
            + 0x80808080
        ).to_bytes(5, "little")
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


# The fields' keys, for a caller that has the iid's varint already (events.py interning).
NAME_IID_KEY, STRING_IID_KEY = _NAME_IID, _STRING_IID


def name_iid_field(iid: int) -> bytes:
    """An annotation's `name_iid`: the bytes every annotation of that name starts with."""
    return _NAME_IID + varint(iid)


def string_iid_field(iid: int) -> bytes:
    return _STRING_IID + varint(iid)


# A non-negative int below 128 as a whole `uint_value` field, and a length below 128.
_SMALL_UINT = [_UINT + b for b in _BYTE]

# Strings up to this many characters are interned (unless their key is unique).
MAX_INTERNED = 64


def annotation_encoder(
    name_fields: dict[str, bytes],
    new_name: Callable[[str], bytes],
    string_fields: dict[str, bytes],
    new_string: Callable[[str], bytes],
    unique: frozenset[str],
    max_interned: int = MAX_INTERNED,
) -> tuple[
    Callable[[str | None, Any], bytes], Callable[[dict[Any, Any], bytes], bytes], Callable[[], None]
]:
    """Typed debug annotations (TRACE_CONTRACT §4) as bytes: uint for non-negative
    integers, int for negative ones, double, bool, string (interned or not), arrays and
    dicts. Returns three functions: `annotation(name, value)`, one DebugAnnotation message
    (without its own tag and length; name None in an array), `entries(mapping, tag)`,
    a dict's items as annotations framed with `tag` (a TrackEvent's debug_annotations, or
    a dict annotation's dict_entries), back to back, and `forget()`, which ends them: they
    call each other (a dict in a list in a dict), a cycle that holds the tables and the
    `new_*` functions until the cycle collector runs; `forget` lets them go at once.

    `name_fields` and `string_fields` cache each interned text's `name_iid` and
    `string_value_iid` field; `new_name` and `new_string` intern a text not in them yet
    (and return its field). String values of the keys in `unique`, and strings longer than
    `max_interned`, are written as they are.

    This runs about 90 times per request (the `context` dict), so it dispatches on the
    exact type, the common leaves first, with the caches and tables bound as locals. A
    dict item whose value is an interned string, a bool or an int below 128 is framed once
    and kept whole (its key and value interned already): most of a `changes` entry's items
    are (`category`, `change`, `source_kind`, a label), so they cost one lookup."""
    get_name = name_fields.get
    get_string = string_fields.get
    small_uint: list[bytes] = _SMALL_UINT
    small: list[bytes] = _BYTE
    # per tag: framed items by (key, value), for interned strings, bools, ints below 128
    caches: dict[bytes, tuple[dict[Any, bytes], dict[Any, bytes], dict[Any, bytes]]] = {}
    uints: dict[int, bytes] = {}  # the uint_value field of each int below 2**14 met
    get_uint = uints.get

    def value_bytes(name: str | None, value: Any) -> bytes:
        kind = type(value)
        if kind is str:
            if len(value) <= max_interned and name not in unique:
                field: bytes | None = get_string(value)
                return field if field is not None else new_string(value)
            data: bytes = value.encode()
            size = len(data)
            return _STRING + (small[size] if size < 0x80 else varint(size)) + data
        if kind is int:
            if 0 <= value < 0x80:
                leaf: bytes = small_uint[value]
                return leaf
            if 0 <= value < 0x4000:  # token and character counts: a field kept per value
                known = get_uint(value)
                if known is None:
                    known = uints[value] = _UINT + varint(value)
                return known
            if 0 <= value < 1 << 64:
                return _UINT + varint(value)
            if -(1 << 63) <= value < 0:
                return _INT + varint(value + (1 << 64))
            data = str(value).encode()  # out of the wire's range
            return _STRING + varint(len(data)) + data
        if kind is dict:
            return entries(value, _DICT_ENTRY)
        if kind is bool:
            return _BOOL[value]
        if kind is list or kind is tuple:
            # An empty list leaves the annotation with a name and no value (an empty array).
            parts: list[bytes] = []
            for item in value:
                entry = value_bytes(None, item)
                size = len(entry)
                parts += (_ARRAY_VALUE, small[size] if size < 0x80 else varint(size), entry)
            return b"".join(parts)
        if kind is float:
            return _DOUBLE + _pack_double(value)
        if isinstance(value, str):  # str subclasses (StrEnum members): never a unique key
            return value_bytes(None, str(value))
        if isinstance(value, int):  # int subclasses (IntEnum)
            return value_bytes(None, int(value))
        data = str(value).encode()
        return _STRING + varint(len(data)) + data

    def annotation(name: str | None, value: Any) -> bytes:
        if name is None:
            return value_bytes(None, value)
        head = get_name(name)
        return (head if head is not None else new_name(name)) + value_bytes(name, value)

    def framed(tag: bytes, key: Any, value: Any) -> bytes:
        name = key if type(key) is str else str(key)
        head = get_name(name)
        entry = (head if head is not None else new_name(name)) + value_bytes(name, value)
        size = len(entry)
        return tag + (small[size] if size < 0x80 else varint(size)) + entry

    def entries(mapping: dict[Any, Any], tag: bytes) -> bytes:
        cached = caches.get(tag)
        if cached is None:
            cached = caches[tag] = ({}, {}, {})
        strings, flags, smalls = cached
        parts: list[bytes] = []
        append = parts.append
        for key, value in mapping.items():
            kind = type(value)
            if kind is str:
                if len(value) <= max_interned and key not in unique:
                    item = strings.get((key, value))
                    if item is None:
                        item = strings[(key, value)] = framed(tag, key, value)
                    append(item)
                    continue
                if type(key) is str:  # an id or a long text, written as it is: inline
                    head = get_name(key)
                    if head is None:
                        head = new_name(key)
                    data = value.encode()
                    size = len(data)
                    entry = head + _STRING + (small[size] if size < 0x80 else varint(size)) + data
                    size = len(entry)
                    append(tag + (small[size] if size < 0x80 else varint(size)) + entry)
                    continue
            elif kind is int:
                if 0 <= value < 0x80:
                    item = smalls.get((key, value))
                    if item is None:
                        item = smalls[(key, value)] = framed(tag, key, value)
                    append(item)
                    continue
                if 0 <= value < 0x4000 and type(key) is str:  # a token count: inline
                    head = get_name(key)
                    if head is None:
                        head = new_name(key)
                    known = get_uint(value)
                    if known is None:
                        known = uints[value] = _UINT + varint(value)
                    entry = head + known  # at most 3 + 3 bytes: its length is one byte
                    append(tag + small[len(entry)] + entry)
                    continue
            elif kind is bool:
                item = flags.get((key, value))
                if item is None:
                    item = flags[(key, value)] = framed(tag, key, value)
                append(item)
                continue
            append(framed(tag, key, value))
        return b"".join(parts)

    def forget() -> None:
        nonlocal value_bytes, framed, entries
        del value_bytes, framed, entries
        caches.clear()

    return annotation, entries, forget
