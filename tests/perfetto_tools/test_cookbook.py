"""docs/sql-cookbook.md runs: every query in it is executed by Trace Processor v58.2 (the
`perfetto` package's TraceProcessor API) on real exports, and its rows are compared with what
the test computes from the same trace as our own decoder (traceview) reads it.

Each query is found under its `##` heading; a query without a checker below fails the test,
so a new recipe cannot go in untested.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from test_claude_code import SMALL, SPOTTER_DIR

from realtp import BINARY, SKIP_REASON, open_trace, rows
from shared_paths import REPO, TESTS
from traceview import TraceView

DOCS = REPO / "docs"
CODEX_LONG = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)

needs_trace_processor = pytest.mark.skipif(BINARY is None, reason=SKIP_REASON)


def recipes() -> list[tuple[str, str]]:
    """(heading + position under it, SQL) of every ```sql block, in page order."""
    found: list[tuple[str, str]] = []
    heading = "intro"
    seen: Counter[str] = Counter()
    for part in re.split(
        r"(^## [^\n]*$|```sql\n.*?```)", (DOCS / "sql-cookbook.md").read_text(), flags=re.M | re.S
    ):
        if part.startswith("## "):
            heading = part[3:].strip()
        elif part.startswith("```sql"):
            seen[heading] += 1
            found.append((f"{heading} #{seen[heading]}", part.removeprefix("```sql\n")[:-3]))
    return found


# --------------------------------------------------------------------------- independent numbers


def sessions(view: TraceView) -> dict[int, str]:
    """capture uuid → session id."""
    out = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        out[capture.uuid] = profile.args["session_id"]
    return out


def session_of(view: TraceView, track_uuid: int) -> str:
    capture = view.capture_of(track_uuid)
    assert capture is not None
    return sessions(view)[capture]


def prompt_sizes(view: TraceView) -> list[tuple[Any, ...]]:
    return sorted(
        (
            session_of(view, s.track_uuid),
            s.ts,
            s.args["context_tokens"],
            (s.args.get("context") or {}).get("estimated_tokens"),
            s.args["model"],
        )
        for s in view.slices
        if s.kind == "assistant-message" and "context_tokens" in s.args
    )


def addition_instants(view: TraceView) -> list[tuple[Any, ...]]:
    return sorted(
        (
            session_of(view, s.track_uuid),
            s.ts,
            s.args["delta_tokens"],
            s.args["tool"],
            s.args["tool_call_id"],
            s.args["category"],
        )
        for s in view.slices
        if view.tracks[s.track_uuid].name == "Largest additions"
    )


def all_additions(view: TraceView) -> list[tuple[Any, ...]]:
    tools = {
        (session_of(view, s.track_uuid), s.args["call_id"]): s.name
        for s in view.slices
        if s.kind == "tool-execution"
    }
    out = []
    for snapshot in view.snapshots():
        context = snapshot.args["context"]
        if context["baseline"]:
            continue
        session = session_of(view, snapshot.track_uuid)
        for change in context.get("changes") or []:
            if change["delta_tokens"] > 0:
                out.append(
                    (
                        session,
                        snapshot.ts,
                        change["delta_tokens"],
                        change["category"],
                        # absent = "" = no link (TRACE_CONTRACT §5)
                        change.get("source_id", ""),
                        tools.get((session, change.get("source_id", ""))),
                    )
                )
    return out


def compactions(view: TraceView) -> list[tuple[Any, ...]]:
    return sorted(
        (
            session_of(view, s.track_uuid),
            s.ts,
            s.dur,
            s.name,
            s.args.get("trigger"),
            s.args.get("pre_tokens"),
            s.args.get("post_tokens"),
            s.args.get("post_tokens_source"),
            s.args.get("removed_items"),
            (s.args.get("context") or {}).get("omitted_changes"),
        )
        for s in view.slices
        if s.kind == "compaction"
    )


def tools_by_result(view: TraceView) -> dict[str, tuple[int, int, int, int]]:
    calls = [s for s in view.slices if s.kind == "tool-execution"]
    out = {}
    for name in {s.name for s in calls}:
        mine = [s for s in calls if s.name == name]
        chars = [s.args["result_chars"] for s in mine]
        out[name] = (len(mine), sum(chars), max(chars), sum(bool(s.args["is_error"]) for s in mine))
    return out


def targets(view: TraceView) -> list[tuple[Any, ...]]:
    calls = [s for s in view.slices if s.kind == "tool-execution" and "target" in s.args]
    groups: dict[tuple[str, str], list[int]] = {}
    for s in calls:
        groups.setdefault((s.args["target_kind"], s.args["target"]), []).append(
            s.args["result_chars"]
        )
    rows = [(k, t, len(v), sum(v)) for (k, t), v in groups.items()]
    return sorted(rows, key=lambda r: (-r[3], r[0], r[1]))[:20]


def session_groups(view: TraceView) -> list[tuple[Any, ...]]:
    out = []
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None and capture.parent_uuid is not None
        out.append((view.tracks[capture.parent_uuid].name, profile.args["session_id"]))
    return sorted(out, key=lambda r: r[1])


