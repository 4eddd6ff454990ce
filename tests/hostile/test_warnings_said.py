"""What a reviewer found read in silence, miscounted or echoed raw, each on an edited copy
of a real journal: an unknown content block is an `unknown-block` warning with its
`path:line`; a count that is no token count, or a time that is no time, is a warning with
its place; a warning repeated on every record is counted truly; a transcript without times
says its clock is synthetic; a name from a journal reaches stderr and the trace escaped and
capped; a line that is JSON but no object is not a record used; a warning quotes no body
and names no absolute path; a Muse envelope of an unknown `record_type` is not recognised."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.loader import load
from agent_profiler.model import Session
from shared_paths import CORPUS, SHARED_REASON

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
CC = DATA / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
CODEX = DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
GEMINI = DATA / "gemini-cli" / "magi-ui-0.4_session-2025-09-10T04-48-e7b3ecf2.json"
OPENCODE = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
MUSE = DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
runner = CliRunner()


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def write(path: Path, values: list[Any]) -> Path:
    path.write_text("".join(json.dumps(v) + "\n" for v in values))
    return path


def read(path: Path) -> tuple[list[Session], Diagnostics]:
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == []
    return result.sessions, diagnostics


def export(*args: str | Path) -> Any:
    result = runner.invoke(app, ["export", *map(str, args)])
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    return result


def first_tool_result(values: list[dict[str, Any]]) -> tuple[int, dict[str, Any]]:
    """(index, block) of CC's first tool_result, its content made a list of blocks."""
    for index, value in enumerate(values):
        content = value.get("message", {}).get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                if isinstance(block["content"], str):
                    block["content"] = [{"type": "text", "text": block["content"]}]
                return index, block
    raise AssertionError("no tool_result in CC")


def result_chars(sessions: list[Session], call_id: str) -> int:
    return next(t.result_chars for s in sessions for t in s.tool_calls if t.call_id == call_id)


# --------------------------------------------------------------------------- 1. blocks


def test_an_unknown_block_in_a_tool_result_is_said_and_the_rest_still_read(
    tmp_path: Path,
) -> None:
    values = records(CC)
    index, block = first_tool_result(values)
    call_id = block["tool_use_id"]
    before = result_chars(read(write(tmp_path / "plain.jsonl", values))[0], call_id)
    block["content"].append({"type": "hologram", "data": "y" * 4000})
    path = write(tmp_path / "hologram.jsonl", values)
    sessions, diagnostics = read(path)
    assert diagnostics.warning_counts == {"unknown-block": 1}
    (warning,) = diagnostics.warnings
    assert (warning.path, warning.line) == (str(path), index + 1)
    assert warning.message == "content block of type 'hologram' not recognised (not read)"
    assert result_chars(sessions, call_id) == before  # its text blocks still measured


def test_a_search_result_and_a_tool_reference_in_a_tool_result_are_measured(
    tmp_path: Path,
) -> None:
    """Anthropic's `search_result` (title, source, text blocks) and ToolSearch's
    `tool_reference` (a deferred tool's name) vanished from the result's size."""
    values = records(CC)
    _, block = first_tool_result(values)
    call_id = block["tool_use_id"]
    before = result_chars(read(write(tmp_path / "plain.jsonl", values))[0], call_id)
    block["content"] += [
        {
            "type": "search_result",
            "source": "https://example.com/a",
            "title": "A title",
            "content": [{"type": "text", "text": "found text"}],
        },
        {"type": "tool_reference", "tool_name": "WebFetch"},
    ]
    sessions, diagnostics = read(write(tmp_path / "known.jsonl", values))
    assert diagnostics.warning_counts == {}
    searched = len("A title\nhttps://example.com/a\nfound text")
    assert result_chars(sessions, call_id) == before + searched + len("WebFetch")


