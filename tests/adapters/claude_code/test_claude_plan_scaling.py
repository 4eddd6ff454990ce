"""A Claude Code session folder given whole, with its thousands of subagent files
(notes: review-scaling finding 3): `claude_code.plan` looked each subagent file given up
in the list of those found beside the session, so grouping cost grew with the square of
the subagents. The work is counted (path comparisons), not timed."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path, PosixPath

from agent_profiler.adapters import SniffedFile, claude_code

SESSION = "11111111-2222-4333-8444-555555555555"


class CountedPath(PosixPath):
    """A path that counts the comparisons made with it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedPath.compared += 1
        return super().__eq__(other)

    __hash__ = PosixPath.__hash__


def _head(sidechain: bool) -> list[object]:
    return [{"type": "user", "sessionId": SESSION, "isSidechain": sidechain}]


def _session_folder(root: Path, subagents: int) -> list[SniffedFile]:
    """The files a walk of a session folder gives: the main transcript, then each of its
    subagent files (`<session>/subagents/agent-*.jsonl`)."""
    root.mkdir()
    main = CountedPath(root / f"{SESSION}.jsonl")
    main.write_text("{}\n")
    folder = root / SESSION / "subagents"
    folder.mkdir(parents=True)
    files = [SniffedFile(main, _head(False))]
    for index in range(subagents):
        path = CountedPath(folder / f"agent-a{index:07x}.jsonl")
        path.write_text("{}\n")
        files.append(SniffedFile(path, _head(True)))
    return files


def _comparisons(root: Path, subagents: int) -> int:
    files = _session_folder(root, subagents)
    CountedPath.compared = 0
    (group,) = claude_code.plan(files)
    assert len(group.extras) == subagents and group.variant == ""
    return CountedPath.compared


def test_grouping_a_session_folder_grows_linearly_with_its_subagents(tmp_path: Path) -> None:
    """Each subagent file given is checked against the others by a set: doubling the
    subagents doubles the comparisons (the list made it 4x: 500 → 1,000 subagents went
    from 125,750 comparisons to 501,500)."""
    counts = [_comparisons(tmp_path / str(n), n) for n in (250, 500, 1000)]
    assert counts[-1] <= 4 * 1000, counts
    assert all(later <= 2.2 * earlier for earlier, later in pairwise(counts)), counts


def test_the_subagent_files_keep_their_order_and_each_is_read_once(tmp_path: Path) -> None:
    """The group's files: those found beside the session in name order (given or not),
    then a subagent file of the session given from elsewhere, once however it comes; the
    variant names the one only found (not given), by its place."""
    main = tmp_path / f"{SESSION}.jsonl"
    main.write_text("{}\n")
    folder = tmp_path / SESSION / "subagents"
    folder.mkdir(parents=True)
    beside = [folder / f"agent-{name}.jsonl" for name in ("a", "b", "c")]
    for path in beside:
        path.write_text("{}\n")
    elsewhere = tmp_path / "copied" / "agent-d.jsonl"
    given = [
        SniffedFile(beside[2], _head(True)),
        SniffedFile(elsewhere, _head(True)),
        SniffedFile(main, _head(False)),
        SniffedFile(beside[0], _head(True)),
    ]
    (group,) = claude_code.plan(given)
    assert group.main == main
    assert group.extras == (*beside, elsewhere)
    assert group.variant == "found:1"  # agent-b: found beside, not given