def subagents(view: TraceView) -> list[tuple[Any, ...]]:
    out = []
    for capture in view.captures():
        p = view.profile_of(capture.uuid)
        assert p is not None
        if "parent_session" in p.args:
            out.append(
                (
                    p.args["session_id"],
                    p.args["parent_session"],
                    p.args["model"],
                    p.args["responses"],
                    p.dur / 1e9,
                )
            )
    return sorted(out)


def category_samples(view: TraceView) -> Counter[tuple[str, int, float]]:
    return Counter(
        (view.tracks[uuid].name, ts, float(value))
        for uuid, samples in view.counters.items()
        if view.tracks[uuid].name in ("Context: Tool results", "Context size")
        for ts, value in samples
    )


# --------------------------------------------------------------------------- checkers


def check_prompt_sizes(got: list[dict[str, Any]], view: TraceView) -> None:
    assert sorted(tuple(r.values()) for r in got) == prompt_sizes(view)
    assert [r["ts"] for r in got if r["session_id"] == got[0]["session_id"]] == sorted(
        r["ts"] for r in got if r["session_id"] == got[0]["session_id"]
    )


def check_addition_instants(got: list[dict[str, Any]], view: TraceView) -> None:
    assert sorted(tuple(r.values()) for r in got) == addition_instants(view)
    deltas = [r["delta_tokens"] for r in got]
    assert deltas == sorted(deltas, reverse=True)


def check_all_additions(got: list[dict[str, Any]], view: TraceView) -> None:
    expected = all_additions(view)
    top = sorted((e[2] for e in expected), reverse=True)[:20]
    assert [r["delta_tokens"] for r in got] == top
    # Each row is one of the non-baseline growths, linked to the tool of its own session.
    assert not Counter(tuple(r.values()) for r in got) - Counter(expected)
    assert any(r["tool"] is not None for r in got)


def check_compactions(got: list[dict[str, Any]], view: TraceView) -> None:
    assert sorted(tuple(r.values()) for r in got) == compactions(view)


def check_tools(got: list[dict[str, Any]], view: TraceView) -> None:
    assert {r["tool"]: (r["calls"], r["result_chars"], r["largest"], r["failed"]) for r in got} == (
        tools_by_result(view)
    )
    assert [r["result_chars"] for r in got] == sorted(
        (r["result_chars"] for r in got), reverse=True
    )


def check_subagents(got: list[dict[str, Any]], view: TraceView) -> None:
    assert sorted(tuple(r.values()) for r in got) == subagents(view)


def check_targets(got: list[dict[str, Any]], view: TraceView) -> None:
    assert [tuple(r.values()) for r in got] == targets(view)
    assert got  # both traces have tool calls with targets


def check_trace_facts(got: list[dict[str, Any]], view: TraceView) -> None:
    assert {r["name"]: r["str_value"] for r in got} == {
        f"trace_attribute.{k}": v for k, v in view.attributes.items()
    }
    assert len(got) == 4


def check_session_groups(got: list[dict[str, Any]], view: TraceView) -> None:
    assert [tuple(r.values()) for r in got] == session_groups(view)


def check_category(got: list[dict[str, Any]], view: TraceView) -> None:
    assert Counter((r["name"], r["ts"], r["value"]) for r in got) == category_samples(view)
    assert [r["ts"] for r in got] == sorted(r["ts"] for r in got)


CHECKS: dict[str, Callable[[list[dict[str, Any]], TraceView], None]] = {
    "Prompt size per request #1": check_prompt_sizes,
    "Largest additions in a session #1": check_addition_instants,
    "Largest additions in a session #2": check_all_additions,
    "Compactions and what they removed #1": check_compactions,
    "Tool calls by result size #1": check_tools,
    "Subagent totals #1": check_subagents,
    "What the tools acted on #1": check_targets,
    "The trace's own facts #1": check_trace_facts,
    "Sessions in the track tree #1": check_session_groups,
    "A category over time (and the reported size beside it) #1": check_category,
}


@pytest.fixture(scope="module", params=["claude-code", "codex"])
def trace(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Any]:
    from typer.testing import CliRunner

    from agent_profiler.cli import app
    from traceview import load_trace

    # A Claude Code session with its subagent and compaction request, plus the hand-made one
    # (post_tokens, a microcompaction): three sessions in one trace. And a long Codex rollout.
    inputs = [SPOTTER_DIR, SMALL] if request.param == "claude-code" else [CODEX_LONG]
    out = tmp_path_factory.mktemp("cookbook") / f"{request.param}.pftrace"
    result = CliRunner().invoke(app, ["export", *map(str, inputs), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with open_trace(out) as tp:
        yield tp, load_trace(out)


def test_every_recipe_has_a_checker() -> None:
    names = [name for name, _ in recipes()]
    assert names[0] == "intro #1"  # the helper view
    assert sorted(names[1:]) == sorted(CHECKS)


@needs_trace_processor
def test_the_recipes_give_the_trace_s_numbers(trace: Any) -> None:
    tp, view = trace
    (_, helper), *queries = recipes()
    rows(tp, helper)
    non_empty = 0
    for name, sql in queries:
        got = rows(tp, sql)
        CHECKS[name](got, view)
        non_empty += bool(got)
    assert non_empty >= 5  # most recipes have something to show on each trace
