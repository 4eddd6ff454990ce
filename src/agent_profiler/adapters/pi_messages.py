"""What each Pi message does to the session being read (`pi.SessionBuilder`): a user
prompt, an extension's message, an assistant message (one request, its usage, its tool
calls), a tool result, a user `!` command; and the draft of a tool call.

Separate from `pi.py`, which owns the session's state, its entry tree, compactions and
the finished `Session`: these functions read one message each and change that state
through the builder's public fields (the builder calls the one of its role,
`ROLE_HANDLERS`, for every message entry)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_profiler.adapters.common import json_text, preview, recorded_usd, text_field
from agent_profiler.adapters.drafts import ToolArguments, ToolDraft, keeps_previews
from agent_profiler.adapters.pi_records import (
    SECTIONS,
    bash_execution_text,
    system_update,
    text_blocks,
)
from agent_profiler.adapters.pi_tree import Entry, measured_part
from agent_profiler.attribution import Item, Observation
from agent_profiler.estimate import tool_call_text
from agent_profiler.model import (
    AnchorKind,
    Category,
    Prompt,
    Response,
    SourceKind,
    Stage,
    Usage,
    shared,
)
from agent_profiler.records import record

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent_profiler.adapters.pi import SessionBuilder

_FAILED_STOPS = frozenset({"error", "aborted"})
# The entries a `context_edit` may change (Pi's own refuses others): a message (its role
# among user, assistant, toolResult: appendContextEdit), an extension's message.
_EDITABLE = frozenset({"message", "custom_message"})
_MAX_TOKENS = 10**15  # common.token_count: beyond it a "token count" is damage
_RESPONSE, _TRANSCRIPT = AnchorKind.RESPONSE, Stage.TRANSCRIPT_OBSERVED  # a request's observation
# The enum members every message names, as globals: in CPython 3.11 `Category.ASSISTANT`
# is an attribute of a class, looked up the generic way each time (a global is cached).
_ASSISTANT, _RESULTS = Category.ASSISTANT, Category.RESULTS
_FROM_RESPONSE, _FROM_TOOL, _FROM_NONE = SourceKind.RESPONSE, SourceKind.TOOL, SourceKind.NONE


@record
class Tool(ToolDraft):
    from_failed_response: bool = False
    moved_on_ns: int | None = None  # the next entry after the call, when no result came


def on_bash_execution(builder: SessionBuilder, entry: Entry, message: dict[str, Any]) -> None:
    if not message.get("excludeFromContext"):
        text = bash_execution_text(message)
        entry.parts = (
            measured_part(f"{entry.id}:bash", Category.RESULTS, text, "User shell command (!)"),
        )


def on_user(builder: SessionBuilder, entry: Entry, message: dict[str, Any]) -> None:
    texts, images = text_blocks(message.get("content"))
    if images:
        builder.unmeasured["image"] += images
    entry.parts = tuple(
        measured_part(
            f"{entry.id}:{index}",
            Category.PROMPTS,
            text,
            "User prompt",
            "",
            SourceKind.PROMPT,
        )
        for index, text in texts
    )
    if (texts or images) and builder.fork_ns is None:  # (a copied prompt is the source's)
        start = builder.message_time(message, entry)
        chars = sum(len(text) for _, text in texts)
        first = texts[0][1] if texts else ""
        shown = preview(first) if keeps_previews() else ""  # (a long session held them all)
        builder.prompts.append(Prompt(entry.id, start, start, chars, "user", shown))
        entry.prompt_id = entry.id


def extension_message(builder: SessionBuilder, entry: Entry, value: dict[str, Any]) -> None:
    texts, images = text_blocks(value.get("content"))
    if images:
        builder.unmeasured["image"] += images
    label = f"Extension message ({text_field(value, 'customType') or '?'})"
    entry.parts = tuple(
        measured_part(f"{entry.id}:{index}", Category.ENVIRONMENT, text, label)
        for index, text in texts
    )


def on_system(builder: SessionBuilder, entry: Entry, message: dict[str, Any]) -> None:
    """A system-prompt update (v0.80+): the first holds the whole prompt and every tool
    declaration, later ones what changed. As pi-ai replays them: a section or a tool
    declared again replaces the earlier one of its name, a removed one leaves, and a
    replacement's text supersedes every earlier update's text (`builder.system_items`).
    Across branches this is an approximation: an update drops what it replaces from the
    entry that held it, on every branch."""
    update = system_update(message)
    held = builder.system_items
    label = "System prompt update" if held else "System prompt"
    if update.replaces:
        for key in [k for k in held if k.startswith("text:")]:
            _drop(builder, key)
    parts: list[Item] = []

    def add(key: str, item_id: str, category: Category, text: str, what: str) -> None:
        _drop(builder, key)
        parts.append(measured_part(f"{entry.id}:{item_id}", category, text, what))
        held[key] = (entry.id, parts[-1].id)

    for index, text in update.texts:
        add(f"text:{entry.id}:{index}", str(index), Category.SYSTEM, text, label)
    for name, section in update.sections:
        if section is None:
            _drop(builder, f"section:{name}")
        else:
            category, what = SECTIONS.get(name, (Category.SYSTEM, label))
            add(f"section:{name}", f"section:{name}", category, section, what)
    for name in update.removed:
        _drop(builder, f"tool:{name}")
    for name, declaration in update.added:
        add(
            f"tool:{name}",
            f"tool:{name}",
            Category.TOOLS,
            json_text(declaration),
            "Tool definition",
        )
    entry.parts = tuple(parts)


def on_checkpoint(builder: SessionBuilder, entry: Entry, message: object) -> tuple[Item, ...]:
    """A compaction's `systemMessage` (Pi 0.87+): the whole prompt and tool set as of the
    compaction, sent before its summary. It supersedes every earlier `system` message, kept
    or not (`buildContextEntries` leaves them out): those items leave, its own enter as the
    compaction entry's parts. Without one, the items of earlier `system` messages stay
    (`SessionBuilder.on_compaction`): the prompt and tools are sent with every request."""
    if not isinstance(message, dict):
        return ()
    for key in list(builder.system_items):
        _drop(builder, key)
    on_system(builder, entry, message)
    return entry.parts


def _drop(builder: SessionBuilder, key: str) -> None:
    """The item an update replaces or removes leaves the context, and its entry."""
    held = builder.system_items.pop(key, None)
    if held is None:
        return
    entry_id, item_id = held
    entry = builder.entries.get(entry_id)
    if entry is not None:
        entry.parts = tuple(p for p in entry.parts if p.id != item_id)
    builder.log.remove(item_id)


def on_developer(builder: SessionBuilder, entry: Entry, message: dict[str, Any]) -> None:
    """Instructions sent as the developer (v0.80+): System instructions."""
    texts, images = text_blocks(message.get("content"))
    if images:
        builder.unmeasured["image"] += images
    entry.parts = tuple(
        measured_part(f"{entry.id}:{index}", Category.SYSTEM, text, "Developer instructions")
        for index, text in texts
    )


USAGE_COUNTS = ("input", "cacheRead", "cacheWrite", "output")  # what `_usage` reads


def _usage(usage: object) -> tuple[int, int, int, int]:
    """input, cacheRead, cacheWrite and output, each read as `common.token_count` does
    (the check inlined: four calls per request otherwise)."""
    if not isinstance(usage, dict):
        return 0, 0, 0, 0
    fresh = usage.get("input")
    cache_read = usage.get("cacheRead")
    cache_write = usage.get("cacheWrite")
    output = usage.get("output")
    return (
        fresh if type(fresh) is int and 0 <= fresh < _MAX_TOKENS else 0,
        cache_read if type(cache_read) is int and 0 <= cache_read < _MAX_TOKENS else 0,
        cache_write if type(cache_write) is int and 0 <= cache_write < _MAX_TOKENS else 0,
        output if type(output) is int and 0 <= output < _MAX_TOKENS else 0,
    )


def on_assistant(builder: SessionBuilder, entry: Entry, message: dict[str, Any]) -> None:
    fresh, cache_read, cache_write, output = _usage(message.get("usage"))
    prompt_tokens = fresh + cache_read + cache_write
    # `text_field`, inlined: one call each for every request otherwise.
    stop = message.get("stopReason")
    if not isinstance(stop, str):
        stop = None
    failed = stop in _FAILED_STOPS
    model = message.get("model")
    if not isinstance(model, str):
        model = ""
    response_id = entry.id
    parts: list[Item] = []
    content = message.get("content")
    for index, block in enumerate(content if isinstance(content, list) else ()):
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "toolCall":
            part = on_tool_call(
                builder,
                block,
                f"{response_id}:{index}",
                entry,
                response_id if prompt_tokens else None,
                failed,
            )
            if part is not None:
                parts.append(part)
        elif kind == "text":
            text = block.get("text")
            if isinstance(text, str):
                parts.append(
                    measured_part(
                        f"{response_id}:{index}",
                        _ASSISTANT,
                        text,
                        "Assistant text",
                        response_id,
                        _FROM_RESPONSE,
                    )
                )
        elif kind == "thinking":
            thinking = text_field(block, "thinking") or ""
            if block.get("redacted"):
                builder.unmeasured["redacted-thinking"] += 1
            elif thinking:
                parts.append(
                    measured_part(
                        f"{response_id}:{index}",
                        _ASSISTANT,
                        thinking,
                        "Thinking",
                        response_id,
                        _FROM_RESPONSE,
                    )
                )
            elif text_field(block, "thinkingSignature"):
                builder.unmeasured["encrypted-reasoning"] += 1
    if not failed:
        entry.parts = tuple(parts)  # Pi does not replay a failed message
    if builder.fork_ns is not None:
        # Copied into a fork from its source: in its context, but the source's request.
        builder.inherited_requests += 1
        return
    start = builder.message_time(message, entry)
    # By position, each field named (keywords cost ~1,200 instructions a call; here and
    # in measured_part's calls, one per context part).
    response = Response(
        response_id,  # id
        min(start, entry.time_ns),  # start_ns
        entry.time_ns,  # end_ns
        model,
        # usage: prompt, input, output, cache read and cache write tokens
        Usage(prompt_tokens, fresh, output, cache_read, cache_write),
        entry.prompt_id,
        failed,  # is_error
        stop,  # stop_reason
        True,  # output_tokens_reliable
        True,  # usage_known
        "",  # price_context
        0,  # web_searches
        recorded_usd(message.get("usage"), "cost", "total"),
    )
    if not prompt_tokens:
        builder.unmeasured_requests.append(response)
        return
    # The request was sent with the context of its parent's branch.
    _sent(builder, response, entry.parent)
    provider = text_field(message, "provider")
    if provider and provider not in builder.providers:
        builder.providers.append(provider)
    builder.requests_by_level[entry.thinking_level or "unknown"] += 1


def _sent(builder: SessionBuilder, response: Response, leaf: str | None) -> None:
    """A measured request, sent with the context of the branch that ends at `leaf`: its
    snapshot observed at its start, its model listed."""
    builder.apply(*builder.branch.move_to(leaf))
    # (`Observation.request`'s fields by position, without its frame: once a request;
    # the model is the one object of that name, model.shared)
    model = response.model
    builder.log.observe(
        Observation(
            response.start_ns,
            _RESPONSE,
            response.id,
            _TRANSCRIPT,
            model or None,
            response.usage.prompt_tokens,
        )
    )
    builder.responses.append(response)
    if model and model not in builder.models:
        builder.models.append(model)


def on_tool_call(
    builder: SessionBuilder,
    block: dict[str, Any],
    item_id: str,
    entry: Entry,
    response_id: str | None,
    failed: bool,
) -> Item | None:
    call_id = block.get("id")  # `text_field`, inlined (every call)
    if not call_id or not isinstance(call_id, str):
        return None
    name = block.get("name")
    if not name or not isinstance(name, str):
        name = "tool"
    name = shared(name)  # (its calls' one object: a long session held one per call)
    arguments = block.get("arguments")
    # Made once: tool_call_text(name, a) is name + tool_call_text("", a).
    arguments_text = tool_call_text("", arguments)
    text = name + arguments_text
    if call_id not in builder.tools and builder.fork_ns is None:  # (a copied call ran before)
        tool = Tool(
            call_id,
            name,
            entry.time_ns,  # tools run once the whole message is in
            response_id,
            entry.prompt_id,
            ToolArguments.of(arguments, text=arguments_text),
            None,  # end_ns
            False,  # is_error
            0,  # result_chars
            None,  # child_session
            failed,  # from_failed_response (by position: a keyword built a dict per call)
        )
        builder.tools[call_id] = tool
        builder.open_tools.append(tool)
    return measured_part(
        item_id,
        _ASSISTANT,
        text,
        "Tool arguments",
        call_id,
        _FROM_TOOL,
    )


def on_tool_result(builder: SessionBuilder, entry: Entry, message: dict[str, Any]) -> None:
    call_id = text_field(message, "toolCallId") or ""
    tool = builder.tools.get(call_id)
    if tool is not None:
        call_id = tool.call_id  # one string for the call and its result's part
    texts, images = text_blocks(message.get("content"))
    if images:
        builder.unmeasured["image"] += images
    # Nearly always one text block: taken as it is rather than joined.
    joined = texts[0][1] if len(texts) == 1 else "".join(text for _, text in texts)
    chars = len(joined)
    entry.parts = (
        measured_part(
            f"{entry.id}:result",
            _RESULTS,
            joined,
            "Tool result",
            call_id,
            _FROM_TOOL if call_id else _FROM_NONE,
        ),
    )
    if tool is None:
        if builder.fork_ns is None:  # (a fork's copied result has its call copied too)
            builder.diagnostics.note("pi:result-without-call")
        return
    tool.end_ns = max(builder.message_time(message, entry), tool.start_ns)
    tool.is_error = message.get("isError") is True
    tool.result_chars = chars
    if tool in builder.open_tools:
        builder.open_tools.remove(tool)


def on_usage(builder: SessionBuilder, entry: Entry, value: dict[str, Any], line: int) -> None:
    """`usage {kind, provider, model, usage}` (v1.6): a model request outside the
    conversation, its usage only. Pi's cache warmer writes one (`cache_warm`) for each
    request that re-sent the last request's context as it was sent, to keep its prompt
    cache (sdk.ts `streamFn` → `CacheWarmer.start`): billed and sized as any request, with
    that request's context (its parent's branch). Its kind is its stop reason."""
    if builder.fork_ns is not None:
        return  # the source's, before the fork
    fresh, cache_read, cache_write, output = _usage(value.get("usage"))
    prompt_tokens = fresh + cache_read + cache_write
    model = text_field(value, "model") or ""
    response = Response(
        entry.id,
        entry.time_ns,
        entry.time_ns,
        model,
        Usage(prompt_tokens, fresh, output, cache_read, cache_write),
        entry.prompt_id,
        stop_reason=text_field(value, "kind") or "usage",
        recorded_usd=recorded_usd(value.get("usage"), "cost", "total"),
    )
    if not prompt_tokens:
        builder.unmeasured_requests.append(response)
        return
    sent = {r.id for r in (*builder.responses, *builder.unmeasured_requests)}
    last = entry.parent  # (the last request on the branch: its entry)
    while last is not None and last not in sent:
        last = builder.entries[last].parent
    _sent(builder, response, builder.entries[last].parent if last else entry.parent)


def summary_request(entry: Entry, value: dict[str, Any], start: int) -> Response | None:
    """The request that wrote a compaction's summary (v1.6 `usage`: the summariser's calls,
    added together when it also summarised a split turn, compaction.ts), when recorded:
    its usage and cost; the entry names no model."""
    usage = value.get("usage")
    fresh, cache_read, cache_write, output = _usage(usage)
    if not (fresh or cache_read or cache_write or output):
        return None
    return Response(
        f"{entry.id}:summary",
        start,
        entry.time_ns,
        "",
        Usage(fresh + cache_read + cache_write, fresh, output, cache_read, cache_write),
        entry.prompt_id,
        recorded_usd=recorded_usd(usage, "cost", "total"),
    )


def on_context_edit(
    builder: SessionBuilder, entry: Entry, value: dict[str, Any], line: int
) -> None:
    """`context_edit {targetId, replacement}` (v1.6: Pi's own, for a retried or truncated
    attempt and its results; an extension's): from here on the branch sends the target
    without its content (`replacement: null`) or with `replacement.content` instead, the
    latest edit of it in the context in force (session-manager.ts `projectContextEntry`).
    The replacement is measured as the target's first part is labelled."""
    target = builder.entries.get(text_field(value, "targetId") or "")
    if target is None or target is entry:
        builder.warn(line, "context_edit of no earlier entry; not read")
        return
    if target.kind not in _EDITABLE:  # (Pi's appendContextEdit refuses it)
        builder.warn(
            line, f"context_edit of a {target.kind} entry, which Pi does not edit; not read"
        )
        return
    entry.target = target.id
    if target.edits is None:
        target.edits = []
    target.edits.append(entry.id)
    builder.branch.edited = True
    replacement = value.get("replacement")
    content = replacement.get("content") if isinstance(replacement, dict) else None
    if content is None:
        return  # out of the context
    if target.parts:
        base = target.parts[0]
        category, label, source = base.category, base.label, (base.source_id, base.source_kind)
    elif target.kind == "custom_message":  # (its images only, say)
        category, label, source = Category.ENVIRONMENT, "Extension message", ("", _FROM_NONE)
    elif target.prompt_id == target.id:  # a prompt of images only
        category, label, source = Category.PROMPTS, "User prompt", ("", SourceKind.PROMPT)
    else:
        return  # a failed answer: Pi does not replay it, edited or not
    texts, images = text_blocks(content)
    if images:
        builder.unmeasured["image"] += images
    if isinstance(content, list):  # what else an assistant's content holds
        for block in content:
            if isinstance(block, dict) and block.get("type") == "thinking":
                texts.append((0, text_field(block, "thinking") or ""))
            elif isinstance(block, dict) and block.get("type") == "toolCall":
                name = text_field(block, "name") or "tool"
                texts.append((0, tool_call_text(name, block.get("arguments"))))
    text = "".join(text for _, text in texts)
    entry.parts = (measured_part(f"{entry.id}:edit", category, text, f"{label} (edited)", *source),)


# What each message role does (pi_records.MESSAGE_ROLES): a table, not an if-chain, as
# every message entry goes through it (`pi.SessionBuilder.on_record`); a role not in it is
# not recognised.
ROLE_HANDLERS: dict[str, Callable[[SessionBuilder, Entry, dict[str, Any]], None]] = {
    "user": on_user,
    "assistant": on_assistant,
    "toolResult": on_tool_result,
    "bashExecution": on_bash_execution,
    "custom": extension_message,
    "hookMessage": extension_message,
    "system": on_system,
    "developer": on_developer,
}
