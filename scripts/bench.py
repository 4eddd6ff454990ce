"""Every row of the performance targets (issues 31 and 32), measured in one run, with PASS/FAIL.

    python scripts/bench.py [--runs 3] [--quick] [--no-peer] [--only claude,codex,...]

Journals are built once (cached in .bench/, or .bench/quick/) by replaying real
sessions from tests/data with fresh ids and shifted times:
- claude: the spotter transcript replayed to ≈100 MB (and ≈25 MB: memory must stay
  flat, peak RSS at 100 MB ≤ 1.3× the peak at 25 MB);
- codex: the Desktop rollout replayed as 50 sessions of 1 MB, a rollout file each (the
  issue's row, "many sessions"), and replayed to one ≈50 MB session;
- pi: the large pi-mono session replayed to ≈50 MB (its message times are epoch ms);
- folder: 300 real-sized sessions (≈1–2 MB each, half Claude Code, half Codex), each
  a corpus session with its own session id and fresh ids, one file each;
- startup: a ≈100 KB Claude Code journal, against `python -c "import orjson"`;
- summary: `agent-profiler summary --json` of the folder;
- dataset (issue 31): a folder of 5,000 small sessions (the folder's sources replayed to
  20–60 KB each) collected on 2 cores (`collect --jobs 2`, against the floor, and against
  `summary --jobs 2` of the same folder, which reads the same groups: ≤ 1.5×); a
  re-collect after one new session (≤ 2 s); `fleet` queries on the dataset (each ≤ 1 s,
  against `fleet --help`: the command line's own start-up);
  peak RSS of the process tree ≤ 300 MB.

Each row's floor is reading every file and `orjson.loads` of every line, in one
process. Timings are best of --runs, wall clock, the verdicts' measure; each
row also shows the CPU seconds (user + system, of the process and every process it
waited for: workers, the deflating thread) and the same ratios in CPU, which move
less than wall time on a shared machine; peak RSS is of the whole process
tree (sampled from /proc, and never below the direct child's own peak from wait4);
the export rows also show the tree's peak PSS (pages shared by forked workers counted
once), beside the RSS, which the verdicts are of.
The peer is agent2perfetto 0.2.2, installed into .bench/peer-venv; on the folder it
is run once per file, as many at a time as there are cores. The machine is shared
and timings are noisy: the ratios are the point. Results also go to
.bench/results.json.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "journals"
BENCH = ROOT / ".bench"
PEER = "agent2perfetto==0.2.2"
CLAUDE_SPOTTER = (
    DATA
    / "claude-code"
    / "spotter-2.1.39-subagents-compaction"
    / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz"
)
CLAUDE_ENTIRE = DATA / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
CLAUDE_TASKS = DATA / "claude-code" / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
CODEX_DESKTOP = (
    DATA / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)
CODEX_CLI = (
    DATA / "codex" / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
)
PI_LARGE = DATA / "pi" / "pi-mono_large-session_v1.jsonl"
# The folder's sources, taken in turn: (kind, journal).
FOLDER_SOURCES = [
    ("claude", CLAUDE_SPOTTER),
    ("codex", CODEX_DESKTOP),
    ("claude", CLAUDE_ENTIRE),
    ("codex", CODEX_CLI),
    ("claude", CLAUDE_TASKS),
    ("codex", CODEX_DESKTOP),
]
MB = 2**20

FLOOR = (
    "import os, sys, orjson\n"
    "paths = []\n"
    "for arg in sys.argv[1:]:\n"
    "    if os.path.isdir(arg):\n"
    "        for root, _, names in os.walk(arg):\n"
    "            paths += [os.path.join(root, n) for n in names if n.endswith('.jsonl')]\n"
    "    else:\n"
    "        paths.append(arg)\n"
    "for path in sorted(paths):\n"
    "    with open(path, 'rb') as f:\n"
    "        for line in f:\n"
    "            if line.strip():\n"
    "                orjson.loads(line)\n"
)
# One peer run per file, as many at a time as there are cores: argv = peer, outdir, files…
PER_FILE = (
    "import os, subprocess, sys\n"
    "from concurrent.futures import ThreadPoolExecutor\n"
    "peer, out, files = sys.argv[1], sys.argv[2], sys.argv[3:]\n"
    "def one(index_path):\n"
    "    index, path = index_path\n"
    "    target = os.path.join(out, f'{index}.json')\n"
    "    done = subprocess.run([peer, path, '-o', target], stdout=subprocess.DEVNULL,\n"
    "                          stderr=subprocess.DEVNULL)\n"
    "    return done.returncode\n"
    "with ThreadPoolExecutor(os.cpu_count() or 1) as pool:\n"
    "    codes = list(pool.map(one, enumerate(files)))\n"
    "sys.exit(max(codes, default=0))\n"
)

_IDS = re.compile(
    rb'("(?:uuid|parentUuid|id|tool_use_id|call_id|requestId|leafUuid|messageId'
    rb"|sourceToolUseID|sourceToolAssistantUUID|toolUseID|parentToolUseID|parentId"
    rb'|toolCallId)":")'  # Pi's tool result names its call by toolCallId
    rb'([^"]+)"'
)
_SESSION_ID = re.compile(rb'("sessionId":")([^"]+)"')
_TIMESTAMP = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')
_EPOCH_MS = re.compile(rb'"timestamp":(\d{13})\b')  # Pi's message.timestamp (epoch ms)


# --- journal builders -------------------------------------------------------------------


def read_source(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def _moment(text: bytes) -> datetime:
    return datetime.fromisoformat(text.decode().replace("Z", "+00:00"))


def replay(
    kind: str,
    source: bytes,
    target: Path,
    nbytes: int,
    *,
    tag: str = "",
    first_copy: int = 0,
    session_id: str | None = None,
) -> Path:
    """Write `source` again and again to `target` until it is `nbytes` long (cut at a
    line boundary, so a small target may hold part of one copy). Copy n gets ids with
    the suffix `-{tag}r{n}` (message ids, call ids and uuids stay unique, also across
    files with distinct tags) and its times (ISO and Pi's epoch ms) move past the copy
    before it, so the result reads as one long session. Codex and Pi keep one session
    header for the whole replay; `session_id` replaces Claude Code's sessionId."""
    lines = [line for line in source.split(b"\n") if line.strip()]
    stamps = [_moment(m) for m in _TIMESTAMP.findall(source)]
    stamps += [datetime.fromtimestamp(int(m) / 1000, UTC) for m in _EPOCH_MS.findall(source)]
    span = (max(stamps) - min(stamps)) + timedelta(minutes=1) if stamps else timedelta(hours=1)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    written = 0
    copy = first_copy
    with partial.open("wb") as out:
        while written < nbytes:
            shift = span * copy
            shift_ms = int(shift.total_seconds() * 1000)

            def stamp(match: re.Match[bytes], shift: timedelta = shift) -> bytes:
                text = (_moment(match.group(1)) + shift).strftime("%Y-%m-%dT%H:%M:%S.%f")
                return b'"timestamp":"' + text[:-3].encode() + b'Z"'

            def epoch(match: re.Match[bytes], ms: int = shift_ms) -> bytes:
                return b'"timestamp":' + str(int(match.group(1)) + ms).encode()

            suffix = f"-{tag}r{copy}".encode()

            def fresh(match: re.Match[bytes], suffix: bytes = suffix) -> bytes:
                return match.group(1) + match.group(2) + suffix + b'"'

            for index, line in enumerate(lines):
                if copy > first_copy and index == 0 and kind == "codex":
                    continue  # one session_meta for the whole replay
                if copy > first_copy and kind == "pi" and b'"type":"session"' in line[:40]:
                    continue
                line = _IDS.sub(fresh, line)
                if session_id is not None:
                    line = _SESSION_ID.sub(b"\\1" + session_id.encode() + b'"', line)
                line = _TIMESTAMP.sub(stamp, line)
                line = _EPOCH_MS.sub(epoch, line)
                out.write(line + b"\n")
                written += len(line) + 1
                if written >= nbytes:
                    break
            copy += 1
    partial.replace(target)
    return target


def build_one(kind: str, source_path: Path, directory: Path, nbytes: int) -> Path:
    """One long replayed journal, cached by kind and size."""
    size = f"{nbytes // MB}mb" if nbytes >= MB else f"{nbytes // 1024}kb"
    target = directory / f"{kind}-{size}.jsonl"
    if not target.exists():
        replay(kind, read_source(source_path), target, nbytes)
    return target


def build_sessions(kind: str, source_path: Path, directory: Path, count: int, nbytes: int) -> Path:
    """`count` sessions of `nbytes` each, one rollout file each (fresh ids per file)."""
    folder = directory / f"{kind}-{count}x{nbytes // MB}mb"
    marker = folder / ".complete"
    if marker.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    source = read_source(source_path)
    for index in range(count):
        session = str(uuid.UUID(int=(0xC5 << 120) + index))
        target = folder / f"rollout-2026-03-01T00-00-00-{session}.jsonl"
        replay(kind, source, target, nbytes, tag=f"s{index}")
    marker.touch()
    return folder


def folder_sizes(count: int, low: int, high: int) -> list[int]:
    """Sizes spread evenly (and deterministically) between low and high."""
    return [low + (high - low) * ((index * 7) % 11) // 10 for index in range(count)]


def build_folder(directory: Path, count: int, low: int, high: int) -> Path:
    """`count` sessions, one file each, in the layouts their harnesses use."""
    marker = directory / ".complete"
    if marker.exists():
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    sources = {path: read_source(path) for _, path in FOLDER_SOURCES}
    for index, nbytes in enumerate(folder_sizes(count, low, high)):
        kind, path = FOLDER_SOURCES[index % len(FOLDER_SOURCES)]
        session = str(uuid.UUID(int=(0xB3 << 120) + index))
        if kind == "claude":
            target = directory / "claude" / f"{session}.jsonl"
            replay(kind, sources[path], target, nbytes, tag=f"f{index}", session_id=session)
        else:
            target = directory / "codex" / f"rollout-2026-03-01T00-00-00-{session}.jsonl"
            replay(kind, sources[path], target, nbytes, tag=f"f{index}")
    marker.touch()
    return directory


# --- measuring --------------------------------------------------------------------------


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        try:
            for task in os.listdir(f"/proc/{current}/task"):
                with open(f"/proc/{current}/task/{task}/children") as handle:
                    todo += [int(child) for child in handle.read().split()]
        except OSError:
            continue
    return found


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _pss_kb(pid: int) -> int:
    """Proportional set size: a page shared by n processes counts 1/n in each, so the
    tree's sum counts once what forked workers share with their parent (the interpreter,
    the modules), which a sum of RSS counts once per process."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as handle:
            for line in handle:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# The measured commands run as an installed tool runs: with its modules' bytecode cached
# (`pip install` compiles it; an editable install writes it on first use). A shell that sets
# PYTHONDONTWRITEBYTECODE (this project's build machines do) would otherwise make every run
# compile the package from source, about 80 ms of a 120 ms small export.
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def compile_package() -> None:
    """What `pip install` does: the package's bytecode, written once before timing."""
    package = ROOT / "src" / "agent_profiler"
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], env=ENV, check=True)


