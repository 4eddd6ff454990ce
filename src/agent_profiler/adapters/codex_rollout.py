"""One Codex rollout (one thread) read into a model `Session`: the `RolloutBuilder`, which
keeps the thread's context log, requests, tool calls, prompts and compactions; what each
`session_meta` and `turn_context` line does to it; the helpers that add an item and start
a request; the encrypted reasoning sized from its request's usage; and the finished
`Session`.

Separate from `codex.py`, which detects rollouts, dispatches each line of a file and groups
a thread with its spawned threads (`plan`, `read`, `locate`), from `codex_items.py`, the
`response_item` and `compacted` lines (the model-visible items), and from
`codex_events.py`, the `event_msg` lines (UI events: the usage, the user's messages,
command ends)."""

from __future__ import annotations

import functools
import math
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_profiler import estimate
from agent_profiler.adapters.codex_records import measure, thread_spawn
from agent_profiler.adapters.drafts import (
    CompactionDraft,
    RequestDraft,
    ToolDraft,
    finish_prompts,
    handed_over,
)
from agent_profiler.attribution import ContextLog, Logged, Observation
from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import (
    AnchorKind,
    Category,
    Fact,
    Harness,
    Marker,
    Prompt,
    Response,
    Session,
    SourceKind,
    Stage,
    Usage,
)
from agent_profiler.records import record

HARNESS = Harness.CODEX
_RESPONSE, _TRANSCRIPT = AnchorKind.RESPONSE, Stage.TRANSCRIPT_OBSERVED  # a request's observation
BASE_INSTRUCTIONS = "system:base_instructions"  # the system prompt: sent beside the history
# The categories of the context blocks Codex injects as messages (developer instructions,
# permissions, skills and plugins listings, AGENTS.md, environment context).
CONTEXT_CATEGORIES = frozenset(
    {Category.SYSTEM, Category.RULES, Category.SKILLS, Category.ENVIRONMENT}
)

# What a compaction's `log.clear` keeps once the blocks that leave have been removed by id
# (`RolloutBuilder.clear_for_compaction`): with a replacement history, the base instructions;
# a rebuilt history also keeps the prompts and a redacted user-role block (a prompt or the
# initial AGENTS.md: the marker does not say which).
_REPLACED_KEEPS = frozenset({Category.SYSTEM})
_REBUILT_KEEPS = CONTEXT_CATEGORIES | {Category.PROMPTS, Category.UNATTRIBUTED}
# As globals: a member read through its enum class goes through EnumType's `__getattr__`
# hook in CPython 3.11 (about 800 instructions); once or twice for every reasoning item.
_ASSISTANT, _FROM_RESPONSE = Category.ASSISTANT, SourceKind.RESPONSE


@dataclass(slots=True, kw_only=True)
class _Request(RequestDraft):
    observation: Logged
    window: int | None = None  # the window reported with this request (its model's)


@record
class Tool(ToolDraft):
    duration_ns: int | None = None  # exec_command_end's measured duration
    backgrounded: bool = False  # its output came back while the command still ran


@record
class Compaction(CompactionDraft):
    observation: Logged | None = None
    window: int | None = None


