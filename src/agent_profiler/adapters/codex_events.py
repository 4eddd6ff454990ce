"""What a Codex `event_msg` line does to the rollout being read (`RolloutBuilder`): a
`token_count` is one request and its usage (a repeated one is not), a `user_message` is a
prompt, and command, patch, web-search and spawn ends complete the tool calls; any other
event type is skipped on purpose or not recognised (`EVENT_MSG_TYPES`).

Separate from `codex_rollout.py`, which holds the state and the model-visible items: these
events are the UI's record of the turn, never model input, and they change the builder
only through its public fields and methods."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent_profiler.adapters.codex_records import (
    EVENT_MSG_TYPES,
    READ,
    REDACTION_SHA,
    TURN_ITEM_TYPES,
)
from agent_profiler.adapters.codex_rollout import Tool
from agent_profiler.adapters.common import (
    TOKEN_LIMIT,
    bad_counts,
    preview,
    token_count,
    warn_bad_usage,
)
from agent_profiler.adapters.drafts import ToolArguments
from agent_profiler.model import Prompt, Usage

if TYPE_CHECKING:
    from agent_profiler.adapters.codex_rollout import RolloutBuilder


def on_event(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    kind = payload.get("type")
    if kind.__class__ is not str:
        kind = None  # a damaged event: no type (and perhaps an unhashable one)
    handler = _HANDLERS.get(kind)
    if handler is not None:
        handler(builder, payload, ts, line)
    elif (skipped := _SKIPPED.get(kind)) is not None:
        builder.diagnostics.skip(skipped)
    else:
        builder.diagnostics.not_recognised(
            f"codex:event_msg/{kind or 'untyped'}", builder.path, line
        )


def _on_user_message(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    message = payload.get("message")
    chars, redacted = builder.measure(message)
    if redacted and isinstance(message, str):
        sha = REDACTION_SHA.search(message, 0, 80)
        if sha:
            builder.prompt_sha.add(sha.group(1))
    prompt_id = f"turn-{len(builder.prompts) + 1}"
    builder.prompts.append(
        Prompt(
            prompt_id,
            ts,
            ts,
            chars,
            "user",
            "" if redacted or not isinstance(message, str) else preview(message),
        )
    )
    builder.current_prompt = prompt_id
    builder.prompted = True  # the initial context is complete
    builder.trigger_ns = ts
    builder.end_turn_reasoning()


def _on_injected(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    """`InjectedMessageEvent {content, source}` (a timer's or an external program's message,
    openai/codex `InjectedMessage::event`): the model sees it as a user `message`
    (`prompt_input_item`, its own response_item); this event is its turn's prompt, from
    the harness, not typed by the user."""
    _on_user_message(builder, {"message": payload.get("content")}, ts, line)
    builder.prompts[-1] = replace(builder.prompts[-1], source="harness")


def _on_turn_aborted(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    """The turn was interrupted (`reason`: "interrupted", say): a request whose output
    began and whose usage had not come never gets it (0.141 writes no token_count for it)."""
    reason = payload.get("reason")
    builder.abort_request(reason if isinstance(reason, str) and reason else "aborted")


def _on_turn_complete(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    """The turn ended (`task_complete`). Codex writes a request's `token_count` when its
    stream completes, before the turn can end, so a request still pending here got no
    usage: its stream failed and its retries ran out (codex-rs `run_turn` then sends an
    `error` event, which the rollout does not keep), or its provider reported none (the
    same totals again). The rollout does not tell which: a failed request, no usage.
    Left pending, the next turn's response was merged into it."""
    builder.abort_request("no usage")


