"""Review d14: odd date folders, impossible redaction lengths, the `rollout_reference`
fact's privacy, children found beside a parent (damaged ones, the name-time filter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_profiler.adapters import SniffedFile, codex, codex_records
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import sniff
from agent_profiler.loader import load
from agent_profiler.model import MID_CONVERSATION
from rules_spy import record, write
from samples import codex_meta
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "codex"
PLAIN = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"


def _rollout(folder: Path, name: str, thread: str, parent: str | None = None) -> Path:
    return write(folder, [codex_meta(thread, parent), record(PLAIN, 6)], f"rollout-{name}.jsonl")


def _plan(*paths: Path) -> list[tuple[str, ...]]:
    groups = codex.plan([SniffedFile(path, sniff(path)) for path in paths])
    return [tuple(path.name for path in group.paths) for group in groups]


def test_the_last_possible_date_folder_has_no_next_day_and_is_read(tmp_path: Path) -> None:
    """9999/12/31 + one day overflows: no next day, the rollout and its child beside it
    are planned as anywhere else (it was an internal error in every command)."""
    last = tmp_path / "sessions" / "9999" / "12" / "31"
    last.mkdir(parents=True)
    parent = _rollout(last, "parent", "thread-p")
    _rollout(last, "child", "thread-c", parent="thread-p")
    assert _plan(parent) == [("rollout-parent.jsonl", "rollout-child.jsonl")]


HUGE = "[REDACTED_ARGUMENTS len=99999999999999999999999 sha=ab]"


def _with_huge_markers(tmp_path: Path) -> tuple[Path, list[int]]:
    """The test rollout with its first call's arguments and its first call output's
    output replaced by a marker stating an impossible length; the two lines changed."""
    from rules_spy import raw_lines

    records = [json.loads(t) for t in raw_lines(PLAIN) if t.strip()]
    changed: list[int] = []
    for number, value in enumerate(records, 1):
        payload = value.get("payload", {})
        if value.get("type") != "response_item":
            continue
        if payload.get("type") == "function_call" and not changed:
            payload["arguments"] = HUGE
            changed.append(number)
        elif payload.get("type") == "function_call_output" and len(changed) == 1:
            payload["output"] = HUGE.replace("ARGUMENTS", "OUTPUT")
            changed.append(number)
    assert len(changed) == 2
    return write(tmp_path, records, "rollout-huge.jsonl"), changed


def test_a_redaction_marker_stating_an_impossible_length_is_measured_as_its_text(
    tmp_path: Path,
) -> None:
    """A `len=` beyond any real item (> 2**31) is not believed: the call's arguments and the
    output are measured as the marker's text, with one warning naming each line, and the
    trace and the dataset are written (they ended in an internal error)."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app

    path, lines = _with_huge_markers(tmp_path)
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == []
    (session,) = result.sessions
    assert max(call.arg_bytes for call in session.tool_calls) < 2**31
    said = [w for w in diagnostics.warnings if "impossible length" in w.message]
    assert [w.line for w in said] == lines
    assert codex_records.measure("[REDACTED_X len=2147483648 sha=ab]") == (2**31, True)
    assert codex_records.measure("[REDACTED_X len=2147483649 sha=ab]") == (34, False)
    runner = CliRunner()
    done = runner.invoke(app, ["export", str(path), "-o", str(tmp_path / "t.pftrace")])
    assert done.exit_code == 0, done.output
    done = runner.invoke(app, ["collect", str(path), "--to", str(tmp_path / "ds")])
    assert done.exit_code == 0, done.output


def _reference(tmp_path: Path, payload: dict[str, object]) -> str:
    """The `rollout_reference` fact of the test rollout's first lines with a reference
    of `payload` after its session_meta."""
    line = {"timestamp": record(PLAIN, 1)["timestamp"], "type": "rollout_reference"}
    line["payload"] = payload
    lines = [record(PLAIN, 1), line] + [record(PLAIN, n) for n in range(2, 11)]
    result = load([write(tmp_path, lines, "rollout-ref.jsonl")], Diagnostics())
    (session,) = result.sessions
    facts = dict(session.facts)
    assert str(facts["rollout_reference"]) in str(facts[MID_CONVERSATION])
    return str(facts["rollout_reference"])


def test_a_rollout_reference_shows_only_an_ids_form_and_a_rollouts_name(tmp_path: Path) -> None:
    """Its facts reach the summary, the report and the trace: a thread id that is no id
    (an object, a path, a bare name) is "another thread", a path whose last part is no
    rollout's name is left out, a negative user message number is ignored."""
    hostile = {
        "rollout_path": "/home/alice",
        "thread_id": {"x": "/home/alice/secret"},
        "nth_user_message": -5,
    }
    assert _reference(tmp_path, hostile) == "another thread"
    for thread in ("/home/alice/x", "alice", "a" * 80 + "1", "x 1"):
        said = _reference(
            tmp_path, {"rollout_path": "C:\\Users\\alice\\notes.txt", "thread_id": thread}
        )
        assert said == "another thread", thread
    uuid = "019e0000-789d-76c0-80ab-3724b5ddb799"
    real = f"/home/alice/.codex/sessions/2026/05/11/rollout-2026-05-11T11-26-55-{uuid}.jsonl.zst"
    said = _reference(tmp_path, {"rollout_path": real, "thread_id": uuid, "nth_user_message": 2})
    assert said == (
        f"thread {uuid} (rollout-2026-05-11T11-26-55-{uuid}.jsonl.zst), up to its user message 2"
    )


