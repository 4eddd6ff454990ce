"""Codex CLI and Desktop rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`).

Owns what is Codex-specific (FORMATS.md §3): the `{timestamp, type, payload}`
envelope, which `response_item`s the model sees and which category each is,
one request per `token_count`, compaction, and subagent rollouts (read in one group
with their parent: one group per session tree, so that trees can be read in parallel).

Format facts this module relies on, with the surprise each one holds:
- `last_token_usage.input_tokens` already includes `cached_input_tokens`: the
  request's prompt is `input_tokens`, never input + cached (§3.3);
- Desktop 0.104 writes every `token_count` twice: a repeat has the same
  `total_token_usage` and is one request; `info: null` is not a request;
- the system prompt is recorded (`session_meta.base_instructions`), the tool
  schemas are not: they become the inferred head item (§3.4);
- `event_msg`s are UI events, not model input; only `response_item`s (and
  `compacted.replacement_history`) are in context;
- sanitised rollouts replace text by `[REDACTED_… len=N …]`: N characters are
  estimated as usual and the item's label says the length came from a marker;
- a request's start is not recorded: it is the time of the input that
  triggered it (the user message or the last tool output before it) (§3.7).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler import estimate
from agent_profiler.adapters.common import (
    journal_clock,
    json_text,
    preview,
    text_field,
    token_count,
)
from agent_profiler.adapters.drafts import (
    CompactionDraft,
    RequestDraft,
    ToolArguments,
    ToolDraft,
    finish_prompts,
    handed_over,
)
from agent_profiler.attribution import ContextLog, Logged, Observation
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.estimate import tool_call_text
from agent_profiler.jsonl import read_jsonl
from agent_profiler.model import (
    Category,
    Harness,
    Prompt,
    Session,
    SourceKind,
    Usage,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

    from agent_profiler.adapters import JournalGroup, Located, SniffedFile

HARNESS = Harness.CODEX
# Every record type this adapter knows, each either read (into which category, and why) or
# skipped on purpose (why it is not model input). A type outside these tables is reported
# as "not recognised (not read)" with its first path:line, never as skipped on purpose
# (issue 28: format drift must be loud). Sources: the corpus (FORMATS §3) and openai/codex
# `codex-rs/protocol` (`RolloutItem`, `ResponseItem`, `EventMsg`, and which of them a rollout
# persists). `tests/test_record_tables.py` reads every corpus journal against them.
READ, SKIPPED = "read", "skipped on purpose"
LINE_TYPES: dict[str, tuple[str, str]] = {
    "session_meta": (READ, "base instructions → System instructions; id, version, project"),
    "turn_context": (READ, "the model (and its effort) in use from here on; not model input"),
    "response_item": (READ, "the model-visible history: see RESPONSE_ITEM_TYPES"),
    "compacted": (READ, "a compaction: the summary or the new history replaces the context"),
    "event_msg": (READ, "UI and telemetry events: see EVENT_MSG_TYPES"),
    "inter_agent_communication": (SKIPPED, "a message between agent threads, not this model's"),
    "inter_agent_communication_metadata": (SKIPPED, "its delivery metadata"),
    "token_usage_record": (SKIPPED, "usage bookkeeping; requests are read from token_count"),
    "world_state": (SKIPPED, "the harness's own state snapshot"),
    "retained_context": (SKIPPED, "what a compaction kept, repeated in the compacted line"),
    "security_risk_score": (SKIPPED, "a safety score of a turn"),
    "realtime_item": (SKIPPED, "a realtime (voice) conversation item"),
}
RESPONSE_ITEM_TYPES: dict[str, tuple[str, str]] = {
    "message": (
        READ,
        "developer/system → System instructions; user → User prompts; assistant → Assistant "
        "history; a block with a known leading tag → its category (Rules, Skills, Environment…)",
    ),
    "agent_message": (READ, "assistant text → Assistant history"),
    "reasoning": (
        READ,
        "summary text → Assistant history; encrypted content → sized from "
        "token_count's reasoning_output_tokens while it stays in the context",
    ),
    "function_call": (READ, "a tool call; its name and arguments → Assistant history"),
    "custom_tool_call": (READ, "a tool call (apply_patch…); its input → Assistant history"),
    "local_shell_call": (READ, "a tool call (older builds); its action → Assistant history"),
    "tool_search_call": (READ, "a tool call (client-side tool search) → Assistant history"),
    "function_call_output": (READ, "a tool's output → Tool results"),
    "custom_tool_call_output": (READ, "a tool's output → Tool results"),
    "local_shell_call_output": (READ, "a tool's output → Tool results"),
    "tool_search_output": (READ, "the tool definitions the search loaded → Tool definitions"),
    "web_search_call": (READ, "a server-side web search; its action → Tool results"),
    "image_generation_call": (READ, "a generated image: listed as unmeasured"),
    "compaction": (READ, "a remote compaction's encrypted summary: listed as unmeasured"),
    "compaction_summary": (READ, "older name of compaction: listed as unmeasured"),
    "context_compaction": (READ, "a compaction's encrypted summary: listed as unmeasured"),
    "ghost_snapshot": (SKIPPED, "a git snapshot the harness keeps for undo; never sent"),
    "compaction_trigger": (SKIPPED, "a request control; not a durable item, never sent"),
}
# `event_msg`s are UI and telemetry events: the model sees the `response_item`s. A few
# carry facts that are read (a request's usage, the prompt as typed, a tool's outcome).
_UI_EVENT = "a UI or telemetry event; what the model sees is the response_item"
EVENT_MSG_TYPES: dict[str, tuple[str, str]] = {
    "token_count": (READ, "one request: last_token_usage (input, output, reasoning) and window"),
    "user_message": (READ, "a user prompt as typed: the prompt span (its text is a message)"),
    "task_started": (READ, "a turn starts: its model_context_window"),
    "turn_started": (READ, "newer name of task_started"),
    "exec_command_end": (READ, "a command's exit code and duration (the tool span)"),
    "patch_apply_end": (READ, "whether apply_patch succeeded (the tool span)"),
    "web_search_end": (READ, "a web search: a tool call (its query)"),
    "collab_agent_spawn_end": (READ, "a spawned subagent's thread id (links the child)"),
    "context_compacted": (READ, "a compaction's notice; its facts come from the compacted line"),
    **{
        kind: (SKIPPED, _UI_EVENT)
        for kind in (
            "task_complete",
            "turn_complete",
            "turn_aborted",
            "agent_message",
            "agent_reasoning",
            "agent_reasoning_raw_content",
            "agent_reasoning_section_break",
            "entered_review_mode",
            "exited_review_mode",
            "mcp_tool_call_begin",
            "mcp_tool_call_end",
            "exec_command_begin",
            "exec_command_output_delta",
            "exec_approval_request",
            "apply_patch_approval_request",
            "patch_apply_begin",
            "patch_apply_updated",
            "web_search_begin",
            "image_generation_begin",
            "image_generation_end",
            "view_image_tool_call",
            "collab_agent_spawn_begin",
            "collab_agent_interaction_begin",
            "collab_agent_interaction_end",
            "collab_waiting_begin",
            "collab_waiting_end",
            "collab_close_begin",
            "collab_close_end",
            "collab_resume_begin",
            "collab_resume_end",
            "sub_agent_activity",
            "dynamic_tool_call_request",
            "dynamic_tool_call_response",
            "thread_goal_updated",
            "thread_rolled_back",
            "thread_settings_applied",
            "thread_name_updated",
            "item_started",
            "item_completed",
            "plan_update",
            "plan_delta",
            "turn_diff",
            "stream_error",
            "error",
            "warning",
            "guardian_assessment",
            "guardian_warning",
            "model_reroute",
            "model_verification",
            "turn_moderation_metadata",
            "safety_buffering",
            "managed_account_selected",
            "session_configured",
            "environment_connected",
            "environment_disconnected",
            "mcp_startup_update",
            "mcp_startup_complete",
            "mcp_list_tools_response",
            "list_custom_prompts_response",
            "get_history_entry_response",
            "background_event",
            "shutdown_complete",
            "deprecation_notice",
            "hook_started",
            "hook_completed",
            "terminal_interaction",
            "request_permissions",
            "request_user_input",
            "elicitation_request",
            "agent_message_delta",
            "agent_message_content_delta",
            "agent_reasoning_delta",
            "agent_reasoning_raw_content_delta",
            "reasoning_content_delta",
            "reasoning_raw_content_delta",
            "raw_response_item",
            "raw_response_completed",
            "realtime_conversation_started",
            "realtime_conversation_sdp",
            "realtime_conversation_realtime",
            "realtime_conversation_closed",
            "realtime_conversation_list_voices_response",
            "undo_started",
            "undo_completed",
        )
    },
}
_LINE_TYPES = frozenset(k for k, (how, _) in LINE_TYPES.items() if how == READ)
_KNOWN_SKIPPED = frozenset(k for k, (how, _) in LINE_TYPES.items() if how == SKIPPED)
_REDACTED = re.compile(r"^\[REDACTED_[A-Z_]+ len=(\d+)\b")
_OUTPUT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "tool_search_call",
        "web_search_call",
        "image_generation_call",
        "agent_message",
    }
)
_CALL_ITEMS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
)
_RESULT_ITEMS = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
)
_ENCRYPTED_SUMMARIES = frozenset({"compaction", "compaction_summary", "context_compaction"})

# Leading tags of harness-injected context blocks, by category (FORMATS §3.4).
_TAGS: tuple[tuple[str, Category, str], ...] = (
    ("<skills_instructions>", Category.SKILLS, "Skills listing"),
    ("<plugins_instructions>", Category.SKILLS, "Plugins listing"),
    ("# AGENTS.md instructions", Category.RULES, "AGENTS.md"),
    ("<user_instructions>", Category.RULES, "User instructions"),
    ("<INSTRUCTIONS>", Category.RULES, "Instructions"),
    ("<permissions instructions>", Category.ENVIRONMENT, "Permissions"),
    ("<environment_context>", Category.ENVIRONMENT, "Environment context"),
    ("<collaboration_mode>", Category.ENVIRONMENT, "Collaboration mode"),
    ("<turn_aborted>", Category.OVERHEAD, "Turn aborted"),
    ("<user_shell_command>", Category.ENVIRONMENT, "Shell command"),
)


def detect(values: list[object]) -> bool:
    """Codex rollouts: `{timestamp, type, payload}` lines, usually `session_meta` first."""
    for value in values:
        if not isinstance(value, dict):
            continue
        if (
            text_field(value, "type") in _LINE_TYPES
            and isinstance(value.get("payload"), dict)
            and ("timestamp" in value)
        ):
            return True
    return False


def measure(text: object) -> tuple[int, bool]:
    """(characters, redacted?) of a text; a sanitiser marker counts as its stated length."""
    if not isinstance(text, str):
        return 0, False
    match = _REDACTED.match(text)
    if match:
        return int(match.group(1)), True
    return len(text), False


def _parts_text(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


def _classify(role: str, text: str) -> tuple[Category, str]:
    stripped = text.lstrip()
    for tag, category, label in _TAGS:
        if stripped.startswith(tag):
            return category, label
    if role == "developer" or role == "system":
        return Category.SYSTEM, "Developer instructions"
    if role == "assistant":
        return Category.ASSISTANT, "Assistant text"
    return Category.PROMPTS, "User prompt"


def _output_text(output: object) -> str:
    """Tool output as the model sees it. Older builds wrap it in a JSON string
    `{"output": …, "metadata": {"exit_code": …}}`; that envelope is unwrapped."""
    if isinstance(output, str):
        if output.startswith('{"output"'):
            try:
                decoded = orjson.loads(output)
            except ValueError:
                return output
            inner = decoded.get("output") if isinstance(decoded, dict) else None
            if isinstance(inner, str):
                return inner
        return output
    content = output.get("content") if isinstance(output, dict) else None
    if isinstance(content, str):
        return content
    return "".join(_parts_text(output))


def _exit_code(output: object) -> int | None:
    if isinstance(output, str) and output.startswith('{"output"'):
        try:
            decoded = orjson.loads(output)
        except ValueError:
            return None
        meta = decoded.get("metadata") if isinstance(decoded, dict) else None
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    if isinstance(output, str):
        match = re.search(r"Process exited with code (-?\d+)", output[:400])
        if match:
            return int(match.group(1))
    return None


@dataclass(slots=True, kw_only=True)
class _Request(RequestDraft):
    observation: Logged
    window: int | None = None  # the window reported with this request (its model's)


@dataclass(slots=True)
class _Tool(ToolDraft):
    duration_ns: int | None = None  # exec_command_end's measured duration


@dataclass(slots=True)
class _Compaction(CompactionDraft):
    observation: Logged | None = None
    window: int | None = None


def _thread_spawn(source: object) -> dict[str, Any] | None:
    """`session_meta.source.subagent.thread_spawn`, the object by which a spawned child's
    rollout names its parent (`parent_thread_id`) and role (FORMATS §3.6); None when
    `source` is anything else (a string such as "cli", `{"subagent": "review"}`)."""
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    return spawn if isinstance(spawn, dict) else None


@dataclass(slots=True)
class RolloutBuilder:
    """Accumulates one rollout file (one Codex thread)."""

    path: str
    diagnostics: Diagnostics
    session_id: str = ""
    log: ContextLog = field(default_factory=ContextLog)
    requests: list[_Request] = field(default_factory=list)
    tools: dict[str, _Tool] = field(default_factory=dict)
    prompts: list[Prompt] = field(default_factory=list)
    compactions: list[_Compaction] = field(default_factory=list)
    unmeasured: Counter[str] = field(default_factory=Counter)
    models: list[str] = field(default_factory=list)
    model: str = ""
    effort: str | None = None
    provider: str | None = None
    version: str | None = None
    originator: str | None = None
    project: str | None = None
    window: int | None = None
    parent_session: str | None = None
    agent_role: str | None = None
    start_ns: int | None = None
    end_ns: int | None = None
    trigger_ns: int | None = None
    pending: _Request | None = None  # a request whose output items have started
    last_total: tuple[int, ...] | None = None
    current_prompt: str | None = None
    prompt_sha: set[str] = field(default_factory=set)
    item_index: int = 0
    redacted_items: int = 0
    searches: list[tuple[str, str]] = field(default_factory=list)  # (query, call id)
    # Encrypted reasoning of the pending request, sized when its token_count comes; then of
    # the turn, which leaves the context at the next user prompt (docs/estimates.md).
    reasoning_pending: list[tuple[Logged, str]] = field(default_factory=list)
    reasoning_in_turn: list[str] = field(default_factory=list)
    spawned: dict[str, str] = field(default_factory=dict)  # spawn call id → child thread id
    facts: list[tuple[str, str]] = field(default_factory=list)

    # -- helpers ------------------------------------------------------------

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
    ) -> int:
        chars, redacted = measure(text)
        if redacted:
            self.redacted_items += 1
            label = _redacted_label(label)
        # The text itself when there is one, so that the estimator can see what it is.
        size: int | str = text if isinstance(text, str) and not redacted else chars
        self.log.add(
            item_id, category, size, label=label, source_id=source_id, source_kind=source_kind
        )
        return chars

    # -- lines --------------------------------------------------------------

    def on_session_meta(self, payload: dict[str, Any]) -> None:
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
            self.add_text("system:base_instructions", Category.SYSTEM, text, "Base instructions")
        source = payload.get("source")
        spawn = _thread_spawn(source)
        if spawn is not None:
            parent = spawn.get("parent_thread_id")
            if isinstance(parent, str):
                self.parent_session = parent
            role = spawn.get("agent_role") or spawn.get("agent_nickname")
            self.agent_role = role if isinstance(role, str) else "subagent"
        elif isinstance(source, str) and not any(key == "source" for key, _ in self.facts):
            self.facts.append(("source", source))  # once, however many session_meta lines

    def on_turn_context(self, payload: dict[str, Any]) -> None:
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

    def on_response_item(
        self, item: dict[str, Any], ts: int, *, prefix: str = "item", line: int | None = None
    ) -> None:
        kind = text_field(item, "type")
        replayed = prefix != "item"  # an item of a compaction's replacement history
        is_output = kind in _OUTPUT_ITEMS or (
            kind == "message" and text_field(item, "role") == "assistant"
        )
        if is_output and not replayed:
            self._start_request(ts)
        if kind == "message":
            role = str(text_field(item, "role") or "user")
            for index, text in enumerate(_parts_text(item.get("content"))):
                category, label = _classify(role, text)
                _, redacted = measure(text)
                if redacted and role == "user":
                    sha = re.search(r"sha=([0-9a-f]+)", text[:80])
                    if sha and sha.group(1) in self.prompt_sha:
                        category, label = Category.PROMPTS, "User prompt"
                    else:
                        # A redacted user-role block could be a prompt, AGENTS.md or an
                        # environment block: the marker does not say which.
                        category, label = Category.UNATTRIBUTED, "Redacted user-role block"
                item_id = self.next_id(f"{prefix}-{role}") + f":{index}"
                kind_of_source = (
                    SourceKind.PROMPT
                    if category is Category.PROMPTS
                    else (SourceKind.RESPONSE if role == "assistant" else SourceKind.NONE)
                )
                self.add_text(item_id, category, text, label, source_kind=kind_of_source)
            if role == "user" and prefix == "item":
                self.trigger_ns = ts
        elif kind == "reasoning":
            for index, text in enumerate(_parts_text(item.get("summary"))):
                self.add_text(
                    self.next_id(f"{prefix}-reasoning") + f":{index}",
                    Category.ASSISTANT,
                    text,
                    "Reasoning summary",
                    source_kind=SourceKind.RESPONSE,
                )
            raw = _parts_text(item.get("content"))  # raw reasoning text (open models)
            for index, text in enumerate(raw):
                self.add_text(
                    self.next_id(f"{prefix}-reasoning-text") + f":{index}",
                    Category.ASSISTANT,
                    text,
                    "Reasoning",
                    source_kind=SourceKind.RESPONSE,
                )
            if not raw and not replayed:
                self._hidden_reasoning(encrypted=bool(item.get("encrypted_content")))
            elif not raw and item.get("encrypted_content"):
                self.unmeasured["encrypted-reasoning"] += 1  # replayed: no usage tells its size
        elif kind == "agent_message":
            for index, text in enumerate(_parts_text(item.get("content"))):
                self.add_text(
                    self.next_id(f"{prefix}-assistant") + f":{index}",
                    Category.ASSISTANT,
                    text,
                    "Assistant text",
                    source_kind=SourceKind.RESPONSE,
                )
        elif kind in _CALL_ITEMS:
            self._on_call(item, ts, prefix)
        elif kind in _RESULT_ITEMS:
            self._on_output(item, ts, prefix)
        elif kind == "tool_search_output":
            # Client-side tool search: the definitions it found join the model's tools.
            self._on_output(item, ts, prefix, definitions=True)
        elif kind == "web_search_call":
            action = item.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            call_id = next((c for q, c in self.searches if q == query), "")
            self.add_text(
                self.next_id(f"{prefix}-search"),
                Category.RESULTS,
                json_text(action) if action else "",
                "Web search",
                source_id=call_id,
                source_kind=SourceKind.TOOL if call_id else SourceKind.NONE,
            )
        elif kind in _ENCRYPTED_SUMMARIES:
            self.unmeasured["encrypted-compaction-summary"] += 1
        elif kind == "image_generation_call":
            self.unmeasured["generated-image"] += 1
        elif RESPONSE_ITEM_TYPES.get(kind or "", (READ, ""))[0] == SKIPPED:
            self.diagnostics.skip(f"codex:response_item/{kind}")
        else:
            self.diagnostics.not_recognised(f"codex:response_item/{kind}", self.path, line)

    def _start_request(self, ts: int) -> None:
        if self.pending is not None:
            return
        start = self.trigger_ns if self.trigger_ns is not None and self.trigger_ns <= ts else ts
        request_id = f"request-{len(self.requests) + 1}"
        observation = self.log.observe(
            Observation.request(
                start,
                request_id,
                model=self.model or None,
            )
        )
        self.pending = _Request(
            request_id,
            start,
            ts,
            self.model,
            prompt_id=self.current_prompt,
            observation=observation,
        )

    def _on_call(self, item: dict[str, Any], ts: int, prefix: str) -> None:
        call_id = item.get("call_id") or item.get("id")
        kind = text_field(item, "type")
        name = (
            item["name"]
            if isinstance(item.get("name"), str)
            else ("tool_search" if kind == "tool_search_call" else kind)
        )
        arguments = item.get("arguments", item.get("input", item.get("action")))
        if not isinstance(call_id, str):
            call_id = self.next_id("call")
        self.add_text(
            f"call:{call_id}",
            Category.ASSISTANT,
            tool_call_text(str(name), arguments),
            "Tool arguments",
            source_id=call_id,
            source_kind=SourceKind.TOOL,
        )
        if prefix == "item" and call_id not in self.tools:
            request = self.pending
            self.tools[call_id] = _Tool(
                call_id,
                str(name),
                ts,
                request.id if request else None,
                self.current_prompt,
                # A function call's arguments are a JSON string; a custom tool's input is text.
                ToolArguments.of(arguments, decode=kind == "function_call"),
            )

    def _on_output(
        self, item: dict[str, Any], ts: int, prefix: str, *, definitions: bool = False
    ) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            call_id = self.next_id("output")
        output = item.get("output")
        text = json_text(item.get("tools") or []) if definitions else _output_text(output)
        chars = self.add_text(
            f"result:{call_id}",
            Category.TOOLS if definitions else Category.RESULTS,
            text,
            "Tool definitions (tool search)" if definitions else "Tool result",
            source_id=call_id,
            source_kind=SourceKind.TOOL,
        )
        if prefix != "item":
            return
        self.trigger_ns = ts
        tool = self.tools.get(call_id)
        if tool is None:
            self.diagnostics.note("codex:output-without-call")
            return
        tool.end_ns = max(ts, tool.start_ns)
        tool.result_chars = chars
        code = _exit_code(output)
        if code is not None:
            tool.is_error = code != 0

    def on_event(self, payload: dict[str, Any], ts: int, line: int) -> None:
        kind = text_field(payload, "type")
        if kind == "token_count":
            self._on_token_count(payload, ts, line)
        elif kind == "user_message":
            message = payload.get("message")
            chars, redacted = measure(message)
            if redacted and isinstance(message, str):
                sha = re.search(r"sha=([0-9a-f]+)", message[:80])
                if sha:
                    self.prompt_sha.add(sha.group(1))
            prompt_id = f"turn-{len(self.prompts) + 1}"
            self.prompts.append(
                Prompt(
                    prompt_id,
                    ts,
                    ts,
                    chars,
                    "user",
                    "" if redacted or not isinstance(message, str) else preview(message),
                )
            )
            self.current_prompt = prompt_id
            self.trigger_ns = ts
            self._end_turn_reasoning()
        elif kind in ("task_started", "turn_started"):
            window = token_count(payload.get("model_context_window"))
            if window:
                self.window = window
        elif kind == "exec_command_end":
            tool = self.tools.get(str(payload.get("call_id")))
            code = payload.get("exit_code")
            if tool is not None and isinstance(code, int) and not isinstance(code, bool):
                tool.is_error = code != 0
            duration = payload.get("duration")
            if tool is not None and isinstance(duration, dict):
                # The output may return while the command still runs (yield_time_ms);
                # the command's own duration is the execution span.
                tool.duration_ns = token_count(duration.get("secs")) * 1_000_000_000 + token_count(
                    duration.get("nanos")
                )
        elif kind == "patch_apply_end":
            tool = self.tools.get(str(payload.get("call_id")))
            if tool is not None and isinstance(payload.get("success"), bool):
                tool.is_error = not payload["success"]
        elif kind == "web_search_end":
            call_id = payload.get("call_id")
            if isinstance(call_id, str):
                action = payload.get("action")
                query = payload.get("query") or (
                    action.get("query") if isinstance(action, dict) else None
                )
                query = query if isinstance(query, str) else ""  # none given: no text
                self.searches.append((query, call_id))
                self._start_request(ts)
                request = self.pending
                self.tools.setdefault(
                    call_id,
                    _Tool(
                        call_id,
                        "web_search",
                        ts,
                        request.id if request else None,
                        self.current_prompt,
                        ToolArguments.of({"query": query} if query else {}),
                        end_ns=ts,
                    ),
                )
        elif kind == "collab_agent_spawn_end":
            call_id, child = payload.get("call_id"), payload.get("new_thread_id")
            if isinstance(call_id, str) and isinstance(child, str):
                self.spawned[call_id] = child
        elif kind == "context_compacted":
            pass  # the `compacted` line holds the facts
        elif kind in EVENT_MSG_TYPES:
            self.diagnostics.skip(f"codex:event_msg/{kind}")
        else:
            self.diagnostics.not_recognised(f"codex:event_msg/{kind}", self.path, line)

    def _on_token_count(self, payload: dict[str, Any], ts: int, line: int) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return  # rate limits only: not a request
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            self.diagnostics.warn(
                self.path, line, "bad-shape", "token_count without last_token_usage"
            )
            return
        fingerprint = (
            tuple(token_count(total.get(k)) for k in sorted(total))
            if isinstance(total, dict)
            else None
        )
        if fingerprint is not None and fingerprint == self.last_total:
            return  # Desktop 0.104 writes each token_count twice
        self.last_total = fingerprint
        window = token_count(info.get("model_context_window"))
        if window:
            self.window = window
        prompt = token_count(last.get("input_tokens"))
        output = token_count(last.get("output_tokens"))
        if not prompt and not output:
            return  # all-zero usage (e.g. remote compaction): not a request
        self._start_request(ts)
        request = self.pending
        assert request is not None
        request.end_ns = ts
        request.window = self.window
        request.usage = Usage(
            prompt_tokens=prompt,  # input_tokens already includes the cached part
            input_tokens=prompt,
            output_tokens=output,
            cache_read_tokens=token_count(last.get("cached_input_tokens")),
            cache_write_tokens=token_count(last.get("cache_write_input_tokens")),
            reasoning_tokens=token_count(last.get("reasoning_output_tokens")),
        )
        self.log.settle(request.observation, reported_tokens=prompt)
        self._settle_reasoning(token_count(last.get("reasoning_output_tokens")))
        self.requests.append(request)
        self.pending = None
        self.trigger_ns = ts
        for compaction in self.compactions:
            if compaction.post_tokens is None and compaction.end_ns <= request.start_ns:
                compaction.post_tokens = prompt

    def _hidden_reasoning(self, *, encrypted: bool) -> None:
        """A reasoning item whose text is not in the journal (encrypted, or stripped by
        whoever published it): sized from its request's reasoning_output_tokens when the
        token_count comes. The corpus shows that it stays in the context until the next
        user prompt (docs/estimates.md, Codex reasoning)."""
        item_id = self.next_id("reasoning-hidden")
        handle = self.log.add_evidence(
            item_id,
            Category.ASSISTANT,
            0,
            method=estimate.REASONING_OUTPUT_TOKENS,
            label="Reasoning (encrypted)" if encrypted else "Reasoning (not in the journal)",
            source_kind=SourceKind.RESPONSE,
        )
        kind = "encrypted-reasoning" if encrypted else "hidden-reasoning"
        self.reasoning_pending.append((handle, kind))
        self.reasoning_in_turn.append(item_id)

    def _settle_reasoning(self, tokens: int | None) -> None:
        """The pending request's encrypted reasoning: all of its reasoning_output_tokens on
        the first item (one item per response in every corpus journal), 0 on any other;
        None: no usage came for the request, so its size is unknown (`unmeasured`)."""
        for index, (handle, kind) in enumerate(self.reasoning_pending):
            size = None if tokens is None else (tokens if index == 0 else 0)
            self.log.settle_evidence(handle, size, kind)
        self.reasoning_pending.clear()

    def _end_turn_reasoning(self) -> None:
        """A user prompt: the previous turn's encrypted reasoning leaves the context (the
        API keeps reasoning items only since the last user message; measured in the corpus:
        the next request's input falls by that turn's reasoning_output_tokens)."""
        for item_id in self.reasoning_in_turn:
            self.log.remove(item_id)
        self.reasoning_in_turn.clear()

    def on_compacted(self, payload: dict[str, Any], ts: int, line: int | None = None) -> None:
        if self.pending is not None:
            self.log.settle(self.pending.observation, dropped=True)
            self.pending = None
        self._settle_reasoning(None)
        self.reasoning_in_turn.clear()  # the compaction clears them with the rest
        pre = (
            self.requests[-1].usage.prompt_tokens
            if self.requests and self.requests[-1].usage
            else None
        )
        start = self.requests[-1].end_ns if self.requests else ts
        compaction_id = f"compaction-{len(self.compactions) + 1}"
        history = payload.get("replacement_history")
        message = payload.get("message")
        if isinstance(history, list):
            # `replacement_history` is the entire new model-visible history; the base
            # instructions are sent beside it and stay.
            removed = self.log.clear(keep=frozenset({Category.SYSTEM}))
            for item in history:
                if isinstance(item, dict):
                    self.on_response_item(item, ts, prefix=compaction_id, line=line)
        else:
            # Older builds record only the summary; Codex rebuilds the history from the
            # initial context, the user's messages and the summary.
            removed = self.log.clear(
                keep=frozenset(
                    {
                        Category.SYSTEM,
                        Category.RULES,
                        Category.SKILLS,
                        Category.ENVIRONMENT,
                        Category.PROMPTS,
                        Category.UNATTRIBUTED,
                    }
                )
            )
        if measure(message)[0] and not isinstance(history, list):
            self.add_text(
                f"summary:{compaction_id}", Category.SUMMARIES, message, "Compaction summary"
            )
        observation = self.log.observe(
            Observation.after_compaction(
                ts,
                compaction_id,
                model=self.model or None,
            )
        )
        self.compactions.append(
            _Compaction(
                compaction_id,
                min(start, ts),
                ts,
                pre_tokens=pre,
                removed_items=removed,
                timing="previous request's end → compacted line",
                observation=observation,
                window=self.window,
            )
        )
        self.trigger_ns = ts

    # -- result -------------------------------------------------------------

    def finish(self) -> Session | None:
        if self.start_ns is None or self.end_ns is None:
            return None
        end = self.end_ns
        if self.pending is not None:
            self.log.settle(self.pending.observation, dropped=True)  # output began, no usage came
        self._settle_reasoning(None)
        # Each request against the window reported with it: a session that switches models
        # (gpt-5.3-codex-spark, 121,600, then gpt-5.5, 258,400) changes windows too.
        for request in self.requests:
            self.log.settle(request.observation, window_tokens=request.window or self.window)
        for compaction in self.compactions:
            if compaction.observation is not None:
                self.log.settle(
                    compaction.observation,
                    window_tokens=compaction.window or self.window,
                    reported_tokens=compaction.post_tokens,
                )
        snapshots = self.log.replay()
        responses = tuple(r.finish() for r in handed_over(self.requests) if r.usage is not None)
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
            facts.append(("redacted_items", str(self.redacted_items)))
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
            tool_calls=tools,
            compactions=compactions,
            snapshots=tuple(snapshots),
            unmeasured=self.log.unmeasured(self.unmeasured),
            estimate_methods=self.log.estimate_methods,
            facts=tuple(facts),
        )


@functools.cache
def _redacted_label(label: str) -> str:
    """One object per label (a few constants): a redacted rollout has tens of thousands of
    such items, and each held a copy of its label."""
    return f"{label} (length from a redaction marker)"


def _tool_end(tool: _Tool, session_end: int) -> int:
    if tool.duration_ns is not None:
        return min(tool.start_ns + tool.duration_ns, max(session_end, tool.start_ns))
    return tool.end_ns if tool.end_ns is not None else max(session_end, tool.start_ns)


def read_rollout(path: Path, diagnostics: Diagnostics) -> RolloutBuilder:
    source = str(path)
    builder = RolloutBuilder(source, diagnostics)
    clock = journal_clock(path, diagnostics, source)
    for record in read_jsonl(path, diagnostics):
        value = record.value
        if not isinstance(value, dict):
            diagnostics.warn(source, record.line, "bad-shape", "line is not a JSON object")
            continue
        kind = text_field(value, "type")
        payload = value.get("payload")
        if kind in _KNOWN_SKIPPED:
            diagnostics.skip(f"codex:{kind}")
            continue
        if kind not in _LINE_TYPES:
            diagnostics.not_recognised(f"codex:{kind}", source, record.line)
            continue
        if not isinstance(payload, dict):
            diagnostics.warn(source, record.line, "bad-shape", f"{kind} line without a payload")
            continue
        ts = clock.time(value, record.line)
        builder.start_ns = ts if builder.start_ns is None else min(builder.start_ns, ts)
        builder.end_ns = ts if builder.end_ns is None else max(builder.end_ns, ts)
        if kind == "session_meta":
            builder.on_session_meta(payload)
        elif kind == "turn_context":
            builder.on_turn_context(payload)
        elif kind == "response_item":
            builder.on_response_item(payload, ts, line=record.line)
        elif kind == "event_msg":
            builder.on_event(payload, ts, record.line)
        else:
            builder.on_compacted(payload, ts, record.line)
    return builder


def read_rollouts(paths: list[Path], diagnostics: Diagnostics) -> list[Session]:
    """Read rollouts together so that a subagent rollout links to its parent's
    `spawn_agent` call when both are given."""
    builders: list[RolloutBuilder] = []
    for path in paths:
        try:
            builders.append(read_rollout(path, diagnostics))
        except JournalError as error:
            diagnostics.warn(error.path, error.line, "unreadable", error.message)
    by_id = {b.session_id: b for b in builders if b.session_id}
    for builder in builders:
        for child_id in builder.spawned.values():
            child = by_id.get(child_id)
            if child is not None and child.parent_session is None:
                child.parent_session = builder.session_id
    sessions = [s for b in builders if (s := b.finish()) is not None]
    calls = {child: call for b in builders for call, child in b.spawned.items()}
    return [
        s if s.parent_session is None else _with_parent_call(s, calls.get(s.session_id))
        for s in sessions
    ]


def _with_parent_call(session: Session, call_id: str | None) -> Session:
    return replace(session, parent_call_id=call_id) if call_id else session


def _thread_links(head: list[object]) -> list[str]:
    """The thread ids a rollout's head ties it to, read as `RolloutBuilder` reads them: its
    own (the first `session_meta.id`), then its parent (`thread_spawn.parent_thread_id`)
    and the children whose `collab_agent_spawn_end` it holds. Nothing when no session_meta
    of the head has an id: such a rollout is named by its file and linked to no other."""
    own: str | None = None
    links: list[str] = []
    for value in head:
        if not isinstance(value, dict) or not isinstance(value.get("payload"), dict):
            continue
        payload, kind = value["payload"], value.get("type")
        if kind == "session_meta":
            if own is None and isinstance(payload.get("id"), str) and payload["id"]:
                own = payload["id"]
            spawn = _thread_spawn(payload.get("source"))
            parent = spawn.get("parent_thread_id") if spawn is not None else None
            if isinstance(parent, str) and parent:
                links.append(parent)
        elif kind == "event_msg" and payload.get("type") == "collab_agent_spawn_end":
            call_id, child = payload.get("call_id"), payload.get("new_thread_id")
            if isinstance(call_id, str) and isinstance(child, str) and child:
                links.append(child)
    return [own, *links] if own is not None else []


def plan(files: list[SniffedFile]) -> list[JournalGroup]:
    """One group per session tree, so that independent trees can be read in parallel.

    A subagent links to its parent's spawn call only when both are read in one group, and
    a child's own `session_meta` names its parent (`source.subagent.thread_spawn.
    parent_thread_id`, FORMATS §3.6), so the trees are found from the sniffed heads alone:
    rollouts are in one group when they share a session id (a copy, a resumed session:
    the loader renames the second), when one names the other as its parent, or when one's
    head holds the spawn of the other (a child that does not name its parent), and
    transitively (a grandchild joins its grandparent). A spawn recorded after the head,
    of a child that does not name its parent, is not seen: the two are read apart and
    not linked. A rollout without a session id in its head is a group of its own.
    Groups come in the order of their first file, files in their given order."""
    from agent_profiler.adapters import JournalGroup

    root = list(range(len(files)))  # union-find over the files; a set's root is its first

    def find(index: int) -> int:
        while root[index] != index:
            root[index] = root[root[index]]
            index = root[index]
        return index

    first: dict[str, int] = {}  # thread id -> the first file tied to it
    for index, file in enumerate(files):
        for thread in _thread_links(file.head):
            a, b = find(index), find(first.setdefault(thread, index))
            root[max(a, b)] = min(a, b)
    trees: dict[int, list[Path]] = {}
    for index, file in enumerate(files):
        trees.setdefault(find(index), []).append(file.path)
    return [JournalGroup(HARNESS, None, tuple(paths)) for paths in trees.values()]


def read(group: JournalGroup, diagnostics: Diagnostics) -> list[Session]:
    return read_rollouts(list(group.paths), diagnostics)


# --------------------------------------------------------------------------- discover

# Tools that can change the workspace: a repeated call after one of these is not a repeat.
MUTATING_TOOLS = frozenset(
    {
        "apply_patch",
        "exec_command",
        "shell",
        "local_shell",
        "local_shell_call",
        "write_stdin",
        "container.exec",
    }
)
NATIVE_COMPOSITION: tuple[str, ...] = ()  # a rollout reports totals only


def locate(env: Mapping[str, str]) -> Iterator[Located]:
    """`$CODEX_HOME`, else `~/.codex`: `sessions/YYYY/MM/DD/rollout-*.jsonl` and
    `archived_sessions/`."""
    from agent_profiler.adapters import locating

    root = locating.folder(env, "CODEX_HOME", ".codex")
    paths = (
        p
        for sub in ("sessions", "archived_sessions")
        for p in (root / sub).rglob("rollout-*.jsonl*")
    )
    yield from locating.jsonl_sessions(paths)
