"""Time that lies (issue 15, point 4).

One record dated far outside its session (the Unix epoch, decades ahead, years back) must not
stretch the session: it is warned about with `path:line` and placed from its neighbours, in
every harness. Journals without any time (Claude Code stream-json) get a synthetic timeline
from their own durations, and the trace, summary and report say the clock is synthetic."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import GEMINI_DOCUMENT, GEMINI_JSONL, OPENCODE_EXPLORE

pytestmark = pytest.mark.slow  # many exports of far-dated journals: `make check` leaves it out

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
JOURNALS = {
    "claude-code": DATA / "claude-code" / "handmade" / "small.jsonl",
    "codex": next((DATA / "codex").glob("rollout-2026-02-23T20-34-25-*.jsonl")),
    "pi": DATA / "pi" / "pi-mono_large-session_v1.jsonl",
    "muse": DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl",
}
LIES = {
    "the Unix epoch": ("1970-01-01T00:00:00.000Z", 0),
    "decades ahead": ("2099-06-01T00:00:00.000Z", 4_084_473_600_000_000),
    "years back": ("2019-01-01T00:00:00.000Z", 1_546_300_800_000_000),
}
STREAM_JSON = DATA / "claude-code" / "gh-aw_sample_claude_log_new_format.txt"
runner = CliRunner()


def lie_in_the_middle(source: Path, harness: str, lie: str, tmp: Path) -> tuple[Path, int]:
    """A copy whose middle record carries the lie; returns the copy and that line number."""
    lines = source.read_bytes().split(b"\n")
    index = len(lines) // 2
    while b"timestamp" not in lines[index] and b"recorded_at" not in lines[index]:
        index += 1
    iso, micros = LIES[lie]
    if harness == "muse":  # Muse dates envelopes by `recorded_at`, in microseconds
        lines[index] = re.sub(rb'"recorded_at":\d+', b'"recorded_at":%d' % micros, lines[index])
    else:
        lines[index] = re.sub(
            rb'"timestamp":"[^"]+"', f'"timestamp":"{iso}"'.encode(), lines[index], count=1
        )
    target = tmp / source.name
    target.write_bytes(b"\n".join(lines))
    return target, index + 1


def session_span_ns(export_trace, path: Path) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    exported = export_trace(path, require_addition=False)
    profiles = [s for s in exported.view.slices if s.name == "profile (1)"]
    return max(s.dur for s in profiles), exported.stderr


@pytest.mark.parametrize("lie", LIES)
@pytest.mark.parametrize("harness", JOURNALS)
def test_one_record_dated_far_away_does_not_stretch_its_session(
    harness: str, lie: str, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real journal whose middle record is dated far from its neighbours
    honest, _ = session_span_ns(export_trace, JOURNALS[harness])
    damaged, line = lie_in_the_middle(JOURNALS[harness], harness, lie, tmp_path)
    # WHEN it is exported
    span, stderr = session_span_ns(export_trace, damaged)
    # THEN the session lasts what it really lasted (give or take the placed record) ...
    assert span <= honest + 1_000_000_000, (span, honest)
    # ... and one warning names the record by path:line
    assert "time-outlier: 1" in stderr, stderr
    assert f"{damaged.name}:{line}: timestamp" in stderr, stderr  # as given, not absolute


@pytest.mark.parametrize("harness", ["claude-code", "codex", "pi"])
def test_a_lie_on_the_first_dated_record_does_not_become_the_start(
    harness: str, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real journal whose first dated record says 2099 (the head's other records agree
    # with each other)
    honest, _ = session_span_ns(export_trace, JOURNALS[harness])
    lines = JOURNALS[harness].read_bytes().split(b"\n")
    index = next(i for i, line in enumerate(lines) if b'"timestamp":"20' in line)
    lines[index] = re.sub(
        rb'"timestamp":"[^"]+"', b'"timestamp":"2099-06-01T00:00:00.000Z"', lines[index], count=1
    )
    damaged = tmp_path / JOURNALS[harness].name
    damaged.write_bytes(b"\n".join(lines))
    # WHEN exported
    span, stderr = session_span_ns(export_trace, damaged)
    # THEN the session is as long as it was, and line 1's lie is named
    assert span <= honest + 1_000_000_000, (span, honest)
    assert f"{damaged.name}:{index + 1}: timestamp 2099-06-01" in stderr, stderr


def test_a_real_jump_is_followed(tmp_path: Path, export_trace) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a session resumed two years later: every record after the middle moves together
    lines = JOURNALS["claude-code"].read_bytes().split(b"\n")
    half = len(lines) // 2
    moved = [line.replace(b'"timestamp":"2026-', b'"timestamp":"2028-') for line in lines[half:]]
    path = tmp_path / "resumed.jsonl"
    path.write_bytes(b"\n".join(lines[:half] + moved))
    # WHEN exported
    exported = export_trace(path, require_addition=False)
    # THEN only the first record at the new time is doubted; the clock follows the rest
    assert "time-outlier: 1" in exported.stderr
    profile = next(s for s in exported.view.slices if s.name == "profile (1)")
    assert profile.dur > 365 * 86_400 * 10**9


def test_a_journal_without_times_gets_a_synthetic_clock_from_its_durations(
    tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN real stream-json output without any timestamp, whose result says the run took
    # `duration_ms`
    duration_ms = next(
        json.loads(line)["duration_ms"]
        for line in STREAM_JSON.read_text().splitlines()
        if line.startswith("{") and '"type":"result"' in line.replace(" ", "")
    )
    # WHEN it is exported, summarised and reported
    exported = export_trace(STREAM_JSON, require_addition=False)
    profile = next(s for s in exported.view.slices if s.name == "profile (1)")
    summary = runner.invoke(app, ["summary", str(STREAM_JSON), "--json"])
    page = tmp_path / "r.html"
    report = runner.invoke(app, ["report", str(STREAM_JSON), "-o", str(page)])
    # THEN the session lasts what the journal says, not 1 ms per frame ...
    assert abs(profile.dur - duration_ms * 1_000_000) <= 5_000_000, profile.dur
    # ... and every output says the clock is synthetic
    assert profile.args["clock"] == "synthetic"
    assert "duration_ms" in profile.args["timing"]
    assert json.loads(summary.stdout)[0]["clock"] == "synthetic"
    assert report.exit_code == 0 and "synthetic clock" in page.read_text()


def test_a_journal_with_times_says_its_clock_is_the_journal(tmp_path: Path) -> None:
    summary = runner.invoke(app, ["summary", str(JOURNALS["codex"]), "--json"])
    assert json.loads(summary.stdout)[0]["clock"] == "journal"


# Gemini CLI and OpenCode: a JSONL log is named by path:line like the others; a JSON document
# (a Gemini CLI session, an OpenCode export) has no lines, so the warning names the record by
# its place in the document's `messages` list: `path: messages[6]: timestamp …`.


def lie_in_a_document(source: Path, lie: str, tmp: Path) -> tuple[Path, str]:
    """A copy whose middle message carries the lie; returns the copy and how the warning
    must name that message."""
    document = json.loads(source.read_text())
    messages = document["messages"]
    index = len(messages) // 2
    iso, micros = LIES[lie]
    if "info" in document:  # an OpenCode export: epoch milliseconds in info.time.created
        messages[index]["info"]["time"]["created"] = micros // 1000
        name = f"messages[{index}] ({messages[index]['info']['id']})"
    else:
        messages[index]["timestamp"] = iso
        name = f"messages[{index}]"
    target = tmp / source.name
    target.write_text(json.dumps(document, indent=2))
    return target, name


@pytest.mark.parametrize("lie", LIES)
@pytest.mark.parametrize(
    "source", [GEMINI_DOCUMENT, OPENCODE_EXPLORE], ids=["gemini-cli", "opencode"]
)
def test_a_document_message_dated_far_away_does_not_stretch_its_session(
    source: Path, lie: str, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real session document whose middle message is dated far from its neighbours
    honest, _ = session_span_ns(export_trace, source)
    damaged, name = lie_in_a_document(source, lie, tmp_path)
    # WHEN it is exported
    span, stderr = session_span_ns(export_trace, damaged)
    # THEN the session lasts what it really lasted, and one warning names the message
    assert span <= honest + 1_000_000_000, (span, honest)
    assert "time-outlier: 1" in stderr, stderr
    assert f"{damaged.name}: {name}: timestamp" in stderr, stderr


@pytest.mark.parametrize("lie", LIES)
def test_a_gemini_log_line_dated_far_away_does_not_stretch_its_session(
    lie: str, tmp_path: Path, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a real ≥0.39 Gemini CLI log whose middle message line lies (by path:line)
    honest, _ = session_span_ns(export_trace, GEMINI_JSONL)
    damaged, line = lie_in_the_middle(GEMINI_JSONL, "gemini-cli", lie, tmp_path)
    span, stderr = session_span_ns(export_trace, damaged)
    assert span <= honest + 1_000_000_000, (span, honest)
    assert "time-outlier: 1" in stderr, stderr
    assert f"{damaged.name}:{line}: timestamp" in stderr, stderr  # as given, not absolute