@record
class RolloutBuilder:
    """Accumulates one rollout file (one Codex thread)."""

    path: str
    diagnostics: Diagnostics
    session_id: str = ""
    log: ContextLog = field(default_factory=ContextLog)
    requests: list[_Request] = field(default_factory=list)
    tools: dict[str, Tool] = field(default_factory=dict)
    prompts: list[Prompt] = field(default_factory=list)
    compactions: list[Compaction] = field(default_factory=list)
    awaiting_post: list[Compaction] = field(default_factory=list)  # no request after it yet
    unmeasured: Counter[str] = field(default_factory=Counter)
    models: list[str] = field(default_factory=list)
    model: str = ""
    effort: str | None = None
    # What a tool's output is sent at most (the turn's `truncation_policy`; None: not
    # stated, `ASSUMED_BUDGET`).
    output_budget: Budget | None = None
    provider: str | None = None
    version: str | None = None
    originator: str | None = None
    project: str | None = None
    window: int | None = None
    parent_session: str | None = None
    agent_role: str | None = None
    # A v2 spawn's call id → the child's agent path (its output's task_name), and this
    # thread's own path (thread_spawn.agent_path): `codex.read_rollouts` links the two.
    spawn_paths: dict[str, str] = field(default_factory=dict)
    agent_path: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    trigger_ns: int | None = None
    pending: _Request | None = None  # a request whose output items have started
    # Requests whose output began but whose usage never came (their turn was aborted):
    # failed requests, drawn as such, not sizes of 0 (`abort_request`).
    failed: list[Response] = field(default_factory=list)
    last_total: dict[str, int] | None = None  # the last request's total_token_usage
    current_prompt: str | None = None
    prompt_sha: set[str] = field(default_factory=set)
    item_index: int = 0
    redacted_items: int = 0
    searches: list[tuple[str, str]] = field(default_factory=list)  # (query, call id)
    # Encrypted reasoning of the pending request, sized when its token_count comes; then the
    # reasoning items' parts (encrypted, summary, text) of the turn, which leave the context
    # at the next user prompt (docs/estimates.md).
    reasoning_pending: list[tuple[Logged, str]] = field(default_factory=list)
    reasoning_in_turn: list[str] = field(default_factory=list)
    spawned: dict[str, str] = field(default_factory=dict)  # spawn call id → child thread id
    # The injected context blocks in the context (CONTEXT_CATEGORIES, from messages), and of
    # them the initial context: those written before the first user prompt (`prompted`).
    context_items: list[str] = field(default_factory=list)
    initial_context: set[str] = field(default_factory=set)
    prompted: bool = False
    facts: list[Fact] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)  # Events: rollbacks
    # Every item id in the order it entered the context, and where in that order each user
    # turn begins (a real prompt's message, an agent's message): a rollback cuts there.
    order: list[str] = field(default_factory=list)
    boundaries: list[int] = field(default_factory=list)
    line: int = 0  # the line being read (`codex.read_rollout` sets it), for `measure`
    impossible_at: int = 0  # the last line warned of an impossible redaction length

    # -- helpers ------------------------------------------------------------

    def measure(self, text: object) -> tuple[int, bool]:
        """`codex_records.measure`, warning once per line of a redaction marker whose
        stated length is impossible (it is measured as its text)."""
        return measure(text, self.impossible)

    def impossible(self, message: str) -> None:
        """`measure`'s warning of an impossible redaction length: once per line."""
        if self.impossible_at != self.line:
            self.impossible_at = self.line
            self.diagnostics.warn(self.path, self.line, "bad-shape", message)

    def next_id(self, prefix: str) -> str:
        self.item_index += 1
        return f"{prefix}:{self.item_index}"

    def add_text(
        self,
        item_id: str,
        category: Category,
        text: object,
        label: str,
        source_id: str = "",
        source_kind: SourceKind = SourceKind.NONE,
        measured: tuple[int, bool] | None = None,
    ) -> int:
        """Add an item of `text`; `measured`: `measure(text)`, when the caller has made it."""
        # (`codex_records.measure` called here, not through `self.measure`: once per item)
        chars, redacted = measure(text, self.impossible) if measured is None else measured
        self.order.append(item_id)
        if redacted:
            self.redacted_items += 1
            label = _redacted_label(label)
            size: int | str = chars
        else:
            # The text itself when there is one, so that the estimator can see what it is.
            size = text if isinstance(text, str) else chars
        self.log.add(
            item_id, category, size, label=label, source_id=source_id, source_kind=source_kind
        )
        return chars

    # -- lines --------------------------------------------------------------

    def on_session_meta(self, payload: dict[str, Any], ts: int = 0, line: int = 0) -> None:
        if isinstance(payload.get("id"), str) and not self.session_id:
            self.session_id = payload["id"]
        for key, attr in (
            ("cli_version", "version"),
            ("originator", "originator"),
            ("cwd", "project"),
            ("model_provider", "provider"),
        ):
            if isinstance(payload.get(key), str) and getattr(self, attr) is None:
                setattr(self, attr, payload[key])
        base = payload.get("base_instructions")
        text = base.get("text") if isinstance(base, dict) else payload.get("instructions")
        if isinstance(text, str) and text:
            self.add_text(BASE_INSTRUCTIONS, Category.SYSTEM, text, "Base instructions")
        source = payload.get("source")
        spawn = thread_spawn(source)
        if spawn is not None:
            parent = spawn.get("parent_thread_id")
            if isinstance(parent, str):
                self.parent_session = parent
            role = spawn.get("agent_role") or spawn.get("agent_nickname")
            self.agent_role = role if isinstance(role, str) else "subagent"
            path = spawn.get("agent_path")
            if isinstance(path, str) and path:
                self.agent_path = path
        elif isinstance(source, str) and not any(key == "source" for key, _ in self.facts):
            self.facts.append(("source", source))  # once, however many session_meta lines

    def on_turn_context(self, payload: dict[str, Any], ts: int = 0, line: int = 0) -> None:
        model = payload.get("model")
        if isinstance(model, str) and model:
            self.model = model
            if model not in self.models:
                self.models.append(model)
        effort = payload.get("effort")
        if effort is None and isinstance(payload.get("collaboration_mode"), dict):
            settings = payload["collaboration_mode"].get("settings")
            effort = settings.get("reasoning_effort") if isinstance(settings, dict) else None
        if isinstance(effort, str):
            self.effort = effort
        budget = output_budget(payload.get("truncation_policy"))
        if budget is not None:
            self.output_budget = budget

    def turn_begins(self) -> None:
        """The items added next open a user turn (a real prompt's message, an agent's
        message): what a `thread_rolled_back` counts back to."""
        self.boundaries.append(len(self.order))

    def roll_back(self, turns: int, ts: int) -> None:
        """`thread_rolled_back {num_turns}`: Codex drops the last `turns` user turns from the
        model's context, every item from the `turns`-th last turn's first on (all of them
        from the first turn when there are fewer; nothing when there is no turn), as its
        history rebuild does (`effective.truncate` at that user boundary). The turns that a
        compaction removed before are no boundaries any more. The context updates written
        right above the cut (a developer message, an environment block) go with the turn.
        A marker on Events says it."""
        if turns <= 0:
            return
        live = [b for b in self.boundaries if b < len(self.order) and self.order[b] in self.log]
        if live:
            cut = live[-turns] if turns <= len(live) else live[0]
            # The context updates right above the turn go with it, never past the first
            # turn (codex-rs `trim_pre_turn_context_updates`: its walk stops at the first
            # item that is not one, as a reasoning item).
            contextual = set(self.context_items)
            while cut > live[0] and self.order[cut - 1] in contextual:
                cut -= 1
            for item_id in self.order[cut:]:
                self.log.remove(item_id)
            del self.order[cut:]
            self.boundaries = [b for b in self.boundaries if b < cut]
            self.reasoning_in_turn = [i for i in self.reasoning_in_turn if i in self.log]
        self.markers.append(Marker(ts, "rollback", f"rolled back {counted(turns, 'turn')}"))

    def start_request(self, ts: int) -> None:
        if self.pending is not None:
            return
        start = self.trigger_ns if self.trigger_ns is not None and self.trigger_ns <= ts else ts
        request_id = f"request-{len(self.requests) + len(self.failed) + 1}"
        # (`Observation.request`'s fields by position, without its frame: once a request)
        observation = self.log.observe(
            Observation(start, _RESPONSE, request_id, _TRANSCRIPT, self.model or None)
        )
        self.pending = _Request(
            request_id,
            start,
            ts,
            self.model,
            prompt_id=self.current_prompt,
            observation=observation,
        )

    def abort_request(self, reason: str) -> None:
        """The turn ended without the pending request's usage (`turn_aborted`: the user
        interrupted it while its calls ran): a failed request, from its start to its last
        output item, its snapshot dropped and its encrypted reasoning unmeasured. Left
        pending, the next turn's response was merged into it: one request spanning the
        interruption and the next prompt, with the next request's size."""
        request = self.pending
        if request is None:
            return
        self.pending = None
        self.log.settle(request.observation, dropped=True)
        self.settle_reasoning(None)
        self.failed.append(
            Response(
                request.id,
                request.start_ns,
                max(request.end_ns, request.start_ns),
                request.model,
                Usage(0),
                request.prompt_id,
                is_error=True,
                stop_reason=reason,
                web_searches=request.web_searches,
            )
        )

    def response_parts(self, texts: list[str], stem: str, label: str) -> list[str]:
        """The response's text parts as Assistant items, each with an id of its own; returns
        the ids."""
        ids = []
        for index, text in enumerate(texts):
            self.item_index += 1
            item_id = f"{stem}:{self.item_index}:{index}"
            self.add_text(item_id, _ASSISTANT, text, label, source_kind=_FROM_RESPONSE)
            ids.append(item_id)
        return ids

    def hidden_reasoning(self, *, encrypted: bool) -> None:
        """A reasoning item whose text is not in the journal (encrypted, or stripped by
        whoever published it): sized from its request's reasoning_output_tokens when the
        token_count comes. The corpus shows that it stays in the context until the next
        user prompt (docs/estimates.md, Codex reasoning)."""
        item_id = self.next_id("reasoning-hidden")
        handle = self.log.add_evidence(
            item_id,
            _ASSISTANT,
            0,
            method=estimate.REASONING_OUTPUT_TOKENS,
            label="Reasoning (encrypted)" if encrypted else "Reasoning (not in the journal)",
            source_kind=_FROM_RESPONSE,
        )
        kind = "encrypted-reasoning" if encrypted else "hidden-reasoning"
        self.order.append(item_id)
        self.reasoning_pending.append((handle, kind))
        self.reasoning_in_turn.append(item_id)

    def settle_reasoning(self, tokens: int | None) -> None:
        """The pending request's encrypted reasoning: all of its reasoning_output_tokens on
        the first item (one item per response in every corpus journal), 0 on any other;
        None: no usage came for the request, so its size is unknown (`unmeasured`)."""
        for index, (handle, kind) in enumerate(self.reasoning_pending):
            size = None if tokens is None else (tokens if index == 0 else 0)
            self.log.settle_evidence(handle, size, kind)
        self.reasoning_pending.clear()

    def end_turn_reasoning(self) -> None:
        """A user prompt: the previous turn's reasoning items leave the context, their
        encrypted content with their summary and text (the API keeps reasoning items only
        since the last user message; measured in the corpus: the next request's input
        falls by that turn's reasoning_output_tokens)."""
        for item_id in self.reasoning_in_turn:
            self.log.remove(item_id)
        self.reasoning_in_turn.clear()

    def context_block(self, item_id: str, *, replayed: bool) -> None:
        """A message block of CONTEXT_CATEGORIES entered the context: a compaction decides
        whether it stays (`clear_for_compaction`)."""
        self.context_items.append(item_id)
        if not replayed and not self.prompted:
            self.initial_context.add(item_id)

    def clear_for_compaction(self, *, replaced: bool) -> int:
        """A compaction empties the context but for the base instructions (the request's
        `instructions`, sent beside the history) and the inferred head; returns how many
        items left.

        `replaced`: the compacted line has a `replacement_history`, the entire new history
        (its developer and context messages among it), which the caller adds next. Else
        (older builds, local compaction) Codex rebuilt the history as the initial context,
        the user's messages and the summary (codex-rs `compact.rs`
        `build_compacted_history(initial_context, user_messages, summary)`): the blocks of
        the initial context stay, once, and the prompts; the blocks injected later (context
        updates) leave, as do the assistant's items, the tool results and the earlier
        summaries."""
        removed = 0
        kept: list[str] = []
        for item_id in self.context_items:
            if not replaced and item_id in self.initial_context:
                kept.append(item_id)
            elif self.log.remove(item_id):
                removed += 1
        self.context_items = kept
        # Of CONTEXT_CATEGORIES, only the base instructions and the kept blocks are left.
        return removed + self.log.clear(keep=_REPLACED_KEEPS if replaced else _REBUILT_KEEPS)

    # -- result -------------------------------------------------------------

    def finish(self, responses: tuple[Response, ...] | None = None) -> Session | None:
        """The session. `responses`: the requests' responses made already (each
        `_Request.finish()` of those with usage, in order: stream/codex.py makes them as
        it reads), not made again."""
        if self.start_ns is None or self.end_ns is None:
            return None
        end = self.end_ns
        if self.pending is not None:
            self.log.settle(self.pending.observation, dropped=True)  # output began, no usage came
        self.settle_reasoning(None)
        # Each request against the window reported with it: a session that switches models
        # (gpt-5.3-codex-spark, 121,600, then gpt-5.5, 258,400) changes windows too.
        for request in self.requests:
            if not request.window:  # one with a window was settled with its usage
                self.log.settle(request.observation, window_tokens=self.window)
        for compaction in self.compactions:
            if compaction.observation is not None:
                self.log.settle(
                    compaction.observation,
                    window_tokens=compaction.window or self.window,
                    reported_tokens=compaction.post_tokens,
                )
        snapshots = self.log.replay()
        if responses is None:
            responses = tuple(r.finish() for r in handed_over(self.requests) if r.usage is not None)
        else:
            self.requests.clear()
        response_ids = {r.id for r in responses}
        tools = tuple(
            t.finish(
                response_ids,
                _tool_end(t, end),
                timing=(
                    "journal: call record + exec_command_end duration"
                    if t.duration_ns is not None
                    else ""
                ),
                child_session=self.spawned.get(t.call_id),
            )
            for t in handed_over(self.tools)
        )
        prompts = finish_prompts(
            self.prompts, responses, tools, first_from_agent=self.parent_session is not None
        )
        compactions = tuple(c.finish() for c in self.compactions)
        facts = list(self.facts)
        if self.originator:
            facts.append(("originator", self.originator))
        if self.effort:
            facts.append(("effort", self.effort))
        if self.redacted_items:
            facts.append(("redacted_items", self.redacted_items))
        return Session(
            harness=HARNESS,
            session_id=self.session_id or Path(self.path).stem,
            start_ns=self.start_ns,
            end_ns=end,
            sources=(self.path,),
            models=tuple(self.models),
            provider=self.provider or "openai",
            window_tokens=self.window,
            window_source="journal" if self.window else None,
            project=self.project,
            harness_version=self.version,
            parent_session=self.parent_session,
            agent_id=None,
            child_role=self.agent_role if self.parent_session else None,
            incomplete=any(t.incomplete for t in tools) or self.pending is not None,
            prompts=prompts,
            responses=responses,
            failed_requests=tuple(self.failed),
            tool_calls=tools,
            compactions=compactions,
            snapshots=tuple(snapshots),
            unmeasured=self.log.unmeasured(self.unmeasured),
            estimate_methods=self.log.estimate_methods,
            facts=tuple(facts),
            markers=tuple(self.markers),
        )


