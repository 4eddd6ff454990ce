"""Muse: one log's event stream read into drafts (runs, requests, tools, compactions).

Owns what each Muse envelope and run event means (FORMATS-muse §2–6); request lanes are
read by `muse_lanes`, and `muse` groups the logs and finishes their sessions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

from agent_profiler.adapters.common import Clock, json_text, preview, token_count
from agent_profiler.adapters.drafts import CompactionDraft, RequestDraft, ToolArguments, ToolDraft
from agent_profiler.adapters.muse_lanes import (
    Block,
    Trace,
    context_block,
    native_split,
    parse_trace,
)
from agent_profiler.attribution import ContextLog, Logged, Observation
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.estimate import text_tokens, tool_call_text
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    Coverage,
    Harness,
    Response,
    SourceKind,
    Stage,
    Usage,
)

HARNESS = Harness.MUSE
SESSION_FILE = "session.jsonl"
APPROVAL_STREAM = "approval.review.runtime"
APPROVAL_DIR = "approval-review"
SUBAGENT_DIR = "subagent"
NOT_IN_LANES_ID = "muse:not-in-lanes"
NOT_IN_LANES_LABEL = (
    "Not in the request lanes: tool schemas and request overhead "
    "(reported input − Σ lane bytes/4; the lanes are not scaled)"
)
# Every event this adapter knows, read (into which category, and why) or skipped on purpose
# (why it is not model input); anything else is "not recognised (not read)" with its first
# path:line (issue 28). FORMATS-muse.md §3–5 names them (a parser must not fail on others).
READ, SKIPPED = "read", "skipped on purpose"
_FACT = "a runtime fact or UI event, not model input"
PAYLOAD_TYPES: dict[str, tuple[str, str]] = {
    "runtime.session": (READ, "run, task and approval events: see RUNTIME_SESSION_KINDS"),
    "runtime.session.metadata": (READ, "workspace, provider, default model, build version"),
    "run.model.configured": (READ, "the model of a run"),
    "runtime.session.route_facts": (READ, "the working directory"),
    **{
        kind: (SKIPPED, _FACT)
        for kind in (
            "runtime.session.task",
            "runtime.session.capture_selection",
            "runtime.retained_fact",
            "runtime.user_intent.accepted",  # the prompt is read from the run's `started`
            "runtime.user_intent.materialized",
            "runtime.model_reconfigure.completed",
            "session.end",
            "session.name.changed",
            "session.opened.observed",
            "session.workspace_branch.observed",
            "session.resumed",
            "session.login.completed",
            "session.startup_phases.observed",
            "user_shell.command",
            "user_shell.result",
        )
    },
}
# Families named by their prefix (each member is the same kind of record).
PAYLOAD_FAMILIES: dict[str, tuple[str, str]] = {
    "subagent.control.": (READ, "a subagent's start: links the child session to its call"),
    "tool_batch.effect.": (READ, "a tool's execution start and end (the tool span)"),
    "runtime.command_intake.": (SKIPPED, _FACT),
    "runtime.session.permission_": (SKIPPED, "the permission profile, not model input"),
    "session.fork.": (SKIPPED, _FACT),
    "session.payment_gate.": (SKIPPED, _FACT),
    "context.compact.manual.": (SKIPPED, "a manual compaction's UI steps; the run holds it"),
    "reminder.cleanup_effect.": (SKIPPED, _FACT),
}
RUNTIME_SESSION_KINDS: dict[str, tuple[str, str]] = {
    "run": (READ, "the conversation and its measurements: see RUN_EVENT_KINDS"),
    "task": (READ, "a task's lifecycle: request and tool timing (the line is not context)"),
    "approval": (READ, "an approval decision (the line is not context)"),
    "security_mode": (SKIPPED, _FACT),
    "agent_tree_initialized": (SKIPPED, _FACT),
}
RUN_EVENT_KINDS: dict[str, tuple[str, str]] = {
    "started": (READ, "the user's prompt → User prompts"),
    "context_block_diagnostic": (READ, "a context block's size and source (native lanes)"),
    "model_request_configured": (READ, "system prompt and context blocks of a request"),
    "model_input_trace_recorded": (READ, "the request's byte composition (native lanes)"),
    "model_response_created": (READ, "a request's response starts"),
    "assistant_message_committed": (READ, "assistant text → Assistant history"),
    "assistant_tool_calls_committed": (READ, "tool calls → Assistant history"),
    "tool_result_batch_committed": (READ, "tool results → Tool results"),
    "tool_results_committed": (READ, "tool results → Tool results"),
    "tool_result_committed": (READ, "a tool result → Tool results"),
    "tool_result": (READ, "a tool result → Tool results"),
    "model_completed": (READ, "a request's usage and model"),
    "memory_reminder_child_session_linked": (READ, "a reminder child session's link"),
    "context_compaction_installed": (READ, "a compaction: its summary replaces the context"),
    "context_compaction_fallback": (READ, "a compaction that fell back: a fact"),
    "terminal": (READ, "the end of a turn"),
    "reasoning_committed": (SKIPPED, "the model's reasoning: output, not re-sent (§5.8)"),
    "goal_usage_attribution": (SKIPPED, "a repeat of model_completed's usage"),
    "context_compaction_candidate": (SKIPPED, "a compaction candidate (the installed one is read)"),
    "provider_request_options_configured": (SKIPPED, "the option keys a request is sent with"),
    "task_stream_linked": (SKIPPED, "links a task stream to the run; not model input"),
    "reminder_proposal": (SKIPPED, "a reminder agent's proposal; its child session holds it"),
    "reminder_reconciler_outcome": (SKIPPED, "a reminder decision; not model input"),
    "skill_reminder_decision": (SKIPPED, "a skill reminder decision; not model input"),
    "resource_usage_sampled": (SKIPPED, "CPU and memory samples"),
}


NATIVE_ITEM_STAGE = "transcript-observed"
FALLBACK_ITEM_STAGE = "transcript-observed (no model_input_trace_recorded lanes: chars/4)"
EXPORT_MESSAGE = (
    "a JSON array of Muse event objects (`muse export` output), not a session.jsonl "
    "journal: it has no envelopes, so no times, streams or usage; export the session's "
    "session.jsonl instead"
)
APPROVAL_MESSAGE = (
    "a Muse approval-review log (the automatic approval reviewer's own run, on a "
    "synthetic clock), not a session timeline; export its session's session.jsonl"
)
# The context window `model/list` reports for every muse-spark model; the journal has none.
MUSE_SPARK_WINDOW = 1_007_997
WINDOW_SOURCE = "muse-spark model/list value (not in the journal)"

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


def is_event_list(value: list[Any]) -> bool:
    return bool(value) and all(
        isinstance(v, dict) and isinstance(v.get("kind"), str) and "payload_type" not in v
        for v in value
    )


# -- planning ---------------------------------------------------------------------------------


class ApprovalReviewLogError(JournalError):
    """The file is an approval-review log: refused as a main journal, skipped as an extra."""


@dataclass(frozen=True, slots=True)
class _PendingItem:
    item_id: str
    category: Category
    text: str  # kept until the item enters the context, for the estimator
    label: str
    source_id: str = ""
    source_kind: SourceKind = SourceKind.NONE


@dataclass(slots=True)
class _Open:
    """A request whose input is known (trace, model task) but whose usage is not yet."""

    id: str
    run_id: str
    opened_ns: int
    trace: Trace | None = None
    task_id: str | None = None
    first_status_ns: int | None = None
    outputs: list[_PendingItem] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class _Request(RequestDraft):
    run_id: str
    native: bool  # its composition came from model_input_trace_recorded lanes


@dataclass(slots=True)
class _Run:
    run_id: str
    prompt_id: str | None = None
    open: _Open | None = None
    steps: int = 0
    last_request: str | None = None
    end_ns: int | None = None


@dataclass(slots=True)
class _Tool(ToolDraft):
    exec_start_ns: int | None = None
    exec_end_ns: int | None = None
    reminder: bool = False


@dataclass(slots=True)
class _Prompt:
    id: str
    start_ns: int
    chars: int
    preview: str
    end_ns: int | None = None
    tokens: int = 0  # measured once: the prompt is added again after a compaction


@dataclass(slots=True)
class _Compaction(CompactionDraft):
    observation: Logged | None = None
    requests_before: int = 0  # how many requests completed before it


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _clock_view(recorded_at: object) -> dict[str, object]:
    """A record the shared `Clock` reads: `recorded_at` (µs) as an ISO timestamp."""
    if isinstance(recorded_at, int) and not isinstance(recorded_at, bool) and recorded_at >= 0:
        moment = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=recorded_at)
        return {"timestamp": moment.isoformat()}
    return {}


@dataclass(slots=True)
class JournalBuilder:
    """Accumulates one Muse log (one session stream)."""

    path: str
    diagnostics: Diagnostics
    session_id: str | None = None
    log: ContextLog = field(default_factory=ContextLog)
    in_frame: bool = False  # reading the children of a retained_frame line
    runs: dict[str, _Run] = field(default_factory=dict)
    requests: list[_Request] = field(default_factory=list)
    request_count: int = 0
    tools: dict[str, _Tool] = field(default_factory=dict)
    prompts: list[_Prompt] = field(default_factory=list)
    compactions: list[_Compaction] = field(default_factory=list)
    blocks: dict[str, Block] = field(default_factory=dict)
    blocks_run: str | None = None
    message_blocks: list[Block] = field(default_factory=list)
    run_models: dict[str, str] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    default_model: str | None = None
    provider: str | None = None
    version: str | None = None
    build: str | None = None
    project: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    unmeasured: Counter[str] = field(default_factory=Counter)
    counts: Counter[str] = field(default_factory=Counter)
    facts: list[tuple[str, str]] = field(default_factory=list)
    task_kinds: dict[str, str] = field(default_factory=dict)
    tool_tasks: dict[str, str] = field(default_factory=dict)  # task id → call id
    closed_tasks: set[str] = field(default_factory=set)
    reminders: dict[str, _Tool] = field(default_factory=dict)  # task id → pseudo call
    children: dict[str, tuple[str, str]] = field(default_factory=dict)  # child → (link, role)
    subagent_ids: dict[str, str] = field(default_factory=dict)  # subagent id → spawn call
    installs: set[str] = field(default_factory=set)
    candidates: dict[str, dict[str, Any]] = field(default_factory=dict)
    bare_events: int = 0
    warned: set[str] = field(default_factory=set)

    # -- helpers ---------------------------------------------------------------------------

    def warn_once(self, line: int | None, kind: str, message: str) -> None:
        if kind not in self.warned:
            self.warned.add(kind)
            self.diagnostics.warn(self.path, line, kind, message)

    def _run(self, run_id: str) -> _Run:
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = _Run(run_id)
        return run

    def _open(self, run: _Run, ts: int) -> _Open:
        if run.open is None:
            self.request_count += 1
            run.open = _Open(f"request-{self.request_count}", run.run_id, ts)
        return run.open

    def _output(self, run: _Run, item: _PendingItem) -> None:
        """A response's output enters the context after its request's snapshot."""
        if run.open is not None:
            run.open.outputs.append(item)
        else:
            self._add(item)

    def _add(self, item: _PendingItem) -> None:
        self.log.add(
            item.item_id,
            item.category,
            item.text,
            label=item.label,
            source_id=item.source_id,
            source_kind=item.source_kind,
        )

    def _add_prompt(self, prompt: _Prompt) -> None:
        self.log.add(
            f"prompt:{prompt.id}",
            Category.PROMPTS,
            prompt.chars,
            tokens=prompt.tokens,
            label="User prompt",
            source_kind=SourceKind.PROMPT,
        )

    def drop(self, run: _Run) -> None:
        """A request that never completed: no snapshot, its outputs still happened."""
        if run.open is None:
            return
        for item in run.open.outputs:
            self._add(item)
        self.counts["requests-without-usage"] += 1
        run.open = None

    def _model(self, run_id: str, reported: object = None) -> str:
        return _str(reported) or self.run_models.get(run_id) or self.default_model or ""

    # -- lines -----------------------------------------------------------------------------

    def _skip(self, kind: str) -> None:
        if self.in_frame:
            self.diagnostics.note(kind)
        else:
            self.diagnostics.skip(kind)

    def _unknown(self, kind: str, line: int) -> None:
        """An event no Muse build is known to write: not read, which is no choice. Inside
        a retained frame the line itself is used, so the child is a note."""
        if self.in_frame:
            self.diagnostics.note(f"{kind} (not recognised)")
        else:
            self.diagnostics.not_recognised(kind, self.path, line)

    def on_line(self, value: object, line: int, clock: Clock) -> None:
        if isinstance(value, list):
            if is_event_list(value):
                raise JournalError(self.path, EXPORT_MESSAGE, line)
            self.diagnostics.warn(self.path, line, "bad-shape", "line is a JSON array")
            return
        if not isinstance(value, dict):
            self.diagnostics.warn(self.path, line, "bad-shape", "line is not a JSON object")
            return
        if "retained_marker" in value:
            self.counts["omitted_live_only"] += 1
            self._skip("muse:retained_marker")
            return
        if "retained_frame" in value:
            # The frame line is used through its children; what they skip is noted, not
            # counted as skipped lines (the accounting is per line).
            self.in_frame = True
            children = value.get("children")
            for child in children if isinstance(children, list) else []:
                text = _dict(child).get("record_json")
                try:
                    envelope = orjson.loads(text) if isinstance(text, str) else None
                except ValueError:
                    envelope = None
                if isinstance(envelope, dict) and isinstance(envelope.get("stream"), dict):
                    self.on_envelope(envelope, line, clock)
                else:
                    self.diagnostics.warn(
                        self.path, line, "bad-shape", "retained_frame child is not an envelope"
                    )
            self.in_frame = False
            return
        if isinstance(value.get("stream"), dict) and isinstance(value.get("payload_type"), str):
            self.on_envelope(value, line, clock)
            return
        if isinstance(value.get("kind"), str):
            self.bare_events += 1  # a payload.event without its envelope (an export)
        self._skip("muse:non-envelope-line")

    def on_envelope(self, envelope: dict[str, Any], line: int, clock: Clock) -> None:
        stream = envelope["stream"]
        stream_id, stream_kind = stream.get("id"), stream.get("kind")
        if self.session_id is None:
            if stream_kind == APPROVAL_STREAM:
                raise ApprovalReviewLogError(self.path, APPROVAL_MESSAGE, line)
            if stream_kind != "session" or not isinstance(stream_id, str):
                self._skip("muse:other-stream")
                return
            self.session_id = stream_id
        elif stream_id != self.session_id:
            self._skip("muse:other-stream")
            return
        ts = clock.time(_clock_view(envelope.get("recorded_at")), line)
        self.start_ns = ts if self.start_ns is None else min(self.start_ns, ts)
        self.end_ns = ts if self.end_ns is None else max(self.end_ns, ts)
        payload_type = envelope["payload_type"]
        payload = envelope.get("payload")
        if not isinstance(payload, dict):
            self.diagnostics.warn(self.path, line, "bad-shape", f"{payload_type} without payload")
            return
        if payload_type == "runtime.session":
            kind = _str(payload.get("kind"))
            if kind == "run":
                self.on_run_event(payload, ts, line)
            elif kind == "task":
                self.on_task(payload, ts)
            elif kind == "approval":
                self.on_approval(payload)
            elif kind in RUNTIME_SESSION_KINDS:
                self._skip(f"muse:runtime.session/{kind}")
            else:
                self._unknown(f"muse:runtime.session/{kind}", line)
        elif payload_type == "runtime.session.metadata":
            self.on_metadata(_dict(payload.get("record")))
        elif payload_type == "run.model.configured":
            record = _dict(payload.get("record"))
            run_id = _str(_dict(record.get("run_stream")).get("id")) or _str(
                record.get("command_id")
            )
            model = _str(record.get("model_id"))
            if run_id and model:
                self.run_models[run_id] = model
            self.provider = self.provider or _str(record.get("provider_id"))
        elif payload_type == "runtime.session.route_facts":
            self.project = self.project or _str(_dict(payload.get("record")).get("cwd"))
        elif payload_type.startswith("subagent.control."):
            self.on_subagent_control(payload)
        elif payload_type.startswith("tool_batch.effect."):
            self.on_tool_effect(payload_type, _dict(payload.get("record")), ts)
        elif payload_type in PAYLOAD_TYPES or any(
            payload_type.startswith(prefix) for prefix in PAYLOAD_FAMILIES
        ):
            self._skip(f"muse:{payload_type}")
        else:
            self._unknown(f"muse:{payload_type}", line)

    def on_metadata(self, record: dict[str, Any]) -> None:
        self.project = _str(record.get("workspace_root")) or self.project
        self.provider = _str(record.get("provider_id")) or self.provider
        self.default_model = _str(record.get("model_id")) or self.default_model
        build = _dict(record.get("build"))
        self.version = _str(build.get("semver")) or self.version
        self.build = _str(build.get("sha")) or self.build

    # -- run events ------------------------------------------------------------------------

    def on_run_event(self, payload: dict[str, Any], ts: int, line: int) -> None:
        event = _dict(payload.get("event"))
        kind = _str(event.get("kind"))
        run_id = _str(payload.get("run_id")) or "run"
        run = self._run(run_id)
        if kind == "started":
            prompt = event.get("prompt")
            text = prompt if isinstance(prompt, str) else ""
            self.prompts.append(
                _Prompt(run_id, ts, len(text), preview(text), tokens=text_tokens(text))
            )
            run.prompt_id = run_id
            self._add_prompt(self.prompts[-1])
        elif kind == "context_block_diagnostic":
            self.on_block(run_id, event)
        elif kind == "model_request_configured":
            self.on_request_configured(event)
        elif kind == "model_input_trace_recorded":
            self.on_trace(run, event, ts, line)
        elif kind == "model_response_created":
            self._open(run, ts)
        elif kind == "reasoning_committed":
            if event.get("encrypted_content"):
                self.unmeasured["encrypted-reasoning"] += 1
            self._skip("muse:run/reasoning_committed")  # output, not context (§5.8)
        elif kind == "assistant_message_committed":
            message_text = event.get("text")
            item_id = _str(event.get("message_id")) or f"assistant:{ts}"
            self._output(
                run,
                _PendingItem(
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
                    self.on_tool_call(run, call, ts)
        elif kind in {
            "tool_result_batch_committed",
            "tool_results_committed",
            "tool_result_committed",
            "tool_result",
        }:
            results = event.get("results")
            for result in results if isinstance(results, list) else [event]:
                if isinstance(result, dict):
                    self.on_tool_result(result, ts)
        elif kind == "goal_usage_attribution":
            self.counts["goal_usage_attribution"] += 1  # a duplicate of model_completed
            self._skip("muse:run/goal_usage_attribution")
        elif kind == "model_completed":
            self.on_completed(run, event, ts, line)
        elif kind == "memory_reminder_child_session_linked":
            self.on_reminder_linked(run_id, event, ts)
        elif kind == "context_compaction_candidate":
            candidate = _str(event.get("candidate_id"))
            if candidate:
                self.candidates[candidate] = event
            self._skip("muse:run/context_compaction_candidate")
        elif kind == "context_compaction_installed":
            self.on_compaction(run, event, ts)
        elif kind == "context_compaction_fallback":
            self.counts["compaction_fallbacks"] += 1
            self.facts.append(
                (
                    f"compaction_fallback_{self.counts['compaction_fallbacks']}",
                    f"{event.get('reason')} (severity {event.get('severity')}, "
                    f"can_continue {event.get('can_continue')}); summarizer "
                    f"{_usage_text(_dict(event.get('summarizer_usage')))}",
                )
            )
        elif kind == "terminal":
            self.on_terminal(run, event, ts)
        elif kind in RUN_EVENT_KINDS:
            self._skip(f"muse:run/{kind}")
        else:
            self._unknown(f"muse:run/{kind}", line)

    def on_block(self, run_id: str, event: dict[str, Any]) -> None:
        block_id = _str(event.get("block_id")) or _str(event.get("source"))
        if block_id is None:
            return
        if self.blocks_run != run_id:
            # A run states its blocks again: they replace the previous run's set.
            self.blocks = {}
            self.blocks_run = run_id
        self.blocks[block_id] = Block.diagnosed(block_id, event)

    def on_request_configured(self, event: dict[str, Any]) -> None:
        base = event.get("base_instructions")
        if isinstance(base, str) and base:
            self.log.add("system:base_instructions", Category.SYSTEM, base, label="System")
        toolset = _dict(event.get("toolset"))
        tools = toolset.get("active_tools")
        if isinstance(tools, list) and tools:
            # Names only: the schemas are not in the journal (nor in the trace's lanes).
            self.unmeasured["tool-schemas"] = len(tools)
        messages = event.get("run_context_messages")
        blocks: list[Block] = []
        for message in messages if isinstance(messages, list) else []:
            block = context_block(_dict(message), self.blocks)
            self.log.add(block.item_id, block.category, block.size, label=block.label)
            if block.measured is not None:
                blocks.append(block.measured)
        if blocks:
            # Block sizes from the texts, for when no context_block_diagnostic was written.
            self.message_blocks = blocks

    def on_trace(self, run: _Run, event: dict[str, Any], ts: int, line: int) -> None:
        if event.get("schema_version") != 2 or event.get("scope") != "full_request":
            self._skip(
                f"muse:model_input_trace/schema-{event.get('schema_version')}/{event.get('scope')}"
            )
            return
        trace = parse_trace(event)
        if trace is None:
            self.diagnostics.warn(
                self.path, line, "bad-shape", "model_input_trace_recorded without aggregates"
            )
            return
        current = run.open
        if current is not None and current.trace is not None:
            if current.trace.model_step == trace.model_step:
                self.counts["repeated_traces"] += 1  # a retry: the later trace stands
                current.trace = trace
                return
            self.drop(run)  # the previous request never completed
        self._open(run, ts).trace = trace

    def on_tool_call(self, run: _Run, call: dict[str, Any], ts: int) -> None:
        call_id = _str(call.get("call_id")) or _str(call.get("id")) or f"call@{ts}"
        name = _str(call.get("name")) or "tool"
        args = call.get("args", call.get("arguments"))
        request = run.open.id if run.open is not None else run.last_request
        self._output(
            run,
            _PendingItem(
                f"call:{call_id}",
                Category.ASSISTANT,
                tool_call_text(name, args),
                "Tool arguments",
                call_id,
                SourceKind.TOOL,
            ),
        )
        if call_id not in self.tools:
            self.tools[call_id] = _Tool(
                call_id, name, ts, request, run.prompt_id, ToolArguments.of(args, decode=True)
            )

    def on_tool_result(self, result: dict[str, Any], ts: int) -> None:
        call_id = _str(result.get("tool_call_id")) or _str(result.get("call_id"))
        body = next((result[k] for k in ("text", "content", "output", "result") if k in result), "")
        text = body if isinstance(body, str) else json_text(body)
        item_id = f"result:{call_id}" if call_id else f"result@{ts}"
        self.log.add(
            item_id,
            Category.RESULTS,
            text,
            label="Tool result",
            source_id=call_id or "",
            source_kind=SourceKind.TOOL if call_id else SourceKind.NONE,
        )
        tool = self.tools.get(call_id) if call_id else None
        if tool is None:
            self.diagnostics.note("muse:result-without-call")
            return
        tool.end_ns = max(ts, tool.start_ns)
        tool.result_chars = len(text)
        tool.is_error = tool.is_error or _failed(text)

    def on_completed(self, run: _Run, event: dict[str, Any], ts: int, line: int) -> None:
        usage = _dict(event.get("usage"))
        prompt = token_count(usage.get("input_tokens"))
        output = token_count(usage.get("output_tokens"))
        request = run.open or self._open(run, ts)
        run.open = None
        if request.task_id:
            self.closed_tasks.add(request.task_id)
        if not usage or not (prompt or output):
            # The echo provider reports zeros: no size to show, so no request is invented.
            self.counts["zero_usage_model_completed"] += 1
            for item in request.outputs:
                self._add(item)
            return
        duration = event.get("duration_ms")
        if isinstance(duration, int) and not isinstance(duration, bool) and duration >= 0:
            start = ts - duration * 1_000_000
        else:
            start = request.first_status_ns or request.opened_ns
        start = min(start, ts)
        model = self._model(run.run_id, event.get("model"))
        if model and model not in self.models:
            self.models.append(model)
        trace = request.trace
        if trace is not None and trace.model_step is not None and trace.model_step != run.steps:
            self.warn_once(
                line,
                "muse-trace-step",
                f"model_input_trace_recorded model_step {trace.model_step} paired with "
                f"model_completed #{run.steps} of its run (records missing or a retry)",
            )
        run.steps += 1
        window = MUSE_SPARK_WINDOW if model.startswith("muse-spark") else None
        split = None
        if trace is not None:
            split = native_split(trace, list(self.blocks.values()) or self.message_blocks, prompt)
            if not split.fits:
                self.warn_once(
                    line,
                    "muse-blocks-exceed-context",
                    "context blocks add up to more bytes than the request's context lane; "
                    "that lane is shown unattributed",
                )
            if split.not_in_lanes:
                self.log.add(
                    NOT_IN_LANES_ID,
                    Category.UNATTRIBUTED,
                    0,
                    label=NOT_IN_LANES_LABEL,
                    tokens=split.not_in_lanes,
                )
            else:
                self.log.remove(NOT_IN_LANES_ID)
        self.log.observe(
            Observation(
                time_ns=start,
                anchor=AnchorKind.RESPONSE,
                anchor_id=request.id,
                stage=Stage.TRANSCRIPT_OBSERVED if split is None else Stage.REQUEST_INPUT,
                model=model or None,
                reported_tokens=prompt or None,
                window_tokens=window,
                native_categories=None if split is None else split.categories,
                basis=self.log.estimator.basis if split is None else Basis.NATIVE_BYTES,
                coverage=Coverage.COMPLETE if split and split.complete else Coverage.PARTIAL,
                item_stage=FALLBACK_ITEM_STAGE if split is None else NATIVE_ITEM_STAGE,
            )
        )
        for item in request.outputs:
            self._add(item)
        self.requests.append(
            _Request(
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
                stop_reason=_str(event.get("finish_reason")),
                run_id=run.run_id,
                native=trace is not None,
            )
        )
        run.last_request = request.id

    def on_reminder_linked(self, run_id: str, event: dict[str, Any], ts: int) -> None:
        task_id = _str(event.get("task_id"))
        child = _str(event.get("child_session_id"))
        agent = _str(event.get("reminder_agent_id")) or "reminder"
        self.counts["reminder_children"] += 1
        if not _str(event.get("child_session_log_path")):
            self.counts["reminder_children_without_log_path"] += 1
        if child:
            self.children[child] = (task_id or child, agent)
        if task_id and task_id not in self.reminders:
            self.reminders[task_id] = _Tool(
                task_id,
                agent,
                ts,
                None,
                self.runs[run_id].prompt_id if run_id in self.runs else None,
                reminder=True,
                child_session=child,
            )

    def on_compaction(self, run: _Run, event: dict[str, Any], ts: int) -> None:
        install = _str(event.get("install_id")) or _str(event.get("candidate_id")) or str(ts)
        if install in self.installs:
            self._skip("muse:duplicate-compaction")  # exports repeat records
            return
        self.installs.add(install)
        compaction_id = f"compaction-{len(self.compactions) + 1}"
        # The history before the summary leaves; what is sent beside it stays. Which items a
        # `preserved_segment` keeps cannot be told (its sequence space is unverified).
        current = next((p for p in self.prompts if p.id == run.prompt_id), None)
        present = current is not None and f"prompt:{current.id}" in self.log
        removed = self.log.clear(keep=_KEPT_BY_COMPACTION)
        if current is not None:
            # The turn being worked on is sent after the summary: its prompt stays.
            self._add_prompt(current)
            removed -= int(present)
        replay = event.get("replay_model_messages")
        if isinstance(replay, list) and replay:
            for index, message in enumerate(replay):
                message = _dict(message)
                text = "".join(
                    str(_dict(part).get("text") or "")
                    for part in (message.get("content") or [])
                    if isinstance(part, dict)
                )
                if message.get("role") == "user":
                    summary = text.lstrip().lower().startswith("summary")
                    category = Category.SUMMARIES if summary else Category.PROMPTS
                    label = "Compaction summary" if summary else "Replayed user message"
                else:
                    category, label = Category.MESSAGES, "Replayed developer message"
                self.log.add(f"{compaction_id}:replay:{index}", category, text, label=label)
        else:
            summary_text = _dict(event.get("replacement")).get("text")
            if isinstance(summary_text, str) and summary_text:
                self.log.add(
                    f"summary:{install}",
                    Category.SUMMARIES,
                    summary_text,
                    label="Compaction summary",
                )
        previous = self.requests[-1].end_ns if self.requests else None
        start = previous if previous is not None and previous <= ts else ts
        timing = "previous request's end → context_compaction_installed"
        usage = _dict(event.get("summarizer_usage")) or self._summary_metrics(event)
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
                model=self._model(run.run_id),
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
        before = _dict(event.get("budget_before"))
        after = _dict(event.get("budget_after")) or _dict(event.get("estimated_budget_after"))
        if "estimated_prompt_tokens" in before or "estimated_prompt_tokens" in after:
            source = _str(before.get("estimate_source")) or _str(after.get("estimate_source"))
            self.facts.append(
                (
                    f"{compaction_id}_estimated_prompt_tokens",
                    f"{before.get('estimated_prompt_tokens')} → "
                    f"{after.get('estimated_prompt_tokens')} (Muse's own estimate, "
                    f"{source or 'source not stated'}; not provider counts)",
                )
            )
        model = self._model(run.run_id)
        observation = self.log.observe(
            Observation.after_compaction(
                ts,
                compaction_id,
                model=model or None,
                window_tokens=MUSE_SPARK_WINDOW if model.startswith("muse-spark") else None,
                basis=self.log.estimator.basis,
                coverage=Coverage.PARTIAL,
            )
        )
        self.compactions.append(
            _Compaction(
                compaction_id,
                min(start, ts),
                ts,
                trigger=_str(event.get("trigger")),
                removed_items=removed,
                request=request,
                timing=timing,
                observation=observation,
                requests_before=len(self.requests),
            )
        )

    def _summary_metrics(self, event: dict[str, Any]) -> dict[str, Any]:
        """The candidate's `summary_call_metrics` diagnostic (a JSON string), if any."""
        candidate = self.candidates.get(_str(event.get("candidate_id")) or "", {})
        diagnostics = candidate.get("diagnostics")
        for diagnostic in diagnostics if isinstance(diagnostics, list) else []:
            diagnostic = _dict(diagnostic)
            if diagnostic.get("reason") == "summary_call_metrics":
                try:
                    return _dict(orjson.loads(str(diagnostic.get("message"))))
                except ValueError:
                    return {}
        return {}

    def on_terminal(self, run: _Run, event: dict[str, Any], ts: int) -> None:
        self.drop(run)
        run.end_ns = ts
        outcome = _str(event.get("terminal")) or "unknown"
        if outcome != "completed":
            self.counts[f"runs_{outcome}"] += 1
            self.facts.append((f"run_{outcome}", str(event.get("reason") or "")))

    def on_task(self, payload: dict[str, Any], ts: int) -> None:
        event = _dict(payload.get("event"))
        kind = _str(event.get("kind"))
        self._skip(f"muse:task/{kind}")
        task_id = _str(payload.get("task_id")) or _str(event.get("task_id"))
        if task_id is None:
            return
        if kind == "proposed":
            self.task_kinds[task_id] = str(event.get("task_kind") or "")
        elif kind == "side_effect_intent":
            key = event.get("idempotency_key")
            if isinstance(key, str) and key.startswith("tool:"):
                self.tool_tasks[task_id] = key.removeprefix("tool:")
        task_kind = self.task_kinds.get(task_id, "")
        run_id = _str(payload.get("run_id"))
        ended = kind in {"completed", "failed", "rejected", "cancelled"}
        if task_kind.startswith("model."):
            if run_id and task_id not in self.closed_tasks and kind in _REQUEST_TASK_EVENTS:
                request = self._open(self._run(run_id), ts)
                request.task_id = request.task_id or task_id
                if kind == "status" and request.first_status_ns is None:
                    request.first_status_ns = ts
        elif task_id in self.reminders:
            reminder = self.reminders[task_id]
            if kind == "started":
                reminder.start_ns = ts
            elif ended:
                reminder.end_ns = max(ts, reminder.start_ns)
                reminder.is_error = kind != "completed"
        elif task_id in self.tool_tasks:
            tool = self.tools.get(self.tool_tasks[task_id])
            if tool is not None and kind == "started":
                tool.exec_start_ns = ts
            elif tool is not None and ended:
                tool.exec_end_ns = ts
                tool.is_error = tool.is_error or kind != "completed"

    def on_approval(self, payload: dict[str, Any]) -> None:
        event = _dict(payload.get("event"))
        self._skip(f"muse:approval/{event.get('kind')}")
        if event.get("kind") == "automated_review_completed":
            usage = _dict(event.get("usage"))
            self.counts["approval_reviews"] += 1
            self.counts["approval_review_input_tokens"] += token_count(usage.get("input_tokens"))
            self.counts["approval_review_output_tokens"] += token_count(usage.get("output_tokens"))

    def on_subagent_control(self, payload: dict[str, Any]) -> None:
        """`subagent.control.*` (no real line seen; the layout under `record` is a guess)."""
        self._skip("muse:subagent.control")
        fields = {**payload, **_dict(payload.get("record")), **_dict(payload.get("event"))}
        call_id = _str(fields.get("dispatched_via_tool_call_id"))
        child = _str(fields.get("subagent_session_id")) or _str(fields.get("child_session_id"))
        subagent = _str(fields.get("subagent_id"))
        if call_id and child:
            self.children[child] = (call_id, "subagent")
            self.subagent_ids[child] = call_id
            if subagent:
                self.subagent_ids[subagent] = call_id
        elif child and subagent and subagent in self.subagent_ids:
            self.children[child] = (self.subagent_ids[subagent], "subagent")

    def on_tool_effect(self, payload_type: str, record: dict[str, Any], ts: int) -> None:
        self._skip(f"muse:{payload_type}")
        tool = self.tools.get(_str(record.get("call_id")) or "")
        if tool is None:
            return
        if payload_type.endswith(".started"):
            tool.exec_start_ns = ts
        elif payload_type.endswith(".terminal"):
            tool.exec_end_ns = ts
            if _dict(record.get("outcome")).get("kind") == "failed":
                tool.is_error = True


_REQUEST_TASK_EVENTS = frozenset({"proposed", "started", "status"})


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
