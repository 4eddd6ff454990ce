"""Codex's record tables and what a response item's parts say: every rollout line type,
`response_item` type and `event_msg` type (read, into which category, or skipped on
purpose), the item families the builder tells apart (output, call, result items), the
leading tags of harness-injected context, and the helpers that turn an item's content into
text: its length (a sanitiser's `[REDACTED_… len=N]` marker counts as N), its category, a
tool's output and exit code, and how a spawned child's rollout names its parent
(`thread_spawn`) (FORMATS.md §3).

Separate from the rollout builder (`codex_rollout.py`) and the line dispatch (`codex.py`):
these are facts of the format, read by both and by `tests/test_record_tables.py`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from agent_profiler.model import Category

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
    "inter_agent_communication": (
        READ,
        "another agent's message to this one (model input): a task (trigger_turn) or a "
        "message → User prompts, labelled by its author; an encrypted payload unmeasured",
    ),
    "inter_agent_communication_metadata": (SKIPPED, "its delivery metadata (trigger_turn)"),
    "rollout_reference": (
        READ,
        "a rotated segment or a paginated fork points at the rollout whose history it "
        "continues instead of copying it: not followed; the session is marked as starting "
        "mid-conversation (its Unattributed holds the inherited turns)",
    ),
    "token_usage_record": (SKIPPED, "usage bookkeeping; requests are read from token_count"),
    "world_state": (SKIPPED, "the harness's own state snapshot"),
    "retained_context": (SKIPPED, "what a compaction kept, repeated in the compacted line"),
    "security_risk_score": (SKIPPED, "a safety score of a turn"),
    "realtime_item": (SKIPPED, "a realtime (voice) conversation item"),
}
RESPONSE_ITEM_TYPES: dict[str, tuple[str, str]] = {
    "message": (
        READ,
        "developer → System instructions; user → User prompts; assistant → Assistant "
        "history; a block with a known leading tag → its category (Rules, Skills, Environment…); "
        "a `system` one is never sent (codex-rs `is_api_message`): skipped",
    ),
    "agent_message": (
        READ,
        "another agent's message to this one (model input, never output): a task or a "
        "message → User prompts, labelled by its author; an encrypted_content part unmeasured",
    ),
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
    "additional_tools": (
        READ,
        "tool definitions sent as an input item (newer builds, Responses Lite models): the "
        "tools' JSON → Tool definitions",
    ),
    "configuration_update": (
        SKIPPED,
        "a control item telling the model its reasoning effort: no text to count",
    ),
    "ghost_snapshot": (SKIPPED, "a git snapshot the harness keeps for undo; never sent"),
    "compaction_trigger": (SKIPPED, "a request control; not a durable item, never sent"),
}
# The TurnItem types of `item_completed` (openai/codex `codex-rs/protocol/src/items.rs`,
# `#[serde(tag = "type")]`: the variant's name): those read stand for the legacy event a
# paginated thread no longer writes (`codex_events._on_item_completed`); the others are
# skipped, each under its type: its model-visible part is a response_item, or it is UI.
TURN_ITEM_TYPES = frozenset(
    {
        "UserMessage",  # read: user_message (the prompt span)
        "WebSearch",  # read: web_search_end (a tool call)
        "FileChange",  # read: patch_apply_end (the patch's success)
        "CommandExecution",  # read: exec_command_end (exit code, duration)
        "CollabAgentToolCall",  # read when spawnAgent: collab_agent_spawn_end (the child)
        "HookPrompt",
        "AgentMessage",
        "Plan",
        "Reasoning",
        "DynamicToolCall",
        "SubAgentActivity",
        "ImageView",
        "Sleep",
        "ImageGeneration",
        "McpToolCall",
        "ContextCompaction",
        "FunctionCallOutput",  # a display copy of the function_call_output response_item
        "Extension",  # clock.sleep, web.search, image_gen.generation: for the UI
        "EnteredReviewMode",
        "ExitedReviewMode",
    }
)
# `event_msg`s are UI and telemetry events: the model sees the `response_item`s. A few
# carry facts that are read (a request's usage, the prompt as typed, a tool's outcome).
_UI_EVENT = "a UI or telemetry event; what the model sees is the response_item"
EVENT_MSG_TYPES: dict[str, tuple[str, str]] = {
    "token_count": (READ, "one request: last_token_usage (input, output, reasoning) and window"),
    "user_message": (READ, "a user prompt as typed: the prompt span (its text is a message)"),
    "injected_message": (
        READ,
        "a timer's or an external program's message: a prompt span from the harness (the "
        "model sees it as a user message response_item)",
    ),
    "task_started": (READ, "a turn starts: its model_context_window"),
    "turn_started": (READ, "newer name of task_started"),
    "exec_command_end": (READ, "a command's exit code and duration (the tool span)"),
    "patch_apply_end": (READ, "whether apply_patch succeeded (the tool span)"),
    "mcp_tool_call_end": (READ, "whether an MCP tool call failed (its result: Err, isError)"),
    "web_search_end": (READ, "a web search: a tool call (its query)"),
    "collab_agent_spawn_end": (READ, "a spawned subagent's thread id (links the child)"),
    "context_compacted": (READ, "a compaction's notice; its facts come from the compacted line"),
    "item_completed": (
        READ,
        "a paginated thread's record of a finished item (TurnItem): a user message, web "
        "search, file change, command or spawn is read as its legacy event (see "
        "TURN_ITEM_TYPES); the others are skipped",
    ),
    "turn_aborted": (
        READ,
        "the turn was interrupted: a request whose output began and whose usage never came "
        "is a failed request",
    ),
    "task_complete": (
        READ,
        "a turn ends: a request whose output began and whose usage never came is a failed "
        "request (the turn ended on an error, which Codex does not write)",
    ),
    "turn_complete": (READ, "newer name of task_complete"),
    "thread_rolled_back": (
        READ,
        "the last num_turns user turns leave the context (as Codex's history rebuild "
        "drops them); a marker on Events",
    ),
    **{
        kind: (SKIPPED, _UI_EVENT)
        for kind in (
            "agent_message",
            "agent_reasoning",
            "agent_reasoning_raw_content",
            "agent_reasoning_section_break",
            "entered_review_mode",
            "exited_review_mode",
            "mcp_tool_call_begin",
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
            "thread_settings_applied",
            "thread_name_updated",
            "item_started",
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
READ_LINE_TYPES = frozenset(k for k, (how, _) in LINE_TYPES.items() if how == READ)
SKIPPED_LINE_TYPES = frozenset(k for k, (how, _) in LINE_TYPES.items() if how == SKIPPED)
_REDACTED = re.compile(r"^\[REDACTED_[A-Z_]+ len=(\d+)\b")
# A redaction marker's hash of the text it replaced: the same prompt's markers match.
REDACTION_SHA = re.compile(r"sha=([0-9a-f]+)")
_EXITED = re.compile(r"Process exited with code (-?\d+)")
# A custom tool's output (apply_patch, 0.14x): "Exit code: 0\nWall time: …".
_EXIT_CODE = re.compile(r"Exit code: (-?\d+)\n")
# An output returned while the command still runs (unified exec): its exit is reported
# later, to the call that reads it (write_stdin's "Process exited with code N").
_RUNNING = re.compile(r"Process running with session ID \d+")
# codex-rs answers a patch it could not apply with this error, and no patch_apply_end.
_PATCH_REFUSED = "apply_patch verification failed"
OUTPUT_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "tool_search_call",
        "web_search_call",
        "image_generation_call",
    }
)
CALL_ITEMS = frozenset(
    {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
)
RESULT_ITEMS = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
)
ENCRYPTED_SUMMARIES = frozenset({"compaction", "compaction_summary", "context_compaction"})

# Leading tags of harness-injected context blocks, by category (FORMATS §3.4).
_TAGS: tuple[tuple[str, Category, str], ...] = (
    ("<skills_instructions>", Category.SKILLS, "Skills listing"),
    ("<plugins_instructions>", Category.SKILLS, "Plugins listing"),
    # A skill's SKILL.md, injected when the user names it (`$coordinator`, 0.141).
    ("<skill>", Category.SKILLS, "Skill body"),
    ("# AGENTS.md instructions", Category.RULES, "AGENTS.md"),
    ("<user_instructions>", Category.RULES, "User instructions"),
    ("<INSTRUCTIONS>", Category.RULES, "Instructions"),
    ("<permissions instructions>", Category.ENVIRONMENT, "Permissions"),
    ("<environment_context>", Category.ENVIRONMENT, "Environment context"),
    ("<collaboration_mode>", Category.ENVIRONMENT, "Collaboration mode"),
    ("<turn_aborted>", Category.OVERHEAD, "Turn aborted"),
    ("<user_shell_command>", Category.ENVIRONMENT, "Shell command"),
)


# A marker stating more characters than this replaced no real item (a context window is
# far smaller): it is not believed, and is measured as its own text.
STATED_LIMIT = 2**31


def measure(text: object, warn: Callable[[str], None] | None = None) -> tuple[int, bool]:
    """(characters, redacted?) of a text; a sanitiser marker counts as its stated length,
    unless that length is impossible (`STATED_LIMIT`): then the marker is measured as its
    text, and `warn` is told why."""
    if not isinstance(text, str):
        return 0, False
    match = _REDACTED.match(text)
    if match is None:
        return len(text), False
    digits = match[1]
    if len(digits) <= 10 and (stated := int(digits)) <= STATED_LIMIT:
        return stated, True
    if warn is not None:
        shown = digits if len(digits) <= 20 else digits[:20] + "…"
        warn(f"redaction marker states an impossible length (len={shown}): measured as its text")
    return len(text), False


# The content parts a message, a reasoning item or a tool's output is known to hold: text
# (read by `parts_text`) and images (counted as unmeasured).
KNOWN_PARTS = frozenset(
    {
        "input_text",
        "output_text",
        "summary_text",
        "reasoning_text",
        "text",
        "input_image",
        "output_image",
        "image",
        "encrypted_content",  # an agent message's encrypted payload (counted as unmeasured)
    }
)


def parts_text(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    return texts


# The first characters of the tags: a text that starts with none of them (most) is not
# compared with each tag.
_TAG_STARTS = frozenset(tag[0] for tag, _, _ in _TAGS)


def classify(role: str, text: str) -> tuple[Category, str]:
    stripped = text.lstrip()
    if stripped[:1] in _TAG_STARTS:
        for tag, category, label in _TAGS:
            if stripped.startswith(tag):
                return category, label
    if role == "developer":
        return _DEVELOPER
    if role == "assistant":
        return _ASSISTANT_TEXT
    return _USER_PROMPT


# Made once (a member read through its enum class costs about 800 instructions in CPython
# 3.11, EnumType's `__getattr__` hook): `classify` returns one for most message blocks.
_DEVELOPER = (Category.SYSTEM, "Developer instructions")
_ASSISTANT_TEXT = (Category.ASSISTANT, "Assistant text")
_USER_PROMPT = (Category.PROMPTS, "User prompt")


def output_text(output: object) -> str:
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
    return "".join(listed_texts(output) or ())  # (an object's list of items too)


def listed_texts(output: object) -> list[str] | None:
    """The text items of an output sent as a list of content items (an MCP tool's, an
    image viewer's: text and images), or None for an output sent as one text."""
    content = output.get("content") if isinstance(output, dict) else output
    return parts_text(content) if isinstance(content, list) else None


def exit_code(output: object) -> int | None:
    """The exit status a tool output states: an envelope's `metadata.exit_code`, a
    command's "Process exited with code N", a custom tool's leading "Exit code: N"; a
    patch codex-rs refused ("apply_patch verification failed: …") is 1. None: it says
    none (an output of a command still running among them: `still_running`)."""
    if isinstance(output, str) and output.startswith('{"output"'):
        try:
            decoded = orjson.loads(output)
        except ValueError:
            return None
        meta = decoded.get("metadata") if isinstance(decoded, dict) else None
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return code if isinstance(code, int) and not isinstance(code, bool) else None
    if isinstance(output, str):
        match = _EXITED.search(output, 0, 400) or _EXIT_CODE.match(output)
        if match:
            return int(match.group(1))
        if output.startswith(_PATCH_REFUSED):
            return 1
    return None


def still_running(output: object) -> bool:
    """The output came back while its command still ran (`Process running with session
    ID N`): the command's exit is reported to a later call, not to this one."""
    return isinstance(output, str) and _RUNNING.search(output, 0, 400) is not None


def thread_spawn(source: object) -> dict[str, Any] | None:
    """`session_meta.source.subagent.thread_spawn`, the object by which a spawned child's
    rollout names its parent (`parent_thread_id`) and role (FORMATS §3.6); None when
    `source` is anything else (a string such as "cli", `{"subagent": "review"}`)."""
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    return spawn if isinstance(spawn, dict) else None
