"""What `export` tells the user, and where: the closing lines, the notes on stderr, the
progress display on a terminal, and the errors of an output that cannot be written."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import console, outputs
from agent_profiler.adapters import JournalGroup
from agent_profiler.cli import app
from agent_profiler.errors import OutputError
from agent_profiler.model import Harness
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"  # one all-zero-usage response
CODEX = DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
NOTHING = "error: nothing to export (no readable sessions)"
runner = CliRunner()


@pytest.mark.parametrize("suffix", [".pftrace", ".json"])
def test_nothing_to_export_is_said_on_stderr_by_either_writer(tmp_path: Path, suffix: str) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    out = tmp_path / f"t{suffix}"
    result = runner.invoke(app, ["export", str(empty), "-o", str(out)])
    assert result.exit_code == 1
    assert NOTHING in result.stderr.splitlines() and NOTHING not in result.stdout
    assert not out.exists()


def test_the_json_writer_reads_with_the_harness_given(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    forced = runner.invoke(app, ["export", str(SMALL), "--harness", "codex", "-o", str(out)])
    assert forced.exit_code == 1 and NOTHING in forced.stderr
    assert "nothing in it reads as codex" in forced.stderr
    assert runner.invoke(app, ["export", str(SMALL), "-o", str(out)]).exit_code == 0
    assert json.loads(out.read_text())["traceEvents"]


def test_the_closing_line_counts_responses_without_usage_only_when_there_are_some(
    tmp_path: Path,
) -> None:
    small = runner.invoke(app, ["export", str(SMALL), "-o", str(tmp_path / "s.pftrace")])
    (line,) = [x for x in small.stdout.splitlines() if x.startswith("wrote")]
    assert "6 responses (+1 without usage), 2 compactions," in line
    codex = runner.invoke(app, ["export", str(CODEX), "-o", str(tmp_path / "c.pftrace")])
    (line,) = [x for x in codex.stdout.splitlines() if x.startswith("wrote")]
    assert "without usage" not in line and " responses, " in line
    # Where to look next goes to stderr, with the other notes.
    opened = f"open it: agent-profiler open {tmp_path / 'c.pftrace'}"
    assert any(x.startswith(opened) for x in codex.stderr.splitlines())
    assert "open it" not in codex.stdout


def test_many_kinds_skipped_or_not_recognised_are_listed_six_at_most(tmp_path: Path) -> None:
    # GIVEN a transcript with eight record types that hold no model input (two of one
    # of them) and seven types no Claude Code build wrote, beside one prompt
    skipped = ["progress", "summary", "tag", "ai-title", "custom-title", "agent-name"]
    skipped += ["last-prompt", "pr-link", "progress"]
    unknown = [f"new-{n}" for n in range(7)]
    records = [
        {
            "type": "user",
            "sessionId": "s",
            "timestamp": "2026-01-01T00:00:00Z",
            "uuid": "u1",
            "message": {"role": "user", "content": "hello"},
        },
        *({"type": kind, "sessionId": "s"} for kind in skipped + unknown),
    ]
    journal = tmp_path / "s.jsonl"
    journal.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = runner.invoke(app, ["export", str(journal), "-o", str(tmp_path / "t.pftrace")])
    # THEN the most frequent first, then by name; the rest counted
    assert (
        "skipped on purpose (not model input): claude:progress 2, claude:agent-name 1, "
        "claude:ai-title 1, claude:custom-title 1, claude:last-prompt 1, claude:pr-link 1, "
        "… 2 more kinds"
    ) in result.stderr.splitlines()
    assert (
        "not recognised (not read): claude:new-0 1, claude:new-1 1, claude:new-2 1, "
        "claude:new-3 1, claude:new-4 1, claude:new-5 1, … 1 more kinds"
    ) in result.stderr.splitlines()
    six = tmp_path / "six.jsonl"
    six.write_text("".join(json.dumps(r) + "\n" for r in records[:7]))
    result = runner.invoke(app, ["export", str(six), "-o", str(tmp_path / "u.pftrace")])
    (line,) = [x for x in result.stderr.splitlines() if x.startswith("skipped on purpose")]
    assert line.endswith("claude:tag 1")  # six kinds: all listed, nothing more
    two = tmp_path / "two.jsonl"
    two.write_text("".join(json.dumps(r) + "\n" for r in [records[0], *records[-2:]]))
    result = runner.invoke(app, ["export", str(two), "-o", str(tmp_path / "v.pftrace")])
    assert "not recognised (not read): claude:new-5 1, claude:new-6 1" in result.stderr.splitlines()


def test_files_left_out_of_a_folder_are_named_in_a_note(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a journal")
    (tmp_path / ".DS_Store").write_bytes(b"\x00")  # hidden: not counted
    (tmp_path / "small.jsonl").write_bytes(SMALL.read_bytes())
    # The trace is written into the folder read: its temporary file is not counted either.
    result = runner.invoke(app, ["export", str(tmp_path), "-o", str(tmp_path / "t.pftrace")])
    assert (
        "note: 1 other file in the given folders is not *.jsonl, *.jsonl.gz or *.jsonl.zst and was "
        "not read (name a stream-json .txt or .log file directly)"
    ) in result.stderr.splitlines()


def test_a_notice_of_the_pipeline_goes_to_stderr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_profiler import pipeline

    real = pipeline.run_groups

    def noticing(*args: object, **kwargs: object) -> object:
        notice = kwargs["notice"]
        assert callable(notice)
        notice("note: a test notice")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "run_groups", noticing)
    result = runner.invoke(app, ["export", str(SMALL), "-o", str(tmp_path / "t.pftrace")])
    assert result.exit_code == 0
    assert "note: a test notice" in result.stderr.splitlines()
    assert "a test notice" not in result.stdout


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_shown_on_a_terminal_for_several_journals_or_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.jsonl"
    with big.open("wb") as handle:  # sparse: large on disk by its size alone
        handle.truncate(console.PROGRESS_BYTES + 1)
    monkeypatch.setattr("sys.stderr", io.StringIO())  # not a terminal: never
    assert console.group_progress([SMALL, CODEX]) is None
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    assert console.group_progress([SMALL]) is None
    assert console.group_progress([big]) is None  # byte_progress shows that one
    assert console.group_progress([tmp_path]) is not None
    report = console.group_progress([SMALL, CODEX])
    assert report is not None
    report(1, 2, JournalGroup(Harness.CLAUDE_CODE, SMALL))
    report(2, 2, JournalGroup(Harness.CLAUDE_CODE, None, (CODEX,)))  # an orphan's group
    assert terminal.getvalue() == (
        f"\r\033[Kreading journals: 1/2 {SMALL.name}"
        f"\r\033[Kreading journals: 2/2 {CODEX.name[:60]}\n"
    )


def test_progress_inside_one_large_file(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    report = console.byte_progress()
    report("/x/small.jsonl", 10, console.PROGRESS_BYTES - 1)  # small: nothing
    assert terminal.getvalue() == ""
    name = "n" * 60 + ".jsonl"
    size = 3 * console.PROGRESS_BYTES  # 60 MB
    report(f"/x/{name}", size // 4, size)
    report(f"/x/{name}", size, size)
    assert terminal.getvalue() == (
        f"\r\033[Kreading {name[:50]}: 25% of 60.0 MB\r\033[Kreading {name[:50]}: 100% of 60.0 MB\n"
    )


def test_human_sizes() -> None:
    sizes = [0, 1023, 1024, 1536 * 1024, 5 * 1024**3, 5 * 1024**4]
    assert [console.human_size(s) for s in sizes] == [
        "0 B",
        "1023 B",
        "1.0 KB",
        "1.5 MB",
        "5.0 GB",
        "5120.0 GB",  # no larger unit
    ]


def test_no_free_temporary_name_is_a_clear_output_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def taken(name: str, flags: int, mode: int = 0o777) -> int:
        raise FileExistsError(17, "File exists", name)

    monkeypatch.setattr(os, "open", taken)
    with pytest.raises(OutputError) as caught:
        outputs.beside(tmp_path / "t.pftrace", "out")
    # The paths as an input's are shown (no absolute path, with its user name)
    assert (
        str(caught.value) == "t.pftrace: cannot write here (no free temporary name in its folder)"
    )
