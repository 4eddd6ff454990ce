"""Perfetto's real importer (trace_processor v58.2) reads a deflated trace (the default:
writers/chunks.py) into the same tables as the same trace written with --no-compress:
every slice with its arguments, every counter sample, every flow, and no import error or
data loss. Skips with realtp's reason where trace_processor_shell is not available."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from realtp import BINARY, SKIP_REASON, STATS_SQL, run_query
from shared_paths import TESTS
from traceview import load_trace

pytestmark = pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)

DATA = TESTS / "data" / "journals"
runner = CliRunner()

SLICES_SQL = """
SELECT s.ts, s.dur, s.name, s.category, t.name AS track,
       (SELECT GROUP_CONCAT(a.key || '=' || IFNULL(a.display_value, ''), '|')
        FROM (SELECT key, display_value FROM args
              WHERE arg_set_id = s.arg_set_id ORDER BY key) AS a) AS args
FROM slice s JOIN track t ON s.track_id = t.id
ORDER BY s.ts, s.name, track, args
"""
COUNTERS_SQL = """
SELECT t.name, c.ts, c.value FROM counter c JOIN counter_track t ON c.track_id = t.id
ORDER BY t.name, c.ts, c.value
"""
FLOWS_SQL = """
SELECT o.name AS out_name, i.name AS in_name FROM flow f
JOIN slice o ON f.slice_out = o.id JOIN slice i ON f.slice_in = i.id
ORDER BY out_name, in_name
"""


def _export(tmp_path: Path, name: str, journal: Path, *args: str) -> Path:
    out = tmp_path / name
    result = runner.invoke(app, ["export", str(journal), "-o", str(out), "--force", *args])
    assert result.exit_code == 0, result.output + result.stderr
    return out


@pytest.mark.parametrize(
    "journal",
    [
        DATA / "claude-code" / "spotter-2.1.39-subagents-compaction",  # subagents: 2 clocks
        DATA / "pi",  # several groups, several sequences
        DATA / "codex",
    ],
    ids=lambda p: p.name,
)
def test_a_compressed_trace_imports_as_the_uncompressed_one(journal: Path, tmp_path: Path) -> None:
    packed = _export(tmp_path, "packed.pftrace", journal)
    plain = _export(tmp_path, "plain.pftrace", journal, "--no-compress")
    # the two files differ (one is deflated) and decode to the same packets
    assert packed.stat().st_size < plain.stat().st_size
    assert load_trace(packed).to_text() == load_trace(plain).to_text()
    for sql in (SLICES_SQL, COUNTERS_SQL, FLOWS_SQL):
        ours, theirs = run_query(packed, sql), run_query(plain, sql)
        assert ours == theirs
    assert run_query(packed, SLICES_SQL), "the query sees the slices"
    assert run_query(packed, COUNTERS_SQL), "the query sees the counters"
    assert run_query(packed, STATS_SQL) == []
