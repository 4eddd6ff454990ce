"""What the harness puts into a Claude Code session's context besides the conversation:
the text of a message's or tool result's content (and its images and documents), how user
text is classified by its leading tag (a prompt, a skill body, a harness wrapper, the
environment), and what each `attachment` record adds (queued messages, hook context,
files, listings), as functions of the session being read (`claude_session.SessionBuilder`).

Separate from `claude_session.py`, which holds the session's state and reads the user and
assistant records, and from `claude_records.py`, which says which attachment types are
read at all: this module is the content of those records and attachments."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler import estimate, images
from agent_profiler.adapters.common import text_field, version_tuple
from agent_profiler.model import Category, SourceKind

if TYPE_CHECKING:
    from agent_profiler.adapters.claude_session import SessionBuilder

# Text that the harness (not the user) puts into user records, by leading tag.
_OVERHEAD_TAGS = (
    "<system-reminder>",
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-caveat>",
    "[Request interrupted",
)
_ENVIRONMENT_TAGS = (
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<task-notification>",
    "<user-prompt-submit-hook>",
)
# An assistant message's blocks that are the answer itself: (the key of its text, its label).
ANSWER_BLOCKS = {"text": ("text", "Assistant text"), "thinking": ("thinking", "Thinking")}
_SKILL_PREFIX = "Base directory for this skill"


# --------------------------------------------------------------------------- small helpers


def text_of(
    content: object, unknown: list[object] | None = None
) -> tuple[str, Sequence[dict[str, Any]]]:
    """(text, image and document blocks) of tool-result or message content as the model
    sees it; the text blocks joined, so that the estimator sees what they are. A
    `search_result` (a tool's search hit: title, source and its text blocks) is text too,
    and a `tool_reference` (ToolSearch's result: a deferred tool loaded) its tool's name,
    which the API expands into the tool's definition, not in the journal. The type of any
    other block is added to `unknown`, for the caller's `unknown-block` warning."""
    if isinstance(content, str):
        return content, ()  # most tool results: no list made for no media
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    if isinstance(content, list):
        for block in content:
            kind = text_field(block, "type") if isinstance(block, dict) else None
            if kind == "text":
                text = block.get("text")
                texts.append(text if isinstance(text, str) else "")
            elif kind == "image" or kind == "document":
                media.append(block)
            elif kind == "search_result":
                parts = (
                    block.get("title"),
                    block.get("source"),
                    text_of(block.get("content"), unknown)[0],
                )
                texts.append("\n".join(p for p in parts if isinstance(p, str) and p))
            elif kind == "tool_reference":
                texts.append(_string(block.get("tool_name")))
            elif unknown is not None:
                unknown.append(kind or "untyped")
    return "".join(texts), media


# Results of a server tool, in the response that called it (2.1.3xx declares two).
SERVER_RESULTS = frozenset({"web_search_tool_result", "advisor_tool_result"})


def server_result(block: dict[str, Any]) -> tuple[str, bool, str]:
    """(text, failed, what of it is unmeasured or "") of a server tool's result block: a
    web search's hits by title and address (their pages come encrypted, sent back as they
    came: `web-search-pages`), the advisor's answer (a redacted one: `advisor-redacted`);
    either's error (`…_error`, its `error_code`)."""
    content = block.get("content")
    if isinstance(content, dict):
        kind = text_field(content, "type") or ""
        if kind.endswith("_error"):
            return _string(content.get("error_code")), True, ""
        if kind == "advisor_result":
            return _string(content.get("text")), False, ""
        return "", False, "advisor-redacted" if kind == "advisor_redacted_result" else ""
    lines: list[str] = []
    encrypted = False
    for hit in content if isinstance(content, list) else ():
        if isinstance(hit, dict):
            lines += [t for t in (hit.get("title"), hit.get("url")) if isinstance(t, str)]
            encrypted = encrypted or bool(hit.get("encrypted_content"))
    return "\n".join(lines), False, "web-search-pages" if encrypted else ""


def image_size(block: dict[str, Any]) -> tuple[int, int] | None:
    """An image block's pixel size, from its base64 data's header."""
    source = block.get("source")
    if text_field(block, "type") != "image" or not isinstance(source, dict):
        return None
    data = source.get("data")
    return images.base64_dimensions(data) if isinstance(data, str) else None


def add_media(
    builder: SessionBuilder,
    owner: str,
    blocks: Sequence[dict[str, Any]],
    category: Category,
    source_id: str = "",
    source_kind: SourceKind = SourceKind.NONE,
) -> list[str]:
    """Images are sized from their pixels (Anthropic's formula, `images.py`) when the
    journal holds their data; a document, or an image without readable data, is
    `unmeasured`. Returns the items' ids (they leave with their tool result)."""
    added = []
    for index, block in enumerate(blocks):
        size = image_size(block)
        if size is None:
            builder.unmeasured[str(text_field(block, "type"))] += 1
            continue
        item_id = f"{owner}:image:{index}"
        builder.log.add_evidence(
            item_id,
            category,
            images.anthropic_image_tokens(*size),
            method=estimate.IMAGE_PIXELS,
            label=f"Image {size[0]}×{size[1]}",
            source_id=source_id,
            source_kind=source_kind,
        )
        added.append(item_id)
    return added


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def classify_user_text(text: str, is_meta: bool) -> tuple[Category, str]:
    stripped = text.lstrip()
    if stripped.startswith(_SKILL_PREFIX):
        return Category.SKILLS, "Skill body"
    if stripped.startswith(_OVERHEAD_TAGS):
        return Category.OVERHEAD, "Harness wrapper"
    if stripped.startswith(_ENVIRONMENT_TAGS):
        return Category.ENVIRONMENT, "Environment"
    if is_meta:
        # Slash-command bodies and other text the harness expands for the user.
        return Category.SKILLS, "Command or skill body"
    return Category.PROMPTS, "User prompt"


def on_hook_context(builder: SessionBuilder, record: dict[str, Any]) -> None:
    """A SessionStart/UserPromptSubmit hook's `additionalContext` enters the context
    (stream-json `system/hook_response`, whose `output` is the hook's JSON; a transcript
    carries the same as an `attachment` record, read by the attachment table)."""
    text: object = None
    output = record.get("output")
    if isinstance(output, str) and "additionalContext" in output:
        try:
            parsed = orjson.loads(output)
        except ValueError:
            parsed = None
        specific = parsed.get("hookSpecificOutput") if isinstance(parsed, dict) else None
        if isinstance(specific, dict):
            text = specific.get("additionalContext")
    context, _ = text_of(text)
    if context:
        uuid = record.get("uuid") or record.get("hook_id") or f"hook@{builder.records}"
        builder.log.add(f"hook:{uuid}", Category.ENVIRONMENT, context, label="Hook context")


# From 2.1.63 on, Claude Code sends a local command's output (`system` `local_command`) to
# the model as user text, joined to the user message before it; from 2.1.319, not one
# marked `isDisplayOnly` (read in their builds; 2.1.62 drops every `system` record).
LOCAL_COMMAND_SENT = (2, 1, 63)


def on_local_command(builder: SessionBuilder, record: dict[str, Any], line: int) -> None:
    """A `local_command` record: a slash command's output (`<local-command-stdout>`) or its
    name (`<command-name>`), classified as user text is, when its version sends it."""
    version = record.get("version")  # (the build that sent it: a session can be resumed)
    release = version_tuple(version if isinstance(version, str) else builder.version)
    if release is None or release < LOCAL_COMMAND_SENT or record.get("isDisplayOnly") is True:
        builder.diagnostics.skip("claude:system/local_command")
        return
    text, _ = text_of(record.get("content"))
    if text:
        category, label = classify_user_text(text, False)
        uuid = record.get("uuid") or f"local@{line}"
        builder.log.add(f"local:{uuid}", category, text, label=f"{label} (local command)")
