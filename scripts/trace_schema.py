"""Write src/agent_profiler/writers/_trace_pb2.py: the few Perfetto messages the writer
encodes, with only the fields it sets, cut from perfetto's full trace schema. The writer
itself now encodes by hand (writers/wire.py, packets.py); `open` reads track descriptors
back with this module.

    python scripts/trace_schema.py [--check]

Importing the whole schema (860 messages) costs ≈ 25 ms of every export's start-up; this
module loads in ≈ 1 ms. Field numbers and types are the schema's own, so the bytes on the
wire are the same (tests/writers/test_trace_schema.py encodes with both and compares). It lives
in its own descriptor pool under its own package, so the full schema can be loaded beside
it (the tests decode with it). Re-run after a writer starts setting another field.
"""

from __future__ import annotations

import argparse
import binascii
import sys
from pathlib import Path

from google.protobuf import descriptor_pb2
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as full

ROOT = Path(__file__).resolve().parent.parent
TARGET = ROOT / "src" / "agent_profiler" / "writers" / "_trace_pb2.py"
PACKAGE = "agent_profiler.trace"

# message → the fields the writer sets (nested types and enums come along when used).
KEEP: dict[str, tuple[str, ...]] = {
    "TracePacket": (
        "timestamp",
        "timestamp_clock_id",
        "clock_snapshot",
        "track_event",
        "track_descriptor",
        "trusted_packet_sequence_id",
        "interned_data",
        "sequence_flags",
        "trace_packet_defaults",
        "trace_attributes",
    ),
    "TraceAttributes": ("attribute",),
    "TraceAttributes.Attribute": ("key", "string_value", "long_value"),
    "ClockSnapshot": ("clocks", "primary_trace_clock"),
    "ClockSnapshot.Clock": ("clock_id", "timestamp", "is_incremental"),
    "TracePacketDefaults": ("timestamp_clock_id",),
    "TrackEvent": (
        "category_iids",
        "debug_annotations",
        "type",
        "track_uuid",
        "counter_value",
        "extra_counter_track_uuids",
        "extra_counter_values",
        "flow_ids",
        "name_iid",
    ),
    "DebugAnnotation": (
        "name_iid",
        "bool_value",
        "uint_value",
        "int_value",
        "double_value",
        "string_value",
        "string_value_iid",
        "dict_entries",
        "array_values",
    ),
    "TrackDescriptor": (
        "uuid",
        "parent_uuid",
        "name",
        "description",
        "counter",
        "sibling_merge_behavior",
        "child_ordering",
        "sibling_order_rank",
    ),
    "CounterDescriptor": ("unit", "unit_name", "y_axis_share_key"),
    "InternedData": (
        "event_categories",
        "event_names",
        "debug_annotation_names",
        "debug_annotation_string_values",
    ),
    "EventCategory": ("iid", "name"),
    "EventName": ("iid", "name"),
    "DebugAnnotationName": ("iid", "name"),
    "InternedString": ("iid", "str"),
}
TOP_ENUMS = ("BuiltinClock",)


def _renamed(type_name: str) -> str:
    return type_name.replace(".perfetto.protos.", f".{PACKAGE}.", 1)


def _cut(message: descriptor_pb2.DescriptorProto, path: str) -> descriptor_pb2.DescriptorProto:
    keep = KEEP[path]
    out = descriptor_pb2.DescriptorProto(name=message.name)
    used_oneofs: dict[int, int] = {}
    for field in message.field:
        if field.name not in keep:
            continue
        copy = out.field.add()
        copy.CopyFrom(field)
        copy.ClearField("options")
        if field.HasField("oneof_index"):
            index = used_oneofs.setdefault(field.oneof_index, len(used_oneofs))
            copy.oneof_index = index
        if field.type_name:
            copy.type_name = _renamed(field.type_name)
    missing = set(keep) - {f.name for f in out.field}
    if missing:
        raise SystemExit(f"{path}: no field {', '.join(sorted(missing))} in the schema")
    for old_index in sorted(used_oneofs, key=used_oneofs.__getitem__):
        out.oneof_decl.add(name=message.oneof_decl[old_index].name)
    for enum in message.enum_type:  # all of them: some are values of plain uint fields
        out.enum_type.add().CopyFrom(enum)
    for nested in message.nested_type:
        if f"{path}.{nested.name}" in KEEP:
            out.nested_type.add().CopyFrom(_cut(nested, f"{path}.{nested.name}"))
    return out


def schema() -> bytes:
    whole = descriptor_pb2.FileDescriptorProto()
    full.DESCRIPTOR.CopyToProto(whole)
    out = descriptor_pb2.FileDescriptorProto(
        name="agent_profiler/trace.proto", package=PACKAGE, syntax=whole.syntax or None
    )
    messages = {m.name: m for m in whole.message_type}
    for name in KEEP:
        if "." not in name:
            out.message_type.add().CopyFrom(_cut(messages[name], name))
    enums = {e.name: e for e in whole.enum_type}
    for name in TOP_ENUMS:
        out.enum_type.add().CopyFrom(enums[name])
    return out.SerializeToString(deterministic=True)


def module() -> str:
    text = binascii.b2a_base64(schema(), newline=False).decode()
    lines = "".join(f'    "{text[i : i + 88]}"\n' for i in range(0, len(text), 88))
    return (
        '"""The Perfetto messages the writer encodes, cut from the full trace schema by\n'
        "scripts/trace_schema.py (do not edit; re-run it). Same field numbers and types,\n"
        'so the same bytes; a private descriptor pool, so the full schema loads beside it."""\n'
        "\n"
        "import binascii\n"
        "\n"
        "from google.protobuf import descriptor_pool\n"
        "from google.protobuf.internal import builder\n"
        "\n"
        "_SCHEMA = binascii.a2b_base64(\n"
        f"{lines}"
        ")\n"
        "DESCRIPTOR = descriptor_pool.DescriptorPool().AddSerializedFile(_SCHEMA)\n"
        "builder.BuildMessageAndEnumDescriptors(DESCRIPTOR, globals())\n"
        "builder.BuildTopDescriptorsAndMessages("
        'DESCRIPTOR, "agent_profiler.trace_pb2", globals())\n'
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the module is stale")
    args = parser.parse_args()
    text = module()
    if args.check:
        if TARGET.read_text() != text:
            print(f"{TARGET} is stale: run scripts/trace_schema.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
