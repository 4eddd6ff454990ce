"""Zstd journals (`rollout-*.jsonl.zst`: Codex rewrites a rollout older than a week so and
deletes the plain file) are read wherever a `.jsonl.gz` is: the guarded reader (told by its
magic bytes), a folder walk, the same-bytes check. The files are compressed here, from real
journals, as Codex writes them (level 3, streamed: no content size in the frame header)."""

from __future__ import annotations

import io
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import DamagedJournalError, JournalError
from agent_profiler.jsonl import open_journal, read_head, read_jsonl, sniff
from agent_profiler.jsonl_open import NO_ZSTD
from agent_profiler.loader import expand, load, plan
from agent_profiler.repeats import distinct
from samples import CLAUDE_SMALL, CODEX_SMALL, DATA

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

CODEX_GZ = (
    DATA / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)


def codex_zst(data: bytes) -> bytes:
    """`data` as Codex compresses a cold rollout: zstd level 3, streamed, so the frame
    header records no content size."""
    compressor = zstd.ZstdCompressor(level=3)
    compressed = compressor.compress(data) + compressor.flush()
    assert zstd.get_frame_info(compressed).decompressed_size is None
    return compressed


def rollout_zst(folder: Path, source: Path = CODEX_SMALL, name: str | None = None) -> Path:
    path = folder / (name or source.name + ".zst")
    path.write_bytes(codex_zst(source.read_bytes()))
    return path


def _pairs(path: Path) -> tuple[list[tuple[int, object]], Diagnostics]:
    diagnostics = Diagnostics()
    return list(read_jsonl(path, diagnostics)), diagnostics


def big_rollout() -> bytes:
    """The gzipped corpus rollout's 2,722 lines: several zstd blocks."""
    import gzip

    return gzip.decompress(CODEX_GZ.read_bytes())


# --- the reader ---------------------------------------------------------------------------


def test_a_zstd_journal_reads_as_its_plain_twin(tmp_path: Path) -> None:
    # GIVEN a rollout and its Codex-compressed copy, and the copy renamed without a suffix
    zst = rollout_zst(tmp_path)
    renamed = tmp_path / "renamed.jsonl"
    shutil.copy(zst, renamed)
    plain, _ = _pairs(CODEX_SMALL)
    # WHEN read, THEN the same records with the same line numbers, and no warning: told by
    # its magic bytes, not its name
    for path in (zst, renamed):
        pairs, diagnostics = _pairs(path)
        assert pairs == plain
        assert diagnostics.warnings == []
        assert sniff(path, max_lines=5) == [value for _, value in plain[:5]]
        assert read_head(path, 100) == CODEX_SMALL.read_bytes()[:100]


