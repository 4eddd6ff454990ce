"""The trace in sample_traces/ is what `make demo` writes today: the demo's export run again
gives the same bytes (so a fresh clone's tree stays clean after `make demo`, and the
README's first picture of the product is the product's)."""

from __future__ import annotations

import re
from pathlib import Path

from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

ROOT = TESTS.parent
runner = CliRunner()


def test_the_committed_sample_trace_is_the_demos_export(tmp_path: Path) -> None:
    makefile = (ROOT / "Makefile").read_text()
    sample = re.search(r"^DEMO_JOURNAL := (\S+)$", makefile, re.MULTILINE)
    assert sample is not None
    out = tmp_path / "claude-code-compaction.pftrace"
    result = runner.invoke(app, ["export", str(ROOT / sample.group(1)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    committed = ROOT / "sample_traces" / "claude-code-compaction.pftrace"
    assert out.read_bytes() == committed.read_bytes(), "run `make demo` and commit the trace"
