"""Damaged compressed journals (issue 15, point 1): a `.jsonl.gz` cut short, with a bad
header or a flipped byte never ends the run. Each costs one clear line naming the file, every
good journal given with it is still exported, summarised and reported, and the exit code is 1.

The damage is done here to real corpus rollouts, the way a copy interrupted mid-transfer or a
bad sector does it, so the gzip module raises what it really raises (EOFError, zlib.error,
BadGzipFile), not an exception we picked."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from contract import check_contract
from samples import GEMINI_DOCUMENT, GEMINI_JSONL, OPENCODE_EXPORT
from traceview import load_trace

pytestmark = pytest.mark.slow  # an export per damaged file (35 cases): `make check` leaves it out

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
CODEX_GZ = (
    DATA / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)
PI_GZ = DATA / "pi" / "pi-mono_before-compaction_v1.jsonl.gz"
# Gemini CLI (a ≥0.39 JSONL log, a ≤0.38 JSON document) and OpenCode (`opencode export`
# output, which users gzip) are gzipped here from real bundled sessions: the corpus has one
# gzipped OpenCode export, used when it is there.
OPENCODE_CORPUS_GZ = Path(
    "/work/shared/corpus/opencode/dhc-dashboard-1.18.21-task-subagent/"
    "ses_fd4e13d58ffetoIsfha64XDWNj.export.json.gz"
)
GOOD = (
    DATA / "claude-code" / "handmade" / "small.jsonl",
    DATA / "pi" / "pi-mono_large-session_v1.jsonl",
)
runner = CliRunner()


def gzipped(source: Path) -> tuple[str, bytes]:
    """A real journal as its harness's gzipped file: (file name, compressed bytes)."""
    if source == OPENCODE_EXPORT and OPENCODE_CORPUS_GZ.exists():
        return OPENCODE_CORPUS_GZ.name, OPENCODE_CORPUS_GZ.read_bytes()
    return source.name + ".gz", gzip.compress(source.read_bytes(), mtime=0)


SOURCES = {
    "codex": CODEX_GZ,
    "pi": PI_GZ,
    "gemini-jsonl": GEMINI_JSONL,
    "gemini-document": GEMINI_DOCUMENT,
    "opencode-export": OPENCODE_EXPORT,
}


def damaged_copy(source: Path, damage: str, folder: Path) -> Path:
    if source.name.endswith(".gz"):
        name, data = source.name, source.read_bytes()
    else:
        name, data = gzipped(source)
    bad = folder / name
    bad.write_bytes(DAMAGES[damage](data))
    return bad


def cut_at_start(data: bytes) -> bytes:
    return data[:200]  # a transfer that stopped in the first deflate block


def cut_halfway(data: bytes) -> bytes:
    return data[: len(data) // 2]


def bad_header(data: bytes) -> bytes:
    return data[:2] + b"\x09" + data[3:]  # compression method 9 does not exist


def flipped_byte(data: bytes) -> bytes:
    damaged = bytearray(data)
    damaged[100] ^= 0x55  # inside the first deflate block: "invalid literal/lengths set"
    return bytes(damaged)


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "cut at the start": cut_at_start,
    "cut halfway": cut_halfway,
    "bad header": bad_header,
    "flipped byte": flipped_byte,
}
COMMANDS = ("export", "summary", "report")


def run(command: str, inputs: list[Path], tmp: Path) -> tuple[int, str, Path]:
    args = [command, *map(str, inputs)]
    out = tmp / {"export": "out.pftrace", "report": "out.html", "summary": "-"}[command]
    if command == "summary":
        args.append("--json")
    else:
        args += ["-o", str(out)]
    result = runner.invoke(app, args)
    assert "Traceback" not in result.output + result.stderr
    assert "internal error" not in result.stderr and "Aborted" not in result.stderr
    if command == "summary":
        out = tmp / "summary.json"
        out.write_text(result.stdout)
    return result.exit_code, result.stderr, out


