"""A token count that is no count (negative, a string) is read as 0 in every harness, and
said: Claude Code, Codex and Gemini CLI warned already; Pi, OpenCode and Muse read such a
count as 0 without a word. Edited copies of real journals of the test data; and no
journal of the test data or the corpus holds one (no warning is a false alarm)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Session
from shared_paths import CORPUS, TESTS

DATA = TESTS / "data" / "journals"
PI = DATA / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"
OPENCODE = DATA / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
MUSE = DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _read(path: Path) -> tuple[list[Session], Diagnostics]:
    diagnostics = Diagnostics()
    result = load([path], diagnostics)
    assert result.failures == [], result.failures
    return list(result.sessions), diagnostics


def _said_once(path: Path, values: list[dict[str, Any]]) -> tuple[list[Session], Any]:
    """`values` written as the JSONL journal `path`, read: its one warning, a bad-usage."""
    path.write_text("".join(json.dumps(v) + "\n" for v in values), encoding="utf-8")
    sessions, diagnostics = _read(path)
    # (a Muse journal's reminder children, whose logs are not given, are said apart)
    counts = {k: n for k, n in diagnostics.warning_counts.items() if k != "subagent-not-read"}
    assert counts == {"bad-usage": 1}
    (warning,) = [w for w in diagnostics.warnings if w.kind == "bad-usage"]
    return sessions, warning


def test_a_pi_count_that_is_no_count_is_said_with_its_line(tmp_path: Path) -> None:
    values = _lines(PI)
    index = next(
        i
        for i, v in enumerate(values)
        if (v.get("message") or {}).get("role") == "assistant" and v["message"].get("usage")
    )
    usage = values[index]["message"]["usage"]
    was = (usage["cacheRead"], usage["output"])
    usage["cacheRead"], usage["output"] = -7, "many"
    sessions, warning = _said_once(tmp_path / PI.name, values)
    assert warning.line == index + 1
    assert warning.message.startswith("usage cacheRead, output not a token count (-7)")
    (before,), _ = _read(PI)

    def totals(session: Session) -> tuple[int, int]:
        return (
            sum(r.usage.cache_read_tokens for r in session.responses),
            sum(r.usage.output_tokens for r in session.responses),
        )

    assert totals(sessions[0]) == (totals(before)[0] - was[0], totals(before)[1] - was[1])


def test_an_opencode_count_that_is_no_count_is_said_with_its_message(tmp_path: Path) -> None:
    document = json.loads(OPENCODE.read_text(encoding="utf-8"))
    message = next(m for m in document["messages"] if m["info"].get("role") == "assistant")
    finish = next(p for p in message["parts"] if p.get("type") == "step-finish")
    finish["tokens"]["input"] = "lots"
    finish["tokens"]["cache"]["read"] = -1
    path = tmp_path / OPENCODE.name
    path.write_text(json.dumps(document), encoding="utf-8")
    _, diagnostics = _read(path)
    assert diagnostics.warning_counts["bad-usage"] == 1
    (warning,) = [w for w in diagnostics.warnings if w.kind == "bad-usage"]
    assert warning.message.startswith(
        f"message {message['info']['id']}: usage input, cache.read not a token count ('lots')"
    )


def test_opencode_counts_bad_on_every_step_are_counted_and_the_first_listed(
    tmp_path: Path,
) -> None:
    """Each message's warning said it was "the first in this file": the place named the
    message, so each looked like a file of its own."""
    document = json.loads(OPENCODE.read_text(encoding="utf-8"))
    finishes = [
        p for m in document["messages"] for p in m["parts"] if p.get("type") == "step-finish"
    ]
    for finish in finishes:
        finish["tokens"]["output"] = -3
    path = tmp_path / OPENCODE.name
    path.write_text(json.dumps(document), encoding="utf-8")
    _, diagnostics = _read(path)
    assert diagnostics.warning_counts["bad-usage"] == len(finishes) > 1
    assert len([w for w in diagnostics.warnings if w.kind == "bad-usage"]) == 1


def test_a_muse_count_that_is_no_count_is_said_with_its_line(tmp_path: Path) -> None:
    values = _lines(MUSE)
    index, event = next(
        (i, v["payload"]["event"])
        for i, v in enumerate(values)
        if isinstance(v.get("payload"), dict)
        and isinstance(v["payload"].get("event"), dict)
        and v["payload"]["event"].get("kind") == "model_completed"
    )
    event["usage"]["reasoning_tokens"] = -3
    _, warning = _said_once(tmp_path / MUSE.name, values)
    assert warning.line == index + 1
    assert warning.message.startswith("usage reasoning_tokens not a token count (-3)")


ROOTS = [DATA / "pi", DATA / "opencode", DATA / "muse"]
ROOTS += [CORPUS / h for h in ("pi", "opencode", "muse") if (CORPUS / h).is_dir()]


@pytest.mark.parametrize("root", ROOTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_journal_of_the_data_holds_a_count_that_is_no_count(root: Path) -> None:
    diagnostics = Diagnostics()
    load([root], diagnostics)
    assert "bad-usage" not in diagnostics.warning_counts


GEMINI = DATA / "gemini-cli" / "magi-ui-0.4_session-2025-09-10T04-48-e7b3ecf2.json"


@pytest.mark.parametrize("tokens", [[1, 2], 17, "many"])
def test_gemini_tokens_that_are_no_object_are_said(tmp_path: Path, tokens: object) -> None:
    document = json.loads(GEMINI.read_text(encoding="utf-8"))
    answer = next(m for m in document["messages"] if m["type"] == "gemini" and m.get("tokens"))
    answer["tokens"] = tokens
    path = tmp_path / GEMINI.name
    path.write_text(json.dumps(document), encoding="utf-8")
    _, diagnostics = _read(path)
    assert diagnostics.warning_counts == {"bad-usage": 1}
    (warning,) = diagnostics.warnings
    index = document["messages"].index(answer)
    kind = type(tokens).__name__
    assert warning.message.startswith(
        f"messages[{index}]: tokens is no object of counts (a {kind}); read as 0"
    )
