"""How one Muse Code log is read (`muse_journal`), pinned on the real 1.4.2 session (copy in
tests/data/journals/muse; line N below is that file's line N) and on the real compaction
events of `muse export` (hcn-1.1.1_compaction-records.export-events.json), spliced into it as
the run events they are on disk. Records the corpus lacks (tool calls and results, tool
effects, approvals, subagent control) are the real envelope of line 61 with an event of the
shape FORMATS-muse.md documents; each test's docstring says which lines are edited or
hand-made."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import muse
from agent_profiler.adapters.muse_journal import (
    APPROVAL_MESSAGE,
    EXPORT_MESSAGE,
    ApprovalReviewLogError,
)
from agent_profiler.diagnostics import LATER, Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.model import Basis, Category, Coverage, Session, SourceKind, Stage
from rules_spy import Added, by_id, raw_lines, spy
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "muse"
HCN = DATA / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
EXPORT = DATA / "hcn-1.1.1_compaction-records.export-events.json"
SID = "01a10134-76a3-79f0-a7ed-bdad567bda19"
RUN = "d0faab84-e05f-48ad-9c5d-5c6e85984779"
MODEL_TASK = "01a10134-7a6e-75b1-a99b-b4d378a61acd"
VALUES: list[dict[str, Any]] = [json.loads(t) for t in raw_lines(HCN) if t.strip()]
assert len(VALUES) == 96


def line(n: int) -> dict[str, Any]:
    """A copy of the real record on line n."""
    return copy.deepcopy(VALUES[n - 1])


def at(n: int) -> int:
    """Line n's `recorded_at` (µs) in ns."""
    return int(VALUES[n - 1]["recorded_at"]) * 1_000


def run_event(event: dict[str, Any], like: int = 61, shift_us: int = 1) -> dict[str, Any]:
    """Line `like`'s envelope (a run event of the session's one run) carrying `event`,
    recorded `shift_us` µs after it."""
    value = line(like)
    value["payload"] = {"kind": "run", "run_id": RUN, "event": event}
    value["recorded_at"] += shift_us
    return value


def task_event(task_id: str, event: dict[str, Any], like: int = 61, shift_us: int = 1) -> Any:
    value = line(like)
    value["payload"] = {"kind": "task", "run_id": RUN, "task_id": task_id, "event": event}
    value["recorded_at"] += shift_us
    return value


def edited(
    changes: dict[int, Any] | None = None, after: dict[int, list[Any]] | None = None
) -> list[Any]:
    """The real session with line n replaced by changes[n] (None: dropped) and the records
    after[n] inserted after it."""
    out: list[Any] = []
    for n, value in enumerate(VALUES, 1):
        if n in (changes or {}):
            if changes[n] is not None:  # type: ignore[index]
                out.append(changes[n])  # type: ignore[index]
        else:
            out.append(copy.deepcopy(value))
        out += (after or {}).get(n, [])
    return out


def write(tmp_path: Path, records: list[Any], texts: dict[int, str] | None = None) -> Path:
    """records as a session.jsonl; texts[i] replaces the i-th line (1-based) verbatim."""
    path = tmp_path / SID / "session.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    out = [json.dumps(r) for r in records]
    for i, text in (texts or {}).items():
        out[i - 1] = text
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def read(path: Path) -> tuple[Session, Diagnostics]:
    diagnostics = Diagnostics()
    (session,) = muse.read_files([path], diagnostics)
    return session, diagnostics


def warnings(diagnostics: Diagnostics) -> list[tuple[int | None, str, str]]:
    return [(w.line, w.kind, w.message) for w in diagnostics.warnings]


def facts(session: Session) -> dict[str, str]:
    return dict(session.facts)


def item(added: list[Added], item_id: str) -> Added:
    return by_id(added)[item_id]


# -- lines and envelopes ----------------------------------------------------------------------


def test_lines_that_are_no_envelope_are_warned_at_their_line(tmp_path: Path) -> None:
    """After line 3: a JSON array that is not events, a JSON string, and a retained frame
    whose children are no envelopes (bad JSON, an array, a stream that is not an object, not
    an object at all): each a bad-shape warning at its line; the session is read as ever."""
    frame = {
        "retained_frame": "session_permission_transaction",
        "children": [
            {"child_index": 0, "record_json": "{not json"},
            {"child_index": 1, "record_json": "[1, 2]"},
            {"child_index": 2, "record_json": json.dumps({"stream": "session"})},
            "not a child",
        ],
    }
    path = write(tmp_path, edited(after={3: [[1, 2], "text", frame]}))
    session, diagnostics = read(path)
    child = "retained_frame child is not an envelope"
    assert warnings(diagnostics) == [
        (4, "bad-shape", "line is a JSON array"),
        (5, "bad-shape", "line is not a JSON object"),
        (6, "bad-shape", child),
        (6, "bad-shape", child),
        (6, "bad-shape", child),
        (6, "bad-shape", child),
    ]
    assert {w.path for w in diagnostics.warnings} == {str(path)}
    assert [r.usage.prompt_tokens for r in session.responses] == [31_979]


def test_a_retained_frame_is_read_through_its_children(tmp_path: Path) -> None:
    """Line 1's frame holds two permission envelopes: they start the session and what they
    skip is noted, not counted as skipped lines; later skips are skipped lines (lines 4, 17,
    95 are workspace_branch). A retained marker (hand-made after FORMATS-muse §2.3) is
    counted and skipped."""
    marker = {
        "retained_marker": "omitted_live_only",
        "schema_version": 1,
        "stream": {"kind": "session", "id": SID},
        "position": {"id": "m-1", "sequence": 15},
    }
    session, diagnostics = read(write(tmp_path, edited(after={58: [marker]})))
    frame_child = json.loads(VALUES[0]["children"][0]["record_json"])
    assert session.start_ns == frame_child["recorded_at"] * 1_000
    assert session.session_id == SID
    for kind in ("permission_format_declared", "permission_profile_committed"):
        assert diagnostics.notes[f"muse:runtime.session.{kind}"] == 1
        assert f"muse:runtime.session.{kind}" not in diagnostics.skipped
    assert diagnostics.skipped["muse:session.workspace_branch.observed"] == 3
    assert diagnostics.skipped["muse:retained_marker"] == 1
    assert "muse:retained_marker" not in diagnostics.notes
    assert (
        facts(session)["omitted_live_only"] == "1 retained_marker lines (dropped live-only records)"
    )
    assert diagnostics.warning_total == 0


def test_events_without_envelopes_are_an_export(tmp_path: Path) -> None:
    """The payload.event objects of lines 22-64 written one a line, as a JSONL export would:
    refused as an export. One such bare event inside the real session is only skipped."""
    bare = [VALUES[n - 1]["payload"].get("event") for n in range(22, 65)]
    bare = [e for e in bare if isinstance(e, dict) and "kind" in e]
    assert len(bare) == 42
    path = tmp_path / "events.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in bare))
    with pytest.raises(JournalError) as caught:
        muse.read_journal(path, Diagnostics())
    assert (caught.value.path, caught.value.message) == (str(path), EXPORT_MESSAGE)
    session, diagnostics = read(write(tmp_path, edited(after={61: [bare[-1]]})))
    assert diagnostics.skipped["muse:non-envelope-line"] == 1
    assert [r.usage.prompt_tokens for r in session.responses] == [31_979]


def test_an_approval_review_stream_is_refused_at_its_first_envelope(tmp_path: Path) -> None:
    """Line 2 with `stream.kind` edited to the approval reviewer's: as a log it is an
    ApprovalReviewLogError at line 1; given as a session it is refused (a JournalError)."""
    value = line(2)
    value["stream"]["kind"] = "approval.review.runtime"
    path = write(tmp_path, [value, line(3)])
    with pytest.raises(ApprovalReviewLogError) as caught:
        muse.read_journal(path, Diagnostics())
    assert (caught.value.message, caught.value.line) == (APPROVAL_MESSAGE, 1)
    with pytest.raises(JournalError) as refused:
        muse.read_files([path], Diagnostics())
    assert type(refused.value) is JournalError
    assert (refused.value.path, refused.value.message, refused.value.line) == (
        str(path),
        APPROVAL_MESSAGE,
        1,
    )


def test_envelopes_of_other_streams_are_not_this_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before line 1: line 2 edited to a workflow stream, and to a session stream whose id is
    not text: skipped, the session is the next one's. Line 61 edited to a mirrored stream:
    skipped, its answer is not this session's."""
    workflow = line(2)
    workflow["stream"] = {"kind": "workflow", "id": "wf-1"}
    numbered = line(2)
    numbered["stream"] = {"kind": "session", "id": 7}
    mirrored = line(61)
    mirrored["stream"]["id"] = "01a10134-0000-0000-0000-000000000000"
    records = [workflow, numbered, *edited({61: mirrored})]
    added = spy(monkeypatch)
    session, diagnostics = read(write(tmp_path, records))
    assert session.session_id == SID
    assert diagnostics.skipped["muse:other-stream"] == 3
    assert "034155cd-276f-4325-b2cd-280695afd476" not in by_id(added)


def test_an_envelope_without_payload_is_a_warning(tmp_path: Path) -> None:
    """Line 61 with `payload` edited to a string: a warning at line 61, its answer is lost,
    its time still counts."""
    value = line(61)
    value["payload"] = "not a payload"
    value["recorded_at"] = VALUES[-1]["recorded_at"] + 5_000_000
    session, diagnostics = read(write(tmp_path, edited({61: value})))
    assert warnings(diagnostics) == [(61, "bad-shape", "runtime.session without payload")]
    assert session.end_ns == value["recorded_at"] * 1_000


