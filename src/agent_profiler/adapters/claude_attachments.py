"""Claude Code's `attachment` records: what the harness adds to the next request, by
`attachment.type` (claude_records.ATTACHMENT_TYPES says what each is and why), and the
ones that take earlier context out, as functions of the session being read
(`claude_session.SessionBuilder`).

What an attachment sends. Claude Code 2.1.3xx writes it beside the attachment: `rendered`,
one `{content}` (a string, or text blocks) per message it makes, framing and
`<system-reminder>` included. Its loader sends that stored text on every later request,
after a resume too, and renders the attachment again only when `rendered` is missing or
not of that shape (read in the 2.1.332 build: its `bjn` writes it, `EJ` sends it). So
where it is, it is what is measured, for a type we do not know too (which Claude Code also
sends); where it is not (older versions; the types rendered again at every request; a
message with images, which carries only `renderedRole`), the attachment's own fields are.

What takes context out (2.1.3xx; no `microcompact_boundary` is written any more):
- `tool_results_cut {callIds, standIn, cause?}`: those results are sent as the stand-in
  from now on (not an error's, not one with images, and only when shorter; a record whose
  stand-in is missing, empty or over 200 characters, or of another cause, is not applied):
  a microcompaction;
- `thinking_stripped {scope: all | partial, from: {messageId, thinkingIndex}}`: the
  thinking of the responses before it leaves (from that block on, when partial);
- `whole_texts_withdrawn`: after a prompt too long, each file attached over the limit
  since the last response is sent as its `renderedWithdrawn` stand-in;
- a `content-replacement` record (not an attachment: `on_content_replacement`): a result
  too large is sent as a preview (`replacement`) from then on."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.adapters.claude_compaction import results_cleared
from agent_profiler.adapters.claude_content import _string, classify_user_text, text_of
from agent_profiler.adapters.claude_records import ATTACHMENT_TYPES
from agent_profiler.adapters.common import preview, text_field
from agent_profiler.adapters.drafts import add_tool_result
from agent_profiler.model import Category, Prompt, SourceKind
from agent_profiler.records import record

if TYPE_CHECKING:
    from agent_profiler.adapters.claude_session import SessionBuilder

_LABELS = {
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
# Sent, but rendered again for every request and never stored (`rendered` is not written).
_RENDERED_EACH_TIME = frozenset({"poll_events", "project_doc_reads", "message_pdf_reads"})
CLEARED = "[Old tool result content cleared]"  # the stand-in of results cut after idle
STAND_IN_LIMIT = 200  # a longer stand-in is not applied (2.1.332's `Dfr`)
_CUTTABLE = ("text", "image")
_HOOKS_SENT = ("SessionStart", "UserPromptSubmit", "UserPromptExpansion")


@record
class Edits:
    """What the records that take context out need to know of the session read so far."""

    # (message id, item id) of each thinking block in the log, in order.
    thinking: list[tuple[str, str]]
    # A file attached over the limit since the last response: item id → its stand-in.
    withdrawable: dict[str, str]
    # A result's replacement read before the result: call id → the text sent instead.
    replaced: dict[str, str]
    # Results a cut leaves as they are: of blocks other than text and images (a document,
    # search hits), which Claude Code's `Yco` does not cut.
    uncut: set[str]
    # The advisor's calls whose results are in the response (`advisor_stripped`).
    advisor: list[str]

    @classmethod
    def new(cls) -> Edits:
        return cls([], {}, {}, set(), [])

    def note_result(self, call_id: str, content: object) -> None:
        """A result of blocks (`content` a list): kept from a cut unless text and images."""
        if isinstance(content, list) and not all(
            isinstance(block, dict) and block.get("type") in _CUTTABLE for block in content
        ):
            self.uncut.add(call_id)


def rendered_text(value: object) -> str | None:
    """The text of a `rendered` list as Claude Code checks it before sending it (a
    non-empty list of `{content}`, each a non-empty string or a non-empty list of non-empty
    text blocks), its messages joined; None when it is not of that shape."""
    if not isinstance(value, list) or not value:
        return None
    parts: list[str] = []
    for entry in value:
        content = entry.get("content") if isinstance(entry, dict) else None
        if isinstance(content, str) and content:
            parts.append(content)
            continue
        if not isinstance(content, list) or not content:
            return None
        for block in content:
            if not isinstance(block, dict):
                return None
            text = block.get("text")
            if block.get("type") != "text" or not isinstance(text, str) or not text:
                return None
            parts.append(text)
    return "\n\n".join(parts)


def on_attachment(builder: SessionBuilder, record: dict[str, Any], ts: int, line: int) -> None:
    """An `attachment` record: what the harness adds to the next request, by its type
    (claude_records.ATTACHMENT_TYPES says what each is and why), or takes out."""
    builder.flush_post_compaction()
    attachment = record.get("attachment")
    attachment = attachment if isinstance(attachment, dict) else {}
    kind = text_field(attachment, "type") or "untyped"
    takes_out = _TAKING_OUT.get(kind)
    if takes_out is not None:
        takes_out(builder, attachment, record, ts)
        return
    known = ATTACHMENT_TYPES.get(kind)
    sent = rendered_text(record.get("rendered")) if "rendered" in record else None
    if sent is None:
        if known is None:
            builder.diagnostics.not_recognised(
                f"claude:attachment/{kind}", builder.sources[0], line
            )
            return
        if not known.read or known.category is None:
            builder.diagnostics.skip(f"claude:attachment/{kind}")
            return
    elif known is None:
        # Sent all the same (Claude Code sends a stored text whatever its type): read,
        # and said.
        builder.diagnostics.note(f"claude:attachment/{kind} (type not known: its rendered text)")
    uuid = str(record.get("uuid") or f"attachment@{line}")
    item_id = f"hook:{uuid}" if kind.startswith("hook_") else f"attachment:{uuid}"
    if kind == "queued_command":
        if attachment.get("renderedByBatchHead") is True:
            # (batched prompts: the first one's `rendered` holds them all; 2.1.332 `lVi`)
            builder.diagnostics.skip("claude:attachment/queued_command (in its batch's first)")
            return
        _on_queued(builder, attachment, uuid, ts, sent)
        return
    category = known.category if known is not None else None
    text = sent
    if text is None:
        if kind == "task_reminder" and not attachment.get("content"):
            # The reminder's own text is the harness's and is not written.
            builder.unmeasured["task-reminder-text"] += 1
            return
        unknown: list[object] = []
        text = _attachment_text(kind, attachment, unknown)
        for block in unknown:
            builder.unknown_block(block, builder.sources[0], line)
        if not text and ("renderedRole" in record or kind in _RENDERED_EACH_TIME):
            # Sent, but not as text the record holds (an image; rendered at each request).
            builder.unmeasured[f"attachment-{kind}"] += 1
    if text:
        label = (  # (a type not known is the journal's word: named in the notes only)
            _LABELS.get(kind, kind.replace("_", " ").capitalize())
            if known is not None
            else "Attachment (type not known)"
        )
        builder.log.add(item_id, category or Category.OVERHEAD, text, label=label)
        withdrawn = record.get("renderedWithdrawn")
        if withdrawn is not None and attachment.get("overTokenLimit") is True:
            stand_in = rendered_text(withdrawn)
            if stand_in is not None:
                builder.edits.withdrawable[item_id] = stand_in


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
    if kind == "hook_success" and attachment.get("hookEvent") not in _HOOKS_SENT:
        return ""  # (Claude Code sends only these events' output, since 2.1.x)
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


def _on_queued(
    builder: SessionBuilder, attachment: dict[str, Any], uuid: str, ts: int, sent: str | None
) -> None:
    """A message typed while the agent was busy, delivered with the next request: a
    prompt (`commandMode: prompt`) is the user's and starts a prompt span; anything else
    (a background task's `<task-notification>`) is classified as user text is. `sent`:
    what Claude Code sent for it (`rendered`, its framing included), when it says so."""
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
        builder.log.add(item_id, category, sent or text, label=label, source_kind=SourceKind.PROMPT)
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
        builder.log.add(item_id, category, sent or text, label=label)


# --------------------------------------------------------------------------- taken out


def _results_cut(
    builder: SessionBuilder, attachment: dict[str, Any], record: dict[str, Any], ts: int
) -> None:
    """`tool_results_cut`: each listed result is sent as the stand-in from now on, but an
    error's, one with images, and one no longer than the stand-in (Claude Code's rules):
    a microcompaction, drawn when it cut any."""
    ids = attachment.get("callIds")
    stand_in = attachment.get("standIn")
    cause = attachment.get("cause")
    if (
        not isinstance(stand_in, str)
        or not 0 < len(stand_in) <= STAND_IN_LIMIT
        or cause not in (None, "withdrawn_by_tool")
    ):
        # (Claude Code's `Vco` passes such a record over: nothing is cut)
        builder.diagnostics.note("claude:attachment/tool_results_cut of a shape not applied")
        return
    cut = 0
    for call_id in ids if isinstance(ids, list) else ():
        if not isinstance(call_id, str) or f"result:{call_id}" not in builder.log:
            continue
        tool = builder.tools.get(call_id)
        # (a call the one pass let go: its result's size, -1 for an error's)
        chars = (
            (-1 if tool.is_error else tool.result_chars)
            if tool is not None
            else builder.gone_results.get(call_id)
        )
        # Claude Code's rules (`c8`, `Yco`): the call must be in the history; an error's
        # result, or one of a document or search hits, is not cut; a text result only when
        # the stand-in is shorter; one with images is (they go with it).
        if chars is None or chars < 0 or call_id in builder.edits.uncut:
            continue
        if call_id not in builder.result_media and chars <= len(stand_in):
            continue
        add_tool_result(builder.log, call_id, stand_in, "Tool result (cleared)")
        for item_id in builder.result_media.pop(call_id, ()):
            builder.log.remove(item_id)
        cut += 1
    if cut:
        trigger = cause if isinstance(cause, str) else "tool_results_cut"
        results_cleared(builder, str(record.get("uuid") or f"cut@{ts}"), ts, cut, trigger)


def _thinking_stripped(
    builder: SessionBuilder, attachment: dict[str, Any], record: dict[str, Any], ts: int
) -> None:
    """`thinking_stripped`: the thinking of the responses before it is not sent any more:
    all of it, or (`partial`) from the `thinkingIndex`-th block of `messageId` on (all of
    it when that block is not found, as Claude Code does)."""
    thinking = builder.edits.thinking
    start = 0
    origin = attachment.get("from")
    if attachment.get("scope") != "all" and isinstance(origin, dict):
        start = _block_at(thinking, origin.get("messageId"), origin.get("thinkingIndex"))
    # (the list keeps what it strips: a later strip from one of those blocks finds it,
    # as Claude Code's `Xer` finds it in the records)
    for _, item_id in thinking[start:]:
        builder.log.remove(item_id)


def _block_at(thinking: list[tuple[str, str]], message_id: object, index: object) -> int:
    """Where the `index`-th thinking block of `message_id` is in `thinking` (0 if not)."""
    seen = 0
    for position, (owner, _) in enumerate(thinking):
        if owner == message_id:
            if seen == index:
                return position
            seen += 1
    return 0


def _texts_withdrawn(
    builder: SessionBuilder, attachment: dict[str, Any], record: dict[str, Any], ts: int
) -> None:
    """`whole_texts_withdrawn` (a request was too long): each file attached over the limit
    since the last response is sent as its stand-in ("too large to attach") instead."""
    for item_id, stand_in in builder.edits.withdrawable.items():
        if item_id in builder.log:
            builder.log.add(item_id, Category.RESULTS, stand_in, label="Attached file (withdrawn)")
    builder.edits.withdrawable.clear()


def _advisor_stripped(
    builder: SessionBuilder, attachment: dict[str, Any], record: dict[str, Any], ts: int
) -> None:
    """`advisor_stripped`: the advisor's calls and results in the responses before it are
    not sent any more (2.1.332's `R6`, `bP`)."""
    for call_id in builder.edits.advisor:
        builder.log.remove(f"call:{call_id}")
        builder.log.remove(f"result:{call_id}")
    builder.edits.advisor.clear()


_TAKING_OUT: dict[str, Callable[[SessionBuilder, dict[str, Any], dict[str, Any], int], None]] = {
    "tool_results_cut": _results_cut,
    "thinking_stripped": _thinking_stripped,
    "whole_texts_withdrawn": _texts_withdrawn,
    "advisor_stripped": _advisor_stripped,
}


def on_content_replacement(builder: SessionBuilder, record: dict[str, Any], line: int) -> None:
    """A `content-replacement` record: each result named is sent as its `replacement` (a
    preview, the whole saved to a file) from now on. Written after its result, with no
    time of its own; one read first waits for its result (`Edits.replaced`)."""
    replacements = record.get("replacements")
    for entry in replacements if isinstance(replacements, list) else ():
        kind = text_field(entry, "kind") if isinstance(entry, dict) else None
        if kind != "tool-result":
            name = f"claude:content-replacement/{kind or 'untyped'}"
            builder.diagnostics.not_recognised(name, builder.sources[0], line)
            continue
        call_id, text = entry.get("toolUseId"), entry.get("replacement")
        if not isinstance(call_id, str) or not isinstance(text, str):
            continue
        if f"result:{call_id}" in builder.log:
            add_tool_result(builder.log, call_id, text, REPLACED)
        else:
            builder.edits.replaced[call_id] = text


REPLACED = "Tool result (a preview; the whole saved to a file)"


def on_voice_talk(builder: SessionBuilder, record: dict[str, Any], line: int) -> None:
    """A `voice_call_talk` record (2.1.3xx): a voice call's words, sent as the user's
    (in a tool round whose framing says nobody typed them, not in the journal), not a
    typed prompt: no prompt span. One folded into a queued message sends that's text."""
    fold = record.get("fold")
    text = rendered_text(fold.get("rendered")) if isinstance(fold, dict) else None
    if text is None:
        blocks = record.get("blocks")
        content = blocks if isinstance(blocks, list) and blocks else record.get("content")
        text, media = text_of(content)
        if media:
            builder.unmeasured["voice-call-media"] += 1
    if text:
        uuid = record.get("uuid") or f"voice@{line}"
        builder.log.add(f"voice:{uuid}", Category.PROMPTS, text, label="Voice call talk")
