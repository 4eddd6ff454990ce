"""Claude Code: what each transcript or stream-json record means for one session.

Owns the `SessionBuilder` (one thread: main or subagent) and the Claude format facts
(FORMATS.md §1): which records are requests, how usage merges, what each block is in context.
A response's usage arithmetic is in `claude_response`, record content, user-text classes
and attachments in `claude_content`, compactions in `claude_compaction`, `/context` runs
in `claude_native`.

Format facts these modules rely on, with the surprise each one holds:
- one API response is several records sharing `message.id`; usage is repeated
  on each and merged per field with max; the first record's thread is kept;
  a response whose merged usage is all zero is not a request (§1.3, seed 001);
- prompt size = input + cache_creation + cache_read; `output_tokens` is a
  streaming snapshot and cannot be trusted (§1.4);
- the system prompt, tool schemas and memory files are not in the transcript:
  they become the inferred head item (§1.5);
- a request's start is not recorded: it is the time of the record that
  triggered it (the prompt or the last tool result before it) (§1.9);
- a tool result can be written the line before its tool_use (2.1.165, 35 ms apart):
  results meet their calls by `tool_use_id`, not by line order.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from agent_profiler import estimate
from agent_profiler.adapters.claude_attachments import Edits
from agent_profiler.adapters.claude_compaction import ObservedCompaction
from agent_profiler.adapters.claude_content import (
    ANSWER_BLOCKS,
    SERVER_RESULTS,
    add_media,
    classify_user_text,
    server_result,
    text_of,
)
from agent_profiler.adapters.claude_context import assumed_window
from agent_profiler.adapters.claude_response import ResponseDraft
from agent_profiler.adapters.claude_told import (
    add_measured_call,
    measured_arguments,
    told_measures,
)
from agent_profiler.adapters.common import (
    preview,
    warn_bad_usage,
)
from agent_profiler.adapters.drafts import (
    ToolArguments,
    ToolDraft,
    add_tool_call,
    add_tool_result,
    finish_prompts,
    handed_over,
)
from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.diagnostics import Diagnostics, journal_name
from agent_profiler.estimate import tool_call_text
from agent_profiler.model import (
    Category,
    Fact,
    Harness,
    Marker,
    Prompt,
    Response,
    Session,
    SourceKind,
)
from agent_profiler.scan import Told

HARNESS = Harness.CLAUDE_CODE
# As globals: read for every text block of a response (an enum class's attribute goes
# through EnumType's __getattr__ hook in CPython 3.11, ≈ 900 instructions each time).
_ASSISTANT, _OF_RESPONSE = Category.ASSISTANT, SourceKind.RESPONSE


class SessionBuilder:
    """Accumulates one Claude Code session (main thread or one subagent)."""

    def __init__(
        self,
        session_id: str,
        source: str,
        diagnostics: Diagnostics,
        log: ContextLog | None = None,
    ) -> None:
        self.session_id = session_id
        self.sources: list[str] = [source]
        self.diagnostics = diagnostics
        self.log = log if log is not None else ContextLog()  # (the one pass's: stream/claude.py)
        self.responses: dict[str, ResponseDraft] = {}
        self.tools: dict[str, ToolDraft] = {}
        self.prompts: list[Prompt] = []
        self.compactions: list[ObservedCompaction] = []
        self.models: list[str] = []
        self.unmeasured: Counter[str] = Counter()
        self.start_ns: int | None = None
        self.end_ns: int | None = None
        self.outer: list[int] = []  # times of records read no further: the span's only
        self.trigger_ns: int | None = None  # time of the record that will trigger the next request
        self.current_prompt: str | None = None
        # A compaction whose observation waits for its summary record (see on_user).
        self.pending_post: tuple[ObservedCompaction, Observation] | None = None
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
        self.agent_usage: dict[str, dict[str, Any]] = {}  # agentId → its last call's usage
        self.result_media: dict[str, list[str]] = {}  # call id → its result's image items
        # Results read before their call (`_on_tool_result`): call id → (time, error, chars,
        # agentId), taken by the call when it comes; a call never read leaves its entry.
        self.early_results: dict[str, tuple[int, bool, int, str | None]] = {}
        # The calls whose drafts the one pass let go (stream/claude_tools.py): what a
        # later cut of their results reads of each, its result's size (-1: an error's).
        self.gone_results: dict[str, int] = {}
        self.edits = Edits.new()  # what 2.1.3xx's records that take context out need
        self.told: Told | None = None  # the scan helper's measures of the calls (claude_told)
        self.facts: list[Fact] = []
        self.markers: list[Marker] = []  # failed API calls the harness retried (claude_code)
        self.records = 0
        self.item_stage: str | None = None  # says which parts are native after a /context
        self.native_runs = 0

    # -- time -------------------------------------------------------------

    def touch(self, ts: int) -> None:
        # Comparisons, not min/max: called for every record read.
        if self.start_ns is None or ts < self.start_ns:
            self.start_ns = ts
        if self.end_ns is None or ts > self.end_ns:
            self.end_ns = ts

    def cover(self, child: SessionBuilder) -> None:
        """A session lasts at least as long as its subagents: warmup sidechains run before
        the first main-thread record, and a parent may log nothing while a child works."""
        if child.start_ns is None or child.end_ns is None:
            return
        self.touch(child.start_ns)
        self.touch(child.end_ns)
        self.outer += child.outer

    # -- records ----------------------------------------------------------

    def on_meta(self, record: dict[str, Any]) -> None:
        version = record.get("version") or record.get("claude_code_version")
        if isinstance(version, str) and not self.version:
            self.version = version
        cwd = record.get("cwd")
        if isinstance(cwd, str) and not self.project:
            self.project = cwd

    def flush_post_compaction(self) -> None:
        if self.pending_post is not None:
            draft, observation = self.pending_post
            draft.observation = self.log.observe(observation)
            self.pending_post = None

    def on_user(self, record: dict[str, Any], ts: int, line: int | None = None) -> None:
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str) and not isinstance(content, list):
            self.diagnostics.warn(
                self.sources[0], line, "bad-shape", "user record without a readable message content"
            )
        if record.get("isCompactSummary") or (record.get("isSynthetic") and self.pending_post):
            uuid = str(record.get("uuid") or f"user@{ts}")
            unknown: list[object] = []
            summary, media = text_of(content, unknown)
            for kind in unknown:
                self.unknown_block(kind, self.sources[0], line)
            self.log.add(f"summary:{uuid}", Category.SUMMARIES, summary, label="Compaction summary")
            add_media(self, f"summary:{uuid}", media, Category.SUMMARIES)
            self.flush_post_compaction()
            self.trigger_ns = ts
            return
        if self.pending_post is not None:
            self.flush_post_compaction()
        blocks: list[Any] = (
            [content]
            if isinstance(content, str)
            else (content if isinstance(content, list) else [])
        )
        # Made by the first block that is not a tool result (most records hold only one).
        uuid = ""
        new_prompt_text: str | None = None
        prompt_chars = 0
        for index, block in enumerate(blocks):
            text: object
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "tool_result":
                    self._on_tool_result(block, record, ts, line)
                    continue
                uuid = uuid or str(record.get("uuid") or f"user@{ts}")
                if kind == "image" or kind == "document":
                    # A pasted image or document: the user's, sent with the prompt.
                    add_media(
                        self,
                        f"{uuid}:{index}",
                        [block],
                        Category.PROMPTS,
                        source_kind=SourceKind.PROMPT,
                    )
                    continue
                if kind != "text":
                    self.unknown_block(kind, self.sources[0], line)
                    continue
                text = block.get("text")
                if not isinstance(text, str):
                    continue
            elif isinstance(block, str):
                text = block
                uuid = uuid or str(record.get("uuid") or f"user@{ts}")
            else:
                continue
            category, label = classify_user_text(text, bool(record.get("isMeta")))
            source_id = ""
            source_kind = SourceKind.NONE
            if category is Category.SKILLS and isinstance(record.get("sourceToolUseID"), str):
                source_id, source_kind = record["sourceToolUseID"], SourceKind.TOOL
            elif category is Category.PROMPTS:
                source_kind = SourceKind.PROMPT
                new_prompt_text = new_prompt_text or text
                prompt_chars += len(text)
            self.log.add(
                f"{uuid}:{index}",
                category,
                text,
                label=label,
                source_id=source_id,
                source_kind=source_kind,
            )
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

    def _on_tool_result(
        self, block: dict[str, Any], record: dict[str, Any], ts: int, line: int | None
    ) -> None:
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            return
        tool = self.tools.get(call_id)
        if tool is not None:
            call_id = tool.call_id  # one string for the call and its result's item
        content = block.get("content")
        media: Sequence[dict[str, Any]] = ()
        if content.__class__ is str:  # most results: their text, no blocks
            text = content
        else:
            unknown: list[object] = []
            text, media = text_of(content, unknown)
            for kind in unknown:  # said with its place, the result's other blocks still read
                self.unknown_block(kind, self.sources[0], line)
            self.edits.note_result(call_id, content)
        chars = len(text)
        # (a result too large, sent as a preview: its replacement was read first)
        add_tool_result(self.log, call_id, self.edits.replaced.pop(call_id, text))
        if media:
            self.result_media[call_id] = add_media(
                self, f"result:{call_id}", media, Category.RESULTS, call_id, SourceKind.TOOL
            )
        elif self.result_media:  # (most results: no images, none to remove with them)
            self.result_media.pop(call_id, None)
        # (its older name asked only when the newer is not there, as `get`'s default was)
        result = (
            record["toolUseResult"] if "toolUseResult" in record else record.get("tool_use_result")
        )
        agent = result.get("agentId") if isinstance(result, dict) else None
        if isinstance(agent, str) and isinstance(result.get("usage"), dict):  # type: ignore[union-attr]
            self.agent_usage[agent] = result["usage"]  # type: ignore[index]
        ended = (ts, bool(block.get("is_error")), chars, agent if isinstance(agent, str) else None)
        if tool is None:
            # Its call is not read yet: 2.1.165 can write a result the line before its
            # tool_use (35 ms apart), or the call is not in this journal. The result counts
            # in context either way (above); its call, if it comes, ends with it.
            self.early_results[call_id] = ended
            return
        self._ended(tool, ended)

    def _ended(self, tool: ToolDraft, result: tuple[int, bool, int, str | None]) -> None:
        """A call's result: its end (never before its start), error flag and size."""
        ts, tool.is_error, tool.result_chars, agent = result
        tool.end_ns = max(ts, tool.start_ns)
        if agent is not None:
            self.agent_results[agent] = tool.call_id

    def on_assistant(self, record: dict[str, Any], ts: int, line: int, path: str) -> None:
        if self.pending_post is not None:
            self.flush_post_compaction()
        message = record.get("message")
        if not isinstance(message, dict):
            self.diagnostics.warn(path, line, "bad-shape", "assistant record without a message")
            return
        message_id = message.get("id")
        if message_id.__class__ is not str or not message_id:  # (every record but a damaged one)
            message_id = message_id or record.get("requestId") or record.get("uuid")
            message_id = str(message_id) if message_id else f"response@{line}"
        draft = self.responses.get(message_id)
        if draft is None:
            draft = self._response(message_id, message.get("model"), ts)
        elif ts > draft.end_ns:
            draft.end_ns = ts
        usage = message.get("usage")
        bad = draft.merge_usage(usage)
        if bad and isinstance(usage, dict):  # each record's, the file's first listed
            warn_bad_usage(self.diagnostics, path, line, usage, list(bad))
        if record.get("isApiErrorMessage") or record.get("error"):
            draft.is_error = True
        elif self.edits.withdrawable:  # a response: files attached before it stay sent
            self.edits.withdrawable.clear()
        stop_reason = message.get("stop_reason")
        if stop_reason.__class__ is str:
            # (one string for every response's: a long session held thousands of copies)
            draft.stop_reason = sys.intern(stop_reason)
        content = message.get("content")
        # Claude Code writes one record per content block: most records hold one.
        if content.__class__ is not list:
            if not isinstance(content, (str, list)) or not content:
                return
            content = content if isinstance(content, list) else [content]
        uuid: str | None = None  # made by the first block that names an item by it
        for index, block in enumerate(content):
            # The response's own text and thinking are its additions, linked to it (as
            # Codex and Pi link theirs); a bare string is a text block.
            if block.__class__ is not dict:
                if isinstance(block, str):
                    block = {"type": "text", "text": block}
                elif not isinstance(block, dict):
                    continue
            kind = block.get("type")
            if kind == "tool_use" or kind == "server_tool_use":
                self._on_tool_use(block, draft, ts, line, index)
                continue
            if uuid is None:
                uuid = str(record.get("uuid") or f"{message_id}@{line}")
            if kind == "text" or kind == "thinking":
                text = block.get(kind)
                if kind == "thinking" and not text and block.get("signature"):
                    # The thinking was sent back but its text is not in the journal
                    # (2.1.16x writes `"thinking": ""` with a signature): its size is the
                    # response's.
                    self._hidden_thinking(draft, f"{uuid}:{index}", "Thinking")
                elif isinstance(text, str):
                    item_id = f"{uuid}:{index}"
                    if kind == "thinking":  # (one string for the list and the item)
                        self.edits.thinking.append((message_id, item_id))
                    self.log.add(
                        item_id,
                        _ASSISTANT,
                        text,
                        label=ANSWER_BLOCKS[kind][1],
                        source_id=draft.id,
                        source_kind=_OF_RESPONSE,
                    )
                    draft.visible += self.log.estimator.visible_tokens(text)
            elif kind == "redacted_thinking":
                self._hidden_thinking(draft, f"{uuid}:{index}", "Redacted thinking")
            elif kind.__class__ is str and kind in SERVER_RESULTS:  # (a type may be a list)
                self._server_result(block, ts)
            elif kind != "fallback":  # (the server's model switch: two model names, no text)
                self.unknown_block(kind, path, line)

    def _response(self, message_id: str, model: object, ts: int) -> ResponseDraft:
        """A response met for the first time: observed at its trigger, before its records."""
        model = sys.intern(model) if isinstance(model, str) else ""  # (as stop_reason)
        start = self.trigger_ns if self.trigger_ns is not None and self.trigger_ns <= ts else ts
        observation = self.log.observe(
            Observation.request(start, message_id, model=model or None, item_stage=self.item_stage)
        )
        draft = ResponseDraft(message_id, start, ts, model, self.current_prompt, observation)
        self.responses[message_id] = draft
        if model and model != "<synthetic>" and model not in self.models:
            self.models.append(model)
        return draft

    def unknown_block(self, kind: object, path: str, line: int | None) -> None:
        """A content block of a type this adapter does not know (a newer Claude Code's, a
        server tool's result): not read, which is no choice, so it is said with its place
        rather than dropped in silence."""
        name = journal_name(kind) if isinstance(kind, str) and kind else "untyped"
        self.diagnostics.warn(
            path, line, "unknown-block", f"content block of type '{name}' not recognised (not read)"
        )

    def _server_result(self, block: dict[str, Any], ts: int) -> None:
        """A server tool's result (2.1.3xx: web search, the advisor), in the response that
        called it, sent back with it: the call's result and its end (`server_result`)."""
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str):
            return
        text, failed, hidden = server_result(block)
        add_tool_result(self.log, call_id, text)
        if block.get("type") == "advisor_tool_result":
            self.edits.advisor.append(call_id)
        if hidden:
            self.unmeasured[hidden] += 1
        ended = (ts, failed, len(text), None)
        tool = self.tools.get(call_id)
        if tool is None:
            self.early_results[call_id] = ended
        else:
            self._ended(tool, ended)

    def _hidden_thinking(self, draft: ResponseDraft, item_id: str, label: str) -> None:
        """Thinking whose text is not in the journal: an item sized at `finish` from the
        response's output (`_settle_hidden`)."""
        if draft.hidden is None:
            draft.hidden = []
        self.edits.thinking.append((draft.id, item_id))
        draft.hidden.append(
            self.log.add_evidence(
                item_id,
                Category.ASSISTANT,
                0,
                method=estimate.OUTPUT_MINUS_VISIBLE,
                label=f"{label} (not in the journal)",
                source_id=draft.id,
                source_kind=SourceKind.RESPONSE,
            )
        )

    def _on_tool_use(
        self, block: dict[str, Any], draft: ResponseDraft, ts: int, line: int, index: int
    ) -> None:
        call_id = block.get("id")
        if not isinstance(call_id, str):
            return
        name = block.get("name")
        name = sys.intern(name) if isinstance(name, str) else "tool"  # (as stop_reason)
        log = self.log
        # Measured by the scan helper already (claude_told.py), where the text's size is
        # its characters / 4; else here.
        told = told_measures(self.told, line, index, call_id, name) if log.chars4 else None
        if told is not None:
            draft.visible += add_measured_call(log, call_id, name, told)
        else:
            arguments = block.get("input")
            # Made once: tool_call_text(name, a) is name + tool_call_text("", a).
            text = tool_call_text(name, arguments)
            add_tool_call(log, call_id, name, arguments, text)
            draft.visible += log.estimator.visible_tokens(text)
        if call_id not in self.tools:
            measured = (
                measured_arguments(told)
                if told is not None
                else ToolArguments.of(arguments, text=text[len(name) :])
            )
            tool = ToolDraft(call_id, name, ts, draft.id, draft.prompt_id, measured)
            self.tools[call_id] = tool
            if self.early_results and call_id in self.early_results:
                self._ended(tool, self.early_results.pop(call_id))

    def _main_model(self) -> str:
        """The Claude model that served most requests (the first seen on a tie), else the
        first Claude model named."""
        drafts = self.responses.values()
        served = Counter(d.model for d in drafts if d.is_request and d.model.startswith("claude-"))
        if served:
            return served.most_common(1)[0][0]
        return next(m for m in self.models if m.startswith("claude-"))

    def _settle_hidden(self, draft: ResponseDraft) -> None:
        """Hidden thinking is what the response's output held beyond its visible blocks:
        `output_tokens` − the estimate of its text and tool-call arguments, when that usage
        is final. A record with a `stop_reason` carries the final usage (2.1.16x writes it
        on every record of the response); older builds wrote a streaming snapshot (≤ 12
        output tokens in the 2.1.14 corpus journal, no stop_reason): then `unmeasured`."""
        if not draft.hidden:
            return
        output = draft.usage.get("output_tokens", 0)
        if draft.stop_reason is None or not output:
            for handle in draft.hidden:
                self.log.settle_evidence(handle, None, "thinking-not-in-journal")
            return
        hidden = max(0, output - draft.visible)
        share, rest = divmod(hidden, len(draft.hidden))
        for index, handle in enumerate(draft.hidden):
            self.log.settle_evidence(handle, share + (rest if index == 0 else 0))

    # -- result -----------------------------------------------------------

    def finish(self) -> Session | None:
        self.flush_post_compaction()
        if self.start_ns is None or self.end_ns is None:
            return None
        end = self.end_ns
        window = self.window
        window_source = self.window_source
        if window is None and any(m.startswith("claude-") for m in self.models):
            window, window_source = assumed_window(self._main_model())
        any_request = False
        for draft in self.responses.values():
            if draft.is_request:
                any_request = True
                self.log.settle(
                    draft.observation, window_tokens=window, reported_tokens=draft.prompt_tokens
                )
            else:
                self.log.settle(draft.observation, window_tokens=window, dropped=True)
        for draft in self.responses.values():
            if draft.hidden:  # (most responses: no hidden thinking to size)
                self._settle_hidden(draft)
        for compaction in self.compactions:
            if compaction.observation is not None:
                self.log.settle(compaction.observation, window_tokens=window)
        if not any_request and not self.compactions and not self.native_runs:
            # No request to anchor a snapshot on (an init-only run, a backend that
            # reports zero usage): show what the transcript holds at the end. After a
            # /context run its complete native split is that picture: a second, partial
            # estimate beside it would contradict it (Conversation 0, coverage twice).
            self.log.observe(
                Observation.session_end(
                    end,
                    model=self.models[0] if self.models else None,
                    window_tokens=window,
                )
            )
        snapshots = self.log.replay()
        metered: list[Response] = []
        unmetered: list[Response] = []
        for d in handed_over(self.responses):
            if d.is_request:
                metered.append(d.finish())
            elif d.model != "<synthetic>":
                # SPEC §3 says an all-zero usage is "not a request"; issue 15 (newer) keeps
                # it as a response span with its usage unknown, so a backend writing zeros
                # still shows its requests. Claude Code's own `<synthetic>` replies (an API
                # error) made no request.
                unmetered.append(d.finish())
        responses = tuple(metered)
        response_ids = {r.id for r in (*responses, *unmetered)}
        tools = tuple(
            t.finish(response_ids, t.end_ns if t.end_ns is not None else end)
            for t in handed_over(self.tools)
        )
        prompts = finish_prompts(self.prompts, responses, tools)
        compactions = tuple(c.finish() for c in self.compactions)
        return Session(
            harness=HARNESS,
            session_id=self.session_id,
            # The span covers the records read no further; no slice moves with it.
            start_ns=min([self.start_ns, *self.outer]),
            end_ns=max([end, *self.outer]),
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
            unmetered_responses=tuple(unmetered),
            tool_calls=tools,
            compactions=compactions,
            snapshots=tuple(snapshots),
            unmeasured=self.log.unmeasured(self.unmeasured),
            estimate_methods=self.log.estimate_methods,
            facts=tuple(self.facts),
            markers=tuple(self.markers),
        )
