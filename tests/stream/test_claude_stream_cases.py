"""The one pass against the model path on hand-made Claude Code transcripts (a small real
one with a compaction, changed): what the corpus holds little of (a call without a result
in the middle, a result read before its call, Claude Code's own `<synthetic>` reply) must
come out equal; what the pass does not handle must fall back to the model path's bytes,
for the reason it names (each case's NotHandled). The stream's trace holds no absolute
path of the journal's, and the same journal gives the same bytes twice."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_pi_stream import assert_same_trace, export_both, refusals

from agent_profiler import stream
from agent_profiler.stream import claude as stream_claude
from agent_profiler.stream import claude_reading
from shared_paths import TESTS

BASE = (
    TESTS
    / "data"
    / "journals"
    / "claude-code"
    / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
)
FIRST = "msg_01Xoo2GzARUu4weag5sCWRoF"  # the first request (three calls)
SECOND = "msg_01GTU9QuNNKeQ34opArrZDeP"  # the second (one call)
THIRD = "msg_01WuhMYr3wMcgtbvbQbKgP8Z"

Lines = list[dict[str, Any]]


def _records(lines: Lines, message_id: str) -> list[int]:
    return [
        i
        for i, line in enumerate(lines)
        if isinstance(line.get("message"), dict) and line["message"].get("id") == message_id
    ]


def _results_of(lines: Lines, message_id: str) -> list[int]:
    """The user records holding the results of a request's calls."""
    ids = {
        block["id"]
        for i in _records(lines, message_id)
        for block in lines[i]["message"]["content"]
        if block.get("type") == "tool_use"
    }
    return [
        i
        for i, line in enumerate(lines)
        if line.get("type") == "user"
        and isinstance(line["message"].get("content"), list)
        and any(b.get("tool_use_id") in ids for b in line["message"]["content"])
    ]


def no_result_mid(lines: Lines) -> None:
    # the second request's call gets no result (the user typed instead): it lasts until
    # the session's end
    (at,) = _results_of(lines, SECOND)
    lines[at]["message"]["content"] = "never mind that, go on"


def result_before_call(lines: Lines) -> None:
    # the second request's result written the line before its call (2.1.165 does)
    (result,) = _results_of(lines, SECOND)
    call = result - 1
    lines[call], lines[result] = lines[result], lines[call]


def synthetic(lines: Lines) -> None:
    # Claude Code's own reply to an API error after the third request: no request
    at = _records(lines, THIRD)[-1]
    reply = copy.deepcopy(lines[at])
    reply["uuid"] = "synthetic-1"
    reply["isApiErrorMessage"] = True
    reply["message"].update(
        id="msg_synthetic",
        model="<synthetic>",
        content=[{"type": "text", "text": "API Error: overloaded"}],
        usage={"input_tokens": 0, "output_tokens": 0},
    )
    lines.insert(at + 1, reply)


def _calls_of(lines: Lines, message_id: str) -> list[str]:
    return [
        block["id"]
        for i in _records(lines, message_id)
        for block in lines[i]["message"]["content"]
        if block.get("type") == "tool_use"
    ]


def _shifted(stamp: str, seconds: float) -> str:
    from datetime import datetime, timedelta

    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def microcompaction(lines: Lines) -> None:
    # old tool results removed by id after the third request (Claude Code's microcompact)
    first_calls = _calls_of(lines, FIRST)
    at = _results_of(lines, THIRD)[0]
    record = {
        **{k: lines[at][k] for k in ("sessionId", "cwd", "version", "timestamp")},
        "type": "system",
        "subtype": "microcompact_boundary",
        "uuid": "micro-1",
        "microcompactMetadata": {
            "trigger": "auto",
            "preTokens": 30_000,
            "tokensSaved": 2_000,
            "compactedToolIds": first_calls[:2],
        },
    }
    lines.insert(at + 1, record)


