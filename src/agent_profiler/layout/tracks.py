"""The track table: every track of a session's capture, one row each, in the order
ui.perfetto.dev shows them (TrackDescriptor `child_ordering = EXPLICIT` on the capture,
`sibling_order_rank` = the row's place; the v58 UI sorts siblings by rank, and by name
without it). It reads like the session: the span, what came in, the model's work, the
tools it ran, compactions and the journal's events; then the context it cost (the reported
size and its window, the composition group), then cumulative usage, and the configuration
lane, which rarely changes, last. Reordering the UI is reordering `TRACKS`; a new track is
a new row.

Each slice track says how its slices are made (spec.Slices): from which items, each
item's span, name, category, arguments and flows. The arguments themselves are built by
annotations.py (TRACE_CONTRACT §4–5); the functions here only pick what they are given."""

from __future__ import annotations

from functools import partial
from operator import attrgetter, itemgetter
from typing import Any

from agent_profiler.annotations import (
    compaction_args,
    compaction_response_args,
    context_command_args,
    failed_request_args,
    profile_args,
    response_args,
    tool_args,
)
from agent_profiler.layout.counters import AdditionInstant
from agent_profiler.layout.data import SessionData
from agent_profiler.layout.spec import (
    ADDITIONS,
    CALLS,
    CAPTURE,
    COMPACTIONS,
    FAILED,
    MARKERS,
    METADATA,
    NATIVES,
    PROMPTS,
    RESPONSES,
    RUNS,
    SESSION_INPUT,
    Flows,
    Slices,
    Table,
    TrackSpec,
)
from agent_profiler.model import (
    AnchorKind,
    Compaction,
    ContextSnapshot,
    Marker,
    Prompt,
    Response,
    ToolCall,
)

# ------------------------------------------------------------------------ spans


# Spans are attrgetters where they can be (one C call per item, no Python frame).
_span = attrgetter("start_ns", "end_ns")  # a prompt's, response's, tool call's, compaction's
_at_start = attrgetter("start_ns", "start_ns")  # a prompt's input


# ---------------------------------------------------------------------- the capture


_capture_span = attrgetter("start", "end")
_SESSION = AnchorKind.SESSION  # (a global: a class's attribute is looked up each time)


def _profile_args(data: SessionData, index: int, item: SessionData) -> dict[str, Any]:
    return profile_args(
        data.session,
        data.facts,
        data.capture_uuid,
        data.start,
        data.calibrated,
        {
            id(snapshot): previous
            for i, snapshot in enumerate(data.session.snapshots)
            if snapshot.anchor is _SESSION and (previous := data.previous(i)) is not None
        },
        data.call_ids,
    )


# ------------------------------------------------------------- inputs and prompts


def _input_args(data: SessionData, index: int, prompt: Prompt) -> dict[str, Any]:
    return {"source": prompt.source, "timing": "journal-record-time"}


def _input_flows(data: SessionData, index: int, prompt: Prompt) -> Flows:
    """To its prompt slice and to each of its responses; the first input ends its parent's
    flows. The responses' flows start here, not at the prompt: ui.perfetto.dev draws a flow
    from its source's end unless the source starts at or after the target, and the prompt
    spans the whole turn, so from it every later response's arrow ran back in time. An
    instant ends where it starts, at or before each response's start: drawn forwards."""
    out = (data.input_flows[index], *data.prompt_links.values_of(index, data.response_flows))
    return ((*out, *data.child_flows) if index == 0 else out), out


def _session_input_flows(data: SessionData, index: int, start: int) -> Flows:
    return data.child_flows, ()


def _instant(time: int) -> tuple[int, int]:
    return time, time


def _prompt_args(data: SessionData, index: int, prompt: Prompt) -> dict[str, Any]:
    text = prompt.preview if data.previews else f"[{prompt.chars} chars; not included]"
    return {
        "kind": "prompt",
        "text": text,
        "length": prompt.chars,
        "turn_id": prompt.id,
        "source": prompt.source,
    }


