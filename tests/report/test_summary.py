"""`agent-profiler summary`: seed 001's edge cases, the JSON shape, and numbers on real
journals checked against an independent reading with the json module."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from test_claude_code import (
    DATA,
    ENTIRE_51,
    SMALL,
    SPOTTER_DIR,
    SPOTTER_ID,
    STREAM_GHAW,
    STREAM_INIT_ONLY,
    independent_prompts,
    lines,
)
from test_codex import CLI as CODEX_CLI
from test_codex import independent_usage
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.summary_text import composition_bar, escape_cell
from shared_paths import CORPUS, SHARED_REASON, TESTS

runner = CliRunner()
SHARED_KEYS = (
    "calls",
    "subagent_calls",
    "first_prompt_tokens",
    "peak_prompt_tokens",
    "final_prompt_tokens",
    "growth_tokens",
    "peak_fill",
    "compactions",
    "tool_calls",
    "failed_tool_calls",
    "repeated_tool_calls",
    "tool_result_chars",
    "largest_tool_results",
)


def summary_json(*paths: Path, args: tuple[str, ...] = (), exit_code: int = 0) -> Any:
    result = runner.invoke(app, ["summary", "--json", *args, *map(str, paths)])
    assert result.exit_code == exit_code, result.output + result.stderr
    return json.loads(result.stdout)


def transcript(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _assistant(
    mid: str, usage: dict[str, int], content: list[dict[str, Any]], ts: str, session: str = "s-1"
) -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": session,
        "uuid": f"{mid}-{ts}",
        "timestamp": f"2026-01-01T10:00:{ts}Z",
        "message": {"id": mid, "model": "claude-x", "usage": usage, "content": content},
    }


def _result(
    call: str, ts: str, *, error: bool = False, text: str = "ok", session: str = "s-1"
) -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": session,
        "uuid": f"r-{call}",
        "timestamp": f"2026-01-01T10:00:{ts}Z",
        "message": {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call, "content": text, "is_error": error}
            ],
        },
    }


def _call(call: str, name: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "tool_use", "id": call, "name": name, "input": arguments}]


U = {"input_tokens": 1, "cache_read_input_tokens": 100, "output_tokens": 1}


def test_json_is_always_a_list_with_the_peer_keys() -> None:
    (row,) = summary_json(SMALL)
    for key in (
        *SHARED_KEYS,
        "session",
        "harness",
        "model",
        "source",
        "window_tokens",
        "end_categories",
    ):
        assert key in row
    assert "parent" not in row and "per_call" not in row
    assert (row["calls"], row["first_prompt_tokens"], row["peak_prompt_tokens"]) == (
        6,
        15_003,
        18_209,
    )
    assert row["growth_tokens"] == 18_209 - 15_003
    assert row["final_prompt_tokens"] == 11_913
    assert (row["compactions"], row["tool_calls"], row["failed_tool_calls"]) == (2, 4, 1)


def test_retry_after_failure_and_read_edit_read_are_not_repeats(tmp_path: Path) -> None:
    journal = transcript(
        tmp_path / "s.jsonl",
        [
            _assistant("m1", U, _call("c1", "Read", {"file_path": "/a"}), "01"),
            _result("c1", "02", error=True, text="no such file"),
            _assistant("m2", U, _call("c2", "Read", {"file_path": "/a"}), "03"),  # retry: fine
            _result("c2", "04"),
            _assistant("m3", U, _call("c3", "Read", {"file_path": "/a"}), "05"),  # a repeat
            _result("c3", "06"),
            _assistant("m4", U, _call("c4", "Edit", {"file_path": "/a", "x": 1}), "07"),
            _result("c4", "08"),
            _assistant("m5", U, _call("c5", "Read", {"file_path": "/a"}), "09"),  # after an edit
            _result("c5", "10"),
            _assistant("m6", U, _call("c6", "Grep", {"pattern": "a"}), "11"),
            _result("c6", "12"),
            _assistant("m7", U, _call("c7", "Grep", {"pattern": "b"}), "13"),  # other input
            _result("c7", "14"),
        ],
    )
    (row,) = summary_json(journal)
    assert row["tool_calls"] == 7 and row["failed_tool_calls"] == 1
    assert row["repeated_tool_calls"] == 1


def test_pipe_in_names_is_escaped_and_the_table_keeps_its_columns(tmp_path: Path) -> None:
    journal = transcript(
        tmp_path / "a|b.jsonl",
        [
            _assistant("m1", U, [{"type": "text", "text": "hi"}], "01", session="x|y"),
        ],
    )
    result = runner.invoke(app, ["summary", str(journal)])
    assert result.exit_code == 0, result.output
    header, _, row, *_ = result.stdout.splitlines()
    assert "x\\|y" in row
    assert row.count(" | ") == header.count(" | ")
    assert escape_cell("a|b\nc") == "a\\|b\\x0ac"


def test_init_only_and_assistant_only_files(tmp_path: Path) -> None:
    assistant_only = transcript(
        tmp_path / "assistant.jsonl",
        [
            {
                "type": "assistant",
                "session_id": "s-9",
                "parent_tool_use_id": None,
                "message": {
                    "id": "m1",
                    "model": "claude-x",
                    "usage": U,
                    "content": [{"type": "text", "text": "hello"}],
                },
            },
        ],
    )
    rows = summary_json(STREAM_INIT_ONLY, assistant_only)
    assert [r["calls"] for r in rows] == [0, 1]
    assert rows[0]["first_prompt_tokens"] is None and rows[0]["peak_fill"] is None
    assert rows[1]["first_prompt_tokens"] == 101


def test_one_bad_file_among_several(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\x00\x01binary")
    result = runner.invoke(app, ["summary", str(SMALL), str(bad), str(ENTIRE_51)])
    assert result.exit_code == 1
    assert result.stderr.count("error:") == 1 and f"error: {bad.name}:1: " in result.stderr
    assert "11111111-2222-4333-8444-555555555555" in result.stdout
    assert "9667a07f-c677-4f9d-9b21-da366e5add6a" in result.stdout


def test_subagents_are_rows_of_their_own_under_the_parent() -> None:
    rows = summary_json(SPOTTER_DIR)
    assert [r["session"] for r in rows] == [SPOTTER_ID, f"{SPOTTER_ID}/a881341"]
    parent, child = rows
    assert child["parent"] == SPOTTER_ID and parent["subagent_calls"] == child["calls"] == 3
    assert parent["calls"] == len(independent_prompts(SPOTTER_DIR / f"{SPOTTER_ID}.jsonl.gz"))
    result = runner.invoke(app, ["summary", str(SPOTTER_DIR)])
    assert f"  └ {SPOTTER_ID}/a881341" in result.stdout


def _nested(tmp_path: Path) -> Path:
    """The spotter session with a hand-made subagent of its subagent: `agent-bnest01`,
    launched by a881341's call (Claude Code's `parentAgentId` in the `.meta.json`)."""
    import shutil

    folder = tmp_path / "spotter"
    shutil.copytree(SPOTTER_DIR, folder)
    subagents = folder / SPOTTER_ID / "subagents"
    base = {"isSidechain": True, "sessionId": SPOTTER_ID, "version": "2.1.39", "agentId": "bnest01"}
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 0, "output_tokens": 7}
    records = [
        base
        | {
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-02-11T21:24:22.970Z",
            "message": {"role": "user", "content": "nested task"},
        },
        base
        | {
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": "u1",
            "timestamp": "2026-02-11T21:24:23.100Z",
            "message": {
                "model": "claude-haiku-4-5",
                "id": "msg_nest1",
                "role": "assistant",
                "content": [{"type": "text", "text": "nested"}],
                "usage": usage,
            },
        },
    ]
    (subagents / "agent-bnest01.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    meta = {"toolUseId": "toolu_01F74kyEsK4Wjf5xqWDXKdt2", "parentAgentId": "a881341"}
    (subagents / "agent-bnest01.meta.json").write_text(json.dumps(meta))
    return folder


def test_a_subagents_subagent_is_drawn_under_it(tmp_path: Path) -> None:
    """It was drawn at its parent's depth, as if the top session had launched it; and
    `subagent_calls` counts the direct subagents' requests (docs/commands.md says so)."""
    folder = _nested(tmp_path)
    rows = summary_json(folder)
    assert [(r["session"], r.get("parent")) for r in rows] == [
        (SPOTTER_ID, None),
        (f"{SPOTTER_ID}/a881341", SPOTTER_ID),
        (f"{SPOTTER_ID}/bnest01", f"{SPOTTER_ID}/a881341"),
    ]
    assert [r["subagent_calls"] for r in rows] == [3, 1, 0]
    table = runner.invoke(app, ["summary", str(folder)]).stdout
    assert f"|   └ {SPOTTER_ID}/a881341 " in table and f"|     └ {SPOTTER_ID}/bnest01 " in table
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(folder), "-o", str(page)]).exit_code == 0
    html = page.read_text(encoding="utf-8")
    nested = r'class="depth-2" data-session-id="[^"]*/bnest01"><td class="id"><a [^>]*>↳ …/bnest01<'
    assert re.search(nested, html)


