"""The request counters' samples are worked out when a series is read (layout/counters.py
`session_counters`), and the time of the last sample, which moves the session's end, from
the model's maxima without them: it is the latest sample any counter makes, on real
Claude Code, Pi and Codex journals (compactions among them) and on hand-made edges of the
Context size series (a size known only before or only after a compaction, a compaction
after every request, windows that change). A one-pass export's end reads the counters'
names only (stream/end.py): it makes none of their samples, which the pass wrote."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from agent_profiler import stream
from agent_profiler.annotations import TraceFacts
from agent_profiler.layout import build_layout
from agent_profiler.layout import counters as counters_module
from agent_profiler.layout.counters import session_counters
from agent_profiler.model import AnchorKind, Compaction, Session
from agent_profiler.views import session_span, snapshots_in_time_order
from rules_spy import sessions
from samples import DATA, pi_fork_source
from shared_paths import TESTS

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
CODEX = TESTS / "data" / "journals" / "codex"
S = 1_000_000_000


def _journals() -> list[Path]:
    return [SPOTTER, pi_fork_source(), *sorted(CODEX.glob("*.jsonl*"))]


def _sessions() -> list[Session]:
    found = [s for path in _journals() for s in sessions(path) if s.responses]
    assert any(s.compactions for s in found) and any(s.window_tokens for s in found)
    return found


def _latest_made(session: Session) -> tuple[int, int]:
    """session_counters' last sample's time, and the latest time of every sample its
    counters make (a context category's repeat is dropped, but not its time: the last
    snapshot sampled once a category was)."""
    start = session_span(session)[0]
    responses = sorted(
        [*session.responses, *session.unmetered_responses],
        key=lambda r: (r.start_ns, r.end_ns, r.id),
    )
    counters, last = session_counters(session, start, responses, "an estimate")
    times = [start]
    for counter in counters:
        times += [time for time, _, _ in counter.made()]
    snapshots = snapshots_in_time_order(session)
    first = next((i for i, x in enumerate(snapshots) if x.categories), None)
    if first is not None:
        times += [x.time_ns for x in snapshots[first:]]
    return last, max(times)


def test_the_last_sample_time_is_the_latest_sample_made_on_real_journals() -> None:
    for session in _sessions():
        last, latest = _latest_made(session)
        assert last == latest, session.session_id


def _with(session: Session, **changes: Any) -> Session:
    (compaction, *_) = session.compactions
    return dataclasses.replace(session, compactions=(dataclasses.replace(compaction, **changes),))


def _compacted() -> Session:
    return next(s for s in _sessions() if s.compactions and s.window_tokens)


@pytest.mark.parametrize(
    "changes",
    [
        pytest.param({}, id="as-read"),
        pytest.param({"pre_tokens": None}, id="no-size-before"),
        pytest.param({"post_tokens": 31_000}, id="harness-size-after"),
        pytest.param({"pre_tokens": None, "post_tokens": None}, id="no-size"),
    ],
)
@pytest.mark.parametrize("after_every_request", [False, True])
def test_the_last_sample_time_is_the_latest_sample_made_at_a_compaction(
    changes: dict[str, Any], after_every_request: bool
) -> None:
    session = _compacted()
    if after_every_request:  # then its end is the last sample of Context size, if known
        last_end = max(r.end_ns for r in session.responses)
        changes = {**changes, "start_ns": last_end + S, "end_ns": last_end + 2 * S}
    changed = _with(session, **changes)
    last, latest = _latest_made(changed)
    assert last == latest
    compaction: Compaction = changed.compactions[0]
    if after_every_request and compaction.post_tokens is not None:
        assert last == compaction.end_ns
    elif after_every_request and compaction.pre_tokens is not None:
        assert last == compaction.start_ns


def test_the_last_sample_time_is_the_latest_sample_made_after_the_last_response() -> None:
    session = _compacted()
    last_end = max(r.end_ns for r in session.responses)
    late = dataclasses.replace(session.responses[-1], id="late")
    # a compaction's own request ending after every response: the usage's last sample
    request = dataclasses.replace(late, start_ns=last_end + S, end_ns=last_end + 3 * S)
    changed = _with(session, request=request)
    assert _latest_made(changed) == (last_end + 3 * S, last_end + 3 * S)
    # a request with no usage starting after every other: the window's last sample
    unmetered = dataclasses.replace(late, start_ns=last_end + 5 * S, end_ns=last_end + 6 * S)
    changed = dataclasses.replace(session, unmetered_responses=(unmetered,))
    assert changed.window_tokens
    assert _latest_made(changed) == (last_end + 5 * S, last_end + 5 * S)


def test_the_last_sample_time_is_the_latest_sample_made_when_windows_change() -> None:
    session = next(s for s in _sessions() if s.window_from_journal)
    window = session.window_tokens or 0
    # every other request's snapshot on another window (a model switch: Codex states the
    # window with each request)
    snapshots = tuple(
        dataclasses.replace(x, window_tokens=window // 2)
        if i % 2 and x.anchor is AnchorKind.RESPONSE
        else x
        for i, x in enumerate(session.snapshots)
    )
    changed = dataclasses.replace(session, snapshots=snapshots)
    last, latest = _latest_made(changed)
    assert last == latest
    counters, _ = session_counters(changed, 0, changed.responses, "an estimate")
    (fill,) = [c for c in counters if c.name == "Context fill"]
    (windows,) = [c for c in counters if c.name == "Context window"]
    assert {value for _, _, value in windows.made()} == {0, window, window // 2}
    assert len({value for _, _, value in fill.made()}) > 2


def test_a_pass_end_makes_no_request_counter_sample(
    export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the Context size series and the usage's order refused to anyone who asks
    def refused(*_: Any, **__: Any) -> Any:
        raise AssertionError("a request counter's samples were made")

    monkeypatch.setattr(counters_module, "iter_context_size", refused)
    monkeypatch.setattr(counters_module, "response_windows", refused)
    monkeypatch.setattr(counters_module, "_FINISHED_ORDER", refused)
    rollout = min(CODEX.glob("*.jsonl"), key=lambda p: p.stat().st_size)
    # THEN the one pass exports the rollout (its end read the counters' names only) …
    monkeypatch.setenv(stream.SWITCH, "1")
    trace = export_trace(rollout, require_addition=False)
    names = {track.name for track in trace.view.tracks.values()}
    assert {"Context size", "Context fill", "Input tokens", "Output tokens"} <= names
    (size,) = [t for t in trace.view.tracks.values() if t.name == "Context size"]
    (session,) = sessions(rollout)
    assert len(trace.view.counters[size.uuid]) >= len(session.responses) + 1
    # … where the layout of the model path, which makes the samples, cannot
    with pytest.raises(AssertionError, match="samples were made"):
        build_layout(sessions(rollout), TraceFacts())
