"""The model's classes are frozen to the type checker and plain slots dataclasses at run
time (records.frozen, re-exported by model.py: a frozen dataclass's __init__ cost a
seventh of reading a journal). What keeps them unchanged once made is `mypy --strict`,
which `make test` runs on src/: these tests pin both halves."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_profiler import model
from agent_profiler.model import Category, ChangeKind, ContextChange

pytestmark = pytest.mark.slow  # runs mypy

CLASSES = [
    getattr(model, name)
    for name in dir(model)
    if isinstance(getattr(model, name), type) and dataclasses.is_dataclass(getattr(model, name))
]


def test_every_model_class_is_made_by_the_frozen_decorator() -> None:
    # Slots (no __dict__), hashable and compared by value, as a frozen dataclass is.
    assert len(CLASSES) >= 9
    for cls in CLASSES:
        assert "__slots__" in vars(cls), cls
        assert cls.__hash__ is not None, cls
    change = ContextChange("a", Category.RESULTS, ChangeKind.ADDED, 3, 3)
    assert change == ContextChange("a", Category.RESULTS, ChangeKind.ADDED, 3, 3)
    assert len({change, ContextChange("a", Category.RESULTS, ChangeKind.ADDED, 3, 3)}) == 1


def test_the_type_checker_rejects_changing_a_model_object(tmp_path: Path) -> None:
    # GIVEN code that assigns to a field of each kind of model object
    snippet = tmp_path / "changes_the_model.py"
    snippet.write_text(
        "from agent_profiler.model import (Category, ChangeKind, ContextChange, Harness,\n"
        "    Response, Session, ToolCall, Usage)\n"
        "c = ContextChange('a', Category.RESULTS, ChangeKind.ADDED, 3, 3)\n"
        "c.tokens = 4\n"
        "r = Response('r', 0, 1, 'm', Usage(1))\n"
        "r.model = 'other'\n"
        "r.usage.prompt_tokens = 2\n"
        "t = ToolCall('c', 'read', 0, 1)\n"
        "t.target = 'path:/home/me'\n"
        "s = Session(harness=Harness.PI, session_id='s', start_ns=0, end_ns=1, sources=())\n"
        "s.session_id = 'x'\n"
    )
    # WHEN mypy --strict reads it, as `make test` reads src/ (in a process of its own: mypy
    # sets the collector's thresholds of the process it runs in)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir",
         str(tmp_path / "cache"), str(snippet)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "MYPYPATH": str(Path(model.__file__).parents[1])},
    )  # fmt: skip
    out, status = done.stdout, done.returncode
    # THEN every assignment is an error
    rejected = {int(line.split(":")[1]) for line in out.splitlines() if "read-only" in line}
    assert status == 1 and rejected == {4, 6, 7, 9, 11}, out
