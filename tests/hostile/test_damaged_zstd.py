"""Damaged zstd journals, as test_damaged_gzip does it for gzip: Codex's cold rollouts are
`rollout-*.jsonl.zst`, and a copy cut short or a header gone bad never ends the run. Each
costs one clear line naming the file and the compression (and, cut after its head, the last
line read), every good journal given with it is still exported, summarised and reported,
and the exit code is 1.

The damage is done to a real rollout compressed as Codex does it (level 3, streamed), so the
decompressor raises what it really raises. (A flipped byte is left out: Codex writes no
checksum, so a changed literal reads as other text, and such a line is a line's warning.)"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from test_damaged_gzip import CODEX_GZ, COMMANDS, GOOD, run, sessions_in

from agent_profiler.jsonl import read_head

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytestmark = pytest.mark.slow  # an export per damaged file: `make check` leaves it out


def codex_zst() -> tuple[str, bytes]:
    """The corpus rollout (2,722 lines) as Codex's cold rollout: (file name, its bytes)."""
    compressor = zstd.ZstdCompressor(level=3)
    data = gzip.decompress(CODEX_GZ.read_bytes())
    return CODEX_GZ.name.removesuffix(".gz") + ".zst", compressor.compress(
        data
    ) + compressor.flush()


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "cut at the start": lambda data: data[:200],
    "cut halfway": lambda data: data[: len(data) // 2],
    # the frame header's reserved bit set: "Unsupported frame parameter"
    "bad header": lambda data: data[:4] + bytes([data[4] | 0x08]) + data[5:],
}


def damaged_copy(damage: str, folder: Path) -> Path:
    name, data = codex_zst()
    bad = folder / name
    bad.write_bytes(DAMAGES[damage](data))
    return bad


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_zstd_among_good_files(command: str, damage: str, tmp_path: Path) -> None:
    # GIVEN a damaged cold rollout, named first, and two good journals
    bad = damaged_copy(damage, tmp_path)
    # WHEN each command reads them as file arguments
    code, stderr, out = run(command, [bad, *GOOD], tmp_path)
    # THEN exit 1, one line names the damaged file and zstd, and the good journals are there
    assert code == 1, stderr
    (naming,) = [line for line in stderr.splitlines() if bad.name in line]
    assert "corrupt or truncated zstd stream" in naming
    if damage == "cut halfway":
        assert "after line " in naming and "records before it are kept" in naming
    assert out.exists()
    if command != "report":
        assert sessions_in(command, out) >= len(GOOD) + (damage == "cut halfway")


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_zstd_inside_a_folder(command: str, damage: str, tmp_path: Path) -> None:
    # GIVEN a folder holding a damaged cold rollout beside good journals
    folder = tmp_path / "journals"
    folder.mkdir()
    bad = damaged_copy(damage, folder)
    for good in GOOD:
        (folder / good.name).write_bytes(good.read_bytes())
    # WHEN each command is given the folder
    code, stderr, out = run(command, [folder], tmp_path)
    # THEN the run finishes, names the damaged file once and keeps the good journals
    assert code == 1, stderr
    (naming,) = [line for line in stderr.splitlines() if bad.name in line]
    assert "corrupt or truncated zstd stream" in naming
    assert out.exists()
    if command != "report":
        assert sessions_in(command, out) >= len(GOOD)


def test_a_head_read_of_a_damaged_zstd_raises_only_our_error(tmp_path: Path) -> None:
    # GIVEN a cold rollout cut in its first block, read raw by a sniffer (an adapter that
    # looks for an export array or a JSON document)
    from agent_profiler.adapters import muse
    from agent_profiler.errors import JournalError

    bad = damaged_copy("cut at the start", tmp_path)
    # THEN the head read raises our one error, and the adapter's explanation is "none"
    with pytest.raises(JournalError, match="zstd"):
        read_head(bad)
    assert muse.explain_rejected(bad) is None
