"""What the tests of a dataset's files share (test_parquet_hashes, test_manifest_shape,
test_glob_names, test_fleet_page, test_price_cache, test_journal_damaged_later): a dataset
`ds` collected from `J` (one Claude Code session) or `more` (a Codex rollout), and the
files and figures of it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import CLAUDE_SMALL, CODEX_SMALL

runner = CliRunner()
HINT = "collect into a new folder to make the dataset again from its journals"
NOT_CHANGED = "the dataset was not changed; " + HINT


def journals(folder: Path) -> None:
    """`J`: one Claude Code session; `more`: a Codex rollout."""
    for name, source in (("J", CLAUDE_SMALL), ("more", CODEX_SMALL)):
        (folder / name).mkdir()
        shutil.copy(source, folder / name / source.name)


def run(*args: str) -> Any:
    result = runner.invoke(app, list(args))
    assert "internal error" not in result.stderr and "Traceback" not in result.output
    return result


def collected(journals: str, dataset: str = "ds") -> Any:
    result = run("collect", journals, "--to", dataset)
    assert result.exit_code == 0, result.output
    return result


def parquet(table: str, dataset: str = "ds") -> Path:
    return next((Path(dataset) / "current" / table).rglob("*.parquet"))


def shown(path: Path, dataset: str = "ds") -> str:
    """A file of the current version as the messages name it: `ds/versions/000001/…`."""
    relative = path.relative_to(Path(dataset) / "current")
    version = os.readlink(Path(dataset) / "current")
    return str(Path(dataset) / "versions" / Path(version).name / relative)


def edit_manifest(change: Any, dataset: str = "ds") -> None:
    manifest = Path(dataset) / "current" / "manifest.json"
    data = json.loads(manifest.read_text())
    change(data)
    manifest.write_text(json.dumps(data))


def tree(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def sessions(dataset: str = "ds") -> int:
    fleet = run("fleet", dataset, "--json", "--no-cost")
    assert fleet.exit_code == 0, fleet.output
    return int(json.loads(fleet.stdout)["sessions"]["count"])
