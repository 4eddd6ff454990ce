"""Claude Code: every record type the adapter knows, each read (into what, and why) or
skipped on purpose (why it is not model input). Anything else is `not recognised (not
read)`, counted with its first `path:line` — a new Claude Code version's new record is
never silently called "skipped on purpose" (issue 28.2).

Three tables for the transcript (`type`; `system` by `subtype`; `attachment` by
`attachment.type`) and one for `-p` stream-json frames (`type` or `type/subtype`).
`tests/test_claude_records.py` reads every Claude Code corpus journal and fails on any
record outside them. Evidence for the attachment rows: the 2.1.179 and 2.1.165 journals of
`../shared/corpus/claude-code/transcripts` (planetfall, GPL-3.0), measured as the reported
growth of the request after each attachment beyond the previous response's output and the
other items added (docs/estimates.md, "Claude Code attachments").
"""

from __future__ import annotations

from agent_profiler.model import Category, frozen


@frozen
class Known:
    """A record kind the adapter knows: read (`category` when it is one item of context)
    or skipped on purpose, and why."""

    read: bool
    why: str
    category: Category | None = None


def _read(why: str, category: Category | None = None) -> Known:
    return Known(True, why, category)


def _skip(why: str) -> Known:
    return Known(False, why)


# The transcript's `type` (~/.claude/projects/…/<session>.jsonl).
RECORD_TYPES: dict[str, Known] = {
    "user": _read("prompts, tool results, skill bodies, harness text and images, by content"),
    "assistant": _read("a response: its usage, text, thinking and tool calls"),
    "system": _read("by subtype (SYSTEM_SUBTYPES)"),
    "attachment": _read("by attachment.type (ATTACHMENT_TYPES)"),
    "content-replacement": _read(
        "2.1.3xx: a tool result too large, sent as a preview from then on (`replacements`)"
    ),
    "summary": _skip("a title for the session list, not sent to the model"),
    "file-history-snapshot": _skip("the harness's file backups for rewind"),
    "progress": _skip("live progress of a tool, hook or subagent; its result comes as a record"),
    "queue-operation": _skip(
        "the input queue (enqueue, remove, popAll); what reaches the model is the "
        "queued_command attachment"
    ),
    "pr-link": _skip("a pull request's link, for the UI"),
    "ai-title": _skip("a title the harness generated for the session list"),
    "custom-title": _skip("a title the user gave the session"),
    "agent-setting": _skip("the session's agent setting, for the harness"),
    "agent-name": _skip("the session's agent name, for the UI"),
    "last-prompt": _skip("a pointer to the last prompt, for resuming"),
    "tag": _skip("a tag on the session, for the UI"),
    "mode": _skip("the UI's input mode (one per turn); not sent"),
    "permission-mode": _skip("the permission mode (one per turn); not sent"),
    # Claude Code 2.1.3xx (read in the 2.1.332 build's writer table; no corpus journal yet).
    "fork-context-ref": _read(
        "a forked agent's inherited context: the parent's first messages, sent before the "
        "agent's own and not in its file (`unmeasured`)"
    ),
    "ended-by-model": _skip("the model ended the session, for the session list"),
    "continued-in": _skip("the conversation went on in another session, for /resume"),
    "relocated": _skip("the session's new working folder, for the session list"),
    "agent-color": _skip("the agent's colour, for the UI"),
    "frame-link": _skip("an artifact count, for the session list"),
    "artifact-comment-monitor": _skip("the artifact comment watcher's state, for the harness"),
    "artifact-autoreact-ledger": _skip("the artifact auto-react ledger, for the harness"),
    "bridge-session": _skip("the Remote Control bridge's session, for reconnecting"),
    "history-suppression": _skip("hides the session from the history"),
    "file-history-delta": _skip("an increment to the harness's file backups for rewind"),
    "attribution-snapshot": _skip("commit attribution state, for the harness"),
    "isolation-latch": _skip("the isolation side the session latched to, for the harness"),
    "session-owner": _skip("the account that owns the session, for the harness"),
    "dev-mods": _skip("the dev-mods folder, for the harness"),
    "memory-mode": _skip("auto-memory turned on or off; what it loads comes as attachments"),
    "atis-latch": _skip("a latched harness setting, for the harness"),
    "tools-used": _skip("the names of the tools used so far, for the harness"),
    "data-flow-records": _skip("data-flow provenance records, for the harness"),
    "data-flow-incomplete": _skip("data-flow provenance loss codes, for the harness"),
    "derived-from": _skip("the sessions this one derived from, for the harness"),
    "worktree-state": _skip("the session's git worktree, for resuming"),
    "cost-state": _skip(
        "running cost and token totals, restored on resume (each request's usage is read)"
    ),
    "resume-head-vouch": _skip("a checksum of the file's head, for a fast resume"),
    "observer-ref": _skip("a pointer to an observer agent's task, for the harness"),
    "repl-mode": _skip(
        "code mode on or off, restored on resume (the tools it sends are not in the journal)"
    ),
    "hybrid-organization": _skip("an organisation mark, for the harness"),
    "host-row": _skip("a row of a code-mode script's inner calls, for the UI"),
    "api-request-shape": _skip(
        "a copy of a request's system prompt and tools as sent, by hash: not read yet"
    ),
    "api-request-blob": _skip("a copy of one message as sent, by hash: not read yet"),
    "api-request": _skip(
        "a copy of one request as sent (its messages by hash): not read yet; its "
        "response's usage sizes it"
    ),
    "api-request-resumed": _skip("a paused response resumed by another request"),
}

