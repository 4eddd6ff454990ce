"""Claude Code's failed API calls (`system/api_error`: 529 Overloaded, retried up to ten
times) were skipped as notices: the 2.1.165 session's 19 retries were on no page and in no
summary. Each is an instant on the trace's Events track, counted on the profile and in the
summary, saying its status, the API's error type and the attempt, never the error's text."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.summary import summarise
from shared_paths import CORPUS, SHARED_REASON, TESTS

PLANETFALL = (
    CORPUS
    / "claude-code"
    / "transcripts"
    / "planetfall-68d6759acfe5-1_v2.1.165_api-errors_images.jsonl.gz"
)
SESSION = "0d5e7a7a-1111-4222-8333-444455556666"


def _record(**fields: Any) -> dict[str, Any]:
    base = {
        "type": "system",
        "subtype": "api_error",
        "level": "error",
        "sessionId": SESSION,
        "uuid": "u-err",
        "parentUuid": None,
        "timestamp": "2026-06-05T15:13:21.070Z",
    }
    return base | fields


def _prompt() -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": SESSION,
        "uuid": "u-1",
        "parentUuid": None,
        "timestamp": "2026-06-05T15:13:20.000Z",
        "message": {"role": "user", "content": "hello"},
    }


def _read(tmp_path: Path, *records: dict[str, Any]) -> Any:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (_prompt(), *records)))
    diagnostics = Diagnostics()
    (session,) = load([path], diagnostics).sessions
    return session, diagnostics


@pytest.mark.skipif(not PLANETFALL.is_file(), reason=SHARED_REASON)
def test_every_retried_api_error_of_the_journal_is_an_event() -> None:
    with gzip.open(PLANETFALL, "rt", encoding="utf-8") as lines:
        raw = [json.loads(line) for line in lines if '"api_error"' in line]
    raw = [r for r in raw if r.get("subtype") == "api_error"]
    (session,) = load([PLANETFALL], Diagnostics()).sessions
    markers = [m for m in session.markers if m.kind == "api_error"]
    assert len(markers) == len(raw) == 19
    assert [m.value for m in markers[:2]] == [
        f"529 overloaded_error, attempt {r['retryAttempt']} of {r['maxRetries']}" for r in raw[:2]
    ]
    facts = dict(session.facts)
    assert facts["api_errors"] == 19
    assert facts["api_errors_by_status"] == "529 overloaded_error: 19"
    assert summarise(session).api_errors == 19


def test_the_errors_text_is_never_said(tmp_path: Path) -> None:
    """The API's message may quote the request (a 400's "messages.3.content …"): only its
    status, the error type it names and the attempt are kept."""
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": "SECRET"}}
    error = {"message": "400 " + json.dumps(body), "status": 400, "formatted": "400 SECRET"}
    session, diagnostics = _read(tmp_path, _record(error=error, retryAttempt=2, maxRetries=10))
    (marker,) = session.markers
    assert marker.value == "400 invalid_request_error, attempt 2 of 10"
    assert "SECRET" not in repr(session)
    assert not diagnostics.unrecognised and "claude:system/api_error" not in diagnostics.skipped


@pytest.mark.parametrize(
    ("error", "said"),
    [
        ({}, "no status"),
        ({"status": "529"}, "no status"),  # not a number: not said as one
        ({"status": 529, "message": "529 not json"}, "529"),
        ({"status": 529, "message": '529 {"error": {"type": "a b"}}'}, "529"),  # no name
        ({"status": 529, "message": ["x"]}, "529"),
        ("a string", "no status"),
    ],
)
def test_an_error_of_another_shape_says_what_it_can(
    tmp_path: Path, error: object, said: str
) -> None:
    session, _ = _read(tmp_path, _record(error=error))
    (marker,) = session.markers
    assert marker.value == said  # no attempt either: retryAttempt and maxRetries absent
    assert dict(session.facts)["api_errors"] == 1


STREAM = TESTS / "data" / "journals" / "claude-code" / "gh-aw_sample_claude_log_new_format.txt"


def test_a_stream_json_runs_retried_api_calls_are_events_too(tmp_path: Path) -> None:
    """`claude -p --output-format stream-json` says a retried call as `system/api_retry`
    (`error_status`, `error`, `attempt`, `max_retries`): the same Events instant, counted on
    the profile and in the summary, as a transcript's `system/api_error`."""
    lines = STREAM.read_text(encoding="utf-8").splitlines()
    frames = [json.loads(line) for line in lines if line.startswith("{")]  # a log: JSON lines
    init = next(i for i, f in enumerate(frames) if f.get("subtype") == "init")
    retry = {"type": "system", "subtype": "api_retry", "session_id": frames[init]["session_id"]}
    retries = [
        retry | {"attempt": 1, "max_retries": 10, "error_status": 529, "error": "server_error"},
        retry | {"attempt": 2, "max_retries": 10, "error_status": 529, "error": "server_error"},
        retry | {"attempt": 1, "max_retries": 10, "error_status": None, "error": "not a kind!"},
    ]
    path = tmp_path / "run.jsonl"
    lines = [*frames[: init + 1], *retries, *frames[init + 1 :]]
    path.write_text("".join(json.dumps(f) + "\n" for f in lines), encoding="utf-8")
    diagnostics = Diagnostics()
    (session,) = load([path], diagnostics).sessions
    assert [m.value for m in session.markers if m.kind == "api_error"] == [
        "529 server_error, attempt 1 of 10",
        "529 server_error, attempt 2 of 10",
        "no status, attempt 1 of 10",
    ]
    facts = dict(session.facts)
    assert facts["api_errors"] == 3
    assert facts["api_errors_by_status"] == "529 server_error: 2, no status: 1"
    assert summarise(session).api_errors == 3
    assert "claude-stream:system/api_retry" not in diagnostics.unrecognised
    # Without them, the run says none.
    (plain,) = load([STREAM], Diagnostics()).sessions
    assert "api_errors" not in dict(plain.facts)