def _prompt_flows(data: SessionData, index: int, prompt: Prompt) -> Flows:
    """From its input (its responses' flows start at the input: `_input_flows`)."""
    return (data.input_flows[index],), ()


# ------------------------------------------------------------------ requests


def _response_args(data: SessionData, index: int, response: Response) -> Any:
    position = data.response_snapshot[index]
    snapshot = previous = None  # data.snapshot and data.previous, inline (per response)
    if position >= 0:
        snapshots = data.session.snapshots
        snapshot = snapshots[position]
        before = data.before[position]
        previous = snapshots[before] if before >= 0 else None
    return partial(
        response_args,
        data.session,
        response,
        snapshot,
        previous,
        data.stated_windows[index],
        data.call_ids,
    )


def _response_flows(data: SessionData, index: int, response: Response) -> Flows:
    """From its prompt's input; to each of its tool calls."""
    out = data.call_links.values_of(index, data.call_flows_in)
    arrival = data.response_flows[index]
    return ((arrival, *out) if arrival else out), out


def _failed_span(request: Response) -> tuple[int, int]:
    return request.start_ns, max(request.end_ns, request.start_ns)


def _failed_args(data: SessionData, index: int, request: Response) -> dict[str, Any]:
    return failed_request_args(request)


# ----------------------------------------------------------------------- tools


_tool_name = attrgetter("name")  # as the spans: a C call per slice, no Python frame


def _tool_args(data: SessionData, index: int, call: ToolCall) -> Any:
    return partial(tool_args, call, data.previews, not data.facts.redact)


def _tool_flows(data: SessionData, index: int, call: ToolCall) -> Flows:
    """From its response; to its subagent's first input and the additions it caused."""
    out = data.call_flows_out.get(index, ())
    arrival = data.call_flows_in[index]
    return ((arrival, *out) if arrival else out), out


# -------------------------------------------------------- compactions and /context


_compaction_name = attrgetter("kind")


def _compaction_args(data: SessionData, index: int, compaction: Compaction) -> Any:
    position = data.compaction_snapshot[index]
    return partial(
        compaction_args,
        compaction,
        data.snapshot(position),
        data.previous(position),
        data.call_ids,
        data.after[index],
    )


def _compaction_request_span(compaction: Compaction) -> tuple[int, int] | None:
    request = compaction.request
    return None if request is None else (request.start_ns, request.end_ns)


def _compaction_request_args(data: SessionData, index: int, compaction: Compaction) -> Any:
    assert compaction.request is not None  # its span said so
    return compaction_response_args(compaction.request)


def _native_span(native: tuple[int, ContextSnapshot]) -> tuple[int, int]:
    return native[1].time_ns, native[1].time_ns


def _native_args(data: SessionData, index: int, native: tuple[int, ContextSnapshot]) -> Any:
    position, snapshot = native
    return partial(context_command_args, snapshot, data.previous(position), data.call_ids)


# ----------------------------------------------------------- largest additions


_addition_span = attrgetter("time", "time")


_addition_name = attrgetter("name")


def _addition_args(data: SessionData, index: int, addition: AdditionInstant) -> dict[str, Any]:
    return addition.args


def _addition_flows(data: SessionData, index: int, addition: AdditionInstant) -> Flows:
    return ((addition.flow,) if addition.flow else ()), ()


def _context_description(data: SessionData) -> str:
    return (
        f"Context composition by category ({data.estimate_note}). "
        "'Context size' beside it is the reported request input."
    )


# ---------------------------------------------------------------- configuration


_run_span = itemgetter(0, 1)  # a model run's (start, end, model)


def _run_args(data: SessionData, index: int, run: tuple[int, int, str]) -> dict[str, Any]:
    session = data.session
    args: dict[str, Any] = {
        "harness": session.harness.value,
        "provider": session.provider or "unknown",
        "model": run[2],
    }
    if data.run_windows[index]:
        # The run's own: a session that switched models switched windows.
        args["context_window_tokens"] = data.run_windows[index]
    return args


