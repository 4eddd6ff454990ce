"""The Pi adapter on the two real v1 sessions of the shared corpus (tests/data/journals/pi,
one gzipped) and on small hand-made v1 and v3 journals. Expected numbers come from an
independent json-module reading of each file; the context of a request is checked
against a plain re-implementation of Pi's `buildSessionContext` on random trees."""

from __future__ import annotations

import calendar
import gzip
import io
import json
import math
import random
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import agent_profiler.adapters as adapters
import agent_profiler.loader as loader
from agent_profiler.adapters import Adapter, claude_code, codex, pi, pi_records
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import sniff
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Category, ChangeKind, Harness, Session, Stage
from agent_profiler.writers import PerfettoWriter
from contract import check_contract
from samples import PI_FORK, pi_fork_source
from shared_paths import TESTS
from traceview import TraceView, load_trace

DATA = TESTS / "data" / "journals"
LARGE = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
# The corpus's other session is a fork (samples.PI_FORK) that made no request of its own:
# the session it was forked from, as the fork holds it, has the two compactions.
COMPACTED = pi_fork_source()
CORPUS = [LARGE, COMPACTED]


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Pi adapter in the loader's tuple (a no-op once it is registered there)."""
    if adapters.adapter_for(Harness.PI) is None:
        extended = (*adapters.ADAPTERS, Adapter(Harness.PI, pi.detect, pi.plan, pi.read, pi.locate))
        monkeypatch.setattr(adapters, "ADAPTERS", extended)
        monkeypatch.setattr(loader, "ADAPTERS", extended)


def read(path: Path) -> tuple[Session, pi.SessionBuilder, Diagnostics]:
    diagnostics = Diagnostics()
    builder = pi.read_session(path, diagnostics)
    tree = dict(builder.entries)
    session = builder.finish()
    assert session is not None and not builder.entries  # finish lets the tree go
    builder.entries = tree  # as it stood when the journal was read, for the tests
    return session, builder, diagnostics


def records(path: Path) -> list[Any]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle.read().split("\n") if line.strip()]


def iso_ns(text: str) -> int:
    moment = datetime.fromisoformat(text)
    return calendar.timegm(moment.utctimetuple()) * 1_000_000_000 + moment.microsecond * 1_000


def assistant_messages(path: Path) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [
        (r, r["message"])
        for r in records(path)
        if r.get("type") == "message" and r["message"].get("role") == "assistant"
    ]


def prompt_of(message: dict[str, Any]) -> int:
    u = message.get("usage") or {}
    return int(u.get("input", 0) + u.get("cacheRead", 0) + u.get("cacheWrite", 0))


def trace_of(*sessions: Session) -> TraceView:
    stream = io.BytesIO()
    PerfettoWriter().write(list(sessions), stream)
    view = load_trace(stream.getvalue())
    problems = check_contract(view, strict=True, forward_arrows=True)
    assert problems == [], "\n".join(problems)
    return view


def tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


# --------------------------------------------------------------------------- the corpus


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_one_request_per_assistant_message_with_usage(path: Path) -> None:
    session, builder, diagnostics = read(path)
    assert session.harness is Harness.PI
    messages = assistant_messages(path)
    measured = [(r, m) for r, m in messages if prompt_of(m) > 0]
    assert [r.usage.prompt_tokens for r in session.responses] == [prompt_of(m) for _, m in measured]
    assert len(builder.unmeasured_requests) == len(messages) - len(measured)
    snapshots = {s.anchor_id: s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE}
    for response, (record, message) in zip(session.responses, measured, strict=True):
        usage = message["usage"]
        assert response.usage.input_tokens == usage["input"]
        assert response.usage.cache_read_tokens == usage["cacheRead"]
        assert response.usage.cache_write_tokens == usage["cacheWrite"]
        assert response.usage.output_tokens == usage["output"]
        # start: the message's own epoch ms (request start); end: the entry's ISO time
        assert response.start_ns == message["timestamp"] * 1_000_000
        assert response.end_ns == iso_ns(record["timestamp"])
        assert response.is_error == (message["stopReason"] in {"error", "aborted"})
        assert snapshots[response.id].reported_tokens == response.usage.prompt_tokens
    # Pi states no window: a Claude model's default one, said to be assumed
    assert session.provider == "anthropic" and session.window_tokens == 200_000
    assert session.window_source == (
        f"assumed: {session.models[0]}'s default window (as Claude Code gives it), not in journal"
    )
    assert dict(session.facts)["session_version"] == "1 (migrated in memory)"
    assert diagnostics.warning_total == 0


