"""The one pass (agent_profiler.stream) against the model path, on every Pi journal of
tests/data and the shared corpus: both traces decoded (traceview.load_trace, which runs
Perfetto's importer rules on each) hold the same tracks (by their names from the root and
their ranks, not uuids), the same slices (track, name, time, duration, category, args),
the same counter samples and the same flows (by the slices they join, not their ids);
the packets' order and the uuids may differ. The stream's trace meets TRACE_CONTRACT §8
too. The pass must also have handled the journal (not fallen back to the model path)."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from agent_profiler import stream
from agent_profiler.stream import group as stream_group
from pass_spy import spy_on_try_group
from realtp import SHARED
from shared_paths import TESTS
from traceview import TraceView

DATA = TESTS / "data" / "journals" / "pi"
CORPUS = SHARED / "corpus" / "pi"
# The journals the pass does not handle yet (docs/onepass.md), read the usual way: their
# export under the switch is the model path's, byte for byte.
NOT_HANDLED: frozenset[str] = frozenset()


def _journals() -> list[Any]:
    found = [pytest.param(p, id=f"data/{p.name}") for p in sorted(DATA.glob("*.jsonl*"))]
    if CORPUS.is_dir():
        found += [pytest.param(p, id=f"corpus/{p.name}") for p in sorted(CORPUS.glob("*.jsonl*"))]
    else:
        found.append(
            pytest.param(
                None, marks=pytest.mark.skip(reason=f"shared corpus not beside ({CORPUS})")
            )
        )
    return found


def canonical(view: TraceView) -> dict[str, Any]:
    """What the two paths must agree on, without uuids or packet order."""

    def path_of(uuid: int) -> tuple[Any, ...]:
        return tuple(
            (t.name, t.sibling_order_rank, t.is_counter) for t in reversed(view.ancestors(uuid))
        )

    on_track: dict[int, list[Any]] = defaultdict(list)
    for s in view.slices:
        on_track[s.track_uuid].append(s)
    # Lanes of one name tell apart by their first slice.
    key: dict[int, tuple[Any, ...]] = {}
    for uuid in view.tracks:
        first = min(((s.ts, s.name) for s in on_track[uuid]), default=None)
        key[uuid] = (path_of(uuid), first)
    tracks = sorted(
        (
            key[t.uuid],
            t.description,
            t.unit,
            t.unit_name,
            t.y_axis_share_key,
            t.sibling_merge_behavior,
            t.child_ordering,
        )
        for t in view.tracks.values()
    )

    def slice_key(s: Any) -> tuple[Any, ...]:
        return (key[s.track_uuid], s.name, s.ts, s.dur)

    slices = sorted(
        (*slice_key(s), s.category, repr(sorted(s.typed_args.items())), s.instant)
        for s in view.slices
    )
    counters = sorted((key[uuid], samples) for uuid, samples in view.counters.items())
    flows = sorted(
        tuple(slice_key(s) for s in sorted(ends, key=lambda s: (s.ts, s.order)))
        for ends in view.flows.values()
    )
    return {"tracks": tracks, "slices": slices, "counters": counters, "flows": flows}


def refusals(monkeypatch: pytest.MonkeyPatch, kind: type[Any]) -> list[str]:
    """Why the pass `kind` (stream/pi.py's, codex.py's or claude.py's) fell back, as it
    says (stream.NotHandled's message), filled as it reads: a case falls back for its own
    reason, not for another check's or for a bug (the pass falls back on any exception)."""
    from agent_profiler.stream import requests
    from agent_profiler.stream.log import NotHandled

    said: list[str] = []

    def spied(function: Any) -> Any:
        def spy(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except NotHandled as error:
                said.append(str(error))
                raise

        return spy

    # (its reading, and the end's checks: stream/end.py `write_end`)
    monkeypatch.setattr(kind, "read", spied(kind.read))
    monkeypatch.setattr(requests, "write_end", spied(requests.write_end))
    return said


def export_both(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Any, list[bool]]:
    """`path` exported with the switch off, then on: both exports, and for each group
    whether the pass took it (`try_group` spied on; the switch off again after)."""
    monkeypatch.setenv(stream.SWITCH, "0")
    expected = export_trace(path, require_addition=False)
    original = stream_group.try_group
    handled = spy_on_try_group(monkeypatch)
    monkeypatch.setenv(stream.SWITCH, "1")
    # (export_trace checks the contract and the importer rules on it)
    got = export_trace(path, require_addition=False)
    monkeypatch.setenv(stream.SWITCH, "0")
    monkeypatch.setattr(stream_group, "try_group", original)
    return expected, got, handled


def assert_same_trace(expected: Any, got: Any) -> None:
    """The two exports' traces hold the same tracks, counters, flows and slices."""
    want, have = canonical(expected.view), canonical(got.view)
    for part in ("tracks", "counters", "flows", "slices"):
        assert have[part] == want[part], part


def assert_same_export(expected: Any, got: Any) -> None:
    """The same trace, and the same lines but for the output's name and size (the
    packets differ)."""
    assert_same_trace(expected, got)
    size = re.compile(r"\([0-9.]+ [KM]?B\)")
    assert size.sub("", got.stdout) == size.sub("", expected.stdout).replace(
        str(expected.path), str(got.path)
    )
    assert got.stderr == expected.stderr.replace(str(expected.path), str(got.path))


@pytest.mark.parametrize("path", _journals())
def test_stream_writes_what_the_model_path_writes(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, got, handled = export_both(path, export_trace, monkeypatch)
    if path.name in NOT_HANDLED:
        assert handled == [False]
        assert got.path.read_bytes() == expected.path.read_bytes()
        return
    assert handled == [True]
    assert_same_export(expected, got)


def test_the_switch_is_read_in_one_place(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset (or anything but 0 and 1): the pass for Pi only, and for Codex and Claude
    Code where its reading would run in a helper (`split`); 1: every harness (it handles
    Pi, Codex and Claude Code); 0: none."""
    from agent_profiler.model import Harness

    helped = {Harness.PI, Harness.CODEX, Harness.CLAUDE_CODE}
    for value, expected, split in [
        (None, {Harness.PI}, helped),
        ("", {Harness.PI}, helped),
        ("yes", {Harness.PI}, helped),
        ("1", set(Harness), set(Harness)),
        ("0", set(), set()),
    ]:
        if value is None:
            monkeypatch.delenv(stream.SWITCH, raising=False)
        else:
            monkeypatch.setenv(stream.SWITCH, value)
        assert {h for h in Harness if stream.enabled(h)} == expected, value
        assert {h for h in Harness if stream.enabled(h, split=True)} == split, value


@pytest.mark.parametrize(
    ("journal", "taken"),
    [
        (DATA / "pi-mono_large-session_v1_first-25-lines.jsonl", True),
        (TESTS / "data" / "journals" / "claude-code" / "handmade" / "hidden.jsonl", False),
        (
            TESTS
            / "data"
            / "journals"
            / "codex"
            / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
            False,
        ),
    ],
    ids=["pi", "claude-code", "codex"],
)
def test_a_default_export_takes_the_pass_for_pi_only(
    journal: Path, taken: bool, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(stream.SWITCH, raising=False)
    asked = spy_on_try_group(monkeypatch)
    export_trace(journal, require_addition=False)
    assert asked == ([True] if taken else [])