def test_the_session_spans_its_earliest_and_latest_record(tmp_path: Path) -> None:
    """Line 10 edited to 1 s before the frame's records and line 30 to 9 s after the last
    line: the session starts and ends there, whatever the file order."""
    early, late = line(10), line(30)
    early["recorded_at"] = 1791021577918281 - 1_000_000
    late["recorded_at"] = VALUES[-1]["recorded_at"] + 9_000_000
    session, _ = read(write(tmp_path, edited({10: early, 30: late})))
    assert (session.start_ns, session.end_ns) == (
        early["recorded_at"] * 1_000,
        late["recorded_at"] * 1_000,
    )


# -- metadata ---------------------------------------------------------------------------------


WORKSPACE = VALUES[1]["payload"]["record"]["workspace_root"]
assert WORKSPACE.endswith("/seven-workspace")  # a session keeps the project's name only


def test_metadata_names_project_provider_version_and_build(tmp_path: Path) -> None:
    """Lines 2 (metadata), 3 (route_facts) and 15 (run.model.configured) as written; then
    line 3's cwd and line 15's provider edited: the metadata still wins."""
    session, _ = read(HCN)
    assert (session.project, session.provider, session.harness_version) == (
        "seven-workspace",
        "meta",
        "1.4.2",
    )
    assert facts(session)["build"] == "b538db0a2c"
    assert session.facts[0] == ("build", "b538db0a2c")
    route, configured = line(3), line(15)
    route["payload"]["record"]["cwd"] = "/elsewhere"
    configured["payload"]["record"]["provider_id"] = "other"
    session, _ = read(write(tmp_path, edited({3: route, 15: configured})))
    assert (session.project, session.provider) == ("seven-workspace", "meta")


def test_without_metadata_the_route_and_model_records_name_them(tmp_path: Path) -> None:
    """Line 2's record emptied: the project is line 3's cwd, the provider line 15's, no
    version, no build fact; the model still comes from line 64."""
    route, configured = line(3), line(15)
    route["payload"]["record"]["cwd"] = "/elsewhere"
    configured["payload"]["record"]["provider_id"] = "other"
    metadata = line(2)
    metadata["payload"]["record"] = {"build": {"sha": "", "semver": None}}
    session, _ = read(write(tmp_path, edited({2: metadata, 3: route, 15: configured})))
    assert (session.project, session.provider, session.harness_version) == (
        "elsewhere",
        "other",
        None,
    )
    assert "build" not in facts(session)
    assert session.models == ("muse-spark-1.3-contributor",)


@pytest.mark.parametrize(
    ("completed", "configured", "metadata", "model"),
    [
        ("from-completed", "from-run", "from-metadata", "from-completed"),
        (None, "from-run", "from-metadata", "from-run"),
        (None, None, "from-metadata", "from-metadata"),
        (None, None, None, None),
    ],
)
def test_the_model_of_a_request(
    tmp_path: Path, completed: str | None, configured: str | None, metadata: str | None, model: str
) -> None:
    """Line 64's `model`, else line 15's `model_id` for the run, else line 2's `model_id`;
    none: no model, no window (only muse-spark models have the model/list window)."""
    done, run_model, meta = line(64), line(15), line(2)
    done["payload"]["event"]["model"] = completed
    run_model["payload"]["record"]["model_id"] = configured
    meta["payload"]["record"]["model_id"] = metadata
    session, _ = read(write(tmp_path, edited({2: meta, 15: run_model, 64: done})))
    (response,) = session.responses
    assert response.model == (model or "")
    assert session.models == ((model,) if model else ())
    assert (session.window_tokens, session.window_source) == (None, None)
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response.id]
    assert snapshot.model == model and snapshot.window_tokens is None


def test_a_run_model_is_keyed_by_its_run_stream_else_its_command(tmp_path: Path) -> None:
    """Line 15 without `run_stream` (its `command_id` is the run id); then without either:
    the metadata's model stands."""
    done, run_model, meta = line(64), line(15), line(2)
    del done["payload"]["event"]["model"]
    meta["payload"]["record"]["model_id"] = "from-metadata"
    run_model["payload"]["record"]["model_id"] = "from-run"
    del run_model["payload"]["record"]["run_stream"]
    session, _ = read(write(tmp_path, edited({2: meta, 15: run_model, 64: done})))
    assert session.models == ("from-run",)
    run_model["payload"]["record"]["command_id"] = None
    session, _ = read(write(tmp_path, edited({2: meta, 15: run_model, 64: done})))
    assert session.models == ("from-metadata",)


# -- model calls ------------------------------------------------------------------------------


def test_a_requests_usage_as_model_completed_reports_it(tmp_path: Path) -> None:
    """Line 64 as written (cache keys 0, 38 reasoning); edited to cache_read 5 (over
    cached_tokens 7), cache_write 3 and a finish reason; then without cache_read_tokens: the
    cached_tokens stand in."""
    session, _ = read(HCN)
    (response,) = session.responses
    usage = response.usage
    assert (usage.prompt_tokens, usage.input_tokens, usage.output_tokens) == (31_979, 31_979, 49)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.reasoning_tokens) == (0, 0, 38)
    assert response.stop_reason is None and response.id == "request-1"
    done = line(64)
    event = done["payload"]["event"]
    event["usage"].update(cache_read_tokens=5, cached_tokens=7, cache_write_tokens=3)
    event["finish_reason"] = "tool_calls"
    (response,) = read(write(tmp_path, edited({64: done})))[0].responses
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (5, 3)
    assert response.stop_reason == "tool_calls"
    del event["usage"]["cache_read_tokens"]
    (response,) = read(write(tmp_path, edited({64: done})))[0].responses
    assert response.usage.cache_read_tokens == 7


@pytest.mark.parametrize("reason", ["", 3, ["stop"]])
def test_a_finish_reason_that_is_no_word_is_no_stop_reason(tmp_path: Path, reason: Any) -> None:
    """Line 64's finish_reason empty, a number or a list (a damaged journal): the request
    has no stop reason, as when the journal gives none; not `""`, `3` or a list in the
    trace (muse_drafts.str_or_none__mutmut_2/3 let each through)."""
    done = line(64)
    done["payload"]["event"]["finish_reason"] = reason
    (response,) = read(write(tmp_path, edited({64: done})))[0].responses
    assert response.stop_reason is None


def test_a_call_that_reported_only_output_is_still_a_request(tmp_path: Path) -> None:
    """Line 64 with input_tokens 0: a request of 49 output tokens, its size unknown."""
    done = line(64)
    done["payload"]["event"]["usage"]["input_tokens"] = 0
    session, _ = read(write(tmp_path, edited({64: done})))
    (response,) = session.responses
    assert (response.usage.prompt_tokens, response.usage.output_tokens) == (0, 49)
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response.id]
    assert snapshot.reported_tokens is None and snapshot.coverage is Coverage.PARTIAL


@pytest.mark.parametrize("usage", [None, {}, {"input_tokens": 0, "output_tokens": 0}])
def test_a_call_without_usage_is_no_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, usage: Any
) -> None:
    """Line 64 without usage, or all zeros: no request, and the answer still enters the
    context; the count is a fact."""
    done = line(64)
    done["payload"]["event"]["usage"] = usage
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited({64: done})))
    assert session.responses == ()
    assert facts(session)["zero_usage_model_completed"] == (
        "1 model calls that reported no tokens: not requests"
    )
    assert item(added, "034155cd-276f-4325-b2cd-280695afd476").chars == 5
    assert "native_lane_requests" not in facts(session)


@pytest.mark.parametrize(
    ("duration", "drop", "start_line"),
    [
        (True, (), 58),  # a boolean is no duration: the first model-task status
        ("4838", (), 58),
        (-1, (), 58),
        (None, (58, 62), 51),  # no status either: when the request opened (its trace)
    ],
)
def test_a_request_starts_at_its_first_status_without_a_duration(
    tmp_path: Path, duration: Any, drop: tuple[int, ...], start_line: int
) -> None:
    """Line 64's `duration_ms` edited; lines 58/62 (the model task's statuses) dropped."""
    done = line(64)
    done["payload"]["event"]["duration_ms"] = duration
    (response,) = read(write(tmp_path, edited({64: done, **dict.fromkeys(drop)})))[0].responses
    assert (response.start_ns, response.end_ns) == (at(start_line), at(64))


def test_a_duration_longer_than_the_journal_starts_the_request_there(tmp_path: Path) -> None:
    """Line 64's duration edited to 0 ms: the request is an instant at line 64."""
    done = line(64)
    done["payload"]["event"]["duration_ms"] = 0
    (response,) = read(write(tmp_path, edited({64: done})))[0].responses
    assert (response.start_ns, response.end_ns) == (at(64), at(64))


def test_a_status_after_completion_opens_no_request(tmp_path: Path) -> None:
    """Line 65 (the model task's `completed`) edited to a `status`: the task is closed, so
    no request is opened that never completes."""
    late = line(65)
    late["payload"]["event"]["kind"] = "status"
    session, _ = read(write(tmp_path, edited({65: late})))
    assert "requests-without-usage" not in facts(session)
    assert [r.id for r in session.responses] == ["request-1"]
    # the same status from a new model task does open one, and it never completes
    other = task_event("task-2", {"kind": "proposed", "task_kind": "model.meta.response"}, 65)
    status = task_event("task-2", {"kind": "status"}, 65, 2)
    session, _ = read(write(tmp_path, edited(after={65: [other, status]})))
    assert facts(session)["requests-without-usage"] == "1 requests that began but never completed"


def test_trace_step_and_completion_count_disagree(tmp_path: Path) -> None:
    """Line 51's model_step edited to 3 (line 64 is the run's call #0), and a second call
    (lines 51/64 again) as step 7 (it is #1): one warning, at the first completion's line."""
    trace = line(51)
    trace["payload"]["event"]["model_step"] = 3
    path = write(tmp_path, edited({51: trace}, after={64: _second_call(7, 1)}))
    _, diagnostics = read(path)
    assert diagnostics.warnings[0].path == str(path)
    assert warnings(diagnostics) == [
        (
            64,
            "muse-trace-step",
            "model_input_trace_recorded model_step 3 paired with model_completed #0 of its "
            "run (records missing or a retry)",
        )
    ]


