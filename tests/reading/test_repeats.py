"""Files with the same decompressed bytes are one journal (repeats.py), hand-made: told
apart from files of the same size, a gzip from its plain twin, in the order given."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from agent_profiler import repeats
from agent_profiler.repeats import HEAD_BYTES, distinct


def test_same_bytes_plain_or_gzipped_are_one_journal_and_the_first_is_kept(
    tmp_path: Path,
) -> None:
    data = b'{"type":"user"}\n' * 10
    plain, zipped, other = tmp_path / "a.jsonl", tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl"
    plain.write_bytes(data)
    zipped.write_bytes(gzip.compress(data))
    other.write_bytes(data.replace(b"user", b"resu"))  # the same size, other bytes
    kept, repeated = distinct([zipped, other, plain])
    assert kept == [zipped, other]
    assert repeated == [(plain, zipped)]


def test_files_alike_in_their_first_64_kib_only_are_hashed_whole_and_kept(
    tmp_path: Path,
) -> None:
    head = b"x" * HEAD_BYTES
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(head + b"1\n")
    two.write_bytes(head + b"2\n")
    assert distinct([one, two]) == ([one, two], [])


def test_a_file_of_a_size_no_other_has_is_never_opened(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # The cost rule: only files that share a decompressed size are read.
    files = []
    for size in range(1, 6):
        path = tmp_path / f"{size}.jsonl"
        path.write_bytes(b"{}" + b" " * size)
        files.append(path)
    opened: list[Path] = []
    real = repeats._digest
    monkeypatch.setattr(
        repeats, "_digest", lambda path, limit: opened.append(path) or real(path, limit)
    )
    assert distinct(files) == (files, [])
    assert opened == []


def test_a_damaged_gzip_or_a_missing_file_is_left_to_the_reader(tmp_path: Path) -> None:
    data = b'{"a":1}\n' * 100
    good, cut = tmp_path / "good.jsonl.gz", tmp_path / "cut.jsonl.gz"
    good.write_bytes(gzip.compress(data))
    cut.write_bytes(gzip.compress(data)[:-12] + gzip.compress(data)[-8:])  # its size kept
    gone = tmp_path / "gone.jsonl"
    kept, repeated = distinct([good, cut, gone])
    assert kept == [good, cut, gone] and repeated == []


def test_a_folder_named_storage_is_compared_and_empty_files_are_left_to_the_reader(
    tmp_path: Path,
) -> None:
    """Any folder named `storage` turned the comparison off (meant for OpenCode's
    `storage/session/…` members only), and two empty files were "the same bytes", the
    second never said to be empty."""
    data = b'{"type":"user"}\n' * 10
    folder = tmp_path / "storage" / "x"
    folder.mkdir(parents=True)
    (folder / "a.jsonl").write_bytes(data)
    (folder / "b.jsonl").write_bytes(data)
    assert distinct([folder / "a.jsonl", folder / "b.jsonl"])[1] == [
        (folder / "b.jsonl", folder / "a.jsonl")
    ]
    member = tmp_path / "storage" / "session" / "p"
    member.mkdir(parents=True)
    (member / "s1.json").write_bytes(data)
    (member / "s2.json").write_bytes(data)
    assert distinct([member / "s1.json", member / "s2.json"])[1] == []  # read by the session's
    (tmp_path / "e1.jsonl").write_bytes(b"")
    (tmp_path / "e2.jsonl").write_bytes(b"")
    assert distinct([tmp_path / "e1.jsonl", tmp_path / "e2.jsonl"])[1] == []


def test_files_of_one_size_that_differ_early_are_read_64_kib_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cost rule's second step (the module's docstring: 262 files sharing a size cost
    # 262 reads of 64 KiB): two 1 MiB journals of one size, other bytes from the start,
    # are told apart by their heads, never read whole.
    one, two = tmp_path / "one.jsonl", tmp_path / "two.jsonl"
    one.write_bytes(b"1" * (1 << 20))
    two.write_bytes(b"2" * (1 << 20))
    read: list[int] = []
    real = repeats.open_journal

    class Counted:
        def __init__(self, path: Path) -> None:
            self.stream = real(path)

        def __enter__(self) -> Counted:
            self.stream.__enter__()
            return self

        def __exit__(self, *exc: object) -> None:
            self.stream.__exit__(*exc)

        def read(self, size: int) -> bytes:
            chunk: bytes = self.stream.read(size)
            read.append(len(chunk))
            return chunk

    monkeypatch.setattr(repeats, "open_journal", Counted)
    assert distinct([one, two]) == ([one, two], [])
    assert sum(read) == 2 * HEAD_BYTES


def test_copies_in_a_folder_named_storage_are_one_journal(
    tmp_path: Path,
) -> None:
    # A folder named storage (a mount, /mnt/storage/…) holding a journal and its gzip: one
    # journal, as anywhere else (every path under a `storage` folder was left uncompared).
    data = b'{"type":"user"}\n' * 10
    folder = tmp_path / "storage" / "journals"
    folder.mkdir(parents=True)
    plain, zipped = folder / "a.jsonl", folder / "a.jsonl.gz"
    plain.write_bytes(data)
    zipped.write_bytes(gzip.compress(data))
    assert distinct([plain, zipped]) == ([plain], [(zipped, plain)])