def test_an_unknown_part_of_a_codex_user_message_is_said_with_its_line(tmp_path: Path) -> None:
    values = records(CODEX)
    index = next(
        i
        for i, v in enumerate(values)
        if v["type"] == "response_item" and v["payload"].get("role") == "user"
    )
    values[index]["payload"]["content"].append({"type": "input_hologram", "data": "z" * 100})
    path = write(tmp_path / CODEX.name, values)
    _, diagnostics = read(path)
    assert diagnostics.warning_counts == {"unknown-block": 1}
    (warning,) = diagnostics.warnings
    assert (warning.line, warning.message) == (
        index + 1,
        "content part of type 'input_hologram' not recognised (not read)",
    )


# --------------------------------------------------------------------------- 2. bad counts


def test_codex_counts_that_are_no_token_counts_are_said(tmp_path: Path) -> None:
    values = records(CODEX)
    index = next(
        i
        for i, v in enumerate(values)
        if v["payload"].get("type") == "token_count" and v["payload"].get("info")
    )
    info = values[index]["payload"]["info"]
    info["last_token_usage"]["input_tokens"] = -99
    info["total_token_usage"]["input_tokens"] = "lots"
    _, diagnostics = read(write(tmp_path / CODEX.name, values))
    assert diagnostics.warning_counts == {"bad-usage": 1}
    (warning,) = diagnostics.warnings
    assert warning.line == index + 1
    assert warning.message.startswith(
        "token_count last_token_usage.input_tokens, total_token_usage.input_tokens not a "
        "token count (-99); counted as 0"
    )


def test_gemini_tokens_and_times_that_are_none_are_said(tmp_path: Path) -> None:
    document = json.loads(GEMINI.read_text())
    answers = [m for m in document["messages"] if m["type"] == "gemini" and m.get("tokens")]
    answers[0]["tokens"] = {"input": -1, "output": "x"}
    answers[1]["timestamp"] = "never"
    path = tmp_path / GEMINI.name
    path.write_text(json.dumps(document))
    _, diagnostics = read(path)
    assert diagnostics.warning_counts == {"bad-usage": 1, "bad-timestamp": 1}
    said = {w.kind: w.message for w in diagnostics.warnings}
    index = document["messages"].index(answers[0])
    assert said["bad-usage"].startswith(
        f"messages[{index}]: tokens input, output not a token count (-1); counted as 0"
    )
    index = document["messages"].index(answers[1])
    assert said["bad-timestamp"].startswith(f"messages[{index}]: timestamp 'never' unreadable")


def test_a_claude_count_of_null_is_a_count_not_given(tmp_path: Path) -> None:
    """`null` is what a JSON writer puts for a field it has no value for: absent, not
    damage (as the Codex and Gemini CLI readers take it too)."""
    values = records(CC)
    for value in values:
        usage = value.get("message", {}).get("usage") if value["type"] == "assistant" else None
        if usage:
            usage["cache_creation_input_tokens"] = None
    _, diagnostics = read(write(tmp_path / "nulls.jsonl", values))
    assert diagnostics.warning_counts == {}


# --------------------------------------------------------------------------- 3. counts


def test_a_bad_count_on_every_record_is_counted_on_every_record(tmp_path: Path) -> None:
    values = records(CC)
    damaged = 0
    for value in values:
        usage = value.get("message", {}).get("usage") if value["type"] == "assistant" else None
        if usage is not None:
            usage["input_tokens"] = -5_000_000
            damaged += 1
    assert damaged == 91
    path = write(tmp_path / "negative.jsonl", values)
    result = export(path, "-o", tmp_path / "t.pftrace")
    assert result.exit_code == 0
    assert "91 warnings (bad-usage: 91)" in result.stderr  # was 1 warning (bad-usage: 1)
    listed = [line for line in result.stderr.splitlines() if "not a token count" in line]
    assert len(listed) == 1 and "each later one is counted" in listed[0]
    assert "  … and 90 more" in result.stderr.splitlines()