# The markers that change the configuration (Pi's model and thinking level): on its lane;
# every other marker (Gemini CLI's notices and rewinds, OpenCode's patches and retries) is
# an event of the session, on `Events`.
_CONFIGURATION_MARKERS = frozenset({"model_change", "thinking_level_change"})
_MARKER_NAME_CHARS = 100  # a name is read on hover; `value` keeps the whole text


def _configuration_span(marker: Marker) -> tuple[int, int] | None:
    return (marker.time_ns, marker.time_ns) if marker.kind in _CONFIGURATION_MARKERS else None


def _event_span(marker: Marker) -> tuple[int, int] | None:
    return None if marker.kind in _CONFIGURATION_MARKERS else (marker.time_ns, marker.time_ns)


def _marker_name(marker: Marker) -> str:
    """`<kind>: <value>`, its first line only (a Gemini CLI notice runs over several),
    cut to `_MARKER_NAME_CHARS` with an ellipsis."""
    name = f"{marker.kind.replace('_', ' ')}: {marker.value.strip().partition(chr(10))[0]}"
    name = name.rstrip()
    if len(name) > _MARKER_NAME_CHARS:
        name = name[: _MARKER_NAME_CHARS - 1].rstrip() + "…"
    return name


def _marker_args(data: SessionData, index: int, marker: Marker) -> dict[str, Any]:
    return {"marker": marker.kind, "value": marker.value}


# ------------------------------------------------------------------ the table