def run_once(command: list[str]) -> tuple[float, float, float, float]:
    """Wall seconds, the peak RSS (MB) of the whole process tree (each process's RSS
    summed), its peak PSS (MB; shared pages counted once) and its CPU seconds (user and
    system, wait4's: the process's own and its waited-for descendants')."""
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors, env=ENV)
        peak = [0, 0]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                tree = _descendants(process.pid)
                peak[0] = max(peak[0], sum(_rss_kb(pid) for pid in tree))
                peak[1] = max(peak[1], sum(_pss_kb(pid) for pid in tree))
                done.wait(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
        elapsed = time.perf_counter() - started
        done.set()
        sampler.join()
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(command[:4])} … exited {code}: {stderr[-500:]}")
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, max(peak[0], usage.ru_maxrss) / 1024, peak[1] / 1024, cpu


@dataclass
class Timing:
    seconds: float  # best of the runs
    runs: list[float]
    peak_rss_mb: float  # highest of the runs
    peak_pss_mb: float = 0.0  # likewise, proportional set size (shared pages once)
    cpu_seconds: float | None = None  # best of the runs, CPU (run_once)


def measure(command: list[str], runs: int) -> Timing:
    return measure_together([command], runs)[0]


def measure_together(commands: list[list[str]], runs: int) -> list[Timing]:
    """Round-robin: each round runs every command once, so a floor, our export and the
    peer see the same load on a shared machine (their ratio is what is compared)."""
    times: list[list[float]] = [[] for _ in commands]
    peaks: list[list[float]] = [[] for _ in commands]
    shares: list[list[float]] = [[] for _ in commands]
    cpus: list[list[float]] = [[] for _ in commands]
    for _ in range(runs):
        for index, command in enumerate(commands):
            seconds, peak, pss, cpu = run_once(command)
            times[index].append(seconds)
            peaks[index].append(peak)
            shares[index].append(pss)
            cpus[index].append(cpu)
    return [
        Timing(
            round(min(t), 3),
            [round(x, 3) for x in t],
            round(max(p), 1),
            round(max(q), 1),
            round(min(c), 3),
        )
        for t, p, q, c in zip(times, peaks, shares, cpus, strict=True)
    ]


