"""The one pass's largest additions (stream/log.py `Additions`), kept as the snapshots come,
are the model's (views.largest_tool_additions over the whole session): the same changes,
ranked the same way, on random sessions whose changes tie in size at the edge of the ten
kept, grow by 0, come from no call or from the inferred head, sit in baseline snapshots,
or in two snapshots of one time. `Additions` passes over a change that cannot enter, so
its shortcuts must give the model's answer, not only a fast one."""

from __future__ import annotations

import random

import pytest

from agent_profiler.attribution import INFERRED_HEAD_ID
from agent_profiler.layout.counters import MAX_ADDITION_INSTANTS
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ChangeKind,
    ContextChange,
    ContextSnapshot,
    Coverage,
    Harness,
    Session,
    Stage,
    ToolCall,
)
from agent_profiler.stream.log import Additions
from agent_profiler.views import largest_tool_additions

CALLS = [f"call-{i}" for i in range(6)]


def _snapshot(rng: random.Random, time: int) -> ContextSnapshot:
    changes = []
    for item in rng.sample(range(40), rng.randint(0, 12)):
        delta = rng.choice([rng.randint(-30, 30), 0, 10, 10, 12])  # (ties at the edge)
        item_id = INFERRED_HEAD_ID if item == 0 else f"item-{item:02d}"
        source = rng.choice([*CALLS, "", "not-a-call"])
        kind = ChangeKind.ADDED if delta > 0 else ChangeKind.REMOVED
        changes.append(
            ContextChange(item_id, Category.RESULTS, kind, max(delta, 0), delta, source_id=source)
        )
    # (as the replay writes them: largest |delta| first, then by id)
    changes.sort(key=lambda c: (-abs(c.delta_tokens), c.id))
    return ContextSnapshot(
        time,
        AnchorKind.RESPONSE,
        f"r{time}",
        Stage.REQUEST_INPUT,
        Basis.CHARS,
        Coverage.PARTIAL,
        rng.random() < 0.1,  # a baseline: never an addition
        (),
        tuple(changes),
    )


@pytest.mark.parametrize("seed", range(60))
def test_the_additions_kept_are_the_models(seed: int) -> None:
    rng = random.Random(seed)
    count = rng.randint(1, 30)
    # (in time order, some at one time: a request right at a compaction's end)
    times = sorted(rng.randint(1, count // 2 + 1) for _ in range(count))
    snapshots = [_snapshot(rng, time) for time in times]
    calls = tuple(ToolCall(call_id, "read", 0, 1) for call_id in CALLS)
    session = Session(Harness.PI, "s", 0, 100, (), tool_calls=calls, snapshots=tuple(snapshots))
    # WHEN the snapshots are taken one by one, as a pass reads them
    additions = Additions({call.call_id for call in calls})
    for snapshot in snapshots:
        additions.take(snapshot)
    # THEN the same additions as the model's, in its order, from the same snapshots
    kept = sorted(entry.key for entry in additions.kept)
    model = largest_tool_additions(session, MAX_ADDITION_INSTANTS)
    assert [(k[4], k[5]) for k in kept] == [(a.change, a.snapshot) for a in model]
    assert additions.causes == {a.change.source_id for a in model}
    # (the snapshots the end keeps: each once, in the session's order)
    assert additions.snapshots() == list(
        dict.fromkeys(a.snapshot for a in sorted(model, key=lambda a: snapshots.index(a.snapshot)))
    )
