"""A damaged journal whose session names itself as its parent, or sessions that name each
other (a cycle of parents), is cut once where the links are settled (links.cut_cycles):
in each cycle the session that starts first loses its parent link, with one warning naming
its file, and every command sees the same forest — summary's rows, export's and report's
counts, collect's `parent_session` column and fleet's main sessions. Before, summary
dropped the cycle's sessions ("no readable sessions"), export and report counted a
subagent of itself, and fleet left them out of every figure.

Hand-made from real journals: a Codex rollout whose `thread_spawn` names its own thread
(or two rollouts naming each other), and a Claude Code session whose subagents'
`.meta.json` name themselves, or each other, as `parentAgentId`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from shared_paths import TESTS

runner = CliRunner()
CODEX = TESTS / "data" / "journals" / "codex"
ROLLOUT = CODEX / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
A = "019c8bfe-ec25-79e0-97d7-bda6a9c575ff"
B = "019c8bfe-ec25-79e0-97d7-00000000000b"
SPOTTER_DIR = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
AGENT = f"{SPOTTER_ID}/a881341"
NESTED = f"{SPOTTER_ID}/bnest01"


def _rollout(folder: Path, thread: str, parent: str) -> None:
    """The test rollout as thread `thread`, spawned by `parent` (its session_meta)."""
    lines = ROLLOUT.read_text(encoding="utf-8").splitlines(keepends=True)
    head = json.loads(lines[0])
    head["payload"]["id"] = thread
    spawn = {"parent_thread_id": parent, "depth": 1, "agent_nickname": "n", "agent_role": "r"}
    head["payload"]["source"] = {"subagent": {"thread_spawn": spawn}}
    name = ROLLOUT.name.replace(A, thread)
    (folder / name).write_text(json.dumps(head) + "\n" + "".join(lines[1:]), encoding="utf-8")


def _codex_self(tmp_path: Path) -> Path:
    folder = tmp_path / "self"
    folder.mkdir()
    _rollout(folder, A, A)
    return folder


def _codex_pair(tmp_path: Path) -> Path:
    folder = tmp_path / "pair"
    folder.mkdir()
    _rollout(folder, A, B)
    _rollout(folder, B, A)
    return folder


def _claude(tmp_path: Path, pair: bool) -> Path:
    """The spotter session; its subagent a881341 names itself as its parent agent, or
    (`pair`) a hand-made subagent bnest01 and a881341 name each other."""
    folder = tmp_path / ("claude-pair" if pair else "claude-self")
    shutil.copytree(SPOTTER_DIR, folder)
    subagents = folder / SPOTTER_ID / "subagents"
    call = "toolu_01F74kyEsK4Wjf5xqWDXKdt2"
    meta = {"toolUseId": call, "parentAgentId": "bnest01" if pair else "a881341"}
    (subagents / "agent-a881341.meta.json").write_text(json.dumps(meta))
    if pair:
        base = {"isSidechain": True, "sessionId": SPOTTER_ID, "version": "2.1.39"}
        base["agentId"] = "bnest01"
        usage = {"input_tokens": 100, "cache_creation_input_tokens": 0, "output_tokens": 7}
        said = {"role": "user", "content": "nested task"}
        reply = {"model": "claude-haiku-4-5", "id": "msg_nest1", "role": "assistant"}
        reply |= {"content": [{"type": "text", "text": "nested"}], "usage": usage}
        records = [
            base | {"type": "user", "uuid": "u1", "parentUuid": None, "message": said},
            base | {"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": reply},
        ]
        records[0]["timestamp"] = "2026-02-11T21:24:22.970Z"
        records[1]["timestamp"] = "2026-02-11T21:24:23.100Z"
        text = "".join(json.dumps(r) + "\n" for r in records)
        (subagents / "agent-bnest01.jsonl").write_text(text)
        meta = {"toolUseId": call, "parentAgentId": "a881341"}
        (subagents / "agent-bnest01.meta.json").write_text(json.dumps(meta))
    return folder


# (how it is made, the sessions with their parents once cut, the sessions, the subagents,
# what the warning says)
CASES: dict[str, tuple[Any, list[tuple[str, str | None]], int, int, str]] = {
    "codex-self": (_codex_self, [(A, None)], 1, 0, f"session {A} names itself as its parent"),
    "codex-pair": (
        _codex_pair,
        # same start: the lower id is cut, the other stays its subagent
        [(B, None), (A, B)],
        2,
        1,
        f"session {B}: its parents form a cycle: {B} → {A} → {B}",
    ),
    "claude-self": (
        lambda tmp: _claude(tmp, pair=False),
        [(SPOTTER_ID, None), (AGENT, None)],
        2,
        0,
        f"session {AGENT} names itself as its parent",
    ),
    "claude-pair": (
        lambda tmp: _claude(tmp, pair=True),
        # a881341 starts first: its link is cut, bnest01 stays its subagent
        [(SPOTTER_ID, None), (AGENT, None), (NESTED, AGENT)],
        3,
        1,
        f"session {AGENT}: its parents form a cycle: {AGENT} → {NESTED} → {AGENT}",
    ),
}


@pytest.fixture(params=sorted(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[Path, Any]:
    make, *rest = CASES[request.param]
    return make(tmp_path), rest


def _said_once(stderr: str, warning: str) -> None:
    """One warning, at the cut session's file shown relative, never absolute."""
    lines = [line for line in stderr.splitlines() if warning in line]
    assert len(lines) == 1, stderr
    assert "; its parent link is cut (shown as a top-level session)" in lines[0]
    assert "/tmp/" not in lines[0] and str(Path.home()) not in lines[0]
    assert "(parent-cycle: 1)" in stderr


