"""The drafts every adapter fills while it reads, and the one way each becomes model data.

Owns how a tool call's arguments are measured (`ToolArguments`), the mutable tool-call
and compaction drafts and how prompts end (`finish_prompts`); adapters only decide times.
The session of messages that own their context items is `messages_draft.MessagesDraft`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable, Iterator, Mapping, MutableSequence, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import orjson

from agent_profiler.adapters.common import args_digest, json_text, preview, turn_ends
from agent_profiler.attribution import ContextLog
from agent_profiler.estimate import tool_call_text
from agent_profiler.model import (
    Category,
    Compaction,
    Prompt,
    Response,
    SourceKind,
    ToolCall,
    Usage,
    shared,
)
from agent_profiler.records import hashable_record, record
from agent_profiler.targets import raw_target

D = TypeVar("D")
# As globals: an enum class's attribute is looked up the generic way each time in CPython
# 3.11 (EnumType's __getattr__ hook, ≈ 900 instructions), and these are read for every call
# and every result.
_ASSISTANT, _RESULTS, _TOOL = Category.ASSISTANT, Category.RESULTS, SourceKind.TOOL


def handed_over(drafts: dict[Any, D] | MutableSequence[D]) -> Iterator[D]:
    """Each of an adapter's drafts once, in order, the container emptied first and each
    draft let go as the next is taken: a long session's drafts and the model made from
    them were all held at once, the peak of its reading."""
    queue = deque(drafts.values() if isinstance(drafts, dict) else drafts)
    drafts.clear()
    while queue:
        yield queue.popleft()


# Whether the journals read now keep their calls' argument previews: only a trace written
# with --previews shows them, and a long session's model held them in a sixth of its
# memory otherwise (a 100 MB Claude Code journal: 3.2 of 18 MB).
_argument_previews: ContextVar[bool] = ContextVar("argument_previews", default=True)


@contextmanager
def argument_previews(keep: bool) -> Iterator[None]:
    """Inside this block, tool calls keep argument previews only when `keep`."""
    token = _argument_previews.set(keep)
    try:
        yield
    finally:
        _argument_previews.reset(token)


def keeps_previews() -> bool:
    """Whether the journals read now keep previews (`argument_previews`): a prompt's too,
    which a trace shows only with --previews as well."""
    return _argument_previews.get()


# Whether the journals read now give their calls a digest of their input (what `summary`
# finds repeated calls by): a trace never shows it, and the one-pass export (stream/pi.py)
# reads without it.
_argument_digests: ContextVar[bool] = ContextVar("argument_digests", default=True)


@contextmanager
def argument_digests(keep: bool) -> Iterator[None]:
    """Inside this block, tool calls get a digest of their input only when `keep`."""
    token = _argument_digests.set(keep)
    try:
        yield
    finally:
        _argument_digests.reset(token)


# The first character of a JSON text, after its whitespace ("" for none: no value).
_JSON_STARTS = frozenset('{["-0123456789tfn')


@hashable_record  # not frozen: one per call (attribution.Observation)
class ToolArguments:
    """A tool call's input as every writer shows it: its keys, a capped preview per key,
    its size in UTF-8 bytes and a digest of the whole input. The size is of the same text
    `estimate.tool_call_text` measures in context (a string as it is, anything else as
    compact JSON, guarded against nesting orjson cannot write), so the two never disagree."""

    keys: tuple[str, ...] = ()
    preview: tuple[tuple[str, str], ...] = ()
    bytes: int = 0
    digest: str = ""
    target: str = ""  # targets.raw_target: what the call acts on, made safe by its Session

    @classmethod
    def of(
        cls, arguments: object, *, decode: bool = False, text: str | None = None
    ) -> ToolArguments:
        """Measure `arguments`. With `decode`, a string argument is the JSON text of the
        arguments (Codex function calls, Muse): its keys come from the decoded object.
        `text`: `estimate.tool_call_text("", arguments)`, when the caller has made it."""
        if text is None:
            text = tool_call_text("", arguments)
        decoded: object = arguments
        if decode and isinstance(arguments, str):
            # Text no JSON value starts with (a redaction marker, a patch) is refused
            # without asking orjson, whose refusal builds an exception in Python.
            if arguments.lstrip(" \t\n\r")[:1] not in _JSON_STARTS:
                decoded = None
            else:
                try:
                    decoded = orjson.loads(arguments)
                except ValueError:
                    decoded = None
        keys: tuple[str, ...] = ()
        previews: tuple[tuple[str, str], ...] = ()
        keep = _argument_previews.get()
        if isinstance(decoded, dict):
            keys = tuple(map(str, decoded))
            # One object for a tool's calls' keys (a long session held one per call).
            kept = _KEYS.get(keys)
            if kept is None:
                if len(_KEYS) >= _MAX_KEYS:
                    _KEYS.clear()
                kept = _KEYS[keys] = keys
            keys = kept
            if keep:
                previews = tuple(
                    (str(k), preview(v if isinstance(v, str) else json_text(v)))
                    for k, v in decoded.items()
                )
        elif text and keep:
            previews = (("input", preview(text)),)
        return cls(
            keys,
            previews,
            len(text) if text.isascii() else len(text.encode()),  # UTF-8 bytes
            args_digest(decoded if decoded is not None else text)
            if _argument_digests.get()
            else "",
            shared(raw_target(decoded)),  # (a program or a file: most calls repeat one)
        )


# The key tuples made so far (`ToolArguments.of`): at most this many, a long session's
# memory flat (made afresh when full).
_MAX_KEYS = 4096
_KEYS: dict[tuple[str, ...], tuple[str, ...]] = {}


@record
class RequestDraft:
    """A request while its journal is read: its end and its usage come with later records."""

    id: str
    start_ns: int
    end_ns: int
    model: str
    usage: Usage | None = None
    prompt_id: str | None = None
    stop_reason: str | None = None
    web_searches: int = 0  # server-side searches among its output items

    def finish(self, *, prompt_id: str | None = None) -> Response:
        """The model's response; `prompt_id` when the turn is known only at the end."""
        if self.usage is None:
            raise ValueError(f"request {self.id} has no usage yet: it is not a response")
        # By position (see ToolDraft.finish): id, start_ns, end_ns, model, usage,
        # prompt_id, is_error, stop_reason, output_tokens_reliable, usage_known,
        # price_context, web_searches.
        return Response(
            self.id,
            self.start_ns,
            max(self.end_ns, self.start_ns),
            self.model,
            self.usage,
            prompt_id or self.prompt_id,
            False,
            self.stop_reason,
            True,
            True,
            "",
            self.web_searches,
        )


