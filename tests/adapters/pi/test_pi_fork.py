"""A Pi fork begins with a copy of its source's history (docs/traces.md, Pi forks): Pi copies
the entries as they were, their ids and times included, so they are all dated before the
fork's header. They are the context the fork starts with, not requests it made: no response,
call, prompt, compaction or marker of the fork, no usage or cost; its first own request
starts from that context (a baseline). On the corpus fork (samples.PI_FORK: 1,001 copied
entries, then one thinking-level change of its own) and on hand-made v1 and v3 forks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_pi import Journal, read, records, trace_of
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.model import INHERITED_ENTRIES, INHERITED_REQUESTS, AnchorKind, Category
from agent_profiler.report.data import estimation_words
from agent_profiler.summary import summarise
from agent_profiler.views import inherited_history
from datasets import collected
from samples import PI_FORK, pi_fork_source

runner = CliRunner()
FORK_ID = "ffae836b-9420-4060-ac13-7745215f90ff"


def iso(text: str) -> int:
    from test_pi import iso_ns

    return iso_ns(text.replace("Z", "+00:00"))


# --------------------------------------------------------------------------- the corpus fork


def test_the_corpus_fork_made_no_request_of_its_own() -> None:
    session, _, diagnostics = read(PI_FORK)
    lines = records(PI_FORK)
    header_ns = iso(lines[0]["timestamp"])
    copied = [r for r in lines[1:] if iso(r["timestamp"]) < header_ns]
    assert len(copied) == 1_001 and lines[1:1002] == copied  # the first 1,001 entries
    assistants = [r for r in copied if r.get("message", {}).get("role") == "assistant"]
    assert len(assistants) == 484
    # none of them is the fork's: no request, call, prompt, compaction, usage or cost
    assert session.responses == () and session.failed_requests == ()
    assert session.tool_calls == () and session.prompts == () and session.compactions == ()
    facts = dict(session.facts)
    assert (facts[INHERITED_ENTRIES], facts[INHERITED_REQUESTS]) == (1_001, 484)
    assert inherited_history(session) == (1_001, 484)
    assert "requests_without_usage" not in facts and "model_changes" not in facts
    # its own history: one thinking-level change, 33 minutes after the fork
    own = lines[1002]
    assert [(m.kind, m.time_ns) for m in session.markers] == [
        ("thinking_level_change", iso(own["timestamp"]))
    ]
    assert (session.start_ns, session.end_ns) == (header_ns, iso(own["timestamp"]))
    # the copied history is its context: the compacted conversation the fork starts with
    (end,) = session.snapshots
    assert end.anchor is AnchorKind.SESSION
    categories = dict(end.categories)
    assert categories[Category.SUMMARIES] > 0 and categories[Category.RESULTS] > 50_000
    assert diagnostics.warning_total == 0
    assert "pi:result-without-call" not in diagnostics.notes


def test_the_corpus_fork_and_its_source_count_each_request_once(tmp_path: Path) -> None:
    source = pi_fork_source()
    alone = _fleet(collected(tmp_path / "source", source) / "ds")
    both = _fleet(collected(tmp_path / "both", source, PI_FORK) / "ds")
    fork = _fleet(collected(tmp_path / "fork", PI_FORK) / "ds")
    assert alone["requests"]["count"] == 471 and fork["requests"]["count"] == 0
    assert both["sessions"]["count"] == 2
    assert both["requests"]["count"] == alone["requests"]["count"] + fork["requests"]["count"]
    assert both["cost"]["billed"]["total_usd"] == pytest.approx(
        alone["cost"]["billed"]["total_usd"]
    )
    assert fork["cost"]["billed"]["total_usd"] == 0


def test_summary_and_report_say_the_fork_starts_with_a_copy(tmp_path: Path) -> None:
    result = runner.invoke(app, ["summary", str(PI_FORK)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    (row,) = [line for line in text.splitlines() if line.startswith("| ffae")]
    assert [cell.strip() for cell in row.split("|")][4] == "0"  # calls
    assert (
        f"{FORK_ID}: a fork, it starts with a copy of 1,001 entries (484 requests) of the "
        "session it was forked from: its starting context, not its calls (that session "
        "counts them)"
    ) in text.splitlines()
    result = runner.invoke(app, ["summary", "--json", str(PI_FORK)])
    (data,) = json.loads(result.stdout)
    assert (data["calls"], data["inherited_entries"], data["inherited_requests"]) == (0, 1_001, 484)
    result = runner.invoke(app, ["summary", "--json", str(pi_fork_source())])
    (data,) = json.loads(result.stdout)
    assert data["calls"] == 471 and "inherited_requests" not in data
    session, _, _ = read(PI_FORK)
    sentence = (
        "A fork: it starts with a copy of 1,001 entries (484 requests) of the session it was "
        "forked from, its starting context, not its calls (that session counts them)."
    )
    assert sentence in estimation_words(session)
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(PI_FORK), "-o", str(page)]).exit_code == 0
    assert sentence in page.read_text()
    assert "badlogic" not in page.read_text() and "badlogic" not in text  # a user name


def test_the_corpus_fork_trace_says_it_on_its_profile(export_trace: Any) -> None:
    view = export_trace(PI_FORK, require_addition=False).view
    (profile,) = [s for s in view.slices if s.name == "profile (1)"]
    assert (profile.args[INHERITED_ENTRIES], profile.args[INHERITED_REQUESTS]) == (1_001, 484)
    assert not view.slices_of_kind("assistant-message") and not view.slices_of_kind("compaction")


# --------------------------------------------------------------------------- hand-made forks


def _source() -> tuple[Journal, str]:
    """A v3 session: a prompt, a call that reads a file, its answer; returns its leaf."""
    j = Journal()
    u1 = j.user(None, "read a")
    a1 = j.assistant(u1, "", 100, calls=(("c1", "read"),))
    r1 = j.result(a1, "c1", "x" * 400)
    a2 = j.assistant(r1, "done", 250)
    return j, a2


def _fork(source: Journal, leaf: str, version: int = 3) -> Journal:
    """Pi's fork of `source` at `leaf` (`createBranchedSession`; v1: `…FromEntries`): a new
    header, later than every entry, naming the source; the entries copied as they were."""
    fork = copy.deepcopy(source)
    header = fork.lines[0]
    header.update(id="99999999-2222-4333-8444-555555555555", timestamp=fork.time())
    header["parentSession" if version >= 2 else "branchedFrom"] = (
        "/home/alice/.pi/agent/sessions/--work--/2026-01-01T10-00-01-000Z_1111.jsonl"
    )
    ids = [line.get("id") for line in fork.lines]
    assert version < 2 or leaf == ids[-1]
    return fork


def test_a_v3_fork_counts_only_its_own_requests(tmp_path: Path) -> None:
    source, leaf = _source()
    source_path = source.write(tmp_path / "source.jsonl")
    fork = _fork(source, leaf)
    u2 = fork.user(leaf, "now b")
    a3 = fork.assistant(u2, "", 400, calls=(("c2", "read"),))
    fork.result(a3, "c2", "y" * 40)
    fork_path = fork.write(tmp_path / "fork.jsonl")
    session, _, diagnostics = read(fork_path)
    assert [r.id for r in session.responses] == [a3]
    assert [p.id for p in session.prompts] == [u2] and session.responses[0].prompt_id == u2
    assert [c.call_id for c in session.tool_calls] == ["c2"]
    assert session.start_ns == iso(fork.lines[0]["timestamp"])
    assert dict(session.facts)[INHERITED_ENTRIES] == 4
    assert dict(session.facts)[INHERITED_REQUESTS] == 2
    assert dict(session.facts)["forked_from"] == "2026-01-01T10-00-01-000Z_1111.jsonl"
    # its first request starts from the copied context: a baseline holding it all
    (first,) = session.snapshots
    assert first.baseline and first.anchor_id == a3
    held = {c.id.split(":")[0] for c in first.changes if c.category is not Category.UNATTRIBUTED}
    assert held == {line["id"] for line in fork.lines[1:-2]}  # the copy and the new prompt
    assert dict(first.categories)[Category.RESULTS] == 100  # the copied result, 400 chars
    assert diagnostics.warning_total == 0 and not diagnostics.notes
    # the source and the fork together: each request once
    own, _, _ = read(source_path)
    assert len(own.responses) == 2
    trace_of(own, session)


def test_a_v1_fork_counts_only_its_own_requests(tmp_path: Path) -> None:
    source, leaf = _source_v1()
    fork = _fork(source, leaf, version=1)
    fork.user(None, "again")
    fork.assistant(None, "ok", 500)
    session, _, _ = read(fork.write(tmp_path / "fork.jsonl"))
    assert [r.usage.prompt_tokens for r in session.responses] == [500]
    assert inherited_history(session) == (4, 2)
    summary = summarise(session)
    assert summary.calls == 1 and summary.inherited_history == (4, 2)


def _source_v1() -> tuple[Journal, str]:
    j = Journal(version=1)
    j.user(None, "read a")
    j.assistant(None, "", 100, calls=(("c1", "read"),))
    j.result(None, "c1", "x" * 400)
    j.assistant(None, "done", 250)
    return j, ""


def test_a_session_with_a_parent_but_no_copy_is_all_its_own(tmp_path: Path) -> None:
    """`newSession({parentSession})` (a new session that names the one it came from), and a
    fork whose header time is unreadable or one the clock does not believe (2099): nothing is
    taken as copied."""
    j = Journal()
    j.lines[0]["parentSession"] = "/x/2026-01-01_abc.jsonl"
    a1 = j.assistant(j.user(None, "hi"), "hello", 100)
    session, _, _ = read(j.write(tmp_path / "new.jsonl"))
    assert [r.id for r in session.responses] == [a1] and inherited_history(session) is None
    source, leaf = _source()
    fork = _fork(source, leaf)
    for damaged in ("not a time", "2099-01-01T00:00:00.000Z"):  # none, and one not believed
        fork.lines[0]["timestamp"] = damaged
        session, _, diagnostics = read(fork.write(tmp_path / "undated.jsonl"))
        assert len(session.responses) == 2 and inherited_history(session) is None
        assert diagnostics.warning_total == 1  # the clock says so


def test_the_copy_ends_at_the_first_entry_dated_after_the_fork(tmp_path: Path) -> None:
    """Only the entries before the first own one are copied: a later entry dated before the
    fork (a clock set back) is the fork's own."""
    source, leaf = _source()
    fork = _fork(source, leaf)
    u2 = fork.user(leaf, "now b")
    a3 = fork.assistant(u2, "", 400)
    fork.lines[-1]["timestamp"] = fork.lines[1]["timestamp"]  # set back before the header
    session, _, _ = read(fork.write(tmp_path / "fork.jsonl"))
    assert [r.id for r in session.responses] == [a3]
    assert inherited_history(session) == (4, 2)


