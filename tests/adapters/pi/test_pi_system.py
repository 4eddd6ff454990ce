"""Pi v0.80+ (earendil-works/pi) `system` and `developer` messages: the system prompt and the
tool declarations, written into the session as messages (`system-prompt-updates.ts`,
`messages.ts`; pi-ai `utils/transcript.ts` replays them: content appended, sections
patched by name, tools added and removed by name). No real journal with them is in the
corpus: each test writes a small v3 session in the shapes Pi's source writes (the first:
the reviewer's repro in notes/review-fmt.md, P1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters.common import json_text
from agent_profiler.adapters.pi_records import SUPERSEDES
from agent_profiler.estimate import text_tokens
from agent_profiler.model import AnchorKind, Category, Session
from rules_spy import spy
from samples import read

S, T, R, K, E, U = (
    Category.SYSTEM,
    Category.TOOLS,
    Category.RULES,
    Category.SKILLS,
    Category.ENVIRONMENT,
    Category.UNATTRIBUTED,
)
READ_TOOL = {
    "name": "read",
    "description": "Read a file. " * 20,
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
}
BASH_TOOL = {
    "name": "bash",
    "description": "Run a command. " * 20,
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
}
GREP_TOOL = {"name": "grep", "description": "Search.", "parameters": {"type": "object"}}


class Journal:
    """A v3 session written line by line, each entry the child of the one before."""

    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = [
            {
                "type": "session",
                "version": 3,
                "id": "019a0000-0000-7000-8000-000000000001",
                "timestamp": "2026-11-20T10:00:00.000Z",
                "cwd": "/home/u/proj",
            }
        ]

    def message(self, message: dict[str, Any]) -> str:
        number = len(self.lines)
        entry_id = f"a{number:07d}"
        self.lines.append(
            {
                "type": "message",
                "id": entry_id,
                "parentId": f"a{number - 1:07d}" if number > 1 else None,
                "timestamp": f"2026-11-20T10:{number:02d}:00.000Z",
                "message": {**message, "timestamp": 1_763_632_800_000 + number * 60_000 - 500},
            }
        )
        return entry_id

    def user(self, text: str) -> str:
        return self.message({"role": "user", "content": [{"type": "text", "text": text}]})

    def assistant(self, fresh: int, read: int = 0, write: int = 0) -> str:
        usage = {"input": fresh, "output": 20, "cacheRead": read, "cacheWrite": write}
        return self.message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "Done."}],
                "provider": "anthropic",
                "model": "claude-opus-4-8",
                "usage": usage,
                "stopReason": "stop",
            }
        )

    def read(self, tmp_path: Path) -> Session:
        path = tmp_path / "2026-11-20T10-00-00-000Z_019a0000-0000-7000-8000-000000000001.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in self.lines))
        (session,), diagnostics = read(path)
        assert diagnostics.warning_total == 0 and diagnostics.unrecognised_total == 0
        return session


def composition(session: Session) -> list[dict[Category, int]]:
    """Each request's context, by category, as the session estimated it."""
    return [
        dict(s.categories)
        for s in session.snapshots
        if s.anchor is AnchorKind.RESPONSE and s.reported_tokens is not None
    ]


