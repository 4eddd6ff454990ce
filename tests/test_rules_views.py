"""The derived views of a session (views.py) that the trace, the summary and the report share,
pinned on real sessions: how a path is named, and the edge cases of the span, the Context size
series, the model runs and the largest additions that the whole-trace tests do not reach."""

from __future__ import annotations

import pytest

from agent_profiler.views import basename
from rules_spy import record
from shared_paths import CORPUS, SHARED_REASON

# A Claude Code session recorded on Windows (its records' cwd is `C:\Users\danil\.claude`).
WINDOWS = (
    CORPUS
    / "claude-code"
    / "context-command"
    / "aueidog-claude_v2.1.4_2b2a4297_markdown-in-user-record.jsonl"
)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_a_path_written_on_any_os_is_named_by_its_last_component() -> None:
    """Journals come from any OS: the trace's `sources`, the report's inputs and the project
    label name a path by its last folder or file. The Windows path is a real record's cwd; the
    trailing separators (a folder as typed) and the folder ending in X are hand-made."""
    cwd = record(WINDOWS, 1)["cwd"]
    assert cwd == "C:\\Users\\danil\\.claude"
    assert basename(cwd) == ".claude"
    assert basename(cwd + "\\") == ".claude"
    assert basename(str(WINDOWS)) == WINDOWS.name
    assert basename(str(WINDOWS.parent) + "/") == "context-command"
    assert basename("/home/dev/LaTeX") == "LaTeX"
    assert basename("LaTeX") == "LaTeX"  # a project name is already a last component
