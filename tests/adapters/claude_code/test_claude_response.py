"""One response's usage as its records are merged (`claude_response.ResponseDraft`): max per
field, the keys that are not token counts returned for the reader's one `bad-usage` warning
(found in the same pass as the merge), and which merged usage is a request."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.claude_code import read_transcript
from agent_profiler.adapters.claude_response import ResponseDraft
from agent_profiler.attribution import Logged
from agent_profiler.diagnostics import Diagnostics
from samples import read_single

BAD = {
    "input_tokens": "5",
    "cache_creation_input_tokens": -3,
    "cache_read_input_tokens": 1.5,
    "output_tokens": True,
}


def _draft() -> ResponseDraft:
    return ResponseDraft("m", 0, 0, "claude-x", None, Logged(0))


def test_usage_merges_per_field_with_max() -> None:
    draft = _draft()
    assert draft.merge_usage({"input_tokens": 5, "output_tokens": 2}) == ()
    assert draft.merge_usage({"input_tokens": 3, "output_tokens": 7}) == ()
    assert draft.usage == {"input_tokens": 5, "output_tokens": 7}
    assert draft.is_request and draft.prompt_tokens == 5


def test_every_count_merges_with_max() -> None:
    """Each of the four counts keeps its largest: a later record's smaller cache counts
    (a streaming snapshot) change nothing."""
    draft = _draft()
    assert draft.merge_usage(VALID) == ()
    smaller = {key: value // 2 for key, value in VALID.items()}
    assert draft.merge_usage(smaller) == ()
    assert draft.usage == VALID


def test_a_smaller_or_zero_count_is_not_a_bad_count() -> None:
    draft = _draft()
    assert draft.merge_usage({"input_tokens": 20}) == ()
    usage = {"input_tokens": 10, "output_tokens": 0, "cache_read_input_tokens": 0.0}
    assert draft.merge_usage(usage) == ()
    assert draft.merge_usage(None) == ()
    assert draft.usage == {"input_tokens": 20}


def test_every_key_that_is_no_token_count_is_returned_in_order() -> None:
    draft = _draft()
    assert draft.merge_usage(BAD) == (
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "output_tokens",
    )
    assert draft.usage == {} and not draft.is_request


def test_only_a_cache_write_split_is_no_request() -> None:
    draft = _draft()
    draft.merge_usage({"cache_creation": {"ephemeral_1h_input_tokens": 9}})
    assert draft.usage == {"cache_creation_1h": 9}
    assert not draft.is_request
    draft.merge_usage({"cache_read_input_tokens": 1})
    assert draft.is_request


class _Count(int):
    """An int of another class: a token count (`token_count` reads it), though not the
    plain int JSON gives, which the per-record fast path is for."""


VALID = {
    "input_tokens": 4,
    "cache_creation_input_tokens": 300,
    "cache_read_input_tokens": 20_000,
    "output_tokens": 7,
}


@pytest.mark.parametrize("key", list(VALID))
@pytest.mark.parametrize("value", [-3, True, "5", None, 1.0, 10**15, 10**15 - 1, _Count(9)])
def test_one_count_off_the_fast_path_merges_as_token_count_reads_it(
    key: str, value: object
) -> None:
    """Three valid counts and one at an edge of the four-at-once test (negative, a bool,
    a string, null, a float, the limit; or valid: one below the limit, an int subclass):
    the others merge as ever; the edge one merges as `token_count` reads it, and is
    returned as bad when it is there but no token count (null is a count not given)."""
    draft = _draft()
    counted = value is not None and type(value) is not float
    counted = counted and isinstance(value, int) and type(value) is not bool
    counted = counted and 0 <= value < 10**15  # type: ignore[operator]
    bad = () if counted or value is None else (key,)
    assert draft.merge_usage({**VALID, key: value}) == bad
    expected = {k: v for k, v in VALID.items() if k != key}
    if counted:
        expected[key] = value  # type: ignore[assignment]
    assert draft.usage == expected
    assert all(type(v) is int or type(v) is _Count for v in draft.usage.values())


def test_valid_counts_whose_bitwise_or_reaches_the_limit_merge_as_they_are() -> None:
    """The fast path tests the four counts' bitwise or against the limit: two valid counts
    whose or reaches it take the checked path, which merges them the same."""
    usage = {**VALID, "input_tokens": 2**46, "output_tokens": 10**15 - 1}
    assert (2**46 | 10**15 - 1) >= 10**15
    draft = _draft()
    assert draft.merge_usage(usage) == ()
    assert draft.usage == usage


@pytest.mark.parametrize(
    ("hour", "expected"),
    [(9, 9), (_Count(9), 9), (10**15 - 1, 10**15 - 1), (10**15, 0), (-9, 0), (True, 0), ("9", 0)],
)
def test_a_1_hour_cache_write_is_read_as_token_count_reads_it(hour: object, expected: int) -> None:
    """The 1-hour share of the cache writes: a plain int in range is taken at once; any
    other value (an int subclass counts, the limit, a negative, a bool, a string do not)
    as `token_count` reads it. No count is no entry."""
    draft = _draft()
    draft.merge_usage({**VALID, "cache_creation": {"ephemeral_1h_input_tokens": hour}})
    assert draft.usage.get("cache_creation_1h", 0) == expected
    assert type(draft.usage.get("cache_creation_1h", 0)) is not bool


def _assistant(message_id: str, usage: dict[str, Any]) -> str:
    record = {
        "type": "assistant",
        "sessionId": "s",
        "uuid": f"u-{message_id}",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"id": message_id, "model": "claude-x", "content": [], "usage": usage},
    }
    return json.dumps(record) + "\n"


def test_the_reader_lists_the_first_naming_the_bad_keys_and_counts_each(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = {"input_tokens": 1, "output_tokens": 1}
    path.write_text(
        _assistant("m1", good) + _assistant("m2", BAD) + _assistant("m3", BAD), encoding="utf-8"
    )
    diagnostics = Diagnostics()
    read_transcript(path, diagnostics)
    assert [(w.line, w.kind, w.message) for w in diagnostics.warnings] == [
        (
            2,
            "bad-usage",
            "usage input_tokens, cache_creation_input_tokens, cache_read_input_tokens, "
            "output_tokens not a token count ('5'); counted as 0 (the first in this file; "
            "each later one is counted, not listed)",
        )
    ]
    assert diagnostics.warning_counts == {"bad-usage": 2}  # m2's and m3's, truly counted


# 2.1.3xx (read from the 2.1.332 build): a response with server-side iterations (an API
# compaction, an advisor) reports totals over all of them; Claude Code takes the context a
# request sent from its last iteration that is neither (`findLast`, then its check).
COMPACTION = {"type": "compaction", "input_tokens": 150_000, "output_tokens": 3_000}
COMPACTION |= {"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
MESSAGE = {"type": "message", "input_tokens": 30, "output_tokens": 100}
MESSAGE |= {"cache_creation_input_tokens": 500, "cache_read_input_tokens": 20_000}
ADVISOR = {**MESSAGE, "type": "advisor_message", "input_tokens": 9_000}
TOTALS = {"input_tokens": 150_030, "output_tokens": 3_100}
TOTALS |= {"cache_creation_input_tokens": 500, "cache_read_input_tokens": 20_000}


@pytest.mark.parametrize(
    ("iterations", "context"),
    [
        ([COMPACTION, MESSAGE], 20_530),  # the message after the compaction
        ([MESSAGE, ADVISOR], 20_530),  # an advisor's iteration after it is passed over
        ([{**MESSAGE, "type": "fallback_message"}], 20_530),  # a fallback model's message
        ([MESSAGE, {"type": "tool_thing"}], 170_530),  # the last is no message: the totals
        ([{**MESSAGE, "input_tokens": "30"}], 170_530),  # a count that is none: the totals
        ([{**MESSAGE, "input_tokens": 0, "cache_creation_input_tokens": 0,
           "cache_read_input_tokens": 0}], 170_530),  # no input at all: the totals
        ([COMPACTION], 170_530),  # only a compaction: the totals
        ([MESSAGE, "a note"], 170_530),  # the last entry is no object: the totals
        ([{**MESSAGE, "cache_read_input_tokens": 10**15}], 170_530),  # a count at the limit
        ([], 170_530),
    ],
)  # fmt: skip
def test_the_context_a_request_sent_is_its_last_message_iteration(
    iterations: list[dict[str, Any]], context: int
) -> None:
    """The context size is the last message iteration's input side; the counts billed
    stay the totals."""
    draft = _draft()
    assert draft.merge_usage({**TOTALS, "iterations": iterations}) == ()
    response = draft.finish()
    assert response.usage.prompt_tokens == context
    assert (response.usage.input_tokens, response.usage.cache_read_tokens) == (150_030, 20_000)


def test_a_transcripts_request_is_sized_by_its_last_message_iteration(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    usage = {**TOTALS, "iterations": [COMPACTION, MESSAGE]}
    path.write_text(_assistant("m1", usage), encoding="utf-8")
    session, _ = read_single(path)
    (response,) = session.responses
    assert response.usage.prompt_tokens == 20_530
    assert [s.reported_tokens for s in session.snapshots] == [20_530]
