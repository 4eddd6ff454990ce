"""Review d14: odd date folders, impossible redaction lengths, the `rollout_reference`
fact's privacy, children found beside a parent (damaged ones, the name-time filter)."""

from __future__ import annotations

from pathlib import Path

from agent_profiler.adapters import SniffedFile, codex
from agent_profiler.jsonl import sniff
from rules_spy import record, write
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "codex"
PLAIN = DATA / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"


def _meta(thread: str, parent: str | None = None) -> dict[str, object]:
    meta = record(PLAIN, 1)
    payload = meta["payload"]
    payload.pop("base_instructions")
    payload["id"] = thread
    if parent is not None:
        payload["source"] = {"subagent": {"thread_spawn": {"parent_thread_id": parent}}}
    return meta


def _rollout(folder: Path, name: str, thread: str, parent: str | None = None) -> Path:
    return write(folder, [_meta(thread, parent), record(PLAIN, 6)], f"rollout-{name}.jsonl")


def _plan(*paths: Path) -> list[tuple[str, ...]]:
    groups = codex.plan([SniffedFile(path, sniff(path)) for path in paths])
    return [tuple(path.name for path in group.paths) for group in groups]


def test_the_last_possible_date_folder_has_no_next_day_and_is_read(tmp_path: Path) -> None:
    """9999/12/31 + one day overflows: no next day, the rollout and its child beside it
    are planned as anywhere else (it was an internal error in every command)."""
    last = tmp_path / "sessions" / "9999" / "12" / "31"
    last.mkdir(parents=True)
    parent = _rollout(last, "parent", "thread-p")
    _rollout(last, "child", "thread-c", parent="thread-p")
    assert _plan(parent) == [("rollout-parent.jsonl", "rollout-child.jsonl")]
