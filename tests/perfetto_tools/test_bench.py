"""scripts/bench.py must keep working: its journal builders make valid journals with
fresh ids and shifted times, and its verdicts follow the targets. (The whole bench
takes too long for the suite; `bench.py --quick --no-peer` is its smoke test.)"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import sys
from pathlib import Path

import orjson
import pytest

from shared_paths import REPO

pytestmark = pytest.mark.slow  # runs the benchmark script: `make check` leaves it out

SCRIPT = REPO / "scripts" / "bench.py"


@pytest.fixture(scope="module")
def bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench"] = module
    spec.loader.exec_module(module)
    return module


def _records(path: Path) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_replayed_claude_journal_has_fresh_ids_and_later_times(bench, tmp_path: Path) -> None:
    source = bench.read_source(bench.CLAUDE_TASKS)
    target = bench.replay("claude", source, tmp_path / "c.jsonl", 2 * len(source) + 1)
    records = _records(target)
    original = [orjson.loads(line) for line in source.splitlines() if line.strip()]
    assert len(records) >= 2 * len(original)
    uuids = [r["uuid"] for r in records if "uuid" in r]
    assert len(uuids) == len(set(uuids))
    first, second = records[: len(original)], records[len(original) : 2 * len(original)]
    assert [r.get("type") for r in first] == [r.get("type") for r in second]
    first_times = [r["timestamp"] for r in first if "timestamp" in r]
    assert min(r["timestamp"] for r in second if "timestamp" in r) > max(first_times)


def test_replayed_pi_journal_shifts_epoch_ms_and_keeps_one_header(bench, tmp_path: Path) -> None:
    source = bench.read_source(bench.PI_LARGE)
    target = bench.replay("pi", source, tmp_path / "p.jsonl", 3 * len(source))
    records = _records(target)
    assert sum(1 for r in records if r.get("type") == "session") == 1
    copy = sum(1 for line in source.splitlines() if line.strip())

    def epochs(part: list[dict[str, object]]) -> list[int]:
        messages = [r["message"] for r in part if isinstance(r.get("message"), dict)]
        return [m["timestamp"] for m in messages if isinstance(m.get("timestamp"), int)]

    assert epochs(records[:copy]) and min(epochs(records[copy:])) > max(epochs(records[:copy]))
    ids = [r["id"] for r in records if "id" in r]
    assert len(ids) == len(set(ids))


def test_folder_sessions_are_distinct_and_sized(bench, tmp_path: Path) -> None:
    folder = bench.build_folder(tmp_path / "folder", 4, 50_000, 100_000)
    files = sorted(folder.rglob("*.jsonl"))
    assert len(files) == 4
    assert all(50_000 <= f.stat().st_size < 150_000 for f in files)
    claude = [f for f in files if f.parent.name == "claude"]
    sessions = {r["sessionId"] for f in claude for r in _records(f) if "sessionId" in r}
    assert sessions == {f.stem for f in claude}
    codex_ids = [
        r["payload"]["id"] for f in files if f.parent.name == "codex" for r in _records(f)[:1]
    ]
    assert len(codex_ids) == len(set(codex_ids)) == 2
    assert all(re.search(r"-f\d+r0$", i) for i in codex_ids)


def test_verdicts_follow_the_targets(bench) -> None:
    row = bench.Row("x", 100, 3.0, 1.0, 90, trace_share=0.04, peer_seconds=6.0, max_floor=3)
    row.min_speedup, row.max_rss_mb, row.max_share = 2, 100, 0.05
    assert row.failures() == []
    row.seconds, row.peak_rss_mb = 4.0, 120
    assert row.failures() == ["floor", "peer", "rss"]
    text = bench.table([row], (50.0, 70.0))
    assert "FAIL floor,peer,rss" in text and "1.40 (≤1.3)  FAIL" in text


def test_a_value_just_past_its_target_reads_as_past_it(bench) -> None:
    row = bench.Row("x", 100, 0.79, 0.26, 74, max_floor=3)
    assert row.failures() == ["floor"]
    assert "  3.04 (≤3)" in bench.table([row], None)
    # rounded away from the target when it misses it, as usual when it meets it
    rows = [
        bench.Row("f", 100, 0.7509, 0.25, 74, max_floor=3),
        bench.Row("r", 100, 0.5, 0.25, 40.4, max_rss_mb=40),
        bench.Row("p", 100, 1.0, 0.25, 30, peer_seconds=1.2996, min_speedup=1.3),
        bench.Row("s", 100, 1.0, 0.25, 30, trace_share=0.05001, max_share=0.05),
        bench.Row("t", 100, 2.0001, 0.25, 30, max_seconds=2),
        bench.Row("ok", 100, 0.7496, 0.25, 39.6, max_floor=3, max_rss_mb=40),
    ]
    text = bench.table(rows, None).splitlines()[2:]
    assert "3.01 (≤3)" in text[0] and text[0].endswith("FAIL floor")
    assert "41 (≤40)" in text[1] and text[1].endswith("FAIL rss")
    assert "1.29 (≥1.3)" in text[2] and text[2].endswith("FAIL peer")
    assert "5.1% (≤5%)" in text[3] and text[3].endswith("FAIL size")
    assert "2.01(≤2)" in text[4] and text[4].endswith("FAIL time")
    assert "3.00 (≤3)" in text[5] and "40 (≤40)" in text[5] and text[5].endswith("PASS")


def test_cpu_time_counts_the_workers_and_is_shown_beside_the_wall_ratios(bench) -> None:
    """The CPU column is the process tree's: a child that burns CPU and is waited for
    counts (a folder's workers, the deflating thread), a process that only sleeps costs
    next to nothing however long it takes."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"
    parent = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {burn!r}])"
    _, _, _, cpu = bench.run_once([sys.executable, "-c", parent])
    assert cpu >= 0.3
    wall, _, _, idle = bench.run_once([sys.executable, "-c", "import time; time.sleep(0.4)"])
    assert wall >= 0.4 and idle < 0.3
    row = bench.Row("x", 100, 3.0, 1.0, 90, peer_seconds=6.0)
    row.cpu_seconds, row.floor_cpu_seconds, row.peer_cpu_seconds = 4.0, 0.5, 10.0
    assert (row.cpu_floor_ratio, row.cpu_speedup) == (8.0, 2.5)
    line = bench.table([row], None).splitlines()[2]
    assert re.search(r"\s4\.00\s+8\.0\s+2\.50\s+PASS$", line), line
    row.peer_cpu_seconds = row.floor_cpu_seconds = None
    assert row.cpu_floor_ratio is None and row.cpu_speedup is None
    assert re.search(r"\s4\.00\s+-\s+-\s+PASS$", bench.table([row], None).splitlines()[2])


