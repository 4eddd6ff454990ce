"""Claude Code's own `/context` breakdowns, read back from a transcript.

When the user types `/context`, Claude Code writes its answer into the transcript: a native,
complete split of the prompt (system prompt, tool schemas, memory files, skills, messages).
This module finds those runs in a stream of transcript records and turns each into a
`NativeSnapshot`, or into a `ContextCommandFailure` when the run failed or its text is in a
layout we do not know. It is pure: no I/O, no printing, no clock. The grammar and every rule
below are documented, with the sessions they were checked on, in FORMATS-context-command.md.

Surprises of the format (why the code looks the way it does):

- A run is 2 or 3 records chained by `parentUuid`: the command record, its output record, and
  from CLI 2.1.207 an `isMeta` user record with the same breakdown as markdown. The record
  types changed over time (`user`/`user`; VS Code `user`/`system`; CLI ≥ 2.1.207
  `system`/`system`/`user`; typed while busy `user`/`system`), so runs are found by the
  command record and the chain, never by the words "Context Usage": a command's own
  `<command-args>` can hold a whole pasted `/context` screen (VS Code 2.1.123).
- The meta markdown record can carry an earlier timestamp than the output record it follows.
- Two grammars: an ANSI terminal screen (a glyph grid on the left, text on the right) and a
  markdown report. The markdown is preferred when present: it lists every row including the
  deferred ones, and full per-item tables where the 2.1.207+ screen prints only counts.
- The screen is wrapped in DEC synchronized-update frames; 2.1.19 prints the whole screen twice
  in one output, so only the last frame is read.
- Three header forms: `model • 430k/1000k tokens (43%)` (1.0.x), `model · 92k/200k tokens
  (46%)` (2.0–2.1.69), and from 2.1.114 three lines: display name, model id, `122.6k/1m tokens
  (12%)`. The model id may end in `[1m]` (the 1M-context variant), which is dropped.
- Numbers: `k`/`m` units, `.0` kept up to 2.1.27 (`45.0k`) and dropped later (`33k`), plain
  integers under 1,000 (`8 tokens`), and Free space without the word "tokens". Markdown item
  tables also write `~100` and `< 20`.
- In 2.0.x the header's "used" includes the Autocompact buffer (92k = 47k of rows + 45k);
  from 2.1.1 it does not. "Compact buffer" (2.1.1–2.1.19) has a used-cell bullet yet is a
  reserve too. Neither is context: they only shrink the effective window.
- `(deferred)` rows (2.1.86+ markdown) are tool schemas reachable through tool search, not in
  the prompt; Free space is window − used − reserves. None of them is context.
- Header and rows can disagree (2.1.19: 142k vs 134.9k; VS Code 2.1.81: 143.2k vs 3.4k). Both
  are kept as printed; rows are never scaled to the header. A breakdown without a System
  prompt or Messages row is refused, though: one 2.1.207 run right after `/remote-control`
  printed only Skills and Messages (hannibal8856/claude_backup, session fdcca453, line 129),
  and reading it would claim a prompt with no system prompt and no tools.
- Per-item sections can exist without their category row (2.0.76 skills, 2.1.81 MCP tools at 0
  tokens, 2.1.207 MCP tools that are all deferred): such items are not in the prompt and are
  dropped. Names can repeat (a plugin installed twice, a skill both in User and Project): the
  copies are summed into one item so ids stay unique.
- 1.0.x/2.0.x screens wrap long detail lines mid-path and lose a character at the break; such
  items cannot be read back faithfully and are skipped (their category row is still exact).

Anything that does not fit the known grammar (a new header form, an unknown category row, a
percentage that does not match the numbers) is a failure, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from agent_profiler.adapters.claude_context_rows import (
    NATIVE_HEAD,
    ContextCommandFailure,
    ContextParseError,
    ContextRunResult,
    NativeItem,
    NativeSnapshot,
    parse_tokens,
)
from agent_profiler.adapters.common import DEFAULT_WINDOW, assumed_window
from agent_profiler.diagnostics import journal_name
from agent_profiler.model import frozen

__all__ = [
    "DEFAULT_WINDOW",
    "NATIVE_HEAD",
    "ContextCommandFailure",
    "ContextCommandTracker",
    "ContextParseError",
    "ContextRunResult",
    "NativeItem",
    "NativeSnapshot",
    "assumed_window",
    "parse_context_output",
    "parse_tokens",
]

# --------------------------------------------------------------------------- output text


_STDOUT = re.compile(r"<local-command-stdout>(.*?)(?:</local-command-stdout>|\Z)", re.DOTALL)
_STDERR = re.compile(r"<local-command-stderr>(.*?)(?:</local-command-stderr>|\Z)", re.DOTALL)


# The two grammars' parsers (`claude_context_screens`) are imported when a run is met: a
# transcript without one, nearly every transcript, did not need their 13M instructions of
# start-up (their regular expressions).


def _is_markdown(text: str) -> bool:
    from agent_profiler.adapters.claude_context_screens import MARKDOWN_TITLE

    return text.lstrip().startswith(MARKDOWN_TITLE)


def parse_context_output(
    text: str,
    *,
    version: str | None = None,
    timestamp: str | None = None,
    line: int = 0,
    text_line: int | None = None,
) -> NativeSnapshot:
    """Parse a `/context` output in either grammar (stdout tags optional)."""
    from agent_profiler.adapters.claude_context_screens import parse_markdown, parse_screen

    stdout = _STDOUT.search(text)
    body = stdout[1] if stdout else text
    parse = parse_markdown if _is_markdown(body) else parse_screen
    return parse(body, version=version, timestamp=timestamp, line=line, text_line=text_line)


# --------------------------------------------------------------------------- records


def _payload(record: Mapping[str, object]) -> str | None:
    """The text of a record: top-level `content` for `system`, `message.content` otherwise."""
    if record.get("type") == "system":
        content = record.get("content")
    else:
        message = record.get("message")
        # `dict` first: a parsed record's message is one, and asking the Mapping ABC
        # costs more than the rest of this function.
        content = (
            message.get("content")
            if type(message) is dict or (message is not None and isinstance(message, Mapping))
            else None
        )
    if isinstance(content, str):
        return content
    # Not seen for these records, but harmless: a list made only of text blocks. Every
    # record passes here, most with a tool_use or tool_result block early in a long list:
    # the first block that is not text ends it (this was 15% of reading a Claude journal).
    if isinstance(content, list) and content:
        texts: list[str] = []
        for block in content:
            text = block.get("text") if type(block) is dict or isinstance(block, Mapping) else None
            if not isinstance(text, str):
                return None
            texts.append(text)
        return "".join(texts)
    return None


_COMMAND_NAME = re.compile(r"<command-name>\s*/context\s*</command-name>")


def _is_context_command(payload: str) -> bool:
    head = payload.lstrip()
    if not head.startswith(("<command-name>", "<command-message>")):
        return False
    # Only the tags before the arguments: the arguments are free text typed by the user.
    return _COMMAND_NAME.search(head.split("<command-args>", 1)[0]) is not None


def _meta_markdown(record: Mapping[str, object]) -> str | None:
    """The markdown of a 2.1.207+ `isMeta` record that follows a screen, or None."""
    payload = _payload(record)
    if record.get("isMeta") is not True or payload is None:
        return None
    stdout = _STDOUT.search(payload)
    body = stdout[1] if stdout else payload
    return body if _is_markdown(body) else None


def _text(record: Mapping[str, object], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


@frozen
class _Output:
    line: int
    timestamp: str | None
    version: str | None
    text: str


def _conclude(output: _Output, text: str, text_line: int) -> ContextRunResult:
    grammar = "markdown" if _is_markdown(text) else "screen"
    try:
        return parse_context_output(
            text,
            version=output.version,
            timestamp=output.timestamp,
            line=output.line,
            text_line=text_line,
        )
    except ContextParseError as error:
        # The error may quote a line of the screen: capped, as any name from a journal.
        reason = journal_name(str(error), 100)
        return ContextCommandFailure(
            output.line, f"/context output in an unknown {grammar} layout: {reason}"
        )


class ContextCommandTracker:
    """Finds `/context` runs in a transcript fed record by record, in file order.

    `feed` returns the runs that ended with that record (usually none, at most two); `finish`
    returns the runs still open at the end of the file. A screen output is held until the
    next record on its chain shows whether a markdown copy follows (2.1.207+), so a run's
    result can come one record late; its `line` and `timestamp` are the output record's.
    """

    def __init__(self) -> None:
        self._commands: dict[str, int] = {}  # command uuid → line, awaiting the output
        self._screens: dict[str, _Output] = {}  # output uuid → screen, awaiting a markdown copy

    def feed(self, record: Mapping[str, object], line: int) -> Sequence[ContextRunResult]:
        if not self._screens and not self._commands:
            # Nothing awaits an answer (almost always): no record's parent can conclude a
            # run, and only a command can start one (every record read comes here).
            payload = _payload(record)
            if payload is None or not _is_context_command(payload):
                return ()
        results: list[ContextRunResult] = []
        parent = record.get("parentUuid") if self._screens or self._commands else None
        if isinstance(parent, str):
            screen = self._screens.pop(parent, None)
            if screen is not None:
                markdown = _meta_markdown(record)
                if markdown is not None:
                    results.append(_conclude(screen, markdown, line))
                    return results
                results.append(_conclude(screen, screen.text, screen.line))
            command_line = self._commands.pop(parent, None)
            if command_line is not None:
                output = self._on_output(record, line)
                if output is not None:
                    results.extend(output)
                    return results
                results.append(
                    ContextCommandFailure(command_line, "/context gave no output record")
                )
        payload = _payload(record)
        if payload is not None and _is_context_command(payload):
            uuid = record.get("uuid")
            if isinstance(uuid, str):
                self._commands[uuid] = line
            else:
                results.append(ContextCommandFailure(line, "/context command without a uuid"))
        return results

    def idle(self) -> bool:
        """True when no run awaits a later record: `feed` does nothing with a record
        without a `message` that is not `system` (a progress record, say)."""
        return not self._commands and not self._screens

    def ignores(self, record: Mapping[str, object]) -> bool:
        """True when `feed(record)` would do nothing: no run awaits its next record, and
        the record has no text that could be a command (no `message`, not `system`). Most
        records of a long transcript (progress, file-history snapshots) are such, and a
        reader asks this first to skip them cheaply."""
        return (
            not self._commands
            and not self._screens
            and "message" not in record
            and record.get("type") != "system"
        )

    def finish(self) -> list[ContextRunResult]:
        """Conclude what is still open at the end of the transcript."""
        results: list[ContextRunResult] = [
            _conclude(screen, screen.text, screen.line) for screen in self._screens.values()
        ]
        results += [
            ContextCommandFailure(line, "/context gave no output record")
            for line in self._commands.values()
        ]
        self._screens.clear()
        self._commands.clear()
        return sorted(results, key=lambda result: result.line)

    def _on_output(self, record: Mapping[str, object], line: int) -> list[ContextRunResult] | None:
        """The record that answers a command: a result (or a held screen), None if it is
        not an output at all."""
        payload = _payload(record)
        if payload is None:
            return None
        head = payload.lstrip()
        if not head.startswith(("<local-command-stdout>", "<local-command-stderr>")):
            return None
        stderr = _STDERR.search(payload)
        if stderr is not None and stderr[1].strip():
            # What it printed is the journal's (an API error's body, a path): not quoted.
            size = len(stderr[1].strip())
            said = f"/context failed ({size:,} characters of error output, not shown)"
            return [ContextCommandFailure(line, said)]
        stdout = _STDOUT.search(payload)
        if stdout is None or not stdout[1].strip():
            return [ContextCommandFailure(line, "/context printed nothing")]
        output = _Output(line, _text(record, "timestamp"), _text(record, "version"), stdout[1])
        uuid = _text(record, "uuid")
        if _is_markdown(output.text) or uuid is None:
            return [_conclude(output, output.text, line)]
        self._screens[uuid] = output  # a markdown copy may follow (CLI 2.1.207+)
        return []
