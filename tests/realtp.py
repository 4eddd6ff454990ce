"""Perfetto's real importer in the tests: `trace_processor_shell` (v58.2, the engine
ui.perfetto.dev runs on every trace).

Found at `$AGENT_PROFILER_TRACE_PROCESSOR` when set, else beside the repository at
`../shared/tools/trace_processor/trace_processor_shell`. When it is absent, tests that need
it skip with `SKIP_REASON` and `check_import` returns no problems, so a clone elsewhere still
passes.

Two ways in:
- `check_import(path, view)`: the check `export_trace` (conftest) runs on *every* trace the
  suite exports. One `trace_processor_shell -q` call with one combined query: the `perfetto`
  package's `TraceProcessor` starts an HTTP server and polls it once a second, about 1.1 s per
  trace against 0.05 s for `-q`, and the suite exports a few hundred traces.
- `open_trace(path)`: the `perfetto` package's `TraceProcessor` API (`bin_path` = the binary),
  for the tests that ask many questions of one trace (test_real_import, test_cookbook).
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from shared_paths import shared_dir
from traceview import TraceView

# Trace processors are started from a thread pool (tests/perfetto_tools/test_real_import.py).
# CPython 3.11's vfork path failed there twice on a loaded machine ("OSError: [Errno 14] Bad
# address" from the child's exec); plain fork + exec costs microseconds and has not failed.
subprocess._USE_VFORK = False  # type: ignore[attr-defined]

ENV = "AGENT_PROFILER_TRACE_PROCESSOR"
REPO = Path(__file__).resolve().parents[1]
SHARED = shared_dir()  # (as every test finds it: a worktree elsewhere too)
BESIDE = SHARED / "tools" / "trace_processor" / "trace_processor_shell"


def find_binary() -> Path | None:
    configured = os.environ.get(ENV)
    path = Path(configured) if configured else BESIDE
    return path if path.is_file() and os.access(path, os.X_OK) else None


BINARY = find_binary()
SKIP_REASON = (
    f"Perfetto's trace_processor_shell not found (set {ENV}=/path/to/trace_processor_shell, "
    f"or put it at {BESIDE})"
)
needs_trace_processor = pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)

# Import problems the UI reports (its red Trace Doctor icon): any stats row of these severities.
STATS_SQL = (
    "SELECT name || IFNULL('[' || idx || ']', '') AS name, severity, value FROM stats "
    "WHERE value > 0 AND severity IN ('error', 'data_loss') ORDER BY name"
)

# Per counter track (keyed by the uuid the writer gave it, which Trace Processor keeps as
# `trace_id` in the track's source args): how many samples, their sum, the last value, the
# last timestamp and the latest timestamp of every other sample; plus the stats rows above,
# and the slice and flow totals. One statement, because `-q` prints only the last one.
CHECK_SQL = f"""
WITH ordered AS (
  SELECT c.track_id, c.ts, c.value,
         ROW_NUMBER() OVER (PARTITION BY c.track_id ORDER BY c.ts DESC, c.id DESC) AS back
  FROM counter c
), per_track AS (
  SELECT 'counter' AS kind,
         CAST(EXTRACT_ARG(t.source_arg_set_id, 'trace_id') AS TEXT) AS key,
         COUNT(*) AS n, SUM(o.value) AS total,
         MAX(CASE WHEN o.back = 1 THEN o.value END) AS last_value,
         MAX(CASE WHEN o.back = 1 THEN o.ts END) AS last_ts,
         MAX(CASE WHEN o.back > 1 THEN o.ts END) AS before_ts
  FROM ordered o JOIN track t ON t.id = o.track_id
  GROUP BY o.track_id
)
SELECT * FROM per_track
UNION ALL
SELECT 'stat', name, NULL, value, NULL, NULL, severity FROM ({STATS_SQL})
UNION ALL
SELECT 'totals', NULL, (SELECT COUNT(*) FROM slice), (SELECT COUNT(*) FROM flow), NULL, NULL,
       NULL