def test_corpus_numbers() -> None:
    large, builder, _ = read(LARGE)
    assert (len(large.responses), len(builder.unmeasured_requests)) == (439, 14)
    assert large.models == ("claude-sonnet-4-5",)  # the aborted gpt-5.1-codex call had no usage
    facts = dict(large.facts)
    assert facts["thinking_level_changes"] == 103
    assert facts["requests_without_usage"] == "14 (aborted: 14)"
    # 16 calls of the response that failed with "terminated" + 2 of aborted ones: never run
    assert facts["tool_calls_not_run"] == 18
    assert len(large.tool_calls) == 373 and not large.incomplete
    compacted, builder, _ = read(COMPACTED)
    assert (len(compacted.responses), len(builder.unmeasured_requests)) == (471, 13)
    assert "forked_from" not in dict(compacted.facts)


def test_two_compactions_with_tokens_before_and_removals() -> None:
    session, _, _ = read(COMPACTED)
    lines = records(COMPACTED)
    expected = [(i, r) for i, r in enumerate(lines) if r.get("type") == "compaction"]
    assert [c.pre_tokens for c in session.compactions] == [r["tokensBefore"] for _, r in expected]
    assert [c.pre_tokens for c in session.compactions] == [175_004, 185_014]
    posts = {s.anchor_id: s for s in session.snapshots if s.stage is Stage.POST_COMPACTION}
    for compaction, (index, record) in zip(session.compactions, expected, strict=True):
        assert compaction.id == f"line-{index + 1}"  # v1 ids are line numbers
        post = posts[compaction.id]
        removed = [c for c in post.changes if c.change is ChangeKind.REMOVED]
        assert len(removed) + post.omitted_changes >= 64 and all(
            c.delta_tokens < 0 for c in removed
        )
        assert compaction.removed_items >= len(removed)
        # everything that left comes before the first kept entry (an index counting the header)
        first_kept_line = record["firstKeptEntryIndex"] + 1
        assert all(int(c.id.split(":")[0].removeprefix("line-")) < first_kept_line for c in removed)
        summary = pi_records.COMPACTION_PREFIX + record["summary"] + pi_records.COMPACTION_SUFFIX
        assert dict(post.categories)[Category.SUMMARIES] == tokens(summary)
        assert compaction.start_ns < compaction.end_ns == iso_ns(record["timestamp"])
    # only the latest compaction's summary is sent: the second one replaces the first
    second = posts[session.compactions[1].id]
    assert any(
        c.id == f"{session.compactions[0].id}:summary" and c.change is ChangeKind.REMOVED
        for c in second.changes
    )
    # the context shrank: the next request reports far less than tokensBefore
    for compaction in session.compactions:
        after = next(r for r in session.responses if r.start_ns > compaction.end_ns)
        assert after.usage.prompt_tokens < compaction.pre_tokens // 4


def test_model_changes_in_the_corpus() -> None:
    session, builder, _ = read(COMPACTED)
    # Five model_change entries within 11 s that end on the model already in use: the
    # requests' model never changes, so the first snapshot is the only baseline.
    assert [m.value for m in builder.markers if m.kind == "model_change"][-1] == (
        "anthropic/claude-opus-4-5"
    )
    assert "claude-3-opus-20240229" in dict(session.facts)["model_changes"]
    assert [s.baseline for s in session.snapshots].count(True) == 1
    assert session.snapshots[0].baseline and session.models == ("claude-opus-4-5",)


