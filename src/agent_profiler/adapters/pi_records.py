"""Pi's record tables and message content: every entry type and message role (read or
skipped on purpose), the fixed texts Pi wraps summaries in, the session version this
adapter reads, and how a message's content becomes the text the model sees (text blocks,
a user `!` command).

Separate from `pi.py` (the session: entries, tree, compactions) and `pi_messages.py`
(what each message does to it): these are facts of the format, used by both."""

from __future__ import annotations

from typing import Any

from agent_profiler.adapters.common import MS, text_field
from agent_profiler.model import Category
from agent_profiler.records import record

CURRENT_VERSION = 3
# How Pi wraps summaries when it sends them (core/messages.ts): part of the prompt.
COMPACTION_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)
COMPACTION_SUFFIX = "\n</summary>"
BRANCH_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)
BRANCH_SUFFIX = "</summary>"
# Every entry type and message role this adapter knows, each read (into which category,
# and why) or skipped on purpose (why it is not model input); anything else is "not
# recognised (not read)" with its first path:line (issue 28). Source: pi-mono
# `packages/coding-agent/docs/session.md`, `src/core/messages.ts` (convertToLlm), corpus.
READ, SKIPPED = "read", "skipped on purpose"
ENTRY_TYPES: dict[str, tuple[str, str]] = {
    "session": (READ, "the header: id, version, cwd (v1: model and thinking level)"),
    "message": (READ, "a message of the conversation: see MESSAGE_ROLES"),
    "compaction": (READ, "its summary → Compaction summaries; earlier entries leave"),
    "branch_summary": (READ, "the summary of an abandoned branch → Compaction summaries"),
    "custom_message": (READ, "an extension's message sent to the model → Environment"),
    "model_change": (READ, "a model change marker (not model input)"),
    "thinking_level_change": (READ, "a thinking-level marker (not model input)"),
    "session_info": (READ, "the session's name (not model input)"),
    "usage": (READ, "v1.6: a request outside the conversation (the cache warmer's): its usage"),
    "context_edit": (
        READ,
        "v1.6: an earlier entry's content taken out of the context (null) or replaced, on"
        " its branch from then on (the latest edit of it in force)",
    ),
    "custom": (SKIPPED, "an extension's private state, never sent to the model"),
    "label": (SKIPPED, "a user's bookmark on an entry, never sent to the model"),
}
MESSAGE_ROLES: dict[str, tuple[str, str]] = {
    "user": (READ, "text → User prompts; images listed as unmeasured"),
    "assistant": (READ, "text, thinking, tool calls → Assistant history; usage: a request"),
    "toolResult": (READ, "a tool's output → Tool results"),
    "bashExecution": (READ, "a user `!` command and its output → Tool results"),
    "custom": (READ, "an extension's message → Environment"),
    "hookMessage": (READ, "older name of custom → Environment"),
    # v0.80+ (earendil-works/pi): the system prompt and the tools, as the conversation has
    # them (`system-prompt-updates.ts`; pi-ai `utils/transcript.ts` replays them in order).
    "system": (
        READ,
        "a system-prompt update: its text → System instructions (a section by its name:"
        " project context → Rules and memory, skills → Skills, cwd → Environment), its tool"
        " declarations → Tool definitions; what it updates leaves",
    ),
    "developer": (READ, "instructions sent as the developer → System instructions"),
}
# The content part types Pi writes (pi-ai `types.ts`: TextContent, ThinkingContent,
# ImageContent, ToolCall; a system update's `toolLoadout`), and which each role's
# `content` list holds: any other is an `unknown-block` warning with its place (the parts
# beside it still read), as a Claude Code block of a type not known is. A role not in
# ROLE_PARTS has no content list read.
PART_TYPES: dict[str, tuple[str, str]] = {
    "text": (READ, "text → the category of its message"),
    "image": (READ, "an image: listed as unmeasured"),
    "thinking": (READ, "an assistant's thinking → Assistant history (redacted: unmeasured)"),
    "toolCall": (READ, "an assistant's tool call: its name and arguments → Assistant history"),
    "toolLoadout": (READ, "a system update's tools added and removed → Tool definitions"),
}
ROLE_PARTS: dict[str, frozenset[str]] = {
    "user": frozenset({"text", "image"}),
    "assistant": frozenset({"text", "thinking", "toolCall"}),
    "toolResult": frozenset({"text", "image"}),
    "custom": frozenset({"text", "image"}),
    "hookMessage": frozenset({"text", "image"}),
    "developer": frozenset({"text", "image"}),
    "system": frozenset({"text", "toolLoadout"}),
}