def peer_command(install: bool = True) -> list[str] | None:
    venv = BENCH / "peer-venv"
    binary = venv / "bin" / "agent2perfetto"
    if not binary.exists() and install:
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", PEER],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(f"peer unavailable: {done.stderr.strip()[-200:]}", file=sys.stderr)
            return None
    return [str(binary)] if binary.exists() else None


# --- rows and verdicts ------------------------------------------------------------------


@dataclass
class Row:
    name: str
    input_mb: float
    seconds: float
    floor_seconds: float
    peak_rss_mb: float
    trace_share: float | None = None  # output bytes / input bytes
    peer_seconds: float | None = None
    peer_rss_mb: float | None = None
    # shown beside the RSS, never the verdict: the targets are of RSS
    peak_pss_mb: float | None = None
    # targets (None: not a target of this row)
    max_floor: float | None = None
    min_speedup: float | None = None
    max_rss_mb: float | None = None
    max_share: float | None = None
    max_seconds: float | None = None
    runs: list[float] = field(default_factory=list)
    floor_runs: list[float] = field(default_factory=list)
    peer_runs: list[float] = field(default_factory=list)
    # CPU seconds (best of the runs) of ours, the floor and the peer: shown, not judged
    cpu_seconds: float | None = None
    floor_cpu_seconds: float | None = None
    peer_cpu_seconds: float | None = None

    @property
    def floor_ratio(self) -> float:
        return self.seconds / self.floor_seconds

    @property
    def cpu_floor_ratio(self) -> float | None:
        if self.cpu_seconds is None or not self.floor_cpu_seconds:
            return None
        return self.cpu_seconds / self.floor_cpu_seconds

    @property
    def cpu_speedup(self) -> float | None:
        if self.peer_cpu_seconds is None or not self.cpu_seconds:
            return None
        return self.peer_cpu_seconds / self.cpu_seconds

    @property
    def speedup(self) -> float | None:
        return None if self.peer_seconds is None else self.peer_seconds / self.seconds

    def failures(self) -> list[str]:
        failed = []
        if self.max_floor is not None and self.floor_ratio > self.max_floor:
            failed.append("floor")
        speedup = self.speedup
        if self.min_speedup is not None and speedup is not None and speedup < self.min_speedup:
            failed.append("peer")
        if self.max_rss_mb is not None and self.peak_rss_mb > self.max_rss_mb:
            failed.append("rss")
        if self.max_share is not None and (self.trace_share or 0) > self.max_share:
            failed.append("size")
        if self.max_seconds is not None and self.seconds > self.max_seconds:
            failed.append("time")
        return failed