@pytest.mark.slow  # corpus-wide
def test_corpus_traces_meet_the_contract(registered: None, export_trace: Any) -> None:
    exported = export_trace(*CORPUS)
    view = exported.view
    assert len(view.captures()) == 2
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None and profile.category == "pi.metadata"
        assert profile.args["harness"] == "pi" and profile.args["provider"] == "anthropic"
        sizes = [v for _, v in view.counter_samples(capture.uuid, "Context size")[1:-1]]
        assert sizes and min(sizes) > 0  # no request without usage shows as a size of 0
    responses = view.slices_of_kind("assistant-message")
    assert len(responses) == 439 + 471
    assert len(view.slices_of_kind("compaction")) == 2
    # requests that failed before any usage: failed request spans, never a size
    failed = view.slices_of_kind("provider-request")
    assert len(failed) == 14 + 13
    assert all(f.args["incomplete"] is True and "context" not in f.args for f in failed)
    # thinking-level and model changes are marked on the timeline
    markers = [s for s in view.slices if s.args.get("marker")]
    kinds = {m.args["marker"] for m in markers}
    assert kinds == {"thinking_level_change", "model_change"}
    assert sum(1 for m in markers if m.args["marker"] == "thinking_level_change") == 103 + 4


# --------------------------------------------------------------------------- hand-made journals


class Journal:
    """A hand-made Pi session file: entries one second apart, v3 ids unless v1."""

    def __init__(self, version: int = 3) -> None:
        self.version = version
        self.second = 0
        header: dict[str, Any] = {
            "type": "session",
            "id": "11111111-2222-4333-8444-555555555555",
            "timestamp": self.time(),
            "cwd": "/work",
        }
        if version >= 2:
            header["version"] = version
        else:
            header.update(provider="anthropic", modelId="m1", thinkingLevel="off")
        self.lines: list[Any] = [header]

    def time(self) -> str:
        self.second += 1
        moment = datetime(2026, 1, 1, 10, tzinfo=UTC) + timedelta(seconds=self.second)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def entry(self, kind: str, parent: str | None = None, **fields: Any) -> str:
        entry_id = f"e{len(self.lines):07x}"
        record: dict[str, Any] = {"type": kind, "timestamp": self.time(), **fields}
        if self.version >= 2:
            record.update(id=entry_id, parentId=parent)
        self.lines.append(record)
        return entry_id

    def epoch_ms(self) -> int:
        return int(datetime.fromisoformat(self.time()).timestamp() * 1000)

    def user(self, parent: str | None, text: str) -> str:
        message = {"role": "user", "content": [{"type": "text", "text": text}]}
        return self.entry("message", parent, message={**message, "timestamp": self.epoch_ms()})

    def assistant(
        self,
        parent: str | None,
        text: str,
        prompt: int,
        *,
        model: str = "m1",
        stop: str = "stop",
        calls: tuple[tuple[str, str], ...] = (),
    ) -> str:
        content: list[Any] = [{"type": "text", "text": text}] if text else []
        content += [
            {"type": "toolCall", "id": cid, "name": name, "arguments": {"path": "a"}}
            for cid, name in calls
        ]
        message = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": model,
            "usage": {"input": 2, "output": 5, "cacheRead": max(prompt - 3, 0), "cacheWrite": 1}
            if prompt
            else {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "stopReason": stop,
            "timestamp": self.epoch_ms(),
        }
        return self.entry("message", parent, message=message)

    def result(self, parent: str | None, call_id: str, text: str) -> str:
        message = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": "read",
            "content": [{"type": "text", "text": text}],
            "isError": False,
            "timestamp": self.epoch_ms(),
        }
        return self.entry("message", parent, message=message)

    def write(self, path: Path) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        return path


