"""Speed and memory of agent-profiler against a floor and a peer, on large journals.

    python scripts/bench.py [--runs 5] [--sizes claude=25,100 codex=50] [--no-peer]

1. Builds large journals (cached in .bench/) by replaying real sessions from
   tests/data with fresh ids and shifted times: Claude Code ≈ 25 MB and ≈ 100 MB
   (the spotter transcript), Codex ≈ 50 MB (the Desktop rollout), Pi ≈ 50 MB when
   the Pi adapter and its journals are present.
2. Measures, each as a whole process, median of N runs after one warm-up:
   - floor: read every line and orjson.loads it, nothing else;
   - export: `agent-profiler export FILE -o OUT`;
   - summary: `agent-profiler summary FILE --json`;
   - peer: `agent2perfetto FILE -o OUT` (installed into .bench/peer-venv only).
3. Prints seconds, ratio to the floor, ratio to the peer, peak RSS (of that
   process, from wait4) and output size as a share of the input; writes the same
   to .bench/results.json.

Timings are wall-clock on whatever machine runs this; the ratios are the point.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "journals"
BENCH = ROOT / ".bench"
SOURCES = {
    "claude": DATA
    / "claude-code"
    / "spotter-2.1.39-subagents-compaction"
    / "258c7280-ae70-4798-800f-63464d01a85d.jsonl.gz",
    "codex": DATA
    / "codex"
    / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz",
    "pi": DATA / "pi" / "pi-mono_large-session_v1.jsonl",
}
FLOOR = (
    "import sys, orjson\n"
    "with open(sys.argv[1], 'rb') as f:\n"
    "    for line in f:\n"
    "        if line.strip():\n"
    "            orjson.loads(line)\n"
)
_IDS = re.compile(
    rb'("(?:uuid|parentUuid|id|tool_use_id|call_id|requestId|leafUuid|messageId'
    rb'|sourceToolUseID|sourceToolAssistantUUID|toolUseID|parentToolUseID)":")'
    rb'([^"]+)"'
)
_TIMESTAMP = re.compile(rb'"timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z)"')
_EPOCH_MS = re.compile(rb'"timestamp":(\d{13})\b')  # Pi's message.timestamp (epoch ms)


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data


def build(kind: str, megabytes: int) -> Path:
    """Replay a real journal until it is `megabytes` long: every id gets a copy suffix
    (so message ids, call ids and uuids stay unique) and every timestamp moves past
    the previous copy, so the result reads as one long session."""
    BENCH.mkdir(exist_ok=True)
    target = BENCH / f"{kind}-{megabytes}mb.jsonl"
    if target.exists():
        return target
    source = _read(SOURCES[kind])
    lines = [line for line in source.split(b"\n") if line.strip()]
    from datetime import datetime, timedelta

    stamps = [
        datetime.fromisoformat(m.decode().replace("Z", "+00:00"))
        for m in _TIMESTAMP.findall(source)
    ]
    span = (max(stamps) - min(stamps)) + timedelta(minutes=1) if stamps else timedelta(hours=1)
    wanted = megabytes * 1024 * 1024
    written = 0
    copy = 0
    with target.open("wb") as out:
        while written < wanted:
            shift = span * copy

            def stamp(match: re.Match[bytes], shift: timedelta = shift) -> bytes:
                moment = datetime.fromisoformat(match.group(1).decode().replace("Z", "+00:00"))
                text = (moment + shift).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
                return b'"timestamp":"' + text.encode() + b'"'

            suffix = f"-r{copy}".encode()
            for index, line in enumerate(lines):
                if copy and index == 0 and kind == "codex":
                    continue  # one session_meta for the whole replay
                if copy and kind == "pi" and b'"type":"session"' in line[:40]:
                    continue
                line = _IDS.sub(
                    lambda m, suffix=suffix: m.group(1) + m.group(2) + suffix + b'"', line
                )
                line = _TIMESTAMP.sub(stamp, line)
                shift_ms = int(shift.total_seconds() * 1000)
                line = _EPOCH_MS.sub(
                    lambda m, ms=shift_ms: b'"timestamp":' + str(int(m.group(1)) + ms).encode(),
                    line,
                )
                out.write(line + b"\n")
                written += len(line) + 1
            copy += 1
    return target


@dataclass
class Measure:
    name: str
    input: str
    input_mb: float
    seconds: float
    runs: list[float]
    peak_rss_mb: float
    output_share: float | None
    ratio_to_floor: float | None = None
    ratio_to_peer: float | None = None


def run_once(command: list[str]) -> tuple[float, float]:
    """Wall seconds and the process's own peak RSS (MB), via wait4."""
    # stderr goes to a file: a pipe nobody reads while waiting fills up and blocks a
    # chatty process forever.
    with tempfile.TemporaryFile() as errors:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=errors)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    process.returncode = os.waitstatus_to_exitcode(status)
    code = process.returncode
    if code not in (0, 1):
        raise RuntimeError(f"{' '.join(command)} exited {code}: {stderr[-500:]}")
    return elapsed, usage.ru_maxrss / 1024


