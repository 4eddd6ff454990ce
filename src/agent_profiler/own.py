"""What this tool wrote, told apart from a journal: its traces (Perfetto protobuf, Chrome
JSON) and reports, given where a journal was expected (`own_output`), and a trace given to
`open` (`is_trace`). Reads a file's first 64 KB at most."""

from __future__ import annotations

from pathlib import Path

import orjson

TRACE_SUFFIXES = (".pftrace", ".perfetto-trace", ".pb", ".trace")
# A Chrome JSON trace is an object with a `traceEvents` array (ours: `export --format json`;
# `is_json_trace_head`), or the bare array of events other tools write, starting so:
JSON_TRACE_ARRAY = b'[{"'


OWN_HEAD = 64 * 1024  # bytes read to tell an output of ours from a journal


def own_output(path: Path) -> str | None:
    """One line naming a trace or report given where a journal was expected (a Perfetto
    trace, a Chrome JSON trace, an HTML report: what `export` and `report` write), with
    how to open it; None for anything else. Reads the file's first 64 KB."""
    if str(path) == "-":  # standard input: read as a journal
        return None
    head = _head(path)
    if head is None:
        return None
    ours = b"agentprof.capture" in head or b"agent-profiler" in head or b"agent_profiler" in head
    by = " written by agent-profiler" if ours else ""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if is_perfetto_trace(head):
        return (
            f"a Perfetto trace{by}, not a journal: open it with "
            f"`agent-profiler open {path}` (or drag it into https://ui.perfetto.dev)"
        )
    if is_json_trace_head(head):
        return (
            f"a Chrome JSON trace{by}, not a journal: open it with "
            f"`agent-profiler open {path}` (or drag it into https://ui.perfetto.dev)"
        )
    lowered = text[:64].lower()
    if lowered.startswith((b"<!doctype html", b"<html")):
        what = "an HTML report written by agent-profiler" if ours else "an HTML page"
        return f"{what}, not a journal: open it in a web browser"
    return None


def is_perfetto_trace(head: bytes) -> bool:
    """Whether a file's first `OWN_HEAD` bytes (or all of a shorter file) are a protobuf
    `Trace`: packets (field 1, length-delimited) back to back, each length within the file,
    the first one's first field a valid TracePacket tag. (`own_output` and `open` ask.)"""
    if len(head) < 4 or head[0] != 0x0A:
        return False
    # 0x0a is also the line feed a journal may start with: packets' varints hold control
    # bytes, text does not.
    if not any(byte < 0x20 and byte not in b"\t\n\r" for byte in head):
        return False
    length, shift, at = 0, 0, 1
    while at < len(head) and at < 11:
        byte = head[at]
        length |= (byte & 0x7F) << shift
        shift += 7
        at += 1
        if not byte & 0x80:
            break
    else:
        return False
    if length == 0 or at >= len(head):
        return False
    tag = head[at]
    # a field number ≥ 1 and a wire type protobuf uses (0, 1, 2, 5)
    return (
        tag >> 3 >= 1
        and tag & 7 in (0, 1, 2, 5)
        and (length <= len(head) - at or len(head) == OWN_HEAD)
    )


def is_trace(path: Path) -> bool:
    """Any trace this tool writes: Perfetto protobuf (by name or by its packets:
    `is_perfetto_trace`) or Chrome JSON (by its head: a JSONL journal never starts
    with `{"traceEvents"`)."""
    if path.suffix in TRACE_SUFFIXES:
        return True
    head = _head(path)
    if head is None:
        return False
    if is_perfetto_trace(head):
        return True
    text = b"".join(head[:4096].split())
    return is_json_trace_head(head) or (
        path.suffix == ".json" and text.startswith(JSON_TRACE_ARRAY) and b'"ph":' in text
    )


def is_json_trace_head(head: bytes) -> bool:
    """A Chrome JSON trace's head: one object with a `traceEvents` array anywhere in it
    (first as written, after `metadata` once keys are sorted: `jq -S .`), read without its
    whitespace (`jq .`, `python -m json.tool`). A journal's first line is a whole record
    without that key (the key in one of its strings has its quotes escaped)."""
    head = head.lstrip(b"\xef\xbb\xbf")
    try:
        first = orjson.loads(head.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        first = None  # a trace written over many lines, or longer than the head
    if isinstance(first, dict):
        return "traceEvents" in first
    text = b"".join(head.split())
    return text[:1] == b"{" and b'"traceEvents":[' in text


def _head(path: Path) -> bytes | None:
    """The file's first `OWN_HEAD` bytes; None when it cannot be read."""
    try:
        with path.open("rb") as stream:
            return stream.read(OWN_HEAD)
    except OSError:
        return None