def test_a_subagent_without_its_parent_is_not_drawn_under_another_session() -> None:
    """An OpenCode subagent whose parent was not read came right after an unrelated
    session, drawn under it (`└`): it is a row of its own, said to be a subagent."""
    orphan = TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
    rows = summary_json(SMALL, orphan)
    assert rows[1]["session"] == "ses_2bef25635ffe8EzID0I1Oeymal" and rows[1]["parent"]
    assert rows[1]["parent"] not in {r["session"] for r in rows}
    table = runner.invoke(app, ["summary", str(SMALL), str(orphan)]).stdout
    assert "| ses_2bef25635ffe8EzID0I1Oeymal (subagent) " in table
    assert "└" not in table


def test_window_option_gives_the_fill() -> None:
    (row,) = summary_json(SMALL)
    # Claude Code's journal states no window: the assumed 200,000 (as the trace and the
    # report), named so
    assert (row["window_tokens"], row["window_source"]) == (200_000, "assumed")
    assert row["peak_fill"] == round(row["peak_prompt_tokens"] / 200_000, 4)
    (row,) = summary_json(SMALL, args=("--window", "100000"))
    assert row["window_tokens"] == 100_000 and row["peak_fill"] == 0.1821
    assert row["window_source"] == "given"
    # A fill over 100% is said to be one, not printed as 1821% without a word.
    assert "fill over 100%" not in runner.invoke(app, ["summary", str(SMALL)]).stdout
    small = runner.invoke(app, ["summary", str(SMALL), "--window", "1000"]).stdout
    assert "| 1821% |" in small
    assert "fill over 100% (1 session): a request larger than the window" in small


