"""A journal a plan finds beside one given (a Claude Code subagent's file beside its
session's given alone, a Codex child rollout beside its parent's) in a collect."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from typing import Any

import pytest
from dsfiles import run
from test_regroup import SPOTTER, _groups, _rows

pytest.importorskip("duckdb")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def as_fresh(*args: str) -> None:
    """The dataset `ds` is the one a fresh collect of `args` makes (its rows, its manifest's
    journals and groups)."""
    fresh = run("collect", *args, "--to", "fresh", "--jobs", "1")
    assert fresh.exit_code == 0, fresh.output
    assert _rows(Path("ds")) == _rows(Path("fresh"))
    assert _groups(Path("ds")) == _groups(Path("fresh"))


def collect(*args: str) -> Any:
    result = run("collect", *args, "--to", "ds", "--jobs", "1")
    assert result.exit_code == 0, result.output + result.stderr
    return result


def test_a_changed_parent_given_alone_does_not_say_its_subagents_are_gone(here: Path) -> None:
    """A group read again (its parent changed, given alone) finds its subagents' files
    where its plan finds them (below the session's file): they were looked for in the
    parent's folder and the two above only, and said "not found now" while read."""
    shutil.copytree(SPOTTER, "sp")
    (packed,) = Path("sp").glob("*.jsonl.gz")
    main = packed.with_suffix("")
    main.write_bytes(gzip.decompress(packed.read_bytes()))
    packed.unlink()
    collect(str(main))
    lines = main.read_bytes().splitlines(keepends=True)
    main.write_bytes(b"".join(lines) + lines[-1])
    again = collect(str(main))
    assert "not found now" not in again.stderr + again.stdout
    assert "0 new, 1 changed" in again.stdout
    as_fresh(str(main))
