"""One session's counters and the largest additions to its context: the request counters
(Context size, window and fill, cumulative Input and Output tokens) made from the model
when read, the `Context: *` categories kept as their changes, the counter tracks with
their units and axes, and at most ten `Largest additions` instants, each with a flow from
the tool call that caused it."""

from __future__ import annotations

import itertools
from array import array
from collections.abc import Iterator
from functools import partial

from agent_profiler.layout.planning import (
    CATEGORY_RANK,
    COUNTER_UNITS,
    DISPLAY_RANK,
    PlannedCounter,
    kept_samples,
    steps,
)
from agent_profiler.layout.state import BuilderState
from agent_profiler.layout.types import (
    R_COUNTER,
    R_COUNTER_CLOSE,
    R_COUNTER_OPEN,
    CounterSeries,
    LaidSlice,
    Remade,
    Sample,
    Track,
    TrackKind,
)
from agent_profiler.model import Category
from agent_profiler.targets import shown
from agent_profiler.views import (
    iter_context_size,
    largest_tool_additions,
    snapshots_in_time_order,
)

MAX_ADDITION_INSTANTS = 10
SHARE_KEY = "llm.context.tokens"
COUNTER_UNIT = "tokens"


class CounterAndAdditionPlans(BuilderState):
    """The session's counters (planned in `build`, declared as tracks in `assign_tracks`,
    given out as series by `finish`) and its Largest additions instants."""

    def response_counters(self) -> int:
        """The counters of the requests, made from the model when read. Returns the time
        of their last sample (the session's start when there is none)."""
        s = self.session
        self.counter("Context size", share=True).made = self._size_samples
        if s.window_tokens:
            # Its own y axis (no share key): on a 1M-token window a 40k-token context
            # drawn on the window's scale is one pixel tall (issue 29).
            self.counter("Context window").made = self._window_samples
            self.counter("Context fill").made = self._fill_samples
        self.counter("Input tokens").made = partial(self._usage_samples, output=False)
        self.counter("Output tokens").made = partial(self._usage_samples, output=True)
        # Cumulative usage at each response end, in end order (so it never goes down),
        # compaction requests included: they consume tokens without being a turn.
        self.finished = sorted(
            [*s.responses, *(c.request for c in s.compactions if c.request is not None)],
            key=lambda r: (r.end_ns, r.start_ns, r.id),
        )
        last = self.start  # each opens with a 0 there
        for ts, _ in iter_context_size(s):
            last = max(last, ts)
        if s.window_tokens and self.responses:
            last = max(last, self.responses[-1].start_ns)
        if self.finished:
            last = max(last, self.finished[-1].end_ns)
        return last

    def _size_samples(self) -> Iterator[Sample]:
        yield self.start, R_COUNTER_OPEN, 0
        for ts, tokens in iter_context_size(self.session):
            yield ts, R_COUNTER, tokens

    def _fill_samples(self) -> Iterator[Sample]:
        yield self.start, R_COUNTER_OPEN, 0
        window = self.session.window_tokens or 1
        for ts, tokens in iter_context_size(self.session):
            yield ts, R_COUNTER, -(-tokens * 100 // window)  # rounded up

    def _window_samples(self) -> Iterator[Sample]:
        # Responses whose usage the journal left at zero are drawn too (usage unknown).
        yield self.start, R_COUNTER_OPEN, 0
        window = self.session.window_tokens or 0
        for response in self.responses:
            yield response.start_ns, R_COUNTER, window

    def _usage_samples(self, output: bool) -> Iterator[Sample]:
        yield self.start, R_COUNTER_OPEN, 0
        total = 0
        for response in self.finished:
            total += response.usage.output_tokens if output else response.usage.input_tokens
            yield response.end_ns, R_COUNTER, total

    def context_counters(self) -> int | None:
        """A sample per category present so far at each snapshot, in time order, except one
        that repeats the counter's previous sample (a step function would drop it): only
        the changes are kept, as a time and a value in two arrays, and the samples are
        made from them when read. Returns the time of the last snapshot sampled (None:
        none was), since the session's end depends on it whether or not its samples were
        kept."""
        kept: dict[Category, tuple[array[int], array[int]]] = {}
        latest: int | None = None
        for snapshot in snapshots_in_time_order(self.session):
            present = dict(snapshot.categories)
            for category in present:
                if category not in kept:
                    counter = self.counter(f"Context: {category.label}", "context", share=True)
                    times, values = array("q"), array("q")
                    counter.made = partial(kept_samples, times, values)
                    kept[category] = times, values
            for category, (times, values) in kept.items():
                value = present.get(category, 0)
                if not values or values[-1] != value:
                    times.append(snapshot.time_ns)
                    values.append(value)
            if kept:
                latest = snapshot.time_ns  # in time order: the latest so far
        return latest

    def largest_additions(self) -> None:
        # Only additions a tool call caused, at most ten: an instant here exists to carry a
        # flow arrow from its tool call, and ten arrows are what a reader can follow. The
        # report lists every addition, the summary the largest of each request (views.py).
        caused = largest_tool_additions(self.session, MAX_ADDITION_INSTANTS)
        last_call = self.last_calls({a.change.source_id for a in caused})
        for rank, addition in enumerate(caused, start=1):
            change, snapshot = addition.change, addition.snapshot
            index = last_call[change.source_id]
            tool = self.calls[index]
            # No `kind` and no `context` here: Agent Profiler's tables must skip these
            # (TRACE_CONTRACT §9); they exist for ui.perfetto.dev's flow arrows. The tool's
            # target says what caused the addition (not with --redact).
            _, target = shown(tool.target) if not self.facts.redact else ("", "")
            what = f"{tool.name} {target}" if target else tool.name
            extra = {"target": target} if target else {}
            instant = LaidSlice(
                "Largest additions",
                f"+{change.delta_tokens:,} tokens · {what} ({change.label or 'item'})",
                snapshot.time_ns,
                snapshot.time_ns,
                "agentprof-additions",
                {
                    "rank": rank,
                    "delta_tokens": change.delta_tokens,
                    "tokens": change.tokens,
                    "category": change.category.value,
                    "item_id": change.id,
                    "tool_call_id": change.source_id,
                    "tool": tool.name,
                    **extra,
                    "estimate": self.estimate_note,
                },
                instant=True,
            )
            if instant.start >= tool.start_ns:  # a flow never points back in time
                flow_id = self.flow_id(f"addition:{change.id}:{snapshot.time_ns}")
                self.call_flows[index] = (*self.call_flows.get(index, ()), flow_id)
                instant.flows = (flow_id,)
            self.additions.append(instant)

    def declare_counter(self, counter: PlannedCounter, parent: int) -> None:
        counter.uuid = self.uuid(f"counter:{counter.name}")
        if counter.parent == "context":
            # Categories in the contract's fixed order (the head of a request first, then
            # the conversation, Unattributed last), the same in every session; they are
            # still declared in order of first appearance (TRACE_CONTRACT §6).
            label = counter.name.removeprefix("Context: ")
            rank = 1 + CATEGORY_RANK.get(label, len(CATEGORY_RANK))
        else:
            rank = DISPLAY_RANK[counter.name]
        self.tracks.append(
            Track(
                counter.uuid,
                counter.name,
                TrackKind.COUNTER,
                parent=parent,
                order_rank=rank,
                description=counter.description,
                counter_unit=COUNTER_UNITS.get(counter.name, COUNTER_UNIT),
                share_key=SHARE_KEY if counter.share else "",
            )
        )

    def series(self, counter: PlannedCounter) -> CounterSeries:
        """A counter's series: its samples and the closing zero at the session's end, as
        a step function (`steps`), made when read."""
        keep_repeats = counter.name == "Context size"
        closing = ((self.end, R_COUNTER_CLOSE, 0),)

        def samples() -> Iterator[Sample]:
            return steps(itertools.chain(counter.made(), closing), keep_repeats)

        return CounterSeries(counter.uuid, counter.name, Remade(samples))
