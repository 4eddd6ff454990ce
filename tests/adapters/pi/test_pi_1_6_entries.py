"""Pi 1.6's new entries (earendil-works/pi 1.6.0, session-manager.ts), hand-made in the
shapes the source writes (no journal of the corpus is that new).

`usage {kind, provider, model, usage}`: a request outside the conversation (the cache
warmer's `cache_warm`, cache-warmer.ts), billed and sized as any request.

`context_edit` entries (session-manager.ts:
`ContextEditEntry {targetId, replacement: {content} | null}`, `buildSessionProjection`):
from the edit on, its branch sends the target without its content (null) or with the
replacement; the latest edit of a target among the context's entries is in force. Pi
writes them itself when it retries an attempt that failed or ran out of tokens (the
attempt and its results leave, agent-session.ts `_omitRecoveryAttempt`), extensions
too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_pi import Journal, read, snapshot_of, tokens, trace_of

from agent_profiler.adapters import pi_records
from agent_profiler.estimate import tool_call_text
from agent_profiler.model import Category, ChangeKind

BIG = "x" * 40_000


def _edit(j: Journal, parent: str, target: str, content: Any = None) -> str:
    replacement = None if content is None else {"content": content}
    return j.entry("context_edit", parent, targetId=target, replacement=replacement)


def _truncated_attempt(j: Journal) -> tuple[str, str, str]:
    """A prompt, an answer that ran out of tokens after a call, and the call's result."""
    u1 = j.user(None, "read big.txt")
    a1 = j.assistant(u1, "reading", 5_000, stop="length", calls=(("c1", "read"),))
    r1 = j.result(a1, "c1", BIG)
    return u1, a1, r1


def test_pi_taking_an_attempt_and_its_result_out_leaves_the_prompt(tmp_path: Path) -> None:
    """A truncated attempt and its result, each taken out (`replacement: null`), then the
    retry: its context is the attempt's, the prompt only; neither comes in."""
    j = Journal()
    _, a1, r1 = _truncated_attempt(j)
    e1 = _edit(j, r1, a1)
    e2 = _edit(j, e1, r1)
    a2 = j.assistant(e2, "done", 5_010)
    session, _, diagnostics = read(j.write(tmp_path / "edits.jsonl"))
    assert (diagnostics.warning_total, diagnostics.unrecognised_total) == (0, 0)
    assert [r.id for r in session.responses] == [a1, a2]
    last = snapshot_of(session, a2)
    assert dict(last.categories).get(Category.RESULTS) is None
    assert dict(last.categories)[Category.PROMPTS] == tokens("read big.txt")
    assert last.changes == ()  # (without the edits: a1's text and call, r1's result added)


def test_a_replacement_is_measured_in_its_targets_place(tmp_path: Path) -> None:
    j = Journal()
    _, _, r1 = _truncated_attempt(j)
    a2 = j.assistant(r1, "it is big", 15_000)
    edit = _edit(j, a2, r1, [{"type": "text", "text": "[40,000 x's]"}])
    u3 = j.user(edit, "and now?")
    a3 = j.assistant(u3, "ok", 5_030)
    session, _, _ = read(j.write(tmp_path / "replaced.jsonl"))
    assert dict(snapshot_of(session, a2).categories)[Category.RESULTS] == tokens(BIG)
    last = snapshot_of(session, a3)
    assert dict(last.categories)[Category.RESULTS] == tokens("[40,000 x's]")
    changes = {c.id: c for c in last.changes}
    assert changes[f"{r1}:result"].change is ChangeKind.REMOVED
    added = changes[f"{edit}:edit"]
    assert (added.change, added.label, added.source_id) == (
        ChangeKind.ADDED,
        "Tool result (edited)",
        "c1",
    )


def test_the_latest_edit_of_an_entry_is_in_force(tmp_path: Path) -> None:
    """Two edits of one result: a replacement, then out; and the other way round."""
    for later, size in ((None, None), ([{"type": "text", "text": "short"}], tokens("short"))):
        j = Journal()
        r1 = _truncated_attempt(j)[2]
        first = [{"type": "text", "text": "short"}] if later is None else None
        e1 = _edit(j, r1, r1, first)
        e2 = _edit(j, e1, r1, later)
        a2 = j.assistant(e2, "done", 5_020)
        session, _, _ = read(j.write(tmp_path / f"twice-{size}.jsonl"))
        assert dict(snapshot_of(session, a2).categories).get(Category.RESULTS) == size, later


