"""Shared test helpers. Every trace the suite exports goes through `export_trace`, which
decodes it with perfetto_trace_pb2, runs TRACE_CONTRACT §8's checklist on it, and loads it
into Perfetto's real importer (realtp.check_import: no import errors, every counter sample,
slice and flow arrives, closing zeros last) when trace_processor_shell is available.

Without the binary, Perfetto's importer rules still apply: every trace any test decodes
(traceview.load_trace) is run through importer_rules.py, and `_importer_rules` below fails
the test if one would lose or change data on import (tests decoding broken traces on
purpose are marked `importer_broken`)."""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from contract import check_contract
from realtp import check_import
from traceview import IMPORT_PROBLEMS, TraceView, load_trace

DATA = Path(__file__).parent / "data" / "journals"
GOLDEN = Path(__file__).parent / "golden"

# A few test modules share their journals and helpers with others by name (`from test_codex
# import CLI`); with the tests in folders that mirror the package, every folder holding test
# modules is importable, so that works whichever tests are selected (pytest's default import
# mode puts a module's own folder on the path only once it collects it).
for _folder in sorted({p.parent for p in Path(__file__).parent.rglob("test_*.py")}):
    if "data" not in _folder.relative_to(Path(__file__).parent).parts:
        sys.path.append(str(_folder))


def pytest_configure(config: pytest.Config) -> None:
    """Under `make mutation`'s first pass (mutmut maps each test to the functions it
    reaches: `MUTANT_UNDER_TEST=stats`), a tool run in a subprocess that imports the
    mutated tree (PYTHONPATH to it) records each function it reaches through mutmut's
    configuration, which it looks for in its own folder, a test's temporary one: it
    failed there (exit 70, `Could not figure out where the code to mutate is`), and the
    pass stopped at the first such test. The children of such a pass record nothing
    (mutmut's dependency depth 0); a mutant only a subprocess reaches counts as not
    killed, as the scores already say of the tests left out (pyproject.toml)."""
    import os

    if os.environ.get("MUTANT_UNDER_TEST") != "stats":
        return
    import subprocess

    real = subprocess.Popen.__init__

    def init(self: subprocess.Popen[Any], *args: Any, **kwargs: Any) -> None:
        env = kwargs.get("env")
        kwargs["env"] = {**(os.environ if env is None else env), "MUTMUT_DEPENDENCY_DEPTH": "0"}
        real(self, *args, **kwargs)

    subprocess.Popen.__init__ = init  # type: ignore[method-assign]
    _forked_children_record_hits()


# Where forked children write the functions they reached under mutmut's first pass
# (`_forked_children_record_hits`), and this process's pid (set when that pass runs).
_HITS: list[Path] = []
_TEST_PROCESS: list[int] = []


def _forked_children_record_hits() -> None:
    """A forked child (a reading helper, scan.py's helper, the second run's helper, a
    folder's worker) runs the mutated functions without returning to pytest, so mutmut saw
    none of them reached and ran no test against their mutants ("no tests": claude_told's
    and stream/forked.py's in tests/mutation-survivors.md). Under the first pass, each child
    writes each function it reaches, as it reaches it (it may be killed before it exits),
    to a file of this test process, and the test's teardown adds them to the test's."""
    import os
    import tempfile

    from mutmut.state import state

    _HITS[:] = [Path(tempfile.mkdtemp(prefix="mutmut-hits-"))]
    _TEST_PROCESS[:] = [os.getpid()]
    real_fork = os.fork

    class Written(set[str]):
        """mutmut's set of functions reached, each new one also written to `path`."""

        path = ""

        def add(self, name: str) -> None:
            if name not in self:
                super().add(name)
                with open(self.path, "a") as hits:
                    hits.write(name + "\n")

    def fork() -> int:
        pid = real_fork()
        if pid == 0:
            written = Written(state()._stats)
            written.path = str(_HITS[0] / f"{_TEST_PROCESS[0]}-{os.getpid()}")
            state()._stats = written
        return pid

    os.fork = fork


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    """Under mutmut's first pass: the functions the test's forked children reached are the
    test's too (before mutmut's own teardown maps them)."""
    if not _HITS:
        return
    from mutmut.state import state

    for written in _HITS[0].glob(f"{_TEST_PROCESS[0]}-*"):
        state()._stats.update(written.read_text().split())
        written.unlink()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden", action="store_true", help="rewrite tests/golden/ from the code"
    )


@pytest.fixture(autouse=True)
def _importer_rules(request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """Fail a test any of whose decoded traces Perfetto's importer would record a problem
    for (importer_rules.py), unless the test is marked `importer_broken`."""
    IMPORT_PROBLEMS.clear()
    yield
    found = list(IMPORT_PROBLEMS)
    IMPORT_PROBLEMS.clear()
    if found and request.node.get_closest_marker("importer_broken") is None:
        lines = []
        for source, problems in found:
            lines += [f"{source}: {problem}" for problem in problems[:10]]
            if len(problems) > 10:
                lines.append(f"{source}: … {len(problems) - 10} more")
        pytest.fail("Perfetto's importer rules (tests/importer_rules.py):\n" + "\n".join(lines))


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
        problems = check_contract(
            view, require_addition=require_addition, strict=True, forward_arrows=True
        )
        assert problems == [], "\n".join(problems)
        imported = check_import(out, view)
        assert imported == [], "\n".join(imported)
        return Exported(out, view, result.stdout, result.stderr, result.exit_code)

    return run


@pytest.fixture(scope="session")
def corpus_points_by_input() -> dict[str, list[Any]]:
    """The calibration points of every corpus input, by input name, in the corpus's order,
    read once per test session for the calibration tests (the corpus is read once per
    character class: ~12 s)."""
    import _corpus
    from shared_paths import CORPUS

    if not CORPUS.is_dir():
        pytest.skip(f"needs the shared corpus at {CORPUS}")
    by_input: dict[str, list[Any]] = {}
    for path in _corpus.corpus_inputs(CORPUS):
        # A Pi fork's copied history counts: its requests are real (scripts/_corpus.py).
        points = [dataclasses.replace(p, input=path.name) for p in _corpus.points(path)]
        by_input[path.name] = points
    return by_input
