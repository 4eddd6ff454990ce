"""`open` passes Perfetto startup commands in its URL (issue 29): the first session's group,
capture and Context group expanded, its Context size pinned, and only commands on the UI's
allow-list (ui/src/core/startup_command_allowlist.ts). The URL is decoded as the UI does
(URL().searchParams, then JSON.parse) and each path regex is matched against the tracks'
paths in a real exported trace (names joined with " > ", as TrackNode.fullPath is)."""

from __future__ import annotations

import json
import re
import urllib.parse
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.serve import ALLOWED_STARTUP_COMMANDS, startup_commands, ui_url
from samples import DATA
from traceview import TraceView

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
CODEX = DATA / "codex"
# One session alone: no other capture has a Context group to stand in for its own.
ONE = DATA / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"


def _paths(view: TraceView) -> dict[int, str]:
    return {
        uuid: " > ".join(t.name for t in reversed(view.ancestors(uuid))) for uuid in view.tracks
    }


def _commands_of(url: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlsplit(url.split("#!", 1)[1]).query
    (encoded,) = urllib.parse.parse_qs(query)["startupCommands"]
    commands = json.loads(encoded)
    assert isinstance(commands, list)
    return commands


@pytest.mark.parametrize("journals", [(CODEX, SPOTTER), (ONE,)], ids=["several", "one"])
def test_the_url_expands_the_first_session_and_pins_its_context_size(
    export_trace: Any, journals: tuple[Path, ...]
) -> None:
    exported = export_trace(*journals)
    view = exported.view
    url = ui_url(exported.path.name, 9001, startup_commands(exported.path))
    assert url.startswith("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/")
    assert "+" not in url.split("startupCommands=", 1)[1]  # URL() would read it as a space
    commands = _commands_of(url)
    assert {c["id"] for c in commands} <= ALLOWED_STARTUP_COMMANDS
    paths = _paths(view)
    # the first session: the root's child with the lowest rank (its real start)
    root = next(t for t in view.tracks.values() if t.parent_uuid is None)
    first = min(view.children_of(root.uuid), key=lambda t: t.sibling_order_rank or 0)
    starts = {
        view.profile_of(c.uuid).ts  # type: ignore[union-attr]
        for c in view.captures()
        if view.tracks[c.parent_uuid].parent_uuid == root.uuid  # type: ignore[index]
    }
    (capture,) = [t for t in view.children_of(first.uuid) if t.name == "agentprof.capture"]
    assert view.profile_of(capture.uuid).ts == min(starts)  # type: ignore[union-attr]
    context = next(t for t in view.children_of(capture.uuid) if t.name == "Context")
    size = next(t for t in view.children_of(capture.uuid) if t.name == "Context size")
    matched: dict[str, set[int]] = {}
    for command in commands:
        pattern, mode = command["args"]
        assert mode == "path"
        found = {uuid for uuid, path in paths.items() if re.search(pattern, path)}
        matched.setdefault(command["id"], set()).update(found)
    assert matched["dev.perfetto.ExpandTracksByRegex"] == {
        root.uuid,
        first.uuid,
        capture.uuid,
        context.uuid,
    }
    assert matched["dev.perfetto.PinTracksByRegex"] == {size.uuid}


def test_no_commands_for_a_trace_that_is_not_ours_and_no_others_allowed(tmp_path: Path) -> None:
    other = tmp_path / "x.pftrace"
    other.write_bytes(b"\x0a\x02\x50\x01")
    assert startup_commands(other) == []
    assert ui_url("x.pftrace") == "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/x.pftrace"
    with pytest.raises(ValueError, match="not allow-listed"):
        ui_url("x.pftrace", 9001, [{"id": "dev.perfetto.RunQuery", "args": ["select 1"]}])


def test_the_commands_read_the_tracks_inside_deflated_packets(tmp_path: Path) -> None:
    """A default trace holds its sessions' descriptors in compressed_packets
    (writers/chunks.py): the commands are those of the same trace written plain, and a
    bundle that does not inflate ends the reading without an error."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    packed, plain = tmp_path / "packed.pftrace", tmp_path / "plain.pftrace"
    runner = CliRunner()
    assert runner.invoke(app, ["export", str(SPOTTER), "-o", str(packed)]).exit_code == 0
    args = ["export", str(SPOTTER), "-o", str(plain), "--no-compress"]
    assert runner.invoke(app, args).exit_code == 0
    commands = startup_commands(packed)
    assert len(commands) >= 4 and commands == startup_commands(plain)
    broken = tmp_path / "broken.pftrace"
    broken.write_bytes(b"\x0a\x06\x92\x03\x03abc")  # a bundle that is not zlib
    assert startup_commands(broken) == []


def _framed(field_tag: bytes, payload: bytes) -> bytes:
    length, out = len(payload), bytearray()
    while True:
        byte = length & 0x7F
        length >>= 7
        out.append(byte | (0x80 if length else 0))
        if not length:
            return field_tag + bytes(out) + payload


def test_compressed_packets_nested_thousands_deep_are_passed_over(
    export_trace: Any, tmp_path: Path
) -> None:
    import zlib

    # GIVEN one of our traces, then a crafted packet: compressed_packets holding a packet
    # that holds compressed_packets, 3,000 deep (a RecursionError for a reader that recurses)
    exported = export_trace(ONE)
    packet = b""
    for _ in range(3000):
        packet = _framed(b"\x92\x03", zlib.compress(_framed(b"\x0a", packet)))
    crafted = tmp_path / "crafted.pftrace"
    crafted.write_bytes(exported.path.read_bytes() + _framed(b"\x0a", packet))
    # WHEN `open` looks for its first session's tracks
    commands = startup_commands(crafted)
    # THEN the trace's own commands come back, as for the trace without the crafted packet
    assert commands == startup_commands(exported.path)
    assert commands
