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
    "local_command": _skip("a local slash command's output as shown to the user"),
    "stop_hook_summary": _skip("which Stop hooks ran, for the UI"),
    "turn_duration": _skip("how long a turn took, for the UI"),
    "away_summary": _skip("a recap shown to the user on return ('while you were away')"),
    "informational": _skip("a notice shown to the user"),
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
    "command_permissions": _skip(
        "the tools an invoked command may use, for the permission checker (allowedTools)"
    ),
    "hook_system_message": _skip("a hook's systemMessage, shown to the user"),
    "hook_cancelled": _skip("a hook that was cancelled: no output"),
    "hook_non_blocking_error": _skip("a hook's non-blocking error, shown to the user"),
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
