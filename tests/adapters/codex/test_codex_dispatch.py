"""The Codex reader's shortcuts (issue 32) against the slow way they replace, on hand-made
rollouts: a redacted function call measured as a decoded one would be, each request's
window whenever it is known, every compaction's post size from the first request after it,
damaged types reported as before, and the tag test that skips texts no tag starts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.adapters import codex
from agent_profiler.adapters.codex_records import _TAGS, classify
from agent_profiler.adapters.drafts import ToolArguments
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Category
from samples import read_single


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _line(second: int, kind: Any, payload: Any) -> dict[str, Any]:
    return {"timestamp": f"2026-03-01T10:00:{second:02d}.000Z", "type": kind, "payload": payload}


def _usage(inp: int, total: int, window: int | None) -> dict[str, Any]:
    last = {"input_tokens": inp, "output_tokens": 5, "reasoning_output_tokens": 0}
    info: dict[str, Any] = {
        "total_token_usage": {**last, "total_tokens": total},
        "last_token_usage": last,
    }
    if window is not None:
        info["model_context_window"] = window
    return {"type": "token_count", "info": info}


def _answer(second: int, text: str = "ok") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    return _line(
        second, "response_item", {"type": "message", "role": "assistant", "content": content}
    )


def _meta() -> dict[str, Any]:
    return _line(0, "session_meta", {"id": "dispatch-1", "cwd": "/p", "cli_version": "0.1"})


MARKERS = ["[REDACTED_TEXT len=120 sha=0a1b2c3d]", '{"cmd": ["ls", "-la"], "path": "src/x.py"}']


@pytest.mark.parametrize("arguments", MARKERS)
def test_a_function_calls_arguments_measure_as_decoding_them_would(
    tmp_path: Path, arguments: str
) -> None:
    """A redaction marker is not handed to orjson (it is no JSON): its call's keys, digest
    and target are those of ToolArguments.of decoding it, as for real JSON text; its size
    is the one the marker states (`len=120`: what the context held), not the marker's."""
    call = {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": "c1"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "done"}
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _line(1, "response_item", call),
            _line(2, "event_msg", _usage(100, 105, 1000)),
            _line(3, "response_item", output),
        ],
    )
    session, _ = read_single(journal)
    (tool,) = session.tool_calls
    expected = ToolArguments.of(arguments, decode=True)
    assert (tool.arg_keys, tool.arg_bytes, tool.args_digest) == (
        expected.keys,
        120 if arguments.startswith("[REDACTED_") else expected.bytes,
        expected.digest,
    )
    assert bool(tool.target) == bool(expected.target)  # the session makes it safe
    assert (tool.arg_keys != ()) == arguments.startswith("{")


def test_each_request_has_the_window_reported_with_it_else_the_sessions(tmp_path: Path) -> None:
    """The first request reports no window: it gets the session's (the last reported);
    the others keep the window reported with them, though it changed since."""
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _answer(1),
            _line(2, "event_msg", _usage(100, 105, None)),
            _answer(3),
            _line(4, "event_msg", _usage(200, 310, 100_000)),
            _answer(5),
            _line(6, "event_msg", _usage(300, 615, 200_000)),
        ],
    )
    session, _ = read_single(journal)
    windows = {
        s.anchor_id: s.window_tokens for s in session.snapshots if s.anchor_id.startswith("req")
    }
    assert windows == {"request-1": 200_000, "request-2": 100_000, "request-3": 200_000}
    reported = {s.anchor_id: s.reported_tokens for s in session.snapshots}
    assert [reported[f"request-{n}"] for n in (1, 2, 3)] == [100, 200, 300]


def test_every_compaction_learns_its_size_from_the_first_request_after_it(
    tmp_path: Path,
) -> None:
    """Two compactions in a row both take the next request's prompt; one after that
    request waits for the request after it; one with no request after it learns none."""
    summary = {"message": "Summary of the work so far."}
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _answer(1),
            _line(2, "event_msg", _usage(1000, 1005, 10_000)),
            _line(3, "compacted", summary),
            _line(4, "compacted", summary),
            _answer(5),
            _line(6, "event_msg", _usage(300, 1310, 10_000)),
            _line(7, "compacted", summary),
            _answer(8),
            _line(9, "event_msg", _usage(250, 1565, 10_000)),
            _line(10, "compacted", summary),
        ],
    )
    session, _ = read_single(journal)
    sizes = [(c.pre_tokens, c.post_tokens) for c in session.compactions]
    assert sizes == [(1000, 300), (1000, 300), (300, 250), (250, None)]


