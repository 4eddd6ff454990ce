"""Planning's rooms read directly: what a slice's flows are read from (`Links`) and a
context category's counter, whichever way the replay shared its totals."""

from __future__ import annotations

import heapq
import random
from array import array

import pytest

from agent_profiler.layout.counters import session_counters
from agent_profiler.layout.plan import _lanes, _Places
from agent_profiler.layout.planning import UUID_BLOCK, Links, TrackIds, first_fit, int64s
from agent_profiler.layout.types import merged_begins, stable_id64, stable_ids64
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Harness,
    Session,
    Stage,
)

S = 1_000_000_000
T0 = 1_770_000_000 * S


def test_values_of_a_source_are_the_values_at_its_targets_in_order() -> None:
    # Sources with no target, one, and several (not next to each other), at random.
    rng = random.Random(32)
    for _ in range(200):
        sources = rng.randint(1, 6)
        source_of = [rng.randint(-1, sources - 1) for _ in range(rng.randint(0, 12))]
        links = Links.of(sources, source_of)
        values = array("Q", (rng.randint(1, 2**64 - 1) for _ in source_of))
        for source in range(sources):
            expected = tuple(values[t] for t, s in enumerate(source_of) if s == source)
            assert links.values_of(source, values) == expected


def _snapshot(at: int, categories: tuple[tuple[Category, int], ...]) -> ContextSnapshot:
    return ContextSnapshot(
        at,
        AnchorKind.RESPONSE,
        f"r{at}",
        Stage.TRANSCRIPT_OBSERVED,
        Basis.CHARS,
        Coverage.PARTIAL,
        False,
        categories,
    )


def _category_samples(snapshots: list[ContextSnapshot]) -> dict[str, list[tuple[int, ...]]]:
    session = Session(Harness.PI, "s", T0, T0 + 10 * S, ("s.jsonl",), snapshots=tuple(snapshots))
    counters, last = session_counters(session, T0, [], "an estimate")
    samples = {c.name: list(c.made()) for c in counters if c.group}
    samples["(last)"] = [(last,)]
    return samples


def test_a_category_counter_is_the_same_whether_snapshots_share_their_totals_or_not() -> None:
    # The replay hands a snapshot the previous one's categories tuple when no total moved;
    # counters skip such a snapshot. Equal tuples that are not shared give the same
    # samples, categories coming, going (a 0) and coming back included.
    prompts, results = Category.PROMPTS, Category.RESULTS
    steps = [
        ((prompts, 10),),
        ((prompts, 10),),
        ((prompts, 10), (results, 5)),
        ((prompts, 10), (results, 5)),
        ((results, 5),),
        ((prompts, 12), (results, 5)),
        ((prompts, 12), (results, 5)),
        (),
        (),
        ((results, 7),),
    ]
    shared: list[ContextSnapshot] = []
    for i, categories in enumerate(steps):
        if shared and shared[-1].categories == categories:
            categories = shared[-1].categories  # the very object, as the replay does
        shared.append(_snapshot(T0 + i * S, categories))
    copied = [_snapshot(x.time_ns, tuple(list(x.categories))) for x in shared]
    assert _category_samples(shared) == _category_samples(copied)
    got = _category_samples(shared)
    assert [v for _, _, v in got["Context: User prompts"]] == [10, 0, 12, 0]
    assert [v for _, _, v in got["Context: Tool results"]] == [5, 0, 7]
    assert got["(last)"] == [(T0 + 9 * S,)]


def test_categories_never_present_leave_no_counter_and_no_end() -> None:
    # Snapshots with no category at all (shared empty tuples): no counter, and the last
    # sample's time is not moved by them.
    snapshots = [_snapshot(T0 + i * S, ()) for i in range(3)]
    assert _category_samples(snapshots) == {"(last)": [(T0,)]}


