"""Claude Code 2.1.3xx's records, read as its 2.1.332 build (2026-11-24) writes them: what
an attachment sent (`rendered`), the attachment types that build knows, and the records
that take context out (`tool_results_cut`, `thinking_stripped`, `whole_texts_withdrawn`,
`content-replacement`). No corpus journal is that new: hand-made records in the build's
shapes (claude_attachments.py says where each rule is in its code), around real lines of
the 2.1.14 journal E4B (lines 4–15: three requests, the first two with thinking, three
results between them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.claude_attachments import CLEARED, REPLACED, rendered_text
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Category, ChangeKind, ContextChange, Session, SourceKind
from rules_spy import Added, record, spy, write
from samples import CLAUDE_E4B

E4B = CLAUDE_E4B
SECOND, THIRD = "msg_01GTU9QuNNKeQ34opArrZDeP", "msg_01WuhMYr3wMcgtbvbQbKgP8Z"
FIRST_THINKING = "ad626925-08c6-4653-b2f6-66cbf356dddd:0"  # line 5, the first response's
LONG, MEDIUM, SHORT = (  # lines 11, 10, 9: results of 24,272, 1,299 and 301 characters
    "toolu_01JuuQJK2qAW2hNXYTGvqLjt",
    "toolu_014ETBnJsKeTM1QRvsvVBqDX",
    "toolu_01FSZwfxXLseUKXbUBeoc4j6",
)
BETWEEN = "2026-01-22T01:41:16.000Z"
PNG = (  # a 1×1 PNG: an image sized from its pixels (images.py)
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)  # after line 11's results, before line 12's response


def _load(tmp_path: Path, records: list[dict[str, Any]]) -> tuple[Session, Diagnostics]:
    diagnostics = Diagnostics()
    result = load([write(tmp_path, records)], diagnostics)
    assert result.failures == []
    (session,) = result.sessions
    return session, diagnostics


def _attachment(uuid: str, attachment: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """An `attachment` record in E4B's envelope, at `BETWEEN`."""
    base = {k: record(E4B, 4)[k] for k in ("sessionId", "cwd", "version")}
    return {
        **base,
        "type": "attachment",
        "uuid": uuid,
        "timestamp": BETWEEN,
        "attachment": attachment,
        **fields,
    }


def _with(*inserted: dict[str, Any], last: int = 15) -> list[dict[str, Any]]:
    """E4B lines 4 to `last`, `inserted` after line 11 (before the second request)."""
    values = [record(E4B, n) for n in range(4, last + 1)]
    return [*values[:8], *inserted, *values[8:]]


def _changes(session: Session, response: str) -> dict[str, ContextChange]:
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == response]
    return {c.id: c for c in snapshot.changes}


def _added(added: list[Added], item_id: str) -> list[tuple[Category, int, str]]:
    return [(a.category, a.chars, a.label) for a in added if a.id == item_id]


def _rendered(*texts: str) -> list[dict[str, Any]]:
    return [{"content": f"<system-reminder>\n{text}\n</system-reminder>"} for text in texts]


# --------------------------------------------------------------------------- rendered


def test_rendered_is_read_as_claude_code_checks_it() -> None:
    """A non-empty list of `{content}`, each a non-empty string or non-empty text blocks;
    anything else is not what Claude Code sends (it renders the attachment again)."""
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    assert rendered_text([{"content": "x"}, {"content": blocks}]) == "x\n\na\n\nb"
    for bad in (
        None,
        [],
        "x",
        [{"content": ""}],
        [{"content": []}],
        [{"content": "x"}, {"content": [{"type": "text", "text": ""}]}],
        [{"content": [{"type": "image", "text": "x"}]}],
        [{"content": [{"type": "text", "text": 3}]}],
        [{"content": ["Today's date is …"]}],
        [{"content": [None]}],
        ["x"],
        [{"text": "x"}],
    ):
        assert rendered_text(bad) is None, bad


