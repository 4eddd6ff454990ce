"""The rules of Pi's session tree (adapters/pi_tree.py) not pinned by tests/adapters/pi/test_pi.py
(whose random-tree test checks the branch walk against a plain buildSessionContext): an entry's
parts are measured from their text, once, when the entry is read, so the estimator sees what
each item is (prose, code, JSON) however often the entry enters the context again."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import TextClass, calibrated, tool_call_text, use_estimator
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Category
from rules_spy import by_id, excerpt, record, spy
from shared_paths import TESTS

LARGE = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1.jsonl"

# Prose 4, code 2, JSON 1 character(s) per token; a bare length (the unknown class) costs 0,
# so an item measured from its length instead of its text shows up as a zero.
RATIOS = {c: 1.0 for c in TextClass} | {
    TextClass.PROSE: 4.0,
    TextClass.CODE: 2.0,
    TextClass.JSON: 1.0,
    TextClass.UNKNOWN: float("inf"),
}


def test_each_part_is_measured_from_its_text_not_its_length(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 1–7 of the large v1 session and the request of line 17 that sends them, read with
    a calibrated estimator: the prompts (lines 2 and 5), the answer text and three tool calls
    (line 6) and the result (line 7) each weigh what the estimator makes of their text, and
    the request's snapshot is their sum per category."""
    estimator = calibrated(RATIOS, 0.0, {})
    added = spy(monkeypatch)
    with use_estimator(estimator):
        result = load([excerpt(tmp_path, LARGE, [1, 2, 3, 4, 5, 6, 7, 17])], Diagnostics())
    (session,) = result.sessions
    measure = estimator.text_tokens
    command = record(LARGE, 2)["message"]["content"][0]["text"]  # "/mode", answered by nothing
    prompt = record(LARGE, 5)["message"]["content"][0]["text"]
    answer = record(LARGE, 6)["message"]["content"]
    (tool_result,) = record(LARGE, 7)["message"]["content"]
    texts = {"line-2:0": command, "line-5:0": prompt, "line-7:result": tool_result["text"]}
    for index, block in enumerate(answer):
        if block["type"] == "text":
            texts[f"line-6:{index}"] = block["text"]
        elif block["type"] == "toolCall":
            texts[f"line-6:{index}"] = tool_call_text(block["name"], block["arguments"])
    assert len(texts) == 7
    items = by_id(added)
    for item_id, text in texts.items():
        got = items[item_id]
        assert (got.chars, got.tokens) == (len(text), measure(text)), item_id
        assert got.tokens > 0
    calls = [tool_call_text(b["name"], b["arguments"]) for b in answer if b["type"] == "toolCall"]
    assert sum(measure(c) for c in calls) == sum(len(c) for c in calls)  # JSON: 1 per token
    assert [s.anchor_id for s in session.snapshots if s.anchor is AnchorKind.RESPONSE] == [
        "line-6",
        "line-8",  # line 17 of the session, the 8th of the excerpt
    ]
    request = session.snapshots[-1]
    categories = dict(request.categories)
    assert categories[Category.PROMPTS] == measure(command) + measure(prompt)
    assert categories[Category.RESULTS] == measure(tool_result["text"])
    assert categories[Category.ASSISTANT] == sum(
        measure(texts[i]) for i in texts if i.startswith("line-6:")
    )


def test_moving_the_leaf_costs_what_changes_not_the_path_behind_the_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A session of 3,000 entries after a compaction that keeps 100: each new entry moves
    the leaf one step, and a step looks at the new entry and the compactions, not at the
    entries before the cut again (a long session is read in time linear in its length)."""
    from agent_profiler.adapters import pi_tree
    from agent_profiler.adapters.pi_tree import Branch, Entry, measured_part

    entries: dict[str, Entry] = {}
    branch = Branch(entries)
    looked = 0
    wanted = pi_tree._wanted

    def counted(
        entry: Entry, position: int, active: int | None, cut: int, known: dict[str, Entry]
    ) -> bool:
        nonlocal looked
        looked += 1
        return wanted(entry, position, active, cut, known)

    monkeypatch.setattr(pi_tree, "_wanted", counted)
    parent: str | None = None
    for n in range(3_500):
        entry_id = f"e{n}"
        kind = "compaction" if n == 500 else "message"
        part = measured_part(f"{entry_id}:0", Category.PROMPTS, "some text", "Prompt")
        entry = Entry(entry_id, parent, kind, n, parts=(part,))
        if kind == "compaction":
            entry.first_kept = "e400"
        entries[entry_id] = entry
        leaving, entering = branch.move_to(entry_id)
        if n == 500:  # the compaction: what came before the kept entries leaves
            assert len(leaving) == 400 and entering == [entry_id]
        elif n > 500:
            assert (leaving, entering) == ([], [entry_id])
        parent = entry_id
    assert branch.cut == 400
    assert looked < 4 * 3_500  # each step: its entry and the compaction; not the 400 before
