"""The one pass (agent_profiler.stream) against the model path on every Claude Code
journal of tests/data and the shared corpus, each exported on its own, as tests/stream/
test_pi_stream.py does for Pi: both traces decoded (traceview.load_trace, with Perfetto's
importer rules) hold the same tracks (by name path and rank), slices with their args,
counter samples and flows (by their ends), and the export says the same (its warnings
too); the stream's trace meets TRACE_CONTRACT §8 (export_trace checks it). A journal the
pass does not handle is listed in NOT_HANDLED with the reason, and its export under the
switch is the model path's, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from test_pi_stream import assert_same_export, export_both

from realtp import SHARED
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "claude-code"
CORPUS = SHARED / "corpus" / "claude-code"
_STREAM_JSON = "a stream-json run (claude -p): decided up front"
_CONTEXT = "a /context run (its native snapshot: the window is the journal's)"
_ALONE = "a subagent file given alone: decided up front"
_SUBAGENTS = "subagent files beside it (a group of several files): decided up front"
# The journals the pass does not handle (docs/onepass.md, "Claude Code"), and why.
NOT_HANDLED: dict[str, str] = {
    "gh-aw_sample_claude_log_new_format.txt": _STREAM_JSON,
    "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl": _STREAM_JSON,
    "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl": _STREAM_JSON,
    "agent-36541525.jsonl": _ALONE,
    "agent-50243ee8.jsonl": _ALONE,
    "agent-a881341.jsonl": _ALONE,
    "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz": _SUBAGENTS,
    "small.jsonl": "a response without usage that is not Claude Code's <synthetic> reply",
}


def _files(root: Path) -> list[Path]:
    return sorted(
        p
        for pattern in ("*.jsonl", "*.jsonl.gz", "*.txt")
        for p in root.rglob(pattern)
        # (a compaction's request file alone is no session: nothing to export either way)
        if p.is_file() and not p.name.startswith("agent-acompact")
    )


def _journals() -> list[Any]:
    found = [pytest.param(p, id=f"data/{p.relative_to(DATA)}") for p in _files(DATA)]
    if CORPUS.is_dir():
        found += [pytest.param(p, id=f"corpus/{p.relative_to(CORPUS)}") for p in _files(CORPUS)]
    else:
        found.append(
            pytest.param(
                None, marks=pytest.mark.skip(reason=f"shared corpus not beside ({CORPUS})")
            )
        )
    return found


def _reason(path: Path) -> str | None:
    if path.name in NOT_HANDLED:
        return NOT_HANDLED[path.name]
    if path.parent.name == "context-command":
        return _CONTEXT
    return None


@pytest.mark.parametrize("path", _journals())
def test_stream_writes_what_the_model_path_writes(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, got, handled = export_both(path, export_trace, monkeypatch)
    reason = _reason(path)
    if reason is not None:
        assert not any(handled), reason
        assert got.path.read_bytes() == expected.path.read_bytes()
        return
    assert handled == [True]
    assert_same_export(expected, got)


def test_a_transcript_given_without_its_subagents(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The spotter transcript alone (as the bench exports it; with its subagents' folder it
    # is the model path's): its compaction's snapshot and the request after it are at one
    # time with more context unattributed, one sample of that time in both exports
    source = DATA / "spotter-2.1.39-subagents-compaction"
    path = tmp_path / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
    shutil.copy(source / path.name, path)
    expected, got, handled = export_both(path, export_trace, monkeypatch)
    assert handled == [True]
    assert_same_export(expected, got)