def snapshot_of(session: Session, response_id: str) -> Any:
    return next(s for s in session.snapshots if s.anchor_id == response_id)


def test_abandoned_branch_is_not_in_the_context(tmp_path: Path) -> None:
    # GIVEN a v3 session that explores a branch (a large read), then goes back to the
    # first answer with a branch summary and continues from there
    j = Journal()
    u1 = j.user(None, "look at the repo")
    a1 = j.assistant(u1, "which file?", 5_000)
    u2 = j.user(a1, "read big.txt")
    a2 = j.assistant(u2, "", 5_100, calls=(("c1", "read"),))
    r2 = j.result(a2, "c1", "x" * 40_000)
    a3 = j.assistant(r2, "it is big", 15_200)
    summary = j.entry("branch_summary", a1, fromId=a3, summary="Read big.txt: 40k of x.")
    u3 = j.user(summary, "never mind, list files")
    a4 = j.assistant(u3, "a, b", 5_050)
    (session, _, diagnostics) = read(j.write(tmp_path / "branch.jsonl"))
    assert diagnostics.warning_total == 0
    assert [r.id for r in session.responses] == [a1, a2, a3, a4]
    assert dict(snapshot_of(session, a3).categories)[Category.RESULTS] == 10_000
    # WHEN the request after the branch switch is observed
    last = snapshot_of(session, a4)
    categories = dict(last.categories)
    # THEN the abandoned branch's prompt, call and result left, the summary came in
    assert Category.RESULTS not in categories
    assert categories[Category.SUMMARIES] == tokens(
        pi_records.BRANCH_PREFIX + "Read big.txt: 40k of x." + pi_records.BRANCH_SUFFIX
    )
    assert categories[Category.PROMPTS] == tokens("look at the repo") + tokens(
        "never mind, list files"
    )
    removed = {c.id for c in last.changes if c.change is ChangeKind.REMOVED}
    assert f"{r2}:result" in removed and f"{u2}:0" in removed and f"{a2}:0" in removed
    assert dict(session.facts)["entries_off_final_branch"] == 4  # u2, a2, r2, a3
    # the prompt a request answers is the one on its own branch
    by_id = {r.id: r for r in session.responses}
    assert by_id[a3].prompt_id == u2 and by_id[a4].prompt_id == u3


def test_v1_is_migrated_like_pi_does(tmp_path: Path) -> None:
    # GIVEN a v1 file (no ids; a blank line, which Pi's parser skips too) whose compaction
    # keeps the history from parsed entry 3 (the header is entry 0)
    j = Journal(version=1)
    j.user(None, "first question, long gone")  # entry 1
    j.assistant(None, "first answer", 1_000)  # entry 2
    j.user(None, "second question")  # entry 3: the first kept entry
    j.assistant(None, "second answer", 1_100)  # entry 4
    j.entry("compaction", summary="They asked twice.", firstKeptEntryIndex=3, tokensBefore=1_105)
    j.user(None, "third question")
    j.assistant(None, "third answer", 700)
    path = tmp_path / "v1.jsonl"
    text = "".join(json.dumps(line) + "\n" for line in j.lines)
    first_break = text.index("\n") + 1
    path.write_text(text[:first_break] + "\n" + text[first_break:])  # a blank line 2
    session, builder, diagnostics = read(path)
    assert diagnostics.warning_total == 0
    # ids are line numbers, each entry's parent is the one before it
    assert [r.id for r in session.responses] == ["line-4", "line-6", "line-9"]
    assert builder.entries["line-6"].parent == "line-5" and builder.entries["line-3"].parent is None
    assert builder.entries["line-7"].first_kept == "line-5"  # parsed entry 3, on line 5
    (compaction,) = session.compactions
    assert compaction.pre_tokens == 1_105 and compaction.removed_items == 2
    categories = dict(snapshot_of(session, "line-9").categories)
    assert categories[Category.PROMPTS] == tokens("second question") + tokens("third question")
    assert categories[Category.ASSISTANT] == tokens("second answer")
    assert categories[Category.SUMMARIES] == tokens(
        pi_records.COMPACTION_PREFIX + "They asked twice." + pi_records.COMPACTION_SUFFIX
    )
    # the project name, not the cwd (the model never holds a path with a user name)
    assert session.project == "work" and dict(session.facts)["thinking_level"] == "off"


