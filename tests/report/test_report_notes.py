"""What the report says beside a session's numbers: a journal that starts mid-conversation,
and the API calls the harness retried."""

from __future__ import annotations

from pathlib import Path


def test_the_page_says_a_journal_starts_mid_conversation_and_its_api_errors(
    tmp_path: Path,
) -> None:
    """The 2.1.14 excerpt starts at the end of a turn: the page says so beside its
    Unattributed; a session whose API calls failed and were retried says how many."""
    import json

    from agent_profiler.diagnostics import Diagnostics
    from agent_profiler.loader import load
    from agent_profiler.report.data import estimation_words
    from shared_paths import TESTS

    excerpt = TESTS / "data" / "journals" / "claude-code"
    (session,) = load(
        [excerpt / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"], Diagnostics()
    ).sessions
    words = " ".join(estimation_words(session))
    assert (
        "The journal starts mid-conversation (its first record's parent is not in the journal)"
        in words
    )
    assert "failed API call" not in words
    journal = tmp_path / "s.jsonl"
    base = {"sessionId": "s1", "timestamp": "2026-06-05T15:13:20.000Z", "parentUuid": None}
    prompt = base | {"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}
    error = base | {"type": "system", "subtype": "api_error", "uuid": "u2", "error": {}}
    journal.write_text(
        "".join(json.dumps(r) + "\n" for r in (prompt, error, error | {"uuid": "u3"}))
    )
    (failed,) = load([journal], Diagnostics()).sessions
    words = " ".join(estimation_words(failed))
    assert "2 failed API calls the harness retried" in words
    assert "mid-conversation" not in words