def test_summary_has_a_row_for_each_session_of_the_cycle(case: tuple[Path, Any]) -> None:
    folder, (links, _, _, warning) = case
    result = runner.invoke(app, ["summary", str(folder), "--json"])
    assert result.exit_code == 0, result.output + result.stderr
    rows = json.loads(result.stdout)
    rows = rows if isinstance(rows, list) else rows["sessions"]
    assert [(row["session"], row.get("parent")) for row in rows] == links
    _said_once(result.stderr, warning)


def test_export_counts_the_cut_session_as_a_top_level_one(
    case: tuple[Path, Any], export_trace: Any
) -> None:
    """Counted as one, and its capture (checked against the contract) names no parent but
    keeps the one its journal named as `parent_cut`."""
    folder, (links, sessions, subagents, warning) = case
    exported = export_trace(folder)
    noun = "subagent" if subagents == 1 else "subagents"
    what = f"{sessions} session{'s' * (sessions != 1)} ({subagents} {noun})"
    assert f"): {what}, " in exported.stdout
    _said_once(exported.stderr, warning)
    profiles = {
        s.args["session_id"]: s.args for s in exported.view.slices if s.name == "profile (1)"
    }
    assert {i: args.get("parent_session") for i, args in profiles.items()} == dict(links)
    cut = [i for i, args in profiles.items() if "parent_cut" in args]
    assert len(cut) == 1 and profiles[cut[0]].get("child_role") is None


def test_report_counts_and_nests_as_the_summary_does(
    case: tuple[Path, Any], tmp_path: Path
) -> None:
    folder, (links, sessions, subagents, _) = case
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output + result.stderr
    noun = "subagent" if subagents == 1 else "subagents"
    assert f"{sessions} session{'s' * (sessions != 1)} ({subagents} {noun})" in result.stdout
    page = out.read_text(encoding="utf-8")
    # only a session still linked is a "subagent of" another
    assert page.count(" · subagent of ") == sum(parent is not None for _, parent in links)


def test_collect_and_fleet_see_the_same_forest(case: tuple[Path, Any], tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    folder, (links, sessions, subagents, warning) = case
    dataset = tmp_path / "ds"
    result = runner.invoke(app, ["collect", str(folder), "--to", str(dataset)])
    assert result.exit_code == 0, result.output + result.stderr
    connection = duckdb.connect()
    try:
        rows = connection.execute(
            f"SELECT session_id, parent_session FROM read_parquet('{dataset}/current/"
            "sessions/**/*.parquet', hive_partitioning = true) ORDER BY session_id"
        ).fetchall()
    finally:
        connection.close()
    assert rows == sorted(links)
    fleet = runner.invoke(app, ["fleet", str(dataset), "--json", "--no-cost"])
    assert fleet.exit_code == 0, fleet.output
    counted = json.loads(fleet.stdout)["sessions"]
    assert (counted["count"], counted["subagents"]) == (sessions - subagents, subagents)
    _said_once(result.stderr, warning)


def _session(session_id: str, parent: str | None, start: int) -> Any:
    from agent_profiler.model import Harness, Session

    return Session(
        Harness.CODEX, session_id, start, start + 1, (f"{session_id}.jsonl",), parent_session=parent
    )


def test_a_long_cycle_is_cut_once_and_what_hangs_from_it_stays() -> None:
    """3,000 sessions in one ring (each the parent of the next; the last of the first) with a
    child hanging from one of them: one link cut, at the first to start, one warning that
    shows the ring's first sessions and its length; the tree is whole under it."""
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.links import PARENT_CUT, cut_cycles
    from agent_profiler.summary import summarise_all

    n = 3_000
    ids = [f"s{k:04d}" for k in range(n)]
    group = [_session(ids[k], ids[k - 1], 1_000 + k) for k in range(n)]
    group.append(_session("leaf", ids[7], 0))  # starts first, but is in no cycle
    said = Diagnostics()
    cut = cut_cycles(group[::-1], said)
    parents = {s.session_id: s.parent_session for s in cut}
    assert parents["s0000"] is None and parents["leaf"] == "s0007"
    assert sum(p is None for p in parents.values()) == 1
    assert dict(next(s for s in cut if s.session_id == "s0000").facts)[PARENT_CUT] == "s2999"
    (warning,) = said.warnings
    assert warning.message.startswith(
        "session s0000: its parents form a cycle: s0000 → s2999 → s2998 → s2997 → s2996 → "
        "s2995 → … → s0000 (3,000 sessions); its parent link is cut"
    )
    assert [row.session for row in summarise_all(cut)][:3] == ["s0000", "s0001", "s0002"]
    assert len(summarise_all(cut)) == n + 1