def test_aborted_and_error_responses(tmp_path: Path) -> None:
    # GIVEN an aborted request without usage, an error response with usage and a tool
    # call that never ran, then a normal request
    j = Journal()
    u1 = j.user(None, "go")
    aborted = j.assistant(u1, "", 0, stop="aborted")
    u2 = j.user(aborted, "go again")
    failed = j.assistant(u2, "partial answer", 3_000, stop="error", calls=(("c9", "bash"),))
    u3 = j.user(failed, "once more")
    ok = j.assistant(u3, "done", 3_050)
    session, builder, _ = read(j.write(tmp_path / "aborted.jsonl"))
    # THEN the aborted request is a request without a size, not a request of 0 tokens
    assert [r.id for r in session.responses] == [failed, ok]
    (unmeasured,) = builder.unmeasured_requests
    assert unmeasured.id == aborted and unmeasured.is_error and unmeasured.stop_reason == "aborted"
    assert all(s.anchor_id != aborted for s in session.snapshots)
    assert all(s.reported_tokens for s in session.snapshots)
    # the error response is a failed request with its reported size
    error = session.responses[0]
    assert error.is_error and error.stop_reason == "error" and error.usage.prompt_tokens == 3_000
    # Pi replays neither failed message, and runs no tool of the failed one
    assert Category.ASSISTANT not in dict(snapshot_of(session, ok).categories)
    assert session.tool_calls == () and not session.incomplete
    facts = dict(session.facts)
    assert facts["requests_without_usage"] == "1 (aborted: 1)"
    assert facts["tool_calls_not_run"] == 1
    view = trace_of(session)
    (capture,) = view.captures()
    sizes = [v for _, v in view.counter_samples(capture.uuid, "Context size")[1:-1]]
    assert sizes == [3_000, 3_050]
    errors = [s for s in view.slices_of_kind("assistant-message") if s.args.get("is_error")]
    assert len(errors) == 1


def test_model_change_starts_a_new_baseline(tmp_path: Path) -> None:
    j = Journal()
    u1 = j.user(None, "hello")
    a1 = j.assistant(u1, "hi", 2_000, model="m1")
    u2 = j.user(a1, "more")
    a2 = j.assistant(u2, "sure", 2_010, model="m1")
    change = j.entry("model_change", a2, provider="openai", modelId="m2")
    level = j.entry("thinking_level_change", change, thinkingLevel="high")
    u3 = j.user(level, "and now?")
    a3 = j.assistant(u3, "now", 2_400, model="m2")
    session, builder, _ = read(j.write(tmp_path / "models.jsonl"))
    assert [s.baseline for s in session.snapshots] == [True, False, True]
    assert snapshot_of(session, a3).model == "m2" and session.models == ("m1", "m2")
    assert [(m.kind, m.value) for m in builder.markers] == [
        ("model_change", "openai/m2"),
        ("thinking_level_change", "high"),
    ]
    facts = dict(session.facts)
    assert facts["model_changes"] == "openai/m2"
    assert facts["requests_by_thinking_level"] == "unknown: 2, high: 1"
    view = trace_of(session)
    configurations = view.slices_named("run-configuration")
    assert [s.args["model"] for s in configurations] == ["m1", "m2"]


