"""What stays in a Codex context, counted independently from the raw rollout (plain `json`,
chars/4 rounded up per item, a `[REDACTED_… len=N]` marker counted as N): the developer
messages after a compaction, redacted tool-call arguments, and the reasoning summaries of
earlier turns (review of 2026-12-04, /work/notes/review-attr.md findings 1, 2 and 4)."""

from __future__ import annotations

import gzip
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.model import AnchorKind, Category, Session, Stage
from rules_spy import record, spy, write
from samples import read
from shared_paths import CORPUS, SHARED_REASON, TESTS

DATA = TESTS / "data" / "journals" / "codex"
PLAIN = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
# localpush 0.104.0 (Codex Desktop, sanitised), 12-54-34: one remote compaction.
DESKTOP = DATA / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
AGENTV_140 = (
    CORPUS / "codex" / "agentv-0.140-0.141" / "agentv-a60726a745-0_v0.140.0_2compactions.jsonl.gz"
)
_MARKER = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+)")


def _lines(path: Path) -> list[dict[str, Any]]:
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _chars(text: str) -> int:
    match = _MARKER.match(text)
    return int(match.group(1)) if match else len(text)


def _tokens(text: str) -> int:
    return math.ceil(_chars(text) / 4)


def _developer_parts(items: list[dict[str, Any]]) -> list[str]:
    return [
        part["text"]
        for item in items
        if item.get("type") == "message" and item.get("role") == "developer"
        for part in item.get("content") or []
        if isinstance(part.get("text"), str)
    ]


def _categories(session: Session, anchor_id: str) -> dict[Category, int]:
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == anchor_id]
    return dict(snapshot.categories)


def _first_after(session: Session, stage_anchor: str) -> str:
    """The id of the first request after the compaction `stage_anchor`."""
    compaction = next(c for c in session.compactions if c.id == stage_anchor)
    return next(r.id for r in session.responses if r.start_ns >= compaction.end_ns)


# -- finding 1: only the base instructions outlive a compaction --------------------------------


def test_a_remote_compaction_keeps_the_base_instructions_not_the_developer_messages() -> None:
    """localpush 12-54: before the compaction (line 1788) the context holds 40 developer
    messages; its replacement history brings back 3 of its own. The first request after it
    (request-185, reported 48,297) holds the base instructions and those 3 only: 3,283 +
    1,461 + 1,671 + 202 = 6,617 tokens of System instructions (22,937 when every developer
    message from before the compaction was kept too), and the last request those and the 5
    developer messages written after the compaction (6,739)."""
    lines = _lines(DESKTOP)
    base = _tokens(lines[0]["payload"]["base_instructions"]["text"])
    at = next(n for n, line in enumerate(lines) if line["type"] == "compacted")
    history = lines[at]["payload"]["replacement_history"]
    replayed = sum(_tokens(text) for text in _developer_parts(history))
    later = [line["payload"] for line in lines[at:] if line["type"] == "response_item"]
    appended = sum(_tokens(text) for text in _developer_parts(later))
    assert (base, replayed, appended) == (3_283, 3_334, 122)
    (session,), _ = read(DESKTOP)
    (compaction,) = session.compactions
    first = _first_after(session, compaction.id)
    assert first == "request-185"
    assert _categories(session, first)[Category.SYSTEM] == base + replayed == 6_617
    assert _categories(session, compaction.id)[Category.SYSTEM] == 6_617
    last = session.responses[-1].id
    assert _categories(session, last)[Category.SYSTEM] == base + replayed + appended == 6_739


@pytest.mark.skipif(not AGENTV_140.is_file(), reason=SHARED_REASON)
def test_two_remote_compactions_do_not_count_the_developer_message_again() -> None:
    """agentv 0.140: the base instructions (5,334) and the `<apps_instructions>` part of the
    developer message (162; its other parts are environment and skills) before, between and
    after its two compactions: 5,496 throughout (5,658 and 5,820 when each compaction's
    copy was counted beside the one before)."""
    lines = _lines(AGENTV_140)
    base = _tokens(lines[0]["payload"]["base_instructions"]["text"])
    compacted = [line["payload"] for line in lines if line["type"] == "compacted"]
    assert len(compacted) == 2
    for payload in compacted:
        parts = _developer_parts(payload["replacement_history"])
        assert [_tokens(t) for t in parts if t.startswith("<apps_instructions>")] == [162]
    (session,), _ = read(AGENTV_140)
    systems = {dict(s.categories).get(Category.SYSTEM) for s in session.snapshots}
    assert systems == {base + 162} == {5_496}


