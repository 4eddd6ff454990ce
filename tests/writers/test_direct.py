"""The direct argument encoders (writers/direct.py) against the generic path they mirror:
each builder's dict (annotations.py) walked by wire.py's `entries`. They must give the
same bytes and intern the same texts in the same order, on hand-made model objects at
every edge of what they pick (omitted keys, a previous snapshot's repeats, linked and
unlinked tool changes, long and unique texts, negative and huge ints, empty changes) and
on every journal of the test data and the corpus, whole groups byte for byte. A change
to a builder that the direct path does not follow fails here."""

from __future__ import annotations

import io
import random
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.annotations import (
    ContentMode,
    TraceFacts,
    compaction_args,
    context_command_args,
    response_args,
    tool_args,
)
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.layout import LaidSlice
from agent_profiler.loader import LoadResult, plan_inputs, read_group
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ChangeKind,
    Compaction,
    ContextChange,
    ContextSnapshot,
    Coverage,
    Harness,
    Response,
    Session,
    SourceKind,
    Stage,
    ToolCall,
    Usage,
)
from agent_profiler.views import AfterCompaction
from agent_profiler.writers import direct, perfetto
from agent_profiler.writers.direct import DirectArgs
from agent_profiler.writers.events import EventEncoder
from conftest import DATA
from shared_paths import CORPUS

_ANNOTATION = b"\x22"
S = 1_000_000_000

# ints at the edges of each encoding: one-byte values, each varint length the direct path
# keeps a prefix for, past them, negatives (ten bytes), beyond the wire's range, bools
EDGE_INTS = [0, 1, 127, 128, 16_383, 16_384, 2**21 - 1, 2**21, 2**28 - 1, 2**28, 2**35]
EDGE_INTS += [2**64 - 1, 2**64, -1, -200, -(2**63), -(2**63) - 1]
EDGE_INTS += [True, False]  # a bool is an int to the types, not to the wire (bool_value)
TEXTS = ["", "a", "Tool result", "Tool arguments", "x" * 64, "y" * 65, "z" * 200, "é" * 70]
IDS = ["r1", "", "i" * 127, "j" * 128, "ünïcode-id", "k" * 300]


class _Pair:
    """Two encoders of one group: each call's arguments encoded by the direct encoder on
    one and by its builder's dict on the other, in turn, so both intern as they go."""

    def __init__(self) -> None:
        self.direct = EventEncoder(1)
        self.generic = EventEncoder(1, direct=False)
        self.calls = 0

    def agree(self, builder: Callable[..., dict[str, Any]], *args: Any) -> None:
        encoded = self.direct.direct[builder](*args)
        expected = self.generic.entries(builder(*args), _ANNOTATION)
        assert encoded == expected, (builder.__name__, args)
        assert self.direct.tables == self.generic.tables  # same texts, same iids
        assert self.direct.pending == self.generic.pending  # to be written in that order
        self.calls += 1


def _session(**fields: Any) -> Session:
    return Session(Harness.PI, "s", 0, 100 * S, ("s.jsonl",), **fields)


def _change(rng: random.Random, calls: list[str]) -> ContextChange:
    kind = rng.choice([SourceKind.TOOL, SourceKind.TOOL, SourceKind.PROMPT, SourceKind.NONE])
    category = rng.choice(list(Category))
    return ContextChange(
        rng.choice([*IDS, f"line-{rng.randrange(10**6)}:0"]),
        category,
        rng.choice(list(ChangeKind)),
        rng.choice([*EDGE_INTS, rng.randrange(50_000)]),
        rng.choice([*EDGE_INTS, rng.randrange(-50_000, 50_000)]),
        rng.choice([None, 0, 93, 70_000, *EDGE_INTS]),
        rng.choice(["", "Tool result", "Tool arguments", "Assistant text", *TEXTS]),
        rng.choice(["", *calls, "c" * 80]),
        kind,
        rng.choice(["", "", "reported-bytes", "m" * 70]),
    )


def _snapshot(rng: random.Random, calls: list[str]) -> ContextSnapshot:
    categories = rng.sample(list(Category), rng.randrange(len(Category) + 1))
    return ContextSnapshot(
        rng.randrange(200) * S,
        AnchorKind.RESPONSE,
        "r",
        rng.choice(list(Stage)),
        rng.choice(list(Basis)),
        rng.choice(list(Coverage)),
        rng.random() < 0.3,
        tuple((c, rng.choice([*EDGE_INTS[:10], rng.randrange(10**6)])) for c in categories),
        tuple(_change(rng, calls) for _ in range(rng.choice([0, 0, 1, 2, 3, 9]))),
        omitted_changes=rng.choice([0, 0, 1, 300]),
        reported_tokens=rng.choice([None, 0, 42_202, 2**30]),
        window_tokens=rng.choice([None, 200_000, 400_000]),
        effective_window_tokens=rng.choice([None, 190_000]),
        compact_threshold_tokens=rng.choice([None, 160_000, 170_000]),
        model=rng.choice([None, "claude-sonnet-4-5", "gpt-5", "q" * 70]),
        item_stage=rng.choice([None, None, "", "request-input", "w" * 66]),
    )