"""


def run_query(trace: Path, sql: str) -> list[dict[str, str]]:
    """Rows of the last statement of `sql` on `trace`, through `trace_processor_shell -q`
    (values as the CSV text it prints; NULL is '[NULL]')."""
    assert BINARY is not None, SKIP_REASON
    with tempfile.NamedTemporaryFile("w", suffix=".sql", delete=False) as query:
        query.write(sql)
    try:
        result = subprocess.run(
            [str(BINARY), "-q", query.name, str(trace)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.unlink(query.name)
    if result.returncode != 0:
        raise AssertionError(
            f"trace_processor_shell failed on {trace} ({result.returncode}): "
            + result.stderr[-2000:]
        )
    return list(csv.DictReader(io.StringIO(result.stdout)))


def check_import(trace: Path, view: TraceView) -> list[str]:
    """What the real importer does differently from the writer's intent, as problems:
    import errors or data loss, counter samples dropped or changed, a counter whose last
    sample is not a 0 strictly after all others, slices or flows lost."""
    if BINARY is None:
        return []
    problems: list[str] = []
    meant: dict[str, list[tuple[int, float]]] = {
        str(uuid): sorted(samples) for uuid, samples in view.counters.items()
    }
    held: set[str] = set()
    for row in run_query(trace, CHECK_SQL):
        kind = row["kind"]
        if kind == "stat":  # severity travels in the before_ts column
            problems.append(
                f"trace_processor stats: {row['before_ts']} {row['key']}={row['total']}"
            )
        elif kind == "totals":
            slices, flows = int(row["n"]), int(row["total"])
            want_slices = len(view.slices)
            want_flows = sum(1 for ends in view.flows.values() if len(ends) == 2)
            if (slices, flows) != (want_slices, want_flows):
                problems.append(
                    f"trace_processor holds {slices} slices and {flows} flows, the trace has "
                    f"{want_slices} and {want_flows}"
                )
        else:
            key = row["key"]
            held.add(key)
            name = view.tracks[int(key)].name if key.isdigit() and int(key) in view.tracks else key
            samples = meant.get(key, [])
            count, total = int(row["n"]), float(row["total"])
            if (count, total) != (len(samples), float(sum(v for _, v in samples))):
                problems.append(
                    f"counter {name!r}: trace_processor holds {count} samples summing to "
                    f"{total}, the trace has {len(samples)} summing to {sum(v for _, v in samples)}"
                )
            if float(row["last_value"]) != 0:
                problems.append(f"counter {name!r}: last sample is {row['last_value']}, not 0")
            before = row["before_ts"]
            if before != "[NULL]" and int(before) >= int(row["last_ts"]):
                problems.append(
                    f"counter {name!r}: closing sample at {row['last_ts']} is not after the "
                    f"sample at {before}"
                )
    for key in sorted(set(meant) - held):
        problems.append(f"counter {view.tracks[int(key)].name!r}: no samples in trace_processor")
    return problems


@contextmanager
def open_trace(trace: Path) -> Iterator[Any]:
    """The `perfetto` package's TraceProcessor on `trace`, with our binary (it would download
    one otherwise) and a port of its own (the UI test needs 9001)."""
    from perfetto.trace_processor import TraceProcessor, TraceProcessorConfig

    assert BINARY is not None, SKIP_REASON
    tp = TraceProcessor(
        trace=str(trace), config=TraceProcessorConfig(bin_path=str(BINARY), unique_port=True)
    )
    try:
        yield tp
    finally:
        tp.close()


def rows(tp: Any, sql: str) -> list[dict[str, Any]]:
    """Every row of `sql` as a dict (column → Python value; NULL is None)."""
    return [dict(row.__dict__) for row in tp.query(sql)]


def stat_errors(tp: Any) -> list[str]:
    return [f"{r['severity']}:{r['name']}={r['value']}" for r in rows(tp, STATS_SQL)]


def tally(items: Iterator[Any] | list[Any]) -> dict[Any, int]:
    return dict(Counter(items))