def test_a_trace_repeated_for_one_step_is_a_retry(tmp_path: Path) -> None:
    """Line 51 written twice, the second with 400 more prompt bytes: one request, the later
    trace stands, the repeat is a fact."""
    again = line(51)
    lanes = again["payload"]["event"]["bounded"]["aggregates"]
    lanes[2]["byte_count"] += 400
    again["payload"]["event"]["bounded"]["total_lane_bytes"] += 400
    session, _ = read(write(tmp_path, edited(after={51: [again]})))
    (response,) = session.responses
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response.id]
    assert dict(snapshot.categories)[Category.PROMPTS] == (964 + 400 + 3) // 4
    assert facts(session)["repeated_traces"] == (
        "1 model_input_trace_recorded repeated for one step (retry)"
    )
    assert "requests-without-usage" not in facts(session)


def test_a_trace_of_a_new_step_drops_the_request_that_never_completed(tmp_path: Path) -> None:
    """Line 51 written again with model_step 1: the step-0 request never completed (a fact);
    the completion pairs with step 1, its count says #0 (a warning)."""
    again = line(51)
    again["payload"]["event"]["model_step"] = 1
    session, diagnostics = read(write(tmp_path, edited(after={51: [again]})))
    assert [r.id for r in session.responses] == ["request-2"]
    assert facts(session)["requests-without-usage"] == "1 requests that began but never completed"
    assert [w.kind for w in diagnostics.warnings] == ["muse-trace-step"]


@pytest.mark.parametrize(
    ("schema", "scope", "skipped"),
    [
        (1, "full_request", "muse:model_input_trace/schema-1/full_request"),
        (2, "bounded", "muse:model_input_trace/schema-2/bounded"),
    ],
)
def test_traces_of_another_schema_are_skipped(
    tmp_path: Path, schema: int, scope: str, skipped: str
) -> None:
    """Line 51's schema_version / scope edited: not read; the request falls back to items."""
    trace = line(51)
    trace["payload"]["event"].update(schema_version=schema, scope=scope)
    session, diagnostics = read(write(tmp_path, edited({51: trace})))
    assert diagnostics.skipped[skipped] == 1
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-1"]
    assert (snapshot.basis, snapshot.stage) == (Basis.CHARS, Stage.TRANSCRIPT_OBSERVED)
    assert facts(session)["native_lane_requests"].startswith("0 of 1 requests")


def test_a_trace_without_aggregates_is_a_warning(tmp_path: Path) -> None:
    trace = line(51)
    trace["payload"]["event"]["bounded"]["aggregates"] = []
    session, diagnostics = read(write(tmp_path, edited({51: trace})))
    assert warnings(diagnostics) == [
        (51, "bad-shape", "model_input_trace_recorded without aggregates")
    ]
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-1"]
    assert snapshot.basis is Basis.CHARS


def test_lanes_holding_the_whole_input_need_no_residual(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 64's input_tokens edited to the lanes' 24,025 tokens: no not-in-lanes item, the
    composition is complete."""
    done = line(64)
    done["payload"]["event"]["usage"]["input_tokens"] = 24_025
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited({64: done})))
    assert muse.NOT_IN_LANES_ID not in by_id(added)
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-1"]
    assert (snapshot.coverage, snapshot.stage) == (Coverage.COMPLETE, Stage.REQUEST_INPUT)
    assert snapshot.item_stage == "transcript-observed"
    assert facts(session)["native_lane_requests"] == (
        "1 of 1 requests have model_input_trace_recorded lanes (native-bytes/4); the others "
        "are transcript items (chars/4)"
    )


def test_blocks_larger_than_the_context_lane_are_a_warning(tmp_path: Path) -> None:
    """Line 51's context lane edited to 100 bytes, far less than lines 24-34's blocks: one
    warning at the completion's line, the lane shown unattributed."""
    trace = line(51)
    trace["payload"]["event"]["bounded"]["aggregates"][1]["byte_count"] = 100
    _, diagnostics = read(write(tmp_path, edited({51: trace})))
    assert warnings(diagnostics) == [
        (
            64,
            "muse-blocks-exceed-context",
            "context blocks add up to more bytes than the request's context lane; that lane "
            "is shown unattributed",
        )
    ]


# -- what enters the context ------------------------------------------------------------------


def test_the_prompt_and_instructions_of_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 22's prompt (a PROMPT item measured once), line 35's base instructions and its
    31 active tool names (schemas unmeasured), line 60's encrypted reasoning (unmeasured)."""
    added = spy(monkeypatch)
    session, diagnostics = read(HCN)
    prompt = VALUES[21]["payload"]["event"]["prompt"]
    got = item(added, f"prompt:{RUN}")
    assert (got.category, got.label, got.chars, got.source_kind) == (
        Category.PROMPTS,
        "User prompt",
        len(prompt),
        SourceKind.PROMPT,
    )
    (user,) = session.prompts
    assert (user.id, user.start_ns, user.chars) == (RUN, at(22), len(prompt))
    assert user.preview == prompt[: len(user.preview)] and user.preview
    assert dict(session.unmeasured) == {"encrypted-reasoning": 1, "tool-schemas": 31}
    assert diagnostics.skipped["muse:run/reasoning_committed"] == 1


def test_reasoning_without_its_encrypted_blob_is_not_unmeasured(tmp_path: Path) -> None:
    """Line 60 without `encrypted_content`; line 35 without tools: nothing unmeasured."""
    reasoning, configured = line(60), line(35)
    del reasoning["payload"]["event"]["encrypted_content"]
    configured["payload"]["event"]["toolset"]["active_tools"] = []
    session, _ = read(write(tmp_path, edited({35: configured, 60: reasoning})))
    assert dict(session.unmeasured) == {}


def test_a_prompt_that_is_not_text_is_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 22's prompt edited to a list: an empty prompt, still a turn."""
    started = line(22)
    started["payload"]["event"]["prompt"] = ["not", "text"]
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited({22: started})))
    assert (item(added, f"prompt:{RUN}").chars, session.prompts[0].chars) == (0, 0)


def test_an_answer_without_id_or_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 61 without message_id and with a non-text `text`: an empty answer named by its
    time."""
    answer = line(61)
    del answer["payload"]["event"]["message_id"]
    answer["payload"]["event"]["text"] = None
    added = spy(monkeypatch)
    read(write(tmp_path, edited({61: answer})))
    got = item(added, f"assistant:{at(61)}")
    assert (got.category, got.label, got.chars, got.source_kind) == (
        Category.ASSISTANT,
        "Assistant history",
        0,
        SourceKind.RESPONSE,
    )


def test_goal_usage_attribution_repeats_the_completion() -> None:
    """Line 63 repeats line 64's numbers: counted, skipped, never a second request."""
    session, diagnostics = read(HCN)
    assert diagnostics.skipped["muse:run/goal_usage_attribution"] == 1
    assert facts(session)["goal_usage_attribution"] == (
        "1 records not added: they repeat model_completed"
    )
    assert [r.usage.prompt_tokens for r in session.responses] == [31_979]


def test_reminder_children_are_counted_and_shown(tmp_path: Path) -> None:
    """Lines 41, 48, 78, 85 link four reminder children (two with a log path): each is a
    span named after its agent from its task's start to its end."""
    session, _ = read(HCN)
    assert facts(session)["reminder_children"] == "4 reminder child sessions linked"
    assert facts(session)["reminder_children_without_log_path"] == (
        "2 reminder children with no log path"
    )
    tasks = {
        VALUES[n - 1]["payload"]["event"]["task_id"]: VALUES[n - 1]["payload"]["event"]
        for n in (41, 48, 78, 85)
    }
    ends = {}
    for value in VALUES[1:]:
        payload = value["payload"]
        if payload.get("kind") == "task" and payload["event"]["kind"] == "completed":
            ends[payload["task_id"]] = value["recorded_at"] * 1_000
    for tool in session.tool_calls:
        linked = tasks[tool.call_id]
        assert tool.name == linked["reminder_agent_id"]
        assert tool.child_session == linked["child_session_id"]
        assert tool.end_ns == ends[tool.call_id]
        assert not tool.is_error and not tool.incomplete
        assert tool.prompt_id == RUN  # the turn that started it
    memory = next(t for t in session.tool_calls if t.name == "memory-reminder")
    assert (memory.start_ns, memory.call_id) == (at(42), "01a10134-7a10-7ff3-939f-fdcd153999e5")


def test_a_failed_or_unnamed_reminder(tmp_path: Path) -> None:
    """Line 41 without reminder_agent_id, its task's completion (line 66) edited to failed;
    line 48 without task_id (its child is still linked, no span)."""
    first, second, ended = line(41), line(48), line(66)
    del first["payload"]["event"]["reminder_agent_id"]
    del second["payload"]["event"]["task_id"]
    assert ended["payload"]["task_id"] == first["payload"]["event"]["task_id"]
    ended["payload"]["event"]["kind"] = "failed"
    session, _ = read(write(tmp_path, edited({41: first, 48: second, 66: ended})))
    names = sorted(t.name for t in session.tool_calls)
    assert names == ["goal-reminder", "reminder", "verify-reminder"]
    unnamed = next(t for t in session.tool_calls if t.name == "reminder")
    assert unnamed.is_error and unnamed.end_ns == at(66)
    assert facts(session)["reminder_children"] == "4 reminder child sessions linked"


def test_a_run_that_did_not_complete_is_a_fact(tmp_path: Path) -> None:
    """Line 94's terminal edited to failed with a reason; then with no outcome or reason."""
    end = line(94)
    end["payload"]["event"].update(terminal="failed", reason="boom")
    session, _ = read(write(tmp_path, edited({94: end})))
    assert ("run_failed", "boom") in session.facts
    end["payload"]["event"].update(terminal=None, reason=None)
    session, _ = read(write(tmp_path, edited({94: end})))
    assert ("run_unknown", "") in session.facts
    session, _ = read(HCN)
    assert not [k for k, _ in session.facts if k.startswith("run_")]