def two_microcompactions(lines: Lines) -> None:
    # two microcompactions, stamped 2 and 1 ms before the result read before them (the
    # fourth request's start): both wait for that request to close
    microcompaction(lines)
    at = next(i for i, x in enumerate(lines) if x.get("uuid") == "micro-1")
    second = copy.deepcopy(lines[at])
    lines[at]["timestamp"] = _shifted(second["timestamp"], -0.002)
    second["uuid"] = "micro-2"
    second["timestamp"] = _shifted(second["timestamp"], -0.001)
    second["microcompactMetadata"]["compactedToolIds"] = _calls_of(lines, FIRST)[2:]
    lines.insert(at + 1, second)


def microcompaction_later(lines: Lines) -> None:
    # a microcompaction stamped 1 ms after the result read before it, as Claude Code
    # writes one right before it sends the request: that request starts at the boundary
    microcompaction(lines)
    at = next(i for i, x in enumerate(lines) if x.get("uuid") == "micro-1")
    lines[at]["timestamp"] = _shifted(lines[at]["timestamp"], 0.001)


def microcompaction_after_request(lines: Lines) -> None:
    # a microcompaction stamped a second after the first record of the request read after
    # it (a clock put back): that request starts before it, at its own first record; the
    # model path writes their samples in time order, the pass wrote them in the order read
    microcompaction(lines)
    at = next(i for i, x in enumerate(lines) if x.get("uuid") == "micro-1")
    following = next(x for x in lines[at:] if x.get("type") == "assistant")
    lines[at]["timestamp"] = _shifted(following["timestamp"], 1)


def _attached(lines: Lines, at: int, uuid: str, attachment: dict[str, Any], **more: Any) -> None:
    """A 2.1.3xx attachment record after line `at`, 1 ms after it."""
    envelope = {k: lines[at][k] for k in ("sessionId", "cwd", "version")}
    stamp = _shifted(lines[at]["timestamp"], 0.001)
    record = {**envelope, "type": "attachment", "uuid": uuid, "timestamp": stamp}
    lines.insert(at + 1, {**record, "attachment": attachment, **more})


def results_cut(lines: Lines) -> None:
    # 2.1.3xx before the third request, in the order Claude Code writes them: thinking
    # stripped, an attachment measured by its `rendered`, then two of the first request's
    # results sent as a stand-in (a microcompaction, where the request starts)
    at = _results_of(lines, SECOND)[-1]
    _attached(lines, at, "strip-1", {"type": "thinking_stripped", "scope": "all"})
    sent = [{"content": "<system-reminder>\nToday's date is 2026-12-06.\n</system-reminder>"}]
    _attached(lines, at + 1, "date-1", {"type": "date", "date": "x"}, rendered=sent)
    cut = {"type": "tool_results_cut", "callIds": _calls_of(lines, FIRST)[:2]}
    _attached(lines, at + 2, "cut-1", {**cut, "standIn": "[Old tool result content cleared]"})


def changed_after_cut(lines: Lines) -> None:
    # the attachment after the cut: the request starts at the cut (one time), with more
    # context than the microcompaction's snapshot
    results_cut(lines)
    at = next(i for i, x in enumerate(lines) if x.get("uuid") == "cut-1")
    date = lines.pop(at - 1)  # (the cut is at `at - 1` now)
    date["timestamp"] = lines[at - 1]["timestamp"]
    lines.insert(at, date)


def stripped_after_cut(lines: Lines) -> None:
    # the thinking stripped after the cut, at its time: the request's snapshot holds less
    # assistant history than the microcompaction's, at one time (one sample, the request's)
    results_cut(lines)
    strip = lines.pop(next(i for i, x in enumerate(lines) if x.get("uuid") == "strip-1"))
    at = next(i for i, x in enumerate(lines) if x.get("uuid") == "cut-1")
    strip["timestamp"] = lines[at]["timestamp"]
    lines.insert(at + 1, strip)