def test_what_the_model_sees_of_each_entry(tmp_path: Path) -> None:
    j = Journal()
    u1 = j.user(None, "start")
    custom = j.entry("custom", u1, customType="ext", data={"big": "y" * 10_000})
    injected = j.entry(
        "custom_message", custom, customType="ext", content="injected context", display=True
    )
    bash = {
        "role": "bashExecution",
        "command": "ls",
        "output": "a\nb",
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": j.epoch_ms(),
    }
    shown = j.entry("message", injected, message=bash)
    hidden = j.entry("message", shown, message={**bash, "excludeFromContext": True})
    label = j.entry("label", hidden, targetId=u1, label="start")
    future = j.entry("hologram", label, payload=1)
    named = j.entry("session_info", future, name="My session")
    a1 = j.assistant(named, "ok", 4_000)
    session, _, diagnostics = read(j.write(tmp_path / "kinds.jsonl"))
    categories = dict(snapshot_of(session, a1).categories)
    assert categories[Category.ENVIRONMENT] == tokens("injected context")
    assert categories[Category.RESULTS] == tokens(pi_records.bash_execution_text(bash))  # once
    assert categories[Category.PROMPTS] == tokens("start")
    assert diagnostics.skipped == Counter({"pi:custom": 1, "pi:label": 1})
    assert diagnostics.unrecognised == Counter({"pi:hologram": 1})  # not "skipped on purpose"
    assert dict(session.facts)["session_name"] == "My session"


def test_damaged_tree_links_warn_and_still_read(tmp_path: Path) -> None:
    j = Journal()
    u1 = j.user(None, "start")
    j.assistant(u1, "ok", 1_000)
    j.lines.append({**j.lines[-1], "timestamp": "2026-01-01T10:59:00.000Z"})  # repeated id
    orphan = j.user("nowhere", "orphan")  # a parent that does not exist
    j.assistant(orphan, "fine", 900)
    session, _, diagnostics = read(j.write(tmp_path / "damaged.jsonl"))
    assert diagnostics.warning_counts["bad-shape"] == 2
    assert len(session.responses) == 3  # the repeated entry is read under its line's id
    last = session.snapshots[-1]
    assert dict(last.categories)[Category.PROMPTS] == tokens("orphan")  # a root: u1 not in it


# --------------------------------------------------------------------------- detection


def test_detection_by_content(tmp_path: Path) -> None:
    v3 = Journal().write(tmp_path / "v3.jsonl")
    for path in (LARGE, PI_FORK, COMPACTED, v3):
        head = sniff(path)
        assert pi.detect(head)
        assert not claude_code.detect(head) and not codex.detect(head)
    others = [p for p in (DATA / "claude-code").rglob("*.jsonl*")] + list(
        (DATA / "codex").glob("*.jsonl*")
    )
    assert others
    for path in others:
        assert not pi.detect(sniff(path)), path


def test_loader_tells_pi_from_the_others(registered: None, tmp_path: Path) -> None:
    codex_file = next((DATA / "codex").glob("*.jsonl"))
    claude_file = DATA / "claude-code" / "handmade" / "small.jsonl"
    renamed = tmp_path / "rollout-2026-01-01T00-00-00-fake.jsonl"  # a Pi file with a Codex name
    renamed.write_bytes(LARGE.read_bytes())
    result = load([renamed, codex_file, claude_file], Diagnostics())
    assert result.failures == []
    assert sorted(s.harness.value for s in result.sessions) == ["claude-code", "codex", "pi"]


# --------------------------------------------------------------------------- the tree walk


PI_CATEGORIES = {"user": Category.PROMPTS, "toolResult": Category.RESULTS}