def _message(role: str, *texts: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {
        "type": "message",
        "role": role,
        "content": [{"type": kind, "text": text} for text in texts],
    }


def _line(source: dict[str, Any], payload: dict[str, Any], kind: str = "response_item") -> Any:
    return {"timestamp": source["timestamp"], "type": kind, "payload": payload}


def _compacting_rollout(tmp_path: Path, compacted: dict[str, Any]) -> Session:
    """The first turn of the plain rollout (lines 1–12, 16, 17: its initial context, prompt,
    a call and the answer), then a second turn whose context updates are a developer
    message (System) and an environment block, then `compacted` and a request after it."""
    first = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 16, 17, 18)]
    later = record(PLAIN, 22)
    second = [
        _line(later, _message("developer", "The model changed to gpt-5.5." * 4)),
        _line(later, _message("user", "<environment_context>/tmp</environment_context>")),
        record(PLAIN, 22),
        record(PLAIN, 23),
        record(PLAIN, 26),
        record(PLAIN, 28),
    ]
    after = [_line(record(PLAIN, 29), compacted, "compacted"), record(PLAIN, 30), record(PLAIN, 31)]
    (session,), _ = read(write(tmp_path, [*first, *second, *after]))
    return session


def _post(session: Session) -> dict[Category, int]:
    (post,) = [s for s in session.snapshots if s.stage is Stage.POST_COMPACTION]
    return dict(post.categories)


def test_a_rebuilt_history_keeps_the_initial_context_once_and_drops_later_updates(
    tmp_path: Path,
) -> None:
    """An older build's `compacted` line (a summary, no replacement history): codex-rs
    rebuilt the history as `build_compacted_history(initial_context, user_messages,
    summary)`. So the blocks written before the first prompt (permissions, collaboration
    mode, skills, plugins, AGENTS.md, environment) stay, with the prompts and the summary;
    the developer message and the environment block of the second turn leave with the
    assistant's items and the tool results."""
    session = _compacting_rollout(tmp_path, {"message": "Summary of the work so far"})
    head = dict(session.snapshots[0].categories)
    post = _post(session)
    base = _tokens(record(PLAIN, 1)["payload"]["base_instructions"]["text"])
    # the initial context as at the first request: none of it is counted twice
    for category in (Category.RULES, Category.SKILLS, Category.ENVIRONMENT):
        assert post[category] == head[category]
    assert post[Category.SYSTEM] == base  # the second turn's developer message left
    assert post[Category.PROMPTS] == _tokens("show tools") + _tokens(
        record(PLAIN, 22)["payload"]["content"][0]["text"]
    )
    assert post[Category.SUMMARIES] == _tokens("Summary of the work so far")
    assert Category.ASSISTANT not in post and Category.RESULTS not in post
    (compaction,) = session.compactions
    # the call, its output, the two answers and the two updates (the first turn's
    # encrypted reasoning left at the second prompt)
    assert compaction.removed_items == 6


def test_a_replacement_history_brings_its_own_developer_messages(tmp_path: Path) -> None:
    """A remote compaction's replacement history is the entire new history: the initial
    context and the developer message from before it leave (they come back only as the
    history's own items), the base instructions stay."""
    history = [
        _message("developer", "You are a careful engineer. " * 8),
        _message("user", "<environment_context><cwd>/srv</cwd></environment_context>"),
        _message("user", "show tools"),
        {"type": "compaction", "encrypted_content": "gAAAA"},
    ]
    session = _compacting_rollout(tmp_path, {"message": "", "replacement_history": history})
    post = _post(session)
    base = _tokens(record(PLAIN, 1)["payload"]["base_instructions"]["text"])
    assert post[Category.SYSTEM] == base + _tokens("You are a careful engineer. " * 8)
    assert post[Category.ENVIRONMENT] == _tokens(
        "<environment_context><cwd>/srv</cwd></environment_context>"
    )
    assert post[Category.PROMPTS] == _tokens("show tools")
    assert Category.SKILLS not in post and Category.RULES not in post
    response = next(s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE)
    assert dict(response.categories)[Category.SKILLS] > 0  # there before the compaction