def _on_task_started(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    window = token_count(payload.get("model_context_window"))
    if window:
        builder.window = window


def _on_exec_end(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    tool = builder.tools.get(str(payload.get("call_id")))
    code = payload.get("exit_code")
    # A command whose call returned while it ran (0.125's unified exec) reports its exit to
    # the later call that read it ("Process exited with code N"): one failure, not two.
    if (
        tool is not None
        and not tool.backgrounded
        and isinstance(code, int)
        and not isinstance(code, bool)
    ):
        tool.is_error = code != 0
    duration = payload.get("duration")
    if tool is not None and isinstance(duration, dict):
        # The output may return while the command still runs (yield_time_ms);
        # the command's own duration is the execution span.
        tool.duration_ns = token_count(duration.get("secs")) * 1_000_000_000 + token_count(
            duration.get("nanos")
        )


def _on_patch_end(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    tool = builder.tools.get(str(payload.get("call_id")))
    if tool is not None and isinstance(payload.get("success"), bool):
        tool.is_error = not payload["success"]


def _on_mcp_end(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    """`McpToolCallEndEvent {call_id, invocation, duration, result}`: its `result` is serde's
    `Result<CallToolResult, String>`, `{"Err": message}` when the call failed, or `{"Ok":
    {content, isError}}`, where the server may say the call failed. The output item after
    it states neither (newer codex-rs keeps this event in the rollout)."""
    tool = builder.tools.get(str(payload.get("call_id")))
    result = payload.get("result")
    if tool is None or not isinstance(result, dict):
        return
    if "Err" in result:
        tool.is_error = True
    elif isinstance(ok := result.get("Ok"), dict):
        tool.is_error = ok.get("isError", ok.get("is_error")) is True


def _on_web_search_end(
    builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int
) -> None:
    call_id = payload.get("call_id")
    if isinstance(call_id, str):
        action = payload.get("action")
        query = payload.get("query") or (action.get("query") if isinstance(action, dict) else None)
        query = query if isinstance(query, str) else ""  # none given: no text
        builder.searches.append((query, call_id))
        builder.start_request(ts)
        request = builder.pending
        assert request is not None  # start_request made it, or it was open
        builder.tools.setdefault(
            call_id,
            Tool(
                call_id,
                "web_search",
                ts,
                request.id,
                builder.current_prompt,
                ToolArguments.of({"query": query} if query else {}),
                end_ns=ts,
            ),
        )


def _on_spawn_end(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    call_id, child = payload.get("call_id"), payload.get("new_thread_id")
    if isinstance(call_id, str) and isinstance(child, str):
        builder.spawned[call_id] = child


def _on_rolled_back(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    turns = payload.get("num_turns")
    if isinstance(turns, int) and not isinstance(turns, bool):
        builder.roll_back(turns, ts)
    else:
        builder.diagnostics.warn(
            builder.path, line, "bad-shape", "thread_rolled_back without a num_turns count"
        )


# A file change's final statuses (PatchApplyStatus, lowercase in every serialisation);
# one still in progress says nothing of the patch.
_PATCH_ENDED = ("completed", "failed", "declined")


def _on_item_completed(
    builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int
) -> None:
    """`ItemCompletedEvent {thread_id, turn_id, item: TurnItem, …}`: a paginated thread
    (`ThreadHistoryMode::Paginated`) persists these instead of `user_message`,
    `web_search_end` and `patch_apply_end`, and no build persists `exec_command_end` or
    `collab_agent_spawn_end` any more (openai/codex `rollout/src/policy.rs`); a legacy
    thread persists only its Plan and Sleep items. Each TurnItem that is the only record
    of a fact is read as the legacy event it stands for (`TurnItem::as_legacy_events`,
    `codex-rs/protocol/src/items.rs`: the item's `id` is the legacy event's `call_id`);
    the others are skipped by their type."""
    item = payload.get("item")
    kind = item.get("type") if isinstance(item, dict) else None
    if not isinstance(item, dict) or not isinstance(kind, str):
        builder.diagnostics.warn(
            builder.path, line, "bad-shape", "item_completed without a typed item"
        )
        return
    call_id = item.get("id")
    if kind == "UserMessage":
        content = item.get("content")
        parts = content if isinstance(content, list) else []
        text = "".join(
            p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)
        )
        _on_user_message(builder, {"message": text}, ts, line)
    elif kind == "WebSearch":
        _on_web_search_end(builder, {**item, "call_id": call_id}, ts, line)
    elif kind == "FileChange" and item.get("status") in _PATCH_ENDED:
        success = item["status"] == "completed"  # not failed nor declined
        _on_patch_end(builder, {"call_id": call_id, "success": success}, ts, line)
    elif kind == "CommandExecution":
        # Versions differ: camelCase (`exitCode`) in some, snake_case (`exit_code`) in others.
        code = item["exit_code"] if "exit_code" in item else item.get("exitCode")
        end = {"call_id": call_id, "exit_code": code}
        _on_exec_end(builder, {**end, "duration": item.get("duration")}, ts, line)
    elif kind == "CollabAgentToolCall" and item.get("tool") in _SPAWN_AGENT:
        children = item.get("receiver_thread_ids", item.get("receiverThreadIds"))
        child = children[0] if isinstance(children, list) and children else None
        _on_spawn_end(builder, {"call_id": call_id, "new_thread_id": child}, ts, line)
    elif kind in TURN_ITEM_TYPES:
        builder.diagnostics.skip(f"codex:event_msg/item_completed/{kind}")
    else:
        builder.diagnostics.not_recognised(
            f"codex:event_msg/item_completed/{kind}", builder.path, line
        )


_SPAWN_AGENT = ("spawn_agent", "spawnAgent")  # (core's spelling, the app server's)


def _on_context_compacted(
    builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int
) -> None:
    pass  # the `compacted` line holds the facts


# The types of a usage's counts when every one is a token count (a bool is no int here).
_INT_ONLY = {int}


def on_token_count(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    info = payload.get("info")
    if not isinstance(info, dict):
        return  # rate limits only: not a request
    total = info.get("total_token_usage")
    last = info.get("last_token_usage")
    if not isinstance(last, dict):
        builder.diagnostics.warn(
            builder.path, line, "bad-shape", "token_count without last_token_usage"
        )
        return
    counts = [*last.values(), *total.values()] if isinstance(total, dict) else [*last.values()]
    # Nearly every line's counts are all token counts (ints, no bools, in range): told by C
    # iterators over their types and extremes, instead of a Python test of each count. Else
    # the bad ones are warned about and every count is read as `token_count` reads it.
    if not (set(map(type, counts)) == _INT_ONLY and min(counts) >= 0 and max(counts) < TOKEN_LIMIT):
        _warn_bad_counts(builder, line, last, total)
        last = {key: token_count(value) for key, value in last.items()}
        if isinstance(total, dict):
            total = {key: token_count(value) for key, value in total.items()}
    # Its counts, each a token count now (a null count is read as 0 above): the same as
    # the last line's (a dict's `==`, key order aside) is a repeat.
    if not isinstance(total, dict):
        total = None
    elif total == builder.last_total:
        return  # Desktop 0.104 writes each token_count twice
    builder.last_total = total
    window = token_count(info.get("model_context_window"))
    if window:
        builder.window = window
    # Every count of `last` is a token count now: an absent one is 0.
    prompt = last.get("input_tokens", 0)
    output = last.get("output_tokens", 0)
    if not prompt and not output:
        return  # all-zero usage (e.g. remote compaction): not a request
    builder.start_request(ts)
    request = builder.pending
    assert request is not None
    request.end_ns = ts
    request.window = builder.window
    reasoning = last.get("reasoning_output_tokens", 0)
    # By position (a class called with keywords builds a dict of them, per request).
    request.usage = Usage(
        prompt,  # prompt_tokens: input_tokens already includes the cached part
        prompt,  # input_tokens
        output,  # output_tokens
        last.get("cached_input_tokens", 0),  # cache_read_tokens
        last.get("cache_write_input_tokens", 0),  # cache_write_tokens
        reasoning,  # reasoning_tokens
    )
    if request.window:
        # Its window is known now (`finish` settles the others' with the session's): the
        # observation is settled once instead of twice.
        builder.log.settle(
            request.observation, reported_tokens=prompt, window_tokens=request.window
        )
    else:
        builder.log.settle(request.observation, reported_tokens=prompt)
    builder.settle_reasoning(reasoning)
    builder.requests.append(request)
    builder.pending = None
    builder.trigger_ns = ts
    if builder.awaiting_post:
        # The compactions before this request learn their post-compaction size.
        awaiting = []
        for compaction in builder.awaiting_post:
            if compaction.end_ns <= request.start_ns:
                compaction.post_tokens = prompt
            else:
                awaiting.append(compaction)
        builder.awaiting_post = awaiting


def _warn_bad_counts(
    builder: RolloutBuilder, line: int, last: dict[str, Any], total: object
) -> None:
    """A count of `token_count` that is no token count (negative, a string) is read as 0:
    a `bad-usage` warning for the line, naming each such count, never a silent 0."""
    if not bad_counts(last) and not (isinstance(total, dict) and bad_counts(total)):
        return  # every token_count but a damaged one
    counts = {f"last_token_usage.{k}": v for k, v in last.items()}
    if isinstance(total, dict):
        counts.update({f"total_token_usage.{k}": v for k, v in total.items()})
    warn_bad_usage(
        builder.diagnostics, builder.path, line, counts, bad_counts(counts), "token_count"
    )


# What each read event type does (a dict looked up once per event, not an if-chain), and
# the skipped types' diagnostics keys, made once.
_HANDLERS: dict[str | None, Callable[[RolloutBuilder, dict[str, Any], int, int], None]] = {
    "token_count": on_token_count,
    "user_message": _on_user_message,
    "injected_message": _on_injected,
    "task_started": _on_task_started,
    "turn_started": _on_task_started,
    "exec_command_end": _on_exec_end,
    "patch_apply_end": _on_patch_end,
    "mcp_tool_call_end": _on_mcp_end,
    "web_search_end": _on_web_search_end,
    "collab_agent_spawn_end": _on_spawn_end,
    "context_compacted": _on_context_compacted,
    "item_completed": _on_item_completed,
    "thread_rolled_back": _on_rolled_back,
    "turn_aborted": _on_turn_aborted,
    "task_complete": _on_turn_complete,
    "turn_complete": _on_turn_complete,
}
assert _HANDLERS.keys() == {k for k, (how, _) in EVENT_MSG_TYPES.items() if how == READ}
_SKIPPED: dict[str | None, str] = {
    kind: f"codex:event_msg/{kind}" for kind, (how, _) in EVENT_MSG_TYPES.items() if how != READ
}
