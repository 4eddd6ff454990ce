"""What the dataset tests share: `here`, the current folder holding `dsfiles.journals`
(a module's own `here` takes its place, as test_damaged.py's does)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsfiles import journals


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path