def measure(
    name: str, command: list[str], journal: Path, runs: int, output: Path | None = None
) -> Measure:
    run_once(command)  # warm-up (page cache, .pyc)
    times, peaks = [], []
    for _ in range(runs):
        seconds, peak = run_once(command)
        times.append(seconds)
        peaks.append(peak)
    size = journal.stat().st_size
    share = output.stat().st_size / size if output is not None and output.exists() else None
    return Measure(
        name,
        journal.name,
        round(size / 2**20, 1),
        round(statistics.median(times), 3),
        [round(t, 3) for t in times],
        round(max(peaks), 1),
        round(share, 4) if share is not None else None,
    )


def peer_command() -> list[str] | None:
    venv = BENCH / "peer-venv"
    binary = venv / "bin" / "agent2perfetto"
    if not binary.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        done = subprocess.run(
            [str(venv / "bin" / "pip"), "install", "--quiet", "agent2perfetto"],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            print(f"peer unavailable: {done.stderr.strip()[-200:]}", file=sys.stderr)
            return None
    return [str(binary)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", nargs="*", default=["claude=25,100", "codex=50", "pi=50"])
    parser.add_argument("--no-peer", action="store_true")
    args = parser.parse_args()
    peer = None if args.no_peer else peer_command()
    tool = [sys.executable, "-m", "agent_profiler"]
    results: list[Measure] = []
    for spec in args.sizes:
        kind, sizes = spec.split("=")
        if not SOURCES[kind].exists():
            print(f"skip {kind}: {SOURCES[kind]} not present", file=sys.stderr)
            continue
        for megabytes in (int(s) for s in sizes.split(",")):
            journal = build(kind, megabytes)
            out = BENCH / f"{journal.stem}.pftrace"
            print(f"measuring {journal.name} …", file=sys.stderr)
            floor = measure(
                "floor", [sys.executable, "-c", FLOOR, str(journal)], journal, args.runs
            )
            rows = [floor]
            rows.append(
                measure(
                    "export",
                    [*tool, "export", str(journal), "-o", str(out), "--force"],
                    journal,
                    args.runs,
                    out,
                )
            )
            rows.append(
                measure("summary", [*tool, "summary", str(journal), "--json"], journal, args.runs)
            )
            peer_row = None
            if peer is not None and kind in ("claude", "codex"):
                peer_out = BENCH / f"{journal.stem}.peer.json"
                peer_row = measure(
                    "peer agent2perfetto",
                    [*peer, str(journal), "-o", str(peer_out)],
                    journal,
                    args.runs,
                    peer_out,
                )
                rows.append(peer_row)
            for row in rows:
                row.ratio_to_floor = round(row.seconds / floor.seconds, 2)
                if peer_row is not None:
                    row.ratio_to_peer = round(row.seconds / peer_row.seconds, 3)
            results += rows
    header = (
        f"{'input':<22} {'MB':>6} {'what':<20} {'s':>8} {'×floor':>7} {'×peer':>7} "
        f"{'RSS MB':>7} {'out/in':>7}"
    )
    print(header)
    print("-" * len(header))
    for row in results:
        print(
            f"{row.input:<22} {row.input_mb:>6} {row.name:<20} {row.seconds:>8.3f} "
            f"{row.ratio_to_floor or 0:>7.2f} "
            f"{(f'{row.ratio_to_peer:.3f}' if row.ratio_to_peer else '-'):>7} "
            f"{row.peak_rss_mb:>7.1f} "
            f"{(f'{100 * row.output_share:.1f}%' if row.output_share else '-'):>7}"
        )
    BENCH.mkdir(exist_ok=True)
    (BENCH / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=2))
    print(f"\n(written to {BENCH / 'results.json'})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
