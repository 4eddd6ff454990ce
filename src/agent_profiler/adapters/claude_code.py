"""Claude Code: transcripts (`~/.claude/projects/…/<session>.jsonl`) and `-p` stream-json.

Owns everything Claude-specific (FORMATS.md §1–2): which records are requests,
how usage is merged, what each content block is in context, compactions, and
how subagent files link to the call that launched them. The shared pieces (the
JSONL reader, `ContextLog`) do the rest.

Format facts this module relies on, with the surprise each one holds:
- one API response is several records sharing `message.id`; usage is repeated
  on each and merged per field with max; the first record's thread is kept;
  a response whose merged usage is all zero is not a request (§1.3, seed 001);
- prompt size = input + cache_creation + cache_read; `output_tokens` is a
  streaming snapshot and cannot be trusted (§1.4);
- the system prompt, tool schemas and memory files are not in the transcript:
  they become the inferred head item (§1.5);
- a request's start is not recorded: it is the time of the record that
  triggered it (the prompt or the last tool result before it) (§1.9).
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agent_profiler.adapters.common import (
    MS,
    Clock,
    clock_origin,
    journal_clock,
    preview,
    private_path,
    text_field,
    timestamp_ns,
    token_count,
)
from agent_profiler.adapters.drafts import (
    CompactionDraft,
    ToolArguments,
    ToolDraft,
    finish_prompts,
)
from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.context_command import (
    ContextCommandFailure,
    ContextCommandTracker,
    NativeSnapshot,
)
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.estimate import tool_call_text
from agent_profiler.jsonl import read_jsonl
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    Coverage,
    Harness,
    Prompt,
    Response,
    Session,
    SourceKind,
    Stage,
    Usage,
)

HARNESS = Harness.CLAUDE_CODE
# The head that /context measures and transcripts lack.
NATIVE_HEAD = (Category.SYSTEM, Category.TOOLS, Category.RULES, Category.SKILLS)
NATIVE_ITEM_STAGE = (
    "head (system, tools, rules, skills) from the last /context run; conversation from "
    "transcript items"
)
_USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
SUBAGENT_TOOLS = frozenset({"Task", "Agent"})
# Every current Claude model has a 200k window unless a 1M beta is on, which the
# transcript does not say; the trace labels this number as assumed.
DEFAULT_WINDOW = 200_000

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
_SKILL_PREFIX = "Base directory for this skill"
_UUID_NAME = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


# --------------------------------------------------------------------------- detection


def detect(values: list[object]) -> bool:
    """True when the first records look like Claude Code (transcript or stream-json)."""
    for value in values:
        if not isinstance(value, dict):
            continue
        if "sessionId" in value and text_field(value, "type") in {
            "user",
            "assistant",
            "system",
            "progress",
            "summary",
            "file-history-snapshot",
            "queue-operation",
            "attachment",
        }:
            return True
        if text_field(value, "type") == "system" and text_field(value, "subtype") in {
            "init",
            "hook_started",
            "hook_response",
        }:
            return "session_id" in value
        if (
            text_field(value, "type") in {"assistant", "user"}
            and "session_id" in value
            and isinstance(value.get("message"), dict)
        ):
            return True
        if text_field(value, "type") == "summary" and "leafUuid" in value:
            return True
        if text_field(value, "type") == "file-history-snapshot" and "snapshot" in value:
            return True
    return False


def is_stream_json(values: list[object]) -> bool:
    return any(isinstance(v, dict) and "session_id" in v and "sessionId" not in v for v in values)


# --------------------------------------------------------------------------- small helpers


def _text_of(content: object) -> tuple[str, int]:
    """(text, images) of tool-result or message content as the model sees it; the text
    blocks joined, so that the estimator sees what they are."""
    if isinstance(content, str):
        return content, 0
    texts: list[str] = []
    images = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = text_field(block, "type")
            if kind == "text" and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind in {"image", "document"}:
                images += 1
    return "".join(texts), images


def _classify_user_text(text: str, is_meta: bool) -> tuple[Category, str]:
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


# --------------------------------------------------------------------------- drafts


@dataclass(slots=True)
class _ResponseDraft:
    id: str
    start_ns: int
    end_ns: int
    model: str
    prompt_id: str | None
    observation: Observation
    usage: dict[str, int] = field(default_factory=dict)
    is_error: bool = False
    stop_reason: str | None = None

    def merge_usage(self, usage: object) -> None:
        if not isinstance(usage, dict):
            return
        for key in _USAGE_KEYS:
            value = token_count(usage.get(key))
            if value > self.usage.get(key, 0):
                self.usage[key] = value

    @property
    def prompt_tokens(self) -> int:
        u = self.usage
        return (
            u.get("input_tokens", 0)
            + u.get("cache_creation_input_tokens", 0)
            + u.get("cache_read_input_tokens", 0)
        )

    @property
    def is_request(self) -> bool:
        return any(self.usage.values())


@dataclass(slots=True)
class _CompactionDraft(CompactionDraft):
    observation: Observation | None = None


class SessionBuilder:
    """Accumulates one Claude Code session (main thread or one subagent)."""

    def __init__(self, session_id: str, source: str, diagnostics: Diagnostics) -> None:
        self.session_id = session_id
        self.sources: list[str] = [source]
        self.diagnostics = diagnostics
        self.log = ContextLog()
        self.responses: dict[str, _ResponseDraft] = {}
        self.tools: dict[str, ToolDraft] = {}
        self.prompts: list[Prompt] = []
        self.compactions: list[_CompactionDraft] = []
        self.models: list[str] = []
        self.unmeasured: Counter[str] = Counter()
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.trigger_ns: int | None = None  # time of the record that will trigger the next request
        self.current_prompt: str | None = None
        self.pending_post: _CompactionDraft | None = None
        self.version: str | None = None
        self.project: str | None = None
        self.window: int | None = None
        self.window_source: str | None = None
        self.parent_session: str | None = None
        self.parent_call_id: str | None = None
        self.agent_id: str | None = None
        self.child_role: str | None = None
        self.timing = "journal-timestamps"
        self.agent_results: dict[str, str] = {}  # agentId → the call that launched it
        self.facts: list[tuple[str, str]] = []
        self.records = 0
        self.warned_usage = False
        self.item_stage: str | None = None  # says which parts are native after a /context
        self.native_runs = 0

    # -- time -------------------------------------------------------------

    def touch(self, ts: int) -> None:
        self.start_ns = ts if self.start_ns is None else min(self.start_ns, ts)
        self.end_ns = ts if self.end_ns is None else max(self.end_ns, ts)

    # -- records ----------------------------------------------------------

    def on_meta(self, record: dict[str, Any]) -> None:
        version = record.get("version") or record.get("claude_code_version")
        if isinstance(version, str) and not self.version:
            self.version = version
        cwd = record.get("cwd")
        if isinstance(cwd, str) and not self.project:
            self.project = cwd

    def _flush_post_compaction(self) -> None:
        if self.pending_post is not None and self.pending_post.observation is not None:
            self.log.observe(self.pending_post.observation)
            self.pending_post = None

    def on_user(self, record: dict[str, Any], ts: int, line: int | None = None) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if content is None or not isinstance(content, str | list):
            self.diagnostics.warn(
                self.sources[0], line, "bad-shape", "user record without a readable message content"
            )
        uuid = str(record.get("uuid") or f"user@{ts}")
        is_meta = bool(record.get("isMeta"))
        if record.get("isCompactSummary") or (record.get("isSynthetic") and self.pending_post):
            summary, images = _text_of(content)
            self.unmeasured["image"] += images
            self.log.add(f"summary:{uuid}", Category.SUMMARIES, summary, label="Compaction summary")
            self._flush_post_compaction()
            self.trigger_ns = ts
            return
        self._flush_post_compaction()
        blocks: list[Any] = (
            [content]
            if isinstance(content, str)
            else (content if isinstance(content, list) else [])
        )
        new_prompt_text: str | None = None
        prompt_chars = 0
        for index, block in enumerate(blocks):
            item_id = f"{uuid}:{index}"
            if isinstance(block, str) or (
                isinstance(block, dict) and text_field(block, "type") == "text"
            ):
                text = block if isinstance(block, str) else block.get("text")
                if not isinstance(text, str):
                    continue
                category, label = _classify_user_text(text, is_meta)
                source_id = ""
                source_kind = SourceKind.NONE
                if category is Category.SKILLS and isinstance(record.get("sourceToolUseID"), str):
                    source_id, source_kind = record["sourceToolUseID"], SourceKind.TOOL
                elif category is Category.PROMPTS:
                    source_kind = SourceKind.PROMPT
                    new_prompt_text = new_prompt_text or text
                    prompt_chars += len(text)
                self.log.add(
                    item_id,
                    category,
                    text,
                    label=label,
                    source_id=source_id,
                    source_kind=source_kind,
                )
            elif isinstance(block, dict) and text_field(block, "type") == "tool_result":
                self._on_tool_result(block, record, ts)
            elif isinstance(block, dict) and text_field(block, "type") in {"image", "document"}:
                self.unmeasured[str(text_field(block, "type"))] += 1
        if new_prompt_text is not None:
            prompt_id = uuid
            source = (
                "agent"
                if record.get("isSidechain") and record.get("parentUuid") is None
                else "user"
            )
            if self.parent_session is not None and not self.prompts:
                source = "agent"
            self.prompts.append(
                Prompt(prompt_id, ts, ts, prompt_chars, source, preview(new_prompt_text))
            )
            self.current_prompt = prompt_id
        self.trigger_ns = ts

    def _on_tool_result(self, block: dict[str, Any], record: dict[str, Any], ts: int) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            return
        text, images = _text_of(block.get("content"))
        chars = len(text)
        self.unmeasured["image"] += images
        self.log.add(
            f"result:{call_id}",
            Category.RESULTS,
            text,
            label="Tool result",
            source_id=call_id,
            source_kind=SourceKind.TOOL,
        )
        tool = self.tools.get(call_id)
        if tool is None:
            return  # its call is not in this journal: the result still counts in context
        tool.end_ns = max(ts, tool.start_ns)
        tool.is_error = bool(block.get("is_error"))
        tool.result_chars = chars
        result = record.get("toolUseResult", record.get("tool_use_result"))
        if isinstance(result, dict) and isinstance(result.get("agentId"), str):
            self.agent_results[result["agentId"]] = call_id

    def on_assistant(self, record: dict[str, Any], ts: int, line: int, path: str) -> None:
        self._flush_post_compaction()
        message = record.get("message")
        if not isinstance(message, dict):
            self.diagnostics.warn(path, line, "bad-shape", "assistant record without a message")
            return
        message_id = message.get("id") or record.get("requestId") or record.get("uuid")
        message_id = str(message_id) if message_id else f"response@{line}"
        model = message.get("model")
        model = model if isinstance(model, str) else ""
        draft = self.responses.get(message_id)
        if draft is None:
            start = self.trigger_ns if self.trigger_ns is not None and self.trigger_ns <= ts else ts
            observation = self.log.observe(
                Observation(
                    time_ns=start,
                    anchor=AnchorKind.RESPONSE,
                    anchor_id=message_id,
                    stage=Stage.TRANSCRIPT_OBSERVED,
                    model=model or None,
                    item_stage=self.item_stage,
                )
            )
            draft = _ResponseDraft(message_id, start, ts, model, self.current_prompt, observation)
            self.responses[message_id] = draft
            if model and model != "<synthetic>" and model not in self.models:
                self.models.append(model)
        draft.end_ns = max(draft.end_ns, ts)
        usage = message.get("usage")
        draft.merge_usage(usage)
        if isinstance(usage, dict) and not self.warned_usage:
            bad = [
                k
                for k in _USAGE_KEYS
                if usage.get(k) is not None and token_count(usage.get(k)) != usage.get(k)
            ]
            if bad:
                self.warned_usage = True
                self.diagnostics.warn(
                    path,
                    line,
                    "bad-usage",
                    f"usage {', '.join(bad)} not a token count ({usage[bad[0]]!r}); counted as 0",
                )
        if record.get("isApiErrorMessage") or record.get("error"):
            draft.is_error = True
        if isinstance(message.get("stop_reason"), str):
            draft.stop_reason = message["stop_reason"]
        content = message.get("content")
        blocks = (
            content if isinstance(content, list) else [content] if isinstance(content, str) else []
        )
        uuid = str(record.get("uuid") or f"{message_id}@{line}")
        for index, block in enumerate(blocks):
            item_id = f"{uuid}:{index}"
            if isinstance(block, str):
                self.log.add(
                    item_id,
                    Category.ASSISTANT,
                    block,
                    label="Assistant text",
                    source_id=message_id,
                    source_kind=SourceKind.RESPONSE,
                )
                continue
            if not isinstance(block, dict):
                continue
            kind = text_field(block, "type")
            if kind == "text" and isinstance(block.get("text"), str):
                self.log.add(item_id, Category.ASSISTANT, block["text"], label="Assistant text")
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                self.log.add(item_id, Category.ASSISTANT, block["thinking"], label="Thinking")
            elif kind == "redacted_thinking":
                self.unmeasured["redacted-thinking"] += 1
            elif kind in {"tool_use", "server_tool_use"}:
                self._on_tool_use(block, draft, ts)

    def _on_tool_use(self, block: dict[str, Any], draft: _ResponseDraft, ts: int) -> None:
        call_id = block.get("id")
        if not isinstance(call_id, str):
            return
        name = block.get("name")
        name = name if isinstance(name, str) else "tool"
        arguments = block.get("input")
        self.log.add(
            f"call:{call_id}",
            Category.ASSISTANT,
            tool_call_text(name, arguments),
            label="Tool arguments",
            source_id=call_id,
            source_kind=SourceKind.TOOL,
        )
        if call_id not in self.tools:
            self.tools[call_id] = ToolDraft(
                call_id, name, ts, draft.id, draft.prompt_id, ToolArguments.of(arguments)
            )

    def on_native_context(self, run: NativeSnapshot, fallback_ns: int) -> None:
        """A `/context` run: Claude Code's own breakdown. It is a snapshot of its own
        (basis native-summary, coverage complete, a new baseline), and from here on its
        head categories replace the inferred head in the transcript-observed snapshots."""
        self._flush_post_compaction()
        ts = timestamp_ns(run.timestamp) or fallback_ns
        self.touch(ts)
        totals = dict(run.categories)
        head: list[tuple[str, Category, int, str]] = []
        for category in NATIVE_HEAD:
            rows = [item for item in run.items if item.category is category]
            for item in rows:
                item_id, label = self._private_item(item.id, item.label)
                head.append((item_id, category, item.tokens, label))
            rest = totals.get(category, 0) - sum(item.tokens for item in rows)
            if rest > 0:
                head.append(
                    (
                        f"native:{category.value}",
                        category,
                        rest,
                        f"{category.label} (from /context)",
                    )
                )
        self.log.native_head(head)
        self.log.observe(
            Observation(
                time_ns=ts,
                anchor=AnchorKind.NATIVE,
                anchor_id=f"context-command@{run.line}",
                stage=Stage.TRANSCRIPT_OBSERVED,
                reported_tokens=run.used_tokens,
                window_tokens=run.window_tokens,
                effective_window_tokens=run.effective_window_tokens,
                native_categories=run.categories,
                basis=Basis.NATIVE_SUMMARY,
                coverage=Coverage.COMPLETE,
                item_stage="native-summary",
                force_baseline=True,
                model=run.model,
            )
        )
        self.native_runs += 1
        if self.window is None and run.window_tokens:
            self.window, self.window_source = run.window_tokens, "journal (/context)"
        if run.model and not self.models:
            # A session holding only /context output has no assistant record to name its
            # model; the /context header does.
            self.models.append(run.model)
        self.item_stage = NATIVE_ITEM_STAGE

    def _private_item(self, item_id: str, label: str) -> tuple[str, str]:
        """`/context` names memory files by absolute path (`/home/<user>/.claude/CLAUDE.md`):
        shorten it in the id and the label, so no user name or cwd reaches the trace."""
        kind, _, name = item_id.partition(":")
        short = private_path(name, self.project)
        if short == name:
            return item_id, label
        return f"{kind}:{short}", label.replace(name, short, 1)

    def on_hook_context(self, record: dict[str, Any]) -> None:
        """A SessionStart/UserPromptSubmit hook's `additionalContext` enters the context
        (stream-json `system/hook_response`; transcript `attachment` records)."""
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
        attachment = record.get("attachment")
        if isinstance(attachment, dict) and "context" in str(attachment.get("type", "")):
            text = attachment.get("content")
        context, _ = _text_of(text)
        if context:
            uuid = record.get("uuid") or record.get("hook_id") or f"hook@{self.records}"
            self.log.add(f"hook:{uuid}", Category.ENVIRONMENT, context, label="Hook context")

    def on_compact_boundary(self, record: dict[str, Any], ts: int) -> None:
        self._flush_post_compaction()
        meta = record.get("compactMetadata") or record.get("compact_metadata") or {}
        meta = meta if isinstance(meta, dict) else {}
        pre = meta.get("preTokens", meta.get("pre_tokens"))
        post = meta.get("postTokens", meta.get("post_tokens"))
        duration = meta.get("durationMs", meta.get("duration_ms"))
        # The boundary record is written when the compaction is done; its start is known
        # only from durationMs (newer builds) or the summarisation request's own file.
        # Without either the slice is zero-length rather than a guessed span.
        start = ts - token_count(duration) * MS
        timing = "compactMetadata.durationMs" if token_count(duration) else "boundary record only"
        compaction_id = str(record.get("uuid") or f"compaction@{ts}")
        removed = self.log.clear()
        observation = Observation(
            time_ns=ts,
            anchor=AnchorKind.COMPACTION,
            anchor_id=compaction_id,
            stage=Stage.POST_COMPACTION,
            model=None,
            reported_tokens=token_count(post) or None,
        )
        trigger = meta.get("trigger")
        draft = _CompactionDraft(
            compaction_id,
            start,
            ts,
            trigger=trigger if isinstance(trigger, str) else None,
            pre_tokens=token_count(pre) or None,
            post_tokens=token_count(post) or None,
            removed_items=removed,
            timing=timing,
            observation=observation,
        )
        self.compactions.append(draft)
        # The summary record usually follows: observe after it (see on_user).
        self.pending_post = draft
        self.trigger_ns = ts

    def on_microcompact(self, record: dict[str, Any], ts: int) -> None:
        self._flush_post_compaction()
        meta = record.get("microcompactMetadata") or record.get("microcompact_metadata") or {}
        meta = meta if isinstance(meta, dict) else {}
        ids = meta.get("compactedToolIds") or meta.get("compacted_tool_ids") or []
        ids = ids if isinstance(ids, list) else []
        removed = sum(
            1
            for call_id in ids
            if isinstance(call_id, str) and self.log.remove(f"result:{call_id}")
        )
        pre = token_count(meta.get("preTokens", meta.get("pre_tokens"))) or None
        saved = token_count(meta.get("tokensSaved", meta.get("tokens_saved")))
        post = pre - saved if pre is not None and saved and saved <= pre else None
        compaction_id = str(record.get("uuid") or f"microcompaction@{ts}")
        observation = self.log.observe(
            Observation(
                time_ns=ts,
                anchor=AnchorKind.COMPACTION,
                anchor_id=compaction_id,
                stage=Stage.POST_COMPACTION,
                reported_tokens=post,
            )
        )
        trigger = meta.get("trigger")
        self.compactions.append(
            _CompactionDraft(
                compaction_id,
                ts,
                ts,
                "microcompaction",
                trigger if isinstance(trigger, str) else None,
                pre,
                post,
                removed,
                timing="boundary record only",
                observation=observation,
            )
        )

    # -- result -----------------------------------------------------------

    def finish(self) -> Session | None:
        self._flush_post_compaction()
        if self.start_ns is None or self.end_ns is None:
            return None
        end = self.end_ns
        window = self.window
        window_source = self.window_source
        requests = [d for d in self.responses.values() if d.is_request]
        if window is None and any(m.startswith("claude-") for m in self.models):
            window, window_source = DEFAULT_WINDOW, "assumed: Claude default window, not in journal"
        for draft in self.responses.values():
            draft.observation.window_tokens = window
            if draft.is_request:
                draft.observation.reported_tokens = draft.prompt_tokens
            else:
                draft.observation.dropped = True
        for compaction in self.compactions:
            if compaction.observation is not None:
                compaction.observation.window_tokens = window
        if not requests and not self.compactions and not self.native_runs:
            # No request to anchor a snapshot on (an init-only run, a backend that
            # reports zero usage): show what the transcript holds at the end. After a
            # /context run its complete native split is that picture: a second, partial
            # estimate beside it would contradict it (Conversation 0, coverage twice).
            self.log.observe(
                Observation(
                    time_ns=end,
                    anchor=AnchorKind.SESSION,
                    anchor_id="",
                    stage=Stage.TRANSCRIPT_OBSERVED,
                    model=self.models[0] if self.models else None,
                    window_tokens=window,
                )
            )
        snapshots = self.log.replay()
        responses = tuple(
            Response(
                id=d.id,
                start_ns=min(d.start_ns, d.end_ns),
                end_ns=d.end_ns,
                model=d.model,
                usage=Usage(
                    prompt_tokens=d.prompt_tokens,
                    input_tokens=d.usage.get("input_tokens", 0),
                    output_tokens=d.usage.get("output_tokens", 0),
                    cache_read_tokens=d.usage.get("cache_read_input_tokens", 0),
                    cache_write_tokens=d.usage.get("cache_creation_input_tokens", 0),
                ),
                prompt_id=d.prompt_id,
                is_error=d.is_error,
                stop_reason=d.stop_reason,
                output_tokens_reliable=False,
            )
            for d in requests
        )
        # SPEC §3 says an all-zero usage is "not a request"; issue 15 (newer) keeps it as a
        # response span with its usage unknown, so a backend writing zeros still shows its
        # requests. Claude Code's own `<synthetic>` replies (an API error) made no request.
        unmetered = tuple(
            Response(
                id=d.id,
                start_ns=min(d.start_ns, d.end_ns),
                end_ns=d.end_ns,
                model=d.model,
                usage=Usage(prompt_tokens=0),
                prompt_id=d.prompt_id,
                is_error=d.is_error,
                stop_reason=d.stop_reason,
                output_tokens_reliable=False,
                usage_known=False,
            )
            for d in self.responses.values()
            if not d.is_request and d.model != "<synthetic>"
        )
        response_ids = {r.id for r in (*responses, *unmetered)}
        tools = tuple(
            t.finish(response_ids, t.end_ns if t.end_ns is not None else end)
            for t in self.tools.values()
        )
        prompts = finish_prompts(self.prompts, responses, tools)
        compactions = tuple(c.finish() for c in self.compactions)
        return Session(
            harness=HARNESS,
            session_id=self.session_id,
            start_ns=self.start_ns,
            end_ns=end,
            sources=tuple(self.sources),
            models=tuple(self.models),
            provider="anthropic",
            window_tokens=window,
            window_source=window_source,
            project=self.project,
            harness_version=self.version,
            parent_session=self.parent_session,
            parent_call_id=self.parent_call_id,
            agent_id=self.agent_id,
            child_role=self.child_role,
            timing=self.timing,
            incomplete=any(t.incomplete for t in tools),
            prompts=prompts,
            responses=responses,
            unmetered_responses=unmetered,
            tool_calls=tools,
            compactions=compactions,
            snapshots=tuple(snapshots),
            unmeasured=tuple(sorted((k, v) for k, v in self.unmeasured.items() if v)),
            facts=tuple(self.facts),
        )


# --------------------------------------------------------------------------- file readers


# Record types that are understood and hold no model input (FORMATS.md §1.2): skipped on
# purpose. Any other type is reported as not recognised.
_KNOWN_NOT_CONTEXT = frozenset(
    {
        "summary",
        "file-history-snapshot",
        "progress",
        "queue-operation",
        "pr-link",
        "ai-title",
        "custom-title",
        "agent-setting",
        "agent-name",
        "last-prompt",
        "tag",
    }
)


def read_transcript(
    path: Path, diagnostics: Diagnostics, *, label: str | None = None
) -> dict[str, SessionBuilder]:
    """Read one transcript file into builders keyed by thread: "" for the file's own
    thread, agentId for sidechain records of another agent found in it."""
    source = label or str(path)
    builders: dict[str, SessionBuilder] = {}
    clock = journal_clock(path, diagnostics, source)
    main_key: str | None = None
    commands = ContextCommandTracker()

    def native(results: list[NativeSnapshot | ContextCommandFailure]) -> None:
        # /context is typed in the main thread: its runs belong to the file's own session.
        owner = builders.get(main_key or "")
        for result in results:
            if isinstance(result, ContextCommandFailure):
                diagnostics.warn(source, result.line, "context-command", result.reason)
            elif owner is not None:
                owner.on_native_context(result, clock.last or 0)

    for record in read_jsonl(path, diagnostics):
        value = record.value
        if not isinstance(value, dict):
            diagnostics.warn(source, record.line, "bad-shape", "record is not a JSON object")
            continue
        native(commands.feed(value, record.line))
        kind = text_field(value, "type")
        if kind not in {"user", "assistant", "system", "attachment"}:
            if kind in _KNOWN_NOT_CONTEXT:
                diagnostics.skip(f"claude:{kind}")
            else:
                diagnostics.not_recognised(f"claude:{kind}" if kind else "claude:untyped")
            continue
        session_id = value.get("sessionId")
        if not isinstance(session_id, str):
            diagnostics.warn(source, record.line, "bad-shape", "record without sessionId")
            continue
        agent = value.get("agentId") if value.get("isSidechain") else None
        key = agent if isinstance(agent, str) else ""
        if main_key is None:
            main_key = key
        builder = builders.get(key)
        if builder is None:
            builder = SessionBuilder(
                f"{session_id}/{key}" if key else session_id, source, diagnostics
            )
            if key:
                builder.parent_session = session_id
                builder.agent_id = key
                builder.child_role = "subagent"
            builders[key] = builder
        ts = clock.time(value, record.line)
        builder.records += 1
        builder.touch(ts)
        builder.on_meta(value)
        if kind == "user":
            builder.on_user(value, ts, record.line)
        elif kind == "assistant":
            builder.on_assistant(value, ts, record.line, source)
        elif text_field(value, "subtype") == "compact_boundary":
            builder.on_compact_boundary(value, ts)
        elif text_field(value, "subtype") == "microcompact_boundary":
            builder.on_microcompact(value, ts)
        elif kind == "attachment":
            builder.on_hook_context(value)
        else:
            diagnostics.skip(f"claude:system/{value.get('subtype')}")
    native(commands.finish())
    return builders


@dataclass(slots=True)
class _Run:
    """One `claude -p` run inside a stream-json file."""

    builders: dict[str, SessionBuilder] = field(default_factory=dict)  # thread → builder
    owners: dict[str, str] = field(default_factory=dict)  # message id → its first thread
    has_init: bool = False
    has_result: bool = False


def read_stream_json(path: Path, diagnostics: Diagnostics) -> list[SessionBuilder]:
    """Read `claude -p --output-format stream-json` output: one session per
    `system/init`, subagent frames (`parent_tool_use_id`) as child sessions."""
    source = str(path)
    runs: list[_Run] = []
    used_ids: set[str] = set()
    # Frames carry a timestamp only in newer builds, sometimes only some of them:
    # undated frames before the first dated one are placed just before it. Without any
    # timestamp the timeline is synthetic, spaced by the runs' own `result.duration_ms`.
    synthetic = _synthetic_timeline(path)
    origin = clock_origin((r.value for r in read_jsonl(path, Diagnostics())), path)
    if synthetic is not None:
        origin = max(0, origin - synthetic.total_ns)
    clock = Clock(
        source,
        diagnostics,
        expect_timestamps=False,
        origin_ns=origin,
        spacing=synthetic.step if synthetic is not None else None,
    )
    for record in read_jsonl(path, diagnostics):
        value = record.value
        if not isinstance(value, dict):
            diagnostics.warn(source, record.line, "bad-shape", "frame is not a JSON object")
            continue
        kind = text_field(value, "type")
        subtype = text_field(value, "subtype")
        session_id = text_field(value, "session_id")
        is_init = kind == "system" and subtype == "init"
        is_hook = kind == "system" and subtype in ("hook_started", "hook_response")
        # Several runs appended to one file: each `system/init` starts the next one, and
        # hook frames after a run's `result` already belong to the run that follows.
        if not runs or (is_init and runs[-1].has_init) or (is_hook and runs[-1].has_result):
            runs.append(_Run())
        run = runs[-1]
        run.has_init = run.has_init or is_init
        run.has_result = run.has_result or kind == "result"
        ts = clock.time(value, record.line)
        main = run.builders.get("")
        if main is None:
            main = SessionBuilder(
                _unique(session_id or f"run-{len(runs)}", used_ids), source, diagnostics
            )
            run.builders[""] = main
        elif session_id and main.session_id.startswith("run-"):
            used_ids.discard(main.session_id)
            main.session_id = _unique(session_id, used_ids)
        parent_call = value.get("parent_tool_use_id")
        key = parent_call if isinstance(parent_call, str) else ""
        message = value.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        if kind == "assistant" and isinstance(message_id, str):
            # One response per message id, on the thread of its first frame.
            key = run.owners.setdefault(message_id, key)
        builder = main
        if key:
            child = run.builders.get(key)
            if child is None:
                agent = value.get("agent_id")
                child = SessionBuilder(key, source, diagnostics)
                child.parent_call_id = key
                child.agent_id = agent if isinstance(agent, str) else None
                child.child_role = "subagent"
                run.builders[key] = child
            builder = child
        builder.records += 1
        builder.touch(ts)
        builder.on_meta(value)
        if is_init:
            _on_init(builder, value)
        elif kind == "user":
            builder.on_user(value, ts, record.line)
        elif kind == "assistant":
            builder.on_assistant(value, ts, record.line, source)
        elif kind == "system" and subtype == "compact_boundary":
            builder.on_compact_boundary(value, ts)
        elif kind == "system" and subtype == "hook_response":
            builder.on_hook_context(value)
        elif kind == "result":
            _on_result(builder, value)
        else:
            diagnostics.skip(
                f"claude-stream:{kind}/{subtype}" if subtype else f"claude-stream:{kind}"
            )
    builders: list[SessionBuilder] = []
    for run in runs:
        main = run.builders[""]
        for key, builder in run.builders.items():
            if not clock.seen_timestamp:
                # Said on the profile (`clock = synthetic`), in the summary and the report:
                # these times are made up from durations, not read from the journal.
                builder.facts.append(("clock", "synthetic"))
                builder.timing = (
                    "synthetic: no timestamps in the journal; each run's frames are spaced "
                    "evenly over its result.duration_ms (1 ms per frame without one), the "
                    "last run ending at the file's modification time"
                )
            if key:
                # Named once the run's own id is final (it may come after the first frame).
                builder.session_id = f"{main.session_id}/{builder.agent_id or key}"
                builder.parent_session = main.session_id
                tool = main.tools.get(key)
                if tool is not None:
                    tool.child_session = builder.session_id
                if main.window is not None and builder.window is None:
                    builder.window, builder.window_source = main.window, main.window_source
                _cover_child(main, builder)
            builders.append(builder)
    return builders


@dataclass(frozen=True, slots=True)
class _SyntheticTimeline:
    """Steps for a stream-json file without a single timestamp: each run (from one
    `system/init` to the next) spreads its frames evenly over its `result.duration_ms`,
    the only clock such a journal has. Per-turn timings are not written in stream-json."""

    starts: tuple[int, ...]  # first line of each run
    steps: tuple[int, ...]  # ns between two frames of that run
    total_ns: int  # the whole synthetic timeline

    def step(self, line: int) -> int:
        index = bisect.bisect_right(self.starts, line) - 1
        return self.steps[max(index, 0)] if self.steps else MS


def _synthetic_timeline(path: Path) -> _SyntheticTimeline | None:
    runs: list[list[int]] = []  # per run: [first line, frames, duration ms]
    for record in read_jsonl(path, Diagnostics()):
        value = record.value
        if not isinstance(value, dict):
            continue
        if value.get("timestamp") is not None:
            return None  # a real clock, however partial, is used instead
        is_init = value.get("type") == "system" and value.get("subtype") == "init"
        if not runs or (is_init and runs[-1][3]):  # as read_stream_json splits runs
            runs.append([record.line, 0, 0, 0])
        run = runs[-1]
        run[1] += 1
        run[3] = run[3] or int(is_init)
        if value.get("type") == "result":
            run[2] = token_count(value.get("duration_ms"))
    if not runs:
        return None
    steps = tuple(
        max(MS, duration * MS // max(frames - 1, 1)) if duration else MS
        for _, frames, duration, _ in runs
    )
    total = sum(
        step * max(frames - 1, 0) for step, (_, frames, _, _) in zip(steps, runs, strict=True)
    )
    return _SyntheticTimeline(tuple(r[0] for r in runs), steps, total)


def _cover_child(parent: SessionBuilder, child: SessionBuilder) -> None:
    """A session lasts at least as long as its subagents: warmup sidechains run before
    the first main-thread record, and a parent may log nothing while a child works."""
    if child.start_ns is None or child.end_ns is None:
        return
    parent.touch(child.start_ns)
    parent.touch(child.end_ns)


def _unique(session_id: str, used: set[str]) -> str:
    """Two runs of one file may share a session id (a resumed run): the second is `#2`."""
    candidate, count = session_id, 1
    while candidate in used:
        count += 1
        candidate = f"{session_id}#{count}"
    used.add(candidate)
    return candidate


def _on_init(builder: SessionBuilder, frame: dict[str, Any]) -> None:
    model = frame.get("model")
    if isinstance(model, str) and model not in builder.models:
        builder.models.append(model)
    for key in ("tools", "skills", "agents", "slash_commands"):
        values = frame.get(key)
        if isinstance(values, list):
            builder.facts.append((f"init_{key}", str(len(values))))
    servers = frame.get("mcp_servers")
    if isinstance(servers, list):
        names = [s.get("name") for s in servers if isinstance(s, dict)]
        builder.facts.append(("init_mcp_servers", ",".join(n for n in names if isinstance(n, str))))
    plugins = frame.get("plugins")
    if isinstance(plugins, list):
        builder.facts.append(("init_plugins", str(len(plugins))))


def _on_result(builder: SessionBuilder, frame: dict[str, Any]) -> None:
    usage = frame.get("modelUsage")
    if isinstance(usage, dict):
        main_model = builder.models[0] if builder.models else None
        windows = {
            m: token_count(u.get("contextWindow")) for m, u in usage.items() if isinstance(u, dict)
        }
        window = windows.get(main_model or "") or max(windows.values(), default=0)
        if window:
            builder.window, builder.window_source = window, "journal"
    if isinstance(text_field(frame, "subtype"), str):
        builder.facts.append(("result", frame["subtype"]))


# --------------------------------------------------------------------------- groups


def subagent_files(main: Path) -> list[Path]:
    """Files that belong to a main transcript: `<session>/subagents/**/agent-*.jsonl`."""
    stem = main.name.removesuffix(".gz").removesuffix(".jsonl")
    folder = main.parent / stem / "subagents"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("agent-*.jsonl*") if p.is_file())


def is_main_transcript_name(path: Path) -> bool:
    stem = path.name.removesuffix(".gz").removesuffix(".jsonl")
    return bool(_UUID_NAME.match(stem))


def _sidecar(path: Path) -> tuple[str | None, str | None]:
    """(spawning tool call, parent agent) from `agent-<id>.meta.json`, when present."""
    name = path.name.removesuffix(".gz").removesuffix(".jsonl")
    meta = path.with_name(f"{name}.meta.json")
    try:
        data = orjson.loads(meta.read_bytes())
    except (OSError, ValueError):
        return None, None
    if not isinstance(data, dict):
        return None, None
    call, parent = data.get("toolUseId"), data.get("parentAgentId")
    return (
        call if isinstance(call, str) else None,
        parent if isinstance(parent, str) and parent else None,
    )


def read_group(
    main: Path | None, extras: list[Path], diagnostics: Diagnostics, stream_json: bool = False
) -> list[Session]:
    """Read a main journal and the subagent/compaction files attached to it."""
    if stream_json:
        assert main is not None
        return [s for b in read_stream_json(main, diagnostics) if (s := b.finish()) is not None]
    builders: dict[str, SessionBuilder] = {}
    main_builder: SessionBuilder | None = None
    if main is not None:
        found = read_transcript(main, diagnostics)
        for key, builder in found.items():
            builders[builder.session_id] = builder
            if key == "":
                main_builder = builder
    compaction_requests: list[SessionBuilder] = []
    for path in extras:
        try:
            found = read_transcript(path, diagnostics)
        except JournalError as error:
            diagnostics.warn(error.path, error.line, "unreadable", error.message)
            continue
        call, parent_agent = _sidecar(path)
        for builder in found.values():
            if "acompact" in path.name or (builder.agent_id or "").startswith("acompact"):
                compaction_requests.append(builder)
                continue
            if call and builder.parent_call_id is None:
                builder.parent_call_id = call
            if parent_agent and builder.parent_session is not None:
                # A nested agent: its parent is another subagent of the same session.
                builder.parent_session = f"{builder.parent_session}/{parent_agent}"
            if builder.session_id in builders:
                builders[builder.session_id].sources.append(str(path))
                continue
            builders[builder.session_id] = builder
    _link_subagents(builders)
    if main_builder is not None:
        for request in compaction_requests:
            _attach_compaction_request(main_builder, request)
    sessions = [s for b in builders.values() if (s := b.finish()) is not None]
    return sessions


def _link_subagents(builders: dict[str, SessionBuilder]) -> None:
    by_parent_agents: dict[str, str] = {}
    for builder in builders.values():
        for agent_id, call_id in builder.agent_results.items():
            by_parent_agents[f"{builder.session_id}/{agent_id}"] = call_id
    for builder in builders.values():
        if builder.parent_session is None:
            continue
        call = builder.parent_call_id or by_parent_agents.get(builder.session_id)
        builder.parent_call_id = call
        parent = builders.get(builder.parent_session)
        if parent is None:
            continue
        if call and call in parent.tools:
            parent.tools[call].child_session = builder.session_id
        _cover_child(parent, builder)


def _attach_compaction_request(main: SessionBuilder, request: SessionBuilder) -> None:
    """The `agent-acompact-*` file is the summarisation request of a compaction."""
    session = request.finish()
    if session is None or not session.responses or not main.compactions:
        return
    response = session.responses[-1]
    nearest = min(main.compactions, key=lambda c: abs(c.end_ns - response.end_ns))
    # The file replays old reminders first; the request starts at its own trigger.
    start = response.start_ns
    nearest.request = Response(
        id=response.id,
        start_ns=start,
        end_ns=response.end_ns,
        model=response.model,
        usage=response.usage,
        output_tokens_reliable=False,
    )
    if start < nearest.start_ns:
        nearest.start_ns = start
        nearest.timing = "summarisation request (agent-acompact file) → boundary record"
    main.sources.extend(request.sources)