def add_tool_result(log: ContextLog, call_id: str, text: str, label: str = "Tool result") -> str:
    """A tool call's result enters the context as one item, `result:<id>` (or replaces
    it: a result sent otherwise later, `label` saying how). Returns its id."""
    item_id = f"result:{call_id}"
    log.add(
        item_id,
        _RESULTS,
        text,
        label=label,
        source_id=call_id,
        source_kind=_TOOL,
    )
    return item_id


def add_tool_call(
    log: ContextLog,
    call_id: str,
    name: str,
    arguments: object,
    text: str | int | None = None,
    *,
    tokens: int | None = None,
) -> str:
    """A tool call enters the context as one assistant item, `call:<id>`, measured as
    `estimate.tool_call_text` says (`text`, when the caller has made it; its characters
    with its `tokens`, when the caller has measured it already). Returns the item's id."""
    item_id = f"call:{call_id}"
    log.add(
        item_id,
        _ASSISTANT,
        tool_call_text(name, arguments) if text is None else text,
        label="Tool arguments",
        source_id=call_id,
        source_kind=_TOOL,
        tokens=tokens,
    )
    return item_id


@record
class ToolDraft:
    """A tool call while its journal is being read: the result (and with it the end, the
    error flag and the result size) arrives later, or never."""

    call_id: str
    name: str
    start_ns: int
    response_id: str | None
    prompt_id: str | None
    arguments: ToolArguments = ToolArguments()  # shared by every draft, never changed
    end_ns: int | None = None
    is_error: bool = False
    result_chars: int = 0
    child_session: str | None = None

    def finish(
        self,
        response_ids: Container[str],
        end_ns: int,
        *,
        start_ns: int | None = None,
        incomplete: bool | None = None,
        timing: str = "",
        child_session: str | None = None,
        by_model: bool = True,
    ) -> ToolCall:
        """The model's call. `end_ns` is where it ends (the harness decides: its result,
        a measured duration, the end of the journal); never before its start. A response
        id that did not become a response (not a request) is not linked. `child_session`
        is the subagent the harness linked elsewhere, when the draft names none."""
        start = self.start_ns if start_ns is None else start_ns
        # By position, in ToolCall's field order (a class called with keywords builds a
        # dict of them: ~1,200 instructions a call); tests/adapters/test_rules_drafts.py
        # holds the order.
        return ToolCall(
            self.call_id,
            self.name,
            start,  # start_ns
            max(end_ns, start),  # end_ns
            self.response_id if self.response_id in response_ids else None,
            self.prompt_id,
            self.is_error,
            self.end_ns is None if incomplete is None else incomplete,  # incomplete
            self.arguments.keys,  # arg_keys
            self.arguments.bytes,  # arg_bytes
            self.arguments.preview,  # args_preview
            self.arguments.digest,  # args_digest
            self.arguments.target,  # target
            self.result_chars,
            self.child_session or child_session,
            timing,
            by_model,
        )