def _target(value: float | None, template: str) -> str:
    return "" if value is None else template.format(value)


def _num(value: float | None, width: int, spec: str) -> str:
    return f"{'-' if value is None else format(value, spec):>{width}}"


def _judged(value: float, places: int, failed: bool, upper: bool) -> str:
    """`value` with `places` decimals; one that misses its target is rounded away from it
    (up past a ≤ limit, down past a ≥ one), so that 3.0004 against ≤ 3 never reads 3.00
    beside FAIL. A value that meets it is rounded as usual."""
    if not failed:
        return f"{value:.{places}f}"
    scale = 10**places
    shown = (math.ceil if upper else math.floor)(value * scale) / scale
    return f"{shown:.{places}f}"


def table(rows: Iterable[Row], flat: tuple[float, float] | None) -> str:
    header = (
        f"{'row':<26} {'in MB':>7} {'ours s':>12} {'floor s':>7} {'×floor':>13} "
        f"{'peer s':>7} {'×faster':>13} {'RSS MB':>13} {'PSS':>5} {'trace':>12} "
        f"{'CPU s':>6} {'×fl.':>5} {'×fast':>5}  verdict"
    )
    lines = [header, "-" * len(header)]
    for row in rows:
        speed = row.speedup
        failed = row.failures()
        share = row.trace_share
        lines.append(
            f"{row.name:<26} {row.input_mb:>7.1f} "
            f"{_judged(row.seconds, 2, 'time' in failed, True):>7}"
            f"{_target(row.max_seconds, '(≤{:g})'):<5} {row.floor_seconds:>7.2f} "
            f"{_judged(row.floor_ratio, 2, 'floor' in failed, True):>6}"
            f"{_target(row.max_floor, ' (≤{:g})'):<7} "
            f"{'-' if row.peer_seconds is None else f'{row.peer_seconds:.2f}':>7} "
            f"{'-' if speed is None else _judged(speed, 2, 'peer' in failed, False):>6}"
            f"{_target(row.min_speedup, ' (≥{:g})'):<7} "
            f"{_judged(row.peak_rss_mb, 0, 'rss' in failed, True):>6}"
            f"{_target(row.max_rss_mb, ' (≤{:g})'):<7} "
            f"{'-' if row.peak_pss_mb is None else f'{row.peak_pss_mb:.0f}':>5} "
            f"{'-' if share is None else _judged(100 * share, 1, 'size' in failed, True) + '%':>6}"
            f"{_target(row.max_share and 100 * row.max_share, ' (≤{:g}%)'):<6} "
            f"{_num(row.cpu_seconds, 6, '.2f')} {_num(row.cpu_floor_ratio, 5, '.1f')} "
            f"{_num(row.cpu_speedup, 5, '.2f')}  "
            f"{'PASS' if not failed else 'FAIL ' + ','.join(failed)}"
        )
    if flat is not None:
        small, large = flat
        ratio = large / small
        verdict = "PASS" if ratio <= 1.3 else "FAIL"
        lines.append(
            f"{'memory flat (RSS big/small)':<26} peak {large:.0f} MB / {small:.0f} MB = "
            f"{ratio:.2f} (≤1.3)  {verdict}"
        )
    return "\n".join(lines)