def sessions_in(command: str, out: Path) -> int:
    if command == "export":
        view = load_trace(out)
        assert check_contract(view, require_addition=False, forward_arrows=True) == []
        return len(view.captures())
    if command == "summary":
        return len(json.loads(out.read_text()))
    return out.read_text().count('class="session"') or out.stat().st_size


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
@pytest.mark.parametrize("source", SOURCES.values(), ids=list(SOURCES))
def test_a_damaged_gzip_among_good_files(
    command: str, damage: str, source: Path, tmp_path: Path
) -> None:
    # GIVEN a damaged copy of a real gzipped journal, named first, and two good journals
    bad = damaged_copy(source, damage, tmp_path)
    # WHEN each command reads them as file arguments
    code, stderr, out = run(command, [bad, *GOOD], tmp_path)
    # THEN exit 1, one line names the damaged file, and the good journals are all there
    assert code == 1, stderr
    naming = [line for line in stderr.splitlines() if bad.name in line]  # as stderr shows it
    assert len(naming) == 1, stderr
    assert "gzip" in naming[0]
    assert out.exists()
    if command != "report":
        assert sessions_in(command, out) >= len(GOOD)


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
@pytest.mark.parametrize(
    "source",
    [CODEX_GZ, GEMINI_JSONL, GEMINI_DOCUMENT, OPENCODE_EXPORT],
    ids=["codex", "gemini-jsonl", "gemini-document", "opencode-export"],
)
def test_a_damaged_gzip_inside_a_folder(
    command: str, damage: str, source: Path, tmp_path: Path
) -> None:
    # GIVEN a folder holding a damaged gzipped journal beside good journals
    folder = tmp_path / "journals"
    folder.mkdir()
    bad = damaged_copy(source, damage, folder)
    for good in GOOD:
        (folder / good.name).write_bytes(good.read_bytes())
    # WHEN each command is given the folder
    code, stderr, out = run(command, [folder], tmp_path)
    # THEN the run finishes, names the damaged file once and keeps the good journals
    assert code == 1, stderr
    assert sum(bad.name in line for line in stderr.splitlines()) == 1, stderr
    assert out.exists()
    if command != "report":
        assert sessions_in(command, out) >= len(GOOD)


def test_sniffing_a_damaged_gzip_goes_through_the_guarded_reader(tmp_path: Path) -> None:
    # GIVEN a gzip cut inside its first block: line-sniffing fails, so the loader asks every
    # adapter whether it knows the file (Muse looks for an export array in the raw head)
    from agent_profiler.adapters import muse
    from agent_profiler.errors import JournalError
    from agent_profiler.jsonl import read_head

    bad = tmp_path / "cut.jsonl.gz"
    bad.write_bytes(cut_at_start(CODEX_GZ.read_bytes()))
    # THEN the head read raises our one error, and the adapter's explanation is "none"
    with pytest.raises(JournalError, match="gzip"):
        read_head(bad)
    assert muse.explain_rejected(bad) is None


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_raw_reads_of_a_damaged_gzip_raise_only_our_error(damage: str, tmp_path: Path) -> None:
    # GIVEN a damaged copy, read raw by an adapter that sniffs bytes (an export array, a
    # JSON document) through the guarded reader
    from agent_profiler.errors import DamagedJournalError, JournalError
    from agent_profiler.jsonl import open_journal

    bad = tmp_path / "bad.jsonl.gz"
    bad.write_bytes(DAMAGES[damage](CODEX_GZ.read_bytes()))
    # WHEN it is read whole
    try:
        with open_journal(bad) as stream:
            stream.read()
    # THEN the only failure is ours, and it is also an OSError, so a sniffer's
    # `except OSError` handles it as well as an `except JournalError`
    except JournalError as error:
        assert isinstance(error, OSError) and str(bad) in str(error)
        assert isinstance(error, DamagedJournalError) or "cannot" in error.message
