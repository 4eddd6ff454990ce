"""The session of messages that own their context items (`MessagesDraft`, Gemini CLI and
OpenCode): a message that leaves the context takes its items with it; and `Timeline`, what
such a session read, as the model's `Session` holds it.

Apart from `drafts.py` (the drafts every adapter fills): only these two harnesses read a
session this way, and the other exports did not need to make its classes at start-up.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from agent_profiler.adapters.common import preview
from agent_profiler.adapters.drafts import add_tool_call, add_tool_result, finish_prompts
from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.model import (
    AnchorKind,
    Category,
    Compaction,
    ContextSnapshot,
    Marker,
    Prompt,
    Response,
    SourceKind,
    Stage,
    ToolCall,
)


class Timeline(TypedDict):
    """What a `MessagesDraft` read, as the model's `Session` holds it."""

    prompts: tuple[Prompt, ...]
    responses: tuple[Response, ...]
    tool_calls: tuple[ToolCall, ...]
    compactions: tuple[Compaction, ...]
    snapshots: tuple[ContextSnapshot, ...]
    unmeasured: tuple[tuple[str, int], ...]
    estimate_methods: tuple[str, ...]
    failed_requests: tuple[Response, ...]
    unmetered_responses: tuple[Response, ...]
    markers: tuple[Marker, ...]


@dataclass(slots=True, kw_only=True)
class MessagesDraft:
    """A session read as a list of messages that each own their context items (Gemini CLI,
    OpenCode): a message that leaves the context (a rewind, a compaction, a rewritten
    history) takes its items with it. Holds what such a builder gathers while it reads."""

    log: ContextLog = field(default_factory=ContextLog)
    items: dict[str, list[str]] = field(default_factory=dict)  # message id → its items
    order: list[str] = field(default_factory=list)  # message ids in context order
    responses: list[Response] = field(default_factory=list)
    failed: list[Response] = field(default_factory=list)  # requests without usage
    unmetered: list[Response] = field(default_factory=list)  # usage all 0 (issue 15.6)
    prompts: list[Prompt] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    unmeasured: Counter[str] = field(default_factory=Counter)
    prompt_id: str | None = None
    last_ns: int | None = None
    last_reported: int | None = None
    start_ns: int | None = None
    end_ns: int | None = None

    def add(self, message_id: str, item_id: str, category: Category, text: str, **kw: Any) -> None:
        # The text, not its length: the estimator looks at what an item is (estimate.py).
        self.log.add(item_id, category, text, **kw)
        self.items.setdefault(message_id, []).append(item_id)

    def add_prompt(self, message_id: str, item_id: str, text: str) -> None:
        """Text the user typed."""
        self.add(
            message_id,
            item_id,
            Category.PROMPTS,
            text,
            label="User prompt",
            source_kind=SourceKind.PROMPT,
        )

    def add_response_text(
        self,
        message_id: str,
        item_id: str,
        text: str,
        response_id: str,
        *,
        label: str = "Assistant text",
        category: Category = Category.ASSISTANT,
    ) -> None:
        """Text the model wrote (its answer, its reasoning, a compaction's summary)."""
        self.add(
            message_id,
            item_id,
            category,
            text,
            label=label,
            source_id=response_id,
            source_kind=SourceKind.RESPONSE,
        )

    def add_tool_call(self, message_id: str, call_id: str, name: str, arguments: object) -> None:
        self.items.setdefault(message_id, []).append(
            add_tool_call(self.log, call_id, name, arguments)
        )

    def add_tool_result(self, message_id: str, call_id: str, text: str) -> None:
        self.items.setdefault(message_id, []).append(add_tool_result(self.log, call_id, text))

    def start_turn(self, message_id: str, ts: int, texts: Sequence[str], source: str) -> None:
        """A user message whose typed `texts` are a prompt: the turn that now runs."""
        chars = sum(len(t) for t in texts)
        self.prompts.append(Prompt(message_id, ts, ts, chars, source, preview(texts[0])))
        self.prompt_id = message_id

    def measured(self, response: Response, window_tokens: int | None = None) -> None:
        """A request with a reported size: the context it sent is observed at its start."""
        self.log.observe(
            Observation(
                time_ns=response.start_ns,
                anchor=AnchorKind.RESPONSE,
                anchor_id=response.id,
                stage=Stage.REQUEST_INPUT,
                model=response.model or None,
                reported_tokens=response.usage.prompt_tokens,
                window_tokens=window_tokens,
            )
        )
        self.responses.append(response)

    def compacted(self, compaction: Compaction) -> None:
        """A compaction is over: the context it left is observed at its end."""
        self.log.observe(
            Observation(
                compaction.end_ns, AnchorKind.COMPACTION, compaction.id, Stage.POST_COMPACTION
            )
        )
        self.compactions.append(compaction)

    def drop(self, message_ids: Iterable[str]) -> int:
        """The messages leave the context, and their items with them: how many left."""
        removed = 0
        for message_id in message_ids:
            for item_id in self.items.pop(message_id, []):
                removed += self.log.remove(item_id)
        return removed

    def requested(self) -> set[str]:
        """The ids of the requests made (measured or not, a compaction's own included): a
        tool call links to its response only when that response is one of them."""
        requests = [*self.responses, *self.unmetered]
        requests += [c.request for c in self.compactions if c.request is not None]
        return {r.id for r in requests}

    def failures(self, no_reason: str) -> list[tuple[str, str]]:
        """The `requests_without_usage` fact: how many failed requests, per stop reason."""
        if not self.failed:
            return []
        reasons = Counter(r.stop_reason or no_reason for r in self.failed)
        return [
            ("requests_without_usage", ", ".join(f"{k}: {n}" for k, n in reasons.most_common()))
        ]

    def timeline(self, tools: tuple[ToolCall, ...]) -> Timeline:
        """Everything read, once reading is over (`end_ns` is set). A session without any
        request or compaction is observed once, at its end, so it still shows its context."""
        if not self.responses and not self.compactions and self.end_ns is not None:
            self.log.observe(
                Observation(self.end_ns, AnchorKind.SESSION, "", Stage.TRANSCRIPT_OBSERVED)
            )
        return Timeline(
            prompts=finish_prompts(self.prompts, self.responses, tools),
            responses=tuple(self.responses),
            tool_calls=tools,
            compactions=tuple(self.compactions),
            snapshots=tuple(self.log.replay()),
            unmeasured=self.log.unmeasured(self.unmeasured),
            estimate_methods=self.log.estimate_methods,
            failed_requests=tuple(self.failed),
            unmetered_responses=tuple(self.unmetered),
            markers=tuple(self.markers),
        )