def test_block_diagnostics_of_a_new_run_replace_the_old(tmp_path: Path) -> None:
    """Lines 24-34 all moved to a second run id: the blocks of that run are the ones used;
    then a diagnostic without block id falls back to its source, one with neither is
    ignored."""
    changes = {}
    for n in range(24, 35):
        value = line(n)
        if n == 24:
            value["payload"]["run_id"] = "other-run"
        changes[n] = value
    session, _ = read(write(tmp_path, edited(changes)))
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-1"]
    # run-1 restates ten blocks after other-run's one: rules_file's 10,317 bytes are glue
    assert dict(snapshot.categories)[Category.RULES] == (313 + 3) // 4
    assert dict(snapshot.categories)[Category.OVERHEAD] == (10_317 + 29 + 3) // 4


# -- compaction (the real events of `muse export`) --------------------------------------------


def _export() -> list[dict[str, Any]]:
    value = json.loads(EXPORT.read_text())
    assert isinstance(value, list)
    return value


def compaction_lines(*indexes: int, edit: dict[int, dict[str, Any]] | None = None) -> list[Any]:
    """The export's events (by index) as run events after line 64, 1 ms apart."""
    events = _export()
    out = []
    for k, index in enumerate(indexes, 1):
        event = events[index]
        event.update((edit or {}).get(index, {}))
        out.append(run_event(event, like=64, shift_us=k * 1_000))
    return out


def test_a_compaction_as_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Export events 0-4 and the repeated 5-6 after line 64: candidate (rejected), fallback,
    candidates, installed, and the export's repeat of the pair."""
    records = edited(after={64: compaction_lines(0, 1, 2, 3, 4, 5, 6)})
    added = spy(monkeypatch)
    session, diagnostics = read(write(tmp_path, records))
    events = _export()
    installed_at = at(64) + 5_000_000
    (compaction,) = session.compactions
    assert (compaction.id, compaction.trigger, compaction.end_ns) == (
        "compaction-1",
        "soft_threshold_async",
        installed_at,
    )
    assert diagnostics.skipped["muse:duplicate-compaction"] == 1
    assert diagnostics.skipped["muse:run/context_compaction_candidate"] == 4
    request = compaction.request
    assert request is not None and request.id == "compaction-1:summarizer"
    assert (request.start_ns, request.end_ns) == (installed_at - 11_547_000_000, installed_at)
    assert compaction.start_ns == request.start_ns
    assert (request.usage.prompt_tokens, request.usage.output_tokens) == (7_693, 1_177)
    assert request.model == "muse-spark-1.3-contributor"
    assert compaction.timing == "summarizer_usage.duration_ms before context_compaction_installed"
    summary = item(added, "summary:install-39")
    assert (summary.category, summary.label, summary.chars) == (
        Category.SUMMARIES,
        "Compaction summary",
        len(events[4]["replacement"]["text"]),
    )
    # the history before it leaves (the answer), the turn's prompt stays
    assert compaction.removed_items == 1
    assert (compaction.pre_tokens, compaction.post_tokens) == (31_979, None)
    assert facts(session)["compaction-1_estimated_prompt_tokens"] == (
        "30359 → 22869 (Muse's own estimate, heuristic_estimate; not provider counts)"
    )
    assert facts(session)["compaction_fallback_1"] == (
        "hard_threshold_failed (severity terminal, can_continue False); summarizer "
        "7666 in / 1011 out"
    )
    (post,) = [s for s in session.snapshots if s.anchor_id == "compaction-1"]
    assert post.stage is Stage.POST_COMPACTION and post.window_tokens == 1_007_997
    assert post.model == "muse-spark-1.3-contributor"
    categories = dict(post.categories)
    assert Category.ASSISTANT not in categories and Category.PROMPTS in categories
    assert categories[Category.SUMMARIES] == -(-len(events[4]["replacement"]["text"]) // 4)


def test_a_compaction_without_summarizer_usage_reads_the_candidates_metrics(
    tmp_path: Path,
) -> None:
    """Export event 4 without `summarizer_usage`, after candidate 3 (its candidate, with a
    `summary_call_metrics` diagnostic): the summarizer's tokens come from that diagnostic;
    with no duration the compaction starts at the previous request's end."""
    records = edited(after={64: compaction_lines(3, 4, edit={4: {"summarizer_usage": None}})})
    session, _ = read(write(tmp_path, records))
    (compaction,) = session.compactions
    request = compaction.request
    assert request is not None
    assert (request.usage.prompt_tokens, request.usage.output_tokens) == (7_693, 1_177)
    assert request.usage.reasoning_tokens == 791
    installed_at = at(64) + 2_000_000
    assert (request.start_ns, request.end_ns) == (installed_at, installed_at)
    assert (compaction.start_ns, compaction.end_ns) == (at(64), installed_at)
    assert compaction.timing == "previous request's end → context_compaction_installed"


@pytest.mark.parametrize(
    "diagnostics",
    [
        None,
        [],
        [{"reason": "other", "message": "{}"}],
        [{"reason": "summary_call_metrics", "message": "{not json"}],
        [{"reason": "summary_call_metrics", "message": "[1]"}],
    ],
)
def test_a_compaction_with_no_usage_anywhere_has_no_summarizer_request(
    tmp_path: Path, diagnostics: Any
) -> None:
    """Candidate 3's diagnostics edited (none, other reasons, damaged metrics), event 4
    without `summarizer_usage`: no summarizer request."""
    records = edited(
        after={
            64: compaction_lines(
                3, 4, edit={3: {"diagnostics": diagnostics}, 4: {"summarizer_usage": None}}
            )
        }
    )
    session, _ = read(write(tmp_path, records))
    (compaction,) = session.compactions
    assert compaction.request is None
    assert compaction.start_ns == at(64)


def test_an_install_is_named_by_its_id_candidate_or_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Event 4 twice: without install_id (named by candidate-10, the second a duplicate);
    then without either id (named by its time, so both are kept)."""
    records = edited(after={64: compaction_lines(4, 6, edit={4: {"install_id": None}})})
    for value in records[64:66]:
        value["payload"]["event"]["install_id"] = None
    added = spy(monkeypatch)
    session, diagnostics = read(write(tmp_path, records))
    assert len(session.compactions) == 1 and "summary:candidate-10" in by_id(added)
    for value in records[64:66]:
        value["payload"]["event"]["candidate_id"] = None
    session, diagnostics = read(write(tmp_path, records))
    assert [c.id for c in session.compactions] == ["compaction-1", "compaction-2"]
    assert f"summary:{at(64) + 1_000_000}" in by_id(added)
    assert "muse:duplicate-compaction" not in diagnostics.skipped


def test_replayed_messages_replace_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Event 4 with the 1.4.x `replay_model_messages` (hand-made after FORMATS-muse §5.18):
    each message is its own item, the user message starting `summary` a summary."""
    replay = [
        {"role": "developer", "content": [{"kind": "text", "text": "dev "}, {"text": "note"}]},
        {"role": "user", "content": [{"kind": "text", "text": "  Summary: the work so far"}]},
        {"role": "user", "content": [{"kind": "text", "text": "next question"}, "x"]},
        {"role": "user", "content": None},
    ]
    records = edited(after={64: compaction_lines(4, edit={4: {"replay_model_messages": replay}})})
    added = spy(monkeypatch)
    read(write(tmp_path, records))
    items = by_id(added)
    got = [(items[f"compaction-1:replay:{i}"]) for i in range(4)]
    assert [(a.category, a.label, a.chars) for a in got] == [
        (Category.MESSAGES, "Replayed developer message", 8),
        (Category.SUMMARIES, "Compaction summary", 26),
        (Category.PROMPTS, "Replayed user message", 13),
        (Category.PROMPTS, "Replayed user message", 0),
    ]
    assert "summary:install-39" not in items


def test_a_compaction_budget_without_after_or_source(tmp_path: Path) -> None:
    """Event 4 with budget_after replaced by candidate 2's `estimated_budget_after` and no
    estimate source; then with no budgets at all (no fact)."""
    edit = {
        "budget_before": {"estimated_prompt_tokens": 30359},
        "budget_after": None,
        "estimated_budget_after": {"estimated_prompt_tokens": 21000},
    }
    session, _ = read(write(tmp_path, edited(after={64: compaction_lines(4, edit={4: edit})})))
    assert facts(session)["compaction-1_estimated_prompt_tokens"] == (
        "30359 → 21000 (Muse's own estimate, source not stated; not provider counts)"
    )
    edit = {"budget_before": None, "budget_after": {"estimate_source": "x"}}
    session, _ = read(write(tmp_path, edited(after={64: compaction_lines(4, edit={4: edit})})))
    assert "compaction-1_estimated_prompt_tokens" not in facts(session)
    edit = {"budget_before": None, "budget_after": {"estimated_prompt_tokens": 5}}
    session, _ = read(write(tmp_path, edited(after={64: compaction_lines(4, edit={4: edit})})))
    assert facts(session)["compaction-1_estimated_prompt_tokens"].startswith("None → 5 (")


def test_a_fallback_without_summarizer_usage(tmp_path: Path) -> None:
    """Export event 1 (a fallback) twice, without `summarizer_usage`: numbered facts."""
    no_usage = {1: {"summarizer_usage": None}}
    session, _ = read(write(tmp_path, edited(after={64: compaction_lines(1, 1, edit=no_usage)})))
    assert facts(session)["compaction_fallback_2"] == (
        "hard_threshold_failed (severity terminal, can_continue False); summarizer usage not "
        "recorded"
    )


# -- tool calls and results (hand-made events in line 61's envelope) -------------------------


def calls_event(*calls: Any) -> dict[str, Any]:
    """FORMATS-muse §5.10: one record per response, `args` a JSON string."""
    return {
        "kind": "assistant_tool_calls_committed",
        "message_id": "m-1",
        "tool_calls": list(calls),
    }


def results_event(*results: Any, kind: str = "tool_result_batch_committed") -> dict[str, Any]:
    return {"kind": kind, "batch_id": "m-1", "results": list(results)}


def test_tool_calls_are_named_by_their_call_id_else_id_else_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After line 61 (hand-made): a call with `call_id`, one with only the provider `id` and
    `arguments`, one with neither and no name, one that is no object; a second record
    repeating the first call under another name. Each is an assistant item of name +
    arguments (a repeat replaces the item); a call is one tool call, as first named."""
    ts = at(61) + 1_000
    records = edited(
        after={
            61: [
                run_event(
                    calls_event(
                        {"call_id": "call_1", "id": "fc_1", "name": "bash", "args": '{"a": 1}'},
                        {"id": "fc_2", "name": "read_file", "arguments": {"path": "x"}},
                        {"call_id": "", "args": "{}"},
                        "not a call",
                    )
                ),
                run_event(calls_event({"call_id": "call_1", "name": "other"}), shift_us=2),
                run_event({"kind": "assistant_tool_calls_committed", "tool_calls": "x"}),
            ]
        }
    )
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, records))
    items = by_id(added)
    expect = {
        "call:call_1": len("bash") + len('{"a": 1}'),
        "call:fc_2": len("read_file") + len('{"path":"x"}'),
        f"call:call@{ts}": len("tool") + len("{}"),
    }
    assert [a.chars for a in added if a.id == "call:call_1"] == [12, len("other")]
    expect["call:call_1"] = len("other")
    for item_id, chars in expect.items():
        got = items[item_id]
        assert (got.category, got.label, got.source_kind) == (
            Category.ASSISTANT,
            "Tool arguments",
            SourceKind.TOOL,
        ), item_id
        assert (got.chars, got.source_id) == (chars, item_id.removeprefix("call:")), item_id
    tools = {t.call_id: t for t in session.tool_calls if not t.call_id.startswith("01a1")}
    assert sorted(tools) == ["call@" + str(ts), "call_1", "fc_2"]
    assert (tools["call_1"].name, tools["fc_2"].name, tools[f"call@{ts}"].name) == (
        "bash",
        "read_file",
        "tool",
    )
    assert tools["call_1"].arg_keys == ("a",) and tools["fc_2"].arg_keys == ("path",)
    for tool in tools.values():
        # the calls are outputs of the open request, their turn the run's prompt
        assert (tool.response_id, tool.start_ns) == ("request-1", ts)
        assert tool.incomplete  # no result came
    assert session.incomplete


def test_a_call_after_its_request_completed_belongs_to_it(tmp_path: Path) -> None:
    """The 1.1.1 order (answer after model_completed): a call recorded after line 64 is the
    last request's, and enters the context at once."""
    records = edited(after={64: [run_event(calls_event({"call_id": "c", "name": "ls"}), 64)]})
    session, _ = read(write(tmp_path, records))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c"]
    assert tool.response_id == "request-1"
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-1"]
    assert "call:c" not in {c.id for c in snapshot.changes}


@pytest.mark.parametrize(
    "kind",
    ["tool_result_batch_committed", "tool_results_committed", "tool_result_committed"],
)
def test_every_result_record_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """A call after line 61 and its result after line 64 (hand-made), under each name
    FORMATS-muse §5.12 lists: a result item linked to its call; the call ends there."""
    call = run_event(calls_event({"call_id": "c", "name": "ls", "args": "{}"}))
    result = run_event(results_event({"tool_call_id": "c", "text": "a.py\n"}, kind=kind), 64, 9)
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited(after={61: [call], 64: [result]})))
    got = item(added, "result:c")
    assert (got.category, got.label, got.chars, got.source_id, got.source_kind) == (
        Category.RESULTS,
        "Tool result",
        5,
        "c",
        SourceKind.TOOL,
    )
    (tool,) = [t for t in session.tool_calls if t.call_id == "c"]
    assert (tool.end_ns, tool.result_chars, tool.is_error, tool.incomplete) == (
        at(64) + 9_000,
        5,
        False,
        False,
    )


