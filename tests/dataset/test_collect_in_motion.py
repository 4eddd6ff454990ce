"""`collect` on journals that move while it runs (review-motion findings 3 and 4): a
journal that vanishes, is compressed or cannot be read between the folder walk and its
read is one line naming it, is not entered in the manifest as collected (it was, with
its hash and 0 sessions: never collected afterwards, its `.zst` refused as "a copy", a
file readable again "unchanged (not read)"), and the next collect reads it. The races
are made deterministic: the file is changed right after the walk (`loader.expand`) or
the plan (`loader.plan`), before collect hashes or reads it. As root a `chmod 000` file
is still readable: a file deleted and put back with its size and mtime stands for one
made unreadable and readable again (neither changes them), or its `open` refuses it."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from dsfiles import run, sessions

import agent_profiler.loader as loader
from samples import CLAUDE_SMALL, CODEX_SMALL
from shared_paths import TESTS

if sys.version_info >= (3, 14):
    from compression import zstd
else:
    from backports import zstd

pytest.importorskip("duckdb")

SPOTTER = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SUBAGENT = "agent-a881341.jsonl"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
NOT_USABLE = "1 file not usable (said above), not collected"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name, source in (("cx", CODEX_SMALL), ("J", CLAUDE_SMALL)):
        Path(name).mkdir()
        shutil.copy(source, Path(name) / source.name)
    return tmp_path


def after(monkeypatch: pytest.MonkeyPatch, step: str, change: Callable[[], None]) -> None:
    """`change` made once, right after the collect's `loader.<step>` (expand or plan)."""
    real = getattr(loader, step)
    done: list[bool] = []

    def hooked(*args: Any) -> Any:
        value = real(*args)
        if not done:
            done.append(True)
            change()
        return value

    monkeypatch.setattr(loader, step, hooked)


def taken_away(path: Path) -> Callable[[], None]:
    """Deletes `path` now; the function returned puts it back with its size and mtime."""
    data, stat = path.read_bytes(), path.stat()
    path.unlink()

    def put_back() -> None:
        path.write_bytes(data)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))

    return put_back


def test_a_rollout_compressed_while_it_is_read_is_collected_from_its_zst(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout that Codex compresses (`zstd --rm`) after the plan, before the read
    rollout = Path("cx") / CODEX_SMALL.name

    def compress() -> None:
        compressor = zstd.ZstdCompressor(level=3)
        data = compressor.compress(rollout.read_bytes()) + compressor.flush()
        Path(f"{rollout}.zst").write_bytes(data)
        rollout.unlink()

    after(monkeypatch, "plan", compress)
    # WHEN collected
    first = run("collect", "cx", "--to", "ds")
    # THEN its session is read from the `.zst` (the Codex adapter reads a plain rollout
    # gone since the plan from the compressed copy beside it) and collected
    assert first.exit_code == 0, first.output + first.stderr
    assert "error:" not in first.stderr and sessions() == 1
    # AND the next collect neither loses it nor collects it twice (the `.zst` is the same
    # bytes as the journal collected: "a copy")
    second = run("collect", "cx", "--to", "ds")
    assert second.exit_code == 0, second.output + second.stderr
    assert sessions() == 1


@pytest.mark.parametrize("folder", ["cx", "J"])
def test_a_journal_unreadable_while_it_is_read_is_read_once_readable(
    here: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    # GIVEN a journal unreadable (here: gone) after the plan, before the read
    journal = next(Path(folder).iterdir())
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(journal)))
    first = run("collect", folder, "--to", "ds")
    assert first.exit_code == 1, first.output
    assert f"error: {journal}: cannot open: no such file or directory" in first.stderr
    assert "nothing collected" in first.stdout or NOT_USABLE in first.stdout
    # WHEN it is readable again, its size and mtime those of the plan
    restore[0]()
    second = run("collect", folder, "--to", "ds")
    # THEN it is read (it was "unchanged (not read)" from then on)
    assert second.exit_code == 0, second.output
    assert "1 journal: 1 new" in second.stdout
    assert sessions() == 1