def test_an_attachment_is_measured_by_the_text_claude_code_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rendered` is the exact text sent (framing included); without it (an older version)
    the attachment's own fields are read as before; with a `rendered` of the wrong shape
    too (Claude Code renders it again)."""
    added = spy(monkeypatch)
    sent = _rendered("The date has changed. Today's date is now 2026-12-04. No need to say.")
    date = {"type": "date_change", "newDate": "2026-12-04"}
    records = [
        _attachment("d1", date, rendered=sent, renderedRole="system"),
        _attachment("d2", date),
        _attachment("d3", date, rendered=[{"content": ""}]),
    ]
    _load(tmp_path, _with(*records))
    assert _added(added, "attachment:d1") == [
        (Category.ENVIRONMENT, len(sent[0]["content"]), "Date change")
    ]
    assert _added(added, "attachment:d2") == [(Category.ENVIRONMENT, 10, "Date change")]
    assert _added(added, "attachment:d3") == [(Category.ENVIRONMENT, 10, "Date change")]


def test_the_types_of_2_1_3xx_are_known_sent_or_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A type the 2.1.332 build sends is read into its category; one it never sends
    (`goals`) is skipped on purpose; one we do not know is not recognised, unless its
    record carries what was sent: then that is read (Claude Code sends it whatever its
    type), as harness overhead, and said in the notes; a type we skip that carries a
    `rendered` was sent after all."""
    added = spy(monkeypatch)
    env = _rendered("# Environment\nWorking directory: /p")
    records = [
        _attachment("e1", {"type": "environment", "cwd": "/p"}, rendered=env),
        _attachment("g1", {"type": "goals", "goals": ["x"]}),
        _attachment("n1", {"type": "brand_new_kind", "content": "x"}),
        _attachment("n2", {"type": "brand_new_kind"}, rendered=_rendered("hello")),
        _attachment("h1", {"type": "hook_system_message"}, rendered=_rendered("hook said")),
        _attachment("h2", {"type": "hook_system_message", "content": "shown to the user"}),
    ]
    _, diagnostics = _load(tmp_path, _with(*records))
    assert _added(added, "attachment:e1") == [
        (Category.ENVIRONMENT, len(env[0]["content"]), "Environment")
    ]
    assert _added(added, "attachment:g1") == []
    assert diagnostics.skipped["claude:attachment/goals"] == 1
    assert diagnostics.unrecognised["claude:attachment/brand_new_kind"] == 1
    assert _added(added, "attachment:n1") == []
    assert _added(added, "attachment:n2") == [
        (Category.OVERHEAD, len(_rendered("hello")[0]["content"]), "Attachment (type not known)")
    ]
    assert diagnostics.notes == {
        "claude:attachment/brand_new_kind (type not known: its rendered text)": 1
    }
    assert [a.label for a in added if a.id == "hook:h1"] == ["Hook system message"]
    assert [a for a in added if a.id == "hook:h2"] == []
    assert diagnostics.skipped["claude:attachment/hook_system_message"] == 1


def test_an_attachment_sent_without_its_text_in_the_record_is_unmeasured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that is an image carries only `renderedRole` (its message is not text), and
    `poll_events` is rendered at every request, never stored: both are sent, their size
    not in the journal (`unmeasured`), not nothing. A type with neither, from an older
    version, stays as it was (nothing said)."""
    records = [
        _attachment("f1", {"type": "file", "content": {"type": "image"}}, renderedRole="user"),
        _attachment("p1", {"type": "poll_events", "events": [{"from": "s2"}]}),
        _attachment("f2", {"type": "file", "content": {"type": "image"}}),
    ]
    session, _ = _load(tmp_path, _with(*records))
    unmeasured = dict(session.unmeasured)
    assert unmeasured["attachment-file"] == 1
    assert unmeasured["attachment-poll_events"] == 1


def test_a_queued_prompt_counts_what_was_sent_and_stays_the_users_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = spy(monkeypatch)
    framed = (
        "The user sent a new message while you were working:\nand the tests too\n\n"
        "This is how Claude Code surfaces messages typed while you work."
    )
    queued = {"type": "queued_command", "commandMode": "prompt", "prompt": "and the tests too"}
    session, _ = _load(tmp_path, _with(_attachment("q1", queued, rendered=[{"content": framed}])))
    assert _added(added, "queued:q1") == [(Category.PROMPTS, len(framed), "User prompt (queued)")]
    (prompt,) = [p for p in session.prompts if p.id == "q1"]
    assert prompt.chars == len("and the tests too")


# --------------------------------------------------------------------------- taken out


def test_results_cut_are_sent_as_the_stand_in_from_then_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tool_results_cut` before the second request: the long and the medium results are
    sent as the stand-in; the short one is not listed, an id not in the context is passed
    over. A microcompaction of two results at the record's time, where the next request
    starts."""
    added = spy(monkeypatch)
    cut = _attachment(
        "c1",
        {
            "type": "tool_results_cut",
            "callIds": [LONG, MEDIUM, "toolu_not_here"],
            "standIn": CLEARED,
            "roughTokens": 6400,
        },
    )
    session, _ = _load(tmp_path, _with(cut))
    for call in (LONG, MEDIUM):
        assert _added(added, f"result:{call}")[-1] == (
            Category.RESULTS,
            len(CLEARED),
            "Tool result (cleared)",
        )
    assert len(_added(added, f"result:{SHORT}")) == 1
    (compaction,) = session.compactions
    assert (compaction.kind, compaction.removed_items) == ("microcompaction", 2)
    assert compaction.trigger == "tool_results_cut"
    second = next(r for r in session.responses if r.id == SECOND)
    assert second.start_ns == compaction.start_ns == compaction.end_ns
    # What the second request sent: the two results at the stand-in's size, not 6,393
    # tokens (the short result's 76 and the calls' are the same as without the cut).
    assert _results(session, SECOND) == _results(session, "c1") == 76 + 2 * 9
    (tmp_path / "none").mkdir()
    assert _results(_load(tmp_path / "none", _with())[0], SECOND) == 6068 + 325 + 76


def _results(session: Session, anchor: str) -> int:
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == anchor]
    return dict(snapshot.categories)[Category.RESULTS]


def test_a_cut_keeps_an_error_a_short_result_and_draws_nothing_when_it_cut_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code cuts no error's result and none the stand-in is not shorter than; a
    cut of nothing is no microcompaction. A stand-in is written with its cause."""
    added = spy(monkeypatch)
    values = _with(
        _attachment(
            "c1",
            {
                "type": "tool_results_cut",
                "callIds": [LONG, SHORT],
                "standIn": "[Result removed: it no longer applies.]",
                "cause": "withdrawn_by_tool",
            },
        )
    )
    values[5]["message"]["content"][0]["content"] = "ok"  # line 9: SHORT's, shorter still
    values[7]["message"]["content"][0]["is_error"] = True  # line 11: LONG's result
    medium = values[6]["message"]["content"][0]  # line 10: with a document
    document = {"type": "document", "source": {"type": "text", "data": "x"}}
    medium["content"] = [{"type": "text", "text": medium["content"]}, document]
    values[8]["attachment"]["callIds"].append(MEDIUM)
    session, _ = _load(tmp_path, values)
    assert len(_added(added, f"result:{LONG}")) == 1
    assert len(_added(added, f"result:{MEDIUM}")) == 1
    assert len(_added(added, f"result:{SHORT}")) == 1
    assert session.compactions == ()
    # A cause is the microcompaction's trigger.
    values[7]["message"]["content"][0]["is_error"] = False
    (tmp_path / "b").mkdir()
    session, _ = _load(tmp_path / "b", values)
    (compaction,) = session.compactions
    assert (compaction.trigger, compaction.removed_items) == ("withdrawn_by_tool", 1)


