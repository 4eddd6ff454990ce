"""A Codex rollout's tool calls in the one pass (stream/codex.py): when each is known to
have ended, in the order first fit takes them (start, longest first, call id), so that
stream/tools.py `StreamTools` can fit and write them.

A Codex call ends with its output, or, for a command, after the duration its
`exec_command_end` says, which may come several requests later (a command left running
in the background, polled by `write_stdin`), or never (builds that do not write it). So a
call is taken when its request's successor closes with its output read and, once the
rollout has shown a command's duration, a command's duration read; the calls after it in
start order wait for it. What was taken is checked against the model's calls at the end
(stream/calls.py `check_and_trim`): a call whose end, error or result came after it was
written is `NotHandled`."""

from __future__ import annotations

from agent_profiler.adapters.codex_rollout import RolloutBuilder, Tool, _tool_end
from agent_profiler.model import ToolCall
from agent_profiler.stream.calls import PassCalls

# The tools whose end is a command's (`exec_command_end`, keyed by the call's id).
COMMANDS = frozenset(
    {"exec_command", "shell", "local_shell", "local_shell_call", "shell_command", "container.exec"}
)
DURATION = "journal: call record + exec_command_end duration"  # codex_rollout.finish's timing


class CodexCalls(PassCalls[Tool]):
    """The rollout's calls from their drafts (`builder.tools`) to StreamTools' lanes
    (stream/calls.py: a call ends with its output, or its command's duration)."""

    builder: RolloutBuilder
    closed: set[str]

    def __init__(self, builder: RolloutBuilder) -> None:
        super().__init__(builder)
        self.closed = set()
        self.durations = False  # the rollout has shown a command's duration

    def ended(self) -> list[tuple[ToolCall, int]]:
        """At a request's close: the calls first in start order that are known ended,
        made the model's calls and fitted on their lanes."""
        if self.waiting and not self.durations:  # (a loop, not a generator: once a request)
            for _, _, draft in self.waiting:
                if draft.duration_ns is not None:
                    self.durations = True
                    break
        return super().ended()

    def _end(self, draft: Tool, start: int) -> int | None:
        if draft.duration_ns is not None:
            return draft.start_ns + draft.duration_ns  # (the session's end may cut it: check)
        if draft.end_ns is None or (self.durations and draft.name in COMMANDS):
            return None
        return draft.end_ns

    _end_at = staticmethod(_tool_end)  # (codex_rollout.finish's)

    def _finish(self, draft: Tool, end: int) -> ToolCall:
        return draft.finish(
            self.closed, end, timing=DURATION if draft.duration_ns is not None else ""
        )  # (`_timing`, not called: once a call)

    def _timing(self, draft: Tool) -> str:
        return DURATION if draft.duration_ns is not None else ""
