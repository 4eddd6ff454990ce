"""`collect` and Codex's cold rollouts (`rollout-*.jsonl.zst`): collected as the rollout, a
journal's zstd copy is a copy (its content is its decompressed bytes, as a `.gz`'s is), and
the rollout's stem in the manifest is the plain one's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agent_profiler.dataset.collect import collect, content_hash
from samples import CODEX_SMALL

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytest.importorskip("duckdb")


def _zst(data: bytes) -> bytes:
    """As Codex compresses a rollout older than a week: level 3, streamed."""
    compressor = zstd.ZstdCompressor(level=3)
    return compressor.compress(data) + compressor.flush()


def test_a_zstd_journal_hashes_as_its_decompressed_bytes(tmp_path: Path) -> None:
    zst = tmp_path / "a.jsonl.zst"
    zst.write_bytes(_zst(CODEX_SMALL.read_bytes()))
    assert content_hash(zst) == content_hash(CODEX_SMALL)
    # A damaged one is hashed as it is (its damage is said when it is read).
    cut = tmp_path / "cut.jsonl.zst"
    cut.write_bytes(zst.read_bytes()[:-5])
    assert content_hash(cut) not in {content_hash(zst), content_hash(CODEX_SMALL)}


def test_a_cold_rollout_is_collected_and_a_zstd_copy_is_a_copy(tmp_path: Path) -> None:
    # GIVEN a cold rollout (zstd) and, in a backup folder, its plain twin
    sessions, backup = tmp_path / "sessions", tmp_path / "backup"
    sessions.mkdir()
    backup.mkdir()
    (sessions / (CODEX_SMALL.name + ".zst")).write_bytes(_zst(CODEX_SMALL.read_bytes()))
    (backup / CODEX_SMALL.name).write_bytes(CODEX_SMALL.read_bytes())
    dataset = tmp_path / "ds"
    # WHEN collected
    result = collect([sessions, backup], dataset)
    # THEN one journal and one copy: one session, not two
    assert (result.new, result.copies, result.failures) == (1, 1, [])
    manifest = json.loads((dataset / "current" / "manifest.json").read_text())
    assert [group["stem"] for group in manifest["groups"].values()] == [
        CODEX_SMALL.name.removesuffix(".jsonl")
    ]