SECOND_THINKING = "ec7cd2a4-be26-4b1e-a29b-d868e337b4cd:0"  # line 12, 173 tokens


def _stripped(tmp_path: Path, name: str, attachment: dict[str, Any] | None) -> Session:
    """E4B lines 4–15 with `attachment` after line 14 (before the third request)."""
    values = [record(E4B, n) for n in range(4, 16)]
    if attachment is not None:
        strip = _attachment("t1", attachment, timestamp="2026-01-22T01:41:29.000Z")
        values.insert(11, strip)
    (tmp_path / name).mkdir()
    return _load(tmp_path / name, values)[0]


def _assistant(session: Session, anchor: str) -> int:
    (snapshot,) = [s for s in session.snapshots if s.anchor_id == anchor]
    return dict(snapshot.categories)[Category.ASSISTANT]


def test_a_result_with_images_is_cut_with_them_and_one_without_its_call_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Claude Code cuts a result with images whatever its length (`Yco`), the images going
    with it; it cuts none whose call is not in the history (`c8`)."""
    added = spy(monkeypatch)
    image = {"type": "image", "source": {"type": "base64", "data": PNG}}
    cut = {"type": "tool_results_cut", "callIds": [SHORT, LONG], "standIn": CLEARED}

    def values() -> list[dict[str, Any]]:
        made = _with(_attachment("c1", cut))
        made[5]["message"]["content"][0]["content"] = [{"type": "text", "text": "ok"}, image]
        return made

    with_image = values()
    session, _ = _load(tmp_path, with_image)
    assert _added(added, f"result:{SHORT}")[-1] == (
        Category.RESULTS,
        len(CLEARED),
        "Tool result (cleared)",
    )
    # what the second request sent: the two stand-ins and the medium result, no image
    assert _results(session, SECOND) == 9 + 325 + 9
    without_call = values()
    del without_call[4]  # line 8: SHORT's call (its record holds only it)
    added.clear()
    (tmp_path / "b").mkdir()
    session, _ = _load(tmp_path / "b", without_call)
    assert len(_added(added, f"result:{SHORT}")) == 1
    assert len(_added(added, f"result:{LONG}")) == 2


@pytest.mark.parametrize(
    "odd",
    [
        {"standIn": None},
        {"standIn": ""},
        {"standIn": "x" * 201},
        {"standIn": 7},
        {"standIn": CLEARED, "cause": "other"},
    ],
)
def test_a_cut_claude_code_would_not_apply_cuts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, odd: dict[str, Any]
) -> None:
    """A cut without a stand-in, with an empty one or one over 200 characters, or of a
    cause Claude Code does not know: its request builder passes it over, and so do we
    (said in the notes)."""
    added = spy(monkeypatch)
    cut = {"type": "tool_results_cut", "callIds": [LONG], **odd}
    session, diagnostics = _load(tmp_path, _with(_attachment("c1", cut)))
    assert len(_added(added, f"result:{LONG}")) == 1
    assert session.compactions == ()
    assert diagnostics.notes == {"claude:attachment/tool_results_cut of a shape not applied": 1}


def test_thinking_stripped_takes_the_earlier_responses_thinking_out(tmp_path: Path) -> None:
    """`scope: all`: the thinking of both responses before it leaves; the third request
    sends neither (the first response's leaves the context; the second's, 173 tokens,
    never enters it)."""
    kept = _stripped(tmp_path, "kept", None)
    assert _changes(kept, THIRD)[SECOND_THINKING].change is ChangeKind.ADDED
    first = _changes(kept, SECOND)[FIRST_THINKING].tokens
    session = _stripped(tmp_path, "all", {"type": "thinking_stripped", "scope": "all"})
    removed = _changes(session, THIRD)[FIRST_THINKING]
    assert (removed.change, removed.tokens, removed.delta_tokens) == (
        ChangeKind.REMOVED,
        0,
        -first,
    )
    assert SECOND_THINKING not in _changes(session, THIRD)
    assert _assistant(session, THIRD) == _assistant(kept, THIRD) - first - 173


def test_thinking_stripped_from_a_block_keeps_what_came_before_it(tmp_path: Path) -> None:
    """`partial` from the second response's first thinking block: that block is not sent,
    the first response's stays; a block not found strips all of it, as Claude Code does."""
    kept = _stripped(tmp_path, "kept", None)
    partial = {"type": "thinking_stripped", "scope": "partial"}
    session = _stripped(
        tmp_path, "from", {**partial, "from": {"messageId": SECOND, "thinkingIndex": 0}}
    )
    assert FIRST_THINKING not in _changes(session, THIRD)
    assert _assistant(session, THIRD) == _assistant(kept, THIRD) - 173
    session = _stripped(
        tmp_path, "none", {**partial, "from": {"messageId": SECOND, "thinkingIndex": 1}}
    )
    assert _changes(session, THIRD)[FIRST_THINKING].change is ChangeKind.REMOVED


