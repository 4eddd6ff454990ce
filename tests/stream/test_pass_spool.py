"""The requests' packets of a one pass wait for the head in a file with no name once they
pass `SPOOL_AFTER` bytes (stream/requests.py `export_pass`, spools.SpooledBytes): the
trace is the same, and nothing of them is left with a name in the temporary folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_pi_stream_pipeline import run_export, session_with_paths

from agent_profiler import spools, stream
from agent_profiler.spools import SpooledBytes
from agent_profiler.stream import requests


def test_spooled_bytes_past_the_limit_go_to_an_unnamed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    held = SpooledBytes(8)
    held.write(b"abcd")
    assert held.file is None  # (within the limit: in memory)
    held.write(bytearray(b"efghij"))
    held.write(b"k" * 70_000)
    assert held.file is not None and held.memory is None
    assert list(tmp_path.iterdir()) == []  # (no name)
    out = tmp_path / "out"
    with out.open("wb") as stream_out:
        held.copy_to(stream_out)
    held.close()
    assert out.read_bytes() == b"abcdefghij" + b"k" * 70_000


def test_spooled_bytes_within_the_limit_stay_in_memory(tmp_path: Path) -> None:
    held = SpooledBytes(100)
    held.write(b"x" * 100)
    out = tmp_path / "out"
    with out.open("wb") as stream_out:
        held.copy_to(stream_out)
    held.close()
    assert held.file is None and out.read_bytes() == b"x" * 100


def test_the_pass_spools_its_requests_and_writes_the_same_trace(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    journal = session_with_paths("/work/demo").write(tmp_path / "spooled.jsonl")
    monkeypatch.setenv(stream.SWITCH, "1")
    held = export_trace(journal, args=("--no-compress",), require_addition=False)
    made: list[Any] = []
    unnamed = spools.unnamed_temporary_file

    def counted() -> Any:
        made.append(unnamed())
        return made[-1]

    monkeypatch.setattr(requests, "SPOOL_AFTER", 1)
    monkeypatch.setattr(spools, "unnamed_temporary_file", counted)
    spooled = export_trace(journal, args=("--no-compress",), require_addition=False)
    assert len(made) == 2  # (the requests' packets, then the group's bytes)
    assert spooled.path.read_bytes() == held.path.read_bytes()


def test_spooled_groups_with_worker_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker sends its group's bytes back read from its spool: the same trace."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    for name in ("aaaaaaaa", "bbbbbbbb", "cccccccc"):
        session_with_paths(f"/work/{name}", f"{name}-2222-4333-8444-555555555555").write(
            folder / f"{name}.jsonl"
        )
    monkeypatch.setenv(stream.SWITCH, "1")
    held = run_export(folder, tmp_path / "held.pftrace", "--jobs", "1")
    monkeypatch.setattr(requests, "SPOOL_AFTER", 1)
    assert run_export(folder, tmp_path / "one.pftrace", "--jobs", "1") == held
    assert run_export(folder, tmp_path / "workers.pftrace", "--jobs", "2") == held


def test_the_joined_trace_is_copied_in_small_pieces() -> None:
    """The spool of every group is copied to the output in pieces of 64 KiB (a 1 MiB
    piece was the last megabyte of a long session's peak)."""
    import io

    from agent_profiler.pipeline import write_joined

    sizes: list[int] = []

    class Spool(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            sizes.append(-1 if size is None else size)
            return super().read(size)

    spool = Spool(b"p" * 300_000)
    out = io.BytesIO()
    write_joined(out, 1_000_000_000, spool)
    assert out.getvalue().endswith(b"p" * 300_000)
    assert sizes and max(sizes) <= 1 << 16 and min(sizes) > 0


def test_a_full_temporary_folder_under_the_group_falls_back_whole(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The group's spool filling the temporary folder (ENOSPC) makes the pass give the
    group to the model path, as any failure of the pass: its spool's close, which flushed
    the bytes that did not fit again, failed the export instead."""
    import errno

    from agent_profiler.output_errors import temporary_failed

    journal = session_with_paths("/work/demo").write(tmp_path / "spooled.jsonl")
    monkeypatch.setenv(stream.SWITCH, "0")
    expected = export_trace(journal, args=("--no-compress",), require_addition=False)

    class Full:
        def write(self, data: bytes = b"") -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        close = flush = write

    made: list[Any] = []
    unnamed = spools.unnamed_temporary_file

    def second_full() -> Any:  # (the requests' packets fit; the group's bytes do not)
        made.append(unnamed() if not made else spools._Spool(Full(), temporary_failed))  # type: ignore[arg-type]
        return made[-1]

    monkeypatch.setenv(stream.SWITCH, "1")
    monkeypatch.setattr(requests, "SPOOL_AFTER", 1)
    monkeypatch.setattr(spools, "unnamed_temporary_file", second_full)
    got = export_trace(journal, args=("--no-compress",), require_addition=False)
    assert len(made) == 2
    assert got.path.read_bytes() == expected.path.read_bytes()  # (the model path's)