def test_damaged_types_are_not_recognised_as_untyped(tmp_path: Path) -> None:
    """A line, event or item whose type is no string (a list: unhashable) is counted as not
    recognised as `untyped` with its path:line (it was `None`, a Python word, where Claude
    Code's and Gemini CLI's say `untyped`); a skipped type is counted as skipped."""
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _line(1, ["turn_context"], {"model": "m"}),
            _line(2, "event_msg", {"type": {"a": 1}}),
            _line(3, "response_item", {"type": ["message"]}),
            _line(4, "event_msg", {"type": "agent_reasoning", "text": "x"}),
            _line(5, "world_state", {"x": 1}),
            _line(6, "response_item", {"type": "ghost_snapshot"}),
            _answer(7),
            _line(8, "event_msg", _usage(100, 105, 1000)),
        ],
    )
    _, diagnostics = read_single(journal)
    where = {kind: at.rsplit(":", 1)[1] for kind, at in diagnostics.unrecognised_at.items()}
    assert where == {
        "codex:untyped": "2",
        "codex:event_msg/untyped": "3",
        "codex:response_item/untyped": "4",
    }
    assert {k: v for k, v in diagnostics.skipped.items() if k.startswith("codex")} == {
        "codex:event_msg/agent_reasoning": 1,
        "codex:world_state": 1,
        "codex:response_item/ghost_snapshot": 1,
    }


@pytest.mark.parametrize(("tag", "category", "label"), _TAGS)
@pytest.mark.parametrize("lead", ["", "  \n"])
def test_a_block_that_starts_with_a_tag_is_of_its_category(
    tag: str, category: Category, label: str, lead: str
) -> None:
    assert classify("user", f"{lead}{tag}\nbody") == (category, label)


@pytest.mark.parametrize(
    ("role", "expected"),
    [
        ("user", Category.PROMPTS),
        ("developer", Category.SYSTEM),
        ("assistant", Category.ASSISTANT),
    ],
)
@pytest.mark.parametrize("text", ["<not_a_tag> hi", "# Not AGENTS.md", "plain", "", "  "])
def test_a_block_that_starts_with_no_tag_is_of_its_role(
    role: str, expected: Category, text: str
) -> None:
    assert classify(role, text)[0] is expected


def test_an_image_in_a_tools_output_is_unmeasured(tmp_path: Path) -> None:
    """A tool's output given as content parts (`view_image`: an `input_image` beside its
    text) kept the text and dropped the image without a count."""
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _line(
                1,
                "response_item",
                {"type": "function_call", "call_id": "c1", "name": "view_image", "arguments": "{}"},
            ),
            _line(
                2,
                "response_item",
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [{"type": "input_text", "text": "x"}, image],
                },
            ),
            _answer(3),
            _line(4, "event_msg", _usage(100, 105, 1000)),
        ],
    )
    session, _ = read_single(journal)
    assert dict(session.unmeasured) == {"image": 1}


def test_a_rollout_of_one_dated_line_spans_that_instant(tmp_path: Path) -> None:
    """The rollout's span is kept as an empty range (no time yet) that each line's time
    widens on both sides: one dated line is its start and its end, both set by that line
    (a span test made of `if … elif …` set only the start, and the rollout was no session)."""
    journal = _write(tmp_path / "rollout.jsonl", [_meta()])
    session, _ = read_single(journal)
    start = 1_772_359_200 * 10**9  # 2026-03-01T10:00:00Z
    assert (session.start_ns, session.end_ns) == (start, start)


def test_a_rollout_whose_only_time_is_zero_still_spans_it(tmp_path: Path) -> None:
    """No line dated and the file last written at the epoch (an archive's mtime of 0): its
    one line is placed at time 0, which is a time (the empty range's end is -1): the
    rollout spans [0, 0], as it did when the span began as None."""
    line = _meta()
    del line["timestamp"]
    journal = _write(tmp_path / "rollout.jsonl", [line])
    os.utime(journal, ns=(0, 0))
    builder = codex.read_rollout(journal, Diagnostics())
    assert (builder.start_ns, builder.end_ns) == (0, 0)


