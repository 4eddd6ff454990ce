"""What a `collect` or `fleet` killed outright (SIGKILL, the OOM killer) leaves in the
dataset's folder, and that the next one does not keep it. A collect killed as it swapped
`current` to its new version left `DIR/.current-<pid>` (its link to the version) for good:
the next collect removed the version (`versions/` is swept) but not the link, a dangling
dot-file. A fleet killed while it wrote its price cache left `.prices-cache.json.<pid>`
beside it, for good too. Each run here is killed by an audit hook at the moment it names
a file in the dataset's folder (os.rename, os.link): its last step before the file is
in place."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from dsfiles import collected, journals, run

pytest.importorskip("duckdb")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="SIGKILL, fork")

KILLED_AT = """
import os, signal, sys

when = sys.argv[1]


def kill(event, args):
    # os.rename's and os.link's first arguments: the source and the destination
    if event in ("os.rename", "os.link") and any(when in os.path.basename(a) for a in args[:2]):
        os.kill(os.getpid(), signal.SIGKILL)


sys.addaudithook(kill)
from agent_profiler.cli import app

app(sys.argv[2:], prog_name="agent-profiler")
"""


def _killed(when: str, *args: str) -> None:
    """Run `agent-profiler ARGS`, SIGKILLed as it names a file whose name holds `when`."""
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AT, when, *args],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    journals(tmp_path)
    return tmp_path


def test_a_collect_killed_as_it_swaps_current_leaves_nothing_the_next_keeps(
    here: Path,
) -> None:
    collected("J")
    before = os.readlink("ds/current")
    # GIVEN a collect of new journals killed as it makes its new version `current`
    _killed(".current-", "collect", "more", "--to", "ds")
    # THEN `current` is as it was, and the killed collect's link and version are left
    assert os.readlink("ds/current") == before
    (link,) = [n for n in os.listdir("ds") if n.startswith(".current-")]
    assert sorted(os.listdir("ds/versions")) == ["000001", "000002"]
    # AND the next collect removes them, and does the work
    collected("more")
    assert sorted(os.listdir("ds")) == [".lock", "current", "versions"], link
    assert sorted(os.listdir("ds/versions")) == ["000002"]
    assert os.readlink("ds/current").endswith("000002")


@pytest.mark.parametrize("cached", [False, True], ids=["first", "again"])
def test_a_fleet_killed_as_it_writes_its_price_cache_leaves_nothing_beside_it(
    here: Path, cached: bool
) -> None:
    pytest.importorskip("genai_prices")
    collected("J")
    if cached:
        assert run("fleet", "ds", "--json").exit_code == 0
        Path("ds/prices-cache.json").write_text("{}")  # to be priced afresh and written
    names = sorted(os.listdir("ds"))
    # WHEN a fleet is killed as it puts its price cache in place
    _killed("prices-cache.json", "fleet", "ds", "--json")
    # THEN the dataset's folder holds what it held
    assert sorted(os.listdir("ds")) == names