def test_an_edit_holds_on_its_own_branch_only(tmp_path: Path) -> None:
    """The edit is on one branch; the user goes back to the result and asks again on
    another, without it: the result is in that branch's context again."""
    j = Journal()
    _, _, r1 = _truncated_attempt(j)
    edit = _edit(j, r1, r1)
    a2 = j.assistant(edit, "retried", 5_010)
    u3 = j.user(r1, "what was in it?")  # a child of the result: the edit is off the branch
    a3 = j.assistant(u3, "x's", 15_020)
    session, _, _ = read(j.write(tmp_path / "branches.jsonl"))
    assert dict(snapshot_of(session, a2).categories).get(Category.RESULTS) is None
    back = snapshot_of(session, a3)
    assert dict(back.categories)[Category.RESULTS] == tokens(BIG)
    assert {c.id: c.change for c in back.changes}[f"{r1}:result"] is ChangeKind.ADDED


def test_an_edit_of_no_earlier_entry_is_said_and_changes_nothing(tmp_path: Path) -> None:
    j = Journal()
    _, _, r1 = _truncated_attempt(j)
    edit = _edit(j, r1, "no-such-entry")
    a2 = j.assistant(edit, "done", 15_010)
    session, _, diagnostics = read(j.write(tmp_path / "dangling.jsonl"))
    assert [w.message for w in diagnostics.warnings] == [
        "context_edit of no earlier entry; not read"
    ]
    assert dict(snapshot_of(session, a2).categories)[Category.RESULTS] == tokens(BIG)


def test_an_answer_replaced_is_measured_with_its_calls_thinking_and_images(
    tmp_path: Path,
) -> None:
    """An assistant message's replacement holds text, thinking and a call (as Pi measures
    an answer: each block's text, a call as its name and arguments); an image in it is
    listed as unmeasured."""
    j = Journal()
    _, a1, r1 = _truncated_attempt(j)
    call = {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}}
    content = [
        {"type": "text", "text": "short"},
        {"type": "thinking", "thinking": "hmm"},
        call,
        {"type": "image", "data": "AAAA", "mimeType": "image/png"},
    ]
    edit = _edit(j, r1, a1, content)
    a2 = j.assistant(edit, "done", 15_010)
    session, _, _ = read(j.write(tmp_path / "answer.jsonl"))
    text = "short" + "hmm" + tool_call_text("read", {"path": "a"})
    (edited,) = [c for c in snapshot_of(session, a2).changes if c.id == f"{edit}:edit"]
    assert (edited.category, edited.tokens, edited.label) == (
        Category.ASSISTANT,
        tokens(text),
        "Assistant text (edited)",
    )
    assert dict(session.unmeasured).get("image") == 1


def test_a_cache_warm_is_a_request_of_the_last_requests_context(tmp_path: Path) -> None:
    """After an answer and a tool's result the cache warmer re-sent the last request's
    context as it was sent (a `usage` entry, kind `cache_warm`): a request at its time, its
    size from its usage, its stop reason its kind, and the context of that request: not
    the answer, the call or the result that came after it."""
    j = Journal()
    u1 = j.user(None, "hello")
    a1 = j.assistant(u1, "let me look", 5_000, calls=(("c1", "read"),))
    r1 = j.result(a1, "c1", BIG)
    usage = {"input": 3, "output": 1, "cacheRead": 5_020, "cacheWrite": 0}
    usage["cost"] = {"total": 0.0026}
    warm = j.entry("usage", r1, provider="anthropic", model="m1", usage=usage)
    j.lines[-1]["kind"] = "cache_warm"  # (`kind` is the helper's own argument)
    a2 = j.assistant(warm, "it is big", 15_040)
    session, _, diagnostics = read(j.write(tmp_path / "warm.jsonl"))
    assert (diagnostics.warning_total, diagnostics.unrecognised_total) == (0, 0)
    assert [r.id for r in session.responses] == [a1, warm, a2]
    request = session.responses[1]
    assert (request.stop_reason, request.usage.prompt_tokens, request.recorded_usd) == (
        "cache_warm",
        5_023,
        0.0026,
    )
    assert request.start_ns == request.end_ns
    before, sent = snapshot_of(session, a1), snapshot_of(session, warm)
    assert (sent.changes, sent.categories) == ((), before.categories)
    after = {c.id for c in snapshot_of(session, a2).changes}
    assert after == {f"{a1}:0", f"{a1}:1", f"{r1}:result"}  # (all new to the next request)