def content_replaced(lines: Lines) -> None:
    # 2.1.3xx: the first request's results sent as previews, one read before its result
    envelope = {"type": "content-replacement", "sessionId": lines[0]["sessionId"]}
    calls = _calls_of(lines, FIRST)
    entries = [{"kind": "tool-result", "toolUseId": c, "replacement": "preview"} for c in calls]
    at = _results_of(lines, FIRST)
    lines.insert(at[-1] + 1, {**envelope, "replacements": entries[1:]})
    lines.insert(at[0], {**envelope, "replacements": entries[:1]})


def first_model_not_claude(lines: Lines) -> None:
    # the first request served by another model (a proxy's): the window is guessed from
    # the first Claude model's
    for i in _records(lines, FIRST):
        lines[i]["message"]["model"] = "glm-4.6"


def names_an_agent(lines: Lines) -> None:
    # the last call launched a subagent (its result names the agent, whose file is not
    # beside: an unread child); ten larger additions came before it, so it is no cause of
    # one: its end is written as it comes, its begin at the end, once the adapter linked
    # it to the agent
    at = max(
        i
        for i, line in enumerate(lines)
        if line.get("type") == "user"
        and isinstance(line["message"].get("content"), list)
        and any(b.get("type") == "tool_result" for b in line["message"]["content"])
    )
    lines[at]["toolUseResult"] = {"agentId": "a0b1c2d3", "status": "completed"}
    for block in lines[at]["message"]["content"]:
        block["content"] = ""


def names_an_agent_at_the_end(lines: Lines) -> None:
    # the transcript ends with the first request: its first call (in start order) without
    # a result holds the two after it until the end, and the last of them launched a
    # subagent: it is taken at the end, and written then with the agent the adapter
    # linked it to
    calls = _calls_of(lines, FIRST)
    results = _results_of(lines, FIRST)
    del lines[results[-1] + 1 :]
    for i in results:
        block = lines[i]["message"]["content"][0]
        if block["tool_use_id"] == calls[-1]:
            lines[i]["toolUseResult"] = {"agentId": "a0b1c2d3", "status": "completed"}
            block["content"] = ""
    lines[:] = [
        line
        for i, line in enumerate(lines)
        if i not in results or line["message"]["content"][0]["tool_use_id"] != calls[0]
    ]


def sidechain(lines: Lines) -> None:
    at = _records(lines, FIRST)[0]
    other = copy.deepcopy(lines[at])
    other.update(isSidechain=True, agentId="a1b2c3", uuid="side-1")
    other["message"]["id"] = "msg_side"
    lines.insert(at + 1, other)


def undated(lines: Lines) -> None:
    for line in lines:
        line.pop("timestamp", None)


def closed_request(lines: Lines) -> None:
    # a record of the first request read after the third began
    again = copy.deepcopy(lines[_records(lines, FIRST)[0]])
    again["uuid"] = "again-1"
    lines.insert(_records(lines, THIRD)[0] + 1, again)


def unmetered(lines: Lines) -> None:
    for i in _records(lines, SECOND):
        lines[i]["message"]["usage"] = {"input_tokens": 0, "output_tokens": 0}


def compaction_first(lines: Lines) -> None:
    boundary = next(i for i, x in enumerate(lines) if x.get("subtype") == "compact_boundary")
    first = _records(lines, FIRST)[0]
    moved = [copy.deepcopy(lines[boundary]), copy.deepcopy(lines[boundary + 1])]
    for line, uuid in zip(moved, ("early-boundary", "early-summary"), strict=True):
        line["timestamp"] = lines[first - 1]["timestamp"]
        line["uuid"] = uuid
    lines[first:first] = moved


def same_start(lines: Lines) -> None:
    # no result between the first two requests: both start at the first prompt
    for at in reversed(_results_of(lines, FIRST)):
        del lines[at]


def time_back(lines: Lines) -> None:
    # the third request and the result before it stamped before the second started
    back = lines[_records(lines, FIRST)[-1]]["timestamp"]
    for at in [*_results_of(lines, SECOND), _records(lines, THIRD)[0]]:
        lines[at]["timestamp"] = back


