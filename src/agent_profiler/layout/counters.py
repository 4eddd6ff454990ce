"""One session's counters and the largest additions to its context, as functions of the
model: the request counters (Context size, window and fill, cumulative Input and Output
tokens) made from the model when read, the `Context: *` categories kept as their changes
(`session_counters`); at most ten `Largest additions` instants, each with a flow from the
tool call that caused it (`largest_additions`); and a planned counter's series, its
closing zero included (`series`)."""

from __future__ import annotations

import bisect
import itertools
import operator
from array import array
from collections.abc import Callable, Iterator, Sequence
from functools import cached_property, partial
from typing import Any

from agent_profiler.layout.planning import PlannedCounter, int64s, kept_samples, steps
from agent_profiler.layout.types import (
    R_COUNTER,
    R_COUNTER_CLOSE,
    R_COUNTER_OPEN,
    CounterSeries,
    Remade,
    Sample,
    stable_id64,
)
from agent_profiler.model import Category, Response, Session, ToolCall, frozen
from agent_profiler.sorting import by_first
from agent_profiler.targets import shown
from agent_profiler.views import (
    iter_context_size,
    largest_tool_additions,
    response_windows,
    snapshots_in_time_order,
)

MAX_ADDITION_INSTANTS = 10
# Context categories in the contract's fixed order (the head of a request first, then the
# conversation, Unattributed last), the same in every session; they are still declared
# in order of first appearance (TRACE_CONTRACT §6).
CATEGORY_RANK = {category.label: rank for rank, category in enumerate(Category)}
# The group the context categories' counters sit in (a group row of the track table).
CONTEXT_GROUP = "Context"


def session_counters(
    session: Session,
    start: int,
    responses: Sequence[Response],
    estimate_note: str,
    windows: array[int] | None = None,
) -> tuple[list[PlannedCounter], int]:
    """The session's counters in the order they are declared (the request counters, then
    each context category as it first appears), and the time of their last sample (the
    session's start when there is none): the session ends after it. `windows`: the
    window at each response (views.response_windows), when the caller has it already.
    The request counters' samples are worked out when first read (`_Requests`): the
    end of a one-pass export (stream/end.py) reads only the counters' names and the time
    of the last sample, and the pass wrote the samples already."""
    made = _Requests(session, responses, windows)
    counters = [
        PlannedCounter(
            "Context size", partial(made.size_samples, start), share=True, keep_repeats=True
        )
    ]
    window = session.window_tokens
    if window:
        # Its own y axis (no share key): on a 1M-token window a 40k-token context drawn on
        # the window's scale is one pixel tall (issue 29).
        counters.append(PlannedCounter("Context window", partial(made.window_samples, start)))
        counters.append(PlannedCounter("Context fill", partial(made.fill_samples, start)))
    counters.append(PlannedCounter("Input tokens", partial(made.usage_samples, start, _INPUT)))
    counters.append(PlannedCounter("Output tokens", partial(made.usage_samples, start, _OUTPUT)))
    # The last sample's time, from the model's maxima: the usage's at the last end, the
    # window's at the last start (with or without usage), the Context size series' (a
    # response's start, before its end; a compaction's start where its size before is
    # known, its end where its size after is the harness's own, else the next request's,
    # whose start is at or after it: views.iter_context_size).
    last = start
    for compaction in session.compactions:
        if compaction.pre_tokens is not None:
            last = max(last, compaction.start_ns)
        if compaction.post_tokens is not None:
            last = max(last, compaction.end_ns)
    if window and responses:
        last = max(last, responses[-1].start_ns)
    ends = [*map(_END_NS, session.responses), *map(_END_NS, made.compaction_requests)]
    last = max(last, max(ends, default=last))
    latest = _context_counters(session, estimate_note, counters)
    if latest is not None:  # its repeats were dropped, not its time
        last = max(last, latest)
    return counters, last


