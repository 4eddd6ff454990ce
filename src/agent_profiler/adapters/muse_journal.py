"""Muse: one log's event stream read into drafts (runs, requests, tools, compactions).

Owns the builder's state and what each Muse envelope means (FORMATS-muse §2–6): metadata,
tasks, approvals, tool effects. A run's events are read by `muse_runs`, request lanes by
`muse_lanes`; the record tables are in `muse_records`, the drafts in `muse_drafts`; and
`muse` groups the logs and finishes their sessions.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import field
from typing import Any

import orjson

from agent_profiler.adapters.common import Clock, token_count
from agent_profiler.adapters.muse_drafts import (
    MuseCompaction,
    OpenRequest,
    PendingItem,
    PromptDraft,
    Request,
    Run,
    Tool,
    as_dict,
    str_or_none,
)
from agent_profiler.adapters.muse_lanes import Block
from agent_profiler.adapters.muse_records import (
    APPROVAL_STREAM,
    PAYLOAD_FAMILIES,
    PAYLOAD_TYPES,
    RECORD_TYPES,
    RUNTIME_SESSION_KINDS,
)
from agent_profiler.adapters.muse_runs import on_run_event
from agent_profiler.attribution import ContextLog
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.errors import JournalError
from agent_profiler.model import Category, SourceKind
from agent_profiler.records import record

EXPORT_MESSAGE = (
    "a JSON array of Muse event objects (`muse export` output), not a session.jsonl "
    "journal: it has no envelopes, so no times, streams or usage; export the session's "
    "session.jsonl instead"
)
APPROVAL_MESSAGE = (
    "a Muse approval-review log (the automatic approval reviewer's own run, on a "
    "synthetic clock), not a session timeline; export its session's session.jsonl"
)


def is_event_list(value: list[Any]) -> bool:
    return bool(value) and all(
        isinstance(v, dict) and isinstance(v.get("kind"), str) and "payload_type" not in v
        for v in value
    )


# -- planning ---------------------------------------------------------------------------------


class ApprovalReviewLogError(JournalError):
    """The file is an approval-review log: refused as a main journal, skipped as an extra."""


# Past this many µs, `recorded_at` in ns is beyond a trace's unsigned 64-bit times.
_RECORDED_LIMIT = (2**63 - 1) // 1000 + 1


def _recorded_ns(recorded_at: object) -> int | None:
    """`recorded_at` (µs since the epoch) in ns for the shared `Clock.place`, or None when it
    is no time a trace can hold (not an int, before 1970, past 2262: placed and warned
    about by the clock). It went through an ISO string the clock parsed back, and a value
    past the year 9999 raised OverflowError there: the whole file was lost."""
    if type(recorded_at) is int and 0 <= recorded_at < _RECORDED_LIMIT:
        return recorded_at * 1000
    return None


@record
class JournalBuilder:
    """Accumulates one Muse log (one session stream)."""

    path: str
    diagnostics: Diagnostics
    session_id: str | None = None
    log: ContextLog = field(default_factory=ContextLog)
    in_frame: bool = False  # reading the children of a retained_frame line
    runs: dict[str, Run] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    request_count: int = 0
    tools: dict[str, Tool] = field(default_factory=dict)
    prompts: list[PromptDraft] = field(default_factory=list)
    compactions: list[MuseCompaction] = field(default_factory=list)
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
    reminders: dict[str, Tool] = field(default_factory=dict)  # task id → pseudo call
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

    def run(self, run_id: str) -> Run:
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = Run(run_id)
        return run

    def open_request(self, run: Run, ts: int) -> OpenRequest:
        if run.open is None:
            self.request_count += 1
            run.open = OpenRequest(f"request-{self.request_count}", run.run_id, ts)
        return run.open

    def add_output(self, run: Run, item: PendingItem) -> None:
        """A response's output enters the context after its request's snapshot."""
        if run.open is not None:
            run.open.outputs.append(item)
        else:
            self.add_item(item)

    def add_item(self, item: PendingItem) -> None:
        self.log.add(
            item.item_id,
            item.category,
            item.text,
            label=item.label,
            source_id=item.source_id,
            source_kind=item.source_kind,
        )

    def add_prompt(self, prompt: PromptDraft) -> None:
        self.log.add(
            f"prompt:{prompt.id}",
            Category.PROMPTS,
            prompt.chars,
            tokens=prompt.tokens,
            label="User prompt",
            source_kind=SourceKind.PROMPT,
        )

    def drop(self, run: Run) -> None:
        """A request that never completed: no snapshot, its outputs still happened."""
        if run.open is None:
            return
        for item in run.open.outputs:
            self.add_item(item)
        self.counts["requests-without-usage"] += 1
        run.open = None

    def model_of(self, run_id: str, reported: object = None) -> str:
        return str_or_none(reported) or self.run_models.get(run_id) or self.default_model or ""

    # -- lines -----------------------------------------------------------------------------

    def skip(self, kind: str) -> None:
        if self.in_frame:
            self.diagnostics.note(kind)
        else:
            self.diagnostics.skip(kind)

    def unknown(self, kind: str, line: int) -> None:
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
            self.diagnostics.reject(self.path, line, "line is a JSON array")
            return
        if not isinstance(value, dict):
            self.diagnostics.reject(self.path, line, "line is not a JSON object")
            return
        if "retained_marker" in value:
            self.counts["omitted_live_only"] += 1
            self.skip("muse:retained_marker")
            return
        if "retained_frame" in value:
            # The frame line is used through its children; what they skip is noted, not
            # counted as skipped lines (the accounting is per line).
            self.in_frame = True
            children = value.get("children")
            for child in children if isinstance(children, list) else []:
                text = as_dict(child).get("record_json")
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
        self.skip("muse:non-envelope-line")

    def on_envelope(self, envelope: dict[str, Any], line: int, clock: Clock) -> None:
        stream = envelope["stream"]
        stream_id, stream_kind = stream.get("id"), stream.get("kind")
        if self.session_id is None:
            if stream_kind == APPROVAL_STREAM:
                raise ApprovalReviewLogError(self.path, APPROVAL_MESSAGE, line)
            if stream_kind != "session" or not isinstance(stream_id, str):
                self.skip("muse:other-stream")
                return
            self.session_id = stream_id
        elif stream_id != self.session_id:
            self.skip("muse:other-stream")
            return
        ts = clock.place(_recorded_ns(envelope.get("recorded_at")), line)
        self.start_ns = ts if self.start_ns is None else min(self.start_ns, ts)
        self.end_ns = ts if self.end_ns is None else max(self.end_ns, ts)
        payload_type = envelope["payload_type"]
        record_type = envelope.get("record_type")
        if record_type is not None and (
            record_type.__class__ is not str or record_type not in RECORD_TYPES
        ):
            name = record_type if isinstance(record_type, str) else journal_name(record_type)
            self.unknown(f"muse:record_type/{name}", line)
            return
        payload = envelope.get("payload")
        if not isinstance(payload, dict):
            shown = journal_name(payload_type)
            self.diagnostics.warn(self.path, line, "bad-shape", f"{shown} without payload")
            return
        if payload_type == "runtime.session":
            kind = str_or_none(payload.get("kind"))
            if kind == "run":
                on_run_event(self, payload, ts, line)
            elif kind == "task":
                self.on_task(payload, ts)
            elif kind == "approval":
                self.on_approval(payload)
            elif kind in RUNTIME_SESSION_KINDS:
                self.skip(f"muse:runtime.session/{kind}")
            else:
                self.unknown(f"muse:runtime.session/{kind}", line)
        elif payload_type == "runtime.session.metadata":
            self.on_metadata(as_dict(payload.get("record")))
        elif payload_type == "run.model.configured":
            record = as_dict(payload.get("record"))
            run_id = str_or_none(as_dict(record.get("run_stream")).get("id")) or str_or_none(
                record.get("command_id")
            )
            model = str_or_none(record.get("model_id"))
            if run_id and model:
                self.run_models[run_id] = model
            self.provider = self.provider or str_or_none(record.get("provider_id"))
        elif payload_type == "runtime.session.route_facts":
            self.project = self.project or str_or_none(as_dict(payload.get("record")).get("cwd"))
        elif payload_type.startswith("subagent.control."):
            self.on_subagent_control(payload)
        elif payload_type.startswith("tool_batch.effect."):
            self.on_tool_effect(payload_type, as_dict(payload.get("record")), ts)
        elif payload_type in PAYLOAD_TYPES or any(
            payload_type.startswith(prefix) for prefix in PAYLOAD_FAMILIES
        ):
            self.skip(f"muse:{payload_type}")
        else:
            self.unknown(f"muse:{payload_type}", line)

    def on_metadata(self, record: dict[str, Any]) -> None:
        self.project = str_or_none(record.get("workspace_root")) or self.project
        self.provider = str_or_none(record.get("provider_id")) or self.provider
        self.default_model = str_or_none(record.get("model_id")) or self.default_model
        build = as_dict(record.get("build"))
        self.version = str_or_none(build.get("semver")) or self.version
        self.build = str_or_none(build.get("sha")) or self.build

    def on_task(self, payload: dict[str, Any], ts: int) -> None:
        event = as_dict(payload.get("event"))
        kind = str_or_none(event.get("kind"))
        self.skip(f"muse:task/{kind}")
        task_id = str_or_none(payload.get("task_id")) or str_or_none(event.get("task_id"))
        if task_id is None:
            return
        if kind == "proposed":
            self.task_kinds[task_id] = str(event.get("task_kind") or "")
        elif kind == "side_effect_intent":
            key = event.get("idempotency_key")
            if isinstance(key, str) and key.startswith("tool:"):
                self.tool_tasks[task_id] = key.removeprefix("tool:")
        task_kind = self.task_kinds.get(task_id, "")
        run_id = str_or_none(payload.get("run_id"))
        ended = kind in {"completed", "failed", "rejected", "cancelled"}
        if task_kind.startswith("model."):
            if run_id and task_id not in self.closed_tasks and kind in _REQUEST_TASK_EVENTS:
                request = self.open_request(self.run(run_id), ts)
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
        event = as_dict(payload.get("event"))
        self.skip(f"muse:approval/{str_or_none(event.get('kind'))}")
        if event.get("kind") == "automated_review_completed":
            usage = as_dict(event.get("usage"))
            self.counts["approval_reviews"] += 1
            self.counts["approval_review_input_tokens"] += token_count(usage.get("input_tokens"))
            self.counts["approval_review_output_tokens"] += token_count(usage.get("output_tokens"))

    def on_subagent_control(self, payload: dict[str, Any]) -> None:
        """`subagent.control.*` (no real line seen; the layout under `record` is a guess)."""
        self.skip("muse:subagent.control")
        fields = {**payload, **as_dict(payload.get("record")), **as_dict(payload.get("event"))}
        call_id = str_or_none(fields.get("dispatched_via_tool_call_id"))
        child = str_or_none(fields.get("subagent_session_id")) or str_or_none(
            fields.get("child_session_id")
        )
        subagent = str_or_none(fields.get("subagent_id"))
        if call_id and child:
            self.children[child] = (call_id, "subagent")
            self.subagent_ids[child] = call_id
            if subagent:
                self.subagent_ids[subagent] = call_id
        elif child and subagent and subagent in self.subagent_ids:
            self.children[child] = (self.subagent_ids[subagent], "subagent")

    def on_tool_effect(self, payload_type: str, record: dict[str, Any], ts: int) -> None:
        self.skip(f"muse:{payload_type}")
        tool = self.tools.get(str_or_none(record.get("call_id")) or "")
        if tool is None:
            return
        if payload_type.endswith(".started"):
            tool.exec_start_ns = ts
        elif payload_type.endswith(".terminal"):
            tool.exec_end_ns = ts
            if as_dict(record.get("outcome")).get("kind") == "failed":
                tool.is_error = True


_REQUEST_TASK_EVENTS = frozenset({"proposed", "started", "status"})
