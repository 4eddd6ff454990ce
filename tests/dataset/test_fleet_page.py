"""`fleet -o` a file of the dataset it reads (review-bad finding 6): the page went over
the manifest (or a table) with `--force`, and the dataset was destroyed. Refused, with or
without `--force`, exit 2, the dataset untouched."""

from __future__ import annotations

from pathlib import Path

import pytest
from dsfiles import collected, journals, parquet, run, sessions

pytest.importorskip("duckdb")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


@pytest.mark.parametrize(
    "output",
    [
        "ds/current/manifest.json",
        "ds/versions/000001/manifest.json",
        "ds/prices-cache.json",
        "ds/page.html",
        "PARQUET",
    ],
)
def test_fleet_never_writes_its_page_inside_the_dataset_it_reads(here: Path, output: str) -> None:
    collected("J")
    assert run("fleet", "ds", "--no-cost").exit_code == 0
    if output == "PARQUET":
        output = str(parquet("sessions"))
    before = {p: p.read_bytes() for p in Path("ds").rglob("*") if p.is_file()}
    for force in ([], ["--force"]):
        fleet = run("fleet", "ds", "-o", output, *force)
        assert fleet.exit_code == 2, fleet.output
        if force or not Path(output).exists():
            assert fleet.stderr == (
                f"error: --html {output} is inside the dataset this reads (ds): write the "
                "page somewhere else\n"
            )
    assert {p: p.read_bytes() for p in Path("ds").rglob("*") if p.is_file()} == before
    assert sessions() == 1


def test_through_a_link_to_the_dataset_too(here: Path) -> None:
    collected("J")
    Path("link").symlink_to("ds")
    fleet = run("fleet", "ds", "-o", "link/current/manifest.json", "--force")
    assert fleet.exit_code == 2
    assert "is inside the dataset this reads (ds)" in fleet.stderr
    fleet = run("fleet", "link", "-o", "ds/current/manifest.json", "--force")
    assert fleet.exit_code == 2
    assert sessions() == 1
    assert run("fleet", "ds", "-o", "page.html").exit_code == 0
    assert Path("page.html").read_text().startswith("<!")