def late_result(lines: Lines) -> None:
    # the first call's result read again at the end: its end moves after it was written
    again = copy.deepcopy(lines[_results_of(lines, FIRST)[0]])
    again["uuid"] = "late-1"
    again["timestamp"] = lines[-1].get("timestamp") or lines[-2]["timestamp"]
    lines.append(again)


def _later(lines: Lines, seconds: int) -> str:
    """A time `seconds` after the transcript's last."""
    from datetime import datetime, timedelta

    last = max(line["timestamp"] for line in lines if "timestamp" in line)
    moment = datetime.fromisoformat(last.replace("Z", "+00:00")) + timedelta(seconds=seconds)
    return moment.isoformat().replace("+00:00", "Z")


def late_results(lines: Lines) -> None:
    # every call's result read again at the end: most calls' drafts were let go once
    # written (stream/claude_tools.py `let_go`)
    results = [
        i
        for i, line in enumerate(lines)
        if line.get("type") == "user"
        and isinstance(line["message"].get("content"), list)
        and any(b.get("type") == "tool_result" for b in line["message"]["content"])
    ]
    at = _later(lines, 1)
    for i in results:
        again = copy.deepcopy(lines[i])
        again["uuid"] = f"late-{i}"
        again["timestamp"] = at
        lines.append(again)


def calls_again(lines: Lines) -> None:
    # every call made again by a later response (a new prompt, a new message id): the
    # model keeps each id's first call
    blocks = [
        block
        for line in lines
        if line.get("type") == "assistant"
        for block in line["message"]["content"]
        if block.get("type") == "tool_use"
    ]
    prompt = copy.deepcopy(next(x for x in lines if x.get("type") == "user"))
    prompt.update(uuid="again-0", timestamp=_later(lines, 1))
    prompt["message"] = {"role": "user", "content": "do it all again"}
    again = copy.deepcopy(lines[_records(lines, FIRST)[-1]])
    again.update(uuid="again-1", timestamp=_later(lines, 2))
    again["message"]["id"] = "msg_again"
    again["message"]["content"] = blocks
    lines += [prompt, again]


def _write(tmp_path: Path, change: Callable[[Lines], None]) -> Path:
    lines = [json.loads(x) for x in BASE.read_text().splitlines() if x.strip()]
    change(lines)
    path = tmp_path / f"{change.__name__}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