def test_merged_begins_is_heapq_merge_of_the_same_streams() -> None:
    # Streams in order, interleaved at random, with ties of start and rank between them
    # (orders are unique), some empty, and some out of order: heapq.merge's output each
    # time, item for item (the same objects).
    rng = random.Random(7)
    for _ in range(300):
        orders = list(range(1, rng.randint(0, 40) + 1))
        rng.shuffle(orders)
        streams: list[list[tuple[int, int, int, object]]] = [[] for _ in range(rng.randint(1, 5))]
        for order in orders:
            begin = (rng.randint(0, 6), rng.choice((0, 3, 4)), order, object())
            rng.choice(streams).append(begin)
        for stream in streams:
            if rng.random() < 0.8:
                stream.sort(key=lambda b: b[:3])
        expected = list(heapq.merge(*streams))
        got = list(merged_begins([iter(stream) for stream in streams]))  # type: ignore[misc]
        assert len(got) == len(expected)
        assert all(a is b for a, b in zip(got, expected, strict=True))


def _first_fit_by_scan(
    starts: list[int], ends: list[int], instants: list[int]
) -> tuple[list[int], dict[int, tuple[int, int, int]], int]:
    """First fit the plain way: each slice, in (start, -end, position) order, on the
    lowest lane free at its start (a scan of every lane a slice took). An instant is on
    the first lane, which it makes exist (and which no slice takes unless one made it)."""
    count = 0
    busy_until: dict[int, int] = {}  # lane → busy until, for lanes a slice took
    lane_of = [0] * len(starts)
    firsts: dict[int, tuple[int, int, int]] = {}
    order = sorted(zip(starts, [-e for e in ends], range(len(starts)), strict=True))
    for start, minus_end, i in order:
        if instants[i]:
            count, lane = max(count, 1), 0
        else:
            free = [lane for lane in sorted(busy_until) if busy_until[lane] <= start]
            lane = free[0] if free else count
            count = max(count, lane + 1)
            busy_until[lane] = max(-minus_end, start + 1)
        lane_of[i] = lane
        firsts.setdefault(lane, (start, minus_end, i))
    return lane_of, firsts, count


def test_first_fit_is_first_fit_by_a_scan_of_the_lanes() -> None:
    # Tracks whose slices follow one another (one lane), overlap a little or a lot, touch
    # (end == next start), have zero length or are instants, at random.
    rng = random.Random(11)
    for _ in range(400):
        n = rng.randint(0, 30)
        spread = rng.choice((3, 20, 200))
        starts = [rng.randint(0, spread) for _ in range(n)]
        ends = [s + rng.choice((0, 0, 1, 2, 5, 40)) for s in starts]
        instants = [int(rng.random() < 0.15) for _ in range(n)]
        lanes, firsts, count = first_fit(starts, ends, list(range(n)), instants)
        assert (list(lanes), firsts, count) == _first_fit_by_scan(starts, ends, instants)


def test_stable_ids_of_a_prefix_are_stable_id64_of_the_whole_key() -> None:
    # ASCII, other scripts and emoji (UTF-8 of several bytes), empty parts, and keys
    # longer than BLAKE2b's 128-byte block, on either side.
    prefixes = ["", "s:flow:tool:", "sesión-ü:flow:prompt:", "k" * 200 + ":flow:"]
    suffixes = ["", "0", "17", "toolu_01ABC", "呼び出し", "🙂" * 40, "x" * 300]
    for prefix in prefixes:
        of = stable_ids64(prefix)
        for suffix in suffixes:
            assert of(suffix) == stable_id64(prefix + suffix)


def test_a_journal_group_has_uuids_up_to_its_block_and_no_further() -> None:
    # Group 2's uuids are 2 × UUID_BLOCK + 1 … 3 × UUID_BLOCK − 1: every track until the
    # last of these, asked again the same uuid; one more is refused, rather than taking
    # group 3's first uuid (groups are laid out apart, in worker processes).
    ids = TrackIds(group=2)
    first = 2 * UUID_BLOCK + 1
    assert ids.get("a") == first and ids.get("a") == first
    uuids = [ids.get(str(n)) for n in range(UUID_BLOCK - 2)]
    assert uuids[-1] == 3 * UUID_BLOCK - 1 == TrackIds(group=3).get("a") - 2
    assert ids.get(str(UUID_BLOCK - 3)) == uuids[-1]
    with pytest.raises(OverflowError, match=f"^more than {UUID_BLOCK - 1} tracks in one journal"):
        ids.get("one more")