def _response(rng: random.Random) -> Response:
    usage = Usage(*(rng.choice([*EDGE_INTS, rng.randrange(10**5)]) for _ in range(6)))
    return Response(
        rng.choice([*IDS, f"resp-{rng.randrange(10**9)}"]),
        rng.randrange(200) * S,
        rng.randrange(200, 300) * S,
        rng.choice(["claude-sonnet-4-5", "gpt-5.1-codex", "", "n" * 80]),
        usage,
        is_error=rng.random() < 0.2,
        stop_reason=rng.choice([None, "", "toolUse", "end_turn", "s" * 90]),
        usage_known=rng.random() < 0.8,
        price_context=rng.choice(["", "", "speed=fast", "p" * 130]),
        web_searches=rng.choice([0, 0, 1, 127, 128, 2**31]),
    )


def _tool(rng: random.Random, calls: list[str]) -> ToolCall:
    return ToolCall(
        rng.choice([*calls, "d" * 70, ""]),
        rng.choice(["bash", "read", "edit", "t" * 70]),
        0,
        S,
        is_error=rng.choice([False, True, 1, 0]),  # an int is written as an int
        incomplete=rng.random() < 0.2,
        arg_keys=rng.choice([(), ("command",), ("path", "offset"), ("k" * 80,)]),
        arg_bytes=rng.choice(EDGE_INTS[:12]),
        args_preview=rng.choice([(), (("command", "ls -la"),), (("path", "v" * 100),)]),
        target=rng.choice(["", "program:grep", "path:src/x.py", "host:", "host:example.org"]),
        result_chars=rng.choice(EDGE_INTS),
        child_session=rng.choice([None, None, "child-1", "h" * 130]),
        timing=rng.choice(["", "", "journal: start record", "u" * 90]),
    )


@pytest.mark.parametrize("kept", [direct.MAX_KEPT, 2])
def test_hand_made_arguments_are_the_generic_bytes(kept: int, monkeypatch: Any) -> None:
    """Every kind of slice the direct path encodes, with the same encoders throughout:
    the later calls meet what the earlier ones kept (and, with tables of 2, what they
    dropped when full)."""
    monkeypatch.setattr(direct, "MAX_KEPT", kept)
    rng = random.Random(32)
    pair = _Pair()
    calls = [f"call_{i}" for i in range(12)] + ["toolu_01CTLBxG4d46gvC56Lgz36CQ-r0"]
    linked = frozenset(calls[::2])
    for round_ in range(400):
        previous = _snapshot(rng, calls) if rng.random() < 0.7 else None
        snapshot = _snapshot(rng, calls)
        session = _session(
            provider=rng.choice([None, "anthropic", "p" * 70]),
            window_tokens=rng.choice([None, 0, 200_000]),
        )
        response = _response(rng)
        pair.agree(
            response_args,
            session,
            response,
            snapshot if round_ % 5 else None,
            previous,
            rng.random() < 0.5,
            linked,
        )
        # (and without `targets`: the direct encoder keeps the builder's default)
        targets = rng.choice([(True,), (False,), ()])
        pair.agree(tool_args, _tool(rng, calls), rng.random() < 0.5, *targets)
        compaction = Compaction(
            "c1",
            snapshot.time_ns - S,
            snapshot.time_ns + rng.choice([-S, 0, S]),
            rng.choice(["compaction", "microcompaction"]),
            rng.choice([None, "auto"]),
            rng.choice([None, 0, 150_000]),
            removed_items=rng.choice([0, 5, 400]),
            timing=rng.choice(["", "journal"]),
        )
        after = rng.choice([None, AfterCompaction(30_000, "harness")])
        pair.agree(
            compaction_args, compaction, rng.choice([None, snapshot]), previous, linked, after
        )
        pair.agree(context_command_args, snapshot, previous, linked)
    assert pair.calls == 1600


def test_a_linked_tool_change_leaves_out_its_kind_and_default_label() -> None:
    """The pick that differs between linked and unlinked changes, on its own."""
    pair = _Pair()
    change = ContextChange(
        "line-58:result",
        Category.RESULTS,
        ChangeKind.ADDED,
        8,
        8,
        30,
        "Tool result",
        "call_1",
        SourceKind.TOOL,
    )
    snapshot = ContextSnapshot(
        S, AnchorKind.RESPONSE, "r", Stage.TRANSCRIPT_OBSERVED, Basis.CHARS,
        Coverage.PARTIAL, False, ((Category.RESULTS, 8),), (change,),
    )  # fmt: skip
    response = Response("r", S, 2 * S, "m", Usage(8))
    for calls in (frozenset({"call_1"}), frozenset()):
        pair.agree(response_args, _session(), response, snapshot, None, True, calls)
    linked = pair.direct.direct[response_args](
        _session(), response, snapshot, None, True, frozenset({"call_1"})
    )
    unlinked = pair.direct.direct[response_args](
        _session(), response, snapshot, None, True, frozenset()
    )
    assert len(linked) < len(unlinked)  # no source_kind, no label