def test_files_over_the_limit_are_withdrawn_after_a_prompt_too_long(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file attached over the limit, then `whole_texts_withdrawn`: it is sent as its
    stand-in. One attached before a response is not: it was sent and answered."""
    added = spy(monkeypatch)
    stand_in = _rendered("The user @-mentioned big.log (2 MB). It was too large to attach.")
    big = {"type": "file", "filename": "big.log", "overTokenLimit": True}
    whole = _rendered("Result of calling the Read tool:\n" + "line\n" * 4000)
    before = _attachment("f0", big, rendered=whole, renderedWithdrawn=stand_in)
    before["timestamp"] = "2026-01-22T01:41:13.000Z"  # before the first response
    values = [record(E4B, n) for n in range(4, 16)]
    values.insert(1, before)
    values.insert(
        9,
        _attachment("f1", big, rendered=whole, renderedWithdrawn=stand_in),
    )
    values.insert(10, _attachment("w1", {"type": "whole_texts_withdrawn"}))
    _load(tmp_path, values)
    got = _added(added, "attachment:f1")
    assert got == [
        (Category.RESULTS, len(whole[0]["content"]), "Attached file"),
        (Category.RESULTS, len(stand_in[0]["content"]), "Attached file (withdrawn)"),
    ]
    assert len(_added(added, "attachment:f0")) == 1


def _replacement(*entries: dict[str, Any]) -> dict[str, Any]:
    """A `content-replacement` record as 2.1.332 writes it: no uuid, no time."""
    return {
        "type": "content-replacement",
        "sessionId": record(E4B, 4)["sessionId"],
        "replacements": list(entries),
    }


def test_a_result_too_large_is_sent_as_its_preview(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `content-replacement` after its result replaces it; one read before its result
    (the write is not awaited) makes the result enter as the preview; a kind we do not know
    is not recognised. The record has no time, and none is asked of it."""
    added = spy(monkeypatch)
    preview = "<persisted-output>\nOutput too large (24 KB). Full output saved to: x.txt\n"
    values = _with(
        _replacement(
            {"kind": "tool-result", "toolUseId": LONG, "replacement": preview},
            {"kind": "tool-result", "toolUseId": "toolu_01HbTgw4dp9AV44oQGj6PMey"},
            {"kind": "tool-result", "toolUseId": SHORT, "replacement": "short"},
            {"kind": "image-block", "toolUseId": MEDIUM, "replacement": "x"},
        )
    )
    values.insert(5, _replacement({"kind": "tool-result", "toolUseId": MEDIUM, "replacement": "m"}))
    session, diagnostics = _load(tmp_path, values)
    assert _added(added, f"result:{LONG}")[-1] == (Category.RESULTS, len(preview), REPLACED)
    replaced = [a for a in added if a.id == f"result:{LONG}"][-1]
    assert (replaced.source_id, replaced.source_kind) == (LONG, SourceKind.TOOL)
    assert _added(added, f"result:{MEDIUM}") == [(Category.RESULTS, 1, "Tool result")]
    assert _added(added, f"result:{SHORT}")[-1] == (Category.RESULTS, 5, REPLACED)
    assert diagnostics.unrecognised["claude:content-replacement/image-block"] == 1
    assert diagnostics.warning_counts == {}
    # the tool's own result is still what it returned (the call's result size)
    (call,) = [t for t in session.tool_calls if t.call_id == LONG]
    assert call.result_chars == 24272


def test_a_replacement_in_an_agents_file_is_its_threads(tmp_path: Path) -> None:
    """A subagent's file: its records are sidechain records of one agent; a
    `content-replacement` there names no thread (no `isSidechain`) and belongs to the
    file's own one, not to a session of its `sessionId` alone."""
    values = _with(
        _replacement({"kind": "tool-result", "toolUseId": LONG, "replacement": "preview"})
    )
    for value in values:
        if value["type"] != "content-replacement":
            value.update(isSidechain=True, agentId="a1b2c3")
    session, _ = _load(tmp_path, values)
    assert session.agent_id == "a1b2c3"
    assert _results(session, SECOND) == 325 + 76 + 2  # ("preview": 2 tokens)


# --------------------------------------------------------------------------- new records


def test_the_records_of_2_1_3xx_are_known(tmp_path: Path) -> None:
    """Records the 2.1.332 build writes for itself are skipped on purpose, with the others
    of their kind; a voice call's words are the user's, not a typed prompt; a forked
    agent's inherited context is said as unmeasured, with its length."""
    envelope = {k: record(E4B, 4)[k] for k in ("sessionId", "cwd", "version")}
    own = [
        {**envelope, "type": kind, "timestamp": BETWEEN}
        for kind in ("cost-state", "api-request", "api-request-blob", "tools-used")
    ]
    own.append({**envelope, "type": "system", "subtype": "model_fallback", "timestamp": BETWEEN})
    voice = {
        **envelope,
        "type": "system",
        "subtype": "voice_call_talk",
        "uuid": "v1",
        "timestamp": BETWEEN,
        "content": "and check the logs too",
        "origin": {"kind": "voice-call"},
    }
    fork = {
        **envelope,
        "type": "fork-context-ref",
        "agentId": "a1",
        "parentLastUuid": "x",
        "contextLength": 42,
    }
    session, diagnostics = _load(tmp_path, [fork, *_with(*own, voice)])
    assert diagnostics.unrecognised == {}
    for kind in ("cost-state", "api-request", "api-request-blob", "tools-used"):
        assert diagnostics.skipped[f"claude:{kind}"] == 1
    assert diagnostics.skipped["claude:system/model_fallback"] == 1
    # the user's words, not a typed prompt: no prompt span, the request still line 4's
    assert [p.id for p in session.prompts if p.id == "v1"] == []
    assert _changes(session, SECOND)["voice:v1"].category is Category.PROMPTS
    assert dict(session.unmeasured)["inherited-context"] == 1
    assert ("inherited_messages", 42) in session.facts


@pytest.mark.parametrize(
    ("version", "display_only", "sent"),
    [
        ("2.1.14", None, False),  # (E4B's own: every `system` record dropped)
        ("2.1.62", None, False),
        ("2.1.63", None, True),
        ("2.1.319", True, False),
        ("2.1.332", False, True),
    ],
)
def test_a_local_commands_output_is_sent_from_2_1_63(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    version: str,
    display_only: bool | None,
    sent: bool,
) -> None:
    """A slash command's name and output (`system` `local_command`): sent with the next
    request as user text from 2.1.63 on, classified as user text is (its name: harness
    overhead; its output: environment); not when marked `isDisplayOnly` (written from
    2.1.319, whose builds honour it); skipped on purpose otherwise."""
    added = spy(monkeypatch)
    envelope = {k: record(E4B, 4)[k] for k in ("sessionId", "cwd")}
    texts = [
        "<command-name>/cost</command-name>",
        "<local-command-stdout>$0.12</local-command-stdout>",
    ]
    commands = [
        {
            **envelope,
            "type": "system",
            "subtype": "local_command",
            "uuid": f"l{n}",
            "timestamp": BETWEEN,
            "content": text,
            "level": "info",
        }
        for n, text in enumerate(texts)
    ]
    if display_only is not None:
        for command in commands:
            command["isDisplayOnly"] = display_only
    values = _with(*commands)
    for value in values:
        value["version"] = version
    _, diagnostics = _load(tmp_path, values)
    got = [_added(added, f"local:l{n}") for n in range(2)]
    if sent:
        assert got == [
            [(Category.OVERHEAD, len(texts[0]), "Harness wrapper (local command)")],
            [(Category.ENVIRONMENT, len(texts[1]), "Environment (local command)")],
        ]
        assert "claude:system/local_command" not in diagnostics.skipped
    else:
        assert got == [[], []]
        assert diagnostics.skipped["claude:system/local_command"] == 2


def test_a_server_tools_result_ends_its_call_in_the_response(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """2.1.3xx's server tools (web search, the advisor) answer inside the response that
    called them, one block per record: the call ends at its result; a search's hits count
    by title and address (their pages come encrypted: `web-search-pages`), the advisor's
    answer by its text; an error is a failed call; the server's `fallback` block (a model
    switch) is known and says nothing."""
    added = spy(monkeypatch)
    second = [record(E4B, 12), record(E4B, 13)]
    hits = [
        {
            "type": "web_search_result",
            "title": "Perfetto",
            "url": "https://perfetto.dev",
            "encrypted_content": "Eq0x",
            "page_age": None,
        },
        {"type": "web_search_result", "title": "Docs", "url": "https://x.dev/d"},
    ]
    blocks = [
        {
            "type": "server_tool_use",
            "id": "srvtoolu_1",
            "name": "web_search",
            "input": {"query": "q"},
        },
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": hits},
        {"type": "server_tool_use", "id": "srvtoolu_2", "name": "advisor", "input": {}},
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_2",
            "content": {"type": "advisor_result", "text": "Check the lock first."},
        },
        {"type": "server_tool_use", "id": "srvtoolu_3", "name": "advisor", "input": {}},
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_3",
            "content": {"type": "advisor_tool_result_error", "error_code": "unavailable"},
        },
        {"type": "server_tool_use", "id": "srvtoolu_4", "name": "advisor", "input": {}},
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_4",
            "content": {"type": "advisor_redacted_result", "encrypted_content": "Eq0x"},
        },
        {"type": "fallback", "from": {"model": "a"}, "to": {"model": "b"}},
    ]
    records = []
    for n, block in enumerate(blocks):
        one = json.loads(json.dumps(second[0]))
        one["uuid"] = f"s{n}"
        one["timestamp"] = f"2026-01-22T01:41:2{n}.000Z"
        one["message"]["content"] = [block]
        records.append(one)
    session, diagnostics = _load(tmp_path, [*_with(last=11), *records, *second])
    calls = {t.call_id: t for t in session.tool_calls}
    got = [calls[f"srvtoolu_{n}"] for n in (1, 2, 3)]
    assert [(c.end_ns - c.start_ns, c.is_error) for c in got] == [
        (1_000_000_000, False),
        (1_000_000_000, False),
        (1_000_000_000, True),
    ]
    search = "Perfetto\nhttps://perfetto.dev\nDocs\nhttps://x.dev/d"
    assert _added(added, "result:srvtoolu_1") == [(Category.RESULTS, len(search), "Tool result")]
    assert _added(added, "result:srvtoolu_2")[0][1] == len("Check the lock first.")
    assert dict(session.unmeasured)["web-search-pages"] == 1
    assert dict(session.unmeasured)["advisor-redacted"] == 1  # (its answer sent encrypted)
    assert diagnostics.warning_counts == {}