def test_every_frame_of_a_zstd_journal_is_read(tmp_path: Path) -> None:
    # GIVEN a journal written as two zstd frames (an appended compressed tail)
    data = big_rollout()
    half = data.index(b"\n", len(data) // 2) + 1
    path = tmp_path / "two.jsonl.zst"
    path.write_bytes(codex_zst(data[:half]) + codex_zst(data[half:]))
    # WHEN read, THEN every line of both frames
    pairs, diagnostics = _pairs(path)
    assert len(pairs) == data.count(b"\n")
    assert diagnostics.warnings == []


def test_progress_through_a_zstd_journal_counts_its_bytes_on_disk(tmp_path: Path) -> None:
    # GIVEN a cold rollout of 2,722 lines (a tenth of its size on disk, compressed)
    path = tmp_path / "big.jsonl.zst"
    path.write_bytes(codex_zst(big_rollout()))
    size = path.stat().st_size
    # WHEN read with a progress display
    said: list[tuple[int, int]] = []
    diagnostics = Diagnostics(on_progress=lambda name, done, total: said.append((done, total)))
    assert len(list(read_jsonl(path, diagnostics))) == 2722
    # THEN the bytes read are the file's, as the total is: never past it
    assert said and all(0 < done <= total == size for done, total in said)


def test_a_cut_zstd_journal_keeps_the_records_before_the_cut_in_one_warning(
    tmp_path: Path,
) -> None:
    # GIVEN a cold rollout cut halfway (a copy interrupted mid-transfer)
    whole = codex_zst(big_rollout())
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(whole[: len(whole) // 2])
    # WHEN read
    pairs, diagnostics = _pairs(path)
    # THEN a prefix of the records, in order, and one warning naming the file, the
    # compression and the last line read: a damage (exit 1), never a traceback
    assert 0 < len(pairs) < big_rollout().count(b"\n")
    assert [line for line, _ in pairs] == list(range(1, len(pairs) + 1))
    (warning,) = diagnostics.warnings
    assert warning.kind == "read-error" and diagnostics.damaged == 1
    assert str(warning).startswith(f"{path}: corrupt or truncated zstd stream after line ")
    assert f"after line {len(pairs)} " in warning.message
    assert warning.message.endswith("records before it are kept")


def test_a_zstd_journal_damaged_at_the_start_is_refused_by_sniff_in_one_line(
    tmp_path: Path,
) -> None:
    # GIVEN zstd magic bytes and garbage, and a frame whose header has its reserved bit set
    garbage = tmp_path / "garbage.jsonl.zst"
    garbage.write_bytes(b"\x28\xb5\x2f\xfd" + b"garbage" * 10)
    good = codex_zst(CODEX_SMALL.read_bytes())
    reserved = tmp_path / "reserved.jsonl.zst"
    reserved.write_bytes(good[:4] + bytes([good[4] | 0x08]) + good[5:])
    for path in (garbage, reserved):
        # WHEN read, THEN nothing and one warning; sniff, which says why a file is unusable,
        # raises our error; and a raw read raises only ours (an OSError too)
        pairs, diagnostics = _pairs(path)
        assert pairs == []
        (warning,) = diagnostics.warnings
        assert warning.message.startswith("corrupt or truncated zstd stream at the start (")
        with pytest.raises(JournalError, match="zstd"):
            sniff(path)
        with pytest.raises(DamagedJournalError, match="zstd"), open_journal(path) as stream:
            stream.read()


def test_without_a_zstd_decompressor_a_zstd_journal_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Python that has no zstd module (3.14 built without libzstd, the backport gone)
    path = rollout_zst(tmp_path)
    package = sys.modules[zstd.__name__.rsplit(".", 1)[0]]
    monkeypatch.delattr(package, "zstd")
    monkeypatch.setitem(sys.modules, zstd.__name__, None)
    # WHEN read, THEN one error, naming the file, that says what to install
    with pytest.raises(JournalError, match=r"no zstd decompressor: pip install backports\.zstd"):
        _pairs(path)
    with pytest.raises(JournalError) as raised:
        read_head(path)
    assert str(raised.value) == f"{path}: {NO_ZSTD}"


def test_a_stream_whose_decompressor_could_not_be_loaded_closes_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `ZstdBytes` whose decompressor failed to import is half made; it is closed all the
    same when it is collected, and Python 3.13 prints what `close` raises there."""
    from agent_profiler.jsonl_open import ZstdBytes

    path = rollout_zst(tmp_path)
    package = sys.modules[zstd.__name__.rsplit(".", 1)[0]]
    monkeypatch.delattr(package, "zstd")
    monkeypatch.setitem(sys.modules, zstd.__name__, None)
    made: list[ZstdBytes] = []

    class Kept(ZstdBytes):
        def __init__(self, raw: Any) -> None:
            made.append(self)
            super().__init__(raw)

    raw = io.BufferedReader(io.FileIO(path, "rb"))
    try:
        with pytest.raises(ImportError):
            Kept(raw)
        # WHEN the half-made stream is closed, THEN nothing is raised, and its file is closed
        made[0].close()
        assert made[0].closed and raw.closed
    finally:
        raw.close()


def test_a_zstd_journal_is_judged_on_the_head_a_plain_one_is(tmp_path: Path) -> None:
    """The head checks look at the first 64 KiB of a journal, decompressed: a first line of
    text longer than 8 KiB (a banner) before the records is one line that is not JSON,
    in a zstd journal as in its plain twin, not a file refused for having no newline."""
    data = b"x" * 9000 + b"\n" + CODEX_SMALL.read_bytes()
    plain = tmp_path / "banner.jsonl"
    plain.write_bytes(data)
    packed = tmp_path / "banner.jsonl.zst"
    packed.write_bytes(codex_zst(data))
    read = [_pairs(path) for path in (plain, packed)]
    assert read[0][0] == read[1][0] and len(read[0][0]) == data.count(b"\n") - 1
    assert [w.line for _, said in read for w in said.warnings] == [1, 1]


def test_a_corrupt_zstd_stream_is_said_in_the_decompressors_words(tmp_path: Path) -> None:
    # GIVEN zstd magic bytes and garbage
    path = tmp_path / "garbage.jsonl.zst"
    path.write_bytes(b"\x28\xb5\x2f\xfd" + b"garbage" * 10)
    with pytest.raises(zstd.ZstdError) as raised:
        zstd.decompress(path.read_bytes())
    # WHEN read, THEN the one warning gives the decompressor's reason, as a gzip's does
    _, diagnostics = _pairs(path)
    (warning,) = diagnostics.warnings
    assert warning.message == (
        f"corrupt or truncated zstd stream at the start ({raised.value}); nothing in it could "
        "be read"
    )


def test_on_python_3_14_a_zstd_journal_is_read_by_the_standard_library(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From 3.14 the decompressor is the standard library's `compression.zstd` (the
    backport is for older Pythons): stood in for here by the backport's classes, counted."""
    opened: list[object] = []

    class ZstdFile(zstd.ZstdFile):  # type: ignore[misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            opened.append(args[0])
            super().__init__(*args, **kwargs)

    stdlib = types.ModuleType("compression.zstd")
    stdlib.ZstdFile = ZstdFile  # type: ignore[attr-defined]
    stdlib.ZstdError = zstd.ZstdError  # type: ignore[attr-defined]
    package = types.ModuleType("compression")
    package.zstd = stdlib  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "compression", package)
    monkeypatch.setitem(sys.modules, "compression.zstd", stdlib)
    path = rollout_zst(tmp_path)
    monkeypatch.setattr(sys, "version_info", (3, 14, 0, "final", 0))
    pairs, diagnostics = _pairs(path)
    monkeypatch.undo()
    assert len(opened) == 1 and diagnostics.warnings == []
    assert len(pairs) == CODEX_SMALL.read_bytes().count(b"\n")


# --- the loader ---------------------------------------------------------------------------


def test_a_folder_walk_reads_zstd_journals(tmp_path: Path) -> None:
    # GIVEN a Codex sessions folder whose rollout is compressed
    rollout_zst(tmp_path)
    # WHEN walked, THEN it is a journal, not "1 other file … not read"
    files, failures, ignored, _, _ = expand([tmp_path])
    assert [f.name for f in files] == [CODEX_SMALL.name + ".zst"]
    assert (failures, ignored) == ([], 0)
    diagnostics = Diagnostics()
    result = load([tmp_path], diagnostics)
    assert [s.session_id for s in result.sessions] == ["019c8bfe-ec25-79e0-97d7-bda6a9c575ff"]
    assert result.failures == [] and diagnostics.warnings == []


def test_a_zstd_rollout_beside_its_plain_copy_is_left_out_of_a_walk(tmp_path: Path) -> None:
    # GIVEN a rollout Codex compressed and then wrote again (the thread was resumed): the
    # plain copy is the one it reads (its `should_skip_compressed_sibling`), the older
    # compressed one stays until the next compression
    shutil.copy(CODEX_SMALL, tmp_path / CODEX_SMALL.name)
    old = CODEX_SMALL.read_bytes().split(b"\n", 3)
    (tmp_path / (CODEX_SMALL.name + ".zst")).write_bytes(codex_zst(b"\n".join(old[:3]) + b"\n"))
    # WHEN walked, THEN the plain one only, and nothing to say: one session, not `#2`
    files, failures, ignored, _, _ = expand([tmp_path])
    assert [f.name for f in files] == [CODEX_SMALL.name]
    assert (failures, ignored) == ([], 0)
    diagnostics = Diagnostics()
    result = load([tmp_path], diagnostics)
    assert [s.session_id for s in result.sessions] == ["019c8bfe-ec25-79e0-97d7-bda6a9c575ff"]
    assert diagnostics.warnings == []


def test_an_empty_zstd_journal_is_said_to_be_empty(tmp_path: Path) -> None:
    # GIVEN a zstd file of no bytes (its own bytes are no text: they are not "not JSON")
    path = tmp_path / "empty.jsonl.zst"
    path.write_bytes(codex_zst(b""))
    # WHEN planned, THEN "empty"
    groups, failures = plan([path], None)
    assert groups == []
    assert [f.message for f in failures] == ["empty journal (no records)"]


# --- the same bytes -----------------------------------------------------------------------


def test_a_zstd_copy_of_a_journal_given_too_is_read_once(tmp_path: Path) -> None:
    # GIVEN a journal, another of its size, and a Codex-compressed copy of the first under
    # another name (no content size in its header: its size is counted)
    data = CLAUDE_SMALL.read_bytes()
    plain, other = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    plain.write_bytes(data)
    other.write_bytes(data.replace(b"user", b"resu"))
    zst = tmp_path / "c.jsonl.zst"
    zst.write_bytes(codex_zst(data))
    # WHEN compared, THEN the copy is a repeat of the first
    assert distinct([zst, other, plain]) == ([zst, other], [(plain, zst)])
    # AND a damaged zstd is a copy of nothing (the reader says its damage)
    cut = tmp_path / "d.jsonl.zst"
    cut.write_bytes(codex_zst(data)[:-5])
    assert distinct([plain, cut]) == ([plain, cut], [])


# --- start-up -----------------------------------------------------------------------------

PROBE = """
import sys
from agent_profiler.entry import main
sys.argv = ["agent-profiler", "export", sys.argv[1], "-o", sys.argv[2]]
try:
    main()
except SystemExit as end:
    assert not end.code, end.code
print("modules:", sorted(m for m in sys.modules if m.endswith("zstd")))
"""


@pytest.mark.slow  # a fresh interpreter per journal
def test_only_a_zstd_journal_imports_the_decompressor(tmp_path: Path) -> None:
    zst = rollout_zst(tmp_path)
    for journal, imported in ((CODEX_SMALL, False), (zst, True)):
        run = subprocess.run(
            [sys.executable, "-c", PROBE, str(journal), str(tmp_path / f"{imported}.pftrace")],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        modules = run.stdout.split("modules:", 1)[1]
        assert ("zstd" in modules) is imported, run.stdout
