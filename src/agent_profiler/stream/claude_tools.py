"""A Claude Code transcript's tool calls and context log in the one pass
(stream/claude.py).

A Claude call ends with its result (`tool_result`, read by `tool_use_id`: it may come the
line before its call), or never: then it lasts until the session's end
(`claude_session.finish`). A call is taken once it has ended and its request is closed
(whether it became a request decides its response link), in the order first fit takes
them (start, longest first, call id); a call without a result holds those after it until
the end. Once written, a call's draft is let go unless `builder.finish` reads it
(`let_go`: its id kept); those kept are checked against the model's calls at the end
(`check_and_trim`): a call whose end, error, result or subagent came after it was written
is `NotHandled`, and so is a result or a call read again of a draft let go.

The log (`ClaudeLog`): stream/codex_log.py's `CodexLog` (handles counted from the log's
start, a replay stopping before the first observation not settled), whose observations
the pass settles as the builder's `finish` will (a request once the next one begins, a
compaction once the request after it closes), with the window guessed at the first
request: `finish` settling one again must say the same window."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Container, Iterable, Mapping
from itertools import islice
from typing import Any

from agent_profiler.adapters.claude_session import SessionBuilder
from agent_profiler.adapters.drafts import ToolDraft
from agent_profiler.attribution import Logged, Observation
from agent_profiler.model import ToolCall
from agent_profiler.stream.codex_log import CodexLog
from agent_profiler.stream.log import NotHandled
from agent_profiler.stream.tools import StreamTools

# The end of a call without a result as lanes are fitted: the session's end, which no
# later call starts after.
FOREVER = 1 << 70


class ClaudeTools(StreamTools):
    """StreamTools whose calls that launched a subagent (their result names its agent id)
    are written at the end: the adapter links a subagent to the last call whose result
    named it (claude_code._link_subagents), which a later result may change. Their ends
    are written as they come, their begins at the end (as the calls of the largest
    additions), once `relink` gave each its subagent."""

    named: Callable[[], Container[str]]  # the call ids the results named an agent for
    let_go: Callable[[str], None]  # a call written: its draft let go (ClaudeCalls.let_go)

    def decide(self) -> None:
        placed = self.placed
        if placed:
            named = self.named()
            if named:
                causes, late, rest = self.additions.causes, self.late, []
                for call, lane in placed:
                    if call.call_id in named and call.call_id not in causes:
                        if call.end_ns > call.start_ns:
                            self.events.end_of(self.track(lane), call.start_ns, call.end_ns)
                        late.append((call, lane))
                    else:
                        rest.append((call, lane))
                self.placed = rest
        super().decide()

    def _write(self, call: ToolCall, lane: int, out: tuple[int, ...], end: bool = True) -> None:
        super()._write(call, lane, out, end)
        if call.call_id not in self.additions.causes:
            self.let_go(call.call_id)

    def relink(self, tools: Mapping[str, ToolDraft], written: dict[str, int]) -> None:
        """The calls written at the end: each with the subagent the adapter linked it to."""
        for call, _ in [*self.held.values(), *self.late]:
            draft = tools.get(call.call_id)
            child = draft.child_session if draft is not None else None
            if child != call.child_session:
                object.__setattr__(call, "child_session", child)  # (not handed on yet)
                written[call.call_id] = hash(_key(call))


class ClaudeLog(CodexLog):
    """A CodexLog whose settled observations are not remembered: one replayed already
    may be settled again (by `finish`) only with the window the pass settled it with
    (its other facts are the request's, which no record changes after it closed)."""

    window: int | None = None

    def settle(self, logged: Logged, **facts: object) -> Observation:
        if logged < self.base:
            if facts.get("window_tokens") != self.window:
                raise NotHandled("an observation settled with another window after its replay")
            return Observation.request(0, "")
        return super().settle(logged, **facts)

    def settle_early(self, logged: Logged, **facts: object) -> None:
        """Settle an observation as the builder's `finish` will (not remembered: a
        request's facts were one a request, the pass's most per-request memory)."""
        self.settle(logged, **facts)


class _Known:
    """The call ids read so far, as a container: the drafts held and those let go."""

    __slots__ = ("gone", "tools")

    def __init__(self, tools: Mapping[str, ToolDraft], gone: Container[str]) -> None:
        self.tools = tools
        self.gone = gone

    def __contains__(self, call_id: object) -> bool:
        return call_id in self.tools or call_id in self.gone


class _Requests:
    """The responses that were requests, as a container: those closed but the few that
    were not (a call is taken only once its response closed; the pass falls back for a
    response without usage but Claude Code's `<synthetic>` reply). A set of every
    request's id was the pass's largest per-request set."""

    __slots__ = ("dropped",)

    def __init__(self) -> None:
        self.dropped: set[str] = set()

    def __contains__(self, response_id: object) -> bool:
        return response_id not in self.dropped


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
    )