# --- the run ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=None, help="best of N (default 3, quick 1)")
    parser.add_argument("--quick", action="store_true", help="small sizes, for a smoke test")
    parser.add_argument("--no-peer", action="store_true")
    parser.add_argument(
        "--only",
        default="claude,codex,pi,folder,startup,summary,dataset",
        help="comma-separated rows to measure",
    )
    parser.add_argument("--dir", type=Path, default=None, help="where journals are built")
    args = parser.parse_args(argv)
    runs = args.runs or (1 if args.quick else 3)
    only = set(args.only.split(","))
    directory = args.dir or (BENCH / "quick" if args.quick else BENCH)
    directory.mkdir(parents=True, exist_ok=True)
    scale = {
        "claude": (1, 4) if args.quick else (25, 100),
        "codex": 2 if args.quick else 50,
        "pi": 2 if args.quick else 50,
        "folder": (6, 100 * 1024, 200 * 1024) if args.quick else (300, MB, 2 * MB),
        "dataset": (40, 20 * 1024, 60 * 1024) if args.quick else (5000, 20 * 1024, 60 * 1024),
    }
    peer = None if args.no_peer else peer_command()
    compile_package()
    started_load = _load_average()
    tool = [sys.executable, "-m", "agent_profiler"]
    outputs = Path(tempfile.mkdtemp(prefix="bench-", dir=directory))
    rows: list[Row] = []
    flat: tuple[float, float] | None = None
    stopped: str | None = None  # why the rows stopped early: a command failed

    def export_row(
        name: str, journal: Path, *, peer_ok: bool, **targets: float | None
    ) -> tuple[Row, Timing]:
        print(f"measuring {name} ({journal.name}) …", file=sys.stderr, flush=True)
        size = _size(journal)
        out = outputs / f"{journal.name}.pftrace"
        commands = [
            [sys.executable, "-c", FLOOR, str(journal)],
            [*tool, "export", str(journal), "-o", str(out), "--force"],
        ]
        if peer is not None and peer_ok:
            if journal.is_dir():
                files = sorted(str(p) for p in journal.rglob("*.jsonl"))
                peer_out = Path(tempfile.mkdtemp(dir=outputs))
                commands.append([sys.executable, "-c", PER_FILE, peer[0], str(peer_out), *files])
            else:
                commands.append([*peer, str(journal), "-o", str(outputs / f"{journal.name}.json")])
        floor, ours, *peer_timings = measure_together(commands, runs)
        peer_timing = peer_timings[0] if peer_timings else None
        row = Row(
            name,
            size / MB,
            ours.seconds,
            floor.seconds,
            ours.peak_rss_mb,
            trace_share=out.stat().st_size / size,
            peak_pss_mb=ours.peak_pss_mb,
            peer_seconds=peer_timing and peer_timing.seconds,
            peer_rss_mb=peer_timing and peer_timing.peak_rss_mb,
            runs=ours.runs,
            floor_runs=floor.runs,
            peer_runs=peer_timing.runs if peer_timing else [],
            cpu_seconds=ours.cpu_seconds,
            floor_cpu_seconds=floor.cpu_seconds,
            peer_cpu_seconds=peer_timing and peer_timing.cpu_seconds,
            **targets,  # type: ignore[arg-type]
        )
        rows.append(row)
        return row, ours

    try:
        if "claude" in only:
            small_mb, large_mb = scale["claude"]
            small = build_one("claude", CLAUDE_SPOTTER, directory, small_mb * MB)
            large = build_one("claude", CLAUDE_SPOTTER, directory, large_mb * MB)
            big, _ = export_row(
                f"Claude Code {large_mb} MB",
                large,
                peer_ok=True,
                max_floor=3,
                min_speedup=2,
                max_rss_mb=100,
                max_share=0.05,
            )
            little, _ = export_row(f"Claude Code {small_mb} MB", small, peer_ok=True)
            flat = (little.peak_rss_mb, big.peak_rss_mb)
        if "codex" in only:
            codex_mb = scale["codex"]
            # The issue's row: many sessions, a rollout file each (as Codex writes them).
            sessions = build_sessions("codex", CODEX_DESKTOP, directory, codex_mb, MB)
            export_row(
                f"Codex {codex_mb} MB, {codex_mb} sessions",
                sessions,
                peer_ok=True,
                max_floor=5,
                min_speedup=2,
                max_rss_mb=100,
                max_share=0.10,
            )
            journal = build_one("codex", CODEX_DESKTOP, directory, codex_mb * MB)
            export_row(
                f"Codex {codex_mb} MB, one session",
                journal,
                peer_ok=True,
                max_floor=6,
                min_speedup=2,
                max_rss_mb=100,
                max_share=0.10,
            )
        if "pi" in only:
            pi_mb = scale["pi"]
            journal = build_one("pi", PI_LARGE, directory, pi_mb * MB)
            export_row(
                f"Pi {pi_mb} MB",
                journal,
                peer_ok=False,
                max_floor=8,
                max_rss_mb=100,
                max_share=0.10,
            )
        count, low, high = scale["folder"]
        folder = directory / f"folder-{count}"
        if "folder" in only or "summary" in only:
            build_folder(folder, count, low, high)
        if "folder" in only:
            export_row(
                f"folder of {count} sessions",
                folder,
                peer_ok=True,
                max_floor=4,
                min_speedup=3,
                max_rss_mb=100,
            )
        if "startup" in only:
            journal = build_one("claude", CLAUDE_ENTIRE, directory, 100 * 1024)
            print("measuring start-up …", file=sys.stderr, flush=True)
            out = outputs / "startup.pftrace"
            baseline, ours = measure_together(
                [
                    [sys.executable, "-c", "import orjson"],
                    [*tool, "export", str(journal), "-o", str(out), "--force"],
                ],
                max(runs, 5),
            )
            rows.append(
                Row(
                    "start-up (100 KB export)",
                    _size(journal) / MB,
                    ours.seconds,
                    baseline.seconds,
                    ours.peak_rss_mb,
                    trace_share=out.stat().st_size / _size(journal),
                    max_floor=4,
                    runs=ours.runs,
                    cpu_seconds=ours.cpu_seconds,
                    floor_cpu_seconds=baseline.cpu_seconds,
                )
            )
        if "summary" in only:
            print("measuring summary of the folder …", file=sys.stderr, flush=True)
            floor, ours = measure_together(
                [
                    [sys.executable, "-c", FLOOR, str(folder)],
                    [*tool, "summary", str(folder), "--json"],
                ],
                runs,
            )
            rows.append(
                Row(
                    f"summary, {count} sessions",
                    _size(folder) / MB,
                    ours.seconds,
                    floor.seconds,
                    ours.peak_rss_mb,
                    max_floor=2,
                    runs=ours.runs,
                    cpu_seconds=ours.cpu_seconds,
                    floor_cpu_seconds=floor.cpu_seconds,
                )
            )
        if "dataset" in only:
            dataset_rows(rows, directory, outputs, tool, runs, *scale["dataset"])
    except RuntimeError as error:  # (a command failed: the rows measured before it are shown)
        stopped = str(error)
    finally:
        shutil.rmtree(outputs, ignore_errors=True)
    machine = machine_facts(started_load, peer)
    print(table(rows, flat))
    print(
        f"\n(best of {runs}; wall clock on a shared machine, so compare ratios; CPU s, ×fl. "
        f"and ×fast: the same in CPU seconds of the process tree, shown, not judged; "
        f"peer: {'agent2perfetto 0.2.2' if peer else 'not run'})\n"
        f"{machine_line(machine)}"
    )
    if stopped is not None:
        print(f"\nstopped before the other rows: {stopped}", file=sys.stderr)
    results = {
        "runs": runs,
        "quick": args.quick,
        "machine": machine,
        "rows": [asdict(row) | {"failures": row.failures()} for row in rows],
        "memory_flat": flat,
        "stopped": stopped,
    }
    (directory / "results.json").write_text(json.dumps(results, indent=2))
    return 0 if stopped is None else 1