def test_a_second_strip_from_a_block_stripped_already_keeps_what_came_before(
    tmp_path: Path,
) -> None:
    """Two `partial` strips, the second from a block the first stripped: Claude Code finds
    that block in its records (`Xer`) and strips from there, not the whole thinking."""
    kept = _stripped(tmp_path, "kept", None)
    partial = {"type": "thinking_stripped", "scope": "partial"}
    first = {**partial, "from": {"messageId": SECOND, "thinkingIndex": 0}}
    values = [record(E4B, n) for n in range(4, 16)]
    for n, strip in enumerate((first, first)):
        values.insert(11, _attachment(f"t{n}", strip, timestamp="2026-01-22T01:41:29.000Z"))
    session, _ = _load(tmp_path, values)
    assert FIRST_THINKING not in _changes(session, THIRD)
    assert _assistant(session, THIRD) == _assistant(kept, THIRD) - 173


def test_the_advisors_results_leave_with_advisor_stripped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`advisor_stripped`: the advisor's calls and results before it are not sent."""
    template = record(E4B, 12)
    blocks = [
        {"type": "server_tool_use", "id": "srvtoolu_2", "name": "advisor", "input": {}},
        {
            "type": "advisor_tool_result",
            "tool_use_id": "srvtoolu_2",
            "content": {"type": "advisor_result", "text": "Check the lock first. " * 40},
        },
    ]
    records = []
    for n, block in enumerate(blocks):
        one = json.loads(json.dumps(template))
        one.update(uuid=f"s{n}", timestamp=f"2026-01-22T01:41:2{n}.000Z")
        one["message"]["content"] = [block]
        records.append(one)
    strip = _attachment("x1", {"type": "advisor_stripped"}, timestamp="2026-01-22T01:41:29.000Z")
    values = [record(E4B, n) for n in range(4, 16)]
    (tmp_path / "kept").mkdir()
    kept, _ = _load(tmp_path / "kept", [*values[:9], *records, *values[9:]])
    advice = _changes(kept, THIRD)["result:srvtoolu_2"]
    assert (advice.change, advice.tokens) == (ChangeKind.ADDED, 220)
    session, _ = _load(tmp_path, [*values[:9], *records, *values[9:11], strip, *values[11:]])
    changes = _changes(session, THIRD)
    assert "result:srvtoolu_2" not in changes
    assert "call:srvtoolu_2" not in changes
    assert _results(session, THIRD) == _results(kept, THIRD) - 220


