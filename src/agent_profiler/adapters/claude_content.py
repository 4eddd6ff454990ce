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
from agent_profiler.adapters.claude_records import ATTACHMENT_TYPES
from agent_profiler.adapters.common import preview, text_field
from agent_profiler.model import Category, Prompt, SourceKind

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
_ATTACHMENT_LABELS = {
    "skill_listing": "Skills listing",  # the name Codex and Muse items have too (fleet joins them)
    "deferred_tools_delta": "Deferred tools listed",
    "agent_listing_delta": "Agent types listed",
    "task_reminder": "Task reminder",
    "edited_text_file": "File changed outside the agent",
    "file": "Attached file",
    "compact_file_reference": "File named after a compaction",
    "invoked_skills": "Skills invoked before a compaction",
    "date_change": "Date change",
    "hook_success": "Hook context",
    "hook_additional_context": "Hook context",
    "hook_blocking_error": "Hook blocking error",
}


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


def _attachment_text(kind: str, attachment: dict[str, Any], unknown: list[object]) -> str:
    """The text an attachment puts in context, as far as the journal holds it (the types
    of content blocks not known added to `unknown`)."""
    if kind == "deferred_tools_delta":
        return _lines(attachment.get("addedNames"))
    if kind == "agent_listing_delta":
        return _lines(attachment.get("addedLines"))
    if kind == "edited_text_file":
        return _string(attachment.get("snippet"))
    if kind == "compact_file_reference":
        return _string(attachment.get("filename"))
    if kind == "date_change":
        return _string(attachment.get("newDate"))
    if kind == "hook_blocking_error":
        error = attachment.get("blockingError")
        if isinstance(error, dict):
            return _string(error.get("blockingError"))
        return _string(error) or text_of(attachment.get("content"), unknown)[0]
    if kind == "invoked_skills":
        skills = attachment.get("skills")
        if isinstance(skills, list):
            return "\n".join(_string(s.get("content")) for s in skills if isinstance(s, dict))
        return ""
    content = attachment.get("content")
    if kind == "file" and isinstance(content, dict):
        inner = content.get("file")
        if isinstance(inner, dict) and isinstance(inner.get("content"), str):
            return str(inner["content"])
        return _string(content.get("content"))
    if kind == "task_reminder" and isinstance(content, list):
        return orjson.dumps(content).decode()
    return text_of(content, unknown)[0]


def _lines(value: object) -> str:
    return "\n".join(v for v in value if isinstance(v, str)) if isinstance(value, list) else ""


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


def on_attachment(builder: SessionBuilder, record: dict[str, Any], ts: int, line: int) -> None:
    """An `attachment` record: what the harness adds to the next request, by its type
    (claude_records.ATTACHMENT_TYPES says what each is and why)."""
    builder.flush_post_compaction()
    attachment = record.get("attachment")
    attachment = attachment if isinstance(attachment, dict) else {}
    kind = text_field(attachment, "type") or "untyped"
    known = ATTACHMENT_TYPES.get(kind)
    if known is None:
        builder.diagnostics.not_recognised(f"claude:attachment/{kind}", builder.sources[0], line)
        return
    if not known.read or known.category is None:
        builder.diagnostics.skip(f"claude:attachment/{kind}")
        return
    uuid = str(record.get("uuid") or f"attachment@{line}")
    item_id = f"hook:{uuid}" if kind.startswith("hook_") else f"attachment:{uuid}"
    if kind == "queued_command":
        _on_queued(builder, attachment, uuid, ts)
        return
    if kind == "task_reminder" and not attachment.get("content"):
        # The reminder's own text is the harness's and is not written.
        builder.unmeasured["task-reminder-text"] += 1
        return
    unknown: list[object] = []
    text = _attachment_text(kind, attachment, unknown)
    for block in unknown:
        builder.unknown_block(block, builder.sources[0], line)
    if text:
        label = _ATTACHMENT_LABELS.get(kind, kind.replace("_", " ").capitalize())
        builder.log.add(item_id, known.category, text, label=label)


def _on_queued(builder: SessionBuilder, attachment: dict[str, Any], uuid: str, ts: int) -> None:
    """A message typed while the agent was busy, delivered with the next request: a
    prompt (`commandMode: prompt`) is the user's and starts a prompt span; anything else
    (a background task's `<task-notification>`) is classified as user text is."""
    text, _ = text_of(attachment.get("prompt"))
    if not text:
        return
    mode = attachment.get("commandMode")
    category, label = (
        (Category.PROMPTS, "User prompt (queued)")
        if mode == "prompt"
        else classify_user_text(text, False)
    )
    item_id = f"queued:{uuid}"
    if category is Category.PROMPTS:
        builder.log.add(item_id, category, text, label=label, source_kind=SourceKind.PROMPT)
        source = "agent" if builder.parent_session is not None and not builder.prompts else "user"
        builder.prompts.append(Prompt(uuid, ts, ts, len(text), source, preview(text)))
        builder.current_prompt = uuid
        # Delivered with the next request, written right before it is sent (after the
        # result that ended the last one): the request starts at its prompt, as after a
        # prompt typed (`on_user`), not at that result, a few ms before its own prompt
        # (never earlier than that result: a prompt stamped before it).
        if builder.trigger_ns is None or ts > builder.trigger_ns:
            builder.trigger_ns = ts
    else:
        builder.log.add(item_id, category, text, label=label)


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
