"""A file that cannot be used, read in a worker process (pipeline.py): the worker sends its
failure back pickled, and the parent says it in one line beside everything else it read.
JournalError could not be unpickled (its `__init__` takes the path and the message, the
default pickling gives it the joined line): any such failure in a worker ended the run as an
internal error (exit 70) with nothing written."""

from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import errors
from agent_profiler.adapters.muse_journal import ApprovalReviewLogError
from agent_profiler.cli import app
from samples import CLAUDE_SMALL, CODEX_SMALL, PI_LARGE
from traceview import load_trace

runner = CliRunner()


def _error_classes() -> list[type[BaseException]]:
    """Every error class of the package: errors.py's tree, with its subclasses elsewhere."""
    found: list[type[BaseException]] = []
    todo: list[type[BaseException]] = [errors.AgentProfilerError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def _example(cls: type[BaseException]) -> BaseException:
    if issubclass(cls, errors.JournalError):
        return cls("logs/a.jsonl", "cut short", 7)
    return cls("cannot write here")


def test_every_error_class_is_known_here() -> None:
    names = {cls.__name__ for cls in _error_classes()}
    assert ApprovalReviewLogError.__name__ in names
    assert {"UsageError", "JournalError", "DamagedJournalError", "OutputError"} <= names


@pytest.mark.parametrize("cls", _error_classes(), ids=lambda cls: cls.__name__)
def test_every_error_survives_pickling(cls: type[BaseException]) -> None:
    error = _example(cls)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    for name in ("path", "message", "line"):
        assert getattr(back, name, None) == getattr(error, name, None)


def test_a_journal_error_without_a_line_survives_pickling() -> None:
    back = pickle.loads(pickle.dumps(errors.DamagedJournalError("a.jsonl.gz", "cut short")))
    assert (str(back), back.line) == ("a.jsonl.gz: cut short", None)
    assert isinstance(back, OSError)


def test_a_failure_that_cannot_travel_goes_back_as_a_plain_journal_error() -> None:
    from agent_profiler.children import portable

    class Odd(errors.JournalError):
        def __init__(self, path: str, why: str, extra: int) -> None:
            super().__init__(path, why)

        def __reduce__(self) -> tuple[type[Odd], tuple[str]]:  # type: ignore[override]
            return Odd, (self.path,)  # loses its arguments: cannot be rebuilt

    odd = Odd("a.jsonl", "not a journal", 3)
    sent = pickle.loads(pickle.dumps(portable(odd)))
    assert (type(sent), str(sent)) == (errors.JournalError, "a.jsonl: not a journal")
    fine = errors.JournalError("b.jsonl", "empty")
    assert portable(fine) is fine


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """A Codex rollout among journals of other harnesses: read with `--harness codex`, each
    other file is a failure found while reading its group, in a worker (`--jobs 2` starts
    one whatever the input's size)."""
    folder = tmp_path / "in"
    folder.mkdir()
    for source in (CLAUDE_SMALL, CODEX_SMALL, PI_LARGE):
        shutil.copy(source, folder / source.name)
    return folder


def _failures(stderr: str) -> list[str]:
    return sorted(line for line in stderr.splitlines() if line.startswith("error:"))


@pytest.mark.slow
def test_a_file_that_fails_in_a_worker_is_one_line_and_the_rest_is_exported(
    mixed: Path, tmp_path: Path
) -> None:
    outputs = {}
    for jobs in ("1", "2"):
        out = tmp_path / f"t{jobs}.pftrace"
        result = runner.invoke(
            app, ["export", str(mixed), "--harness", "codex", "-j", jobs, "-o", str(out)]
        )
        assert result.exit_code == 1, result.output + result.stderr
        assert "internal error" not in result.stderr
        assert _failures(result.stderr) == [
            f"error: {PI_LARGE.name}: nothing in it reads as codex "
            "(it looks like a pi journal; drop --harness)",
            f"error: {CLAUDE_SMALL.name}: nothing in it reads as codex "
            "(it looks like a claude-code journal; drop --harness)",
        ]
        outputs[jobs] = out.read_bytes()
    assert outputs["1"] == outputs["2"]
    assert len(load_trace(outputs["2"]).captures()) == 1


@pytest.mark.slow
def test_summary_and_collect_say_a_worker_failure_and_go_on(mixed: Path, tmp_path: Path) -> None:
    summary = runner.invoke(app, ["summary", str(mixed), "--harness", "codex", "-j", "2", "--json"])
    assert summary.exit_code == 1, summary.output + summary.stderr
    assert len(_failures(summary.stderr)) == 2 and "internal error" not in summary.stderr
    assert CODEX_SMALL.stem.split("-", 7)[-1] in summary.stdout
    dataset = tmp_path / "ds"
    collect = runner.invoke(
        app, ["collect", str(mixed), "--harness", "codex", "-j", "2", "--to", str(dataset)]
    )
    assert collect.exit_code == 1, collect.output + collect.stderr
    assert len(_failures(collect.stderr)) == 2 and "internal error" not in collect.stderr
    assert (dataset / "current" / "manifest.json").is_file()