TRACKS: tuple[TrackSpec, ...] = (
    TrackSpec(
        "Session",
        (Slices(CAPTURE, _capture_span, "profile (1)", _profile_args, category=METADATA),),
        description="profile (1): the whole session, from the first moment its journal "
        "records to the last; its arguments are the session's facts (harness, model, window, "
        "inputs, where its times come from, how every number was estimated).",
        merge=False,
    ),
    TrackSpec(
        "Inputs",
        (
            Slices(PROMPTS, _at_start, "prompt-input", _input_args, _input_flows, instant=True),
            # A subagent with no prompt: its first input, where its parent's flow ends.
            Slices(
                SESSION_INPUT,
                _instant,
                "prompt-input",
                {"source": "agent", "timing": "session-start"},
                _session_input_flows,
                instant=True,
            ),
        ),
        description="prompt-input: a prompt arriving, at its record's time (source user; in "
        "a subagent, agent for its task and its parent's words, or harness for the runtime's "
        "own; a subagent with no prompt: at its start); the arrows to its prompt and to each "
        "of its responses start here.",
    ),
    TrackSpec(
        "Prompts",
        (Slices(PROMPTS, _span, "prompt", _prompt_args, _prompt_flows),),
        description="prompt: a user turn, from its prompt's record to the end of the work it "
        "started; its text only in an export with --previews.",
    ),
    TrackSpec(
        "Responses",
        (Slices(RESPONSES, _span, "response", _response_args, _response_flows),),
        description="response (kind assistant-message): one model request, with the usage "
        "the journal reports and the context snapshot of what it was sent; from the record "
        "that set it off (the prompt or the last tool result, where the journal shows one) to "
        "its last record.",
    ),
    # Requests that failed before any usage came: spans with no size, so they never read
    # as a request of 0 tokens (TRACE_CONTRACT §4: request without completion).
    TrackSpec(
        "Requests",
        (Slices(FAILED, _failed_span, "request", _failed_args),),
        description="request (kind provider-request): a request that failed before any usage "
        "came (aborted, a provider error), over the journal's records of it; it has no size, "
        "so it never reads as a request of 0 tokens.",
    ),
    # One dict for every turn slice (a long session has thousands); writers only read args.
    TrackSpec(
        "Turns",
        (Slices(RESPONSES, _span, "turn", {"kind": "turn"}),),
        description="turn: one per response, over the same span as Responses; Agent "
        "Profiler counts these as its turns (kind turn: a model step, not a user turn).",
    ),
    TrackSpec(
        "Tools",
        (Slices(CALLS, _span, _tool_name, _tool_args, _tool_flows),),
        description="One slice per tool call (kind tool-execution), from the call's record to "
        "its result's (its timing argument says so when the span comes from elsewhere); calls "
        "that overlap take more Tools lanes.",
    ),
    TrackSpec(
        "Compaction",
        (Slices(COMPACTIONS, _span, _compaction_name, _compaction_args),),
        description="compaction / microcompaction: history replaced by a summary (or old "
        "results cleared), with the sizes before and after; its span is what the journal "
        "shows of it (its timing argument).",
    ),
    TrackSpec(
        "Compaction responses",
        (Slices(COMPACTIONS, _compaction_request_span, "response", _compaction_request_args),),
        description="response (kind compaction-response): the request that wrote a "
        "compaction's summary, when the journal keeps it (Claude Code's agent-acompact file), "
        "with its usage; not counted as a turn.",
    ),
    TrackSpec(
        "Events",
        (Slices(MARKERS, _event_span, _marker_name, _marker_args, instant=True),),
        description="Moments the journal marks that are neither requests nor configuration: "
        "Claude Code's failed API calls it retried (status, error type, attempt), Gemini "
        "CLI's error, warning and info notices and its rewinds, OpenCode's file patches and "
        "retries. A notice or API error at its record's time; a patch, retry or rewind, "
        "which carries none, at the last time read before it. The name is the value's first "
        "line; its value argument holds it all.",
    ),
    # The harness's own context reports (Claude Code's /context runs), each a zero-length
    # slice carrying its native snapshot.
    TrackSpec(
        "Context command",
        (Slices(NATIVES, _native_span, "/context", _native_args),),
        description="/context (kind context-command): a /context run the user typed in Claude "
        "Code, at its output's record, with the harness's own breakdown as a native context "
        "snapshot.",
    ),
    TrackSpec(
        "Context size",
        counter=True,
        description="Reported request input (cached tokens counted once) at each model "
        "request; pre/post tokens around compactions.",
    ),
    TrackSpec(
        "Context fill",
        counter=True,
        unit="%",  # not a token count (TRACE_CONTRACT §6)
        description="Context size as a percentage of the window at each request (rounded "
        "up, so any context reads at least 1%).",
    ),
    TrackSpec(
        "Context window",
        counter=True,
        description="The model's context window at each request (an axis of its own, so a "
        "small context on a large window is not flattened).",
    ),
    TrackSpec(
        "Context",
        children=(
            # First in the group: right below the Tools lanes' neighbours, so the arrows
            # from the tool calls cross as few counters as possible. No `kind` and no
            # `context` on these (TRACE_CONTRACT §9): they carry ui.perfetto.dev's arrows.
            TrackSpec(
                "Largest additions",
                (
                    Slices(
                        ADDITIONS,
                        _addition_span,
                        _addition_name,
                        _addition_args,
                        _addition_flows,
                        instant=True,
                        category="agentprof-additions",
                    ),
                ),
                description="The largest non-baseline additions to the context; each has a "
                "flow arrow from the tool call that caused it.",
                merge=False,
            ),
        ),
        description=_context_description,
    ),
    TrackSpec(
        "Input tokens",
        counter=True,
        description="Cumulative input tokens as the journal reports them (usage.input_tokens).",
    ),
    TrackSpec(
        "Output tokens",
        counter=True,
        description="Cumulative output tokens as the journal reports them.",
    ),
    TrackSpec(
        "Configuration",
        (
            Slices(RUNS, _run_span, "run-configuration", _run_args, category=METADATA),
            Slices(MARKERS, _configuration_span, _marker_name, _marker_args, instant=True),
        ),
        description="run-configuration: the model in use and its window, one slice per run of "
        "requests with one model, from its first request's start to the next run's (the last "
        "to the session's end); instants: Pi's model and thinking-level changes, at their "
        "entries' times.",
    ),
)

TABLE = Table(TRACKS)