def test_every_unknown_content_part_of_an_item_is_said_with_its_line(tmp_path: Path) -> None:
    """`_unknown_parts` on every key of a response_item that holds parts: a reasoning
    item's `content` that is no list hides nothing after it (its `summary`'s unknown part
    on line 2); a part that is no object (7, line 3) and one without a type (line 3) are
    untyped; a tool output's parts are looked at too (line 5). The known parts say nothing."""
    reasoning = {
        "type": "reasoning",
        "content": "not a list",
        "summary": [{"type": "summary_text", "text": "s"}, {"type": "zzz_summary"}],
    }
    message = {
        "type": "message",
        "role": "user",
        "content": [{"type": "input_text", "text": "hi"}, 7, {"text": "no type"}],
    }
    call = {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c1"}
    output = {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [{"type": "input_text", "text": "ok"}, {"type": "zzz_output", "text": "x"}],
    }
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _line(1, "response_item", reasoning),
            _line(2, "response_item", message),
            _line(3, "response_item", call),
            _line(4, "response_item", output),
            _line(5, "event_msg", _usage(100, 105, 1000)),
        ],
    )
    _, diagnostics = read_single(journal)
    said = [(w.line, w.message) for w in diagnostics.warnings if w.kind == "unknown-block"]
    assert said == [
        (2, "content part of type 'zzz_summary' not recognised (not read)"),
        (3, "content part of type 'untyped' not recognised (not read)"),
        (3, "content part of type 'untyped' not recognised (its text read)"),
        (5, "content part of type 'zzz_output' not recognised (its text read)"),
    ]


def test_arguments_redacted_as_empty_are_of_no_size(tmp_path: Path) -> None:
    """A marker stating `len=0` (empty arguments, redacted) makes the call's arguments 0
    bytes, as any stated length does: a stated 0 is a length, not its absence."""
    marker = "[REDACTED_ARGUMENTS len=0 sha=0a1b2c3d]"
    call = {"type": "function_call", "name": "shell", "arguments": marker, "call_id": "c1"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "done"}
    journal = _write(
        tmp_path / "rollout.jsonl",
        [
            _meta(),
            _line(1, "response_item", call),
            _line(2, "event_msg", _usage(100, 105, 1000)),
            _line(3, "response_item", output),
        ],
    )
    session, _ = read_single(journal)
    (tool,) = session.tool_calls
    assert tool.arg_bytes == 0


@pytest.mark.parametrize("one_pass", [False, True])
def test_an_export_reads_without_argument_digests_and_summary_with_them(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, one_pass: bool
) -> None:
    """No trace shows a call's input digest (only `summary` finds repeated calls by it):
    an export reads without making one (an orjson dump and a BLAKE2b a call), by the
    model path or the one pass."""
    # GIVEN a rollout with calls, and a count of the digests made
    from typer.testing import CliRunner

    from agent_profiler.adapters import drafts
    from agent_profiler.cli import app

    made: list[object] = []
    digest = drafts.args_digest

    def counted(arguments: object) -> str:
        made.append(arguments)
        return digest(arguments)

    monkeypatch.setattr(drafts, "args_digest", counted)
    monkeypatch.setenv("AGENT_PROFILER_STREAM", "1" if one_pass else "0")
    if one_pass:  # the pass's own reading, not the model path's after a fallback
        from agent_profiler import pipeline

        monkeypatch.setattr(pipeline, "read_group", None)
    call = {"type": "function_call", "name": "shell", "call_id": "c1", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "done"}
    lines = [_meta(), _line(1, "response_item", call), _line(2, "response_item", output)]
    rollout = _write(
        tmp_path / "rollout.jsonl", [*lines, _line(3, "event_msg", _usage(100, 105, 1000))]
    )
    # WHEN it is exported, then summarised
    export_trace(rollout, require_addition=False)
    exported = len(made)
    monkeypatch.undo()  # (the count kept: `made` is the test's)
    monkeypatch.setattr(drafts, "args_digest", counted)
    result = CliRunner().invoke(app, ["summary", str(rollout)])
    # THEN the export made no digest, and the summary one for its call
    assert result.exit_code == 0, result.output
    assert (exported, len(made)) == (0, 1)