def test_an_entry_dated_at_the_forks_own_time_is_the_forks(tmp_path: Path) -> None:
    """The copy is dated before the fork's header; an entry written in the header's very
    millisecond (the user's first prompt, typed at once) is the fork's own, not copied."""
    source, leaf = _source()
    fork = _fork(source, leaf)
    u2 = fork.user(leaf, "now b")
    fork.lines[-1]["timestamp"] = fork.lines[0]["timestamp"]
    a3 = fork.assistant(u2, "", 400)
    session, _, _ = read(fork.write(tmp_path / "fork.jsonl"))
    assert [p.id for p in session.prompts] == [u2] and session.responses[0].id == a3
    assert inherited_history(session) == (4, 2)


def test_a_compaction_right_after_the_copy_is_the_forks_and_starts_at_the_fork(
    tmp_path: Path,
) -> None:
    """Forked, then compacted at once (`/compact` before any prompt): the compaction is the
    fork's own, timed from the entry above it, the copy's last, which is there from the
    fork's start; it removes the copied history."""
    source, leaf = _source()
    fork = _fork(source, leaf)
    kept = fork.lines[1]["id"]
    c1 = fork.entry("compaction", leaf, summary="Read a.", firstKeptEntryId=kept, tokensBefore=350)
    u2 = fork.user(c1, "now b")
    fork.assistant(u2, "ok", 200)
    session, _, _ = read(fork.write(tmp_path / "fork.jsonl"))
    (compaction,) = session.compactions
    assert compaction.id == c1 and compaction.pre_tokens == 350
    assert compaction.start_ns == iso(fork.lines[0]["timestamp"])
    assert compaction.end_ns == iso(fork.lines[-3]["timestamp"])
    assert inherited_history(session) == (4, 2) and len(session.responses) == 1


def _fleet(dataset: Path) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(dataset), "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data
