"""`ContextLog.settle` copies an observation with the settled facts: the spelled-out copy
(`attribution._settled`, on every request) must equal `dataclasses.replace`, whatever
field is added to `Observation` later; and `Observation.request`, which passes its fields
by position, must put each where `Observation` would."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from agent_profiler.attribution import Observation, Settled, _settled
from agent_profiler.model import AnchorKind, Basis, Category, Coverage, Stage


def _every_field_set() -> Observation:
    observation = Observation(
        time_ns=7,
        anchor=AnchorKind.COMPACTION,
        anchor_id="c1",
        stage=Stage.POST_COMPACTION,
        model="m",
        reported_tokens=11,
        window_tokens=12,
        effective_window_tokens=13,
        compact_threshold_tokens=14,
        dropped=True,
        native_categories=((Category.TOOLS, 3),),
        basis=Basis.CHARS,
        coverage=Coverage.COMPLETE,
        item_stage="items",
        force_baseline=True,
    )
    defaults = Observation(0, AnchorKind.RESPONSE, "", Stage.TRANSCRIPT_OBSERVED)
    # Each field differs from its default, so a field copied from the wrong place shows.
    unset = [
        f.name
        for f in fields(Observation)
        if getattr(observation, f.name) == getattr(defaults, f.name)
    ]
    assert not unset, f"give these fields a value in this test: {unset}"
    return observation


@pytest.mark.parametrize(
    "facts",
    [
        {},
        {"reported_tokens": 99},
        {"window_tokens": None},
        {"dropped": False},
        {"reported_tokens": None, "window_tokens": 5, "dropped": True},
    ],
)
def test_settled_is_replace(facts: Settled) -> None:
    observation = _every_field_set()
    assert _settled(observation, facts) == replace(observation, **facts)


def test_a_request_observation_has_each_field_in_its_own_place() -> None:
    # `Observation.request` passes the fields it is given by position (once per request):
    # each must land in the field of its name, and it must take every one a caller may give.
    given = {
        f.name: getattr(_every_field_set(), f.name)
        for f in fields(Observation)
        if f.name not in {"time_ns", "anchor", "anchor_id", "stage"}
    }
    made = Observation.request(7, "r1", **given)
    assert made == Observation(7, AnchorKind.RESPONSE, "r1", Stage.TRANSCRIPT_OBSERVED, **given)
