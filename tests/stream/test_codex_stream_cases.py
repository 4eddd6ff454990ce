"""The one pass against the model path on hand-made Codex rollouts (a small real one,
changed): what the corpus holds little of (a command's duration, no window, a request
left open at the end, rollbacks) must come out equal; what the pass does not handle (a
spawned thread, a command's end read after its call was written, a window first reported
after the first request, a request read after one that starts later, a session id or a
start read after the first request was written) must fall back to the model path's bytes,
for the reason the pass gives (its reading's checks and the end's)."""

from __future__ import annotations

import gzip
import itertools
import json
import random
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_pi_stream import refusals
from test_pi_stream_cases import both

from agent_profiler.stream import codex as stream_codex
from agent_profiler.stream import codex_reading
from shared_paths import TESTS

SMALL = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
)
DESKTOP = SMALL.parent / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
FIRST_CALL = "call_OIMY41RetdVChp5U51mMLGOD"
LAST_CALL = "call_kTYGACDKLb03RGgGqdx4XgBl"
SECOND_CALL = "call_SengCcPYInk46d62DPE6eqqb"
THIRD_CALL = "call_B6bYQ40tItkpgpg7DLdo8mEG"
FOURTH_CALL = "call_wt673E9ScmRn47BB5LRf0kwk"

Lines = list[dict[str, Any]]


def read_lines(source: Path) -> Lines:
    """A rollout's lines as objects (gzipped or not)."""
    text = source.read_bytes()
    text = gzip.decompress(text) if source.suffix == ".gz" else text
    return [json.loads(line) for line in text.decode().splitlines()]