def test_an_edit_of_what_pi_does_not_edit_is_said_and_not_read(tmp_path: Path) -> None:
    """Pi edits a message or an extension's message only (appendContextEdit refuses the
    rest): an edit of an edit, or of a branch summary, is no edit of Pi's, said with its
    place and not read; the edit it names stays in force."""
    j = Journal()
    _, a1, r1 = _truncated_attempt(j)
    first = _edit(j, r1, r1, [{"type": "text", "text": "short"}])
    second = _edit(j, first, first, [{"type": "text", "text": "y" * 800}])
    summary = j.entry("branch_summary", second, fromId=a1, summary="tried it")
    third = _edit(j, summary, summary, None)
    a2 = j.assistant(third, "done", 5_020)
    session, _, diagnostics = read(j.write(tmp_path / "not-pi.jsonl"))
    assert [(w.line, w.message) for w in diagnostics.warnings] == [
        (6, "context_edit of a context_edit entry, which Pi does not edit; not read"),
        (8, "context_edit of a branch_summary entry, which Pi does not edit; not read"),
    ]
    categories = dict(snapshot_of(session, a2).categories)
    assert (categories[Category.RESULTS], categories[Category.SUMMARIES]) == (
        tokens("short"),
        tokens(pi_records.BRANCH_PREFIX + "tried it" + pi_records.BRANCH_SUFFIX),
    )


def test_a_prompt_of_images_replaced_by_text_is_that_text(tmp_path: Path) -> None:
    """A prompt of an image only (no text to measure, the image unmeasured), replaced by
    an extension with a description: the description is the prompt Pi sends."""
    j = Journal()
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    prompt = j.entry("message", None, message={"role": "user", "content": [image]})
    a1 = j.assistant(prompt, "a cat", 5_000)
    edit = _edit(j, a1, prompt, "a photo of a cat")
    u2 = j.user(edit, "what breed?")
    a2 = j.assistant(u2, "tabby", 5_020)
    session, _, _ = read(j.write(tmp_path / "image.jsonl"))
    assert Category.PROMPTS not in dict(snapshot_of(session, a1).categories)
    (edited,) = [c for c in snapshot_of(session, a2).changes if c.id == f"{edit}:edit"]
    assert (edited.category, edited.tokens, edited.label) == (
        Category.PROMPTS,
        tokens("a photo of a cat"),
        "User prompt (edited)",
    )


def test_a_compactions_summariser_usage_is_its_request(tmp_path: Path) -> None:
    """1.6 records the usage of the calls that wrote a compaction's summary: the
    compaction's request, over the compaction's span, costed as the journal says; the
    entry names no model. A compaction without usage has none."""
    j = Journal()
    u1 = j.user(None, "question")
    a1 = j.assistant(u1, "answer", 2_000)
    usage = {"input": 1_800, "output": 120, "cacheRead": 200, "cacheWrite": 0}
    usage["cost"] = {"total": 0.011}
    first = j.entry("compaction", a1, summary="asked", firstKeptEntryId=u1, tokensBefore=2_005)
    j.lines[-1]["usage"] = usage
    u2 = j.user(first, "more")
    a2 = j.assistant(u2, "more", 700)
    j.entry("compaction", a2, summary="all", firstKeptEntryId=u2, tokensBefore=900)
    session, _, _ = read(j.write(tmp_path / "summarised.jsonl"))
    with_usage, without = session.compactions
    request = with_usage.request
    assert request is not None and without.request is None
    assert (request.id, request.model, request.recorded_usd) == (f"{first}:summary", "", 0.011)
    assert (request.usage.prompt_tokens, request.usage.output_tokens) == (2_000, 120)
    assert (request.start_ns, request.end_ns) == (with_usage.start_ns, with_usage.end_ns)
    # drawn on the compaction's track, its tokens in the counters (the contract checked)
    (drawn,) = trace_of(session).slices_of_kind("compaction-response")
    assert (drawn.args["input_tokens"], drawn.args["output_tokens"]) == (1_800, 120)
