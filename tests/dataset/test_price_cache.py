"""A price cache of the wrong shape in the dataset's folder (review-bad finding 22): JSON,
but not the object a fleet writes, was `internal error: AttributeError` (exit 70). A
cache is priced afresh and written again, as one that is not JSON is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dsfiles import collected, journals, run

pytest.importorskip("duckdb")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "cache",
    [
        "[]",
        "null",
        "42",
        '{"table": "TABLE", "format": 2, "date": "2026-12-01", "prices": []}',
        '{"table": "TABLE", "format": 2, "date": 5, "prices": {}}',
        '{"table": "TABLE", "format": 2, "date": "2026-12-01", "prices": {"m|2026-01-01": 5}}',
        '{"table": "TABLE", "format": 2, "prices": {"m|2026-01-01": {"model": "m"}}}',
        '{"table": "TABLE", "format": 2, "prices": {"m|2026-01-01": '
        '{"model": "m", "provider": "p", "prices": {"input": ["x", []]}}}}',
    ],
)
def test_a_price_cache_of_another_shape_is_priced_afresh(here: Path, cache: str) -> None:
    from agent_profiler.cost import PriceTable

    collected("J")
    expected = run("fleet", "ds", "--json")
    assert expected.exit_code == 0
    Path("ds/prices-cache.json").write_text(cache.replace("TABLE", PriceTable().name))
    fleet = run("fleet", "ds", "--json")
    assert (fleet.exit_code, fleet.stderr) == (0, "")
    assert json.loads(fleet.stdout)["cost"] == json.loads(expected.stdout)["cost"]
    assert isinstance(json.loads(Path("ds/prices-cache.json").read_text())["prices"], dict)
