"""A chain of 3,000 Codex threads, each spawned by the one before (a damaged or synthetic
journal can hold one; so can an OpenCode `parent_id` chain): export, summary and report
walk the session tree with stacks of their own, not Python's, so the chain is laid out,
summarised and reported in its order, each thread after its parent, and never ends as an
internal error (RecursionError, exit 70). Hand-made small rollouts."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
from typer.testing import CliRunner

from agent_profiler.cli import app

DEPTH = 3_000


def _thread(k: int) -> str:
    return f"019c8a70-0000-7000-8000-{k:012x}"


def _at(ms: int) -> str:
    return f"2026-01-01T10:{ms // 60_000:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}Z"


def _rollout(k: int) -> str:
    """Thread k: one prompt and one reply; spawned by thread k - 1 (but the first)."""
    start = 10 * k
    meta: dict[str, Any] = {"id": _thread(k), "timestamp": _at(start), "cwd": "/home/USER/demo"}
    meta |= {"originator": "codex_cli_rs", "cli_version": "0.125.0", "source": "cli"}
    if k:
        spawn = {"parent_thread_id": _thread(k - 1), "depth": k}
        meta["source"] = {"subagent": {"thread_spawn": spawn}}
    usage = {"input_tokens": 1000, "cached_input_tokens": 0, "output_tokens": 10}
    usage |= {"reasoning_output_tokens": 0, "total_tokens": 1010}
    said = {"type": "input_text", "text": "do it"}
    info = {"total_token_usage": usage, "last_token_usage": usage}
    lines = [
        ("session_meta", meta),
        ("turn_context", {"turn_id": "t", "cwd": "/home/USER/demo", "model": "gpt-5.3-codex"}),
        ("response_item", {"type": "message", "role": "user", "content": [said]}),
        ("event_msg", {"type": "user_message", "message": "do it", "images": []}),
        ("event_msg", {"type": "token_count", "info": info}),
        (
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "done"}],
            },
        ),
    ]
    return "".join(
        json.dumps({"timestamp": _at(start + n), "type": kind, "payload": payload}) + "\n"
        for n, (kind, payload) in enumerate(lines)
    )


@pytest.fixture(scope="module")
def chain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("chain")
    for k in range(DEPTH + 1):
        (folder / f"rollout-2026-01-01T10-00-00-{_thread(k)}.jsonl").write_text(_rollout(k))
    return folder


def _groups(trace: Path) -> list[tuple[int, str, int]]:
    """(uuid, name, parent uuid) of each session's group track, in the trace's order.
    Read straight from the descriptors: traceview.load_trace and the contract check go
    through a trace's tracks in time that grows faster than their number."""
    decoded = pb.Trace()
    decoded.ParseFromString(trace.read_bytes())
    return [
        (d.uuid, d.name, d.parent_uuid)
        for packet in decoded.packet
        if packet.HasField("track_descriptor")
        and re.match(r"(Codex|Subagent) [0-9a-f]{8}\b", (d := packet.track_descriptor).name)
    ]


def test_a_chain_of_3000_threads_is_exported_each_after_its_parent(
    chain: Path, tmp_path: Path
) -> None:
    """Each thread's group in the chain's order, each hanging from its parent's."""
    out = tmp_path / "chain.pftrace"
    result = CliRunner().invoke(app, ["export", str(chain), "-o", str(out), "--no-compress"])
    assert result.exit_code == 0, result.output + result.stderr
    groups = _groups(out)
    assert [name.split()[1] for _, name, _ in groups] == [f"{k:08x}" for k in range(DEPTH + 1)]
    for (uuid, name, _), (_, child, parent) in itertools.pairwise(groups):
        assert parent == uuid
        assert child.startswith(f"Subagent {child.split()[1]} of {name.split()[1]} ")


def test_a_chain_of_3000_threads_is_summarised_each_after_its_parent(chain: Path) -> None:
    result = CliRunner().invoke(app, ["summary", str(chain), "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    rows = json.loads(result.stdout)
    rows = rows if isinstance(rows, list) else rows["sessions"]
    assert [row["session"] for row in rows] == [_thread(k) for k in range(DEPTH + 1)]
    assert [row.get("parent") for row in rows] == [None] + [_thread(k) for k in range(DEPTH)]


def test_a_chain_of_3000_threads_is_reported_each_after_its_parent(
    chain: Path, tmp_path: Path
) -> None:
    out = tmp_path / "chain.html"
    result = CliRunner().invoke(app, ["report", str(chain), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    page = out.read_text()
    places = [page.find(_thread(k)) for k in range(DEPTH + 1)]
    assert -1 not in places
    assert places == sorted(places)
