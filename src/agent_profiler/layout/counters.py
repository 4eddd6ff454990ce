"""One session's counters and the largest additions to its context, as functions of the
model: the request counters (Context size, window and fill, cumulative Input and Output
tokens) made from the model when read, the `Context: *` categories kept as their changes
(`session_counters`); at most ten `Largest additions` instants, each with a flow from the
tool call that caused it (`largest_additions`); and a planned counter's series, its
closing zero included (`series`)."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from agent_profiler.layout.planning import PlannedCounter, kept_samples, steps
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
from agent_profiler.targets import shown
from agent_profiler.views import (
    iter_context_size,
    largest_tool_additions,
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
    session: Session, start: int, responses: Sequence[Response], estimate_note: str
) -> tuple[list[PlannedCounter], int]:
    """The session's counters in the order they are declared (the request counters, then
    each context category as it first appears), and the time of their last sample (the
    session's start when there is none): the session ends after it."""
    counters = [
        PlannedCounter(
            "Context size", partial(_size, session, start), share=True, keep_repeats=True
        )
    ]
    if session.window_tokens:
        # Its own y axis (no share key): on a 1M-token window a 40k-token context drawn on
        # the window's scale is one pixel tall (issue 29).
        counters.append(
            PlannedCounter("Context window", partial(_window, session, start, responses))
        )
        counters.append(PlannedCounter("Context fill", partial(_fill, session, start)))
    # Cumulative usage at each response end, in end order (so it never goes down),
    # compaction requests included: they consume tokens without being a turn.
    finished = sorted(
        [*session.responses, *(c.request for c in session.compactions if c.request is not None)],
        key=lambda r: (r.end_ns, r.start_ns, r.id),
    )
    counters.append(PlannedCounter("Input tokens", partial(_usage, start, finished, False)))
    counters.append(PlannedCounter("Output tokens", partial(_usage, start, finished, True)))
    last = start  # each opens with a 0 there
    for ts, _ in iter_context_size(session):
        last = max(last, ts)
    if session.window_tokens and responses:
        last = max(last, responses[-1].start_ns)
    if finished:
        last = max(last, finished[-1].end_ns)
    latest = _context_counters(session, estimate_note, counters)
    if latest is not None:  # its repeats were dropped, not its time
        last = max(last, latest)
    return counters, last


def _size(session: Session, start: int) -> Iterator[Sample]:
    yield start, R_COUNTER_OPEN, 0
    for ts, tokens in iter_context_size(session):
        yield ts, R_COUNTER, tokens


def _fill(session: Session, start: int) -> Iterator[Sample]:
    yield start, R_COUNTER_OPEN, 0
    window = session.window_tokens or 1
    for ts, tokens in iter_context_size(session):
        yield ts, R_COUNTER, -(-tokens * 100 // window)  # rounded up


def _window(session: Session, start: int, responses: Sequence[Response]) -> Iterator[Sample]:
    # Responses whose usage the journal left at zero are drawn too (usage unknown).
    yield start, R_COUNTER_OPEN, 0
    window = session.window_tokens or 0
    for response in responses:
        yield response.start_ns, R_COUNTER, window


def _usage(start: int, finished: Sequence[Response], output: bool) -> Iterator[Sample]:
    yield start, R_COUNTER_OPEN, 0
    total = 0
    for response in finished:
        total += response.usage.output_tokens if output else response.usage.input_tokens
        yield response.end_ns, R_COUNTER, total


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
    latest: int | None = None
    for snapshot in snapshots_in_time_order(session):
        present = dict(snapshot.categories)
        for category in present:
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
        for category, (times, values) in kept.items():
            value = present.get(category, 0)
            if not values or values[-1] != value:
                times.append(snapshot.time_ns)
                values.append(value)
        if kept:
            latest = snapshot.time_ns  # in time order: the latest so far
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