def build_extra(directory: Path, nbytes: int) -> Path:
    """One more session, in a folder of its own (the re-collect's new journal)."""
    folder = directory / "extra-session"
    session = str(uuid.UUID(int=(0xB4 << 120) + 1))
    target = folder / f"{session}.jsonl"
    if not target.exists():
        replay("claude", read_source(CLAUDE_ENTIRE), target, nbytes, tag="x1", session_id=session)
    return folder


def dataset_rows(
    rows: list[Row],
    directory: Path,
    outputs: Path,
    tool: list[str],
    runs: int,
    count: int,
    low: int,
    high: int,
) -> None:
    """collect of `count` sessions on 2 cores against the floor; a re-collect after one
    new session; fleet queries; peak RSS of each (issue 31). Each row into `rows` as it is
    measured."""
    folder = build_folder(directory / f"many-{count}", count, low, high)
    extra = build_extra(directory, low)
    size = _size(folder) / MB
    target = outputs / "dataset"
    print(f"measuring collect of {count} sessions …", file=sys.stderr, flush=True)
    collect = [*tool, "collect", str(folder), "--to", str(target), "--jobs", "2"]
    # Against the floor, and against `summary` of the same folder: the same journal groups
    # read by the same workers, so the second ratio is what collect adds (rows, Parquet).
    floor, ours, summary = measure_together(
        [
            [sys.executable, "-c", FLOOR, str(folder)],
            ["sh", "-c", f'rm -rf "{target}" && exec "$0" "$@"', *collect],
            [*tool, "summary", str(folder), "--json", "--jobs", "2"],
        ],
        runs,
    )
    rows += (
        Row(
            f"collect, {count} sessions",
            size,
            ours.seconds,
            floor.seconds,
            ours.peak_rss_mb,
            max_rss_mb=300,
            runs=ours.runs,
            floor_runs=floor.runs,
        ),
        Row(
            "  the same ÷ summary",
            size,
            ours.seconds,
            summary.seconds,
            summary.peak_rss_mb,
            max_floor=1.5,
            runs=ours.runs,
            floor_runs=summary.runs,
        ),
    )
    print("measuring re-collect after one new session …", file=sys.stderr, flush=True)
    again: list[float] = []
    peak = 0.0
    for run in range(runs):
        copy = outputs / f"dataset-{run}"
        subprocess.run(["cp", "-a", str(target), str(copy)], check=True)
        seconds, rss, _, _ = run_once(
            [*tool, "collect", str(folder), str(extra), "--to", str(copy), "--jobs", "2"]
        )
        again.append(round(seconds, 3))
        peak = max(peak, rss)
    startup = measure([sys.executable, "-c", "import orjson"], runs)
    rows.append(
        Row(
            "re-collect, 1 new session",
            _size(extra) / MB,
            min(again),
            startup.seconds,
            round(peak, 1),
            max_seconds=2,
            max_rss_mb=300,
            runs=again,
        )
    )
    queries = {
        "fleet": ["--json"],
        "fleet --split": ["--json", "--split", "2026-03-02"],
        "fleet --harness codex": ["--json", "--harness", "codex"],
        "fleet --html": ["--html", str(outputs / "fleet.html"), "--force"],  # (each run)
    }
    for name, options in queries.items():
        print(f"measuring {name} …", file=sys.stderr, flush=True)
        # Floor: the command line's own start-up (`fleet --help`: Python, Typer), round-robin.
        floor, timing = measure_together(
            [[*tool, "fleet", "--help"], [*tool, "fleet", str(target), *options]], runs
        )
        rows.append(
            Row(
                name,
                0.0,
                timing.seconds,
                floor.seconds,
                timing.peak_rss_mb,
                max_seconds=1,
                max_rss_mb=300,
                runs=timing.runs,
                floor_runs=floor.runs,
            )
        )


