"""Claude Code's tool calls measured on the scan helper's core (scan.py `Told`).

A long transcript's reading spends about a tenth of its time measuring its tool calls'
arguments: each call serialised to size it (`estimate.tool_call_text`), its digest, its
target and its previews (`ToolArguments.of`), its text searched for `REDACTED`
placeholders. None of that depends on anything but the call's name and arguments and
the options of the export, so the helper that already reads the file for the byte test
(scan.py) works it out for each line holding a call, with the functions the reader runs
(`call_measures`), and the reader takes its answer for the line when it has come
(`told_measures`, in `SessionBuilder._on_tool_use`); when it has not, or the reader's
estimator needs the text itself (class ratios, calibration probes), the reader measures
the call as before.
"""

from __future__ import annotations

from typing import Any

import orjson

from agent_profiler import estimate
from agent_profiler.adapters.drafts import ToolArguments, add_tool_call
from agent_profiler.attribution import REDACTED_WORD, ContextLog, redacted_placeholders
from agent_profiler.estimate import chars4, tool_call_text
from agent_profiler.scan import Told

# Bytes a line holding a call has, as Claude Code writes a call's block (`{"type":
# "tool_use","id":…` or `"server_tool_use"`; a string that merely says so has its quotes
# escaped), and the usage's `"server_tool_use":{…}` counts have not: the helper parses only
# such lines. A call written otherwise is measured by the reader, as without a helper.
MARKERS = (b'_use","id":',)

# (chars, REDACTED placeholders, the ToolArguments' fields in their order)
Measures = tuple[int, int, tuple[Any, ...]]
# A line's answer: for each call among its content's blocks, (its index, id, name, measures)
Answer = tuple[tuple[int, str, str, Measures], ...]


def call_measures(name: str, arguments: object) -> tuple[str, Measures]:
    """A call's text as it is sized in context, and what is measured of it: its
    characters, its `REDACTED` placeholders and its arguments (`ToolArguments.of`)."""
    text = tool_call_text(name, arguments)
    measured = ToolArguments.of(arguments, text=text[len(name) :])
    fields = (measured.keys, measured.preview, measured.bytes, measured.digest, measured.target)
    redacted = redacted_placeholders(text) if REDACTED_WORD in text else 0
    return text, (len(text), redacted, fields)


def answer(raw: bytes) -> Answer | None:
    """The helper's work on a line: the measures of each call its message holds, as the
    reader would find its blocks (`SessionBuilder.on_assistant`), or None."""
    try:
        value = orjson.loads(raw)
    except ValueError:
        return None  # (the reader's careful way may still read it: it measures it then)
    if value.__class__ is not dict or value.get("type") != "assistant":
        return None  # (a progress record's message is not read: nobody would take it)
    message = value.get("message")
    content = message.get("content") if message.__class__ is dict else None
    if content.__class__ is not list:
        return None
    found = []
    for index, block in enumerate(content):
        if block.__class__ is not dict:
            continue
        kind = block.get("type")
        call_id = block.get("id")
        if (kind == "tool_use" or kind == "server_tool_use") and call_id.__class__ is str:
            name = block.get("name")
            name = name if isinstance(name, str) else "tool"
            found.append((index, call_id, name, call_measures(name, block.get("input"))[1]))
    return tuple(found) if found else None


def told_measures(
    told: Told | None, line: int, index: int, call_id: str, name: str
) -> Measures | None:
    """The helper's measures of the call at `index` of line `line`, if it has told them
    and they are of this call (its id and name)."""
    found: Answer | None = told.take(line) if told is not None else None  # type: ignore[assignment]
    if found is None:
        return None
    for at, told_id, told_name, measures in found:
        if at == index:
            return measures if told_id == call_id and told_name == name else None
    return None


def add_measured_call(log: ContextLog, call_id: str, name: str, measures: Measures) -> int:
    """A call measured already enters the context as `add_tool_call` would add its text,
    in a log that measures text as characters / 4; returns its tokens."""
    chars, redacted, _ = measures
    tokens = chars4(chars)
    add_tool_call(log, call_id, name, None, chars, tokens=tokens)
    if redacted:
        log.redacted_placeholders += redacted
    return tokens


def measured_arguments(measures: Measures) -> ToolArguments:
    return ToolArguments(*measures[2])


def new_told() -> Told | None:
    """What a transcript's reading asks the scan helper for: the calls' measures, where
    the estimator in use sizes text by its characters alone (the log's `chars4`: what
    `add_measured_call` does), else nothing."""
    return Told(MARKERS, answer) if estimate.current().chars4 else None