def test_a_lone_result_record_and_its_body_keys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tool_result{call_id, content|output|result}` (the older name, one result per record,
    hand-made): the first body key present is the text; a body that is not text is its JSON;
    no body is an empty result."""
    calls = run_event(calls_event(*({"call_id": f"c{i}", "name": "x"} for i in range(5))))
    bodies = [
        {"content": "from content", "output": "not this"},
        {"output": "from output", "result": "not this"},
        {"result": {"rows": [1, 2]}},
        {"text": "from text", "content": "not this"},
        {},
    ]
    results = [
        run_event({"kind": "tool_result", "call_id": f"c{i}", **body}, 64, 10 + i)
        for i, body in enumerate(bodies)
    ]
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited(after={61: [calls], 64: results})))
    items = by_id(added)
    assert [items[f"result:c{i}"].chars for i in range(5)] == [
        len("from content"),
        len("from output"),
        len('{"rows":[1,2]}'),
        len("from text"),
        0,
    ]
    assert all(not t.incomplete for t in session.tool_calls if t.call_id.startswith("c"))


def test_a_result_without_its_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Results (hand-made, after line 64) for a call the log does not have, and with no call
    id at all: both enter the context, the latter named by its time and linked to nothing;
    a result that is no object is ignored."""
    records = edited(
        after={
            64: [
                run_event(results_event({"tool_call_id": "gone", "text": "x"}, "no"), 64, 5),
                run_event(results_event({"text": "yz"}), 64, 6),
            ]
        }
    )
    added = spy(monkeypatch)
    _, diagnostics = read(write(tmp_path, records))
    gone, anonymous = item(added, "result:gone"), item(added, f"result@{at(64) + 6_000}")
    assert (gone.source_id, gone.source_kind, gone.chars) == ("gone", SourceKind.TOOL, 1)
    assert (anonymous.source_id, anonymous.source_kind, anonymous.chars) == (
        "",
        SourceKind.NONE,
        2,
    )
    assert diagnostics.notes["muse:result-without-call"] == 2
    assert len([a for a in added if a.category is Category.RESULTS]) == 2


def test_a_result_recorded_before_its_call_ends_when_it_started(tmp_path: Path) -> None:
    """The result's envelope (hand-made) carries an earlier time than the call's."""
    call = run_event(calls_event({"call_id": "c", "name": "ls"}), 61, 50)
    result = run_event(results_event({"tool_call_id": "c", "text": "ok"}), 61, 60)
    result["recorded_at"] -= 20
    session, _ = read(write(tmp_path, edited(after={61: [call, result]})))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c"]
    assert tool.end_ns == tool.start_ns == at(61) + 50_000


@pytest.mark.parametrize(
    ("text", "failed"),
    [
        ("tool failed: permission denied", True),
        ('{"command": "npm test", "exit_code": 1, "output": "1 failing"}', True),
        ('{"command": "npm test", "exit_code": 0, "output": "ok"}', False),
        ('{"command": "x", "exit_code": true}', False),
        ('{"command": "x", "exit_code": "1"}', False),
        ('{"exit_code": 1', False),  # cut short: not JSON
        ('["exit_code", 1]', False),
        ('{"nested": {"exit_code": 1}}', False),
        ("the tool failed", False),
        (' {"exit_code": 1}', False),
    ],
)
def test_a_result_that_says_it_failed(tmp_path: Path, text: str, failed: bool) -> None:
    """FORMATS-muse §5.12: `tool failed: …`, or bash's JSON with a non-zero exit_code."""
    call = run_event(calls_event({"call_id": "c", "name": "bash"}))
    result = run_event(results_event({"tool_call_id": "c", "text": text}), 64, 5)
    session, _ = read(write(tmp_path, edited(after={61: [call], 64: [result]})))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c"]
    assert tool.is_error is failed


def test_tool_tasks_and_effects_time_the_execution(tmp_path: Path) -> None:
    """A call (after line 61) whose task (`side_effect_intent` with `tool:<call_id>`,
    FORMATS-muse §5.6) starts and fails, and one bracketed by `tool_batch.effect.started` /
    `.terminal` (§5.11); hand-made. The execution is the span; a failure is an error."""
    call = run_event(
        calls_event({"call_id": "c1", "name": "bash"}, {"call_id": "c2", "name": "ls"})
    )

    def effect(kind: str, shift: int, **record: Any) -> Any:
        value = line(61)
        value["payload_type"] = f"tool_batch.effect.{kind}"
        value["payload"] = {"kind": "tool_batch_effect", "run_id": RUN, "record": record}
        value["recorded_at"] += shift
        return value

    records = edited(
        after={
            61: [
                call,
                task_event("t1", {"kind": "side_effect_intent", "idempotency_key": "tool:c1"}),
                task_event("t1", {"kind": "started"}, shift_us=100),
                task_event("t1", {"kind": "failed"}, shift_us=300),
                effect("started", 200, call_id="c2"),
                effect("terminal", 700, call_id="c2", outcome={"kind": "failed"}),
                effect("started", 200, call_id="unknown"),
                task_event("t9", {"kind": "side_effect_intent", "idempotency_key": "model:x"}),
                task_event("t9", {"kind": "started"}, shift_us=150),
            ],
            64: [
                run_event(
                    results_event(
                        {"tool_call_id": "c1", "text": "ok"}, {"tool_call_id": "c2", "text": "ok"}
                    ),
                    64,
                    5,
                )
            ],
        }
    )
    session, diagnostics = read(write(tmp_path, records))
    tools = {t.call_id: t for t in session.tool_calls}
    base = at(61)
    assert (tools["c1"].start_ns, tools["c1"].end_ns, tools["c1"].is_error) == (
        base + 100_000,
        base + 300_000,
        True,
    )
    assert (tools["c2"].start_ns, tools["c2"].end_ns, tools["c2"].is_error) == (
        base + 200_000,
        base + 700_000,
        True,
    )
    assert tools["c1"].timing == tools["c2"].timing == "journal: tool task/effect started → ended"
    assert diagnostics.skipped["muse:tool_batch.effect.started"] == 2
    assert diagnostics.skipped["muse:tool_batch.effect.terminal"] == 1
    assert (
        diagnostics.skipped["muse:task/side_effect_intent"] == 2 + 5
    )  # + lines 40, 47, 56, 77, 84


def test_a_tool_effect_that_completed_is_no_error(tmp_path: Path) -> None:
    """As above, c2's terminal outcome `completed`, c1's task `completed`: no errors; an
    effect ending before it started is an instant."""
    call = run_event(calls_event({"call_id": "c1", "name": "bash"}))
    value = line(61)
    value["payload_type"] = "tool_batch.effect.terminal"
    value["payload"] = {"record": {"call_id": "c1", "outcome": {"kind": "completed"}}}
    started = copy.deepcopy(value)
    started["payload_type"] = "tool_batch.effect.started"
    started["recorded_at"] += 500
    records = edited(after={61: [call, started, value]})
    session, _ = read(write(tmp_path, records))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c1"]
    assert (tool.start_ns, tool.end_ns, tool.is_error) == (at(61) + 500_000,) * 2 + (False,)
    assert not tool.incomplete


# -- approvals and subagent control (hand-made after FORMATS-muse §5.19, §6) ------------------


def test_automated_approval_reviews_are_counted_not_added(tmp_path: Path) -> None:
    def review(kind: str, usage: Any = None) -> Any:
        value = line(61)
        value["payload"] = {"kind": "approval", "event": {"kind": kind, "usage": usage}}
        return value

    records = edited(
        after={
            61: [
                review("requested"),
                review("automated_review_completed", {"input_tokens": 1_200, "output_tokens": 30}),
                review("automated_review_completed", {"input_tokens": 300}),
            ]
        }
    )
    session, diagnostics = read(write(tmp_path, records))
    assert facts(session)["approval_reviews"] == (
        "2 automatic approval reviews (their own logs; not read)"
    )
    assert facts(session)["approval_review_tokens"] == "1500 in / 30 out (not this context)"
    assert diagnostics.skipped["muse:approval/automated_review_completed"] == 2
    assert diagnostics.skipped["muse:approval/requested"] == 1
    assert [r.usage.prompt_tokens for r in session.responses] == [31_979]


def test_a_spawned_subagent_is_linked_to_its_call(tmp_path: Path) -> None:
    """`subagent.control.start_attested` names the spawn call; `child_session_bound` (by
    subagent id) binds a second child to it; a bound child of an unknown subagent is not
    linked."""
    call = run_event(calls_event({"call_id": "call_spawn", "name": "subagent_spawn"}))

    def control(kind: str, **fields: Any) -> Any:
        value = line(61)
        value["payload_type"] = f"subagent.control.{kind}"
        value["payload"] = {"kind": "subagent_control", "record": fields}
        return value

    # the layout is unconfirmed: the fields may sit in the payload's `event`, or in the payload
    event_control = control("child_session_bound")
    event_control["payload"]["event"] = {"subagent_id": "sub-1", "child_session_id": "child-3"}
    payload_control = control("child_session_bound")
    payload_control["payload"].update(subagent_id="sub-1", child_session_id="child-4")
    records = edited(
        after={
            61: [
                call,
                control(
                    "start_attested",
                    subagent_session_id="child-1",
                    dispatched_via_tool_call_id="call_spawn",
                    subagent_id="sub-1",
                ),
                control("child_session_bound", subagent_id="sub-1", child_session_id="child-2"),
                control("child_session_bound", subagent_id="sub-9", child_session_id="child-9"),
                control("child_session_bound", subagent_id="sub-1"),
                event_control,
                payload_control,
            ]
        }
    )
    diagnostics = Diagnostics()
    builder = muse.read_journal(write(tmp_path, records), diagnostics)
    assert {k: v for k, v in builder.children.items() if k.startswith("child")} == {
        "child-1": ("call_spawn", "subagent"),
        "child-2": ("call_spawn", "subagent"),
        "child-3": ("call_spawn", "subagent"),
        "child-4": ("call_spawn", "subagent"),
    }
    assert diagnostics.skipped["muse:subagent.control"] == 6
    session = muse.finish_session(builder)
    assert session is not None
    (tool,) = [t for t in session.tool_calls if t.call_id == "call_spawn"]
    assert tool.child_session == "child-4"


# -- more of each rule ------------------------------------------------------------------------


def test_every_real_record_is_used_or_skipped_by_kind() -> None:
    """The 1.4.2 session: each record not used is counted under its own kind (payload type,
    run or task event), the frame's children only noted; nothing is warned about."""
    _, diagnostics = read(HCN)
    assert dict(diagnostics.skipped) == {
        "muse:run/goal_usage_attribution": 1,
        "muse:run/provider_request_options_configured": 1,
        "muse:run/reasoning_committed": 1,
        "muse:run/reminder_proposal": 4,
        "muse:run/reminder_reconciler_outcome": 4,
        "muse:run/resource_usage_sampled": 1,
        "muse:run/skill_reminder_decision": 1,
        "muse:run/task_stream_linked": 5,
        "muse:runtime.command_intake.session_name.received": 1,
        "muse:runtime.command_intake.settled": 1,
        "muse:runtime.retained_fact": 1,
        "muse:runtime.session.capture_selection": 1,
        "muse:runtime.session.task": 6,
        "muse:runtime.session/agent_tree_initialized": 1,
        "muse:runtime.session/security_mode": 1,
        "muse:runtime.user_intent.accepted": 1,
        "muse:runtime.user_intent.materialized": 1,
        "muse:session.end": 1,
        "muse:session.name.changed": 1,
        "muse:session.opened.observed": 1,
        "muse:session.workspace_branch.observed": 3,
        "muse:task/accepted": 5,
        "muse:task/completed": 5,
        "muse:task/proposed": 5,
        "muse:task/scheduled": 5,
        "muse:task/side_effect_intent": 5,
        "muse:task/started": 5,
        "muse:task/status": 2,
    }
    assert dict(diagnostics.notes) == {
        "muse:runtime.session.permission_format_declared": 1,
        "muse:runtime.session.permission_profile_committed": 1,
    }
    assert diagnostics.warning_total == 0


def test_lines_that_look_like_envelopes_but_are_not(tmp_path: Path) -> None:
    """After line 3: an empty JSON array (no events: not an export), line 61 without its
    payload_type (not an envelope, not an event: skipped), two retained markers, a frame
    without children (nothing to read, nothing wrong)."""
    untyped = line(61)
    del untyped["payload_type"]
    marker = {"retained_marker": "omitted_live_only", "stream": {"kind": "session", "id": SID}}
    frame = {"retained_frame": "session_permission_transaction", "children": None}
    session, diagnostics = read(
        write(tmp_path, edited(after={3: [[], untyped, marker, marker, frame]}))
    )
    assert warnings(diagnostics) == [(4, "bad-shape", "line is a JSON array")]
    assert diagnostics.skipped["muse:non-envelope-line"] == 1
    assert facts(session)["omitted_live_only"] == (
        "2 retained_marker lines (dropped live-only records)"
    )


@pytest.mark.parametrize("recorded_at", [True, -5, "1791021583007471", None])
def test_a_record_without_a_usable_time_follows_the_previous_one(
    tmp_path: Path, recorded_at: Any
) -> None:
    """A tool call (hand-made) after line 61 whose `recorded_at` is not µs since the epoch:
    one warning at its line; it is placed 1 ms after line 61."""
    call = run_event(calls_event({"call_id": "c", "name": "ls"}))
    call["recorded_at"] = recorded_at
    session, diagnostics = read(write(tmp_path, edited(after={61: [call]})))
    assert warnings(diagnostics) == [
        (
            62,
            "bad-timestamp",
            "missing or unreadable timestamp; placed 1 ms after the previous record "
            f"(the first in this file; {LATER})",
        )
    ]
    (tool,) = [t for t in session.tool_calls if t.call_id == "c"]
    assert tool.start_ns == at(61) + 1_000_000


def _second_call(step: int, shift_s: int, input_tokens: int = 31_979) -> list[Any]:
    """Lines 51 and 64 again, `shift_s` seconds later, as the run's step `step`."""
    trace, done = line(51), line(64)
    trace["payload"]["event"]["model_step"] = step
    trace["recorded_at"] = VALUES[63]["recorded_at"] + shift_s * 1_000_000
    done["recorded_at"] = trace["recorded_at"] + 500_000
    done["payload"]["event"]["usage"]["input_tokens"] = input_tokens
    done["payload"]["event"]["duration_ms"] = 400
    return [trace, done]


def test_each_completion_of_a_run_is_a_request(tmp_path: Path) -> None:
    """Lines 51/64 repeated as steps 1 and 2 after line 64: three requests, in order, each
    of its own trace; no step warning; and a completion with nothing open before it (no
    trace, no model task) is a request too."""
    bare = line(64)
    bare["recorded_at"] = VALUES[63]["recorded_at"] + 9_000_000
    records = edited(after={64: [*_second_call(1, 1), *_second_call(2, 3), bare]})
    session, diagnostics = read(write(tmp_path, records))
    assert [r.id for r in session.responses] == [f"request-{n}" for n in range(1, 5)]
    starts = [r.start_ns for r in session.responses]
    assert starts[3] == bare["recorded_at"] * 1_000 - 4_838_000_000
    assert starts[1] == (VALUES[63]["recorded_at"] + 1_500_000) * 1_000 - 400_000_000
    assert diagnostics.warning_total == 0
    assert facts(session)["native_lane_requests"].startswith("3 of 4 requests")
    assert all(r.prompt_id == RUN for r in session.responses)


def test_two_calls_without_usage_are_counted(tmp_path: Path) -> None:
    """Line 64 with zero usage, twice (the echo provider's)."""
    zero = line(64)
    zero["payload"]["event"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    session, _ = read(write(tmp_path, edited({64: zero}, after={64: [copy.deepcopy(zero)]})))
    assert facts(session)["zero_usage_model_completed"] == (
        "2 model calls that reported no tokens: not requests"
    )


def test_two_requests_that_never_completed_are_counted(tmp_path: Path) -> None:
    """Line 51 three times with steps 1, 2, 3: two requests dropped before line 64's."""
    extra = []
    for step in (1, 2):
        again = line(51)
        again["payload"]["event"]["model_step"] = step
        extra.append(again)
    session, _ = read(write(tmp_path, edited(after={51: extra})))
    assert facts(session)["requests-without-usage"] == "2 requests that began but never completed"
    assert [r.id for r in session.responses] == ["request-3"]


def test_the_residual_leaves_when_the_lanes_hold_the_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 64's 31,979 tokens leave 7,954 outside the lanes (an item of 0 characters and
    that many tokens); a second call (lines 51/64 again) of 24,025 tokens removes it."""
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited(after={64: _second_call(1, 1, 24_025)})))
    residual = [a for a in added if a.id == muse.NOT_IN_LANES_ID]
    assert [(a.category, a.chars, a.tokens, a.label) for a in residual] == [
        (
            Category.UNATTRIBUTED,
            0,
            7_954,
            "Not in the request lanes: tool schemas and request overhead (reported input − "
            "Σ lane bytes/4; the lanes are not scaled)",
        )
    ]
    second = next(s for s in session.snapshots if s.anchor_id == "request-2")
    (gone,) = [c for c in second.changes if c.id == muse.NOT_IN_LANES_ID]
    assert gone.change.value == "removed"
    assert Category.UNATTRIBUTED not in dict(second.categories)
    assert second.coverage is Coverage.COMPLETE


def test_a_trace_without_a_step_is_not_checked(tmp_path: Path) -> None:
    trace = line(51)
    del trace["payload"]["event"]["model_step"]
    _, diagnostics = read(write(tmp_path, edited({51: trace})))
    assert diagnostics.warning_total == 0


def test_the_request_snapshot_is_at_its_start_on_its_model(tmp_path: Path) -> None:
    """Line 64: the snapshot is taken when the request started (duration before), for the
    muse-spark model and its window, and belongs to the run's turn."""
    session, _ = read(HCN)
    (response,) = session.responses
    (snapshot,) = session.snapshots
    assert (snapshot.anchor_id, snapshot.time_ns) == (response.id, response.start_ns)
    assert (snapshot.model, snapshot.window_tokens) == ("muse-spark-1.3-contributor", 1_007_997)
    assert response.prompt_id == RUN


def test_block_diagnostics_not_texts_split_the_context_lane(tmp_path: Path) -> None:
    """Line 25 (workspace_identity) edited to 250 bytes (its text has 242): the lane split
    uses the diagnostic. Lines 24-34 dropped: the texts' own sizes split it, the redacted
    ones by their markers: skills_catalog's marker says 31,982 chars where line 27 measured
    31,998 bytes, so skills get 16 bytes less and the glue 16 more."""
    diagnostic = line(25)
    diagnostic["payload"]["event"]["text_bytes"] = 250
    session, _ = read(write(tmp_path, edited({25: diagnostic})))
    categories = dict(session.snapshots[0].categories)
    assert categories[Category.ENVIRONMENT] == -(-(250 + 479 + 688) // 4)
    assert categories[Category.OVERHEAD] == -(-(29 - 8) // 4)
    real = dict(read(HCN)[0].snapshots[0].categories)
    session, _ = read(write(tmp_path, edited(dict.fromkeys(range(24, 35)))))
    by_text = dict(session.snapshots[0].categories)
    assert by_text == {
        **real,
        Category.SKILLS: -(-(31_982 + 238) // 4),
        Category.OVERHEAD: -(-(29 + 16) // 4),
    }


def test_a_diagnostic_without_source_or_id(tmp_path: Path) -> None:
    """Line 24 (rules_file, 10,317 B) without `source`: still that block. Without its
    `block_id` too: named by nothing, ignored (its bytes are glue)."""
    diagnostic = line(24)
    del diagnostic["payload"]["event"]["source"]
    session, _ = read(write(tmp_path, edited({24: diagnostic})))
    assert dict(session.snapshots[0].categories)[Category.RULES] == -(-(10_317 + 313) // 4)
    del diagnostic["payload"]["event"]["block_id"]
    session, _ = read(write(tmp_path, edited({24: diagnostic})))
    categories = dict(session.snapshots[0].categories)
    assert categories[Category.RULES] == -(-313 // 4)
    assert categories[Category.OVERHEAD] == -(-(10_317 + 29) // 4)


def test_instructions_and_tools_that_are_not_lists_or_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 35 with `base_instructions` a list and `active_tools` a string: no system item,
    no tool count; `run_context_messages` not a list: no context block."""
    configured = line(35)
    event = configured["payload"]["event"]
    event["base_instructions"] = ["not", "text"]
    event["toolset"]["active_tools"] = "abc"
    event["run_context_messages"] = {"id": "rules_file"}
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited({35: configured})))
    assert "system:base_instructions" not in by_id(added)
    assert not [a for a in added if a.id.startswith("context:")]
    assert dict(session.unmeasured) == {"encrypted-reasoning": 1}


def test_each_encrypted_reasoning_is_unmeasured(tmp_path: Path) -> None:
    session, _ = read(write(tmp_path, edited(after={60: [line(60)]})))
    assert dict(session.unmeasured)["encrypted-reasoning"] == 2


def test_a_run_event_without_run_id_is_the_default_run(tmp_path: Path) -> None:
    """Line 22 (the run's start) without `run_id`: a turn of the run named `run`."""
    started = line(22)
    del started["payload"]["run_id"]
    session, _ = read(write(tmp_path, edited({22: started})))
    assert [p.id for p in session.prompts] == ["run"]


def test_a_task_named_only_in_its_event(tmp_path: Path) -> None:
    """Line 87 (the goal reminder's task completes) without the payload's `task_id`: the
    event's id still ends the reminder there."""
    ended = line(87)
    del ended["payload"]["task_id"]
    session, _ = read(write(tmp_path, edited({87: ended})))
    goal = next(t for t in session.tool_calls if t.name == "goal-reminder")
    assert goal.end_ns == at(87)


@pytest.mark.parametrize("kind", ["rejected", "cancelled", "failed"])
def test_a_reminder_task_that_did_not_complete_is_an_error(tmp_path: Path, kind: str) -> None:
    """Line 66 (the memory reminder's task ends) edited to each unsuccessful end."""
    ended = line(66)
    ended["payload"]["event"]["kind"] = kind
    session, _ = read(write(tmp_path, edited({66: ended})))
    memory = next(t for t in session.tool_calls if t.name == "memory-reminder")
    assert (memory.is_error, memory.end_ns, memory.incomplete) == (True, at(66), False)


def test_a_reminder_ending_before_it_started_is_an_instant(tmp_path: Path) -> None:
    """Line 66 moved before line 42 (the memory reminder's task start)."""
    ended = line(66)
    ended["recorded_at"] = VALUES[41]["recorded_at"] - 10
    session, _ = read(write(tmp_path, edited({66: None}, after={42: [ended]})))
    memory = next(t for t in session.tool_calls if t.name == "memory-reminder")
    assert memory.end_ns == memory.start_ns == at(42)


def test_tool_tasks_of_unknown_calls_and_keys(tmp_path: Path) -> None:
    """Hand-made: a task for a call the log lacks (started, completed), one whose intent has
    no key, and a call whose task completes (no error)."""
    records = edited(
        after={
            61: [
                run_event(calls_event({"call_id": "c1", "name": "bash"})),
                task_event("t1", {"kind": "side_effect_intent", "idempotency_key": "tool:c1"}),
                task_event("t1", {"kind": "started"}, shift_us=100),
                task_event("t1", {"kind": "completed"}, shift_us=300),
                task_event("t8", {"kind": "side_effect_intent", "idempotency_key": "tool:zzz"}),
                task_event("t8", {"kind": "started"}, shift_us=100),
                task_event("t8", {"kind": "completed"}, shift_us=300),
                task_event("t7", {"kind": "side_effect_intent"}),
                task_event("t7", {"kind": "started"}, shift_us=100),
            ]
        }
    )
    session, diagnostics = read(write(tmp_path, records))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c1"]
    assert (tool.start_ns, tool.end_ns, tool.is_error) == (
        at(61) + 100_000,
        at(61) + 300_000,
        False,
    )
    assert [t.call_id for t in session.tool_calls if not t.call_id.startswith("01a1")] == ["c1"]
    assert diagnostics.warning_total == 0


def test_a_tool_with_only_its_end_effect(tmp_path: Path) -> None:
    """A call (hand-made) with no result and only a `tool_batch.effect.terminal`: it ends
    there, complete."""
    call = run_event(calls_event({"call_id": "c1", "name": "bash"}))
    terminal = line(61)
    terminal["payload_type"] = "tool_batch.effect.terminal"
    terminal["payload"] = {"record": {"call_id": "c1"}}
    terminal["recorded_at"] += 900
    session, _ = read(write(tmp_path, edited(after={61: [call, terminal]})))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c1"]
    assert (tool.start_ns, tool.end_ns, tool.incomplete, tool.timing) == (
        at(61) + 1_000,
        at(61) + 900_000,
        False,
        "",
    )
    assert not session.incomplete


def test_a_tool_call_never_answered_ends_with_its_turn(tmp_path: Path) -> None:
    """A call (hand-made) after line 61 with no result: it lasts until its run's terminal
    (line 94), not the end of the log (line 96), and is incomplete; so is the session."""
    call = run_event(calls_event({"call_id": "c1", "name": "bash"}))
    session, _ = read(write(tmp_path, edited(after={61: [call]})))
    (tool,) = [t for t in session.tool_calls if t.call_id == "c1"]
    assert (tool.end_ns, tool.incomplete, tool.prompt_id) == (at(94), True, RUN)
    assert session.incomplete is True
    assert session.end_ns == at(96)


def test_reminders_and_bare_runs_do_not_make_a_session_incomplete(tmp_path: Path) -> None:
    """Line 87 (the goal reminder's end) dropped: that reminder is incomplete, the session is
    not; a run event of another run (no prompt, no terminal) neither."""
    other = run_event({"kind": "resource_usage_sampled"}, 61)
    other["payload"]["run_id"] = "other-run"
    session, _ = read(write(tmp_path, edited({87: None}, after={61: [other]})))
    goal = next(t for t in session.tool_calls if t.name == "goal-reminder")
    assert goal.incomplete is True
    assert session.incomplete is False


def test_a_compaction_before_the_first_request(tmp_path: Path) -> None:
    """Export event 4 after line 22 (the turn's start): nothing before it, the request after
    it is its post size (line 64's 31,979), reported on its snapshot."""
    records = edited(after={22: [run_event(_export()[4], like=22, shift_us=1_000)]})
    session, _ = read(write(tmp_path, records))
    (compaction,) = session.compactions
    assert (compaction.pre_tokens, compaction.post_tokens) == (None, 31_979)
    (post,) = [s for s in session.snapshots if s.anchor_id == "compaction-1"]
    assert post.reported_tokens == 31_979
    assert compaction.removed_items == 0  # only the turn's prompt, which stays
    assert compaction.start_ns == at(22) + 1_000_000 - 11_547_000_000


def test_a_compaction_removes_the_whole_history(tmp_path: Path) -> None:
    """A call and its result (hand-made) after line 61, export event 4 after line 64: the
    answer, the call and the result leave (3), the turn's prompt stays."""
    call = run_event(calls_event({"call_id": "c1", "name": "ls"}))
    result = run_event(results_event({"tool_call_id": "c1", "text": "ok"}), shift_us=2)
    records = edited(after={61: [call, result], 64: compaction_lines(4)})
    (compaction,) = read(write(tmp_path, records))[0].compactions
    assert compaction.removed_items == 3


def test_a_compaction_outside_any_turn_keeps_no_prompt(tmp_path: Path) -> None:
    """Export event 4 as a run event of a run that never started: the prompt leaves too, and
    the model is the metadata's."""
    (event,) = compaction_lines(4)
    event["payload"]["run_id"] = "other-run"
    session, _ = read(write(tmp_path, edited(after={64: [event]})))
    (compaction,) = session.compactions
    assert compaction.removed_items == 2
    (post,) = [s for s in session.snapshots if s.anchor_id == "compaction-1"]
    assert Category.PROMPTS not in dict(post.categories)
    assert compaction.request is not None
    assert compaction.request.model == "muse-spark-1.3-contributor"


def test_a_compaction_on_another_model_has_no_window(tmp_path: Path) -> None:
    """Line 2's model and line 15's edited to a non-muse-spark model, line 64 without model:
    the post-compaction snapshot has no window."""
    meta, configured, done = line(2), line(15), line(64)
    meta["payload"]["record"]["model_id"] = "other-model"
    configured["payload"]["record"]["model_id"] = "other-model"
    del done["payload"]["event"]["model"]
    records = edited({2: meta, 15: configured, 64: done}, after={64: compaction_lines(4)})
    session, _ = read(write(tmp_path, records))
    (post,) = [s for s in session.snapshots if s.anchor_id == "compaction-1"]
    assert (post.model, post.window_tokens) == ("other-model", None)


@pytest.mark.parametrize(
    ("usage", "tokens"),
    [
        ({"output_tokens": 90}, (0, 90, 0, 0, 0)),
        ({"input_tokens": 80}, (80, 0, 0, 0, 0)),
        (
            {
                "input_tokens": 80,
                "output_tokens": 9,
                "cache_read_tokens": 3,
                "cached_tokens": 4,
                "cache_write_tokens": 2,
                "reasoning_tokens": 5,
            },
            (80, 9, 3, 2, 5),
        ),
        ({"input_tokens": 80, "cached_tokens": 4}, (80, 0, 4, 0, 0)),
    ],
)
def test_the_summarizer_request_is_what_its_usage_says(
    tmp_path: Path, usage: dict[str, Any], tokens: tuple[int, ...]
) -> None:
    """Export event 4 with `summarizer_usage` edited (no duration: it starts at the
    previous request's end... and the request itself is an instant at the install)."""
    records = edited(after={64: compaction_lines(4, edit={4: {"summarizer_usage": usage}})})
    (compaction,) = read(write(tmp_path, records))[0].compactions
    request = compaction.request
    assert request is not None
    got = request.usage
    assert (
        got.input_tokens,
        got.output_tokens,
        got.cache_read_tokens,
        got.cache_write_tokens,
        got.reasoning_tokens,
    ) == tokens
    assert got.prompt_tokens == tokens[0]
    assert request.start_ns == request.end_ns == at(64) + 1_000_000


@pytest.mark.parametrize(
    ("duration", "timed"), [(0, True), (True, False), (-1, False), ("9", False)]
)
def test_the_summarizer_duration(tmp_path: Path, duration: Any, timed: bool) -> None:
    """Export event 4's `summarizer_usage.duration_ms` edited: 0 ms is a duration (an
    instant at the install); a boolean, a negative or a text is none."""
    usage = {"input_tokens": 7_693, "output_tokens": 1_177, "duration_ms": duration}
    records = edited(after={64: compaction_lines(4, edit={4: {"summarizer_usage": usage}})})
    (compaction,) = read(write(tmp_path, records))[0].compactions
    installed = at(64) + 1_000_000
    assert compaction.request is not None
    assert compaction.request.start_ns == installed
    if timed:
        assert compaction.start_ns == installed
        assert compaction.timing == (
            "summarizer_usage.duration_ms before context_compaction_installed"
        )
    else:
        assert compaction.start_ns == at(64)
        assert compaction.timing == "previous request's end → context_compaction_installed"


def test_a_budget_source_may_come_from_after(tmp_path: Path) -> None:
    edit = {
        "budget_before": {"estimated_prompt_tokens": 1},
        "budget_after": {"estimated_prompt_tokens": 2, "estimate_source": "tokenizer_estimate"},
    }
    session, _ = read(write(tmp_path, edited(after={64: compaction_lines(4, edit={4: edit})})))
    assert facts(session)["compaction-1_estimated_prompt_tokens"] == (
        "1 → 2 (Muse's own estimate, tokenizer_estimate; not provider counts)"
    )


def test_replayed_messages_that_are_not_a_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Event 4 with `replay_model_messages` a string or empty: the replacement summary."""
    for replay in ("not a list", []):
        edit = {4: {"replay_model_messages": replay}}
        added = spy(monkeypatch)
        read(write(tmp_path, edited(after={64: compaction_lines(4, edit=edit)})))
        assert "summary:install-39" in by_id(added)
        assert not [a for a in added if ":replay:" in a.id]


def test_a_request_that_never_completed_still_answered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 64 (model_completed) dropped: no request, but line 61's answer was given and
    enters the context when the run ends (line 94); the request is counted."""
    added = spy(monkeypatch)
    session, _ = read(write(tmp_path, edited({63: None, 64: None})))
    assert session.responses == ()
    got = item(added, "034155cd-276f-4325-b2cd-280695afd476")
    assert (got.category, got.chars) == (Category.ASSISTANT, 5)
    assert facts(session)["requests-without-usage"] == "1 requests that began but never completed"


def test_a_compaction_before_any_request_without_usage_is_an_instant(tmp_path: Path) -> None:
    """Export event 4 without `summarizer_usage` after line 22: no previous request and no
    duration, so it starts where it was installed."""
    event = _export()[4]
    event["summarizer_usage"] = None
    records = edited(after={22: [run_event(event, like=22, shift_us=1_000)]})
    (compaction,) = read(write(tmp_path, records))[0].compactions
    installed = at(22) + 1_000_000
    assert (compaction.start_ns, compaction.end_ns, compaction.request) == (
        installed,
        installed,
        None,
    )


@pytest.mark.parametrize("recorded_at", [999_999_999_999_999_999, 2**63 // 1000 + 1, -5, 1.5e15])
def test_a_time_no_trace_can_hold_is_one_warning_not_the_file_lost(
    tmp_path: Path, recorded_at: Any
) -> None:
    """`recorded_at` past 2262 (a trace's unsigned 64-bit ns), before 1970 or not an int:
    one bad-timestamp warning at its line, the record placed 1 ms after the one before,
    every other time as it was. Past the year 9999 it raised OverflowError, and the whole
    file was lost ("could not be read")."""
    bad = line(30)
    bad["recorded_at"] = recorded_at
    session, diagnostics = read(write(tmp_path, edited({30: bad})))
    assert [(w.line, w.kind) for w in diagnostics.warnings if w.kind == "bad-timestamp"] == [
        (30, "bad-timestamp")
    ]
    good, _ = read(write(tmp_path / "good", edited()))
    assert (session.start_ns, session.end_ns) == (good.start_ns, good.end_ns)
    assert len(session.responses) == len(good.responses) == 1


def test_the_last_time_a_trace_can_hold_is_read(tmp_path: Path) -> None:
    """The greatest `recorded_at` whose ns fits a trace's times is a time (the clock then
    calls it an outlier beside its neighbours: its own warning), the next one is none."""
    from agent_profiler.adapters.muse_journal import _recorded_ns

    last = (2**63 - 1) // 1000
    assert _recorded_ns(last) == last * 1000 < 2**63
    assert _recorded_ns(last + 1) is None
    assert _recorded_ns(0) == 0 and _recorded_ns(True) is None
    assert _recorded_ns(1_789_246_716_491_567) == 1_789_246_716_491_567_000