def test_the_fill_legend_names_only_windows_a_row_is_marked_with() -> None:
    """A session without requests (a Gemini CLI log holding only a warning) shows no fill,
    and its window was listed under `fill *` though no row carried the mark."""
    only_warning = (
        TESTS
        / "data"
        / "journals"
        / "gemini-cli"
        / "entire-ec-38b74f08e3-2_session-warning-only.json"
    )
    alone = runner.invoke(app, ["summary", str(only_warning)]).stdout
    assert "fill *" not in alone and "fill +" not in alone
    both = runner.invoke(app, ["summary", str(only_warning), str(SMALL)]).stdout
    assert "does not state it): claude-code 200,000 tokens; --window sets it" in both
    assert "gemini-cli" not in both.split("fill *:")[1].splitlines()[0]


def test_calls_option_gives_the_series_and_compactions() -> None:
    (row,) = summary_json(SMALL, args=("--calls",))
    assert [c["prompt_tokens"] for c in row["per_call"]] == [
        15_003,
        18_007,
        18_209,
        11_805,
        12_111,
        11_913,
    ]
    assert row["per_call"][1]["largest_addition_tool"] == "Read"
    assert row["per_call"][1]["new_tokens"] == 18_007 - 15_003
    assert row["compaction_events"] == [
        {
            "kind": "compaction",
            "trigger": "manual",
            "pre_tokens": 18_300,
            "post_tokens": 2_100,
            "post_tokens_source": "harness",
            "after_call": 3,
        },
        {
            "kind": "microcompaction",
            "trigger": "auto",
            "pre_tokens": 12_131,
            "post_tokens": 11_906,
            "post_tokens_source": "harness",
            "after_call": 5,
        },
    ]
    text = runner.invoke(app, ["summary", "--calls", str(SMALL)]).stdout
    assert "compaction after call 3: compaction, trigger manual, 18,300 → 2,100 tokens" in text


