"""A compaction says its size after it (issue 29): the harness's own figure where it records
one, else the first reported request after the compaction, labelled with its source, in
the trace, the summary and the report. Real journals: Claude Code (spotter, no
`postTokens`) and Pi (two compactions); a harness figure made on the same session."""

from __future__ import annotations

import dataclasses
from typing import Any

from test_trace import capture_for

from agent_profiler.report import render_report
from agent_profiler.summary import summarise
from agent_profiler.views import (
    POST_FROM_HARNESS,
    POST_FROM_NEXT_REQUEST,
    compactions_after,
    context_size_series,
)
from rules_spy import sessions
from samples import DATA, pi_fork_source

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
SPOTTER_ID = "258c7280-ae70-4798-800f-63464d01a85d"
PI = pi_fork_source()  # the corpus fork compacted nothing itself: its source, as it holds it


def _first_request_after(session: Any, end: int) -> int:
    later = sorted((r for r in session.responses if r.start_ns >= end), key=lambda r: r.start_ns)
    return later[0].usage.prompt_tokens


def test_without_a_harness_figure_the_first_request_after_is_the_size_after() -> None:
    for path in (SPOTTER, PI):
        for session in sessions(path):
            for compaction, after in zip(
                session.compactions, compactions_after(session), strict=True
            ):
                assert compaction.post_tokens is None  # the journal has none
                assert after is not None and after.source == POST_FROM_NEXT_REQUEST
                assert after.tokens == _first_request_after(session, compaction.end_ns)
                assert after.tokens < (compaction.pre_tokens or 0)
                # the Context size counter drops at the compaction's end (or at the
                # request's start, when that is the compaction's end)
                assert (compaction.end_ns, after.tokens) in context_size_series(session)
                assert after.request_start is not None


def test_the_harness_figure_wins_and_says_so() -> None:
    (session, *_) = [s for s in sessions(SPOTTER) if s.compactions]
    (compaction,) = session.compactions
    own = dataclasses.replace(compaction, post_tokens=31_000)
    (after,) = compactions_after(dataclasses.replace(session, compactions=(own,)))
    assert after is not None and (after.tokens, after.source) == (31_000, POST_FROM_HARNESS)


def test_trace_summary_and_report_carry_it(export_trace: Any) -> None:
    (session, *_) = [s for s in sessions(SPOTTER) if s.compactions]
    expected = _first_request_after(session, session.compactions[0].end_ns)
    view = export_trace(SPOTTER).view
    main = capture_for(view, SPOTTER_ID)
    (slice_,) = [
        s for s in view.slices if s.kind == "compaction" and view.capture_of(s.track_uuid) == main
    ]
    assert slice_.args["post_tokens"] == expected
    assert slice_.args["post_tokens_source"] == "next-request"
    (event,) = summarise(session).compaction_events
    assert (event["post_tokens"], event["post_tokens_source"]) == (expected, "next-request")
    page = render_report([session])
    row = page[page.index('data-key="post"') :].split("</td>", 1)[0]
    assert f"{expected:,}" in row and "first request after" in row
    assert "After —" not in page