def test_the_first_system_message_is_the_prompt_and_the_tools_and_the_head_shrinks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reviewer's repro: the first `system` message (a 16,000-character prompt and a
    `toolLoadout` of two tools) is System instructions and Tool definitions (the JSON of
    each declaration); a `developer` message System instructions. Before, both were
    "not recognised" and all of it was the inferred head (Unattributed); now the head is
    only what the journal still does not show."""
    prompt = "You are an expert coding assistant. " * 444 + "Be concise."
    rules = "AGENTS.md changed: " + "rule " * 596
    j = Journal()
    loadout = {"type": "toolLoadout", "tools": [READ_TOOL, BASH_TOOL]}
    loadout |= {"added": [READ_TOOL, BASH_TOOL], "removed": []}
    system = j.message({"role": "system", "content": [loadout, {"type": "text", "text": prompt}]})
    j.user("List the files.")
    j.assistant(10, write=5200)
    developer = j.message({"role": "developer", "content": [{"type": "text", "text": rules}]})
    j.user("Now run tests.")
    j.assistant(800, read=5200, write=10)
    added = spy(monkeypatch)
    session = j.read(tmp_path)
    got = {a.id: (a.category, a.label, a.chars) for a in added}
    assert got[f"{system}:1"] == (S, "System prompt", len(prompt))
    assert got[f"{system}:tool:read"] == (T, "Tool definition", len(json_text(READ_TOOL)))
    assert got[f"{system}:tool:bash"] == (T, "Tool definition", len(json_text(BASH_TOOL)))
    assert got[f"{developer}:0"] == (S, "Developer instructions", len(rules))
    first, second = composition(session)
    tools = text_tokens(json_text(READ_TOOL)) + text_tokens(json_text(BASH_TOOL))
    assert (first[S], first[T]) == (text_tokens(prompt), tools)
    assert first[U] == 5210 - sum(t for c, t in first.items() if c is not U)  # the head left
    assert first[U] < 5210 - text_tokens(prompt)
    assert second[S] == text_tokens(prompt) + text_tokens(rules)


def test_updates_add_and_remove_tools_by_name_and_a_replacement_supersedes_the_text(
    tmp_path: Path,
) -> None:
    """The 5091fae9 shape (`content` text, `toolsAdded`, `toolsRemoved`): an incremental
    update adds its text and tools and takes away those it removes; a replacement ("…
    supersedes all earlier system prompt updates") takes the place of every earlier
    update's text, and a tool declared again replaces its earlier declaration."""
    initial, update = "Base prompt. " * 100, "Tools changed."
    replacement = f"{SUPERSEDES}:\n\n" + "New prompt. " * 50
    bash_again = {**BASH_TOOL, "description": "Run."}
    j = Journal()
    j.message({"role": "system", "content": initial, "toolsAdded": [READ_TOOL, BASH_TOOL]})
    j.user("one")
    j.assistant(10, write=2000)
    j.message(
        {
            "role": "system",
            "content": update,
            "toolsAdded": [GREP_TOOL],
            "toolsRemoved": [{"name": "bash"}],
        }
    )
    j.user("two")
    j.assistant(10, read=2000)
    j.message({"role": "system", "content": replacement, "toolsAdded": [bash_again]})
    j.user("three")
    j.assistant(10, read=2100)
    first, second, third = composition(j.read(tmp_path))
    read_tool, grep_tool = text_tokens(json_text(READ_TOOL)), text_tokens(json_text(GREP_TOOL))
    assert (first[S], first[T]) == (
        text_tokens(initial),
        read_tool + text_tokens(json_text(BASH_TOOL)),
    )
    assert (second[S], second[T]) == (
        text_tokens(initial) + text_tokens(update),
        read_tool + grep_tool,
    )
    assert third[S] == text_tokens(replacement)
    assert third[T] == read_tool + grep_tool + text_tokens(json_text(bash_again))


def test_sections_are_patched_by_name_into_their_categories(tmp_path: Path) -> None:
    """The structured prompt (`sections`): the project context (AGENTS.md files) is Rules
    and memory, the skills Skills, the cwd Environment, the rest System instructions; a
    later message patches a section by name (None removes it)."""
    sections = {
        "preamble": "You are an expert coding assistant operating inside pi. " * 10,
        "rules": "<rules>\n- Be concise\n</rules>",
        "project_context": "<project_context>\n" + "Use tabs. " * 80 + "\n</project_context>",
        "skills": "<skills>\n" + "a skill " * 40 + "\n</skills>",
        "cwd": "<cwd>\n/home/u/proj\n</cwd>",
    }
    context = "<project_context>\nUse spaces.\n</project_context>"
    j = Journal()
    j.message({"role": "system", "content": "", "sections": sections})
    j.user("one")
    j.assistant(10, write=2000)
    j.message(
        {"role": "system", "content": "", "sections": {"project_context": context, "skills": None}}
    )
    j.user("two")
    j.assistant(10, read=2000)
    first, second = composition(j.read(tmp_path))
    system = text_tokens(sections["preamble"]) + text_tokens(sections["rules"])
    assert (first[S], first[R], first[K], first[E]) == (
        system,
        text_tokens(sections["project_context"]),
        text_tokens(sections["skills"]),
        text_tokens(sections["cwd"]),
    )
    assert (second[S], second[R], K in second) == (system, text_tokens(context), False)


def test_a_newest_loadout_declares_its_added_tools_and_removes_by_name(tmp_path: Path) -> None:
    """A `toolLoadout` whose `tools` is the whole catalog names the change in `added` and
    `removed`: only `added` enters; an older loadout without `added` declares `tools`."""
    j = Journal()
    j.message(
        {"role": "system", "content": [{"type": "toolLoadout", "tools": [READ_TOOL, BASH_TOOL]}]}
    )
    j.user("one")
    j.assistant(10, write=2000)
    catalog = [READ_TOOL, GREP_TOOL]
    change = {
        "type": "toolLoadout",
        "tools": catalog,
        "added": [GREP_TOOL],
        "removed": [{"name": "bash"}],
    }
    j.message({"role": "system", "content": [change, {"type": "text", "text": "grep is here."}]})
    j.user("two")
    j.assistant(10, read=2000)
    first, second = composition(j.read(tmp_path))
    read_tool = text_tokens(json_text(READ_TOOL))
    assert first[T] == read_tool + text_tokens(json_text(BASH_TOOL))
    assert second[T] == read_tool + text_tokens(json_text(GREP_TOOL))