class ClaudeCalls:
    """The transcript's calls from their drafts (`builder.tools`) to StreamTools' lanes."""

    def __init__(self, builder: SessionBuilder, tools: StreamTools) -> None:
        self.builder = builder
        self.tools = tools
        self.seen = 0  # drafts seen
        self.closed = _Requests()  # the responses closed that were requests: calls link to them
        self.open_id: str | None = None  # the response not closed yet
        self.recent: str | None = None  # the response closed last: its calls' results may come
        # Calls without a result a request later, placed as lasting until the session's
        # end (which no later call starts after): written at the end, once it is known.
        self.unended: list[tuple[ToolDraft, int]] = []
        self.waiting: list[tuple[int, str, ToolDraft]] = []  # not taken yet, by (start, id)
        self.by_request: dict[str | None, list[tuple[int, str]]] = {}
        self.inflight: deque[int] = deque()  # starts of the calls taken, not handed on yet
        self.written: dict[str, int] = {}  # call id → the hash of its `_key` when taken
        self.named: set[str] = set()  # the calls whose result named a subagent
        # The calls written whose drafts were let go (`let_go`), and each prompt's call
        # that ends last of those written (its turn lasts until then: kept).
        self.gone: dict[str, None] = {}  # (a dict: 40% of a set's memory)
        self.last_of_prompt: dict[str | None, tuple[int, ToolDraft]] = {}
        self.known = _Known(builder.tools, self.gone)  # every call id read so far

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
        gone = self.gone
        for draft in drafts:
            if draft.call_id in gone:  # (the model keeps the first draft of an id)
                raise NotHandled("a call read again after it was written")
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

    def dropped(self, response_id: str) -> None:
        """A response closed that was no request: its calls link to none."""
        self.by_request.pop(response_id, None)
        self.closed.dropped.add(response_id)

    def ended(self) -> list[tuple[ToolCall, int]]:
        """At a request's close: the calls first in start order that have ended and whose
        response is closed, made the model's calls and fitted on their lanes."""
        waiting = self.waiting
        if not waiting:
            return []
        open_id, recent = self.open_id, self.recent
        taken: list[tuple[int, int, str, ToolDraft]] = []
        while waiting:
            start = waiting[0][0]
            run = []
            for entry in waiting:  # (the heap's few entries: every one of this start)
                if entry[0] == start:
                    draft = entry[2]
                    if draft.response_id == open_id:
                        break
                    if draft.end_ns is None:
                        if draft.response_id == recent:
                            break
                        run.append((start, -FOREVER, entry[1], draft))
                        continue
                    run.append((start, -max(draft.end_ns, start), entry[1], draft))
            else:
                for _ in run:
                    heapq.heappop(waiting)
                taken.extend(sorted(run))
                continue
            break
        return self._made(taken)

    def agent_calls(self) -> set[str]:
        """The calls whose result named a subagent (`builder.agent_results`: an agent's
        call may change, a later result naming it again)."""
        results = self.builder.agent_results
        if results:
            self.named = set(results.values())
        return self.named

    def _made(self, taken: Iterable[tuple[int, int, str, ToolDraft]]) -> list[tuple[ToolCall, int]]:
        place, closed, written, inflight = self.tools.lanes.place, self.closed, self.written, []
        made = []
        for _, minus_end, _, draft in taken:
            if minus_end == -FOREVER:
                lane, _ = place(draft.start_ns, FOREVER)
                self.unended.append((draft, lane))
                continue
            call = draft.finish(closed, -minus_end)  # (its subagent: ClaudeTools.relink)
            written[call.call_id] = hash(_key(call))
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
        """At the end: every call not taken, ended as `claude_session.finish` ends them
        (its result, else the session's end)."""
        self.open_id = None
        taken = []
        for start, call_id, draft in sorted(self.waiting):
            end = draft.end_ns if draft.end_ns is not None else session_end
            taken.append((start, -max(end, start), call_id, draft))
        self.waiting = []
        taken.sort()
        made = self._made(taken)
        for draft, lane in self.unended:  # (a result read since: `check_and_trim` says)
            call = draft.finish(self.closed, session_end)
            self.written[call.call_id] = hash(_key(call))
            made.append((call, lane))
        self.unended = []
        self.inflight.clear()
        return made

    def let_go(self, call_id: str) -> None:
        """A call written (not among the largest additions' calls): its draft is let go,
        unless `builder.finish` still reads it (no result, it launched a subagent, its
        prompt's last to end so far); a later result of it is `NotHandled` at the end
        (`check_and_trim`), a second call of its id at once (`created`)."""
        tools = self.builder.tools
        draft = tools.get(call_id)
        if draft is None or draft.end_ns is None or call_id in self.named:
            return
        end = max(draft.end_ns, draft.start_ns)
        last = self.last_of_prompt.get(draft.prompt_id)
        if last is None or end > last[0]:
            self.last_of_prompt[draft.prompt_id] = (end, draft)
            if last is None:
                return
            draft = last[1]  # (the one it replaces goes instead)
        del tools[draft.call_id]
        self.written.pop(draft.call_id, None)
        self.gone[draft.call_id] = None
        self.seen -= 1

    def check_and_trim(self, session_end: int, needed: Container[str]) -> None:
        """Before the builder's `finish`: every call written whose draft is kept is the
        call it will make of it (none changed since it was taken; none let go got a result
        again), and the drafts it does not need are
        let go, so it makes no call of them again: those `needed` (the largest additions'
        calls, those the end's snapshots name), each prompt's last to end (its turn lasts
        until then: drafts.finish_prompts) and those without a result (the session is
        incomplete)."""
        tools, written, closed = self.builder.tools, self.written, self.closed
        if len(tools) != len(written):
            raise NotHandled("a call written twice, or not made by the model")
        gone = self.gone
        if any(call_id in gone for call_id in self.builder.early_results):
            raise NotHandled("a call changed after it was written (its result read again)")
        keep: set[str] = set()
        last: dict[str | None, tuple[int, str]] = {}
        for call_id, draft in tools.items():
            start = draft.start_ns
            end = max(draft.end_ns if draft.end_ns is not None else session_end, start)
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
            )
            if written.get(call_id) != hash(key):
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