def naive_context(entries: list[dict[str, Any]], leaf: str | None) -> Counter[Category]:
    """Pi's buildSessionContext + convertToLlm + transformMessages, spelled out plainly,
    as estimated tokens per category."""
    by_id = {e["id"]: e for e in entries}
    path: list[dict[str, Any]] = []
    node = by_id.get(leaf) if leaf else None
    while node is not None:
        path.insert(0, node)
        node = by_id.get(node["parentId"]) if node["parentId"] else None
    at = max((i for i, e in enumerate(path) if e["type"] == "compaction"), default=None)
    if at is None:
        sent = path
    else:
        ids = [e["id"] for e in path[:at]]
        first = path[at].get("firstKeptEntryId")
        start = ids.index(first) if first in ids else at
        sent = [path[at], *path[start:at], *path[at + 1 :]]
    totals: Counter[Category] = Counter()
    for index, entry in enumerate(sent):
        if entry["type"] == "compaction":
            if index == 0:  # the summary of the latest compaction
                text = (
                    pi_records.COMPACTION_PREFIX + entry["summary"] + pi_records.COMPACTION_SUFFIX
                )
                totals[Category.SUMMARIES] += tokens(text)
        elif entry["type"] == "branch_summary":
            text = pi_records.BRANCH_PREFIX + entry["summary"] + pi_records.BRANCH_SUFFIX
            totals[Category.SUMMARIES] += tokens(text)
        elif entry["type"] == "message":
            message = entry["message"]
            role = message["role"]
            if role == "assistant":
                if message["stopReason"] in {"error", "aborted"}:
                    continue
                for block in message["content"]:
                    if block["type"] == "text":
                        totals[Category.ASSISTANT] += tokens(block["text"])
                    else:
                        arguments = json.dumps(block["arguments"], separators=(",", ":"))
                        totals[Category.ASSISTANT] += tokens(block["name"] + arguments)
            else:
                text = "".join(b["text"] for b in message["content"])
                totals[PI_CATEGORIES[role]] += tokens(text)
    return +totals


@pytest.mark.parametrize("seed", range(12))
def test_context_follows_pi_on_random_trees(tmp_path: Path, seed: int) -> None:
    # GIVEN a session that branches back to random earlier entries, summarises branches
    # and compacts (keeping a random stretch of the current path) along the way
    rng = random.Random(seed)
    j = Journal()
    leaf: str | None = None
    path: list[str] = []
    requests = 0
    for step in range(120):
        roll = rng.random()
        if path and roll < 0.15:
            back = rng.randrange(len(path))
            leaf = path[back]
            path = path[: back + 1]
            if rng.random() < 0.5:
                text = "summary " * rng.randint(1, 30)
                leaf = j.entry("branch_summary", leaf, fromId=path[-1], summary=text)
                path.append(leaf)
        elif path and roll < 0.22:
            kept = rng.choice([*path, "missing"])
            leaf = j.entry(
                "compaction",
                leaf,
                summary="compacted " * rng.randint(1, 40),
                firstKeptEntryId=kept,
                tokensBefore=1_000,
            )
            path.append(leaf)
        elif roll < 0.5:
            leaf = j.user(leaf, "q" * rng.randint(1, 300))
            path.append(leaf)
        elif roll < 0.8:
            call = f"call{step}"
            stop = rng.choice(["toolUse", "toolUse", "toolUse", "aborted"])
            leaf = j.assistant(
                leaf, "t" * rng.randint(0, 200), 50_000, stop=stop, calls=((call, "read"),)
            )
            path.append(leaf)
            requests += 1
            leaf = j.result(leaf, call, "r" * rng.randint(0, 2_000))
            path.append(leaf)
        else:
            leaf = j.assistant(leaf, "a" * rng.randint(1, 400), 50_000)
            path.append(leaf)
            requests += 1
    session, _, diagnostics = read(j.write(tmp_path / f"random-{seed}.jsonl"))
    assert diagnostics.warning_total == 0
    entries = j.lines[1:]
    by_id = {e["id"]: e for e in entries}
    assert len(session.responses) == requests
    for snapshot in session.snapshots:
        if snapshot.anchor is AnchorKind.RESPONSE:
            leaf_id = by_id[snapshot.anchor_id]["parentId"]
        else:
            leaf_id = snapshot.anchor_id  # a compaction's own context
        measured = {c: t for c, t in snapshot.categories if c is not Category.UNATTRIBUTED}
        assert measured == dict(naive_context(entries, leaf_id)), snapshot.anchor_id
