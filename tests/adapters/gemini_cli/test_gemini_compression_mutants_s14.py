"""Tests that kill the survivors of `gemini_compression.py`'s sample (mutation round 3,
fourteenth session; tests/mutation-survivors.md). Gemini CLI's split rule
(`findCompressSplitPoint`) weighs each Content by the length of its `JSON.stringify`: each
recorded turn is rebuilt as the Contents it was sent as, and their sizes here are those of
the JSON Gemini CLI would have measured, written out by hand."""

from __future__ import annotations

import json
from typing import Any

from agent_profiler.adapters.gemini_compression import _contents, kept_from

RESULT = {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "ok"}}}
CALL = {"id": "c1", "name": "read_file", "args": {"path": "a"}, "result": [RESULT]}


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _gemini(content: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "gemini", "content": content, "toolCalls": calls}


def test_a_typed_prompt_is_one_user_content_and_a_split_may_fall_before_it() -> None:
    sent = '{"role":"user","parts":[{"text":"Fix the bug."}]}'
    assert _contents({"type": "user", "content": "Fix the bug."}) == [(True, len(sent), False)]


def test_a_user_turn_of_function_responses_is_no_split_point() -> None:
    """A user Content holding tool results: the split never falls before it (it must stay
    after the model turn that called)."""
    sent = '{"role":"user","parts":[' + _json(RESULT) + "]}"
    assert _contents({"type": "user", "content": [RESULT]}) == [(False, len(sent), False)]


def test_a_model_turn_with_calls_is_its_text_and_calls_then_their_results() -> None:
    said = (
        '{"role":"model","parts":[{"text":"Reading."},'
        '{"functionCall":{"name":"read_file","args":{"path":"a"}}}]}'
    )
    results = '{"role":"user","parts":[' + _json(RESULT) + "]}"
    assert _contents(_gemini("Reading.", [CALL])) == [
        (False, len(said), False),
        (False, len(results), False),
    ]


def test_a_model_turn_without_text_or_calls_sends_nothing() -> None:
    assert _contents(_gemini("", [])) == []
    assert _contents({"type": "info", "content": "Request cancelled."}) == []


def test_without_a_split_point_after_the_target_the_last_one_before_it_is_kept() -> None:
    """A short exchange, a long prompt, then a model turn with a call and its result (the
    history ends in a tool result, not in a model answer): no split point after 70%, so the
    compressed prompt keeps the history from the last split point there was, the long
    prompt."""
    turns = [
        ("u0", {"type": "user", "content": "Hi."}),
        ("g0", _gemini("Hello.", [])),
        ("u1", {"type": "user", "content": "x" * 10_000}),
        ("g1", _gemini("", [CALL])),
    ]
    assert kept_from(turns) == "u1"
