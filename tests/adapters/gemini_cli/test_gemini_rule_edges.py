"""Two Gemini CLI rules pinned at their edge, so that a change of the rule itself fails
(review-d14 finding 6: both survived a mutation):

- a record with thoughts is never a late record of the previous response's calls
  (`gemini_timing.late_calls`): Gemini CLI writes a new record when thoughts are queued,
  so one holding thoughts is a response of its own;
- the compressed prompt keeps the history from the first user turn with at least 70% of
  its JSON characters before it (`gemini_compression.kept_from`, Gemini CLI's
  `findCompressSplitPoint(history, 0.7)`), not 60% nor 80%.

Gemini CLI's older automatic notice ("…approached the input token limit for <model>…",
≤0.13) was never recorded (`info` items are recorded from 0.18), so it is no notice."""

from __future__ import annotations

import json
from typing import Any

from agent_profiler.adapters.gemini_compression import kept_from, notice
from agent_profiler.adapters.gemini_timing import created_ns, late_calls

START, END = 1_768_510_330_000, 1_768_510_331_000  # epoch ms: the previous response ran


def _late(**record: Any) -> bool:
    calls = [{"id": f"run_shell_command_{START + 500}_0", "name": "run_shell_command"}]
    made = created_ns(calls[0]["id"])
    assert made is not None
    before = (START * 1_000_000, END * 1_000_000)
    return late_calls({"type": "gemini", "content": "", **record}, calls, before)


def test_a_record_with_thoughts_is_no_late_record_of_the_previous_calls() -> None:
    assert _late() is True  # no text, thoughts or usage: the previous response's calls
    thoughts = [{"subject": "Planning", "description": "run it", "timestamp": "x"}]
    assert _late(thoughts=thoughts) is False
    assert _late(thoughts=[]) is True
    assert _late(content="done") is False and _late(tokens={"input": 5}) is False


def _user(text_size: int) -> dict[str, Any]:
    """A user turn whose Content is `text_size` JSON characters long."""
    empty = len(json.dumps({"role": "user", "parts": [{"text": ""}]}, separators=(",", ":")))
    return {"type": "user", "content": "x" * (text_size - empty)}


def test_the_split_is_the_first_user_turn_with_70_percent_before_it() -> None:
    """u2 has 69.5% of the history before it, u3 70.5%, u4 71.5%: the split is u3 (70%).
    At 60% it would be u2, at 71% u4."""
    sizes = {"u1": 6_950, "u2": 100, "u3": 100, "u4": 2_850}
    assert kept_from((name, _user(size)) for name, size in sizes.items()) == "u3"


def test_the_older_automatic_notice_is_not_read() -> None:
    older = (
        "IMPORTANT: This conversation approached the input token limit for gemini-2.5-pro. "
        "A compressed context will be sent for future messages (compressed from: 900 to "
        "100 tokens)."
    )
    assert notice(older) is None
    newer = older.replace(
        "approached the input token limit for gemini-2.5-pro", "exceeded the compress threshold"
    )
    found = notice(newer)
    assert found is not None and (found.pre_tokens, found.post_tokens) == (900, 100)