def write_lines(folder: Path, source: Path, lines: Lines) -> Path:
    """`lines` written as a rollout of `source`'s name (unzipped) in `folder`."""
    path = folder / source.name.removesuffix(".gz")
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _event(after: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": after["timestamp"], "type": "event_msg", "payload": payload}


def _index(lines: Lines, kind: str, call_id: str = "") -> int:
    return next(
        i
        for i, line in enumerate(lines)
        if line["payload"].get("type") == kind and line["payload"].get("call_id", "") == call_id
    )


def _exec_end(call_id: str, secs: int) -> dict[str, Any]:
    return {"type": "exec_command_end", "call_id": call_id, "exit_code": 0,
            "duration": {"secs": secs, "nanos": 0}}  # fmt: skip


def late_command_end(lines: Lines) -> None:
    # the first call's command ends (its duration) after the last request
    lines.insert(len(lines) - 1, _event(lines[-2], _exec_end(FIRST_CALL, 5)))


def command_end(lines: Lines) -> None:
    # the last call's command end right after its output: its span is the duration's
    at = _index(lines, "function_call_output", LAST_CALL)
    lines.insert(at + 1, _event(lines[at], _exec_end(LAST_CALL, 3)))


def first_call_outlasts(lines: Lines) -> None:
    # the first call's command said to have run for 80 s: it ends after the prompt's
    # later calls, and the prompt's turn lasts until then
    at = _index(lines, "function_call_output", FIRST_CALL)
    lines.insert(at + 1, _event(lines[at], _exec_end(FIRST_CALL, 80)))


def background_command(lines: Lines) -> None:
    # once the rollout has shown a command's duration (the first two calls', commands,
    # each right after its output), a command's output is not its end: the third call, a
    # command whose end (its duration) is read a request after its output, waits for it
    for call_id in (FIRST_CALL, SECOND_CALL, THIRD_CALL):
        lines[_index(lines, "function_call", call_id)]["payload"]["name"] = "exec_command"
    for call_id in (FIRST_CALL, SECOND_CALL):
        at = _index(lines, "function_call_output", call_id)
        lines.insert(at + 1, _event(lines[at], _exec_end(call_id, 1)))
    later = _index(lines, "function_call_output", FOURTH_CALL)
    lines.insert(later + 1, _event(lines[later], _exec_end(THIRD_CALL, 2)))


def aborted_turn(lines: Lines) -> None:
    # a request whose call the user aborts (its turn_aborted, no token_count): a failed
    # request; then a new prompt and its request, the last
    _turn_ended_pending(lines, [{"type": "turn_aborted", "reason": "interrupted"}])


def failed_turn(lines: Lines) -> None:
    # a request whose stream broke and whose retries ran out: the rate limits' token_count
    # (the same totals: no request), then the turn's task_complete; a failed request
    last = lines[-2]  # (the last token_count)
    _turn_ended_pending(lines, [last["payload"], {"type": "task_complete"}])


def _turn_ended_pending(lines: Lines, ending: list[dict[str, Any]]) -> None:
    """A request whose turn ends (the events `ending`, at its call's output) without its
    usage; then a new prompt and its request, the last."""
    last = lines[-2]  # (the last token_count)

    def at(seconds: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        stamp = last["timestamp"].replace("36:02.633Z", f"36:{10 + seconds}.000Z")
        return {"timestamp": stamp, "type": kind, "payload": payload}

    said = {"type": "message", "role": "assistant", "content": [{"type": "output_text",
            "text": "checking"}]}  # fmt: skip
    call = {"type": "function_call", "name": "exec_command", "arguments": "{}",
            "call_id": "call_aborted"}  # fmt: skip
    output = {"type": "function_call_output", "call_id": "call_aborted", "output": "aborted"}
    prompt = {"type": "message", "role": "user", "content": [{"type": "input_text",
              "text": "try again"}]}  # fmt: skip
    count = json.loads(json.dumps(last["payload"]))
    count["info"]["total_token_usage"]["input_tokens"] += 1
    lines += [
        at(0, "response_item", said),
        at(1, "response_item", call),
        at(5, "response_item", output),
        *(at(5, "event_msg", event) for event in ending),
        at(7, "response_item", prompt),
        at(7, "event_msg", {"type": "user_message", "message": "try again"}),
        at(9, "response_item", said),
        at(9, "event_msg", count),
    ]


def long_command(lines: Lines) -> None:
    # a call's command said to have run for an hour, far past the rollout's last line (the
    # session's span, and its counters' closing zeros, end with it): the pass wrote the
    # call as the session's end left it, so it falls back
    at = _index(lines, "function_call_output", LAST_CALL)
    lines.insert(at + 1, _event(lines[at], _exec_end(LAST_CALL, 3600)))


def rollback(lines: Lines) -> None:
    lines.insert(len(lines) - 1, _event(lines[-2], {"type": "thread_rolled_back", "num_turns": 1}))


def rollback_mid(lines: Lines) -> None:
    # a prompt after the first call's output, a request, then that turn rolled back: the
    # requests after it see the context without the prompt and the request's output
    at = _index(lines, "function_call_output", FIRST_CALL)
    text = "and list the workflows first " * 40
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    prompt = {"timestamp": lines[at]["timestamp"], "type": "response_item", "payload": said}
    lines[at + 1 : at + 1] = [prompt, _event(lines[at], {"type": "user_message", "message": text})]
    cut = _index(lines, "function_call_output", "call_SengCcPYInk46d62DPE6eqqb")
    lines.insert(cut + 1, _event(lines[cut], {"type": "thread_rolled_back", "num_turns": 1}))


def time_back(lines: Lines) -> None:
    # the last request's lines stamped a second before the one before it started (at
    # the token_count before it: a clock put back): the one before it is written already
    closes = [i for i, line in enumerate(lines) if line["payload"].get("type") == "token_count"]
    earlier = lines[closes[-4]]["timestamp"]  # (each request's token_count comes twice)
    back = datetime.fromisoformat(earlier.replace("Z", "+00:00")) - timedelta(seconds=1)
    for line in lines[closes[-2] + 1 :]:
        line["timestamp"] = back.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def spawned(lines: Lines) -> None:
    lines[0]["payload"]["source"] = {
        "subagent": {"thread_spawn": {"parent_thread_id": "p-1", "agent_role": "worker"}}
    }


def _windowless(lines: Lines, first: int) -> None:
    counts = 0
    for line in lines:
        payload = line["payload"]
        if payload.get("type") == "task_started":
            payload.pop("model_context_window", None)
        info = payload.get("info") if payload.get("type") == "token_count" else None
        if isinstance(info, dict):
            counts += 1
            if counts <= first:
                info.pop("model_context_window", None)


def no_window(lines: Lines) -> None:
    _windowless(lines, 1_000)


def window_later(lines: Lines) -> None:
    _windowless(lines, 2)


def ends_together(lines: Lines) -> None:
    # the last request read at the very time the one before it ended (every line after
    # that request's token_counts stamped with their time): two requests' ends at one time
    closes = [i for i, line in enumerate(lines) if line["payload"].get("type") == "token_count"]
    ended = lines[closes[-3]]["timestamp"]  # (each request's token_count comes twice)
    for line in lines[closes[-3] + 1 :]:
        line["timestamp"] = ended


def _first_request(lines: Lines) -> int:
    """The line of the first request's usage (its first `token_count` with counts)."""
    return next(
        i
        for i, line in enumerate(lines)
        if line["payload"].get("type") == "token_count"
        and isinstance(line["payload"].get("info"), dict)
    )


def meta_late(lines: Lines) -> None:
    # the session's meta line read only after the first request: the key the first
    # request fixed (the file's name) is not the session id the end reads
    lines.insert(_first_request(lines), lines.pop(0))


def earlier_line(lines: Lines) -> None:
    # a line (rate limits only) after the first request, stamped a second before the
    # rollout's first line: the session starts earlier than the counters' opening zeros
    first_close = _first_request(lines)
    start = datetime.fromisoformat(lines[0]["timestamp"].replace("Z", "+00:00"))
    stamp = (start - timedelta(seconds=1)).isoformat(timespec="milliseconds")
    limits = {"type": "token_count", "info": None, "rate_limits": {}}
    line = {"timestamp": stamp.replace("+00:00", "Z"), "type": "event_msg", "payload": limits}
    lines.insert(first_close + 1, line)


def left_open(lines: Lines) -> None:
    # the last request's usage never came: its output began, no token_count
    assert lines[-2]["payload"]["type"] == "token_count"
    del lines[-2]


# Each case: its change, and why the pass falls back ("": it does not, the traces are equal).
CASES: dict[str, tuple[Callable[[Lines], None], str]] = {
    "aborted_turn": (aborted_turn, ""),
    "background_command": (background_command, ""),
    "command_end": (command_end, ""),
    "failed_turn": (failed_turn, ""),
    "no_window": (no_window, ""),
    "left_open": (left_open, ""),
    "earlier_line": (
        earlier_line,
        "a time read after the first request before the session's start",
    ),
    "ends_together": (ends_together, "two requests that end at one time"),
    "late_command_end": (late_command_end, "a call changed after it was written"),
    "first_call_outlasts": (first_call_outlasts, ""),
    "long_command": (long_command, "a call changed after it was written"),
    "meta_late": (meta_late, "a fact guessed at the first request that the end does not confirm"),
    "rollback": (rollback, ""),
    "rollback_mid": (rollback_mid, ""),
    "spawned": (spawned, "a spawned or spawning thread"),
    "time_back": (time_back, "a request that starts before one written already"),
    "window_later": (window_later, "a request without a window in a session with one"),
}


# The cases whose refusal needs the first request written before the line that changes
# what it fixed: with the whole small rollout read first (its 63 lines are fewer than a
# batch), the pass knows it in time and writes what the model path writes.
WRITTEN_EARLY = frozenset({"earlier_line", "meta_late"})


def _reasons(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Why the Codex pass fell back (test_pi_stream.refusals)."""
    return refusals(monkeypatch, stream_codex.CodexPass)


@pytest.mark.parametrize("batch", [1, codex_reading.BATCH_LINES])
@pytest.mark.parametrize("case", sorted(CASES))
def test_hand_made_rollouts(
    case: str, batch: int, tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (batch: the lines read between two writings; 1 writes each request as it closes)
    monkeypatch.setattr(codex_reading, "BATCH_LINES", batch)
    change, reason = CASES[case]
    if case in WRITTEN_EARLY and batch > 1:
        reason = ""
    lines = read_lines(SMALL)
    change(lines)
    path = write_lines(tmp_path, SMALL, lines)
    reasons = _reasons(monkeypatch)
    # THEN equal to the model path (handled), or its bytes (not handled, for its reason)
    assert both(path, export_trace, monkeypatch) is (not reason)
    assert reasons == ([reason] if reason else [])


@pytest.mark.parametrize("seed", range(19, 27))
def test_rollouts_with_lines_at_one_time(
    seed: int, tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a small or the Desktop rollout with one line in ten stamped at the time of the
    # line before it: a call can start at the very time of the request whose context its
    # result entered first (its addition's instant). The model path writes the instant
    # first (TRACE_CONTRACT §1), so the flow reads from the addition to the call; seeds 19
    # and 24 were the pass's, with the flow the other way round
    rng = random.Random(seed)
    source = DESKTOP if seed % 2 else SMALL
    lines = read_lines(source)
    for before, line in itertools.pairwise(lines):
        if rng.random() < 0.1:
            line["timestamp"] = before["timestamp"]
    path = write_lines(tmp_path, source, lines)
    monkeypatch.setattr(codex_reading, "BATCH_LINES", (1, 7, 256)[seed % 3])
    reasons = _reasons(monkeypatch)
    # THEN the model path's trace, or its bytes for that reason
    handled = both(path, export_trace, monkeypatch)
    assert reasons == ([] if handled else ["an addition at the time its call starts"])


def test_a_window_that_changes_before_a_compaction(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the Desktop rollout (one compaction) whose last request before the compaction
    # reports half the window: Context window and fill change there and back, and the
    # compaction's `context` states its window only where it differs from that request's
    # snapshot, which nothing else keeps for the end
    lines = read_lines(DESKTOP)
    compacted = next(i for i, line in enumerate(lines) if line["type"] == "compacted")
    counts = [
        line["payload"]["info"]
        for line in lines[:compacted]
        if line["payload"].get("type") == "token_count"
        and isinstance(line["payload"].get("info"), dict)
    ]
    assert len(counts) > 4
    for info in counts[-2:]:  # (each request's token_count comes twice)
        info["model_context_window"] = info["model_context_window"] // 2
    assert len({info["model_context_window"] for info in counts}) == 2
    path = write_lines(tmp_path, DESKTOP, lines)
    reasons = _reasons(monkeypatch)
    # THEN the pass writes what the model path writes
    assert both(path, export_trace, monkeypatch)
    assert reasons == []


def test_a_rollout_that_ends_with_its_compaction(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the Desktop rollout cut after its compaction: no request after it says the
    # size after, so its observation is settled at the end with the compaction's own
    lines = read_lines(DESKTOP)
    compacted = next(i for i, line in enumerate(lines) if line["type"] == "compacted")
    path = write_lines(tmp_path, DESKTOP, lines[: compacted + 2])
    reasons = _reasons(monkeypatch)
    # THEN the pass writes what the model path writes
    assert both(path, export_trace, monkeypatch)
    assert reasons == []


def test_damaged_lines_are_said_the_same_way(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout with a cut line and a line that is no object
    lines = SMALL.read_text().splitlines(keepends=True)
    lines.insert(20, '{"timestamp": "2026-02-23T19:34:41.000Z", "type": "event_msg", \n')
    lines.insert(30, "[1, 2]\n")
    path = tmp_path / SMALL.name
    path.write_text("".join(lines))
    # THEN the same warnings, the same trace
    assert both(path, export_trace, monkeypatch)


def test_no_user_path_and_the_same_bytes_with_workers(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_pi_stream_pipeline import run_export

    from agent_profiler import stream

    # GIVEN rollouts whose cwd is under a user's home, a call reading a file under it
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("a", "b"):
        lines = read_lines(SMALL)
        lines[0]["payload"]["cwd"] = f"/home/alice/work/{name}"
        lines[0]["payload"]["id"] = f"{name * 8}-0000-4000-8000-000000000000"
        at = _index(lines, "function_call", FIRST_CALL)
        path = f"/home/alice/work/{name}/src/parser.py"
        lines[at]["payload"]["arguments"] = json.dumps({"path": path})
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    assert both(folder / "a.jsonl", export_trace, monkeypatch)
    # THEN the pass's trace says no user's path, and is the same bytes with workers
    monkeypatch.setenv(stream.SWITCH, "1")
    got = export_trace(folder / "a.jsonl", args=("--no-compress",), require_addition=False)
    assert b"alice" not in got.path.read_bytes()
    assert any("parser.py" in str(s.args) for s in got.view.slices)
    once = run_export(folder, tmp_path / "1.pftrace", "--jobs", "1")
    workers = run_export(folder, tmp_path / "2.pftrace", "--jobs", "2")
    assert once == workers
