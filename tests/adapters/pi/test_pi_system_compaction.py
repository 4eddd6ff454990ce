"""Pi's `system` messages (v0.80+) across a compaction (review-d14 finding 2). The system
prompt and the tools are sent with every request, whatever was compacted:

- a compaction without a `systemMessage`: the items earlier `system` messages declared
  stay in the context (before, they left with the entries before `firstKeptEntryId`:
  System 1,200 → 0, Tools 193 → 0);
- a compaction with one (Pi 0.87+ `CompactionEntry.systemMessage`, a complete prompt and
  tool checkpoint sent before the summary; `buildContextEntries` leaves out every earlier
  `system` message, kept or not): the checkpoint replaces them, counted once;
- a version that writes only incremental updates (the prompt itself is the request's
  system prompt, in the inferred head): the updates stay, counted once.

Hand-made v3 sessions in the shapes Pi's source writes (test_pi_system's `Journal`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_pi_system import BASH_TOOL, GREP_TOOL, READ_TOOL, Journal, composition

from agent_profiler.adapters.common import json_text
from agent_profiler.estimate import text_tokens
from agent_profiler.model import Category

S, T, P, SUM = Category.SYSTEM, Category.TOOLS, Category.PROMPTS, Category.SUMMARIES
PROMPT = "You are Pi. " * 400


def _tools(*tools: dict[str, Any]) -> int:
    return sum(text_tokens(json_text(tool)) for tool in tools)


def _compact(j: Journal, first_kept: str, **extra: Any) -> None:
    number = len(j.lines)
    j.lines.append(
        {
            "type": "compaction",
            "id": f"a{number:07d}",
            "parentId": f"a{number - 1:07d}",
            "timestamp": f"2026-11-20T10:{number:02d}:00.000Z",
            "summary": "sum " * 50,
            "firstKeptEntryId": first_kept,
            "tokensBefore": 4000,
            **extra,
        }
    )


def _turns(j: Journal) -> str:
    """Two turns, then a third prompt (returned: the compaction keeps from it)."""
    j.user("first " * 300)
    j.assistant(3000)
    j.user("second " * 300)
    j.assistant(4000)
    return j.user("third " * 50)


def test_the_prompt_and_tools_stay_after_a_compaction_without_a_checkpoint(
    tmp_path: Path,
) -> None:
    j = Journal()
    j.message({"role": "system", "content": PROMPT, "toolsAdded": [READ_TOOL, BASH_TOOL]})
    _compact(j, _turns(j))
    j.assistant(2500)
    *_, before, after = composition(j.read(tmp_path))
    assert (after[S], after[T]) == (text_tokens(PROMPT), _tools(READ_TOOL, BASH_TOOL))
    assert (after[S], after[T]) == (before[S], before[T])
    assert after[P] < before[P] and after[SUM] > 0  # the conversation did leave


def test_a_compactions_checkpoint_replaces_every_earlier_system_message(
    tmp_path: Path,
) -> None:
    """The checkpoint holds the prompt as it is now and one tool: the first message's
    prompt and tools leave, and so does an update inside the kept range."""
    now = "You are Pi, compacted. " * 100
    j = Journal()
    j.message({"role": "system", "content": PROMPT, "toolsAdded": [READ_TOOL, BASH_TOOL]})
    kept = _turns(j)
    j.message({"role": "system", "content": "Update. " * 30, "toolsAdded": [GREP_TOOL]})
    checkpoint = {"role": "system", "content": now, "toolsAdded": [BASH_TOOL], "timestamp": 1}
    _compact(j, kept, systemMessage=checkpoint)
    j.assistant(2500)
    *_, after = composition(j.read(tmp_path))
    assert (after[S], after[T]) == (text_tokens(now), _tools(BASH_TOOL))


def test_incremental_updates_only_stay_once(tmp_path: Path) -> None:
    """No full first message: the updates are all the journal shows of the prompt (the
    rest is the inferred head); after a compaction they are still counted, once."""
    update = "The following tools are now available and may be used: grep."
    j = Journal()
    j.user("zero")
    j.assistant(5000)
    j.message({"role": "system", "content": update, "toolsAdded": [GREP_TOOL]})
    _compact(j, _turns(j))
    j.assistant(2500)
    *_, before, after = composition(j.read(tmp_path))
    assert (after[S], after[T]) == (text_tokens(update), _tools(GREP_TOOL))
    assert (after[S], after[T]) == (before[S], before[T])


def test_a_system_message_flagged_replace_supersedes_the_earlier_text(tmp_path: Path) -> None:
    """Later versions mark a complete-state replacement with `replace: true` (no
    "supersedes" sentence): the earlier prompt text leaves, counted once, tools stay."""
    now = "Whole new prompt. " * 60
    j = Journal()
    j.message({"role": "system", "content": PROMPT, "toolsAdded": [READ_TOOL]})
    j.user("one")
    j.assistant(3000)
    j.message({"role": "system", "content": now, "replace": True})
    j.user("two")
    j.assistant(3000)
    *_, after = composition(j.read(tmp_path))
    assert (after[S], after[T]) == (text_tokens(now), _tools(READ_TOOL))
