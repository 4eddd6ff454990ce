"""Shared test helpers. Every trace the suite exports goes through `export_trace`, which
decodes it with perfetto_trace_pb2, runs TRACE_CONTRACT §8's checklist on it, and loads it
into Perfetto's real importer (realtp.check_import: no import errors, every counter sample,
slice and flow arrives, closing zeros last) when trace_processor_shell is available."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from contract import check_contract
from realtp import check_import
from traceview import TraceView, load_trace

DATA = Path(__file__).parent / "data" / "journals"
GOLDEN = Path(__file__).parent / "golden"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite tests/golden/ from the code"
    )


@dataclass
class Exported:
    path: Path
    view: TraceView
    stdout: str
    stderr: str
    exit_code: int


@pytest.fixture
def export_trace(tmp_path: Path):  # type: ignore[no-untyped-def]
    """export_trace(*journals, *extra_args, strict_addition=True) -> Exported."""
    counter = iter(range(1_000))

    def run(
        *journals: Path,
        args: tuple[str, ...] = (),
        require_addition: bool = True,
        exit_code: int = 0,
    ) -> Exported:
        out = tmp_path / f"trace{next(counter)}.pftrace"
        result = CliRunner().invoke(app, ["export", *map(str, journals), "-o", str(out), *args])
        assert result.exit_code == exit_code, result.output + result.stderr
        view = load_trace(out)
        problems = check_contract(view, require_addition=require_addition, strict=True)
        assert problems == [], "\n".join(problems)
        imported = check_import(out, view)
        assert imported == [], "\n".join(imported)
        return Exported(out, view, result.stdout, result.stderr, result.exit_code)

    return run