# --------------------------------------------------------------------------- 4. no times


def test_a_transcript_without_times_says_its_clock_is_synthetic(
    tmp_path: Path, export_trace: Any
) -> None:
    values = records(CC)
    for value in values:
        value.pop("timestamp", None)
    path = write(tmp_path / "undated.jsonl", values)
    exported = export_trace(path)
    profile = next(s for s in exported.view.slices if s.name == "profile (1)")
    assert profile.args["timing"].startswith("synthetic: no timestamps in the journal")
    (row,) = json.loads(runner.invoke(app, ["summary", "--json", str(path)]).stdout)
    assert row["clock"] == "synthetic"
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(path), "-o", str(page)]).exit_code == 0
    html = page.read_text()
    assert "synthetic clock (the journal has no times and no durations" in html
    assert not re.search(r"lasted\W*\d", html)  # it said "lasted 0"


# --------------------------------------------------------------------------- 5. names

EVIL = "\x1b[2J\x1b[31mEVIL /home/alice/secret.txt\nFAKE: wrote ok"


def test_a_journal_s_names_reach_stderr_and_the_trace_escaped_and_capped(
    tmp_path: Path, export_trace: Any
) -> None:
    values = records(CC)
    record = next(v for v in values if v["type"] == "user")
    values += [{**record, "type": EVIL}, {**record, "type": "system", "subtype": "x" * 5000}]
    path = write(tmp_path / "evil.jsonl", values)
    exported = export_trace(path)
    stderr = exported.stderr
    assert "\x1b" not in stderr and "/home/alice" not in stderr
    assert not any(line.startswith("FAKE") for line in stderr.splitlines())
    assert max(len(line) for line in stderr.splitlines()) < 400  # not 5,000 x
    assert r"claude:\x1b[2J\x1b[31mEVIL ~/secret.txt\nFAKE: wrote ok" in stderr
    profile = next(s for s in exported.view.slices if s.name == "profile (1)")
    keys = list(profile.args["accounting"]["records_not_recognised"])
    assert keys == [
        journal_name(f"claude:{EVIL}", 80),
        journal_name("claude:system/" + "x" * 5000, 80),
    ]
    assert all(len(k) <= 80 and "\x1b" not in k and "alice" not in k for k in keys)


def test_a_muse_name_skipped_on_purpose_is_escaped_in_the_accounting(tmp_path: Path) -> None:
    """A Muse task event's kind is any string the journal gives: it is a key of the
    records skipped on purpose, in the trace and on stderr."""
    lines = MUSE.read_text().splitlines()
    out = []
    for line in lines:
        value = json.loads(line)
        payload = value.get("payload") if isinstance(value, dict) else None
        event = payload.get("event") if isinstance(payload, dict) else None
        if isinstance(event, dict) and payload.get("kind") == "task" and event.get("kind"):
            event["kind"] = EVIL
        out.append(json.dumps(value))
    path = tmp_path / MUSE.name
    path.write_text("\n".join(out) + "\n")
    _, diagnostics = read(path)
    assert journal_name(f"muse:task/{EVIL}", 80) in diagnostics.skipped
    assert not any("\x1b" in k or "alice" in k for k in diagnostics.skipped)


# --------------------------------------------------------------------------- 6. shapes


def test_json_lines_that_are_no_objects_are_not_records_used(tmp_path: Path) -> None:
    path = tmp_path / "shapes.jsonl"
    path.write_text(CC.read_text().rstrip("\n") + '\n42\n"str"\nnull\n[1,2]\n')
    result = export(CC, "-o", tmp_path / "a.pftrace")
    assert "138 records used, 81 skipped, 0 warnings" in result.stdout
    result = export(path, "-o", tmp_path / "b.pftrace")
    # 142 records used, before: the four were counted as used and warned about
    assert "223 lines read, 138 records used, 81 skipped, 4 warnings" in result.stdout
    assert "4 warnings (bad-shape: 4)" in result.stderr
    assert "  shapes.jsonl:220: record is not a JSON object" in result.stderr


