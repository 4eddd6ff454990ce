"""Every category rule of the Muse Code adapter, pinned on the real 1.4.2 session (copy in
tests/data/journals/muse): context blocks by kind, the request's byte lanes, the prompt, the
assistant history, the base instructions; zero-usage calls (the echo provider of the 1.1.1
excerpt) are not requests; a request starts `duration_ms` before its model_completed."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import SniffedFile, muse
from agent_profiler.adapters.muse_lanes import BLOCKS, Lane, block_category, lane_category
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import sniff
from agent_profiler.model import AnchorKind, Basis, Category, Coverage, Harness, SourceKind
from rules_spy import by_id, raw_lines, record, sessions, spy, write
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "muse"
HCN = DATA / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
ECHO = DATA / "codeburn-1.1.1-R2514.1_echo-provider_excerpt.session.jsonl"

SY, RU, SK, TO, EN, OV, PR, AS, RE, SU, ME, UN = (
    Category.SYSTEM,
    Category.RULES,
    Category.SKILLS,
    Category.TOOLS,
    Category.ENVIRONMENT,
    Category.OVERHEAD,
    Category.PROMPTS,
    Category.ASSISTANT,
    Category.RESULTS,
    Category.SUMMARIES,
    Category.MESSAGES,
    Category.UNATTRIBUTED,
)

# FORMATS-muse §5.3: the kind of each context block.
BLOCK_KINDS = {
    "rules_file": (RU, "Rules file"),
    "memory_snapshot": (RU, "Memory snapshot"),
    "skills_catalog": (SK, "Skills listing"),
    "skills": (SK, "Skills listing"),
    "agent_definition_catalog": (SK, "Agent definitions catalog"),
    "workspace_identity": (EN, "Workspace identity"),
    "security_mode": (EN, "Security mode"),
    "sandbox_policy": (EN, "Sandbox policy"),
    "session_identity": (EN, "Session identity"),
    "context_usage": (EN, "Context usage"),
    "user_shell_command": (EN, "Shell command"),
    "workflow_choice": (SY, "Workflow guidance"),
    "workflow_cookbook": (SY, "Workflow cookbook"),
    "subagent_delegation": (SY, "Subagent delegation guidance"),
    "meta_context_note": (SY, "Muse core note"),
    "step_budget": (OV, "Step budget"),
    "file_mention": (PR, "File mention"),
    "user_steer": (PR, "User steer"),
    "subagent_result": (RE, "Subagent result"),
    "background_task_terminal": (RE, "Background task result"),
    "mcp_resource": (RE, "MCP resource"),
}
MARKER = re.compile(r"^<redacted: .*, (\d+) chars>$", re.DOTALL)


def _event(line: int, path: Path = HCN) -> dict[str, Any]:
    event = record(path, line)["payload"]["event"]
    assert isinstance(event, dict)
    return event


@pytest.mark.parametrize("block_id", sorted(BLOCK_KINDS))
def test_every_block_kind(block_id: str) -> None:
    assert block_category(block_id) == BLOCK_KINDS[block_id]
    assert block_category("unknown-id", block_id) == BLOCK_KINDS[block_id]  # by source
    assert set(BLOCKS) == set(BLOCK_KINDS)


def test_an_unknown_block_is_unattributed() -> None:
    assert block_category("fancy_new_block") == (
        UN,
        "Context block fancy_new_block (kind not known)",
    )
    assert block_category("", "src") == (UN, "Context block src (kind not known)")


LANES = [
    ("system_base", "provider_default", "option:meta.instructions", SY),
    ("tool_specs", "default", "request.tools", TO),
    ("tool_result", "tool", "message.role:tool", RE),
    ("provider_options", "provider_request_options", "option:meta.model", OV),
    ("history", "compaction_summary", "message.role:user", SU),
    ("history", "summary", "message.role:developer", SU),
    ("history", "current_user", "message.role:developer", PR),
    ("history", "prior_turns", "message.role:user", PR),
    ("history", "prior_turns", "message.role:assistant", AS),
    ("history", "prior_turns", "message.role:developer", ME),
    ("something_new", "x", "y", UN),
]


@pytest.mark.parametrize(("lane", "source", "destination", "category"), LANES)
def test_every_lane_kind(lane: str, source: str, destination: str, category: Category) -> None:
    assert lane_category(Lane(lane, source, destination, 10)) is category


def _diagnostic_bytes() -> dict[str, int]:
    out = {}
    for line in range(24, 35):
        event = _event(line)
        out[event["block_id"]] = event["text_bytes"]
    return out


def test_the_items_of_a_real_request(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 22 (the prompt), 35 (base instructions and 11 context blocks), 61 (the answer)."""
    added = spy(monkeypatch)
    sessions(HCN)
    items = by_id(added)
    prompt = _event(22)["prompt"]
    got = items["prompt:d0faab84-e05f-48ad-9c5d-5c6e85984779"]
    assert (got.category, got.chars, got.tokens, got.source_kind) == (
        PR,
        len(prompt),
        -(-len(prompt) // 4),
        SourceKind.PROMPT,
    )
    configured = _event(35)
    got = items["system:base_instructions"]
    assert (got.category, got.label, got.chars) == (SY, "System", 40_884)
    assert len(configured["base_instructions"]) == 40_884
    measured = _diagnostic_bytes()
    blocks = configured["run_context_messages"]
    assert len(blocks) == 11
    for block in blocks:
        category, label = BLOCK_KINDS[block["id"]]
        text = block["text"]
        marker = MARKER.match(text)
        if marker:
            chars, label = int(marker.group(1)), f"{label} (length from a redaction marker)"
        elif len(text.encode()) != measured[block["id"]]:
            chars, label = measured[block["id"]], f"{label} (length from context_block_diagnostic)"
        else:
            chars = len(text)
        got = items[f"context:{block['id']}"]
        assert (got.category, got.label, got.chars) == (category, label, chars), block["id"]
    answer = _event(61)
    got = items[answer["message_id"]]
    assert (got.category, got.label, got.chars) == (AS, "Assistant history", 5)
    assert got.source_kind is SourceKind.RESPONSE


def test_the_request_snapshot_is_its_lanes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 51's lanes /4 are the snapshot; the context lane split by the blocks' measured
    bytes, its glue overhead; what the lanes miss of input_tokens (line 64) is its own item."""
    (session,) = sessions(HCN)
    (response,) = session.responses
    completed = _event(64)
    assert response.usage.prompt_tokens == completed["usage"]["input_tokens"] == 31_979
    assert response.usage.reasoning_tokens == 38
    ended = record(HCN, 64)["recorded_at"] * 1_000
    assert (response.end_ns, response.end_ns - response.start_ns) == (ended, 4_838 * 1_000_000)
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response.id]
    # tool_specs says 0 bytes though tools are sent: the lanes miss part of the input.
    assert (snapshot.basis, snapshot.coverage) == (Basis.NATIVE_BYTES, Coverage.PARTIAL)
    lanes = {
        (a["logical_lane"]["value"], a["source"]["value"]): a["byte_count"]
        for a in _event(51)["bounded"]["aggregates"]
    }
    measured = _diagnostic_bytes()
    by: dict[Category, int] = {}
    for block_id, size in measured.items():
        category = BLOCK_KINDS[block_id][0]
        by[category] = by.get(category, 0) + size
    by[SY] += lanes[("system_base", "provider_default")]
    by[OV] = lanes[("context", "run_context")] - sum(measured.values())
    by[PR] = lanes[("history", "current_user")]
    expected = {c: -(-b // 4) for c, b in by.items() if b}
    expected[UN] = 31_979 - sum(expected.values())
    assert dict(snapshot.categories) == expected
    assert sum(dict(snapshot.categories).values()) == snapshot.reported_tokens == 31_979


def test_without_lanes_the_request_falls_back_to_items(tmp_path: Path) -> None:
    values = [json.loads(text) for text in HCN.read_text().splitlines() if text.strip()]
    kept = [v for i, v in enumerate(values, 1) if i != 51]
    (session,) = sessions(write(tmp_path, kept, name="session.jsonl"))
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == session.responses[0].id]
    assert (snapshot.basis, snapshot.coverage) == (Basis.CHARS, Coverage.PARTIAL)
    categories = dict(snapshot.categories)
    assert categories[PR] == -(-len(_event(22)["prompt"]) // 4)


def test_echo_provider_calls_are_not_requests() -> None:
    """The 1.1.1 excerpt: `--provider echo` reports zero usage (line 13)."""
    assert not any(_event(13, ECHO)["usage"].values())
    (session,) = sessions(ECHO)
    assert session.responses == ()


def test_tool_calls_and_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 61 turned into a tool call (args are a JSON string), and its result after it."""
    values = [json.loads(text) for text in HCN.read_text().splitlines() if text.strip()]
    call_line = copy.deepcopy(values[60])
    call_line["payload"]["event"] = {
        "kind": "assistant_tool_calls_committed",
        "tool_calls": [{"call_id": "call-1", "name": "read_file", "args": '{"path": "a.py"}'}],
    }
    result_line = copy.deepcopy(values[60])
    result_line["payload"]["event"] = {
        "kind": "tool_result_committed",
        "tool_call_id": "call-1",
        "text": "print('hi')\n",
    }
    open_call = [*values[:60], call_line, *values[61:]]
    with_result = [*values[:60], call_line, result_line, *values[61:]]
    added = spy(monkeypatch)
    (done,) = sessions(write(tmp_path, with_result, name="session.jsonl"))
    items = by_id(added)
    got = items["call:call-1"]
    assert (got.category, got.label, got.chars, got.source_kind) == (
        AS,
        "Tool arguments",
        len("read_file") + len('{"path": "a.py"}'),
        SourceKind.TOOL,
    )
    got = items["result:call-1"]
    assert (got.category, got.label, got.chars, got.source_id) == (RE, "Tool result", 12, "call-1")
    (tool,) = [t for t in done.tool_calls if t.call_id == "call-1"]
    assert (tool.incomplete, tool.result_chars, tool.arg_keys) == (False, 12, ("path",))
    other = tmp_path / "open"
    other.mkdir()
    (unfinished,) = sessions(write(other, open_call, name="session.jsonl"))
    (tool,) = [t for t in unfinished.tool_calls if t.call_id == "call-1"]
    assert tool.incomplete is True


# -- the adapter: detection, session trees, finishing (muse.py) -------------------------------

SID = "01a10134-76a3-79f0-a7ed-bdad567bda19"
RUN = "d0faab84-e05f-48ad-9c5d-5c6e85984779"
ECHO_SID = "01a0976a-39f3-7c82-9214-f6ff343a5d99"
GOAL_TASK, GOAL_CHILD = (
    "01a10134-8dab-7a23-a511-36613133cf0e",
    "ce2a045b-f187-477b-9bd5-b3459e03274f",
)
EXPORT = DATA / "hcn-1.1.1_compaction-records.export-events.json"


def _tree(root: Path, files: dict[str, str]) -> dict[str, Path]:
    """Write `files` (relative path → text) under root; their paths by name."""
    out = {}
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        out[relative] = path
    return out


def _echo_as(session_id: str) -> str:
    """The real 1.1.1 excerpt with its session id replaced (a child log of that id)."""
    return ECHO.read_text().replace(ECHO_SID, session_id)


def _sniffed(*paths: Path) -> list[SniffedFile]:
    return [SniffedFile(p, sniff(p)) for p in paths]


def _read(*paths: Path) -> tuple[dict[str, Any], Diagnostics]:
    diagnostics = Diagnostics()
    return {s.session_id: s for s in muse.read_files(list(paths), diagnostics)}, diagnostics


def test_detection_looks_past_other_harnesses_lines() -> None:
    """Line 2 of the 1.4.2 session is an envelope; a head that starts with a Claude or Codex
    line still is Muse's when an envelope follows; an envelope needs its stream object, a
    text payload_type and a recorded_at; a list is Muse's only as an array of events."""
    envelope = record(HCN, 2)
    assert muse.detect([{"type": "user"}, {"sessionId": "s"}, envelope])
    assert muse.detect([[], envelope])
    assert not muse.detect([{**envelope, "type": "x"}])
    assert not muse.detect([{**envelope, "sessionId": "x"}])
    assert not muse.detect([{k: v for k, v in envelope.items() if k != "recorded_at"}])
    assert not muse.detect([{**envelope, "stream": "session"}])
    assert not muse.detect([{**envelope, "payload_type": 1}])
    assert muse.detect([{"retained_marker": "omitted_live_only"}])
    assert muse.detect([{"retained_frame": "session_permission_transaction"}])
    assert muse.detect([[{"kind": "started"}]])
    assert not muse.detect([[{"kind": "started", "payload_type": "x"}]])
    assert not muse.detect([[{"kind": 1}]]) and not muse.detect([[1]]) and not muse.detect([])


def test_a_session_tree_is_one_group(tmp_path: Path) -> None:
    """The 1.4.2 session with its goal-reminder child (the echo excerpt as that child) and a
    grandchild below it, plus an approval-review log: given all, or only the grandchild and
    the main log, one group whose main is the session and whose extras are sorted."""
    files = _tree(
        tmp_path / SID,
        {
            "session.jsonl": HCN.read_text(),
            f"subagent/{GOAL_CHILD}/session.jsonl": _echo_as(GOAL_CHILD),
            f"subagent/{GOAL_CHILD}/subagent/g2/session.jsonl": _echo_as("g2"),
            "approval-review/r1.jsonl": _echo_as("r1"),
            "subagent/not-a-log/session.jsonl/keep": "",
        },
    )
    main = files["session.jsonl"]
    child = files[f"subagent/{GOAL_CHILD}/session.jsonl"]
    grandchild = files[f"subagent/{GOAL_CHILD}/subagent/g2/session.jsonl"]
    review = files["approval-review/r1.jsonl"]
    (group,) = muse.plan(_sniffed(review, grandchild, main, child))
    assert (group.harness, group.main) == (Harness.MUSE, main)
    assert group.extras == tuple(sorted([child, grandchild, review]))
    (group,) = muse.plan(_sniffed(grandchild, main))
    assert group.main == main and group.extras == (child, grandchild)
    # the child alone is its own tree (its subagent below it), the review alone is refused
    (group,) = muse.plan(_sniffed(child))
    assert (group.main, group.extras) == (child, (grandchild,))
    (group,) = muse.plan(_sniffed(review))
    assert (group.main, group.extras) == (review, ())
    with pytest.raises(JournalError) as caught:
        muse.read_group(group, Diagnostics())
    assert caught.value.message == muse.APPROVAL_MESSAGE


def test_an_approval_review_log_is_told_by_its_stream_too(tmp_path: Path) -> None:
    """A log outside `approval-review/` whose first envelope is the reviewer's stream rides
    along with its session; a head whose first envelope is a session is not one."""
    reviewer = HCN.read_text().replace('"kind":"session"', '"kind":"approval.review.runtime"')
    files = _tree(
        tmp_path / SID,
        {
            "session.jsonl": HCN.read_text(),
            "reviews/r1.jsonl": reviewer,
            "reviews/copy.jsonl": HCN.read_text(),
        },
    )
    main, review, copy_ = (
        files[k] for k in ("session.jsonl", "reviews/r1.jsonl", "reviews/copy.jsonl")
    )
    (group,) = muse.plan(_sniffed(main, review))
    assert group.extras == (review,)
    # line 1's frame has no stream; the first envelope (a session's) decides: not a review
    first, second = muse.plan(_sniffed(main, copy_))
    assert (first.main, first.extras, second.main, second.extras) == (main, (), copy_, ())


def test_reminder_child_logs_are_read_and_linked(tmp_path: Path) -> None:
    """Line 78 links the goal-reminder child with a log path; that log (the echo excerpt as
    the child) is read as a child session: its parent, the linking task, the agent as role,
    its first prompt the agent's. A child log with no link is the folder's child."""
    files = _tree(
        tmp_path / SID,
        {
            "session.jsonl": HCN.read_text(),
            f"subagent/{GOAL_CHILD}/session.jsonl": _echo_as(GOAL_CHILD),
            "subagent/orphan/session.jsonl": _echo_as("orphan"),
        },
    )
    found, diagnostics = _read(files["session.jsonl"])
    assert set(found) == {SID, GOAL_CHILD, "orphan"}
    goal = found[GOAL_CHILD]
    assert (goal.parent_session, goal.parent_call_id, goal.child_role) == (
        SID,
        GOAL_TASK,
        "goal-reminder",
    )
    assert goal.prompts[0].source == "agent"
    orphan = found["orphan"]
    assert (orphan.parent_session, orphan.parent_call_id, orphan.child_role) == (
        SID,
        None,
        "subagent",
    )
    main = found[SID]
    assert (main.parent_session, main.parent_call_id, main.child_role) == (None, None, None)
    assert main.prompts[0].source == "user"
    goal_call = next(t for t in main.tool_calls if t.call_id == GOAL_TASK)
    assert goal_call.child_session == GOAL_CHILD and goal_call.by_model is False
    assert goal_call.timing == (
        "journal: reminder child linked/started → task ended (a background child run)"
    )
    assert diagnostics.warning_total == 0


def test_a_child_without_its_parent_log_is_named_by_its_folder(tmp_path: Path) -> None:
    """The goal child read alone (its parent's log is not there, or is unreadable): its
    parent is the folder's session id."""
    files = _tree(tmp_path / SID, {f"subagent/{GOAL_CHILD}/session.jsonl": _echo_as(GOAL_CHILD)})
    found, _ = _read(files[f"subagent/{GOAL_CHILD}/session.jsonl"])
    assert (found[GOAL_CHILD].parent_session, found[GOAL_CHILD].parent_call_id) == (SID, None)


def test_an_unreadable_child_log_is_a_warning(tmp_path: Path) -> None:
    """A child log that is the `muse export` array (real): warned as unreadable at its path,
    the rest of the tree is read; an approval-review log beside it is skipped."""
    files = _tree(
        tmp_path / SID,
        {
            "session.jsonl": HCN.read_text(),
            "subagent/x/session.jsonl": EXPORT.read_text(),
            "approval-review/r1.jsonl": _echo_as("r1"),
        },
    )
    found, diagnostics = _read(files["session.jsonl"], files["approval-review/r1.jsonl"])
    assert set(found) == {SID}
    assert [(w.path, w.line, w.kind) for w in diagnostics.warnings] == [
        (str(files["subagent/x/session.jsonl"]), None, "unreadable")
    ]
    assert diagnostics.warnings[0].message == muse.EXPORT_MESSAGE
    assert diagnostics.skipped["muse:approval-review-log"] == 1


def test_the_export_array_is_refused_however_it_is_given(tmp_path: Path) -> None:
    """The real export array: refused when read, planned or explained; behind a BOM and
    blank lines too. A JSON array without `"kind"` is not explained as an export."""
    assert muse.explain_rejected(EXPORT) == muse.EXPORT_MESSAGE
    with pytest.raises(JournalError) as caught:
        muse.read_files([EXPORT], Diagnostics())
    assert (caught.value.path, caught.value.message) == (str(EXPORT), muse.EXPORT_MESSAGE)
    with pytest.raises(JournalError) as caught:
        muse.read_journal(EXPORT, Diagnostics())
    assert (caught.value.path, caught.value.message) == (str(EXPORT), muse.EXPORT_MESSAGE)
    padded = tmp_path / "padded.json"
    padded.write_bytes(b"\xef\xbb\xbf \t\r\n" + EXPORT.read_bytes())
    assert muse.explain_rejected(padded) == muse.EXPORT_MESSAGE
    numbers = tmp_path / "numbers.json"
    numbers.write_text("[1,\n2]\n")
    assert muse.explain_rejected(numbers) is None
    with pytest.raises(JournalError) as caught:
        muse.read_journal(numbers, Diagnostics())
    assert caught.value.message != muse.EXPORT_MESSAGE
    assert muse.explain_rejected(HCN) is None
    assert muse.explain_rejected(tmp_path / "missing.json") is None


def test_a_log_with_no_envelope_of_its_own_is_no_session(tmp_path: Path) -> None:
    """The 1.4.2 session's lines 2-3 edited to another stream kind (a workflow log): no
    session; an empty file neither."""
    lines = [json.loads(t) for t in raw_lines(HCN)[1:3]]
    for value in lines:
        value["stream"]["kind"] = "workflow"
    path = write(tmp_path, lines, name="session.jsonl")
    assert _read(path)[0] == {}
    empty = tmp_path / "e" / "session.jsonl"
    empty.parent.mkdir()
    empty.write_text("")
    assert muse.finish_session(muse.read_journal(empty, Diagnostics())) is None


def test_the_echo_session_ends_with_what_its_transcript_holds() -> None:
    """The 1.1.1 echo excerpt has no request: one session-end snapshot on the metadata's
    model, with an inferred head (no lanes), at the session's end."""
    (session,) = sessions(ECHO)
    (snapshot,) = session.snapshots
    assert snapshot.anchor is AnchorKind.SESSION
    assert snapshot.time_ns == session.end_ns == record(ECHO, 16)["recorded_at"] * 1_000
    meta = record(ECHO, 3)["payload"]["record"]
    assert snapshot.model == meta.get("model_id")
    assert snapshot.coverage is Coverage.PARTIAL  # the transcript, not the request
    assert session.incomplete is False


def test_an_unfinished_run_is_an_incomplete_session(tmp_path: Path) -> None:
    """The 1.4.2 session without line 94 (its run's terminal): incomplete, its prompt lasts
    to the end of its last model call or reminder."""
    values = [json.loads(t) for t in raw_lines(HCN) if t.strip()]
    session_ended = [v for i, v in enumerate(values, 1) if i != 94]
    (session,) = sessions(write(tmp_path, session_ended, name="session.jsonl"))
    assert session.incomplete is True
    (complete,) = sessions(HCN)
    assert complete.incomplete is False
    assert complete.prompts[0].end_ns == record(HCN, 94)["recorded_at"] * 1_000


def test_session_facts_in_order(tmp_path: Path) -> None:
    """The 1.4.2 session's facts, in the order they are shown."""
    (session,) = sessions(HCN)
    assert [k for k, _ in session.facts] == [
        "build",
        "native_lane_requests",
        "goal_usage_attribution",
        "reminder_children",
        "reminder_children_without_log_path",
        "unavailable_child_sessions",  # the loader's: its children's logs are not given
    ]
    assert dict(session.facts)["unavailable_child_sessions"] == 4  # the 4 reminder children


def test_a_session_with_requests_has_no_session_end_snapshot() -> None:
    """The 1.4.2 session: one snapshot, its request's; none at the session's end."""
    (session,) = sessions(HCN)
    assert [(s.anchor, s.anchor_id) for s in session.snapshots] == [
        (AnchorKind.RESPONSE, "request-1")
    ]


def test_a_session_with_only_a_compaction_has_no_session_end_snapshot(tmp_path: Path) -> None:
    """The 1.4.2 session with line 64 reporting zero usage (no request) and the export's
    installed compaction (event 4) after it: the compaction's snapshot is the only one."""
    values = [json.loads(t) for t in raw_lines(HCN) if t.strip()]
    done = copy.deepcopy(values[63])
    done["payload"]["event"]["usage"] = {"input_tokens": 0, "output_tokens": 0}
    installed = copy.deepcopy(values[63])
    installed["payload"]["event"] = json.loads(EXPORT.read_text())[4]
    installed["recorded_at"] += 1_000
    edited = [*values[:63], done, installed, *values[64:]]
    (session,) = sessions(write(tmp_path, edited, name="session.jsonl"))
    assert session.responses == ()
    assert [(s.anchor, s.anchor_id) for s in session.snapshots] == [
        (AnchorKind.COMPACTION, "compaction-1")
    ]
    assert session.compactions[0].pre_tokens is None


def test_a_subagent_log_names_its_parent_by_the_parents_log(tmp_path: Path) -> None:
    """The 1.4.2 session in a folder not named after it, with an unlinked child log (the echo
    excerpt): the child's parent is the session the parent log names; read alone, the
    child can only name the folder."""
    files = _tree(
        tmp_path / "renamed",
        {
            "session.jsonl": HCN.read_text(),
            "subagent/orphan/session.jsonl": _echo_as("orphan"),
        },
    )
    found, _ = _read(files["session.jsonl"])
    assert found["orphan"].parent_session == SID
    alone, _ = _read(files["subagent/orphan/session.jsonl"])
    assert alone["orphan"].parent_session == "renamed"