def test_a_hooks_output_is_sent_for_three_events_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hook_success` without `rendered`: Claude Code sends a SessionStart,
    UserPromptSubmit or UserPromptExpansion hook's output (2.1.39 and 2.1.332 alike), not
    a PostToolUse hook's."""
    added = spy(monkeypatch)
    records = [
        _attachment(f"h{n}", {"type": "hook_success", "hookEvent": event, "content": "out"})
        for n, event in enumerate(("SessionStart", "PostToolUse", "UserPromptExpansion"))
    ]
    _load(tmp_path, _with(*records))
    assert [len(_added(added, f"hook:h{n}")) for n in range(3)] == [1, 0, 1]


def test_prompts_batched_under_a_first_are_its(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batched queued prompts: the first's `rendered` holds them all, the others say
    `renderedByBatchHead` and are not sent again."""
    added = spy(monkeypatch)
    both = "<system-reminder>\nfirst\n\nsecond\n</system-reminder>"
    head = {"type": "queued_command", "commandMode": "prompt", "prompt": "first"}
    follower = {**head, "prompt": "second", "renderedByBatchHead": True}
    records = [
        _attachment("q1", head, rendered=[{"content": both}]),
        _attachment("q2", follower),
    ]
    session, _ = _load(tmp_path, _with(*records))
    assert _added(added, "queued:q1") == [(Category.PROMPTS, len(both), "User prompt (queued)")]
    assert _added(added, "queued:q2") == []
    assert [p.id for p in session.prompts if p.id.startswith("q")] == ["q1"]


def test_a_local_command_is_judged_by_the_build_that_wrote_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session begun on 2.1.14 and resumed on 2.1.63: its command's output, written by
    the newer build, is sent."""
    added = spy(monkeypatch)
    envelope = {k: record(E4B, 4)[k] for k in ("sessionId", "cwd")}
    command = {
        **envelope,
        "type": "system",
        "subtype": "local_command",
        "uuid": "l0",
        "timestamp": BETWEEN,
        "content": "<local-command-stdout>$0.12</local-command-stdout>",
        "version": "2.1.63",
    }
    _load(tmp_path, _with(command))
    assert [c for c, _, _ in _added(added, "local:l0")] == [Category.ENVIRONMENT]


def test_a_blocks_of_an_unknown_type_in_an_attachment_is_said_with_its_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An attachment's content with a block we do not know (a hook's context, a blocking
    error's): said as an `unknown-block` warning at the record's path:line, the text beside
    it still read; a listing that is no list adds nothing."""
    added = spy(monkeypatch)
    odd = [{"type": "text", "text": "use the lock"}, {"type": "hologram"}]
    records = [
        _attachment("h1", {"type": "hook_additional_context", "content": odd}),
        _attachment("h2", {"type": "hook_blocking_error", "blockingError": 3, "content": odd}),
        _attachment("d1", {"type": "deferred_tools_delta", "addedNames": "Read"}),
    ]
    values = _with(*records)
    path = write(tmp_path, values)
    diagnostics = Diagnostics()
    load([path], diagnostics)
    warned = [str(w) for w in diagnostics.warnings if w.kind == "unknown-block"]
    assert warned == [
        f"{path}:{line}: content block of type 'hologram' not recognised (not read)"
        for line in (9, 10)
    ]
    assert [len(_added(added, f"hook:h{n}")) for n in (1, 2)] == [1, 1]
    assert _added(added, "attachment:d1") == []


def test_a_voice_turn_folded_into_a_queued_message_sends_its_rendered_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `voice_call_talk` with `fold` is sent as the queued message it folds into: its
    `rendered` text, not the bare words."""
    added = spy(monkeypatch)
    envelope = {k: record(E4B, 4)[k] for k in ("sessionId", "cwd", "version")}
    framed = "<system-reminder>\nThe user said on the call: check the logs\n</system-reminder>"
    voice = {
        **envelope,
        "type": "system",
        "subtype": "voice_call_talk",
        "uuid": "v1",
        "timestamp": BETWEEN,
        "content": "check the logs",
        "fold": {"command": {}, "rendered": [{"content": framed}]},
    }
    _load(tmp_path, _with(voice))
    assert _added(added, "voice:v1") == [(Category.PROMPTS, len(framed), "Voice call talk")]


def test_thinking_not_in_the_journal_is_stripped_too(tmp_path: Path) -> None:
    """A thinking block written without its text (2.1.16x: `"thinking": ""` and a
    signature; sized from the response's output) leaves with `thinking_stripped` as one
    with its text does."""
    values = [record(E4B, n) for n in range(4, 16)]
    values[1]["message"]["content"][0].update(thinking="", signature="EqQx")
    for value in values[1:5]:  # (the first response's usage final: its thinking is sized)
        value["message"].update(stop_reason="tool_use")
        value["message"]["usage"]["output_tokens"] = 600
    strip = _attachment("t1", {"type": "thinking_stripped", "scope": "all"})
    strip["timestamp"] = "2026-01-22T01:41:29.000Z"
    session, _ = _load(tmp_path, [*values[:11], strip, *values[11:]])
    removed = _changes(session, THIRD)[FIRST_THINKING]
    assert removed.change is ChangeKind.REMOVED and removed.delta_tokens < -400
