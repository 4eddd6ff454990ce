"""Gemini CLI and OpenCode items are measured from their text (issue 19b): with
`--estimate calibrated` the estimator must see what an item is (prose, code, JSON), so an
adapter that hands `ContextLog.add` a length instead measures everything as the unknown
class. The estimator here gives the unknown class no tokens at all, so a length shows up
as a zero, and every other class its own ratio, so a text measured as a whole-length
guess shows up too. Tool arguments are sized by the shared `tool_call_text` (issue 16.3)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import Estimator, TextClass, calibrated, tool_call_text, use_estimator
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Basis, Category, ContextSnapshot, Harness, Session

# Prose 4, code 2, JSON 1 character(s) per token; a bare length (unknown class) costs 0.
RATIOS = {c: 1.0 for c in TextClass} | {
    TextClass.PROSE: 4.0,
    TextClass.CODE: 2.0,
    TextClass.JSON: 1.0,
    TextClass.UNKNOWN: float("inf"),
}
PROMPT = "Please explain what this function does and whether it can be simplified."
ANSWER = "def area(r):\n    return 3.14159 * r ** 2  # the circle's area"
ARGS = {"file_path": "/src/geometry.py", "limit": 40}
RESULT = '{"lines": 12, "path": "/src/geometry.py"}\n    return 3.14159 * r ** 2'


def estimator(per_item_by_harness: dict[str, float] | None = None) -> Estimator:
    return calibrated(RATIOS, 0.0, per_item_by_harness or {})


def last_request(
    path: Path, harness: Harness, measure_with: Estimator | None = None
) -> dict[Category, int]:
    with use_estimator(measure_with or estimator()):
        result = load([path], Diagnostics())
    (session,) = result.sessions
    assert session.harness is harness
    snaps = requests(session)
    assert {s.basis for s in snaps} == {Basis.CALIBRATED}
    return dict(snaps[-1].categories)


def requests(session: Session) -> list[ContextSnapshot]:
    snaps = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE]
    assert len(snaps) == 2
    return snaps


def expected(calls: list[tuple[str, object]], per_item: float = 0.0) -> dict[Category, int]:
    measure = calibrated(RATIOS, per_item).text_tokens
    return {
        Category.PROMPTS: measure(PROMPT),
        Category.ASSISTANT: measure(ANSWER) + sum(measure(tool_call_text(n, a)) for n, a in calls),
        Category.RESULTS: measure(RESULT) * len(calls),
    }


def test_the_probe_tells_a_text_from_a_length() -> None:
    # The premise of the tests below: a length is worth nothing, each class its own ratio.
    measure = estimator()
    assert measure.chars_tokens(len(PROMPT)) == 0 and measure.text_tokens(PROMPT) > 0
    assert measure.text_tokens(ANSWER) > len(ANSWER) / 4  # code: 2 characters per token
    assert measure.text_tokens(tool_call_text("read_file", ARGS)) == len(
        tool_call_text("read_file", ARGS)
    )  # JSON: 1 character per token


def gemini_document(tmp_path: Path) -> Path:
    def gemini(mid: str, ts: str, prompt: int, **extra: object) -> dict[str, object]:
        tokens = {"input": prompt, "output": 5, "cached": 0, "thoughts": 0, "tool": 0}
        return {"id": mid, "timestamp": ts, "type": "gemini", "tokens": tokens, **extra}

    result = [
        {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": RESULT}}}
    ]
    messages = [
        {"id": "u1", "timestamp": "2026-01-01T00:00:01.000Z", "type": "user", "content": PROMPT},
        gemini(
            "g1",
            "2026-01-01T00:00:02.000Z",
            1_000,
            model="gemini-2.5-pro",
            content=ANSWER,
            toolCalls=[
                {
                    "id": "c1",
                    "name": "read_file",
                    "args": ARGS,
                    "result": result,
                    "status": "success",
                },
                # No `args` at all: the call costs its name only (tool_call_text), not `null`.
                {"id": "c2", "name": "list_directory", "result": result, "status": "success"},
            ],
        ),
        gemini("g2", "2026-01-01T00:00:03.000Z", 1_200, model="gemini-2.5-pro", content=""),
    ]
    document = {
        "sessionId": "s-estimate",
        "projectHash": "ab" * 32,
        "startTime": "2026-01-01T00:00:00.000Z",
        "lastUpdated": "2026-01-01T00:00:03.000Z",
        "messages": messages,
    }
    path = tmp_path / "session-2026-01-01T00-00-sestimat.json"
    path.write_text(json.dumps(document, indent=2))
    return path


def test_gemini_cli_items_are_measured_from_their_text(tmp_path: Path) -> None:
    categories = last_request(gemini_document(tmp_path), Harness.GEMINI_CLI)
    want = expected([("read_file", ARGS), ("list_directory", None)])
    for category, tokens in want.items():
        assert categories[category] == tokens, category


def test_gemini_cli_session_context_is_split_by_text(tmp_path: Path) -> None:
    # The ≥0.44 environment turn: loaded GEMINI.md context is Rules, the rest Environment,
    # each measured from its own text.
    loaded = '<loaded_context>\n{"rule": "never push"}\n</loaded_context>'
    environment = "<session_context>\nThe folder is /work and today is Monday.\n"
    path = gemini_document(tmp_path)
    document = json.loads(path.read_text())
    document["messages"].insert(
        0,
        {
            "id": "env",
            "timestamp": "2026-01-01T00:00:00.500Z",
            "type": "user",
            "content": environment + loaded + "\n</session_context>",
        },
    )
    path.write_text(json.dumps(document))
    categories = last_request(path, Harness.GEMINI_CLI)
    measure = estimator().text_tokens
    assert categories[Category.RULES] == measure(loaded)
    assert categories[Category.ENVIRONMENT] == measure(environment + "\n</session_context>")


def opencode_export(tmp_path: Path) -> Path:
    session = "ses_estimate0000000000000000"

    def step_finish(part_id: str, prompt: int) -> dict[str, object]:
        tokens = {"input": prompt, "output": 5, "reasoning": 0, "cache": {"read": 0, "write": 0}}
        return {"type": "step-finish", "id": part_id, "reason": "stop", "tokens": tokens}

    def assistant(message_id: str, created: int, parts: list[dict[str, object]]) -> object:
        info = {
            "id": message_id,
            "sessionID": session,
            "role": "assistant",
            "modelID": "claude-sonnet-4.6",
            "providerID": "anthropic",
            "time": {"created": created, "completed": created + 500},
        }
        return {"info": info, "parts": [{"type": "step-start", "id": message_id + "s"}, *parts]}

    tool: dict[str, object] = {
        "type": "tool",
        "id": "p-tool",
        "tool": "read",
        "callID": "call-1",
        "state": {
            "status": "completed",
            "input": ARGS,
            "output": RESULT,
            "time": {"start": 1_767_225_602_100, "end": 1_767_225_602_200},
        },
    }
    user = {
        "info": {
            "id": "msg_u1",
            "sessionID": session,
            "role": "user",
            "time": {"created": 1_767_225_601_000},
        },
        "parts": [{"type": "text", "id": "p-u1", "text": PROMPT}],
    }
    messages = [
        user,
        assistant(
            "msg_a1",
            1_767_225_602_000,
            [{"type": "text", "id": "p-a1", "text": ANSWER}, tool, step_finish("p-f1", 1_000)],
        ),
        assistant("msg_a2", 1_767_225_603_000, [step_finish("p-f2", 1_200)]),
    ]
    info = {"id": session, "title": "estimate", "time": {"created": 1_767_225_600_000}}
    path = tmp_path / f"{session}.export.json"
    path.write_text(json.dumps({"info": info, "messages": messages}))
    return path


def test_opencode_items_are_measured_from_their_text(tmp_path: Path) -> None:
    categories = last_request(opencode_export(tmp_path), Harness.OPENCODE)
    for category, tokens in expected([("read", ARGS)]).items():
        assert categories[category] == tokens, category


@pytest.mark.parametrize("make", [gemini_document, opencode_export])
def test_chars4_stays_characters_over_four(tmp_path: Path, make: Callable[[Path], Path]) -> None:
    # The default is untouched by passing text: the same counts as the lengths gave.
    (session,) = load([make(tmp_path)], Diagnostics()).sessions
    snaps = requests(session)
    assert {s.basis for s in snaps} == {Basis.CHARS}
    assert dict(snaps[-1].categories)[Category.PROMPTS] == (len(PROMPT) + 3) // 4


# Tokens of framing per item, different for each harness and for the shared value (0).
COSTS = {"gemini-cli": 100.0, "opencode": 7.0, "claude-code": 55.0}


@pytest.mark.parametrize(
    ("make", "harness", "calls"),
    [
        (gemini_document, Harness.GEMINI_CLI, [("read_file", ARGS), ("list_directory", None)]),
        (opencode_export, Harness.OPENCODE, [("read", ARGS)]),
    ],
)
def test_each_harness_is_measured_with_its_own_per_item_cost(
    tmp_path: Path, make: Callable[[Path], Path], harness: Harness, calls: list[tuple[str, object]]
) -> None:
    # The export's estimator is specialised to the journal's harness by the loader: every
    # item costs that harness's framing, not the shared value (here 0) nor another's.
    categories = last_request(make(tmp_path), harness, estimator(COSTS))
    want = expected(calls, per_item=COSTS[harness.value])
    assert want != expected(calls)  # the premise: the cost shows in every category
    for category, tokens in want.items():
        assert categories[category] == tokens, category


def test_for_harness_picks_the_harness_cost_or_the_shared_one() -> None:
    shared = calibrated(RATIOS, 3.0, COSTS)
    assert shared.for_harness("opencode").per_item == 7.0
    assert shared.for_harness("opencode").for_harness("gemini-cli").per_item == 100.0
    assert shared.for_harness("muse") is shared  # a harness the table does not name
    assert shared.for_harness("opencode").text_tokens(PROMPT) == shared.text_tokens(PROMPT) + 4


def test_a_redacted_journal_is_labelled_not_fitted(tmp_path: Path) -> None:
    # An Entire checkpoint replaces secret-looking strings with a bare `REDACTED`, here in
    # the opaque reasoning Copilot round-trips and in a prompt: the journal holds less
    # than was sent. It is labelled (unmeasured, summary); the estimates are unchanged.
    path = opencode_export(tmp_path)
    document = json.loads(path.read_text())
    reasoning = {
        "type": "reasoning",
        "id": "p-r1",
        "text": "Let me read the file.",
        "metadata": {"copilot": {"reasoningOpaque": "REDACTED/REDACTED/xK8AE/REDACTED"}},
    }
    document["messages"][1]["parts"].insert(1, reasoning)
    document["messages"][0]["parts"][0]["text"] = PROMPT + " token REDACTED [REDACTED_TEXT len=9]"
    path.write_text(json.dumps(document))
    (session,) = load([path], Diagnostics()).sessions
    # Three in the opaque reasoning, one in the prompt; a sanitised marker with its
    # length is measured by that length and is not a placeholder.
    assert dict(session.unmeasured)["redacted-placeholder"] == 4
    result = CliRunner().invoke(app, ["summary", "--json", str(path)])
    (row,) = json.loads(result.stdout)
    assert row["redacted_placeholders"] == 4
    text = CliRunner().invoke(app, ["summary", str(path)]).stdout
    assert "journal redacted before publication (4 `REDACTED` placeholders)" in text
    # An unredacted journal says nothing about it.
    (tmp_path / "clean").mkdir()
    clean = opencode_export(tmp_path / "clean")
    (row,) = json.loads(CliRunner().invoke(app, ["summary", "--json", str(clean)]).stdout)
    assert "redacted_placeholders" not in row
