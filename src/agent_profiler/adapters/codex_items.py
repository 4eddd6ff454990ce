"""What a Codex `response_item` line does to the rollout being read (`RolloutBuilder`): a
message's blocks, reasoning, a tool's call and output, a web search, each an item of the
context, an output item the start of a request; and a `compacted` line, whose replacement
history is such items again (FORMATS.md §3).

Separate from `codex_rollout.py`, which holds the state, the requests and the finished
`Session`, and from `codex_events.py`, the `event_msg` lines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_profiler.adapters.codex_agents import (
    as_communication,
    communication,
    on_agent_message_item,
    spawn_output,
)
from agent_profiler.adapters.codex_records import (
    CALL_ITEMS,
    ENCRYPTED_SUMMARIES,
    OUTPUT_ITEMS,
    READ,
    REDACTION_SHA,
    RESPONSE_ITEM_TYPES,
    RESULT_ITEMS,
    SKIPPED,
    classify,
    exit_code,
    listed_texts,
    measure,
    output_text,
    parts_text,
    still_running,
)
from agent_profiler.adapters.codex_rollout import (
    ASSUMED_BUDGET,
    CONTEXT_CATEGORIES,
    Compaction,
    RolloutBuilder,
    Tool,
    sent_items,
    sent_output,
    sent_size,
)
from agent_profiler.adapters.common import json_text
from agent_profiler.adapters.drafts import ToolArguments
from agent_profiler.attribution import Observation
from agent_profiler.estimate import tool_call_text
from agent_profiler.model import Category, SourceKind

# As globals: an enum's member read through its class (`Category.PROMPTS`) goes through
# EnumType's `__getattr__` hook in CPython 3.11, about 800 instructions, where a global is
# cached; these are read a few times for every item of a rollout.
_PROMPTS, _UNATTRIBUTED, _ASSISTANT = Category.PROMPTS, Category.UNATTRIBUTED, Category.ASSISTANT
_RESULTS, _TOOLS = Category.RESULTS, Category.TOOLS
_PROMPT, _FROM_RESPONSE, _TOOL, _NONE = (
    SourceKind.PROMPT,
    SourceKind.RESPONSE,
    SourceKind.TOOL,
    SourceKind.NONE,
)


def on_response_item(
    builder: RolloutBuilder,
    item: dict[str, Any],
    ts: int,
    line: int | None = None,
    prefix: str = "item",
) -> None:
    """A `response_item` line, or (`prefix`: the compaction's id) an item of a compaction's
    replacement history."""
    kind = item.get("type")
    if kind.__class__ is not str:
        kind = None  # a damaged item: no type (and perhaps an unhashable one)
    replayed = prefix != "item"  # an item of a compaction's replacement history
    if kind == "message" and item.get("role") == "assistant":
        sent = as_communication(item)  # another agent's message, stored as the model's
        if sent is not None:
            communication(builder, sent, ts, prefix)
            return
    if not replayed and (
        kind in OUTPUT_ITEMS or (kind == "message" and item.get("role") == "assistant")
    ):
        if builder.pending is None:
            builder.start_request(ts)
        else:
            builder.pending.end_ns = ts  # (its last output item so far: `abort_request`)
    # What each item type does: a dict looked up once per item, not an if-chain.
    if kind is not None and (handler := _ITEM_HANDLERS.get(kind)) is not None:
        handler(builder, item, ts, prefix, kind)
    elif kind in ENCRYPTED_SUMMARIES:
        builder.unmeasured["encrypted-compaction-summary"] += 1
    elif kind == "image_generation_call":
        builder.unmeasured["generated-image"] += 1
    elif RESPONSE_ITEM_TYPES.get(kind or "", (READ, ""))[0] == SKIPPED:
        builder.diagnostics.skip(f"codex:response_item/{kind}")
    else:
        builder.diagnostics.not_recognised(
            f"codex:response_item/{kind or 'untyped'}", builder.path, line
        )


def _on_message(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    role = item.get("role")
    role = role if isinstance(role, str) and role else "user"
    if role == "system":  # never sent: codex-rs `is_api_message` leaves it out
        if prefix == "item":
            builder.diagnostics.skip("codex:response_item/message/system")
        return
    stem = f"{prefix}-{role}"
    start, prompted = len(builder.order), False
    for index, text in enumerate(parts_text(item.get("content"))):
        measured = measure(text, builder.impossible)  # (`builder.measure`'s own call)
        if measured[1] and role == "user":  # redacted
            sha = REDACTION_SHA.search(text, 0, 80)
            if sha and sha.group(1) in builder.prompt_sha:
                category, label = _PROMPTS, "User prompt"
            else:
                # A redacted user-role block could be a prompt, AGENTS.md or an
                # environment block: the marker does not say which.
                category, label = _UNATTRIBUTED, "Redacted user-role block"
        else:
            category, label = classify(role, text)
        prompted = prompted or category is _PROMPTS
        builder.item_index += 1
        item_id = f"{stem}:{builder.item_index}:{index}"
        if category in CONTEXT_CATEGORIES:
            builder.context_block(item_id, replayed=prefix != "item")
        elif category is _PROMPTS and prefix == "item":
            builder.prompted = True
        kind_of_source = (
            _PROMPT if category is _PROMPTS else (_FROM_RESPONSE if role == "assistant" else _NONE)
        )
        builder.add_text(
            item_id,
            category,
            text,
            label,
            source_kind=kind_of_source,
            measured=measured,
        )
    if prefix == "item":
        _count_images(builder, item.get("content"))
    if prompted and role == "user":
        builder.boundaries.append(start)  # a real prompt opens a user turn (a rollback's unit)
    if role == "user" and prefix == "item":
        builder.trigger_ns = ts


def _count_images(builder: RolloutBuilder, content: object) -> None:
    """An image in a message or a tool's output (`input_image`: a pasted screenshot,
    `view_image`'s result) has no text to measure and no size in the journal: it is
    counted as unmeasured, not dropped as if it were nothing."""
    if isinstance(content, list):  # once per message and output: a loop, not a generator
        images = 0
        for part in content:
            if part.__class__ is dict and part.get("type") in _IMAGE_PARTS:
                images += 1
        if images:
            builder.unmeasured["image"] += images


# A tuple: a part's `type` may be any JSON value (a list is unhashable: a set's `in` raised).
_IMAGE_PARTS = ("input_image", "output_image", "image")


def _on_reasoning(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    # The summary and the text are parts of the reasoning item: they leave the context with
    # it, at the next user prompt (`end_turn_reasoning`).
    summary = parts_text(item.get("summary"))
    if summary:
        builder.reasoning_in_turn += builder.response_parts(
            summary, f"{prefix}-reasoning", "Reasoning summary"
        )
    raw = parts_text(item.get("content"))  # raw reasoning text (open models)
    if raw:
        builder.reasoning_in_turn += builder.response_parts(
            raw, f"{prefix}-reasoning-text", "Reasoning"
        )
    elif prefix == "item":
        builder.hidden_reasoning(encrypted=bool(item.get("encrypted_content")))
    elif item.get("encrypted_content"):
        builder.unmeasured["encrypted-reasoning"] += 1  # replayed: no usage tells its size


def _on_agent_message(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    # Another agent's message to this one, not this model's output (codex_agents).
    on_agent_message_item(builder, item, ts, prefix)


def _on_search_call(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    action = item.get("action")
    query = action.get("query") if isinstance(action, dict) else None
    query = query if isinstance(query, str) else None  # (a set member below)
    if prefix == "item" and builder.pending is not None:
        builder.pending.web_searches += 1  # billed per search, beside the tokens
    # Its `web_search_end` names it by the query, or the page an `open_page` opened.
    said = {query, action.get("url") if isinstance(action, dict) else None}
    found = next((e for e in builder.searches if e[0] and e[0] in said), None)
    if found is None:  # an end that named nothing: the first such end before it
        found = next((e for e in builder.searches if not e[0]), None)
    call_id = ""
    if found is not None:  # each end names one item: a search made twice links each once
        builder.searches.remove(found)
        call_id = found[1]
    item_id = builder.next_id(f"{prefix}-search")
    if not call_id and prefix == "item":
        # No `web_search_end` came before it (Codex Desktop 0.104 writes none): the item is
        # the only record of the search, and the search a tool call all the same (7 in one
        # corpus rollout were in no count). Named by its item's number: the items after it
        # keep theirs.
        call_id = "web-search:" + item_id.rpartition(":")[2]
        request = builder.pending
        builder.tools[call_id] = Tool(
            call_id,
            "web_search",
            ts,
            request.id if request else None,
            builder.current_prompt,
            ToolArguments.of({"query": query} if isinstance(query, str) and query else {}),
            end_ns=ts,
            is_error=item.get("status") == "failed",
        )
    builder.add_text(
        item_id,
        Category.RESULTS,
        json_text(action) if action else "",
        "Web search",
        source_id=call_id,
        source_kind=SourceKind.TOOL if call_id else SourceKind.NONE,
    )


def _on_definitions(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    # Client-side tool search: the definitions it found join the model's tools.
    _on_output(builder, item, ts, prefix, kind, definitions=True)


def _on_additional_tools(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    """Tool definitions sent in the input (Responses Lite models: the first request's whole
    list, later ones what was added or changed; codex-rs `top_level_tools`): their JSON,
    as the model is sent it."""
    tools = item.get("tools")
    if not isinstance(tools, list) or not tools:
        return
    item_id = item.get("id")
    if not isinstance(item_id, str):
        builder.item_index += 1
        item_id = f"{prefix}-tools:{builder.item_index}"
    text = json_text(tools)
    builder.add_text(item_id, Category.TOOLS, text, "Tool definitions (in the input)")


def _on_call(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str, kind: str
) -> None:
    call_id = item.get("call_id") or item.get("id")
    name = item.get("name")
    if not isinstance(name, str):
        name = "tool_search" if kind == "tool_search_call" else kind
    # `item.get("arguments", item.get("input", item.get("action")))`, asking once.
    if "arguments" in item:
        arguments = item["arguments"]
    elif "input" in item:
        arguments = item["input"]
    else:
        arguments = item.get("action")
    if not isinstance(call_id, str):
        call_id = builder.next_id("call")
    # Made once: tool_call_text(name, a) is name + tool_call_text("", a).
    text = tool_call_text(name, arguments)
    # A sanitiser may have replaced the name or the arguments by a `[REDACTED_… len=N]`
    # marker (`[REDACTED_NAME …]`, `[REDACTED_ARGUMENTS …]`, `[REDACTED_INPUT …]`): each
    # counts as its N, as a redacted message or output does (else the text is measured),
    # and marked arguments are as large as they state. Without a marker in the text, none.
    measured = stated = None
    if "[REDACTED_" in text:
        # (a name measured only when a marker may start it: most are plain names)
        name_chars, name_redacted = builder.measure(name) if name[:1] == "[" else (len(name), False)
        chars, redacted = measure(
            arguments if isinstance(arguments, str) else text[len(name) :], builder.impossible
        )
        if name_redacted or redacted:
            measured = (name_chars + chars, True)
        if redacted and isinstance(arguments, str):
            stated = chars
    builder.add_text(
        f"call:{call_id}",
        _ASSISTANT,
        text,
        "Tool arguments",
        source_id=call_id,
        source_kind=_TOOL,
        measured=measured,
    )
    if prefix == "item" and call_id not in builder.tools:
        request = builder.pending
        # A function call's arguments are a JSON string; a custom tool's input is text.
        # A redaction marker is no JSON: not decoded, which measures it the same way
        # without orjson raising (and Python building) an exception per call.
        decode = kind == "function_call" and not (
            isinstance(arguments, str) and arguments.startswith("[REDACTED_")
        )
        given = ToolArguments.of(
            arguments,
            decode=decode,
            text=arguments if isinstance(arguments, str) else text[len(name) :],
        )
        if stated is not None:  # the size of what the marker replaced, as in the context
            given.bytes = stated  # (made here and not yet shared: `replace` cost 2% of reading)
        builder.tools[call_id] = Tool(
            call_id,
            name,
            ts,
            request.id if request else None,
            builder.current_prompt,
            given,
        )


def _on_output(
    builder: RolloutBuilder,
    item: dict[str, Any],
    ts: int,
    prefix: str,
    kind: str = "",
    *,
    definitions: bool = False,
) -> None:
    call_id = item.get("call_id")
    if not isinstance(call_id, str):
        call_id = builder.next_id("output")
    output = item.get("output")
    # (a list of content items read once: its texts joined are the output's text)
    listed = None if definitions else listed_texts(output)
    if definitions:
        text = json_text(item.get("tools") or [])
    else:
        text = output_text(output) if listed is None else "".join(listed)
    label = "Tool definitions (tool search)" if definitions else "Tool result"
    if listed is None:
        whole, redacted = measure(text, builder.impossible)
    else:  # (each item measured: a redaction marker states its own item's length)
        items = [(part, *measure(part, builder.impossible)) for part in listed]
        whole, redacted = sum(i[1] for i in items), any(i[2] for i in items)
    measured: tuple[int, bool] | None = (whole, redacted)
    if not definitions and prefix == "item":  # (a compaction's history holds them as sent)
        # Sent truncated to the turn's policy; the rollout keeps it whole.
        budget = builder.output_budget or ASSUMED_BUDGET
        truncated = False
        if listed is not None:
            if (cut := sent_items(items, budget)) is not None:
                parts, chars = cut
                text, truncated = "".join(parts), True
                measured = (chars, True) if redacted else None
        elif redacted:  # a redaction marker: its stated length
            size = sent_size(whole, budget)
            if size is not None:
                measured, truncated = (size, True), True
        elif (sent := sent_output(text, budget)) is not None:
            text, measured, truncated = sent, None, True
        if truncated:
            assumed = builder.output_budget is None
            label = f"Tool result (truncated as sent{', the policy assumed' if assumed else ''})"
    builder.add_text(
        f"result:{call_id}",
        _TOOLS if definitions else _RESULTS,
        text,
        label,
        source_id=call_id,
        source_kind=_TOOL,
        measured=measured,
    )
    if prefix != "item":
        return
    _count_images(builder, output.get("content") if isinstance(output, dict) else output)
    builder.trigger_ns = ts
    tool = builder.tools.get(call_id)
    if tool is None:
        builder.diagnostics.note("codex:output-without-call")
        return
    tool.end_ns = max(ts, tool.start_ns)
    tool.result_chars = whole  # (what the tool returned)
    if tool.name == "spawn_agent":
        spawn_output(builder, call_id, output)  # the child it started (codex_agents)
    code = exit_code(output)
    if code is not None:
        tool.is_error = code != 0
    elif still_running(output):
        tool.backgrounded = True


def on_compacted(
    builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int | None = None
) -> None:
    # A request whose output began and whose usage never came (the compaction cut its
    # turn) is a failed request, as an interrupted turn's: dropped, its calls were linked
    # to the next request, which starts after them, its id given to that request too.
    builder.abort_request("compacted")  # (its encrypted reasoning settled unmeasured too)
    builder.reasoning_in_turn.clear()  # the compaction clears them with the rest
    pre = (
        builder.requests[-1].usage.prompt_tokens
        if builder.requests and builder.requests[-1].usage
        else None
    )
    # (from the end of the last request, a failed one included)
    ends = [r.end_ns for r in builder.requests[-1:]] + [r.end_ns for r in builder.failed[-1:]]
    start = max(ends) if ends else ts
    compaction_id = f"compaction-{len(builder.compactions) + 1}"
    history = payload.get("replacement_history")
    message = payload.get("message")
    removed = builder.clear_for_compaction(replaced=isinstance(history, list))
    if isinstance(history, list):
        # `replacement_history` is the entire new model-visible history (FORMATS §3.5).
        for item in history:
            if isinstance(item, dict):
                on_response_item(builder, item, ts, line, prefix=compaction_id)
    if builder.measure(message)[0] and not isinstance(history, list):
        builder.add_text(
            f"summary:{compaction_id}", Category.SUMMARIES, message, "Compaction summary"
        )
    observation = builder.log.observe(
        Observation.after_compaction(
            ts,
            compaction_id,
            model=builder.model or None,
        )
    )
    compaction = Compaction(
        compaction_id,
        min(start, ts),
        ts,
        pre_tokens=pre,
        removed_items=removed,
        timing="previous request's end → compacted line",
        observation=observation,
        window=builder.window,
    )
    builder.compactions.append(compaction)
    builder.awaiting_post.append(compaction)
    builder.trigger_ns = ts


# What each response item type does (`on_response_item`): handler(builder, item, ts,
# prefix, kind). The encrypted summaries, generated images and skipped types are told
# apart after it.
_ITEM_HANDLERS: dict[str, Callable[[RolloutBuilder, dict[str, Any], int, str, str], None]] = {
    "message": _on_message,
    "reasoning": _on_reasoning,
    "agent_message": _on_agent_message,
    **dict.fromkeys(CALL_ITEMS, _on_call),
    **dict.fromkeys(RESULT_ITEMS, _on_output),
    "tool_search_output": _on_definitions,
    "additional_tools": _on_additional_tools,
    "web_search_call": _on_search_call,
}
