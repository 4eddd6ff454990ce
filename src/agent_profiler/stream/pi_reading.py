"""The reading side of the one pass over a Pi journal (stream/pi.py is the writing side):
the adapter's `SessionBuilder` fed line by line, its context log a `StreamLog` replayed
here, a batch at a time (the writing side is the busier one).

What it hands the writing side is data, never the builder (stream/codex_reading.py's
shape): every `BATCH_LINES` lines (once a message or a compaction was read since the
last), a `Batch` with the snapshots of the log's entries since the last batch and the
messages and compactions read, in order; at the end, `Ending`; once the writing side has said which
calls the end reads, the session (`finish`). So the two sides can run in one process or
in two (stream/forked.py).

A message's calls end when the conversation moves on (the next message), or at their
result: a message's calls are made the model's calls (`ToolDraft.finish`) as the next
message is handed on, from their drafts as the batch finds them, and the writing side
fits them on their lanes. The calls of the last message end with the journal.

A helper's reading is lean (stream/pi.py): the builder keeps of each response handed on
only what its `finish` reads, and (`let_go`) the entries of a chain it no longer reads; a
line that would read them again stops the reading (`ReadAgain`)."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

from agent_profiler.adapters.common import journal_clock
from agent_profiler.adapters.pi import SessionBuilder
from agent_profiler.adapters.pi_messages import Tool
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import read_jsonl
from agent_profiler.model import ContextSnapshot, Response, Session, ToolCall
from agent_profiler.stream.log import NotHandled, ReadAgain, StreamLog

# Lines read between two batches: each stage runs as a loop of its own over a few hundred
# lines, not interleaved line by line (which ran 3-4% fewer instructions than the model
# path but took 15% more time on the 50 MB bench: a third more instruction cache misses).
BATCH_LINES = 256

# A call's timing when no result ended it (adapters/pi.py `finish`).
MOVED_ON = "journal: call → next entry (no result)"
AT_END = "journal: call → end of journal (no result)"

# A message as the writing side takes it: its response (False: a message that was no
# measured request), the ids of the calls it started (sorted; None: none), the calls of
# the message before it, ended now (None: none were open). A compaction: None, its draft,
# None.
Entry = tuple[Response | bool | None, Any, list[ToolCall] | None]


class Batch(NamedTuple):
    """What the writing side needs of the lines read since the last batch."""

    snapshots: list[ContextSnapshot]  # of the log's entries since the last batch
    entries: list[Entry]  # the messages and compactions read, in the log's order
    prompts: list[tuple[str, int]]  # the prompts read since the last batch: id, start
    calls: list[str]  # the ids of the calls that run (not a failed response's), new
    start: int | None  # the session's first time so far
    project: str | None  # the session's cwd so far
    # what the first request fixes: the session's key, its provider
    key: str
    provider: str | None


class Ending(NamedTuple):
    """What only the end of the journal says, once every batch is handed on."""

    end_ns: int | None
    project: str | None
    rest: list[ToolCall]  # the last message's calls, ended with the journal
    bare: bool  # no compaction, no call that ran: a session without a request is written
    refused: str | None  # why a session with requests is not written (None: it is)


class _Sent(NamedTuple):
    """A response handed on, as the builder's `finish` reads it: its id (its calls'
    response), its turn and end (the turn's end), its model (the window assumed). A
    helper keeps this much of each instead of the response (stream/pi.py)."""

    id: str
    prompt_id: str | None
    end_ns: int
    model: str


class _AnyResponse:
    """Every response id a draft names is a response's: a Pi call names its message's id
    only when that message was a measured request."""

    def __contains__(self, response_id: object) -> bool:
        return response_id is not None


_RESPONSES = _AnyResponse()


# The entry types that read earlier entries again (a compaction's kept history, an edit's
# target, a usage record's request, a branch's summary) or start the session again.
_OFF_CHAIN = frozenset({"compaction", "context_edit", "usage", "branch_summary", "session"})


def _on_chain(builder: SessionBuilder, value: dict[str, Any]) -> bool:
    """Whether a line continues the chain of entries (its parent the last entry; v1's
    entries are linked to the one before by their reading) with a type that reads no
    earlier entry."""
    if value.get("type") in _OFF_CHAIN:
        return False
    version = builder.version
    return version is None or version < 2 or value.get("parentId") == builder.last_entry


class _ReadingLog(StreamLog):
    """The reading side's log: its entries are taken a batch at a time (`taken`) and
    replayed by the reading, not by the builder's `finish` (the snapshots of the entries
    it logs go with the session)."""

    def taken(self) -> list[Any]:
        """The entries logged since the last call, in order: the log holds them no more."""
        ops = self._ops
        if ops:
            self._ops = []
        return ops

    def replay(self, **_: object) -> list[ContextSnapshot]:
        return []


class PiReading:
    """One Pi journal read for the one pass (see the module's docstring)."""

    def __init__(
        self, path: Path, diagnostics: Diagnostics, *, lean: bool = False, let_go: bool = False
    ) -> None:
        self.path = path
        self.diagnostics = diagnostics
        # (a helper's reading: the session's responses are the writing side's, and the
        # builder keeps only what its `finish` reads of each, `_Sent`)
        self.lean = lean
        # While the session is one chain (each entry the child of the one before, no
        # compaction, edit or branch), the entries on the active path but its last are let
        # go once a batch is made: only a branch, a compaction or an edit reads them
        # again, and then the reading stops (`ReadAgain`) and the pass reads the journal
        # again keeping them (stream/requests.py `export_pass`).
        self.let_go_entries = let_go
        self.let_go_to = 0  # the path's entries let go so far
        self.log = _ReadingLog()
        self.builder = SessionBuilder(str(path), diagnostics, log=self.log)
        # messages and compactions read, until handed on: (a request, the calls begun)
        self.queue: list[tuple[Response | None, list[Tool] | None, Any]] = []
        self.compactions_seen = 0
        self.arrived = 0  # responses read
        self.tools_seen = 0  # drafts read
        self.calls: list[str] = []  # the ids of the calls that run, read since the last batch
        self.prompts_sent = 0
        self.group: list[Tool] = []  # the calls of the last message, until all end
        # calls ended by the next entry: a result read later would have ended them
        self.moved_on: list[Tool] = []
        self.lean_to = 0  # the responses made lean so far

    def let_go(self) -> None:
        """Drop the reading's state now (stream/requests.py `RequestPass.let_go`)."""
        vars(self).clear()

    def batches(self) -> Iterator[Batch]:
        """The journal read, a batch at a time; then `ending` is ready."""
        builder = self.builder
        on_record = builder.on_record
        clock = journal_clock(self.path, self.diagnostics, str(self.path))
        responses, tools, compactions, queue = (
            builder.responses,
            builder.tools,
            builder.compactions,
            self.queue,
        )
        lines = 0
        for line, value in read_jsonl(self.path, self.diagnostics):
            if self.let_go_to and value.__class__ is dict and not _on_chain(builder, value):
                raise ReadAgain("an entry off the chain of the entries let go")
            on_record(value, line, clock)
            arrived = len(responses) > self.arrived
            started = len(tools) != self.tools_seen
            if len(compactions) > self.compactions_seen:
                self.compactions_seen += 1
                queue.append((None, None, compactions[-1]))
            if arrived or started:
                # A message: queued with what only this moment tells (the calls it
                # started, open now), until its batch is made.
                response = None
                if arrived:
                    self.arrived += 1
                    response = responses[-1]
                drafts: list[Tool] | None = None
                if started:  # (the open calls are the message's own)
                    self._new_calls(tools)
                    drafts = [t for t in builder.open_tools if not t.from_failed_response]
                queue.append((response, drafts, None))
            lines += 1
            if lines >= BATCH_LINES and queue:
                yield self._batch()
                lines = 0
        yield self._batch()

    def _new_calls(self, tools: dict[str, Tool]) -> None:
        """The calls read since the last look: those that run are Tools slices (a failed
        response's call that got a result makes the pass fall back, `ending`)."""
        new = len(tools) - self.tools_seen
        self.tools_seen = len(tools)
        made = islice(reversed(tools.values()), new)  # (the last ones: not a list of all)
        self.calls += reversed([t.call_id for t in made if not t.from_failed_response])

    def _batch(self) -> Batch:
        """The log's entries since the last batch, with the messages and compactions
        queued: each message ending the calls of the one before it (as the batch finds
        their drafts) and starting its own."""
        entries: list[Entry] = []
        for response, drafts, compaction in self.queue:
            if compaction is not None:
                entries.append((None, compaction, None))
                continue
            ended = self._ended() if self.group else None
            started = None
            if response is not None and drafts:
                started = sorted(t.call_id for t in drafts if t.response_id == response.id)
            if drafts is not None:  # its calls (those that run: not a failed response's)
                self.group = list(drafts)  # (the last message's ended above)
            entries.append((response if response is not None else False, started, ended))
        self.queue.clear()
        builder = self.builder
        if self.lean:
            responses = builder.responses
            for index in range(self.lean_to, len(responses)):
                r = responses[index]
                responses[index] = _Sent(r.id, r.prompt_id, r.end_ns, r.model)  # type: ignore[call-overload]
            self.lean_to = len(responses)
        prompts = builder.prompts
        new_prompts = [(p.id, p.start_ns) for p in prompts[self.prompts_sent :]]
        self.prompts_sent = len(prompts)
        calls, self.calls = self.calls, []
        if self.let_go_entries:
            self._let_go()
        ops = self.log.taken()
        return Batch(
            self.log.snapshots_of(ops) if ops else [],
            entries,
            new_prompts,
            calls,
            builder.start_ns,
            builder.project,
            builder.session_id or Path(builder.path).name.split(".")[0],
            builder.providers[0] if builder.providers else builder.header_provider,
        )

    def _let_go(self) -> None:
        """The entries on the active path but its last let go (their ids stay, so a
        repeated id is still told), and the lines' ids (only a compaction reads them)."""
        builder = self.builder
        path, entries = builder.branch.path, builder.entries
        end = len(path) - 1
        if end <= self.let_go_to:
            return
        gone: Any = None  # (what a key holds once its entry is let go: pi_facts reads it)
        for entry_id in path[self.let_go_to : end]:
            entries[entry_id] = gone
        self.let_go_to = end
        builder.line_ids.clear()

    def _ended(self, session_end: int | None = None) -> list[ToolCall]:
        """The last message's calls, all ended (the conversation moved on, or the journal
        ended at `session_end`): each made the model's call."""
        calls = []
        for draft in self.group:
            if draft.end_ns is not None:
                end, timing = draft.end_ns, ""
            elif draft.moved_on_ns is not None:
                end, timing = draft.moved_on_ns, MOVED_ON
                self.moved_on.append(draft)
            elif session_end is not None:
                end, timing = session_end, AT_END
            else:
                raise NotHandled("a call still open when the next request was read")
            calls.append(draft.finish(_RESPONSES, end, timing=timing))
        self.group = []
        return calls

    def ending(self) -> Ending:
        """Once every batch is handed on: what only the end says."""
        builder = self.builder
        tools = builder.tools
        refused = None
        if any(t.from_failed_response and t.end_ns is not None for t in tools.values()):
            # Its response's flows were written without it (a failed response's calls
            # never ran, as a rule).
            refused = "a call of a failed response with a result"
        elif any(draft.end_ns is not None for draft in self.moved_on):
            refused = "a call's result read after the conversation moved on"
        end = builder.end_ns
        rest = self._ended(end) if self.group and end is not None else []
        bare = not builder.compactions and all(t.from_failed_response for t in tools.values())
        return Ending(end, builder.project, rest, bare, refused)

    def check(self) -> None:
        """Nothing to check while the writing side ends: `finish` trims the calls."""

    def finish(self, needed: set[str] | None) -> tuple[Session, list[Any]]:
        """The session, once the writing side said which calls the end reads (`needed`:
        those of the largest additions; None: every call, a compaction's `context` reads
        them all); its snapshots are the writing side's, with the log's entries logged
        at the end (a session without a request observes its context then) to be
        replayed there."""
        if needed is not None:
            self._trim(needed)
        session = self.builder.finish()
        if session is None:
            raise NotHandled("no session")
        ops = self.log.taken()
        return session, self.log.snapshots_of(ops) if ops else []

    def _trim(self, causes: set[str]) -> None:
        """The drafts `builder.finish` needs, the others let go before it makes a call of
        each again: those of the largest additions (the end lays them out), each prompt's
        last to end (its turn lasts until then: drafts.finish_prompts), and those without
        a result that the session's facts count (not run, or still open)."""
        builder = self.builder
        session_end = builder.end_ns
        keep: dict[str, Tool] = {}
        last: dict[str, tuple[int, Tool]] = {}
        for call_id, draft in builder.tools.items():
            if draft.end_ns is None:
                if draft.from_failed_response:  # (never made a call: counted as not run)
                    keep[call_id] = draft
                    continue
                if draft.moved_on_ns is None:
                    keep[call_id] = draft  # still open: the session is incomplete
            if call_id in causes:
                keep[call_id] = draft
            if draft.prompt_id is not None:
                end = draft.end_ns or draft.moved_on_ns or session_end or 0
                found = last.get(draft.prompt_id)
                if found is None or end > found[0]:
                    last[draft.prompt_id] = (end, draft)
        for _, draft in last.values():
            keep.setdefault(draft.call_id, draft)
        builder.tools.clear()
        builder.tools.update(keep)


__all__ = ["AT_END", "BATCH_LINES", "MOVED_ON", "Batch", "Ending", "PiReading"]