def test_the_results_say_which_interpreter_and_how_busy_the_machine_was(bench) -> None:
    """A ratio measured on a loaded machine, or by another interpreter build, is not the
    same number: the run says which Python ran ours and the floor, on how many cores, and
    the load average before and after its rows."""
    machine = bench.machine_facts(1.5)
    assert machine["executable"] == os.path.realpath(sys.executable)
    assert machine["python"] == f"{platform.python_implementation()} {platform.python_version()}"
    assert machine["cores"] == os.cpu_count() and machine["load_before"] == 1.5
    assert machine["load_after"] is None or machine["load_after"] >= 0
    line = bench.machine_line({**machine, "load_after": 0.25}).splitlines()[0]
    assert line == (
        f"measured with {machine['python']} ({machine['executable']}) on {os.cpu_count()} cores; "
        "load average 1.5 before, 0.25 after"
    )
    # A machine already busy before the rows is said to be, under the facts.
    busy = bench.machine_line({**machine, "cores": 2, "load_before": 1.0})
    assert busy.splitlines()[1].startswith("the machine was busy before the rows ran")
    assert "busy" not in bench.machine_line({**machine, "cores": 2, "load_before": 0.99})
    assert "busy" not in bench.machine_line({**machine, "load_before": None})
    # The peer's venv may have been made by another interpreter: said when it was.
    peer = bench.machine_facts(None, [str(Path(sys.executable).parent / "agent2perfetto")])
    assert peer["peer_executable"] == os.path.realpath(sys.executable)
    assert "the peer" not in bench.machine_line(peer)
    other = bench.machine_line({**machine, "peer_executable": "/opt/other/python3"})
    assert f"({machine['executable']}; the peer with /opt/other/python3) on" in other


def test_a_failed_command_ends_the_rows_with_those_measured_printed(
    bench, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A row whose command fails (an output refused, a crash) ends the run, but the rows
    measured before it are printed and kept in results.json, with what stopped them, and
    the run exits 1 (a full run once printed nothing at all after its last row failed)."""
    import json

    real = bench.run_once

    def failing(command: list[str]) -> tuple[float, float, float, float]:
        if "summary" in command:
            raise RuntimeError("agent-profiler summary … exited 2: error: refused")
        return real(command)

    monkeypatch.setattr(bench, "run_once", failing)
    monkeypatch.setattr(bench, "compile_package", lambda: None)
    argv = ["--quick", "--no-peer", "--only", "startup,summary", "--dir", str(tmp_path)]
    assert bench.main(argv) == 1
    out, err = capsys.readouterr()
    names = [line.split("  ")[0] for line in out.splitlines()[2:] if line.strip()]
    assert names[0] == "start-up (100 KB export)" and not any("summary" in n for n in names)
    assert "stopped before the other rows: agent-profiler summary … exited 2" in err
    results = json.loads((tmp_path / "results.json").read_text())
    assert [row["name"] for row in results["rows"]] == ["start-up (100 KB export)"]
    assert results["stopped"].endswith("error: refused")