@functools.cache
def _redacted_label(label: str) -> str:
    """One object per label (a few constants): a redacted rollout has tens of thousands of
    such items, and each held a copy of its label."""
    return f"{label} (length from a redaction marker)"


def _tool_end(tool: Tool, session_end: int) -> int:
    if tool.duration_ns is not None:
        return min(tool.start_ns + tool.duration_ns, max(session_end, tool.start_ns))
    return tool.end_ns if tool.end_ns is not None else max(session_end, tool.start_ns)


# (bytes a tool's output is sent at most, the policy's mode)
Budget = tuple[int, str]


def output_budget(policy: object) -> Budget | None:
    """What a tool's output is sent at most under a turn's `truncation_policy` (`{mode:
    tokens | bytes, limit}`): codex-rs records an output into the model's history truncated
    to the policy × 1.2, rounded up (context_manager `process_item`; a token is 4 bytes to
    its `truncate_text`), while the rollout keeps it whole. None: no policy of a known mode."""
    if not isinstance(policy, dict):
        return None
    limit = policy.get("limit")
    mode = policy.get("mode")
    if not isinstance(limit, int) or isinstance(limit, bool) or limit <= 0:
        return None
    if mode != "tokens" and mode != "bytes":
        return None
    units = math.ceil(limit * 1.2)
    return (units * 4 if mode == "tokens" else units), mode


