"""The arguments each slice carries (TRACE_CONTRACT §4–5): the capture's facts on
`profile (1)`, each kind's fields, and the typed `context` dict of a snapshot.

Plain dicts of str, int, bool, list and dict, in the order the trace writes them;
layout/ decides where the slices go, the writers how the values are encoded. The Perfetto
writer encodes the arguments of responses, tools, compactions and /context reports
straight from the model (writers/direct.py picks the same keys in the same order): a
change to those builders is made there too, or tests/writers/test_direct.py fails.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from agent_profiler import estimate
from agent_profiler.console import counted
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    Compaction,
    ContextSnapshot,
    Response,
    Session,
    SourceKind,
    ToolCall,
    frozen,
)
from agent_profiler.targets import shown
from agent_profiler.version import __version__
from agent_profiler.views import AfterCompaction, basename, main_model, session_label


class ContentMode(StrEnum):
    NONE = "none"  # counts and identities only: safe to attach to a bug report
    PREVIEWS = "previews"  # adds length-capped prompt and argument previews


@frozen
class TraceFacts:
    """Trace-level facts written on every `profile (1)` slice."""

    inputs: tuple[str, ...] = ()
    content: ContentMode = ContentMode.NONE
    # --redact: no tool targets (a file relative to the cwd, a program, a host) either.
    redact: bool = False
    # What reading cost: lines read, records used, skipped by kind, warnings by kind.
    accounting: tuple[tuple[str, object], ...] = ()


@frozen
class TraceHeader:
    """Trace-level facts, written once per trace: the root track's name and the trace
    attributes Trace Processor shows in its `metadata` table (docs/traces.md)."""

    sessions: int = 0
    subagents: int = 0
    harnesses: tuple[str, ...] = ()
    estimate_basis: str = "chars/4"
    aligned: bool = False

    @classmethod
    def of(cls, sessions: Sequence[Session], aligned: bool = False) -> TraceHeader:
        calibrated = estimate.is_calibrated(x.basis for s in sessions for x in s.snapshots)
        return cls(
            len(sessions),
            sum(1 for s in sessions if s.is_subagent),
            tuple(sorted({s.harness.value for s in sessions})),
            Basis.CALIBRATED.value if calibrated else "chars/4",
            aligned or any(s.shifted_ns for s in sessions),
        )

    def joined(self, other: TraceHeader) -> TraceHeader:
        """The facts of two sets of sessions together (journal groups read apart)."""
        if not other.sessions:
            return self
        if not self.sessions:
            return other
        bases = {self.estimate_basis, other.estimate_basis}
        return TraceHeader(
            self.sessions + other.sessions,
            self.subagents + other.subagents,
            tuple(sorted({*self.harnesses, *other.harnesses})),
            Basis.CALIBRATED.value if Basis.CALIBRATED.value in bases else "chars/4",
            self.aligned or other.aligned,
        )

    def root_name(self) -> str:
        count = counted(self.sessions, "session")
        if self.subagents:
            count += f" ({counted(self.subagents, 'subagent')})"
        order = "aligned at their start" if self.aligned else "by start time"
        return f"agent-profiler · {count}, {order}"

    def attributes(self) -> dict[str, str]:
        """`trace_attribute.<key>` rows of Trace Processor's `metadata` table."""
        return {
            "agent_profiler_version": __version__,
            "harnesses": ",".join(self.harnesses),
            "estimate_basis": self.estimate_basis,
            "clock": "aligned-start" if self.aligned else "wall-clock",
        }


# Session facts that are text written from the conversation (Gemini CLI's session summary,
# OpenCode's session title): only with --previews, as prompts are.
CONTENT_FACTS = frozenset({"session_summary", "session_title"})


# The command's inputs are said on every capture: listed up to this many, with their number
# beyond it, so an export of N journal files named one by one (a shell glob) does not write
# N names N times (300 files: ≈ 6 MB of names).
MAX_LISTED_INPUTS = 8

# `context` keys the contract marks optional that hold for many requests in a row: written
# only when they differ from the session's previous snapshot (docs/traces.md).
REPEATED_CONTEXT_KEYS = (
    "window_tokens",
    "effective_window_tokens",
    "compact_threshold_tokens",
    "model",
)

