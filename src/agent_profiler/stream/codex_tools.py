"""A Codex rollout's tool calls in the one pass (stream/codex.py): when each is known to
have ended, in the order first fit takes them (start, longest first, call id), so that
stream/tools.py `StreamTools` can fit and write them.

A Codex call ends with its output, or, for a command, after the duration its
`exec_command_end` says, which may come several requests later (a command left running
in the background, polled by `write_stdin`), or never (builds that do not write it). So a
call is taken when its request's successor closes with its output read and, once the
rollout has shown a command's duration, a command's duration read; the calls after it in
start order wait for it. What was taken is checked against the model's calls at the end
(`check`): a call whose end, error or result came after it was written is `NotHandled`."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Container, Iterable
from itertools import islice
from typing import Any

from agent_profiler.adapters.codex_rollout import RolloutBuilder, Tool, _tool_end
from agent_profiler.model import ToolCall
from agent_profiler.stream.log import NotHandled
from agent_profiler.stream.tools import StreamTools

# The tools whose end is a command's (`exec_command_end`, keyed by the call's id).
COMMANDS = frozenset(
    {"exec_command", "shell", "local_shell", "local_shell_call", "shell_command", "container.exec"}
)
DURATION = "journal: call record + exec_command_end duration"  # codex_rollout.finish's timing


def _key(call: ToolCall) -> tuple[Any, ...]:
    """What of a call may still change after it is made (its args and target cannot)."""
    return (
        call.call_id,
        call.start_ns,
        call.end_ns,
        call.response_id,
        call.prompt_id,
        call.is_error,
        call.incomplete,
        call.result_chars,
        call.child_session,
        call.timing,
    )


class CodexCalls:
    """The rollout's calls from their drafts (`builder.tools`) to StreamTools' lanes."""

    def __init__(self, builder: RolloutBuilder, tools: StreamTools) -> None:
        self.builder = builder
        self.tools = tools
        self.seen = 0  # drafts seen
        self.closed: set[str] = set()  # the requests closed (responses): calls link to them
        self.waiting: list[tuple[int, str, Tool]] = []  # not ended yet, by (start, id)
        self.by_request: dict[str | None, list[tuple[int, str]]] = {}
        self.inflight: deque[int] = deque()  # starts of the calls taken, not handed on yet
        self.written: dict[str, tuple[Any, ...]] = {}  # call id → its `_key` when taken
        self.durations = False  # the rollout has shown a command's duration

    def created(self) -> None:
        """The drafts made since the last call (the newest of `builder.tools`)."""
        tools = self.builder.tools
        new = len(tools) - self.seen
        self.seen = len(tools)
        drafts = (
            (next(reversed(tools.values())),)
            if new == 1
            else reversed(list(islice(reversed(tools.values()), new)))
        )
        for draft in drafts:
            heapq.heappush(self.waiting, (draft.start_ns, draft.call_id, draft))
            self.by_request.setdefault(draft.response_id, []).append(
                (draft.start_ns, draft.call_id)
            )

    def of(self, request_id: str, request_start: int) -> list[str]:
        """The ids of the calls a request started, in layout order (start, id)."""
        started = self.by_request.pop(request_id, [])
        started.sort()
        if started and started[0][0] < request_start:
            raise NotHandled("a call that starts before its request")  # (no flow: linked)
        return [call_id for _, call_id in started]

    def _end(self, draft: Tool) -> int | None:
        if draft.duration_ns is not None:
            return draft.start_ns + draft.duration_ns  # (the session's end may cut it: check)
        if draft.end_ns is None or (self.durations and draft.name in COMMANDS):
            return None
        return draft.end_ns

    def ended(self) -> list[tuple[ToolCall, int]]:
        """At a request's close: the calls first in start order that are known ended,
        made the model's calls and fitted on their lanes."""
        waiting = self.waiting
        if not waiting:
            return []
        if not self.durations:  # (a loop, not a generator: once a request while none came)
            for _, _, draft in waiting:
                if draft.duration_ns is not None:
                    self.durations = True
                    break
        taken: list[tuple[int, int, str, Tool]] = []
        while waiting:
            start = waiting[0][0]
            run = []
            for entry in waiting:  # (the heap's few entries: every one of this start)
                if entry[0] == start:
                    end = self._end(entry[2])
                    if end is None:
                        break
                    run.append((start, -end, entry[1], entry[2]))
            else:
                for _ in run:
                    heapq.heappop(waiting)
                taken.extend(sorted(run))
                continue
            break
        return self._made(taken)

    def _made(self, taken: Iterable[tuple[int, int, str, Tool]]) -> list[tuple[ToolCall, int]]:
        place, closed, written, inflight = self.tools.lanes.place, self.closed, self.written, []
        made = []
        for _, minus_end, _, draft in taken:
            call = draft.finish(
                closed, -minus_end, timing=DURATION if draft.duration_ns is not None else ""
            )
            written[call.call_id] = _key(call)
            lane, _ = place(call.start_ns, call.end_ns)
            made.append((call, lane))
            inflight.append(call.start_ns)
        self.inflight.extend(inflight)
        return made

    def handed(self, count: int) -> None:
        """`count` calls taken went to StreamTools (its `placed`)."""
        for _ in range(count):
            self.inflight.popleft()

    def earliest(self) -> int:
        """The start of the first call not handed to StreamTools yet (or far ahead)."""
        found = self.waiting[0][0] if self.waiting else 1 << 70
        return min(found, self.inflight[0]) if self.inflight else found

    def rest(self, session_end: int) -> list[tuple[ToolCall, int]]:
        """At the end: every call not taken, ended as `codex_rollout.finish` ends them."""
        taken = []
        for start, call_id, draft in sorted(self.waiting):
            if draft.duration_ns is not None:
                end = min(start + draft.duration_ns, max(session_end, start))
            elif draft.end_ns is not None:
                end = draft.end_ns
            else:
                end = max(session_end, start)
            taken.append((start, -max(end, start), call_id, draft))
        self.waiting = []
        taken.sort()
        made = self._made(taken)
        self.inflight.clear()
        return made

    def check_and_trim(self, session_end: int, needed: Container[str]) -> None:
        """Before the builder's `finish`: every call written is the call it will make of
        its draft (`_tool_end`, the error, the result: none changed since it was taken),
        and the drafts it does not need are let go, so it makes no call of them again
        (as stream/pi.py does): those `needed` (the largest additions' calls, those the
        end's snapshots name), each prompt's last to end (its turn lasts until then:
        drafts.finish_prompts) and those without an output (the session is incomplete)."""
        tools, written, closed = self.builder.tools, self.written, self.closed
        if len(tools) != len(written):
            raise NotHandled("a call written twice, or not made by the model")
        keep: set[str] = set()
        last: dict[str | None, tuple[int, str]] = {}
        for call_id, draft in tools.items():
            start = draft.start_ns
            end = max(_tool_end(draft, session_end), start)
            key = (
                call_id,
                start,
                end,
                draft.response_id if draft.response_id in closed else None,
                draft.prompt_id,
                draft.is_error,
                draft.end_ns is None,
                draft.result_chars,
                draft.child_session,
                DURATION if draft.duration_ns is not None else "",
            )
            if written.get(call_id) != key:
                raise NotHandled("a call changed after it was written")
            if draft.end_ns is None or call_id in needed:
                keep.add(call_id)
            found = last.get(draft.prompt_id)
            if found is None or end > found[0]:
                last[draft.prompt_id] = (end, call_id)
        keep.update(call_id for _, call_id in last.values())
        kept = {call_id: draft for call_id, draft in tools.items() if call_id in keep}
        tools.clear()
        tools.update(kept)
