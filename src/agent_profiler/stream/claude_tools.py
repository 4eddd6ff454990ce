"""A Claude Code transcript's tool calls and context log in the one pass
(stream/claude.py).

A Claude call ends with its result (`tool_result`, read by `tool_use_id`: it may come the
line before its call), or never: then it lasts until the session's end
(`claude_session.finish`). A call is taken once it has ended and its request is closed
(whether it became a request decides its response link), in the order first fit takes
them (start, longest first, call id); a call without a result holds those after it until
the end. Once handed on to the writing side, a call's draft is let go unless
`builder.finish` reads it (`let_go`: its id kept, and what a later cut of its result
reads); those kept are checked against the model's calls at the end (`check_and_trim`): a
call whose end, error, result or subagent came after it was taken is `NotHandled`, and
so is a result or a call read again of a draft let go.

`ClaudeCalls` and `ClaudeLog` are the reading side's (stream/claude_reading.py),
`ClaudeTools` the writing side's (stream/claude.py).

The log (`ClaudeLog`): stream/codex_log.py's `CodexLog` (handles counted from the log's
start, a replay stopping before the first observation not settled), whose observations
the pass settles as the builder's `finish` will (a request once the next one begins, a
compaction once the request after it closes), with the window guessed at the first
request: `finish` settling one again must say the same window."""

from __future__ import annotations

from collections.abc import Container, Mapping

from agent_profiler.adapters.claude_session import SessionBuilder
from agent_profiler.adapters.drafts import ToolDraft
from agent_profiler.attribution import Logged, Observation
from agent_profiler.model import ToolCall
from agent_profiler.stream.calls import UNENDED, PassCalls, call_key
from agent_profiler.stream.codex_log import SETTLED_BEFORE, CodexLog
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

    named: frozenset[str] = frozenset()  # the call ids the results named an agent for, so far

    def decide(self) -> None:
        placed = self.placed
        if placed:
            named = self.named
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

    def relink(self, children: Mapping[str, str]) -> list[ToolCall]:
        """The calls written at the end: each with the subagent the adapter linked it to
        (`children`: by call id). Returns those it changed (as written now)."""
        changed = []
        for call, _ in [*self.held.values(), *self.late]:
            child = children.get(call.call_id)
            if child != call.child_session:
                object.__setattr__(call, "child_session", child)  # (not handed on yet)
                changed.append(call)
        return changed


class ClaudeLog(CodexLog):
    """A CodexLog whose settled observations are not remembered: one replayed already
    may be settled again (by `finish`) only with the window the pass settled it with
    (its other facts are the request's, which no record changes after it closed)."""

    window: int | None = None

    def settle(self, logged: Logged, **facts: object) -> Observation:
        if logged < self.base:
            if facts.get("window_tokens") != self.window:
                raise NotHandled("an observation settled with another window after its replay")
            return SETTLED_BEFORE
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


def _end_at_finish(draft: ToolDraft, session_end: int) -> int:
    """A call's end as `claude_session.finish` ends it: its result, else the session's end."""
    return draft.end_ns if draft.end_ns is not None else session_end


class ClaudeCalls(PassCalls[ToolDraft]):
    """The transcript's calls from their drafts (`builder.tools`) to StreamTools' lanes
    (stream/calls.py: a call ends with its result, once its response closed)."""

    builder: SessionBuilder
    closed: _Requests
    HASHED = True  # (the drafts are let go once handed on: the keys were most of what is left)

    def __init__(self, builder: SessionBuilder) -> None:
        super().__init__(builder)
        self.gone = builder.gone_results  # (the builder's: a cut reads what it keeps)
        self.closed = _Requests()  # the responses closed that were requests: calls link to them
        self.open_id: str | None = None  # the response not closed yet
        self.recent: str | None = None  # the response closed last: its calls' results may come
        # Calls without a result a request later, fitted as lasting until the session's
        # end (which no later call starts after): written at the end, once it is known.
        self.unended: list[ToolDraft] = []
        self.named: set[str] = set()  # the calls whose result named a subagent
        # Each prompt's call that ends last of those written (its turn lasts until then:
        # kept; those let go are `gone`).
        self.last_of_prompt: dict[str | None, tuple[int, ToolDraft]] = {}
        self.known = _Known(builder.tools, self.gone)  # every call id read so far

    def dropped(self, response_id: str) -> None:
        """A response closed that was no request: its calls link to none."""
        self.by_request.pop(response_id, None)
        self.closed.dropped.add(response_id)

    def _end(self, draft: ToolDraft, start: int) -> int | None:
        """Taken once its response closed and it has a result, or without one once the
        request after its response closed (then lasting `FOREVER` as lanes are fitted)."""
        if draft.response_id == self.open_id:
            return None
        if draft.end_ns is None:
            return None if draft.response_id == self.recent else FOREVER
        return max(draft.end_ns, start)

    _end_at = staticmethod(_end_at_finish)

    def _finish(self, draft: ToolDraft, end: int) -> ToolCall | None:
        if end == FOREVER:  # (`_made` hands on its `Unended`)
            self.unended.append(draft)
            return None
        return draft.finish(self.closed, end)  # (its subagent: ClaudeTools.relink)

    def agent_calls(self) -> set[str]:
        """The calls whose result named a subagent (`builder.agent_results`: an agent's
        call may change, a later result naming it again)."""
        results = self.builder.agent_results
        if results:
            self.named = set(results.values())
        return self.named

    def mark(self, call: ToolCall) -> None:
        """A call written as it is now (`check_and_trim` checks it)."""
        self.written[call.call_id] = hash(call_key(call))

    def rest(self, session_end: int) -> list[tuple[ToolCall, int]]:
        """At the end: every call not taken, ended as `claude_session.finish` ends them
        (its result, else the session's end)."""
        self.open_id = None
        made = super().rest(session_end)
        for draft in self.unended:  # (a result read since: `check_and_trim` says)
            call = draft.finish(self.closed, session_end)
            self.mark(call)
            made.append((call, UNENDED))
        self.unended = []
        return made

    def hand_on(self, ended: list[tuple[ToolCall, int]]) -> None:
        """Calls taken are handed on (to the writing side), their drafts let go."""
        inflight, let_go = self.inflight, self.let_go
        for call, lane in ended:
            if lane != UNENDED:
                inflight.popleft()
                let_go(call.call_id)

    def let_go(self, call_id: str) -> None:
        """A call handed on: its draft is let go,
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
        # (what a later cut of its result reads: claude_attachments `_results_cut`)
        self.gone[draft.call_id] = -1 if draft.is_error else draft.result_chars
        self.seen -= 1

    def check_and_trim(self, session_end: int, needed: Container[str]) -> None:
        """stream/calls.py's, and none of the calls let go got a result again (those let
        go are not checked: their drafts are gone)."""
        gone = self.gone
        if any(call_id in gone for call_id in self.builder.early_results):
            raise NotHandled("a call changed after it was written (its result read again)")
        super().check_and_trim(session_end, needed)
