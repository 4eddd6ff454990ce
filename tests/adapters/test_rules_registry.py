"""The adapter registry (adapters/__init__.py): one adapter per harness, whose functions are
the harness module's own, named as in the registry line, and reached only when called."""

from __future__ import annotations

from pathlib import Path

from agent_profiler.adapters import ADAPTERS, JournalGroup, SniffedFile, _adapter, adapter_for
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import sniff
from agent_profiler.model import Harness
from samples import CLAUDE_SMALL, CODEX_SMALL, GEMINI_DOCUMENT, PI_LARGE


def _names(harness: Harness) -> dict[str, str | None]:
    adapter = adapter_for(harness)
    assert adapter is not None and adapter.harness is harness
    fields = ("detect", "plan", "read", "explain", "claim", "role", "locate")
    return {f: getattr(getattr(adapter, f), "__qualname__", None) for f in fields}


def test_every_harness_has_one_adapter_whose_functions_are_named_by_their_module() -> None:
    """A lazy function is named `module.function` (what a traceback or a profile shows), and a
    registry line's renamed functions (Muse's `read_group`) are the ones called."""
    assert [a.harness for a in ADAPTERS] == list(Harness)
    default = {"explain": None, "claim": None, "role": None}
    assert _names(Harness.CLAUDE_CODE) == {
        "detect": "claude_code.detect",
        "plan": "claude_code.plan",
        "read": "claude_code.read",
        "locate": "claude_code.locate",
        **default,
    }
    assert _names(Harness.CODEX) == {
        "detect": "codex.detect",
        "plan": "codex.plan",
        "read": "codex.read",
        "locate": "codex.locate",
        **default,
    }
    assert _names(Harness.MUSE) == {
        "detect": "muse.detect",
        "plan": "muse.plan",
        "read": "muse.read_group",
        "explain": "muse.explain_rejected",
        "claim": None,
        "role": None,
        "locate": "muse.locate",
    }
    for harness, module in ((Harness.GEMINI_CLI, "gemini_cli"), (Harness.OPENCODE, "opencode")):
        assert _names(harness) == {
            "detect": f"{module}.detect",
            "plan": f"{module}.plan",
            "read": f"{module}.read",
            "explain": None,
            "claim": f"{module}.claim",
            "role": f"{module}.role",
            "locate": f"{module}.locate",
        }


def test_each_adapter_recognises_its_own_real_journal_and_no_other() -> None:
    """The lazy `detect` is the harness module's: each real journal's head is claimed by
    exactly its own harness."""
    heads = {
        Harness.CLAUDE_CODE: sniff(CLAUDE_SMALL),
        Harness.CODEX: sniff(CODEX_SMALL),
        Harness.PI: sniff(PI_LARGE),
    }
    for harness, head in heads.items():
        assert [a.harness for a in ADAPTERS if a.detect(head)] == [harness]


def test_a_plan_groups_the_files_it_was_given(tmp_path: Path) -> None:
    """Codex reads every rollout together (no main file), so that a subagent links to its
    parent; Pi reads each file as its own session (main, no extras)."""
    codex = adapter_for(Harness.CODEX)
    pi = adapter_for(Harness.PI)
    assert codex is not None and pi is not None
    (group,) = codex.plan([SniffedFile(CODEX_SMALL, sniff(CODEX_SMALL))])
    assert (group.harness, group.main, group.extras, group.paths) == (
        Harness.CODEX,
        None,
        (CODEX_SMALL,),
        (CODEX_SMALL,),
    )
    (group,) = pi.plan([SniffedFile(PI_LARGE, sniff(PI_LARGE))])
    assert (group.main, group.extras, group.paths) == (PI_LARGE, (), (PI_LARGE,))
    assert JournalGroup(Harness.GEMINI_CLI, GEMINI_DOCUMENT, (tmp_path,)).paths == (
        GEMINI_DOCUMENT,
        tmp_path,
    )


def test_a_registry_line_is_the_module_and_its_renamed_functions() -> None:
    """The registry is built once, at import; a line built again (as a new harness's line
    would be) gives an adapter for its harness whose functions call the module's own: the
    renamed `read` of Muse's line is `muse.read_group`, the others keep their names."""
    line = _adapter(Harness.MUSE, "muse", read="read_group", explain="explain_rejected")
    assert line.harness is Harness.MUSE
    assert [f.__qualname__ for f in (line.detect, line.plan, line.read, line.explain)] == [
        "muse.detect",
        "muse.plan",
        "muse.read_group",
        "muse.explain_rejected",
    ]
    assert (line.claim, line.role) == (None, None)
    assert line.locate.__qualname__ == "muse.locate"
    codex = _adapter(Harness.CODEX, "codex")
    head = sniff(CODEX_SMALL)
    assert codex.detect(head) is True and line.detect(head) is False
    (group,) = codex.plan([SniffedFile(CODEX_SMALL, head)])
    (session,) = codex.read(group, Diagnostics())
    assert session.session_id == "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"


def test_every_harness_says_where_its_journals_live_what_edits_and_its_native_parsers(
    tmp_path: Path,
) -> None:
    """Harness knowledge lives in the adapters: each one says where its sessions live
    (`locate`, an empty listing for an empty home), which of its tools change the workspace
    (a non-empty set: summary's repeated calls depend on it) and which of its own
    composition records it parses (Claude Code's `/context`, Muse's request lanes)."""
    empty = {"HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "data")}
    native = {}
    for adapter in ADAPTERS:
        assert list(adapter.locate(empty)) == [], adapter.harness
        tools = adapter.mutating_tools
        assert isinstance(tools, frozenset) and tools, adapter.harness
        assert all(isinstance(t, str) and t for t in tools)
        native[adapter.harness] = adapter.native_composition
    assert native == {
        Harness.CLAUDE_CODE: ("/context",),
        Harness.CODEX: (),
        Harness.PI: (),
        Harness.MUSE: ("request lanes",),
        Harness.GEMINI_CLI: (),
        Harness.OPENCODE: (),
    }
    # What summary's repeated-call rule forgets after, per harness (one tool each, pinned).
    by_harness = {a.harness: a.mutating_tools for a in ADAPTERS}
    assert (
        "Edit" in by_harness[Harness.CLAUDE_CODE] and "Read" not in by_harness[Harness.CLAUDE_CODE]
    )
    assert "apply_patch" in by_harness[Harness.CODEX]
    assert "run_shell_command" in by_harness[Harness.GEMINI_CLI]
