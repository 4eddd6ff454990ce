"""Which files form one Claude Code session (`claude_code.plan`): what the twelfth session's
second mutation sample found no test checking. The 2.1.14 compaction transcript of
tests/data, copied."""

from __future__ import annotations

from pathlib import Path

from test_claude_code import DATA
from test_duplicate_sessions import variants

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load

COMPACTED = DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"


def test_three_copies_of_a_session_are_each_read_from_its_own_file(tmp_path: Path) -> None:
    """Three copies of one transcript (a backup, a resumed run): three sessions, one from
    each file, none read twice (claude_code.plan__mutmut_25 keyed every copy after the
    first alike, so the third took the second's place and was read twice: the ids still
    came out `#2` and `#3`). Each with other bytes (a copy with the very bytes of another
    is read once: repeats.py)."""
    paths = variants(COMPACTED, tmp_path, count=3)
    sessions = load(paths, Diagnostics()).sessions
    assert [s.sources for s in sessions] == [(str(p),) for p in paths]
    base = sessions[0].session_id
    assert [s.session_id for s in sessions] == [base, f"{base}#2", f"{base}#3"]