def unknown_parts(role: str, content: list[Any]) -> list[str]:
    """The types of a message's content parts its role does not hold (`untyped`: a part
    without a type, or not an object)."""
    known = ROLE_PARTS.get(role)
    if known is None:
        return []
    return [
        kind if isinstance(kind, str) else "untyped"
        for block in content
        # (a type that is no string, a list say, cannot be looked up in `known`)
        if not isinstance(kind := block.get("type") if isinstance(block, dict) else None, str)
        or kind not in known
    ]


# The text of a system-prompt update that replaces every earlier one (`replacement`).
SUPERSEDES = (
    "The following is the complete current system prompt. "
    "It supersedes all earlier system prompt updates"
)
# The sections of a structured system prompt (`buildSystemPromptSections`) that are not
# Pi's own instructions; any other section is System instructions.
SECTIONS = {
    "project_context": (Category.RULES, "Project context (AGENTS.md)"),
    "skills": (Category.SKILLS, "Skills"),
    "cwd": (Category.ENVIRONMENT, "Working directory"),
}


@record
class SystemUpdate:
    """What one `system` message says: its text blocks, the sections it sets (None:
    removes), the tools it declares (name, declaration) and those it takes away, and
    whether it replaces every earlier update's text (its text says so, or, in later
    versions, its `replace` flag: a complete-state replacement)."""

    texts: list[tuple[int, str]]
    sections: list[tuple[str, str | None]]
    added: list[tuple[str, object]]
    removed: list[str]
    replaces: bool


def system_update(message: dict[str, Any]) -> SystemUpdate:
    """The three shapes Pi has written: `content` text with `toolsAdded`/`toolsRemoved`
    (5091fae9); `content` blocks with a `toolLoadout` (`tools`, and `added`/`removed`
    when `tools` is the whole catalog); `content` plus `sections` patched by name."""
    content = message.get("content")
    texts = [(i, t) for i, t in text_blocks(content)[0] if t]
    raw_sections = message.get("sections")
    sections = [
        (name, text if isinstance(text, str) else None)
        for name, text in (raw_sections.items() if isinstance(raw_sections, dict) else ())
        if isinstance(name, str)
    ]
    added: list[object] = []
    removed: list[object] = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "toolLoadout":
            declared = block.get("added") if "added" in block else block.get("tools")
            added += declared if isinstance(declared, list) else []
            gone = block.get("removed")
            removed += gone if isinstance(gone, list) else []
    for key, into in (("toolsAdded", added), ("toolsRemoved", removed)):
        value = message.get(key)
        into += value if isinstance(value, list) else []
    return SystemUpdate(
        texts,
        sections,
        [(name, tool) for tool in added if (name := _tool_name(tool))],
        [name for tool in removed if (name := _tool_name(tool))],
        message.get("replace") is True or any(text.startswith(SUPERSEDES) for _, text in texts),
    )


def _tool_name(tool: object) -> str:
    """A declaration's or a reference's `name` (a bare string names one too)."""
    name = text_field(tool, "name") if isinstance(tool, dict) else tool
    return name if isinstance(name, str) else ""


def epoch_ms(value: object) -> int | None:
    # (int, float), not int | float: the union was made anew at each call (every message)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 2**53:
        return None
    return int(value * MS)


def text_blocks(content: object) -> tuple[list[tuple[int, str]], int]:
    """(block index, text) pairs of message content as the model sees it, and the
    number of images in it (not estimated)."""
    if isinstance(content, str):
        return [(0, content)], 0
    texts: list[tuple[int, str]] = []
    images = 0
    if isinstance(content, list):
        for index, block in enumerate(content):
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str):
                    texts.append((index, text))
            elif kind == "image":
                images += 1
    return texts, images


def bash_execution_text(message: dict[str, Any]) -> str:
    """A user `!` command as Pi sends it (`bashExecutionToText`)."""
    command = text_field(message, "command") or ""
    output = text_field(message, "output") or ""
    text = f"Ran `{command}`\n"
    text += f"```\n{output}\n```" if output else "(no output)"
    code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif isinstance(code, int) and not isinstance(code, bool) and code != 0:
        text += f"\n\nCommand exited with code {code}"
    full_path = text_field(message, "fullOutputPath")
    if message.get("truncated") and full_path:
        text += f"\n\n[Output truncated. Full output: {full_path}]"
    return text