def peer_numbers(path: Path) -> dict[str, Any]:
    """The peer's definitions (seed 001), written independently of our adapter."""
    calls: dict[str, dict[str, int]] = {}
    tool_calls = failed = result_chars = 0
    for record in lines(path):
        if record.get("parent_tool_use_id"):
            continue
        message = record.get("message") or {}
        if record.get("type") == "assistant":
            usage = message.get("usage") or {}
            merged = calls.setdefault(message["id"], {})
            for key in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
            ):
                merged[key] = max(merged.get(key, 0), usage.get(key) or 0)
            tool_calls += sum(
                1 for b in message.get("content") or [] if b.get("type") == "tool_use"
            )
        elif record.get("type") == "user" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result":
                    failed += bool(block.get("is_error"))
                    content = block.get("content")
                    result_chars += (
                        len(content)
                        if isinstance(content, str)
                        else sum(
                            len(b.get("text", "")) for b in content or [] if b.get("type") == "text"
                        )
                    )
    prompts = [
        u["input_tokens"] + u["cache_creation_input_tokens"] + u["cache_read_input_tokens"]
        for u in calls.values()
        if any(u.values())
    ]
    return {
        "calls": len(prompts),
        "first_prompt_tokens": prompts[0],
        "peak_prompt_tokens": max(prompts),
        "final_prompt_tokens": prompts[-1],
        "growth_tokens": max(prompts) - prompts[0],
        "tool_calls": tool_calls,
        "failed_tool_calls": failed,
        "tool_result_chars": result_chars,
    }


def test_stream_json_numbers_match_the_peer_definitions() -> None:
    (row,) = summary_json(STREAM_GHAW)
    assert {k: row[k] for k in peer_numbers(STREAM_GHAW)} == peer_numbers(STREAM_GHAW)


