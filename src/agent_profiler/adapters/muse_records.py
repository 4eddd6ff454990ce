"""Muse's record tables and fixed facts: every envelope payload type, payload family,
`runtime.session` kind and run event kind (read, into which category, or skipped on
purpose), the file and stream names a session folder holds, the stages a context item is
observed at, and the muse-spark window (FORMATS-muse §2–6).

Separate from the readers (`muse_journal.py`, `muse_runs.py`) and the grouping (`muse.py`):
these are facts of the format, read by all of them and by `tests/test_record_tables.py`."""

from __future__ import annotations

from agent_profiler.model import Harness

HARNESS = Harness.MUSE
SESSION_FILE = "session.jsonl"
APPROVAL_STREAM = "approval.review.runtime"
APPROVAL_DIR = "approval-review"
SUBAGENT_DIR = "subagent"
NOT_IN_LANES_ID = "muse:not-in-lanes"
NOT_IN_LANES_LABEL = (
    "Not in the request lanes: tool schemas and request overhead "
    "(reported input − Σ lane bytes/4; the lanes are not scaled)"
)
# Every event this adapter knows, read (into which category, and why) or skipped on purpose
# (why it is not model input); anything else is "not recognised (not read)" with its first
# path:line (issue 28). FORMATS-muse.md §3–5 names them (a parser must not fail on others).
READ, SKIPPED = "read", "skipped on purpose"
_FACT = "a runtime fact or UI event, not model input"
# The envelope's `record_type`: every line of the corpus (1.1.1, 1.4.2) says `event`; an
# envelope without one is read as an event. Any other is not recognised, whatever its
# payload_type: it is not known to mean what an event of that payload_type means.
RECORD_TYPES: dict[str, tuple[str, str]] = {
    "event": (READ, "by payload_type: see PAYLOAD_TYPES"),
}
PAYLOAD_TYPES: dict[str, tuple[str, str]] = {
    "runtime.session": (READ, "run, task and approval events: see RUNTIME_SESSION_KINDS"),
    "runtime.session.metadata": (READ, "workspace, provider, default model, build version"),
    "run.model.configured": (READ, "the model of a run"),
    "runtime.session.route_facts": (READ, "the working directory"),
    **{
        kind: (SKIPPED, _FACT)
        for kind in (
            "runtime.session.task",
            "runtime.session.capture_selection",
            "runtime.retained_fact",
            "runtime.user_intent.accepted",  # the prompt is read from the run's `started`
            "runtime.user_intent.materialized",
            "runtime.model_reconfigure.completed",
            "session.end",
            "session.name.changed",
            "session.opened.observed",
            "session.workspace_branch.observed",
            "session.resumed",
            "session.login.completed",
            "session.startup_phases.observed",
            "user_shell.command",
            "user_shell.result",
        )
    },
}
# Families named by their prefix (each member is the same kind of record).
PAYLOAD_FAMILIES: dict[str, tuple[str, str]] = {
    "subagent.control.": (READ, "a subagent's start: links the child session to its call"),
    "tool_batch.effect.": (READ, "a tool's execution start and end (the tool span)"),
    "runtime.command_intake.": (SKIPPED, _FACT),
    "runtime.session.permission_": (SKIPPED, "the permission profile, not model input"),
    "session.fork.": (SKIPPED, _FACT),
    "session.payment_gate.": (SKIPPED, _FACT),
    "context.compact.manual.": (SKIPPED, "a manual compaction's UI steps; the run holds it"),
    "reminder.cleanup_effect.": (SKIPPED, _FACT),
}
RUNTIME_SESSION_KINDS: dict[str, tuple[str, str]] = {
    "run": (READ, "the conversation and its measurements: see RUN_EVENT_KINDS"),
    "task": (READ, "a task's lifecycle: request and tool timing (the line is not context)"),
    "approval": (READ, "an approval decision (the line is not context)"),
    "security_mode": (SKIPPED, _FACT),
    "agent_tree_initialized": (SKIPPED, _FACT),
}
RUN_EVENT_KINDS: dict[str, tuple[str, str]] = {
    "started": (READ, "the user's prompt → User prompts"),
    "context_block_diagnostic": (READ, "a context block's size and source (native lanes)"),
    "model_request_configured": (READ, "system prompt and context blocks of a request"),
    "model_input_trace_recorded": (READ, "the request's byte composition (native lanes)"),
    "model_response_created": (READ, "a request's response starts"),
    "assistant_message_committed": (READ, "assistant text → Assistant history"),
    "assistant_tool_calls_committed": (READ, "tool calls → Assistant history"),
    "tool_result_batch_committed": (READ, "tool results → Tool results"),
    "tool_results_committed": (READ, "tool results → Tool results"),
    "tool_result_committed": (READ, "a tool result → Tool results"),
    "tool_result": (READ, "a tool result → Tool results"),
    "model_completed": (READ, "a request's usage and model"),
    "memory_reminder_child_session_linked": (READ, "a reminder child session's link"),
    "context_compaction_installed": (READ, "a compaction: its summary replaces the context"),
    "context_compaction_fallback": (READ, "a compaction that fell back: a fact"),
    "terminal": (READ, "the end of a turn"),
    "reasoning_committed": (SKIPPED, "the model's reasoning: output, not re-sent (§5.8)"),
    "goal_usage_attribution": (SKIPPED, "a repeat of model_completed's usage"),
    "context_compaction_candidate": (SKIPPED, "a compaction candidate (the installed one is read)"),
    "provider_request_options_configured": (SKIPPED, "the option keys a request is sent with"),
    "task_stream_linked": (SKIPPED, "links a task stream to the run; not model input"),
    "reminder_proposal": (SKIPPED, "a reminder agent's proposal; its child session holds it"),
    "reminder_reconciler_outcome": (SKIPPED, "a reminder decision; not model input"),
    "skill_reminder_decision": (SKIPPED, "a skill reminder decision; not model input"),
    "resource_usage_sampled": (SKIPPED, "CPU and memory samples"),
}


NATIVE_ITEM_STAGE = "transcript-observed"
FALLBACK_ITEM_STAGE = "transcript-observed (no model_input_trace_recorded lanes: chars/4)"
# The context window `model/list` reports for every muse-spark model; the journal has none.
MUSE_SPARK_WINDOW = 1_007_997
WINDOW_SOURCE = "muse-spark model/list value (not in the journal)"
