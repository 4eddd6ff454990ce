"""The shape of the track table (tracks.py): a `TrackSpec` per track, in display order,
whose `Slices` say how each kind of slice on it is made (from which items, each item's
span, its name, category, arguments and flows); the `Source`s those items come from, in
the order slices are laid out; and `Table`, a table made ready for planning (its kinds of
slices grouped by source, each row's rank)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agent_profiler.layout.data import SessionData
from agent_profiler.layout.types import R_INSTANT, R_SLICE_BEGIN, Args
from agent_profiler.model import frozen

# A slice's flows: (every flow on it, those starting at it).
Flows = tuple[tuple[int, ...], tuple[int, ...]]
NO_FLOWS: Flows = ((), ())
# The categories a slice spec can name: the session's activity or metadata category
# (`<harness prefix>.activity` / `.metadata`), or any other string, used as it is.
ACTIVITY, METADATA = "{activity}", "{metadata}"


@frozen
class Source:
    """Items slices are made from, worked out from the session (`SessionData`)."""

    name: str
    items: Callable[[SessionData], Sequence[Any]]


# The sources in the order their slices are laid out (a slice's place in that order
# breaks ties between events of the same time and rank, and numbers the JSON writer's
# threads): the capture, each prompt's input and slice, each response's slices, …; each
# item's slices in the order of their tracks' rows.
CAPTURE = Source("capture", lambda data: (data,))
PROMPTS = Source("prompts", lambda data: data.session.prompts)
RESPONSES = Source("responses", lambda data: data.responses)
CALLS = Source("tool calls", lambda data: data.calls)
COMPACTIONS = Source("compactions", lambda data: data.session.compactions)
RUNS = Source("model runs", lambda data: data.runs)
FAILED = Source("failed requests", lambda data: data.session.failed_requests)
MARKERS = Source("markers", lambda data: data.session.markers)
NATIVES = Source("native reports", lambda data: data.natives)
ADDITIONS = Source("additions", lambda data: data.additions)
SESSION_INPUT = Source("session input", lambda data: data.session_input)
SOURCES = (
    CAPTURE,
    PROMPTS,
    RESPONSES,
    CALLS,
    COMPACTIONS,
    RUNS,
    FAILED,
    MARKERS,
    NATIVES,
    ADDITIONS,
    SESSION_INPUT,
)


@frozen
class Slices:
    """One kind of slice on a track: a slice per item of `source` (none for an item whose
    `span` is None), named `name` (or `name(item)`), in `category`, with `args` (or
    `args(data, index, item)`: a dict, or a function that builds it when a writer reads
    it) and `flows(data, index, item)`. An instant has a span of one time."""

    source: Source
    span: Callable[[Any], tuple[int, int] | None]
    name: str | Callable[[Any], str]
    args: Args | Callable[[SessionData, int, Any], Args | Callable[[], Args]]
    flows: Callable[[SessionData, int, Any], Flows] | None = None
    instant: bool = False
    category: str = ACTIVITY


@frozen
class TrackSpec:
    """One row of the track table: a slice track (`slices`: its kinds of slice), a counter
    of the capture (`counter`: its samples are made by counters.py, its place is its row)
    or a group (`children`: its slice tracks, first; the counters of that group after
    them). `description` may depend on the session (a function of its data)."""

    name: str
    slices: tuple[Slices, ...] = ()
    counter: bool = False
    children: tuple[TrackSpec, ...] = ()
    description: str | Callable[[SessionData], str] = ""
    unit: str = "tokens"  # a counter's
    merge: bool = True  # a slice track's lanes merge by name (Session: one lane, alone)

    @property
    def group(self) -> bool:
        return bool(self.children)

    def described(self, data: SessionData) -> str:
        return self.description if isinstance(self.description, str) else self.description(data)


@frozen
class Kind:
    """A kind of slice as planning uses it: its spec, its track's name, its begin rank (for
    telling whether its source's slices come in (start, rank) order), and the slot of its
    track among the tracks of its source (kinds of one track share it)."""

    spec: Slices
    track: str
    rank: int
    slot: int


class Table:
    """A track table ready for planning: the slice tracks (top level, then each group's),
    the rows' ranks among their siblings, and each source's kinds of slices in row order."""

    def __init__(self, rows: Sequence[TrackSpec]) -> None:
        self.rows = tuple(rows)
        self.rank = {row.name: rank for rank, row in enumerate(self.rows)}
        self.groups = tuple(row for row in self.rows if row.group)
        self.counters = {row.name: row for row in self.rows if row.counter}
        # Every slice track with its group ("": the capture) and its rank there.
        self.slice_tracks: list[tuple[TrackSpec, str, int]] = []
        names: set[str] = set()
        walk: list[tuple[TrackSpec, str, int]] = []
        for rank, row in enumerate(self.rows):
            walk.append((row, "", rank))
            walk += [(child, row.name, i) for i, child in enumerate(row.children)]
        for row, group, rank in walk:
            if row.name in names:
                raise ValueError(f"track table: two rows named {row.name!r}")
            names.add(row.name)
            if row.slices:
                self.slice_tracks.append((row, group, rank))
        by_source: dict[str, list[tuple[Slices, str]]] = {}
        for row, _, _ in self.slice_tracks:
            for spec in row.slices:
                if spec.source not in SOURCES:
                    raise ValueError(f"track table: {row.name!r} reads an unknown source")
                by_source.setdefault(spec.source.name, []).append((spec, row.name))
        self.kinds: dict[str, tuple[Kind, ...]] = {}
        for source, specs in by_source.items():
            slots: dict[str, int] = {}
            self.kinds[source] = tuple(
                Kind(
                    spec,
                    track,
                    R_INSTANT if spec.instant else R_SLICE_BEGIN,
                    slots.setdefault(track, len(slots)),
                )
                for spec, track in specs
            )