def test_a_constant_dict_of_arguments_is_encoded_as_a_fresh_copy_would_be() -> None:
    """A track's constant arguments (one dict on every slice: {"kind": "turn"}) are encoded
    once and kept (events.py); the slices between them intern other texts. Each packet is
    the one a function making a copy of its dict (never kept) gives."""
    turn: dict[str, Any] = {"kind": "turn"}
    prompt: dict[str, Any] = {"kind": "prompt", "source": "user"}
    sequence = [turn, turn, prompt, turn, {"turn": 1}, {"kind": "turn"}, turn]
    kept, fresh = EventEncoder(1), EventEncoder(1)
    for i, args in enumerate(sequence):
        packet = kept.begin(i * S, LaidSlice("Turns", "turn", i * S, i * S + 1, "pi", args))
        made = partial(dict, args)  # a function's dict, a new one each time: never kept
        expected = fresh.begin(i * S, LaidSlice("Turns", "turn", i * S, i * S + 1, "pi", made))
        assert packet == expected, i
    assert kept.last_dict is turn  # kept, and used: the last slice's dict


# ------------------------------------------------------------------------ journals


def _journals() -> Iterator[Path]:
    """Every folder of journals in the test data and the corpus (each read as a whole:
    its groups, its session trees)."""
    yield from sorted(p for p in DATA.iterdir() if p.is_dir())
    if CORPUS.is_dir():
        yield from sorted(p for p in CORPUS.iterdir() if p.is_dir())


JOURNALS = list(_journals())


def _group_bytes(sessions: list[Session], group: int, facts: TraceFacts, direct: bool) -> bytes:
    made: list[DirectArgs] = []  # (an encoder lets its own go once done: `close`)

    def encoder(sequence: int) -> EventEncoder:
        new = EventEncoder(sequence, direct)
        made.append(new.direct_args)
        return new

    stream = io.BytesIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(perfetto, "EventEncoder", encoder)
        perfetto.PerfettoWriter(facts, compress=False).write_group(sessions, stream, group)
    if direct:  # the direct path was taken (the layout's partials name the builders)
        assert bool(made[0].response_openings) == any(
            s.responses or s.unmetered_responses for s in sessions
        )
        assert bool(made[0].tool_kind) == any(s.tool_calls for s in sessions)
    return stream.getvalue()


@pytest.mark.parametrize("folder", JOURNALS, ids=[f"{p.parent.name}/{p.name}" for p in JOURNALS])
def test_every_journal_s_groups_are_the_generic_bytes(folder: Path) -> None:
    groups = plan_inputs([folder], None, LoadResult())
    assert groups, folder
    for facts in (TraceFacts(), TraceFacts(content=ContentMode.PREVIEWS, redact=True)):
        for index, group in enumerate(groups):
            sessions = read_group(group, Diagnostics(), {}).sessions
            expected = _group_bytes(sessions, index, facts, direct=False)
            assert _group_bytes(sessions, index, facts, direct=True) == expected, group.paths


def test_a_category_whose_count_repeats_as_a_bool_or_an_equal_int_is_written_anew() -> None:
    """`categories` keeps each category's last count and bytes (a request's unchanged
    categories repeat; none before the first, 0 included): a count equal to the last but
    of another type (True after 1, 1 after True, 1.0 after 1) is no repeat, and is
    written as its type is."""
    pair = _Pair()
    response = Response("r", S, 2 * S, "m", Usage(8))
    for tokens in [0, 1, 1, True, True, 1, 0, False, 0, 1, 1.0, 1, 300, 300, 300.0]:
        snapshot = ContextSnapshot(
            S, AnchorKind.RESPONSE, "r", Stage.TRANSCRIPT_OBSERVED, Basis.CHARS,
            Coverage.PARTIAL, False, ((Category.RESULTS, tokens), (Category.SYSTEM, 5)),
        )  # fmt: skip
        pair.agree(response_args, _session(), response, snapshot, None, True, frozenset())


@pytest.mark.parametrize("first", [0, 1, 127, 300, -5])
def test_every_one_byte_count_is_its_generic_item_whichever_comes_first(first: int) -> None:
    """A count below 128 after the first of them is that one's prefix and its byte (a
    group's encoder starts afresh, and made each the generic way): the generic bytes for
    every value, whichever value (of one byte, or not) the key met first."""
    encoder = EventEncoder(1)
    items = encoder.direct_args.items
    rng = random.Random(first)
    for tag, key in [(_ANNOTATION, "input_tokens"), (b"\x5a", "tokens"), (b"\x5a", "results")]:
        item = items.count(tag, key)
        values = list(range(128))
        rng.shuffle(values)
        for value in [first, *values, *values]:
            assert item(value) == items.one(tag, key, value), (key, value)