# -- finding 2: a redacted call is measured by its markers' lengths ----------------------------


def _call_chars(payload: dict[str, Any]) -> int:
    """A call's name and arguments (or custom tool input), each marker counted as its N."""
    value = payload.get("arguments", payload.get("input"))
    return _chars(payload["name"]) + _chars(value)


def _usage_lines(lines: list[dict[str, Any]]) -> list[int]:
    """The index of each request's token_count: distinct totals (Desktop 0.104 writes each
    twice), with usage."""
    found, previous = [], None
    for n, line in enumerate(lines):
        payload = line["payload"]
        if line["type"] != "event_msg" or payload.get("type") != "token_count":
            continue
        info = payload.get("info")
        if not info or json.dumps(info["total_token_usage"]) == previous:
            continue
        previous = json.dumps(info["total_token_usage"])
        if info["last_token_usage"]["input_tokens"]:
            found.append(n)
    return found


def test_redacted_call_arguments_are_measured_by_their_stated_length(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """localpush 12-54 writes every call's arguments as `[REDACTED_ARGUMENTS len=N …]` and
    every apply_patch input as `[REDACTED_INPUT len=N …]` (5 calls have a redacted name
    too). Line 427's exec_command call is 12 + 10,623 characters: 2,659 tokens, not the 14
    of its name and marker; the 252 calls in the context at request-181 (those before
    request 180's token_count: no compaction comes before request-185) total 35,963
    tokens (3,584 when each was measured as its marker), each labelled as measured from a
    redaction marker."""
    lines = _lines(DESKTOP)
    calls = {
        f"call:{line['payload']['call_id']}": (n, line["payload"])
        for n, line in enumerate(lines)
        if line["type"] == "response_item"
        and line["payload"].get("type") in ("function_call", "custom_tool_call")
    }
    assert sum(1 for _, p in calls.values() if "[REDACTED_INPUT" in p.get("input", "")) == 49
    big = calls["call:call_8TPxlf1FSDx5wmF0q5fZq2Wt"][1]
    assert (big["name"], _call_chars(big)) == ("exec_command", 12 + 10_623)
    before = _usage_lines(lines)[179]  # request 180's token_count
    expected = {k: _call_chars(p) for k, (n, p) in calls.items() if n < before}
    assert len(expected) == 252
    added = spy(monkeypatch)
    (session,), _ = read(DESKTOP)
    got = {a.id: a for a in added if a.id.startswith("call:")}
    assert {k: got[k].chars for k in expected} == expected
    assert sum(got[k].tokens for k in expected) == 35_963
    assert {got[k].label for k in got} == {"Tool arguments (length from a redaction marker)"}
    assert (
        got["call:call_8TPxlf1FSDx5wmF0q5fZq2Wt"].chars,
        got["call:call_8TPxlf1FSDx5wmF0q5fZq2Wt"].tokens,
    ) == (
        10_635,
        2_659,
    )
    # the tool call's argument size is the stated one, as in the context
    (call,) = [t for t in session.tool_calls if t.call_id == "call_8TPxlf1FSDx5wmF0q5fZq2Wt"]
    assert call.arg_bytes == 10_623
    # each redacted call is one more redacted item (the 5 with a redacted name were counted)
    assert dict(session.facts)["redacted_items"] == 989 + 365 - 5


def test_each_part_of_a_call_counts_as_its_marker_or_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 9 of the plain rollout (an exec_command call) four ways: as it is (its text),
    its arguments redacted, its name redacted beside plain arguments, and an apply_patch
    whose input is redacted. A marker counts as its N wherever it stands; only the items
    with one are labelled as measured from a redaction marker and counted as redacted."""
    plain = record(PLAIN, 9)
    arguments = plain["payload"]["arguments"]

    def call(call_id: str, **payload: Any) -> dict[str, Any]:
        return {**plain, "payload": {**plain["payload"], "call_id": call_id, **payload}}

    lines = [
        record(PLAIN, 1),
        record(PLAIN, 6),
        call("c-plain"),
        call("c-args", arguments="[REDACTED_ARGUMENTS len=10623 sha=56293061]"),
        call("c-name", name="[REDACTED_NAME len=41 sha=6507ee77]"),
        {
            **plain,
            "payload": {
                "type": "custom_tool_call",
                "call_id": "c-patch",
                "name": "apply_patch",
                "input": "[REDACTED_INPUT len=2571 sha=adb0568c]",
            },
        },
    ]
    added = spy(monkeypatch)
    (session,), _ = read(write(tmp_path, lines))
    got = {a.id: (a.chars, a.tokens, a.label) for a in added if a.id.startswith("call:")}
    marker = "Tool arguments (length from a redaction marker)"
    assert got == {
        "call:c-plain": (
            12 + len(arguments),
            math.ceil((12 + len(arguments)) / 4),
            "Tool arguments",
        ),
        "call:c-args": (12 + 10_623, 2_659, marker),
        "call:c-name": (41 + len(arguments), math.ceil((41 + len(arguments)) / 4), marker),
        "call:c-patch": (11 + 2_571, 646, marker),
    }
    sizes = {t.call_id: t.arg_bytes for t in session.tool_calls}
    assert sizes == {
        "c-plain": len(arguments),
        "c-args": 10_623,
        "c-name": len(arguments),
        "c-patch": 2_571,
    }
    assert dict(session.facts)["redacted_items"] == 3  # the three calls with a marker


# -- finding 4: a reasoning item's summary leaves with it ---------------------------------------

_OUTPUTS = ("reasoning", "function_call", "custom_tool_call", "web_search_call")


def _summary_tokens(payload: dict[str, Any]) -> list[int]:
    return [_tokens(part["text"]) for part in payload.get("summary") or []]


def test_the_summaries_of_earlier_turns_leave_at_the_next_prompt() -> None:
    """localpush 12-54 writes a summary with its reasoning items. The API keeps reasoning
    items only since the last user message, so the encrypted part leaves at each prompt,
    and the summary, part of the same item, with it: at request-184 (line 1783; its last
    user prompt is lines 1733-1734) the 3 summaries of the current turn are in the context
    (27 tokens), not the 138 of earlier turns (1,358 tokens more, growing each turn)."""
    lines = _lines(DESKTOP)
    before = _usage_lines(lines)[182]  # request 183's token_count
    start = next(
        n
        for n in range(before + 1, len(lines))
        if lines[n]["type"] == "response_item"
        and (
            lines[n]["payload"].get("type") in _OUTPUTS
            or lines[n]["payload"].get("role") == "assistant"
        )
    )
    prompt = max(
        n
        for n in range(start)
        if lines[n]["type"] == "event_msg" and lines[n]["payload"].get("type") == "user_message"
    )
    assert (prompt + 1, start + 1) == (1734, 1783)  # line numbers from 1
    reasoning = [
        (n, _summary_tokens(line["payload"]))
        for n, line in enumerate(lines[:start])
        if line["type"] == "response_item" and line["payload"].get("type") == "reasoning"
    ]
    current = [t for n, parts in reasoning if n > prompt for t in parts]
    earlier = [t for n, parts in reasoning if n < prompt for t in parts]
    assert (len(current), sum(current), len(earlier), sum(earlier)) == (3, 27, 138, 1_358)
    (session,), _ = read(DESKTOP)
    # Assistant history at request-184, counted independently: 1,358 tokens less than with
    # the earlier turns' summaries
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == "request-184"]
    assert dict(snapshot.categories)[Category.ASSISTANT] == _assistant_at(lines, start, prompt)


def _assistant_at(lines: list[dict[str, Any]], start: int, prompt: int) -> int:
    """Assistant history before line `start` (no compaction before it): every assistant
    message, call and summary part, each summary part only after the last prompt, and the
    encrypted reasoning of the current turn's requests (their reasoning_output_tokens)."""
    total = 0
    usage = _usage_lines(lines)
    for n, line in enumerate(lines[:start]):
        payload = line["payload"]
        if line["type"] != "response_item":
            continue
        kind = payload.get("type")
        if kind == "message" and payload.get("role") == "assistant":
            total += sum(_tokens(part["text"]) for part in payload["content"])
        elif kind in ("function_call", "custom_tool_call"):
            total += math.ceil(_call_chars(payload) / 4)
        elif kind == "reasoning" and n > prompt:
            total += sum(_summary_tokens(payload))
            following = next(u for u in usage if u > n)
            info = lines[following]["payload"]["info"]["last_token_usage"]
            total += info["reasoning_output_tokens"]
    return total


def test_a_reasoning_items_summary_and_text_leave_with_it(tmp_path: Path) -> None:
    """Three turns of the plain rollout: turn 1 (lines 1–18), turn 2 (lines 20–31, two
    requests) and a third prompt, each reasoning item given a summary, the second also raw
    text (open models). At the second prompt the first turn's summary leaves with its
    encrypted reasoning; the second turn's stays for the turn's next request, and leaves,
    its text with it, at the third prompt."""

    def reasoning(source: int, summary: str, text: str = "") -> dict[str, Any]:
        line = record(PLAIN, source)
        line["payload"]["summary"] = [{"type": "summary_text", "text": summary}]
        if text:
            line["payload"]["content"] = [{"type": "reasoning_text", "text": text}]
        return line

    first = reasoning(8, "**Listing tools** " * 5)
    second = reasoning(24, "**Updating** " * 7, "Think about the context window." * 3)
    third = record(PLAIN, 32)["timestamp"]
    lines = [record(PLAIN, n) for n in (1, 2, 3, 4, 5, 6, 7)]
    lines += [first] + [record(PLAIN, n) for n in (9, 10, 11, 12, 16, 17, 18)]
    lines += [record(PLAIN, n) for n in (20, 22, 23)] + [second]
    lines += [record(PLAIN, n) for n in (26, 27, 28, 29, 30, 31)]
    lines += [{**_line(record(PLAIN, 32), _message("user", "next"))}]
    lines += [{**record(PLAIN, 23), "timestamp": third}, record(PLAIN, 35), record(PLAIN, 36)]
    (session,), _ = read(write(tmp_path, lines))
    changes = {
        s.anchor_id: {(c.id, c.label, c.change.value) for c in s.changes if "reasoning" in c.id}
        for s in session.snapshots
    }
    summary, text = "Reasoning summary", "Reasoning"
    encrypted = "Reasoning (encrypted) (estimate: reasoning-output-tokens)"
    # the first turn's second request: the first reasoning item is in the context
    assert changes["request-2"] == {
        ("item-reasoning:8:0", summary, "added"),
        ("reasoning-hidden:9", encrypted, "added"),
    }
    # the second prompt: that item leaves, its summary with it
    assert changes["request-3"] == {
        ("item-reasoning:8:0", summary, "removed"),
        ("reasoning-hidden:9", encrypted, "removed"),
    }
    # the second turn's next request: its reasoning item (summary and text) is there
    assert changes["request-4"] == {
        ("item-reasoning:12:0", summary, "added"),
        ("item-reasoning-text:13:0", text, "added"),
    }
    # the third prompt: it leaves
    assert changes["request-5"] == {
        ("item-reasoning:12:0", summary, "removed"),
        ("item-reasoning-text:13:0", text, "removed"),
    }


def test_a_replacement_historys_tool_output_is_as_sent_already(tmp_path: Path) -> None:
    """A replacement history holds the history as it was sent, tool outputs truncated
    already (codex-rs keeps them so): an output there is measured whole, not cut again to
    the turn's policy (the plain rollout's tokens 10000: 48,000 bytes)."""
    output = "x" * 60_000
    history = [
        _message("user", "show tools"),
        {"type": "function_call_output", "call_id": "call_old", "output": output},
    ]
    session = _compacting_rollout(tmp_path, {"message": "", "replacement_history": history})
    assert _post(session)[Category.RESULTS] == _tokens(output)