def _load_average() -> float | None:
    """The machine's one-minute load average, where the system tells it."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def machine_facts(started_load: float | None, peer: list[str] | None = None) -> dict[str, object]:
    """What the numbers were measured on: the interpreter that ran ours and the floor
    (its build decides much of a pure-Python program's speed: docs/performance.md, "The
    interpreter"), the cores, and the load average before and after the rows (others'
    work on a shared machine). The peer runs in its own venv (.bench/peer-venv), made by
    the interpreter of the first run that needed it: its interpreter too."""
    facts: dict[str, object] = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "executable": os.path.realpath(sys.executable),  # (a venv's link resolved)
        "cores": os.cpu_count(),
        "load_before": started_load,
        "load_after": _load_average(),
    }
    if peer is not None:
        facts["peer_executable"] = os.path.realpath(Path(peer[0]).parent / "python")
    return facts


# Other work this busy before the rows (the one-minute load average, per core) makes the
# wall-time ratios unreliable: the run says so under the table.
BUSY_LOAD_PER_CORE = 0.5


def machine_line(machine: dict[str, object]) -> str:
    """The machine facts under the table: one line, and a second when other work was
    already loading the machine before the rows ran."""
    peer = machine.get("peer_executable")
    line = (
        f"measured with {machine['python']} ({machine['executable']}"
        f"{'' if peer in (None, machine['executable']) else f'; the peer with {peer}'}) on "
        f"{machine['cores']} cores; load average {machine['load_before']} before, "
        f"{machine['load_after']} after"
    )
    load, cores = machine["load_before"], machine["cores"]
    if isinstance(load, float) and isinstance(cores, int) and load >= BUSY_LOAD_PER_CORE * cores:
        line += (
            "\nthe machine was busy before the rows ran: other work shares its cores, so the "
            "wall times and their ratios move with it; the CPU columns move less"
        )
    return line


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*.jsonl"))
    return path.stat().st_size


if __name__ == "__main__":
    sys.exit(main())