@pytest.mark.parametrize(
    "path", [ENTIRE_51, DATA / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"]
)
def test_transcript_numbers_match_an_independent_count(path: Path) -> None:
    (row,) = summary_json(path)
    assert {k: row[k] for k in peer_numbers(path)} == peer_numbers(path)


def test_codex_numbers_match_an_independent_count() -> None:
    (row,) = summary_json(CODEX_CLI)
    prompts = [p for p, _ in independent_usage(CODEX_CLI)]
    assert (row["calls"], row["first_prompt_tokens"], row["peak_prompt_tokens"]) == (
        len(prompts),
        prompts[0],
        max(prompts),
    )
    assert row["window_tokens"] == 258_400
    assert row["peak_fill"] == round(max(prompts) / 258_400, 4)


def test_composition_bar_is_fixed_width_and_proportional() -> None:
    assert composition_bar({"results": 75, "prompts": 25}) == "XXXXXXXXXPPP"
    assert len(composition_bar({"results": 1, "prompts": 1, "system": 1})) == 12
    assert composition_bar({}) == "(none)"


def test_composition_bar_keeps_each_category_together_in_rank_order() -> None:
    """Each share rounded on its own left a cell over, given to the largest category at the
    bar's end: "AAAAAAXXX??A" (the corpus's planetfall session)."""
    # 45% / 28% / 27% of 12 cells: 5.4, 3.4, 3.2 → 6, 3, 3 by the largest remainders
    assert composition_bar({"assistant": 135, "results": 85, "unattributed": 80}) == (
        "AAAAAAXXX???"
    )
    for shares in ({"results": 34, "assistant": 33, "prompts": 33}, {"results": 9, "system": 1}):
        bar = composition_bar(shares)
        assert len(bar) == 12
        runs = [
            letter for index, letter in enumerate(bar) if index == 0 or bar[index - 1] != letter
        ]
        assert len(runs) == len(set(runs)), bar  # one run per category, in rank order


def test_harness_started_children_are_not_tool_calls() -> None:
    # GIVEN the real Muse 1.4.2 session: one model call, no tool call, four reminder
    # children the harness started on its own (they are on the timeline, not calls)
    muse = DATA.parent / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"
    (row,) = summary_json(muse)
    assert (row["calls"], row["tool_calls"], row["repeated_tool_calls"]) == (1, 0, 0)


def test_per_call_rows_are_numbered_from_one_in_json_and_text() -> None:
    (row,) = summary_json(SMALL, args=("--calls",))
    calls = row["per_call"]
    assert [c["call"] for c in calls] == [1, 2, 3, 4, 5, 6]
    assert set(calls[0]) == {
        "call",
        "response_id",
        "prompt_tokens",
        "new_tokens",
        "output_tokens",
        "largest_addition_tokens",
        "largest_addition_tool",
        "largest_addition_label",
    }
    assert calls[0]["response_id"] == "msg_A"
    # The tool is a tool's name, or null: an item no tool added says only its label.
    assert (calls[1]["largest_addition_tool"], calls[1]["largest_addition_label"]) == (
        "Read",
        "Tool result",
    )
    untooled = [c for c in calls if c["largest_addition_tokens"] and not c["largest_addition_tool"]]
    assert untooled and all(c["largest_addition_label"] for c in untooled), calls
    text = runner.invoke(app, ["summary", "--calls", str(SMALL)]).stdout.splitlines()
    at = text.index("| call | prompt | new | output | largest addition |")
    assert text[at - 1] == f"{row['session']}: per call"
    assert text[at + 1] == "|---:|---:|---:|---:|---|"
    second = calls[1]
    assert text[at + 3] == (
        f"| 2 | {second['prompt_tokens']:,} | {second['new_tokens']:,} | "
        f"{second['output_tokens']:,} | +{second['largest_addition_tokens']:,} Read |"
    )


def test_largest_tool_results_come_largest_first() -> None:
    (row, *_) = summary_json(ENTIRE_51)
    ranked = row["largest_tool_results"]
    assert [r["tool"] for r in ranked] == ["Task", "Bash", "Read", "Edit", "TodoWrite"]
    assert [r["chars"] for r in ranked] == sorted((r["chars"] for r in ranked), reverse=True)
    assert ranked[0] == {"tool": "Task", "calls": 6, "chars": 32_498, "max_chars": 6_595}


def test_the_end_composition_is_the_last_request_not_a_later_compaction(tmp_path: Path) -> None:
    # GIVEN SMALL cut right after its compaction boundary: the last snapshot is the
    # compaction's (2,100 tokens), after the last request's (17,474)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(json.dumps(record) + "\n" for record in lines(SMALL)[:12]))
    (row,) = summary_json(cut)
    assert sum(row["end_categories"].values()) == 17_474
    assert row["end_categories"]["unattributed"] == 14_995


def test_a_session_without_snapshots_says_not_recorded_and_no_clock_note() -> None:
    from agent_profiler.model import Harness, Session
    from agent_profiler.summary import summarise
    from agent_profiler.summary_text import render_table

    table = render_table([summarise(Session(Harness.CLAUDE_CODE, "s-1", 0, 1, ("j.jsonl",)))])
    assert "(not recorded)" in table.splitlines()[2]
    assert "synthetic clock" not in table
    synthetic = runner.invoke(app, ["summary", str(STREAM_INIT_ONLY)]).stdout
    assert synthetic.splitlines()[-1].endswith(
        ": synthetic clock (the journal has no times; laid out from its durations, or 1 ms "
        "a record, ending at the file's modification time)"
    )


# Claude Code journals state no window: summary used to print "-" for the fill while the
# trace and the report drew the assumed 200,000. One source now (views.fill_window).
ASSUMED_CASES = [
    SMALL,
    CORPUS
    / "claude-code"
    / "transcripts"
    / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl",
]


@pytest.mark.parametrize("journal", ASSUMED_CASES, ids=["handmade", "corpus"])
def test_an_assumed_window_gives_the_fill_the_trace_draws_labelled_assumed(
    journal: Path, export_trace: Any
) -> None:
    if not journal.is_file():
        pytest.skip(SHARED_REASON)
    (row,) = summary_json(journal)
    exported = export_trace(journal)
    (capture,) = [c.uuid for c in exported.view.captures()]
    profile = exported.view.profile_of(capture)
    assert profile is not None
    # THEN the summary's window is the trace's, and both say it is assumed
    assert row["window_tokens"] == profile.args["context_window_tokens"] == 200_000
    assert row["window_source"] == "assumed"
    assert str(profile.args["context_window_source"]).startswith("assumed")
    # AND the fill is the trace's peak Context fill (a percentage, rounded up there)
    peak_fill = max(v for _, v in exported.view.counter_samples(capture, "Context fill"))
    assert row["peak_fill"] == round(row["peak_prompt_tokens"] / 200_000, 4)
    assert peak_fill == -(-row["peak_prompt_tokens"] * 100 // 200_000)
    # AND the text table marks that fill and says what the mark means
    table = runner.invoke(app, ["summary", str(journal)]).stdout
    assert re.search(rf"\| +{100 * row['peak_fill']:.0f}%\* \|", table)
    assert (
        "fill *: against an assumed window (a default; the journal does not state it): "
        "claude-code 200,000 tokens" in table
    )


def test_a_window_from_the_journal_is_not_marked() -> None:
    (row,) = summary_json(CODEX_CLI)
    assert row["window_source"] == "journal"
    table = runner.invoke(app, ["summary", str(CODEX_CLI)]).stdout
    assert "fill *" not in table and "fill +" not in table
    assert re.search(rf"\| +{100 * row['peak_fill']:.0f}% \|", table)


def test_the_source_of_a_journal_named_from_above_the_home_hides_the_user(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Run from a parent of the home folder (`cd /home; summary alice/.claude/projects/…`),
    `source` was the path as given, relative, with the user's name in it. It is shown as
    any path under a home: `~/…`, the project folder's name hidden."""
    from agent_profiler.model import Harness, Session
    from agent_profiler.summary import summarise

    given = "alice/.claude/projects/-home-alice-x/3b5a.jsonl"
    session = Session(Harness.CLAUDE_CODE, "s", 0, 1, (given,))
    monkeypatch.chdir("/home")
    assert summarise(session).source == "~/.claude/projects/…/3b5a.jsonl"
    # Within the folder run from, it stays relative to it (as before).
    monkeypatch.chdir(tmp_path)
    session = Session(Harness.CLAUDE_CODE, "s", 0, 1, ("logs/r.jsonl",))
    assert summarise(session).source == "logs/r.jsonl"


def test_with_cost_the_table_has_each_sessions_bill_and_says_what_it_is() -> None:
    """`summary --cost` printed a receipt per session below the table, and the table said
    nothing of it: comparing sessions' costs meant reading every receipt. The table now
    has a `cost` column (the billed total, `*` when the receipt is incomplete), explained
    under it; without --cost it has none."""
    codex = TESTS / "data" / "journals" / "codex"
    result = CliRunner().invoke(app, ["summary", "--cost", str(codex)])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    assert header[header.index("est. error") + 1] == "cost"
    data = CliRunner().invoke(app, ["summary", "--cost", "--json", str(codex)])
    receipts = {row["session"]: row["cost"] for row in json.loads(data.stdout)}
    for line in lines[2 : 2 + len(receipts)]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        receipt = receipts[cells[0]]
        mark = "" if receipt["complete"] else "*"
        assert cells[header.index("cost")] == f"${receipt['billed']['total_usd']:,.2f}{mark}"
    assert any(not r["complete"] for r in receipts.values())  # a `*` is drawn and said
    assert "*: its receipt is incomplete" in result.stdout
    plain = CliRunner().invoke(app, ["summary", str(codex)]).stdout
    assert "| cost" not in plain.splitlines()[0] and "cost: as billed" not in plain


def test_a_harness_with_two_assumed_windows_says_which_model_each_is() -> None:
    """`fill *: … claude-code 200,000, claude-code 1,000,000`: which session had which was
    not said. With two windows of one harness, each names its models."""
    handmade = TESTS / "data" / "journals" / "claude-code"
    hidden = handmade / "handmade" / "hidden.jsonl"  # claude-opus-4-8: 1,000,000 assumed
    old = handmade / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"  # opus 4.5
    text = CliRunner().invoke(app, ["summary", str(hidden), str(old)]).stdout
    (note,) = [line for line in text.splitlines() if line.startswith("fill *:")]
    assert "claude-code 200,000 (claude-opus-4-5-20251101)" in note
    assert "claude-code 1,000,000 (claude-opus-4-8)" in note
    one = CliRunner().invoke(app, ["summary", str(old)]).stdout
    (single,) = [line for line in one.splitlines() if line.startswith("fill *:")]
    assert "claude-code 200,000 tokens" in single  # one window: no model needed


def test_after_call_is_counted_in_one_pass_over_the_responses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from dataclasses import replace

    from agent_profiler import summary as summary_module
    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load

    # GIVEN a real session with two compactions, and the same with its compactions repeated
    (session,) = load([SMALL], Diagnostics()).sessions
    assert len(session.compactions) == 2
    passes: list[int] = []

    class Counted(tuple):  # type: ignore[type-arg]
        def __iter__(self) -> Any:
            passes.append(1)
            return super().__iter__()

    def count(compactions: int) -> tuple[int, list[Any]]:
        passes.clear()
        many = replace(
            session,
            responses=Counted(session.responses),
            compactions=session.compactions * compactions,
        )
        monkeypatch.setattr(
            summary_module, "compactions_after", lambda s: [None] * len(s.compactions)
        )
        row = summary_module.summarise(many)
        return len(passes), [e["after_call"] for e in row.compaction_events]

    # WHEN summarised THEN the passes over the responses do not grow with the compactions,
    # and each compaction's count is the same
    few, counts = count(1)
    more, repeated = count(50)
    assert counts == [3, 5]
    assert repeated == counts * 50
    assert more == few
