"""The drafts one Muse log's events are gathered into before they become model objects: a
run, its open request (input known, usage not yet) and the outputs waiting for it, a
request, a tool call, a prompt, a compaction; and the two guards every event field goes
through (`str_or_none`, `as_dict`).

Separate so that the journal builder (`muse_journal.py`), the run events
(`muse_runs.py`) and the session finisher (`muse.py`) share them without importing each
other."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_profiler.adapters.drafts import CompactionDraft, RequestDraft, ToolDraft
from agent_profiler.adapters.muse_lanes import Trace
from agent_profiler.attribution import Logged
from agent_profiler.model import Category, SourceKind, frozen
from agent_profiler.records import record


@frozen
class PendingItem:
    item_id: str
    category: Category
    text: str  # kept until the item enters the context, for the estimator
    label: str
    source_id: str = ""
    source_kind: SourceKind = SourceKind.NONE


@record
class OpenRequest:
    """A request whose input is known (trace, model task) but whose usage is not yet."""

    id: str
    run_id: str
    opened_ns: int
    trace: Trace | None = None
    task_id: str | None = None
    first_status_ns: int | None = None
    outputs: list[PendingItem] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class Request(RequestDraft):
    run_id: str
    native: bool  # its composition came from model_input_trace_recorded lanes


@record
class Run:
    run_id: str
    prompt_id: str | None = None
    open: OpenRequest | None = None
    steps: int = 0
    last_request: str | None = None
    end_ns: int | None = None


@record
class Tool(ToolDraft):
    exec_start_ns: int | None = None
    exec_end_ns: int | None = None
    reminder: bool = False


@record
class PromptDraft:
    id: str
    start_ns: int
    chars: int
    preview: str
    end_ns: int | None = None
    tokens: int = 0  # measured once: the prompt is added again after a compaction


@record
class MuseCompaction(CompactionDraft):
    observation: Logged | None = None
    requests_before: int = 0  # how many requests completed before it


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