class _Requests:
    """The request counters' samples of one session, worked out when first read and kept
    (each is read for more than one counter, and a series may be read more than once):
    the Context size series as two arrays (16 bytes a request) and the fill beside it,
    the window at each response, the responses in end order for the cumulative usage."""

    def __init__(
        self, session: Session, responses: Sequence[Response], windows: array[int] | None
    ) -> None:
        self.session = session
        self.responses = responses
        if windows is not None:  # (the caller's, in the cached property's place)
            self.response_windows = windows
        # Compaction requests consume tokens without being a turn.
        self.compaction_requests = [c.request for c in session.compactions if c.request is not None]

    @cached_property
    def sizes(self) -> tuple[array[int], array[int]]:
        """The Context size series: its times and its tokens."""
        sizes = list(iter_context_size(self.session))
        return int64s(list(map(_FIRST, sizes))), int64s(list(map(_SECOND, sizes)))

    @cached_property
    def response_windows(self) -> array[int]:
        """The window at each request: the journal's there (a session that switched models
        switched windows; the session's one value drew gpt-5.3-codex-spark's requests on
        gpt-5.5's window), else the session's."""
        return response_windows(self.session, self.responses)

    @cached_property
    def fill(self) -> array[int]:
        """Context fill at each Context size sample, in percent rounded up."""
        times, tokens = self.sizes
        windows = self.response_windows
        distinct = set(windows)
        window = self.session.window_tokens or 0  # (made only where there is one)
        if len(distinct) > 1:
            at = _windows_at(times, self.responses, windows, window)
            return int64s([-(-size * 100 // w) for size, w in zip(tokens, at, strict=True)])
        # one window throughout (nearly every session): no lookup per sample
        (one,) = distinct or {window}
        return int64s([-(-size * 100 // one) for size in tokens])

    @cached_property
    def finished(self) -> list[Response]:
        """The responses and compaction requests in end order."""
        return by_first(
            [*self.session.responses, *self.compaction_requests], _END_NS, _FINISHED_ORDER
        )

    def size_samples(self, start: int) -> Iterator[Sample]:
        times, tokens = self.sizes
        return _opened(start, times, tokens)

    def fill_samples(self, start: int) -> Iterator[Sample]:
        return _opened(start, self.sizes[0], self.fill)

    def window_samples(self, start: int) -> Iterator[Sample]:
        # Responses whose usage the journal left at zero are drawn too (usage unknown).
        return itertools.chain(
            ((start, R_COUNTER_OPEN, 0),),
            zip(map(_START_NS, self.responses), itertools.repeat(R_COUNTER), self.response_windows),
        )

    def usage_samples(self, start: int, tokens: Callable[[Response], int]) -> Iterator[Sample]:
        """The running total of `tokens` at each response's end, in end order (so it never
        goes down), compaction requests included."""
        finished = self.finished
        return itertools.chain(
            ((start, R_COUNTER_OPEN, 0),),
            zip(
                map(_END_NS, finished),
                itertools.repeat(R_COUNTER),
                itertools.accumulate(map(tokens, finished)),
            ),
        )


def _opened(start: int, times: array[int], values: array[int]) -> Iterator[Sample]:
    """A 0 at the start, then each (time, value) (Context size, Context fill)."""
    return itertools.chain(((start, R_COUNTER_OPEN, 0),), kept_samples(times, values))


# The request counters' samples are made by C iterators (zip, map, accumulate over the
# model or the arrays above), not by a generator of their own: a sample each per request.
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
_FINISHED_ORDER = operator.attrgetter("end_ns", "start_ns", "id")
_START_NS, _END_NS = operator.attrgetter("start_ns"), operator.attrgetter("end_ns")
_INPUT = operator.attrgetter("usage.input_tokens")
_OUTPUT = operator.attrgetter("usage.output_tokens")


def _windows_at(
    times: array[int], responses: Sequence[Response], windows: array[int], window: int
) -> list[int]:
    """The window in effect at each time: that of the last request started at or before
    it (the first request's before it)."""
    starts = list(map(_START_NS, responses))
    found = []
    for time in times:
        index = bisect.bisect_right(starts, time) - 1
        found.append(windows[max(index, 0)] if windows else window)
    return found


def _context_counters(
    session: Session, estimate_note: str, counters: list[PlannedCounter]
) -> int | None:
    """A counter per context category (appended to `counters` as it first appears), with
    a sample per category present so far at each snapshot, in time order, except one that
    repeats the counter's previous sample (a step function would drop it): only the
    changes are kept, as a time and a value in two arrays, and the samples are made from
    them when read. Returns the time of the last snapshot sampled (None: none was), since
    the session's end depends on it whether or not its samples were kept."""
    description = (
        f"Tokens of this context category at each observed snapshot ({estimate_note}; "
        "native counts where the journal has them)."
    )
    kept: dict[Category, tuple[array[int], array[int]]] = {}
    last: dict[Category, int] = {}  # each category's last value kept
    latest: int | None = None
    previous: object = None
    for snapshot in snapshots_in_time_order(session):
        categories = snapshot.categories
        if categories is previous:
            # The replay hands on the previous snapshot's tuple when no total moved
            # (attribution_replay._shared): no value changes, only the time goes on.
            if kept:
                latest = snapshot.time_ns
            continue
        previous = categories
        present = dict(categories)
        time = snapshot.time_ns
        for category, value in present.items():
            if category not in kept:
                times, values = array("q"), array("q")
                counters.append(
                    PlannedCounter(
                        f"Context: {category.label}",
                        partial(kept_samples, times, values),
                        group=CONTEXT_GROUP,
                        share=True,
                        description=description,
                        rank=CATEGORY_RANK.get(category.label, len(CATEGORY_RANK)),
                    )
                )
                kept[category] = times, values
            elif last[category] == value:
                continue
            times, values = kept[category]
            times.append(time)
            values.append(value)
            last[category] = value
        if len(present) < len(kept):  # categories gone since: a 0 (once)
            for category, (times, values) in kept.items():
                if category not in present and last[category] != 0:
                    times.append(time)
                    values.append(0)
                    last[category] = 0
        if kept:
            latest = time  # in time order: the latest so far
    return latest


def series(counter: PlannedCounter, uuid: int, end: int) -> CounterSeries:
    """A counter's series: its samples and the closing zero at the session's end, as a
    step function (`steps`), made when read."""
    closing = ((end, R_COUNTER_CLOSE, 0),)
    made, keep_repeats = counter.made, counter.keep_repeats

    def samples() -> Iterator[Sample]:
        return steps(itertools.chain(made(), closing), keep_repeats)

    return CounterSeries(uuid, counter.name, Remade(samples))


@frozen
class AdditionInstant:
    """One `Largest additions` instant: its name, time, arguments and the flow from its
    tool call (0: none, as it would point back in time)."""

    name: str
    time: int
    args: dict[str, Any]
    flow: int


def largest_additions(
    key: str, session: Session, calls: Sequence[ToolCall], redact: bool, estimate_note: str
) -> tuple[list[AdditionInstant], dict[int, tuple[int, ...]]]:
    """The instants, and the flows they add to the tool calls (by index in `calls`).
    Only additions a tool call caused, at most ten: an instant here exists to carry a flow
    arrow from its tool call, and ten arrows are what a reader can follow. The report
    lists every addition, the summary the largest of each request (views.py)."""
    caused = largest_tool_additions(session, MAX_ADDITION_INSTANTS)
    wanted = {a.change.source_id for a in caused}
    last_call = {call.call_id: i for i, call in enumerate(calls) if call.call_id in wanted}
    instants: list[AdditionInstant] = []
    flows: dict[int, tuple[int, ...]] = {}
    for rank, addition in enumerate(caused, start=1):
        change, snapshot = addition.change, addition.snapshot
        index = last_call[change.source_id]
        tool = calls[index]
        # No `kind` and no `context` here: Agent Profiler's tables must skip these
        # (TRACE_CONTRACT §9); they exist for ui.perfetto.dev's flow arrows. The tool's
        # target says what caused the addition (not with --redact).
        _, target = shown(tool.target) if not redact else ("", "")
        what = f"{tool.name} {target}" if target else tool.name
        extra = {"target": target} if target else {}
        flow = 0
        if snapshot.time_ns >= tool.start_ns:  # a flow never points back in time
            flow = stable_id64(f"{key}:flow:addition:{change.id}:{snapshot.time_ns}")
            flows[index] = (*flows.get(index, ()), flow)
        instants.append(
            AdditionInstant(
                f"+{change.delta_tokens:,} tokens · {what} ({change.label or 'item'})",
                snapshot.time_ns,
                {
                    "rank": rank,
                    "delta_tokens": change.delta_tokens,
                    "tokens": change.tokens,
                    "category": change.category.value,
                    "item_id": change.id,
                    "tool_call_id": change.source_id,
                    "tool": tool.name,
                    **extra,
                    "estimate": estimate_note,
                },
                flow,
            )
        )
    return instants, flows