@pytest.mark.parametrize("source", [CODEX, MUSE], ids=["codex", "muse"])
def test_no_harness_counts_a_line_that_is_no_object_as_used(source: Path, tmp_path: Path) -> None:
    path = tmp_path / source.name
    plain = read(source)[1].records_used
    path.write_text(source.read_text().rstrip("\n") + '\n42\n"str"\nnull\n[1,2]\n')
    _, diagnostics = read(path)
    assert diagnostics.records_used == plain
    assert diagnostics.warning_counts["bad-shape"] == 4


# --------------------------------------------------------------------------- 7. stderr


def test_a_failed_context_command_is_said_without_its_body(tmp_path: Path) -> None:
    """smartagent's /context failed with a 400 whose body held the conversation's shape."""
    source = DATA / "claude-code" / "context-command"
    journal = next(source.glob("smartagent-so-pai_*"))
    result = export(journal, "-o", tmp_path / "t.pftrace")
    assert "/context failed (590 characters of error output, not shown)" in result.stderr
    assert "invalid_request_error" not in result.stderr and '{"type"' not in result.stderr


def test_a_warning_names_a_journal_under_home_by_tilde_never_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "alice"
    home.mkdir(parents=True)
    export_file = home / "oc-export.json"
    export_file.write_bytes(OPENCODE.read_bytes())
    monkeypatch.setenv("HOME", str(home))
    result = export(export_file, "-o", tmp_path / "t.pftrace")
    assert "  ~/oc-export.json: subagent ses_2bef25635ffe8EzID0I1Oeymal" in result.stderr
    assert str(tmp_path) not in "\n".join(
        line for line in result.stderr.splitlines() if not line.startswith("open it")
    )


# --------------------------------------------------------------------------- 8. Muse


def test_a_muse_envelope_of_an_unknown_record_type_is_not_recognised(tmp_path: Path) -> None:
    values = records(MUSE)
    index = next(
        i
        for i, v in enumerate(values)
        if v.get("record_type") == "event" and v.get("payload_type") == "runtime.session"
    )
    values[index]["record_type"] = "alien_record"
    path = write(tmp_path / MUSE.name, values)
    _, diagnostics = read(path)
    assert diagnostics.unrecognised == {"muse:record_type/alien_record": 1}
    assert diagnostics.unrecognised_at["muse:record_type/alien_record"].endswith(
        f"{MUSE.name}:{index + 1}"
    )


# --------------------------------------------------------------------------- the corpus


def _corpus(harness: str) -> list[Path]:
    if not CORPUS.is_dir():
        pytest.skip(SHARED_REASON)
    return sorted(p for p in (CORPUS / harness).rglob("*.jsonl*") if p.is_file())


@pytest.mark.parametrize("harness", ["claude-code", "codex"])
def test_no_block_of_the_corpus_is_unknown(harness: str) -> None:
    """The block and part types the readers know cover every real journal (planetfall's
    2.1.165 ToolSearch results hold `tool_reference` blocks): none is an unknown-block."""
    diagnostics = Diagnostics()
    paths = _corpus(harness)
    load(paths, diagnostics)
    unknown = [w for w in diagnostics.warnings if w.kind == "unknown-block"]
    assert diagnostics.warning_counts["unknown-block"] == 0, unknown
    assert paths


def test_every_name_counted_is_safe() -> None:
    """What `journal_name` makes of a name holds no control character, no home folder,
    and no more than its limit."""
    for name in [EVIL, "x" * 5000, "C:\\Users\\bob\\x", "\u202eevil", "a\\b"]:
        shown = journal_name(name)
        assert len(shown) <= 60
        assert not re.search(r"[\x00-\x1f\x7f\u202e]", shown)
        assert "alice" not in shown and "bob" not in shown
