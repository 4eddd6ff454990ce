"""`discover` and the files a harness leaves beside its sessions: Codex's cold rollouts
(`rollout-*.jsonl.zst`, zstd: listed, except one beside its plain copy, as Codex reads that
one) and Gemini CLI's `session-*.jsonl.unreadable-<ms>` and `.jsonl.tmp-<pid>` (a file it
could not reload, set aside; a rewrite's temporary file: no sessions). A fake machine in
tmp_path with real journals."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from agent_profiler.discover import discover
from agent_profiler.model import Harness
from samples import CODEX_SMALL, GEMINI_JSONL

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd


def _zst(data: bytes) -> bytes:
    """As Codex compresses a rollout older than a week: level 3, streamed."""
    compressor = zstd.ZstdCompressor(level=3)
    return compressor.compress(data) + compressor.flush()


def test_cold_codex_rollouts_are_listed_unless_their_plain_copy_is_there(
    tmp_path: Path,
) -> None:
    # GIVEN a compressed rollout in sessions/, and in archived_sessions/ a resumed one:
    # Codex wrote it again as plain `.jsonl` beside its older `.jsonl.zst`
    home = tmp_path / "home"
    day = home / ".codex" / "sessions" / "2026" / "02" / "23"
    day.mkdir(parents=True)
    cold = day / (CODEX_SMALL.name + ".zst")
    cold.write_bytes(_zst(CODEX_SMALL.read_bytes()))
    archived = home / ".codex" / "archived_sessions"
    archived.mkdir()
    resumed = archived / "rollout-2026-01-02T00-00-00-resumed.jsonl"
    shutil.copy(CODEX_SMALL, resumed)
    (archived / (resumed.name + ".zst")).write_bytes(_zst(CODEX_SMALL.read_bytes()[:2000]))
    # WHEN discovered
    found = discover(env={"HOME": str(home)}, harness=Harness.CODEX)
    # THEN the cold rollout with its facts (read through zstd), and the resumed one once
    assert sorted(j.path for j in found) == sorted([cold, resumed])
    listed = {j.path: j for j in found}
    assert listed[cold].project == listed[resumed].project is not None
    assert listed[cold].start_ns == listed[resumed].start_ns is not None


def test_gemini_cli_backup_and_temporary_files_are_no_sessions(tmp_path: Path) -> None:
    # GIVEN a Gemini CLI session with the copy it set aside when it could not reload it
    # and the temporary file of a rewrite left behind (348fc35f, `rewriteConversationFile`)
    chats = tmp_path / "home" / ".gemini" / "tmp" / "anthonyguera" / "chats"
    chats.mkdir(parents=True)
    session = chats / GEMINI_JSONL.name
    shutil.copy(GEMINI_JSONL, session)
    shutil.copy(GEMINI_JSONL, chats / f"{GEMINI_JSONL.name}.unreadable-1785340000000")
    shutil.copy(GEMINI_JSONL, chats / f"{GEMINI_JSONL.name}.tmp-4242")
    # WHEN discovered, THEN the session only
    found = discover(env={"HOME": str(tmp_path / "home")}, harness=Harness.GEMINI_CLI)
    assert [j.path for j in found] == [session]