# The label of an item a tool call put in context, by its category: the one the adapters
# give the call's result and its arguments. Left out of a change linked to a tool slice of
# the capture, where the UI names the tool instead (TRACE_CONTRACT §5: "shown when no tool
# matched"); any other label stays.
TOOL_LABELS = {Category.RESULTS: "Tool result", Category.ASSISTANT: "Tool arguments"}


def profile_args(
    s: Session,
    facts: TraceFacts,
    capture_id: int,
    start: int,
    calibrated: bool,
    previous: dict[int, ContextSnapshot] | None = None,
    calls: Container[str] = frozenset(),
) -> dict[str, Any]:
    """`profile (1)`: what the capture is, where it came from and how it was measured."""
    args: dict[str, Any] = {
        "kind": "capture",
        "schema_version": 1,
        "capture_id": format(capture_id, "x"),
        "session_id": s.session_id,
        "harness": s.harness.value,
        "provider": s.provider or "unknown",
        # The model that served most (the session's name, summary's), as the window is
        # the session's; every model is in `models` when there are several.
        "model": main_model(s) or "unknown",
    }
    # 0 means "not known" (as on the Context window counter); the source says so.
    args["context_window_tokens"] = s.window_tokens or 0
    args["context_window_source"] = (s.window_source or "journal") if s.window_tokens else "unknown"
    if s.models[1:]:
        args["models"] = list(s.models)
    if s.harness_version:
        args["harness_version"] = s.harness_version
    args["recorder_version"] = f"agent-profiler {__version__}"
    args["timing"] = s.timing
    # Said once here rather than on every response and tool slice.
    args["response_timing"] = "journal: triggering record → last record of the response"
    args["tool_timing"] = "journal: call record → result record"
    if any(not r.output_tokens_reliable for r in s.responses):
        args["output_tokens_reliable"] = False
    if s.parent_session:
        args["parent_session"] = s.parent_session
        args["child_role"] = s.child_role or "subagent"
        if s.agent_id:
            args["agent_id"] = s.agent_id
        if s.parent_call_id:
            args["parent_call_id"] = s.parent_call_id
    args["label"] = session_label(s)
    args["session_labels"] = [s.harness.label] + (["subagent"] if s.parent_session else [])
    if s.incomplete:
        args["incomplete"] = True
    if s.shifted_ns:
        # export --align start moved the session: where it really started (align.py).
        real = s.start_ns - s.shifted_ns
        args["clock_alignment"] = "start"
        args["real_start"] = _iso(real)
        args["real_start_ns"] = real
    args["exporter"] = f"agent-profiler {__version__}"
    inputs = list(facts.inputs) or [basename(p) for p in s.sources]
    args["inputs"] = inputs[:MAX_LISTED_INPUTS]
    if len(inputs) > MAX_LISTED_INPUTS:
        args["inputs_total"] = len(inputs)
    args["sources"] = [basename(p) for p in s.sources]
    # How the categories were measured, in words; the basis only when it is not the
    # contract's default (chars/4), so default traces stay as they were.
    if calibrated:
        family = dict(s.facts).get(estimate.FAMILY_FACT)
        args["estimation"] = estimate.calibrated_estimation(
            family if isinstance(family, str) else None
        )
        args["estimate_basis"] = Basis.CALIBRATED.value
    else:
        args["estimation"] = estimate.CHARS4_ESTIMATION
    args["content"] = facts.content.value
    if facts.redact:
        args["redacted"] = "tool targets"
    if facts.accounting:
        args["accounting"] = dict(facts.accounting)
    if s.unmeasured:
        args["unmeasured"] = dict(s.unmeasured)
    if s.estimate_methods:
        # Items sized from a number the journal reports for them, not from text: how.
        args["estimate_methods"] = {
            m: estimate.EVIDENCE_METHODS.get(m, m) for m in s.estimate_methods
        }
    previews = facts.content is ContentMode.PREVIEWS
    for key, value in s.facts:
        # A title or summary the harness wrote from the conversation is content, not a name.
        if key in CONTENT_FACTS and not previews:
            continue
        args[key] = value
    args["responses"] = len(s.responses)
    at_end = AnchorKind.SESSION  # (a class's attribute: looked up once, not per snapshot)
    for snapshot in s.snapshots:
        if snapshot.anchor is at_end:
            args["context"] = context_dict(snapshot, start, _before(previous, snapshot), calls)
    return args