# Record types read no further whose time is the session's, so its span covers them: a
# hook or a tool running (a SessionStart hook minutes before the first prompt, Stop hooks
# after the last record), a prompt queued. Not the others: `file-history-snapshot` has no
# time of its own (its `snapshot.timestamp` is its prompt's), and the titles, tags, modes
# and pointers are UI state, a `summary` even written by a later session. `system` records
# (stop_hook_summary, turn_duration …) are read, so their times are the session's already.
TIMED = ("progress", "queue-operation")

# `system` records by `subtype`.
SYSTEM_SUBTYPES: dict[str, Known] = {
    "compact_boundary": _read("a compaction: the context is replaced by its summary"),
    "microcompact_boundary": _read("a microcompaction: old tool results leave the context"),
    "api_error": _read(
        "a failed API call the harness retries (529 Overloaded …): an Events instant with its "
        "status, error type and attempt, and `api_errors` on the profile"
    ),
    "local_command": _read(
        "a local slash command's name or output: sent with the next request as user text from "
        "2.1.63 (skipped before), not when `isDisplayOnly` (2.1.319)"
    ),
    "stop_hook_summary": _skip("which Stop hooks ran, for the UI"),
    "turn_duration": _skip("how long a turn took, for the UI"),
    "away_summary": _skip("a recap shown to the user on return ('while you were away')"),
    "informational": _skip("a notice shown to the user"),
    # 2.1.3xx (the 2.1.332 build's writers).
    "voice_call_talk": _read(
        "a voice call's user turn, sent as the user's words", Category.PROMPTS
    ),
    "permission_retry": _skip("commands whose permission will be asked again, shown to the user"),
    "memory_saved": _skip("memory files written, for the UI"),
    "agents_killed": _skip("background agents stopped, for the UI"),
    "bridge_status": _skip("Remote Control is on, with its URL, for the UI"),
    "cloud_session_status": _skip("a cloud session's status line, for the UI"),
    "scheduled_task_fire": _skip("a scheduled task fired, for the UI (its prompt is queued apart)"),
    "file_snapshot": _skip("the plan file's text kept for a restore, not sent"),
    "model_fallback": _skip("the model switched after an error, shown to the user"),
    "model_consent_fallback": _skip("the user chose a fallback model, shown to the user"),
    "model_refusal_fallback": _skip("a refusal retried on another model, shown to the user"),
    "model_refusal_no_fallback": _skip("a refusal without a fallback, shown to the user"),
    "rewind_stand_in": _skip("a stand-in row left by a rewind, for the harness"),
    "upgrade_relay_marker": _skip("the marker of the prompt cache's relay, for the harness"),
}