def _lanes_one_track_at_a_time(
    places: dict[str, _Places], key: str, ids: TrackIds
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """`plan._lanes` as it was before tracks of the same spans shared their lanes: every
    track fitted on its own."""
    lanes: dict[str, list[int]] = {}
    counts: dict[str, int] = {}
    firsts: list[tuple[tuple[int, int, int], str, int]] = []
    for name, track in places.items():
        if not track.starts:
            continue
        fitted, lane_firsts, counts[name] = first_fit(
            track.starts, track.ends, track.positions, track.instants
        )
        lanes[name] = list(fitted)
        firsts += [(first, name, lane) for lane, first in lane_firsts.items()]
    firsts.sort()
    uuids = {name: [0] * count for name, count in counts.items()}
    for _, name, lane in firsts:
        uuids[name][lane] = ids.get(f"{key}:{name}:{lane}")
    return lanes, uuids


def test_tracks_of_the_same_spans_get_the_lanes_each_would_get_alone() -> None:
    """`_lanes` hands a track the lanes of a track fitted before it whose spans (starts,
    ends, instants) are the same (Turns are the Responses' spans), its firsts moved to its
    own positions. Against every track fitted on its own: copies of a track at other
    positions (before or after it in the layout), and near-copies (one end longer, one
    slice an instant, one start later), which must be fitted on their own."""
    rng = random.Random(23)
    for _ in range(300):
        n = rng.randint(1, 12)
        spread = rng.choice((3, 20, 200))
        starts = [rng.randint(0, spread) for _ in range(n)]
        ends = [s + rng.choice((0, 1, 2, 5, 40)) for s in starts]
        instants = [int(rng.random() < 0.15) for _ in range(n)]
        variants = []
        for kind in rng.sample(["copy", "copy", "end", "instant", "start", "same"], 4):
            s, e, i = list(starts), list(ends), list(instants)
            j = rng.randrange(n)
            if kind == "end":
                e[j] += rng.choice((1, 50))
            elif kind == "instant":
                i[j] = 1 - i[j]
            elif kind == "start":
                s[j] += 1
                e[j] = max(e[j], s[j])
            variants.append((s, e, i))
        # Every slice's place in the layout: the tracks' slices interleaved at random.
        owners = [t for t in range(1 + len(variants)) for _ in range(n)]
        rng.shuffle(owners)
        places: dict[str, _Places] = {}
        for t, (s, e, i) in enumerate([(starts, ends, instants), *variants]):
            track = places[f"track{rng.randrange(100)}-{t}"] = _Places()
            track.starts.extend(s)
            track.ends.extend(e)
            track.instants.extend(i)
            track.positions.extend(p for p, owner in enumerate(owners) if owner == t)
        lanes, uuids = _lanes(places, "k", TrackIds())
        expected = _lanes_one_track_at_a_time(places, "k", TrackIds())
        assert ({n: list(v) for n, v in lanes.items()}, uuids) == expected


@pytest.mark.parametrize(
    "values",
    [
        [],
        [-1],
        [0, 1, -1, 2**63 - 1, -(2**63), T0, T0 + 17],
        [x * x - 40 for x in range(300)],
    ],
)
def test_int64s_is_array_q_of_the_values(values: list[int]) -> None:
    """The layout's int arrays made by struct (int64s) are what array("q", …) makes of the
    same values, given as a list, an iterator or a range, the int64 extremes included."""
    expected = array("q", values)
    for given in (values, iter(values), map(int, values)):
        made = int64s(given)
        assert made == expected and made.typecode == "q" and type(made) is array
    assert int64s(range(5, 500, 7)) == array("q", range(5, 500, 7))