def _both(path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> tuple[bool, list[str]]:
    """Export both ways: whether the pass handled it (then the traces are equal; else the
    bytes are), and the reasons it gave for not handling it."""
    reasons = refusals(monkeypatch, stream_claude.ClaudePass)
    expected, got, handled = export_both(path, export_trace, monkeypatch)
    assert len(handled) == 1
    if not handled[0]:
        assert got.path.read_bytes() == expected.path.read_bytes()
        return False, reasons
    assert got.stderr == expected.stderr.replace(str(expected.path), str(got.path))
    assert_same_trace(expected, got)
    return True, reasons


@pytest.mark.parametrize(
    "change",
    [
        no_result_mid,
        result_before_call,
        synthetic,
        microcompaction,
        two_microcompactions,
        microcompaction_later,
        first_model_not_claude,
        names_an_agent,
        names_an_agent_at_the_end,
        results_cut,
        changed_after_cut,
        stripped_after_cut,
        content_replaced,
    ],
)
@pytest.mark.parametrize("batch", [1, claude_reading.BATCH_LINES])
def test_handled_and_equal(
    change: Callable[[Lines], None],
    batch: int,
    tmp_path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # (a batch a record: each call's draft let go as early as it can be, before a later
    # record reads it, as a cut of old results does)
    monkeypatch.setattr(claude_reading, "BATCH_LINES", batch)
    assert _both(_write(tmp_path, change), export_trace, monkeypatch) == (True, [])


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (sidechain, "records of another agent (a sidechain)"),
        (undated, "no readable time"),
        (closed_request, "a record of a request closed already"),
        (unmetered, "a response without usage"),
        (compaction_first, "a compaction before the first request"),
        (same_start, "two requests at one time"),
        (time_back, "a request that starts before one written already"),
        (
            microcompaction_after_request,
            "a request starting before a compaction written already",
        ),
        (late_result, "a call changed after it was written"),
    ],
)
def test_falls_back(
    change: Callable[[Lines], None],
    reason: str,
    tmp_path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    handled, reasons = _both(_write(tmp_path, change), export_trace, monkeypatch)
    assert not handled
    assert reasons == [reason] or reasons[0].startswith(reason), reasons


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (late_results, "a call changed after it was written (its result read again)"),
        (calls_again, "a call read again after it was written"),
    ],
)
def test_falls_back_once_drafts_were_let_go(
    change: Callable[[Lines], None],
    reason: str,
    tmp_path: Path,
    export_trace: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(claude_reading, "BATCH_LINES", 1)  # (each request written at once)
    handled, reasons = _both(_write(tmp_path, change), export_trace, monkeypatch)
    assert not handled
    assert reasons == [reason]


def _export_on(path: Path, out: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.setenv(stream.SWITCH, "1")
    got = export_trace(path, args=("--no-compress",), require_addition=False)
    monkeypatch.setenv(stream.SWITCH, "0")
    return got.path.read_bytes()


def test_no_absolute_path_and_the_same_bytes_twice(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "journal.jsonl"
    path.write_bytes(BASE.read_bytes())
    handled: list[bool] = []
    read = stream_claude.ClaudePass.read

    def spy(self: Any) -> Any:
        session = read(self)
        handled.append(True)
        return session

    monkeypatch.setattr(stream_claude.ClaudePass, "read", spy)
    first = _export_on(path, tmp_path / "a.pftrace", export_trace, monkeypatch)
    second = _export_on(path, tmp_path / "b.pftrace", export_trace, monkeypatch)
    assert handled == [True, True]
    assert first == second
    cwd = json.loads(BASE.read_text().splitlines()[0])["cwd"]
    assert cwd.startswith("/Users/") and cwd.encode() in BASE.read_bytes()
    for secret in (cwd, "/Users/", str(tmp_path)):
        assert secret.encode() not in first, secret


def test_a_call_without_a_result_holds_no_later_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Placed as lasting to the session's end a request after its own, the calls after
    it are written as they end, not held until the end with every event after them."""
    import io

    from agent_profiler import estimate
    from agent_profiler.annotations import TraceFacts
    from agent_profiler.diagnostics import Diagnostics

    left: list[tuple[int, int]] = []
    ending = claude_reading.ClaudeReading.ending

    def spy(self: Any) -> Any:
        left.append((len(self.calls.waiting), len(self.calls.unended)))
        return ending(self)

    monkeypatch.setattr(claude_reading.ClaudeReading, "ending", spy)
    path = _write(tmp_path, no_result_mid)
    with estimate.use_estimator(estimate.current().for_harness("claude-code")):
        stream_claude.export_claude(path, Diagnostics(), TraceFacts(), 0, io.BytesIO(), True)
    assert left == [(0, 1)]


def test_the_drafts_of_written_calls_are_let_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once handed on, a call's draft is let go unless `builder.finish` reads it (its
    prompt's last to end, one without a result, one that launched a subagent)."""
    import io

    from agent_profiler import estimate
    from agent_profiler.annotations import TraceFacts
    from agent_profiler.diagnostics import Diagnostics

    left: list[tuple[int, int]] = []
    ending = claude_reading.ClaudeReading.ending

    def spy(self: Any) -> Any:
        left.append((len(self.builder.tools), len(self.calls.gone)))
        return ending(self)

    monkeypatch.setattr(claude_reading.ClaudeReading, "ending", spy)
    path = tmp_path / "journal.jsonl"
    path.write_bytes(BASE.read_bytes())
    with estimate.use_estimator(estimate.current().for_harness("claude-code")):
        stream_claude.export_claude(path, Diagnostics(), TraceFacts(), 0, io.BytesIO(), True)
    ((held, gone),) = left
    assert gone > 0 < held


def test_closed_requests_keep_their_response_not_their_draft(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request closed is its `Response` in the builder (made once: `finish` hands it on),
    its draft let go; no call or response id stays in the encoder's interned strings."""
    import io

    from agent_profiler import estimate
    from agent_profiler.adapters.claude_response import ResponseDraft
    from agent_profiler.annotations import TraceFacts
    from agent_profiler.diagnostics import Diagnostics

    drafts: list[int] = []
    interned: list[list[str]] = []
    end = stream_claude.ClaudePass._end

    def spy(self: Any, reading: Any) -> Any:
        responses = reading.builder.responses.values()
        drafts.append(sum(isinstance(d, ResponseDraft) for d in responses))
        # (nor are call or response ids interned: the table grew with every request)
        interned.append([x for x in self.encoder.string_fields if x.startswith(("toolu_", "msg_"))])
        return end(self, reading)

    monkeypatch.setattr(stream_claude.ClaudePass, "_end", spy)
    path = tmp_path / "journal.jsonl"
    path.write_bytes(BASE.read_bytes())
    with estimate.use_estimator(estimate.current().for_harness("claude-code")):
        session = stream_claude.export_claude(
            path, Diagnostics(), TraceFacts(), 0, io.BytesIO(), True
        )
    assert drafts == [0] and len(session.responses) > 1
    assert interned == [[]]


def test_several_transcripts_with_workers(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Groups exported by worker processes: the pass's (two transcripts) and the model
    path's (a /context run) in one trace, equal to the model path's in content and lines."""
    import re

    from test_pi_stream import canonical

    data = TESTS / "data" / "journals" / "claude-code"
    paths = (
        BASE,
        data / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl",
        data / "context-command" / "simonw-cct-pr51_v2.1.2_44baca89.jsonl",
    )
    monkeypatch.setenv(stream.SWITCH, "0")
    expected = export_trace(*paths, args=("--jobs", "2"), require_addition=False)
    monkeypatch.setenv(stream.SWITCH, "1")
    got = export_trace(*paths, args=("--jobs", "2"), require_addition=False)
    monkeypatch.setenv(stream.SWITCH, "0")
    assert got.path.read_bytes() != expected.path.read_bytes()  # (the pass wrote some)
    assert canonical(got.view) == canonical(expected.view)
    size = re.compile(r"\([0-9.]+ [KM]?B\)")
    assert size.sub("", got.stdout) == size.sub("", expected.stdout).replace(
        str(expected.path), str(got.path)
    )


def test_a_compaction_reaching_back_to_a_request_written_falls_back(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compact boundary's `durationMs` reaching back exactly to the start of the
    request before it, and the next request's records stamped at the boundary: the
    compaction's size before is no sample there (that request's own size is), and its
    `Context: *` samples at its end would have to join the next request's packet. The pass
    falls back; for a while it wrote the categories there twice."""
    from agent_profiler.adapters.common import timestamp_ns
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    def as_is(lines: Lines) -> None:
        pass

    (session,) = load([_write(tmp_path, as_is)], Diagnostics()).sessions
    (compaction,) = [c for c in session.compactions if c.kind != "microcompaction"]
    target = max(r.start_ns for r in session.responses if r.start_ns < compaction.start_ns)

    def back_to_a_request(lines: Lines) -> None:
        at = next(i for i, x in enumerate(lines) if x.get("subtype") == "compact_boundary")
        stamp = lines[at]["timestamp"]
        moment = timestamp_ns(stamp)
        assert moment is not None
        lines[at]["compactMetadata"]["durationMs"] = (moment - target) // 10**6
        following = at + 1
        while lines[following].get("type") != "assistant":
            if lines[following].get("timestamp"):
                lines[following]["timestamp"] = stamp
            following += 1
        lines[following]["timestamp"] = _shifted(stamp, 0.5)

    handled, reasons = _both(_write(tmp_path, back_to_a_request), export_trace, monkeypatch)
    assert not handled
    assert reasons == ["a compaction's size at a request's start written already"]