# 0.140 and later write no policy in turn_context (the model's own is used): assumed to
# be the one every corpus rollout that states one has (295 turn_context lines, gpt-5.x).
ASSUMED_BUDGET: Budget = (math.ceil(10000 * 1.2) * 4, "tokens")


def sent_output(text: str, budget: Budget) -> str | None:
    """`text` as codex-rs sends it when it is longer than the budget (`truncate_text`: the
    first half of the bytes and the last, cut at characters, a marker between); None when
    it is sent whole."""
    limit, mode = budget
    if len(text) * 4 <= limit:  # (most outputs: not even 4 bytes a character reach it)
        return None
    raw = text.encode()
    if len(raw) <= limit:
        return None
    left = limit // 2
    head = raw[:left].decode(errors="ignore")
    tail = raw[len(raw) - (limit - left) :].decode(errors="ignore")
    return f"{head}{_marker(mode, len(raw) - limit, len(text) - len(head) - len(tail))}{tail}"


def sent_items(items: list[tuple[str, int, bool]], budget: Budget) -> tuple[list[str], int] | None:
    """A list output's text items as codex-rs sends them when the budget cuts them
    (`truncate_function_output_items_with_policy`), and the characters they hold: left to
    right, each whole while the budget lasts (a tokens budget spends an item's bytes / 4,
    rounded up; a bytes budget its bytes), the first past it cut to what is left
    (`truncate_text`), the rest left out and counted in a last item; None when every item
    is sent whole. `items`: each text, its characters and whether it is a redaction
    marker (whose stated length is its size, kept as its marker, cut by `sent_size`). Its
    images are not texts (the newest builds also spend the budget on them: not done)."""
    limit, mode = budget
    left = limit // 4 if mode == "tokens" else limit  # (a tokens budget is 4 bytes a unit)
    sent: list[str] = []
    chars = omitted = 0
    cut = False
    for text, size, redacted in items:
        if left == 0:
            omitted += 1
            continue
        if not redacted:
            size = len(text.encode())  # (a marker's stated length stands for its bytes)
        cost = -(-size // 4) if mode == "tokens" else size
        if cost <= left:
            sent.append(text)
            chars += size if redacted else len(text)
            left -= cost
            continue
        # (past what is left, in bytes too: `sent_output` and `sent_size` cut it)
        rest = (left * 4 if mode == "tokens" else left, mode)
        if redacted:
            sent.append(text)
            chars += sent_size(size, rest) or size
        else:
            sent.append(sent_output(text, rest) or text)
            chars += len(sent[-1])
        left, cut = 0, True
    if omitted:
        sent.append(f"[omitted {omitted} text items ...]")
        chars += len(sent[-1])
    return (sent, chars) if cut or omitted else None


def sent_size(stated: int, budget: Budget) -> int | None:
    """The characters an output of `stated` characters (a redaction marker's length: its
    text is not in the journal) is sent as, when the budget cuts it; None when it does not."""
    limit, mode = budget
    if stated <= limit:
        return None
    return limit + len(_marker(mode, stated - limit, stated - limit))


def _marker(mode: str, cut_bytes: int, cut_chars: int) -> str:
    """`truncate_text`'s marker: the tokens cut (4 bytes each, rounded up), or the chars."""
    if mode == "tokens":
        return f"…{-(-cut_bytes // 4)} tokens truncated…"
    return f"…{cut_chars} chars truncated…"