def _day(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions" / "2026" / "12" / "04"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_a_damaged_rollout_beside_a_parent_is_named_with_why_it_was_not_read(
    tmp_path: Path,
) -> None:
    """A child beside its parent that cannot be read (a cold `.jsonl.zst` cut in half) is
    one warning naming that file and why, not passed over without a word."""
    zstd = pytest.importorskip("backports.zstd")
    today = _day(tmp_path)
    parent = _rollout(today, "parent", "thread-p")
    child = _rollout(today, "child", "thread-c", parent="thread-p")
    data = zstd.compress(child.read_bytes())
    child.unlink()
    damaged = today / "rollout-child.jsonl.zst"
    damaged.write_bytes(data[: len(data) // 2])
    diagnostics = Diagnostics()
    result = load([parent], diagnostics)
    assert [s.session_id for s in result.sessions] == ["thread-p"]
    said = [w for w in diagnostics.warnings if w.path == str(damaged)]
    assert len(said) == 1 and "zstd" in said[0].message, diagnostics.warnings


def _named(folder: Path, time: str, thread: str, parent: str | None = None) -> Path:
    return _rollout(folder, f"2026-12-04T{time}-{thread}", thread, parent)


def test_siblings_named_before_the_rollouts_given_are_not_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A child starts after its parent: a rollout named hours before every rollout given
    is a child of none and is not read; one named after it, or just before (the clocks
    going back), is. So one rollout given in a folder of thousands opens only the later."""
    today = _day(tmp_path)
    parent = _named(today, "12-00-00", "thread-p")
    _named(today, "11-30-00", "thread-c", parent="thread-p")  # an hour back: looked at
    _named(today, "13-00-00", "thread-d", parent="thread-p")
    for hour in range(3):
        _named(today, f"0{hour}-00-00", f"thread-o{hour}", parent="thread-p")
    opened: list[str] = []
    real = codex._sibling_links

    def spy(path: Path) -> list[str]:
        opened.append(path.name)
        return real(path)

    monkeypatch.setattr(codex, "_sibling_links", spy)
    (group,) = _plan(parent)
    assert sorted(group[1:]) == sorted(n for n in opened if "thread-o" not in n)
    assert len(group) == 3 and not any("thread-o" in name for name in opened)


def test_a_sibling_is_known_from_its_first_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sibling's first line is read from its first 64 KiB: one longer that names no
    parent there is no child and is not read further; a child's is read whole."""
    today = _day(tmp_path)
    parent = _rollout(today, "parent", "thread-p")
    long = codex_meta("thread-l")
    long["payload"]["base_instructions"] = "x" * 200_000
    write(today, [long, record(PLAIN, 6)], "rollout-long.jsonl")
    child = codex_meta("thread-c", parent="thread-p")
    child["payload"]["base_instructions"] = "x" * 200_000
    write(today, [child, record(PLAIN, 6)], "rollout-child.jsonl")
    sniffed: list[str] = []
    real = codex.sniff

    def spy(path: Path, max_lines: int = 50) -> list[object]:
        sniffed.append(Path(path).name)
        return real(path, max_lines)

    monkeypatch.setattr(codex, "sniff", spy)
    assert _plan(parent) == [("rollout-parent.jsonl", "rollout-child.jsonl")]
    assert sniffed == ["rollout-child.jsonl"]


def test_an_agent_message_stored_as_an_assistant_message_is_input_from_that_agent(
    tmp_path: Path,
) -> None:
    """codex-rs `InterAgentCommunication::to_response_input_item`: an assistant-role
    message whose one output_text part is the communication's JSON. It is a task from
    its author (a prompt of the thread, User prompts), not the model's output; an
    assistant message that merely looks like JSON is still the model's."""
    task = json.dumps(
        {
            "author": "/root",
            "recipient": "/root/worker",
            "other_recipients": [],
            "content": "Please audit the parser. " * 200,
            "trigger_turn": True,
        }
    )

    def message(text: str) -> dict[str, object]:
        payload = {"type": "message", "role": "assistant", "phase": "commentary"}
        payload["content"] = [{"type": "output_text", "text": text}]
        return {"timestamp": record(PLAIN, 9)["timestamp"], "type": "response_item",
                "payload": payload}  # fmt: skip

    lines = [record(PLAIN, n) for n in range(1, 10)] + [message(task)]
    lines += [record(PLAIN, n) for n in range(10, 40)]
    session, _ = _read(write(tmp_path, lines, "rollout-iac.jsonl"))
    (sent,) = [p for p in session.prompts if p.source == "agent"]
    assert sent.chars == len("Please audit the parser. " * 200)
    assert sent.preview.startswith("Please audit the parser.")
    plain = [record(PLAIN, n) for n in range(1, 10)] + [message('{"author": 1}')]
    plain += [record(PLAIN, n) for n in range(10, 40)]
    other, _ = _read(write(tmp_path, plain, "rollout-json.jsonl"))
    assert not [p for p in other.prompts if p.source == "agent"]


def _read(path: Path) -> tuple[object, Diagnostics]:
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    (session,) = result.sessions
    return session, diagnostics