# `attachment` records by `attachment.type`: what the harness adds to the next request.
ATTACHMENT_TYPES: dict[str, Known] = {
    "queued_command": _read(
        "a message typed while the agent was busy, sent with the next request: commandMode "
        "`prompt` is a user prompt (a prompt span); `task-notification` a background task's "
        "<task-notification> (Environment, as in a user record)",
        Category.PROMPTS,
    ),
    "skill_listing": _read("the skills index the harness sends", Category.SKILLS),
    "deferred_tools_delta": _read(
        "names of the deferred tools (loaded through tool search) now listed", Category.TOOLS
    ),
    "agent_listing_delta": _read("the subagent types the Agent tool offers", Category.TOOLS),
    "task_reminder": _read(
        "the task-list reminder; its items when it has some; with none the reminder's fixed "
        "text is not in the journal (+≈130 tokens each in the corpus): `unmeasured`",
        Category.OVERHEAD,
    ),
    "edited_text_file": _read(
        "a snippet of a file changed outside the agent (the user, a linter)",
        Category.ENVIRONMENT,
    ),
    "file": _read("a file the user @-mentioned, sent as a Read result", Category.RESULTS),
    "compact_file_reference": _read(
        "after a compaction, a note naming a file read before it", Category.OVERHEAD
    ),
    "invoked_skills": _read("after a compaction, the skills invoked before it", Category.SKILLS),
    "date_change": _read("the new date, when the day changes mid-session", Category.ENVIRONMENT),
    "hook_success": _read(
        "a hook's output: SessionStart/UserPromptSubmit stdout (`content`) becomes context",
        Category.ENVIRONMENT,
    ),
    "hook_additional_context": _read("a hook's additionalContext", Category.ENVIRONMENT),
    "hook_blocking_error": _read(
        "a hook's blocking error, fed back to the model", Category.ENVIRONMENT
    ),
    # Attachments that take earlier context out (claude_attachments.py): no item of their own.
    "tool_results_cut": _read("old tool results sent as a stand-in from now on"),
    "thinking_stripped": _read("earlier responses' thinking no longer sent"),
    "advisor_stripped": _read(
        "the advisor's calls and results in earlier responses no longer sent"
    ),
    "whole_texts_withdrawn": _read(
        "after a prompt too long, files attached over the limit sent as a stand-in"
    ),
    "command_permissions": _skip(
        "the tools an invoked command may use, for the permission checker (allowedTools)"
    ),
    "hook_system_message": _skip("a hook's systemMessage, shown to the user"),
    "hook_cancelled": _skip("a hook that was cancelled: no output"),
    "hook_non_blocking_error": _skip("a hook's non-blocking error, shown to the user"),
    # Claude Code 2.1.3xx (read in the 2.1.332 build's normaliser; no corpus journal yet).
    "account_memory_recall": _read("account memory recalled for this turn", Category.RULES),
    "advisor_tool": _read("the advisor tool's availability", Category.TOOLS),
    "agent_ask_notice": _read("subagents waiting on a permission prompt", Category.ENVIRONMENT),
    "agent_mention": _read("a hint that the user wants a named agent", Category.OVERHEAD),
    "artifact_opening_prefetch": _read("an artifact's content fetched ahead", Category.RESULTS),
    "async_hook_response": _read(
        "an async hook's systemMessage or additionalContext", Category.ENVIRONMENT
    ),
    "at_mention_reference": _read(
        "a file @-mentioned but not attached, and how to read it", Category.OVERHEAD
    ),
    "auto_mode": _read("auto mode's instructions", Category.SYSTEM),
    "auto_mode_exit": _read("auto mode ended", Category.SYSTEM),
    "bash_output_audience_note": _read(
        "a reminder that only the model sees a command's output", Category.OVERHEAD
    ),
    "batching_reminder": _read("a nudge to batch tool calls", Category.OVERHEAD),
    "budget_usd": _read("the session's budget in USD", Category.ENVIRONMENT),
    "claude_app_notice": _read("which Claude app a message came from", Category.ENVIRONMENT),
    "context_sections": _read("context sections a host supplies", Category.ENVIRONMENT),
    "coordinator_context": _read("the worker tools a coordinator may use", Category.TOOLS),
    "cowork_memory_context": _read(
        "an account memory snapshot (or its removal notice)", Category.RULES
    ),
    "critical_system_reminder": _read("a configured critical instruction", Category.SYSTEM),
    "date": _read("today's date", Category.ENVIRONMENT),
    "diagnostics": _read("IDE or LSP diagnostics", Category.ENVIRONMENT),
    "dir_sync_notice": _read("a directory sync notice", Category.ENVIRONMENT),
    "directory": _read(
        "an @-mentioned directory, sent as an ls call and its output", Category.RESULTS
    ),
    "dynamic_skill": _read("skills discovered during the session", Category.SKILLS),
    "elapsed_time_reminder": _read("a reminder of the time elapsed", Category.OVERHEAD),
    "environment": _read(
        "the environment (working directory, git, platform) or its update", Category.ENVIRONMENT
    ),
    "first_week": _read("onboarding notes", Category.OVERHEAD),
    "fork_briefing": _read("the briefing handed to a forked session", Category.SUMMARIES),
    "hook_stopped_continuation": _read(
        "a hook's output that stopped the turn", Category.ENVIRONMENT
    ),
    "inlined_image_paths": _read("where attached images are saved", Category.ENVIRONMENT),
    "instructions": _read("CLAUDE.md and other instruction files", Category.RULES),
    "language": _read("the language the user prefers", Category.SYSTEM),
    "linked_plugin_tools_note": _read("a linked computer's plugin tools", Category.TOOLS),
    "mcp_dropped_tools_delta": _read("MCP tools left out for their schema", Category.TOOLS),
    "mcp_instructions_delta": _read("MCP servers' instructions", Category.TOOLS),
    "mcp_resource": _read("an @-mentioned MCP resource's content", Category.RESULTS),
    "memory_update": _read("a memory directory changed, or a stale notice", Category.ENVIRONMENT),
    "model": _read("the model's identity", Category.ENVIRONMENT),
    "nested_memory": _read("a nested CLAUDE.md's contents", Category.RULES),
    "opened_file_in_ide": _read("the file open in the IDE", Category.ENVIRONMENT),
    "output_limit_note": _read("a note on the output limit", Category.OVERHEAD),
    "output_style": _read("the output style's per-turn reminder", Category.OVERHEAD),
    "output_style_instructions": _read("the output style's instructions", Category.SYSTEM),
    "output_token_usage": _read("the output tokens used so far", Category.ENVIRONMENT),
    "pdf_reference": _read("a PDF not attached, and how to read it by pages", Category.OVERHEAD),
    "peer_mention": _read("an @-mentioned session, and how to message it", Category.OVERHEAD),
    "plan_file_reference": _read("the plan file's content, attached again", Category.RESULTS),
    "plan_mode": _read("plan mode's instructions", Category.SYSTEM),
    "plan_mode_exit": _read("plan mode ended", Category.SYSTEM),
    "plan_mode_reentry": _read("plan mode's instructions, on entering it again", Category.SYSTEM),
    "plugin_note": _read("a note from a plugin, not from the user", Category.ENVIRONMENT),
    "poll_events": _read("messages and notifications from other sessions", Category.ENVIRONMENT),
    "prefix_delta": _read("which parts of the system prompt and tools changed", Category.SYSTEM),
    "proactivity": _read("the proactivity level, or that it no longer applies", Category.SYSTEM),
    "read_truncation_notice": _read("a notice that a read was truncated", Category.OVERHEAD),
    "relevant_memories": _read("memory files retrieved for this turn", Category.RULES),
    "remote_session_change": _read("commit and pull request attribution rules", Category.SYSTEM),
    "repl_mcp_needs_auth": _read("REPL MCP servers that need authentication", Category.TOOLS),
    "repl_mcp_servers": _read("the REPL's MCP servers", Category.TOOLS),
    "sandbox_instructions": _read("the command sandbox's rules", Category.SYSTEM),
    "secondary_reminder": _read("a secondary reminder", Category.OVERHEAD),
    "selected_lines_in_diff": _read(
        "lines selected in a diff, with their text", Category.ENVIRONMENT
    ),
    "selected_lines_in_ide": _read(
        "lines selected in the IDE, with their text", Category.ENVIRONMENT
    ),
    "session_context": _read(
        "the session's facts (email, project, git status)", Category.ENVIRONMENT
    ),
    "silent_turn_reminder": _read("a nudge on a silent turn", Category.OVERHEAD),
    "skill_mention": _read("a note that a /name is a skill", Category.OVERHEAD),
    "task_status": _read("a background task's or agent's status", Category.ENVIRONMENT),
    "team_context": _read("team coordination instructions (agent teams)", Category.SYSTEM),
    "teammate_mailbox": _read("teammates' messages (agent teams)", Category.ENVIRONMENT),
    "thread_state": _read("when the user last wrote", Category.ENVIRONMENT),
    "todo_reminder": _read("the todo list's reminder and items", Category.OVERHEAD),
    "token_usage": _read("the tokens used so far", Category.ENVIRONMENT),
    "tool_hosts_correction": _read("where tools run, corrected", Category.TOOLS),
    "tool_hosts_notice": _read("where tools run", Category.TOOLS),
    "tool_search_usage_reminder": _read(
        "a reminder naming tools not loaded yet", Category.OVERHEAD
    ),
    "total_tokens_reminder": _read("a nudge on the tokens used", Category.OVERHEAD),
    "ultra_effort_enter": _read("a higher effort mode entered", Category.SYSTEM),
    "ultra_effort_exit": _read("a higher effort mode left", Category.SYSTEM),
    "ultrathink_effort": _read("a thinking keyword acknowledged", Category.OVERHEAD),
    "unknown_command_fallback": _read(
        "an unknown slash command and the commands there are", Category.OVERHEAD
    ),
    "widget_context_hint": _read("app views' shared state", Category.ENVIRONMENT),
    "workflow_keyword_request": _read("a workflow keyword acknowledged", Category.OVERHEAD),
    "workflow_size_guideline_change": _read("a workflow size rule changed", Category.SYSTEM),
    "project_doc_reads": _read(
        "project documents read, sent as a tool call and its result", Category.RESULTS
    ),
    "message_pdf_reads": _read(
        "PDFs of a message read, sent as a Read call and its result", Category.RESULTS
    ),
    "already_read_file": _skip("an @-mention of a file already read and unchanged: not sent again"),
    "async_hook_response_batch": _skip("async hooks' responses, for the UI"),
    "attention_budget": _skip("the harness's attention budget, not sent"),
    "batching_reminder_sent": _skip("a record that a batching reminder was sent"),
    "context_efficiency": _skip("the harness's context efficiency state, not sent"),
    "credential_org": _skip("the credential's organisation, not sent"),
    "deferred_tools_record": _skip("the deferred tools' state, for the harness"),
    "edited_image_file": _skip("an image changed outside the agent: not sent"),
    "goal_status": _skip("a goal's status, for the UI"),
    "goals": _skip("the session's goals, for the UI"),
    "hook_deferred_tool": _skip("a tool call a hook deferred, for the harness"),
    "hook_error_during_execution": _skip("a hook's error, shown to the user"),
    "hook_permission_decision": _skip("a hook's permission decision, for the harness"),
    "max_turns_reached": _skip("the turn limit reached, shown to the user"),
    "progress_reminder_sent": _skip("a record that a progress reminder was sent"),
    "projects_thread_ask": _skip("a question to a project thread, for the UI"),
    "prompt_as_file": _skip("a long prompt kept as a file, for the UI"),
    "prompt_render_point": _skip("where the prompt was rendered, for the harness"),
    "prompt_snapshot": _skip("a snapshot of the prompt, for the harness"),
    "secondary_reminder_sent": _skip("a record that a secondary reminder was sent"),
    "session_cron_carry": _skip("a scheduled loop's state, for the harness"),
    "structured_output": _skip("a structured output, for the SDK's consumer"),
    "teammate_shutdown_batch": _skip("teammates shut down, for the UI"),
    "thinking_drop": _skip("thinking blocks already dropped, for telemetry"),
    "tool_host_result_lines": _skip("a tool host's result lines, for the UI"),
    "tool_offer_record": _skip("the tools offered, for the harness"),
    "withheld_memory": _skip("memory files not loaded, and why: not sent"),
}

# `claude -p --output-format stream-json` frames: `type`, or `type/subtype` for `system`.
STREAM_TYPES: dict[str, Known] = {
    "user": _read("prompts and tool results, as in a transcript"),
    "assistant": _read("a response, as in a transcript"),
    "result": _read("the run's result: its window (modelUsage) and facts"),
    "system/init": _read("the run's start: model, tools, skills, agents (facts)"),
    "system/compact_boundary": _read("a compaction"),
    "system/api_retry": _read(
        "a failed API call the harness retries: an Events instant, as a transcript's api_error"
    ),
    "system/hook_response": _read("a hook's output: additionalContext enters the context"),
    "system/hook_started": _skip("a hook's start, for the SDK's consumer"),
    "system/notification": _skip("a notice for the SDK's consumer (e.g. a Stop hook error)"),
    "system/task_started": _skip("a background task's start, for the SDK's consumer"),
    "system/task_notification": _skip(
        "a background task's end, for the SDK's consumer (its output is a tool result)"
    ),
    "system/status": _skip("a status line for the SDK's consumer"),
    "rate_limit_event": _skip("the account's rate-limit status, for the SDK's consumer"),
    "stream_event": _skip("a partial-message delta; the whole message follows as `assistant`"),
}
