"""An `opencode export` document cut short or damaged keeps its complete messages (review-bad
8): it lost every message (`error: … cut short or damaged`, no session), while a Gemini CLI
document cut the same way keeps its complete ones (`gemini_recording._salvage`). Now the
export's `info` and each message before the cut are read, with one `truncated-document`
warning saying where (the line the first message not kept starts on)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters import opencode_storage as storage
from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics

LOCAL = Path(__file__).resolve().parents[1] / "data" / "journals"
EXPORT = LOCAL / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
runner = CliRunner()


def _expected_kept(cut: bytes, whole: dict[str, Any]) -> int:
    """The messages wholly in `cut`: those before the last one whose id it holds (the one
    the cut is in; a message's id is in its info and its own parts only)."""
    ids = [m["info"]["id"].encode() for m in whole["messages"]]
    return max(k for k, message_id in enumerate(ids) if message_id in cut)


@pytest.mark.parametrize("fraction", [0.3, 0.5, 0.75, 0.95])
def test_an_export_cut_short_keeps_its_complete_messages(fraction: float, tmp_path: Path) -> None:
    # GIVEN an export cut at some point of its messages
    data = EXPORT.read_bytes()
    whole = json.loads(data)
    cut = data[: int(len(data) * fraction)]
    path = tmp_path / "ses_cut.export.json"
    path.write_bytes(cut)
    # WHEN read
    diagnostics = Diagnostics()
    (session,) = storage.read_export(path, diagnostics)
    # THEN its info, and every message wholly before the cut, are kept as they are
    assert session.info == whole["info"]
    kept = len(session.messages)
    assert kept == _expected_kept(cut, whole) > 0
    assert [m for m, _ in session.messages] == [m["info"] for m in whole["messages"][:kept]]
    assert [p for _, p in session.messages] == [m["parts"] for m in whole["messages"][:kept]]
    # and one warning says where
    (warning,) = diagnostics.warnings
    assert warning.kind == "truncated-document"
    assert warning.message == (
        f"OpenCode export cut short or damaged in messages[{kept}]; the first "
        f"{kept} complete message{'s' if kept != 1 else ''} kept"
    )
    assert warning.line is not None and 1 < warning.line <= cut.count(b"\n") + 1


def test_a_damaged_byte_keeps_the_messages_before_it(tmp_path: Path) -> None:
    data = EXPORT.read_bytes()
    whole = json.loads(data)
    third = json.dumps(whole["messages"][2]["info"]["id"]).encode()
    at = data.index(third)
    damaged = data[:at] + b"\x00{" + data[at:]
    path = tmp_path / "ses_x.export.json"
    path.write_bytes(damaged)
    diagnostics = Diagnostics()
    (session,) = storage.read_export(path, diagnostics)
    assert len(session.messages) == 2
    assert diagnostics.warning_counts == {"truncated-document": 1}


def test_the_cli_keeps_the_session_and_exits_0(tmp_path: Path) -> None:
    data = EXPORT.read_bytes()
    path = tmp_path / "ses_cut.export.json"
    path.write_bytes(data[: len(data) * 3 // 4])
    done = runner.invoke(app, ["summary", str(path), "--json"])
    assert done.exit_code == 0, done.stderr
    (session,) = json.loads(done.stdout)
    assert session["calls"] >= 1
    assert "truncated-document: 1)" in done.stderr
    assert "ses_cut.export.json:" in done.stderr and "complete messages kept" in done.stderr
    assert "no readable sessions" not in done.stderr


def test_an_export_whose_info_is_not_whole_is_still_one_error(tmp_path: Path) -> None:
    data = EXPORT.read_bytes().replace(b'"title":', b'"title"', 1)
    path = tmp_path / "ses_i.export.json"
    path.write_bytes(data)
    with pytest.raises(storage.JournalError, match="cut short or damaged"):
        storage.read_export(path, Diagnostics())
