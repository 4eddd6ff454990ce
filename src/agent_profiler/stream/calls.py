"""A journal's tool calls from their drafts to stream/tools.py `StreamTools`, as the one
passes over Codex and Claude Code take them (stream/codex_tools.py, stream/claude_tools.py):
each draft waits, by (start, id), until its harness says it has ended; at a request's
close the calls first in start order that have are made the model's calls, in the order
first fit takes them (start, longest first, call id), and fitted on their lanes; what was
made of each is remembered (`written`) and checked against the model's calls at the end
(`check_and_trim`), which then lets go of the drafts the builder's `finish` does not need.

What differs by harness is a subclass's: when a draft has ended (`_end`, `_end_at`), the
call made of it (`_finish`), its timing, and whether `written` keeps a call's key or its
hash."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Container, Iterable
from itertools import islice
from typing import Any, Generic, NamedTuple, TypeVar

from agent_profiler.adapters.drafts import ToolDraft
from agent_profiler.model import ToolCall
from agent_profiler.stream.log import NotHandled

D = TypeVar("D", bound=ToolDraft)

# The start of no call: later than any.
LATER = 1 << 70
# The lane of a call the reading side took without an end (Claude Code's, without a
# result a request later: stream/claude_tools.py): the writing side fits it as lasting
# to the session's end where its `Unended` comes, and gives the call that lane at the end.
UNENDED = -2


class Unended(NamedTuple):
    """A call taken without an end, in the order the calls are fitted (lane `UNENDED`)."""

    call_id: str
    start_ns: int


def call_key(call: ToolCall) -> tuple[Any, ...]:
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


class PassCalls(Generic[D]):
    """The calls of one journal from its builder's drafts (`builder.tools`) to StreamTools'
    lanes (see the module's docstring)."""

    # Whether `written` keeps the hash of a call's key rather than the key: a long Claude
    # Code session's keys were much of the pass's memory (its drafts are let go once
    # written); Codex keeps the keys (its drafts are all held to the end anyway).
    HASHED = False
    # A draft's end at the session's end (its harness's `finish`), before its start is
    # taken into account: a function of (draft, session end), not a method (one call
    # less a draft; Codex's is the adapter's own).
    _end_at: Callable[[Any, int], int]

    def __init__(self, builder: Any) -> None:
        self.builder = builder
        self.seen = 0  # drafts seen
        self.closed: Container[str] = set()  # the requests closed (responses): calls link to them
        self.waiting: list[tuple[int, str, D]] = []  # not taken yet, by (start, id)
        self.by_request: dict[str | None, list[tuple[int, str]]] = {}
        self.inflight: deque[int] = deque()  # starts of the calls taken, not handed on yet
        self.written: dict[str, object] = {}  # call id → its `call_key` (or its hash) when taken
        # The calls handed on whose drafts were let go (Claude Code's `let_go`, which keeps
        # a value for each; Codex lets none go before the end): a draft of one of their
        # ids again is NotHandled.
        self.gone: dict[str, Any] = {}  # (a dict: 40% of a set's memory)

    # ------------------------------------------------------------------ a harness's own

    def _end(self, draft: D, start: int) -> int | None:
        """A waiting draft's end, once it may be taken at a request's close (None: not yet;
        it holds the calls after it)."""
        raise NotImplementedError

    def _finish(self, draft: D, end: int) -> ToolCall | None:
        """The model's call of a draft taken (None: it waits, fitted, for the end)."""
        raise NotImplementedError

    def _timing(self, draft: D) -> str:
        """The timing the call of a draft says (ToolCall.timing)."""
        return ""

    # ------------------------------------------------------------------ shared

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

    def ended(self) -> list[tuple[ToolCall, int]]:
        """At a request's close: the calls first in start order that may be taken (`_end`),
        made the model's calls and fitted on their lanes."""
        waiting = self.waiting
        if not waiting:
            return []
        end_of = self._end
        taken: list[tuple[int, int, str, D]] = []
        while waiting:
            start = waiting[0][0]
            run = []
            for entry in waiting:  # (the heap's few entries: every one of this start)
                if entry[0] == start:
                    end = end_of(entry[2], start)
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

    def _made(self, taken: Iterable[tuple[int, int, str, D]]) -> list[tuple[ToolCall, int]]:
        """The calls of the drafts taken, each with lane -1 (the writing side fits them,
        in this order; a call taken without an end is its `Unended` there)."""
        written, finish, inflight = self.written, self._finish, []
        hashed = self.HASHED
        made: list[tuple[Any, int]] = []
        for _, minus_end, _, draft in taken:
            call = finish(draft, -minus_end)
            if call is None:  # (fitted by the writing side, in this order)
                made.append((Unended(draft.call_id, draft.start_ns), UNENDED))
                continue
            written[call.call_id] = hash(call_key(call)) if hashed else call_key(call)
            made.append((call, -1))
            inflight.append(call.start_ns)
        self.inflight.extend(inflight)
        return made

    def hand_on(self, ended: list[tuple[ToolCall, int]]) -> None:
        """Calls taken are handed on to the writing side (its StreamTools' `placed`,
        decided at the next snapshot)."""
        inflight = self.inflight
        for _ in ended:
            inflight.popleft()

    def rest(self, session_end: int) -> list[tuple[ToolCall, int]]:
        """At the end: every call not taken, ended as the harness's `finish` ends them."""
        end_at = self._end_at
        taken = []
        for start, call_id, draft in sorted(self.waiting):
            taken.append((start, -max(end_at(draft, session_end), start), call_id, draft))
        self.waiting = []
        taken.sort()
        made = self._made(taken)
        self.inflight.clear()
        return made

    def check_and_trim(self, session_end: int, needed: Container[str]) -> None:
        """Before the builder's `finish`: every call written whose draft is kept is the
        call it will make of it (`check`), and the drafts it does not need are let go
        (`trim`)."""
        self.trim(self.check(session_end), needed)

    def check(self, session_end: int) -> set[str]:
        """Every call written is the call the builder's `finish` will make of its draft
        (none changed since it was taken). Returns the drafts `finish` needs whatever the
        end reads: each prompt's last to end (its turn lasts until then:
        drafts.finish_prompts) and those without an end (the session is incomplete)."""
        tools, written, closed = self.builder.tools, self.written, self.closed
        if len(tools) != len(written):
            raise NotHandled("a call written twice, or not made by the model")
        end_at, timing, hashed = self._end_at, self._timing, self.HASHED
        keep: set[str] = set()
        last: dict[str | None, tuple[int, str]] = {}
        for call_id, draft in tools.items():
            start = draft.start_ns
            end = max(end_at(draft, session_end), start)
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
                timing(draft),
            )
            if written.get(call_id) != (hash(key) if hashed else key):
                raise NotHandled("a call changed after it was written")
            if draft.end_ns is None:
                keep.add(call_id)
            found = last.get(draft.prompt_id)
            if found is None or end > found[0]:
                last[draft.prompt_id] = (end, call_id)
        keep.update(call_id for _, call_id in last.values())
        return keep

    def trim(self, kept: set[str], needed: Container[str]) -> None:
        """The drafts the builder's `finish` does not need let go, so it makes no call of
        them again: all but those `kept` (`check`) and those `needed` (the largest
        additions' calls, those the end's snapshots name)."""
        tools = self.builder.tools
        left = {
            call_id: draft
            for call_id, draft in tools.items()
            if call_id in kept or call_id in needed
        }
        tools.clear()
        tools.update(left)