@record
class CompactionDraft:
    """A compaction while its journal is being read: its start may move earlier once the
    summarisation request is found, and its sizes may come with a later record."""

    id: str
    start_ns: int
    end_ns: int
    kind: str = "compaction"
    trigger: str | None = None
    pre_tokens: int | None = None
    post_tokens: int | None = None
    removed_items: int = 0
    request: Response | None = None
    timing: str = ""

    def finish(self) -> Compaction:
        return Compaction(
            id=self.id,
            start_ns=min(self.start_ns, self.end_ns),
            end_ns=self.end_ns,
            kind=self.kind,
            trigger=self.trigger,
            pre_tokens=self.pre_tokens,
            post_tokens=self.post_tokens,
            removed_items=self.removed_items,
            timing=self.timing,
            request=self.request,
        )


def finish_prompts(
    prompts: Sequence[Prompt],
    responses: Iterable[Response],
    tools: Iterable[ToolCall],
    *,
    first_from_agent: bool = False,
    ends_at_least: Mapping[str, int | None] | None = None,
) -> tuple[Prompt, ...]:
    """Each prompt lasts until the last response or tool call of its turn has ended (and at
    least until `ends_at_least`, a harness's own record of the turn's end). In a subagent
    (`first_from_agent`: its first prompt is its task) no user types: every prompt's source
    is the agent (a later one is the parent's follow-up, e.g. Codex's `send_input`), unless
    the adapter named another one than `user` (`harness`: the runtime's own words)."""
    ends = turn_ends(responses, tools)
    floors = ends_at_least or {}
    return tuple(
        ended(
            p,
            max(floors.get(p.id) or 0, ends.get(p.id, p.start_ns), p.start_ns),
            "agent" if first_from_agent and p.source == "user" else p.source,
        )
        for p in prompts
    )


def ended(prompt: Prompt, end_ns: int, source: str) -> Prompt:
    """`dataclasses.replace(prompt, end_ns=end_ns, source=source)`, made directly: the
    generic replace cost 500 bytecodes a prompt (4% of reading a Claude Code journal).
    A test holds the two to the same result over every field of `Prompt`."""
    return Prompt(prompt.id, prompt.start_ns, end_ns, prompt.chars, source, prompt.preview)