def _iso(ns: int) -> str:
    """A UTC time with milliseconds: `2026-02-11T21:24:19.360Z`."""
    moment = datetime.fromtimestamp(ns // 1_000_000 / 1000, tz=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ns // 1_000_000 % 1000:03d}Z"


def _before(
    previous: dict[int, ContextSnapshot] | None, snapshot: ContextSnapshot
) -> ContextSnapshot | None:
    return None if previous is None else previous.get(id(snapshot))


def response_args(
    s: Session,
    response: Response,
    snapshot: ContextSnapshot | None,
    previous: ContextSnapshot | None = None,
    window: int | None = None,
    calls: Container[str] = frozenset(),
) -> dict[str, Any]:
    """A model response: its usage, its outcome and the context it was sent with. `window`:
    the `context_window_tokens` it states (the request's own window, said on the session's
    first response and where it changes: layout.data's `stated_windows`; 0: none; None:
    the session's, for a response on its own)."""
    usage = response.usage
    args: dict[str, Any] = {
        "kind": "assistant-message",
        "model": response.model,
        "provider": s.provider or "unknown",
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "context_tokens": usage.prompt_tokens,
    }
    if not response.usage_known:  # the contract's keys stay; the zeros are not a size
        args["usage_known"] = False
        del args["context_tokens"]
    if usage.reasoning_tokens:
        args["reasoning_tokens"] = usage.reasoning_tokens
    if response.price_context:  # billed at other rates (Claude Code's fast mode)
        args["price_context"] = response.price_context
    if response.web_searches:  # server-side searches, billed per search
        args["web_searches"] = response.web_searches
    if window is None:
        window = s.window_tokens
    if window:
        # The request's own window: a model switch changes it (Codex reports it with each
        # request); absent, it is the window of the response before.
        args["context_window_tokens"] = window
    if response.is_error:  # absent: false (a HABIT key on responses, TRACE_CONTRACT §4)
        args["is_error"] = True
    if response.stop_reason:
        args["stop_reason"] = response.stop_reason
    args["response_id"] = response.id
    if snapshot is not None:
        args["context"] = context_dict(snapshot, response.start_ns, previous, calls)
    return args


def tool_args(call: ToolCall, previews: bool, targets: bool = True) -> dict[str, Any]:
    """A tool execution: argument size and keys (values only with previews), what it acted
    on (`target`, `target_kind`: targets.py; not with --redact), result size."""
    args: dict[str, Any] = {
        "kind": "tool-execution",
        "call_id": call.call_id,
        "name": call.name,
        "is_error": call.is_error,
        "bytes": call.arg_bytes,
        "keys": list(call.arg_keys),
    }
    kind, value = shown(call.target)
    if targets and value:
        args["target"] = value
        args["target_kind"] = kind
    if previews and call.args_preview:
        args["args"] = dict(call.args_preview)
    args["result_chars"] = call.result_chars
    if call.timing:  # the usual source is stated once, on profile (1)
        args["timing"] = call.timing
    if call.incomplete:
        args["incomplete"] = True
    if call.child_session:
        args["delegation"] = True
        args["child_session"] = call.child_session
    if not call.by_model:  # work the harness started (a Muse reminder): no call summary counts
        args["started_by"] = "harness"
    return args


def compaction_args(
    compaction: Compaction,
    snapshot: ContextSnapshot | None,
    previous: ContextSnapshot | None = None,
    calls: Container[str] = frozenset(),
    after: AfterCompaction | None = None,
) -> dict[str, Any]:
    """A compaction: its trigger, the sizes before and after (with where the size after
    comes from: views.compactions_after), and the context it left."""
    args: dict[str, Any] = {"kind": "compaction", "compaction_kind": compaction.kind}
    if compaction.trigger:
        args["trigger"] = compaction.trigger
    if compaction.pre_tokens is not None:
        args["pre_tokens"] = compaction.pre_tokens
    if after is not None:
        args["post_tokens"] = after.tokens
        args["post_tokens_source"] = after.source
    args["removed_items"] = compaction.removed_items
    if compaction.timing:
        args["timing"] = compaction.timing
    if snapshot is not None:
        args["context"] = context_dict(snapshot, compaction.start_ns, previous, calls)
    return args


def compaction_response_args(request: Response) -> dict[str, Any]:
    """The model request that wrote a compaction's summary: its usage."""
    usage = request.usage
    return {
        "kind": "compaction-response",
        "model": request.model,
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "context_tokens": usage.prompt_tokens,
    }


def failed_request_args(request: Response) -> dict[str, Any]:
    """A request that failed before any usage came (no size: never a request of 0 tokens)."""
    return {
        "kind": "provider-request",
        "incomplete": True,
        "is_error": True,
        "reason": request.stop_reason or "error",
        "model": request.model,
        "response_id": request.id,
    }


def context_command_args(
    snapshot: ContextSnapshot,
    previous: ContextSnapshot | None = None,
    calls: Container[str] = frozenset(),
) -> dict[str, Any]:
    """The harness's own context report (Claude Code's /context) and its native snapshot."""
    args: dict[str, Any] = {"kind": "context-command"}
    if snapshot.reported_tokens is not None:
        args["used_tokens"] = snapshot.reported_tokens
    if snapshot.window_tokens:
        args["context_window_tokens"] = snapshot.window_tokens
    args["context"] = context_dict(snapshot, snapshot.time_ns, previous, calls)
    return args


def context_dict(
    snapshot: ContextSnapshot,
    slice_start: int,
    previous: ContextSnapshot | None = None,
    calls: Container[str] = frozenset(),
) -> dict[str, Any]:
    """The typed `context` annotation (TRACE_CONTRACT §5) of a snapshot on a slice that
    starts at slice_start. One is written per request, so it is built as directly as
    possible (the Perfetto writer encodes it straight to bytes: writers/direct.py, which
    must follow any change here). `previous` is the session's
    snapshot before this one in time: REPEATED_CONTEXT_KEYS equal to its are left out.
    `calls` are the call ids of the capture's tool slices: a change a tool of the capture
    put there leaves out its `source_kind` (it is `tool`) and a label that is the default
    for its category (TOOL_LABELS), which Agent Profiler shows only when no tool matched."""
    context: dict[str, Any] = {
        "version": 1,
        "stage": snapshot.stage.value,
    }
    if snapshot.item_stage:
        context["item_stage"] = snapshot.item_stage
    context["basis"] = snapshot.basis.value
    context["coverage"] = snapshot.coverage.value
    context["baseline"] = snapshot.baseline
    context["categories"] = {c.value: t for c, t in snapshot.categories}
    context["estimated_tokens"] = snapshot.estimated_tokens
    if snapshot.reported_tokens is not None:
        context["reported_tokens"] = snapshot.reported_tokens
    for key in REPEATED_CONTEXT_KEYS:
        value = getattr(snapshot, key)
        if value is not None and (previous is None or getattr(previous, key) != value):
            context[key] = value
    changes = []
    for change in snapshot.changes:
        entry: dict[str, Any] = {
            "id": change.id,
            "category": change.category.value,
            "change": change.change.value,
            "tokens": change.tokens,
            "delta_tokens": change.delta_tokens,
        }
        if change.chars is not None:
            entry["chars"] = change.chars
        linked = change.source_kind is SourceKind.TOOL and change.source_id in calls
        if change.label and not (linked and change.label == TOOL_LABELS.get(change.category)):
            entry["label"] = change.label
        # Empty means "no link" (TRACE_CONTRACT §5), so an absent one reads the same and
        # saves ≈ 4 bytes per change (most changes of a long session have none).
        if change.source_id:
            entry["source_id"] = change.source_id
        if change.source_kind and not linked:
            entry["source_kind"] = change.source_kind.value
        if change.method:
            entry["method"] = change.method
        changes.append(entry)
    context["changes"] = changes
    # Both are optional with a default of 0 (TRACE_CONTRACT §5): written only when not 0.
    if snapshot.omitted_changes:
        context["omitted_changes"] = snapshot.omitted_changes
    if snapshot.time_ns > slice_start:
        context["sample_offset_ns"] = snapshot.time_ns - slice_start
    return context
