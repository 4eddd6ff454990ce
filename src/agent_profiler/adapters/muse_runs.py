"""What each run event of a Muse log (`runtime.session` with kind `run`) does to the
journal being read (`muse_journal.JournalBuilder`): a request's configuration, its lanes
(`model_input_trace_recorded`), blocks, tool calls and results, its completion with the
usage, reminders, compactions and the run's end (FORMATS-muse §3–5).

Separate from `muse_journal.py`, which holds the builder's state and reads the envelopes,
metadata, tasks, approvals and tool effects: a run's events are the model-facing half of a
log, and these functions change the builder only through its public fields and methods."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.adapters.common import (
    bad_counts,
    json_text,
    preview,
    token_count,
    warn_bad_usage,
)
from agent_profiler.adapters.drafts import ToolArguments
from agent_profiler.adapters.muse_drafts import (
    MuseCompaction,
    PendingItem,
    PromptDraft,
    Request,
    Run,
    Tool,
    as_dict,
    str_or_none,
)
from agent_profiler.adapters.muse_lanes import Block, context_block, native_split, parse_trace
from agent_profiler.adapters.muse_records import (
    FALLBACK_ITEM_STAGE,
    MUSE_SPARK_WINDOW,
    NATIVE_ITEM_STAGE,
    NOT_IN_LANES_ID,
    NOT_IN_LANES_LABEL,
    RUN_EVENT_KINDS,
)
from agent_profiler.attribution import Observation
from agent_profiler.estimate import text_tokens, tool_call_text
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    Coverage,
    Response,
    SourceKind,
    Stage,
    Usage,
)

if TYPE_CHECKING:
    from agent_profiler.adapters.muse_journal import JournalBuilder

# Categories a compaction keeps: everything sent beside the history.
_KEPT_BY_COMPACTION = frozenset(
    {
        Category.SYSTEM,
        Category.RULES,
        Category.SKILLS,
        Category.TOOLS,
        Category.ENVIRONMENT,
        Category.OVERHEAD,
        Category.UNATTRIBUTED,
    }
)


def on_run_event(builder: JournalBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    event = as_dict(payload.get("event"))
    kind = str_or_none(event.get("kind"))
    run_id = str_or_none(payload.get("run_id")) or "run"
    run = builder.run(run_id)
    if kind == "started":
        prompt = event.get("prompt")
        text = prompt if isinstance(prompt, str) else ""
        builder.prompts.append(
            PromptDraft(run_id, ts, len(text), preview(text), tokens=text_tokens(text))
        )
        run.prompt_id = run_id
        builder.add_prompt(builder.prompts[-1])
    elif kind == "context_block_diagnostic":
        on_block(builder, run_id, event)
    elif kind == "model_request_configured":
        on_request_configured(builder, event)
    elif kind == "model_input_trace_recorded":
        on_trace(builder, run, event, ts, line)
    elif kind == "model_response_created":
        builder.open_request(run, ts)
    elif kind == "reasoning_committed":
        if event.get("encrypted_content"):
            builder.unmeasured["encrypted-reasoning"] += 1
        builder.skip("muse:run/reasoning_committed")  # output, not context (§5.8)
    elif kind == "assistant_message_committed":
        message_text = event.get("text")
        item_id = str_or_none(event.get("message_id")) or f"assistant:{ts}"
        builder.add_output(
            run,
            PendingItem(
                item_id,
                Category.ASSISTANT,
                message_text if isinstance(message_text, str) else "",
                "Assistant history",
                source_kind=SourceKind.RESPONSE,
            ),
        )
    elif kind == "assistant_tool_calls_committed":
        calls = event.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                on_tool_call(builder, run, call, ts)
    elif kind in {
        "tool_result_batch_committed",
        "tool_results_committed",
        "tool_result_committed",
        "tool_result",
    }:
        results = event.get("results")
        for result in results if isinstance(results, list) else [event]:
            if isinstance(result, dict):
                on_tool_result(builder, result, ts)
    elif kind == "goal_usage_attribution":
        builder.counts["goal_usage_attribution"] += 1  # a duplicate of model_completed
        builder.skip("muse:run/goal_usage_attribution")
    elif kind == "model_completed":
        on_completed(builder, run, event, ts, line)
    elif kind == "memory_reminder_child_session_linked":
        on_reminder_linked(builder, run_id, event, ts)
    elif kind == "context_compaction_candidate":
        candidate = str_or_none(event.get("candidate_id"))
        if candidate:
            builder.candidates[candidate] = event
        builder.skip("muse:run/context_compaction_candidate")
    elif kind == "context_compaction_installed":
        on_compaction(builder, run, event, ts)
    elif kind == "context_compaction_fallback":
        builder.counts["compaction_fallbacks"] += 1
        builder.facts.append(
            (
                f"compaction_fallback_{builder.counts['compaction_fallbacks']}",
                f"{event.get('reason')} (severity {event.get('severity')}, "
                f"can_continue {event.get('can_continue')}); summarizer "
                f"{_usage_text(as_dict(event.get('summarizer_usage')))}",
            )
        )
    elif kind == "terminal":
        on_terminal(builder, run, event, ts)
    elif kind in RUN_EVENT_KINDS:
        builder.skip(f"muse:run/{kind}")
    else:
        builder.unknown(f"muse:run/{kind}", line)


def on_block(builder: JournalBuilder, run_id: str, event: dict[str, Any]) -> None:
    block_id = str_or_none(event.get("block_id")) or str_or_none(event.get("source"))
    if block_id is None:
        return
    if builder.blocks_run != run_id:
        # A run states its blocks again: they replace the previous run's set.
        builder.blocks = {}
        builder.blocks_run = run_id
    builder.blocks[block_id] = Block.diagnosed(block_id, event)


def on_request_configured(builder: JournalBuilder, event: dict[str, Any]) -> None:
    base = event.get("base_instructions")
    if isinstance(base, str) and base:
        builder.log.add("system:base_instructions", Category.SYSTEM, base, label="System")
    toolset = as_dict(event.get("toolset"))
    tools = toolset.get("active_tools")
    if isinstance(tools, list) and tools:
        # Names only: the schemas are not in the journal (nor in the trace's lanes).
        builder.unmeasured["tool-schemas"] = len(tools)
    messages = event.get("run_context_messages")
    blocks: list[Block] = []
    for message in messages if isinstance(messages, list) else []:
        block = context_block(as_dict(message), builder.blocks)
        builder.log.add(block.item_id, block.category, block.size, label=block.label)
        if block.measured is not None:
            blocks.append(block.measured)
    if blocks:
        # Block sizes from the texts, for when no context_block_diagnostic was written.
        builder.message_blocks = blocks


def on_trace(builder: JournalBuilder, run: Run, event: dict[str, Any], ts: int, line: int) -> None:
    if event.get("schema_version") != 2 or event.get("scope") != "full_request":
        builder.skip(
            f"muse:model_input_trace/schema-{event.get('schema_version')}/{event.get('scope')}"
        )
        return
    trace = parse_trace(event)
    if trace is None:
        builder.diagnostics.warn(
            builder.path, line, "bad-shape", "model_input_trace_recorded without aggregates"
        )
        return
    current = run.open
    if current is not None and current.trace is not None:
        if current.trace.model_step == trace.model_step:
            builder.counts["repeated_traces"] += 1  # a retry: the later trace stands
            current.trace = trace
            return
        builder.drop(run)  # the previous request never completed
    builder.open_request(run, ts).trace = trace


def on_tool_call(builder: JournalBuilder, run: Run, call: dict[str, Any], ts: int) -> None:
    call_id = str_or_none(call.get("call_id")) or str_or_none(call.get("id")) or f"call@{ts}"
    name = str_or_none(call.get("name")) or "tool"
    args = call.get("args", call.get("arguments"))
    request = run.open.id if run.open is not None else run.last_request
    builder.add_output(
        run,
        PendingItem(
            f"call:{call_id}",
            Category.ASSISTANT,
            tool_call_text(name, args),
            "Tool arguments",
            call_id,
            SourceKind.TOOL,
        ),
    )
    if call_id not in builder.tools:
        builder.tools[call_id] = Tool(
            call_id, name, ts, request, run.prompt_id, ToolArguments.of(args, decode=True)
        )


def on_tool_result(builder: JournalBuilder, result: dict[str, Any], ts: int) -> None:
    call_id = str_or_none(result.get("tool_call_id")) or str_or_none(result.get("call_id"))
    body = next((result[k] for k in ("text", "content", "output", "result") if k in result), "")
    text = body if isinstance(body, str) else json_text(body)
    item_id = f"result:{call_id}" if call_id else f"result@{ts}"
    builder.log.add(
        item_id,
        Category.RESULTS,
        text,
        label="Tool result",
        source_id=call_id or "",
        source_kind=SourceKind.TOOL if call_id else SourceKind.NONE,
    )
    tool = builder.tools.get(call_id) if call_id else None
    if tool is None:
        builder.diagnostics.note("muse:result-without-call")
        return
    tool.end_ns = max(ts, tool.start_ns)
    tool.result_chars = len(text)
    tool.is_error = tool.is_error or _failed(text)


_USAGE_COUNTS = ("input_tokens", "output_tokens", "cached_tokens", "reasoning_tokens")


def on_completed(
    builder: JournalBuilder, run: Run, event: dict[str, Any], ts: int, line: int
) -> None:
    usage = as_dict(event.get("usage"))
    if bad := bad_counts(usage, _USAGE_COUNTS):  # read as 0
        warn_bad_usage(builder.diagnostics, builder.path, line, usage, bad)
    prompt = token_count(usage.get("input_tokens"))
    output = token_count(usage.get("output_tokens"))
    request = run.open or builder.open_request(run, ts)
    run.open = None
    if request.task_id:
        builder.closed_tasks.add(request.task_id)
    if not usage or not (prompt or output):
        # The echo provider reports zeros: no size to show, so no request is invented.
        builder.counts["zero_usage_model_completed"] += 1
        for item in request.outputs:
            builder.add_item(item)
        return
    duration = event.get("duration_ms")
    if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0:
        start = ts - duration * 1_000_000
    else:
        start = request.first_status_ns or request.opened_ns
    start = min(start, ts)
    model = builder.model_of(run.run_id, event.get("model"))
    if model and model not in builder.models:
        builder.models.append(model)
    trace = request.trace
    if trace is not None and trace.model_step is not None and trace.model_step != run.steps:
        builder.warn_once(
            line,
            "muse-trace-step",
            f"model_input_trace_recorded model_step {trace.model_step} paired with "
            f"model_completed #{run.steps} of its run (records missing or a retry)",
        )
    run.steps += 1
    window = MUSE_SPARK_WINDOW if model.startswith("muse-spark") else None
    split = None
    if trace is not None:
        split = native_split(trace, list(builder.blocks.values()) or builder.message_blocks, prompt)
        if not split.fits:
            builder.warn_once(
                line,
                "muse-blocks-exceed-context",
                "context blocks add up to more bytes than the request's context lane; "
                "that lane is shown unattributed",
            )
        if split.not_in_lanes:
            builder.log.add(
                NOT_IN_LANES_ID,
                Category.UNATTRIBUTED,
                0,
                label=NOT_IN_LANES_LABEL,
                tokens=split.not_in_lanes,
            )
        else:
            builder.log.remove(NOT_IN_LANES_ID)
    builder.log.observe(
        Observation(
            time_ns=start,
            anchor=AnchorKind.RESPONSE,
            anchor_id=request.id,
            stage=Stage.TRANSCRIPT_OBSERVED if split is None else Stage.REQUEST_INPUT,
            model=model or None,
            reported_tokens=prompt or None,
            window_tokens=window,
            native_categories=None if split is None else split.categories,
            basis=builder.log.estimator.basis if split is None else Basis.NATIVE_BYTES,
            coverage=Coverage.COMPLETE if split and split.complete else Coverage.PARTIAL,
            item_stage=FALLBACK_ITEM_STAGE if split is None else NATIVE_ITEM_STAGE,
        )
    )
    for item in request.outputs:
        builder.add_item(item)
    builder.requests.append(
        Request(
            request.id,
            start,
            ts,
            model,
            Usage(
                prompt_tokens=prompt,  # input_tokens already includes the cached part
                input_tokens=prompt,
                output_tokens=output,
                cache_read_tokens=token_count(
                    usage.get("cache_read_tokens", usage.get("cached_tokens"))
                ),
                cache_write_tokens=token_count(usage.get("cache_write_tokens")),
                reasoning_tokens=token_count(usage.get("reasoning_tokens")),
            ),
            stop_reason=str_or_none(event.get("finish_reason")),
            run_id=run.run_id,
            native=trace is not None,
        )
    )
    run.last_request = request.id


def on_reminder_linked(
    builder: JournalBuilder, run_id: str, event: dict[str, Any], ts: int
) -> None:
    task_id = str_or_none(event.get("task_id"))
    child = str_or_none(event.get("child_session_id"))
    agent = str_or_none(event.get("reminder_agent_id")) or "reminder"
    builder.counts["reminder_children"] += 1
    if not str_or_none(event.get("child_session_log_path")):
        builder.counts["reminder_children_without_log_path"] += 1
    if child:
        builder.children[child] = (task_id or child, agent)
    if task_id and task_id not in builder.reminders:
        builder.reminders[task_id] = Tool(
            task_id,
            agent,
            ts,
            None,
            builder.runs[run_id].prompt_id if run_id in builder.runs else None,
            reminder=True,
            child_session=child,
        )


def on_compaction(builder: JournalBuilder, run: Run, event: dict[str, Any], ts: int) -> None:
    install = (
        str_or_none(event.get("install_id")) or str_or_none(event.get("candidate_id")) or str(ts)
    )
    if install in builder.installs:
        builder.skip("muse:duplicate-compaction")  # exports repeat records
        return
    builder.installs.add(install)
    compaction_id = f"compaction-{len(builder.compactions) + 1}"
    # The history before the summary leaves; what is sent beside it stays. Which items a
    # `preserved_segment` keeps cannot be told (its sequence space is unverified).
    current = next((p for p in builder.prompts if p.id == run.prompt_id), None)
    present = current is not None and f"prompt:{current.id}" in builder.log
    removed = builder.log.clear(keep=_KEPT_BY_COMPACTION)
    if current is not None:
        # The turn being worked on is sent after the summary: its prompt stays.
        builder.add_prompt(current)
        removed -= int(present)
    replay = event.get("replay_model_messages")
    if isinstance(replay, list) and replay:
        for index, message in enumerate(replay):
            message = as_dict(message)
            text = "".join(
                str(as_dict(part).get("text") or "")
                for part in (message.get("content") or [])
                if isinstance(part, dict)
            )
            if message.get("role") == "user":
                summary = text.lstrip().lower().startswith("summary")
                category = Category.SUMMARIES if summary else Category.PROMPTS
                label = "Compaction summary" if summary else "Replayed user message"
            else:
                category, label = Category.MESSAGES, "Replayed developer message"
            builder.log.add(f"{compaction_id}:replay:{index}", category, text, label=label)
    else:
        summary_text = as_dict(event.get("replacement")).get("text")
        if isinstance(summary_text, str) and summary_text:
            builder.log.add(
                f"summary:{install}",
                Category.SUMMARIES,
                summary_text,
                label="Compaction summary",
            )
    previous = builder.requests[-1].end_ns if builder.requests else None
    start = previous if previous is not None and previous <= ts else ts
    timing = "previous request's end → context_compaction_installed"
    usage = as_dict(event.get("summarizer_usage")) or _summary_metrics(builder, event)
    request = None
    if token_count(usage.get("input_tokens")) or token_count(usage.get("output_tokens")):
        duration = usage.get("duration_ms")
        request_start = ts
        if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0:
            request_start = start = ts - duration * 1_000_000
            timing = "summarizer_usage.duration_ms before context_compaction_installed"
        prompt = token_count(usage.get("input_tokens"))
        request = Response(
            id=f"{compaction_id}:summarizer",
            start_ns=request_start,
            end_ns=ts,
            model=builder.model_of(run.run_id),
            usage=Usage(
                prompt_tokens=prompt,
                input_tokens=prompt,
                output_tokens=token_count(usage.get("output_tokens")),
                cache_read_tokens=token_count(
                    usage.get("cache_read_tokens", usage.get("cached_tokens"))
                ),
                cache_write_tokens=token_count(usage.get("cache_write_tokens")),
                reasoning_tokens=token_count(usage.get("reasoning_tokens")),
            ),
        )
    before = as_dict(event.get("budget_before"))
    after = as_dict(event.get("budget_after")) or as_dict(event.get("estimated_budget_after"))
    if "estimated_prompt_tokens" in before or "estimated_prompt_tokens" in after:
        source = str_or_none(before.get("estimate_source")) or str_or_none(
            after.get("estimate_source")
        )
        builder.facts.append(
            (
                f"{compaction_id}_estimated_prompt_tokens",
                f"{before.get('estimated_prompt_tokens')} → "
                f"{after.get('estimated_prompt_tokens')} (Muse's own estimate, "
                f"{source or 'source not stated'}; not provider counts)",
            )
        )
    model = builder.model_of(run.run_id)
    observation = builder.log.observe(
        Observation.after_compaction(
            ts,
            compaction_id,
            model=model or None,
            window_tokens=MUSE_SPARK_WINDOW if model.startswith("muse-spark") else None,
            basis=builder.log.estimator.basis,
            coverage=Coverage.PARTIAL,
        )
    )
    builder.compactions.append(
        MuseCompaction(
            compaction_id,
            min(start, ts),
            ts,
            trigger=str_or_none(event.get("trigger")),
            removed_items=removed,
            request=request,
            timing=timing,
            observation=observation,
            requests_before=len(builder.requests),
        )
    )


def _summary_metrics(builder: JournalBuilder, event: dict[str, Any]) -> dict[str, Any]:
    """The candidate's `summary_call_metrics` diagnostic (a JSON string), if any."""
    candidate = builder.candidates.get(str_or_none(event.get("candidate_id")) or "", {})
    diagnostics = candidate.get("diagnostics")
    for diagnostic in diagnostics if isinstance(diagnostics, list) else []:
        diagnostic = as_dict(diagnostic)
        if diagnostic.get("reason") == "summary_call_metrics":
            try:
                return as_dict(orjson.loads(str(diagnostic.get("message"))))
            except ValueError:
                return {}
    return {}


def on_terminal(builder: JournalBuilder, run: Run, event: dict[str, Any], ts: int) -> None:
    builder.drop(run)
    run.end_ns = ts
    outcome = str_or_none(event.get("terminal")) or "unknown"
    if outcome != "completed":
        builder.counts[f"runs_{outcome}"] += 1
        builder.facts.append((f"run_{outcome}", str(event.get("reason") or "")))


def _failed(text: str) -> bool:
    """A tool result that says it failed: `tool failed: …`, or bash JSON with exit_code ≠ 0."""
    if text.startswith("tool failed"):
        return True
    if text.startswith("{") and '"exit_code"' in text:
        try:
            decoded = orjson.loads(text)
        except ValueError:
            return False
        code = decoded.get("exit_code") if isinstance(decoded, dict) else None
        return isinstance(code, int) and not isinstance(code, bool) and code != 0
    return False


def _usage_text(usage: dict[str, Any]) -> str:
    if not usage:
        return "usage not recorded"
    return (
        f"{token_count(usage.get('input_tokens'))} in / "
        f"{token_count(usage.get('output_tokens'))} out"
    )