def test_a_subagent_unreadable_while_it_is_read_is_read_once_readable(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a Claude Code session whose subagent's file is unreadable (gone) when read
    shutil.copytree(SPOTTER, "sp")
    subagent = next(Path("sp").rglob(SUBAGENT))
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(subagent)))
    # WHEN collected
    first = run("collect", "sp", "--to", "ds")
    # THEN the session is collected without it, and the subagent's file is said, not
    # entered in the manifest
    assert first.exit_code == 1, first.output
    assert f"error: {subagent}: cannot open: no such file or directory" in first.stderr
    assert NOT_USABLE in first.stdout and "; 1 session in the dataset" in first.stdout
    # AND once readable (its size and mtime unchanged), the next collect reads the session
    # again with it (it was "3 unchanged (not read)" from then on)
    restore[0]()
    second = run("collect", "sp", "--to", "ds")
    assert second.exit_code == 0, second.output
    assert "1 new" in second.stdout and "; 2 sessions in the dataset" in second.stdout


def test_a_journal_emptied_while_it_is_read_is_not_collected_empty(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal that was a session when planned and read no session (cut to nothing by
    its harness's rewrite) is no result to keep: it was entered with 0 sessions."""
    journal = Path("J") / CLAUDE_SMALL.name
    data = journal.read_bytes()
    after(monkeypatch, "plan", lambda: journal.write_bytes(b""))
    first = run("collect", "J", "--to", "ds")
    assert first.exit_code == 1, first.output
    assert f"error: {journal}: changed while it was read" in first.stderr
    journal.write_bytes(data)
    second = run("collect", "J", "--to", "ds")
    assert second.exit_code == 0, second.output
    assert "1 journal: 1 new" in second.stdout
    assert sessions() == 1


def test_a_journal_gone_before_it_is_hashed_is_one_line(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout deleted after the folder walk, before collect stats it
    rollout = Path("cx") / CODEX_SMALL.name
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "expand", lambda: restore.append(taken_away(rollout)))
    # WHEN collected with another journal
    first = run("collect", "cx", "J", "--to", "ds")
    # THEN one line names it, the other is collected (it was `internal error`, exit 70)
    assert first.exit_code == 1, first.output
    assert f"error: {rollout}: cannot open: no such file or directory" in first.stderr
    assert "1 journal: 1 new" in first.stdout and NOT_USABLE in first.stdout
    assert sessions() == 1
    # AND found again, it is collected
    restore[0]()
    second = run("collect", "cx", "J", "--to", "ds")
    assert second.exit_code == 0, second.output
    assert sessions() == 2


def test_a_journal_unreadable_when_hashed_is_one_line(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a rollout that cannot be opened (permission denied: as root, by its `open`)
    rollout = Path("cx") / CODEX_SMALL.name
    real = Path.open

    def refused(self: Path, *args: Any, **kwargs: Any) -> Any:
        if self.name == rollout.name:
            raise PermissionError(13, "Permission denied", str(self))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", refused)
    # WHEN collected with another journal
    result = run("collect", "cx", "J", "--to", "ds")
    # THEN one line names it and the collect goes on (it was `internal error`, exit 70)
    assert result.exit_code == 1, result.output
    assert f"error: {rollout}: cannot open: permission denied" in result.stderr
    assert "1 journal: 1 new" in result.stdout and NOT_USABLE in result.stdout
    assert sessions() == 1


def test_a_journal_of_a_group_read_again_gone_before_its_stat(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A journal of an old group found beside the one given (`locate.whole`), gone before
    collect stats it: its group's rows collected before are kept, as for a journal
    unusable now, and the collect goes on (it was `internal error`, exit 70)."""
    import agent_profiler.dataset.collect as collect_module

    shutil.copytree(SPOTTER, "sp")
    assert run("collect", "sp", "--to", "ds").exit_code == 0
    subagent = next(Path("sp").rglob(SUBAGENT))
    with subagent.open("a") as handle:
        handle.write("\n")  # changed: its group is read again, its parent found beside it
    parent = next(Path("sp").glob("*.jsonl.gz"))
    real = collect_module.whole

    def whole(*args: Any) -> Any:
        found = real(*args)
        parent.unlink()
        return found

    monkeypatch.setattr(collect_module, "whole", whole)
    result = run("collect", str(subagent), "--to", "ds")
    assert result.exit_code == 1, result.output
    assert f"{parent.name}: cannot open: no such file or directory" in result.stderr
    assert "its rows collected before are kept; 2 sessions\n" in result.stdout


@pytest.mark.parametrize("back", [False, True], ids=["still-gone", "back-by-then"])
def test_a_subagent_unreadable_after_many_warnings_is_read_again(
    here: Path, monkeypatch: pytest.MonkeyPatch, back: bool
) -> None:
    """A group's reading lists its first 20 warnings only: an `unreadable` one not listed
    still keeps the file it is about out of the manifest (the file that cannot be opened
    after the read; or, opened again by then, every journal of the group). Opened again,
    the subagent's file is one found beside the session's file given alone: one given (its
    folder) is its own failure, never lost among warnings (test_group_file_failed)."""
    import gzip

    from agent_profiler.dataset.reading import Reader

    shutil.copytree(SPOTTER, "sp")
    packed = next(Path("sp").glob("*.jsonl.gz"))
    junk = b"".join(b"not json %d\n" % i for i in range(20))  # 20 warnings listed first
    main = Path("sp", packed.name.removesuffix(".gz"))
    main.write_bytes(gzip.decompress(packed.read_bytes()) + junk)
    packed.unlink()
    given = str(main) if back else "sp"
    subagent = next(Path("sp").rglob(SUBAGENT))
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(subagent)))
    if back:
        real = Reader.__call__

        def read_then_restore(self: Reader, groups: Any) -> Any:
            reads = real(self, groups)
            if restore:
                restore.pop()()
            return reads

        monkeypatch.setattr(Reader, "__call__", read_then_restore)
    first = run("collect", given, "--to", "ds")
    assert first.exit_code == 1, first.output
    if back:
        assert "error: sp/" in first.stderr and "could not be read (an `unreadable`" in first.stderr
        assert NOT_USABLE in first.stdout  # the session's file, the one journal given
    else:
        assert f"error: {subagent}: cannot open: no such file or directory" in first.stderr
        assert NOT_USABLE in first.stdout
        restore.pop()()
    second = run("collect", given, "--to", "ds")
    assert second.exit_code == 0, second.output
    assert "; 2 sessions in the dataset" in second.stdout


def test_a_subagent_collected_before_and_unreadable_when_read_again_keeps_its_rows(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a journal collected before and unusable when planned (test_journal_damaged_later):
    its session's rows collected before are kept, and the next collect reads it again."""
    shutil.copytree(SPOTTER, "sp")
    assert run("collect", "sp", "--to", "ds").exit_code == 0
    with next(Path("sp").rglob("agent-acompact-*.jsonl")).open("a") as handle:
        handle.write("\n")  # changed: the session is read again
    subagent = next(Path("sp").rglob(SUBAGENT))
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(subagent)))
    first = run("collect", "sp", "--to", "ds")
    assert first.exit_code == 1, first.output
    assert f"error: {subagent}: cannot open: no such file or directory" in first.stderr
    assert "its rows collected before are kept; 2 sessions\n" in first.stdout
    restore[0]()
    second = run("collect", "sp", "--to", "ds")
    assert second.exit_code == 0, second.output
    assert "0 new, 1 changed" in second.stdout and "; 2 sessions in the dataset" in second.stdout


def test_a_changed_journal_that_lost_what_was_collected_says_so(here: Path) -> None:
    """A journal rewritten in place (a rewind, a backup restored, a name reused) had its
    archived rows replaced with only "1 changed" (review-motion finding 9)."""
    import gzip

    journal = Path("J") / CLAUDE_SMALL.name
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join(lines[: len(lines) // 2]))
    assert run("collect", "J", "--to", "ds").exit_code == 0
    # GIVEN a journal that grew: nothing lost, nothing said
    journal.write_bytes(b"".join(lines))
    grew = run("collect", "J", "--to", "ds")
    assert "1 changed" in grew.stdout and "replaced" not in grew.stderr
    # WHEN it shrinks, THEN it is said in one line
    journal.write_bytes(b"".join(lines[:-4]))
    shrank = run("collect", "J", "--to", "ds")
    assert shrank.exit_code == 0, shrank.output
    before, after = len(b"".join(lines)), journal.stat().st_size
    assert (
        f"{journal}: it shrank ({before:,} → {after:,} bytes): its earlier rows were replaced "
        "by what it holds now\n"
    ) in shrank.stderr
    # AND when it holds another session now (larger), the session it held is named
    parent = next(SPOTTER.glob("*.jsonl.gz"))
    journal.write_bytes(gzip.decompress(parent.read_bytes()))
    other = run("collect", "J", "--to", "ds")
    assert (
        f"{journal}: it no longer holds session 11111111-2222-4333-8444-555555555555: its "
        "earlier rows were replaced by what it holds now\n"
    ) in other.stderr
    assert sessions() == 1


def test_a_rollout_given_with_its_thread_unreadable_when_read_is_read_once_readable(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Codex child rollout given with its parent (their folder) and gone when read: its
    own `error:` line (it was a `read-error` warning), left out of the manifest with the
    parent collected, and the child read next time."""
    from test_vanished_after_planning import _tree

    Path("tree").mkdir()
    _, child = _tree(Path("tree"))
    child = Path("tree") / child
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(child)))
    first = run("collect", "tree", "--to", "ds")
    assert first.exit_code == 1, first.output
    named = [line for line in first.stderr.splitlines() if child.name in line]
    assert named == [f"error: {child}: cannot open: no such file or directory"]
    assert NOT_USABLE in first.stdout and "; 1 session in the dataset" in first.stdout
    restore[0]()
    second = run("collect", "tree", "--to", "ds")
    assert second.exit_code == 0, second.output
    assert "; 2 sessions in the dataset" in second.stdout


def test_a_session_collected_without_its_unreadable_subagent_is_kept_once_garbage(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session collected without its subagent (unreadable when read: its group names the
    file, the manifest keeps no entry for it), whose parent is garbage at the next collect
    while the subagent is still gone: the session's rows collected before are kept (the
    subagent, in its group and in no entry, is no internal error)."""
    shutil.copytree(SPOTTER, "sp")
    subagent = next(Path("sp").rglob(SUBAGENT))
    after(monkeypatch, "plan", subagent.unlink)  # (once: the next collect plans as ever)
    assert run("collect", "sp", "--to", "ds").exit_code == 1
    parent = next(Path("sp").glob("*.jsonl.gz"))
    parent.write_bytes(b"no journal now\n")
    result = run("collect", "sp", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert result.stdout.endswith("its rows collected before are kept; 1 session\n"), result.stdout
    assert not subagent.exists()


def test_what_each_changed_journal_of_a_group_lost_is_said_in_one_line(here: Path) -> None:
    """A session with two subagents collected, then each subagent's file rewritten with
    the first lines of another subagent (the parent unchanged, first in the group): the
    first changed file's line says both of its losses, the two sessions its group held
    and no longer holds named; the second says that it shrank."""
    shutil.copytree(SPOTTER, "sp")
    first = next(Path("sp").rglob(SUBAGENT))
    second = first.with_name("agent-a999999.jsonl")
    second.write_bytes(first.read_bytes().replace(b'"agentId":"a881341"', b'"agentId":"a999999"'))
    assert run("collect", "sp", "--to", "ds").exit_code == 0
    sizes = {}
    for subagent, was, now in ((first, b"a881341", b"b000001"), (second, b"a999999", b"b000002")):
        sizes[subagent] = subagent.stat().st_size
        head = b"".join(subagent.read_bytes().splitlines(keepends=True)[:4])
        subagent.write_bytes(head.replace(b'"agentId":"%s"' % was, b'"agentId":"%s"' % now))
    result = run("collect", "sp", "--to", "ds")
    assert result.exit_code == 0, result.output
    replaced = "its earlier rows were replaced by what it holds now"
    shrank = {p: f"it shrank ({sizes[p]:,} → {p.stat().st_size:,} bytes)" for p in sizes}
    assert [line for line in result.stderr.splitlines() if replaced in line] == [
        f"{first}: {shrank[first]}; it no longer holds sessions {SPOTTER_ID}/a881341, "
        f"{SPOTTER_ID}/a999999: {replaced}",
        f"{second}: {shrank[second]}: {replaced}",
    ]


@pytest.mark.parametrize(
    ("junk", "back"), [(0, True), (20, False)], ids=["listed-back-by-then", "not-listed-still-gone"]
)
def test_a_subagent_found_beside_and_unreadable_when_read_is_the_one_refused(
    here: Path, monkeypatch: pytest.MonkeyPatch, junk: int, back: bool
) -> None:
    """A session's file given alone, its subagent found beside it and gone when read: the
    subagent alone is refused, on its own `error:` line (the session is collected without
    it), whether its `unreadable` warning is listed (the warning's words, even when the
    file is back by the time the reading is judged) or not (the file that cannot be
    opened then: the system's words)."""
    import gzip

    from agent_profiler.dataset.reading import Reader

    shutil.copytree(SPOTTER, "sp")
    packed = next(Path("sp").glob("*.jsonl.gz"))
    main = Path("sp", packed.name.removesuffix(".gz"))
    lines = b"".join(b"not json %d\n" % i for i in range(junk))  # warnings listed first
    main.write_bytes(gzip.decompress(packed.read_bytes()) + lines)
    packed.unlink()
    subagent = next(Path("sp").rglob(SUBAGENT))
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(subagent)))
    if back:
        real = Reader.__call__

        def read_then_restore(self: Reader, groups: Any) -> Any:
            reads = real(self, groups)
            restore.pop()()
            return reads

        monkeypatch.setattr(Reader, "__call__", read_then_restore)
    first = run("collect", str(main), "--to", "ds")
    assert first.exit_code == 1, first.output
    errors = [line for line in first.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [f"error: {subagent}: cannot open: no such file or directory"]
    assert first.stdout.startswith("ds: version 1; 1 journal: 1 new"), first.stdout
    assert "; 1 session in the dataset" in first.stdout


def test_the_warnings_of_a_journal_said_on_its_own_line_are_taken_back() -> None:
    """`refuse.forget`: a journal of a group that could not be read is its own `error:` line,
    so its `unreadable` and `no-session` warnings are taken back, listed and counted (a
    kind none is left of is gone from the count); the same kinds about other files, and
    its other warnings, stay."""
    from agent_profiler.dataset.refuse import forget
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.errors import JournalError

    diagnostics = Diagnostics()
    diagnostics.warn("a.jsonl", None, "unreadable", "cannot open: no such file or directory")
    diagnostics.warn("a.jsonl", None, "no-session", "no session records (nothing to show)")
    diagnostics.warn("b.jsonl", None, "no-session", "no session records (nothing to show)")
    diagnostics.warn("a.jsonl", 4, "not-json", "not JSON (unexpected character)")
    forget(diagnostics, [JournalError("a.jsonl", "cannot open: no such file or directory")])
    assert [(w.path, w.kind) for w in diagnostics.warnings] == [
        ("b.jsonl", "no-session"),
        ("a.jsonl", "not-json"),
    ]
    assert diagnostics.summary_lines()[0] == "2 warnings (no-session: 1, not-json: 1)"


@pytest.mark.parametrize("case", ["parent-given-child-beside", "child-gone-once-read"])
def test_each_journal_of_a_thread_emptied_while_it_is_read_is_said(
    here: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """A Codex thread whose rollouts are cut to nothing while read: the reading holds no
    session, and each journal given is said and not collected, whatever else its group
    holds: a child found beside (not a journal of the collect: not said), or a child given,
    first in the group, gone by the time the reading is judged (said as gone, and the
    parent after it still said)."""
    from test_vanished_after_planning import _tree

    from agent_profiler.dataset.reading import Reader

    Path("tree").mkdir()
    parent, child = (Path("tree") / p for p in _tree(Path("tree")))
    after(monkeypatch, "plan", lambda: [p.write_bytes(b"") for p in (child, parent)])
    moved = "changed while it was read, and held no session then: not collected"
    if case == "parent-given-child-beside":
        given, said = parent, [f"error: {parent}: {moved}"]
    else:
        real = Reader.__call__

        def read_then_remove(self: Reader, groups: Any) -> Any:
            reads = real(self, groups)
            assert [p.name for p in reads[0].group.paths] == [child.name, parent.name]
            child.unlink()
            return reads

        monkeypatch.setattr(Reader, "__call__", read_then_remove)
        given = Path("tree")
        said = [
            f"error: {child}: cannot open: no such file or directory",
            f"error: {parent}: {moved}",
        ]
    result = run("collect", str(given), "--to", "ds")
    assert result.exit_code == 1, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert [line.split(" (the next collect")[0] for line in errors] == said
    assert "no journal could be collected" in result.stdout


def test_a_journal_collected_and_gone_before_it_is_hashed_keeps_its_rows(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rollout collected before, deleted after the walk of the next collect and before
    its stat: one line names it, its session keeps its rows, and it is counted neither as
    changed nor as unchanged."""
    assert run("collect", "cx", "J", "--to", "ds").exit_code == 0
    rollout = Path("cx") / CODEX_SMALL.name
    after(monkeypatch, "expand", rollout.unlink)
    result = run("collect", "cx", "J", "--to", "ds")
    assert result.exit_code == 1, result.output
    assert f"error: {rollout}: cannot open: no such file or directory" in result.stderr
    assert result.stdout == (
        "ds: nothing new or changed; 2 journals: 0 new, 0 changed, 1 unchanged (not read); 1 "
        "session whose journal collected before is unusable or damaged now (said above): its "
        "rows collected before are kept; 2 sessions\n"
    )


def test_a_subagent_collected_alone_keeps_its_rows_when_its_parent_is_gone_when_read(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subagent collected alone, then its session's folder, the parent's file gone
    between the plan and the read: that reading fails whole. The subagent's group was
    joined to it all the same (its files counted by a reading that read nothing), dropped,
    and the subagent's entry left without a group: `0 sessions in the dataset`, the
    subagent "unchanged (not read)" from then on; and the compaction file not read with
    the parent was "not usable (said above)", with no line saying it."""
    import json

    shutil.copytree(SPOTTER, "sp")
    subagent = next(Path("sp").rglob(SUBAGENT))
    assert run("collect", str(subagent), "--to", "ds").exit_code == 0
    parent = Path("sp", f"{SPOTTER_ID}.jsonl.gz")
    restore: list[Callable[[], None]] = []
    after(monkeypatch, "plan", lambda: restore.append(taken_away(parent)))
    gone = run("collect", "sp", "J", "--to", "ds")  # (J: a version is written)
    assert gone.exit_code == 1, gone.output
    assert gone.stderr == f"error: {parent}: cannot open: no such file or directory\n"
    # THEN the subagent's rows collected before are kept, in its group, and the counts
    # are those said: the parent refused, the compaction file not read with it
    assert gone.stdout.startswith(
        "ds: version 2; 2 journals: 1 new, 0 changed, 1 unchanged (not read); 1 file not "
        "usable (said above), not collected, nor 1 journal read with it; read 1 journal group"
    ), gone.stdout
    assert gone.stdout.endswith("; 2 sessions in the dataset\n"), gone.stdout
    fleet = json.loads(run("fleet", "ds", "--json", "--no-cost").stdout)["sessions"]
    assert (fleet["count"], fleet["subagents"]) == (1, 1)
    manifest = json.loads(Path("ds", "current", "manifest.json").read_text())
    for key, entry in manifest["files"].items():
        assert key in manifest["groups"][entry["group"]]["files"]
    # AND once the parent is back, the session is read whole, the subagent with it
    restore[0]()
    back = run("collect", "sp", "--to", "ds")
    assert back.exit_code == 0, back.output
    assert back.stdout.startswith("ds: version 3; 3 journals: 2 new, 0 changed, 1 unchanged (1")
    assert back.stdout.endswith("; 3 sessions in the dataset\n"), back.stdout


def test_an_old_group_read_again_with_a_new_journal_gone_when_read_keeps_its_rows(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A subagent collected alone from another folder; then its parent's transcript. The
    parent's reading relates to the subagent's old group, so the two are planned and read
    again together (regroup); the parent gone between that plan and that reading, the
    reading fails whole, and it replaces nothing: the subagent's old group was dropped
    all the same ("0 sessions in the dataset"), its rows gone."""
    import json

    Path("other").mkdir()
    shutil.copy(next(SPOTTER.rglob(SUBAGENT)), Path("other", SUBAGENT))
    alone = run("collect", "other", "--to", "ds")
    assert alone.exit_code == 0, alone.output
    collected = json.loads(run("fleet", "ds", "--json", "--no-cost").stdout)["sessions"]
    assert (collected["count"], collected["subagents"]) == (0, 1)
    Path("p").mkdir()
    parent = Path("p", f"{SPOTTER_ID}.jsonl.gz")
    shutil.copy(SPOTTER / parent.name, parent)
    # GIVEN the parent gone after the second plan (regroup's: the two read together)
    real, plans = loader.plan, []

    def plan(*args: Any) -> Any:
        value = real(*args)
        plans.append(value)
        if len(plans) == 2:
            restore.append(taken_away(parent))
        return value

    restore: list[Callable[[], None]] = []
    monkeypatch.setattr(loader, "plan", plan)
    gone = run("collect", "p", "other", "--to", "ds")
    assert len(plans) == 2, "the regroup's second plan was not reached"
    # THEN the parent is one line, and the subagent's rows collected before are kept
    assert gone.exit_code == 1, gone.output
    assert gone.stderr == f"error: {parent}: cannot open: no such file or directory\n"
    assert gone.stdout.startswith("ds: nothing collected; 1 journal: 0 new, 0 changed, 1 unc")
    assert gone.stdout.endswith(f"; {NOT_USABLE}; 1 session\n"), gone.stdout
    fleet = json.loads(run("fleet", "ds", "--json", "--no-cost").stdout)["sessions"]
    assert fleet == collected
    # AND once the parent is back, the two are read together
    restore[0]()
    back = run("collect", "p", "other", "--to", "ds")
    assert back.exit_code == 0, back.output
    assert back.stdout.endswith("; 2 sessions in the dataset\n"), back.stdout
