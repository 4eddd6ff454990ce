"""Fixtures the calibration tests share."""

from __future__ import annotations

from typing import Any

import pytest

from shared_paths import CORPUS


@pytest.fixture(scope="session")
def corpus_points_by_input() -> dict[str, list[Any]]:
    """The calibration points of every corpus input, by input name, in the corpus's order,
    read once per test session (the corpus is read once per character class: ~12 s)."""
    import _corpus

    if not CORPUS.is_dir():
        pytest.skip(f"needs the shared corpus at {CORPUS}")
    return {path.name: list(_corpus.points(path)) for path in _corpus.corpus_inputs(CORPUS)}
