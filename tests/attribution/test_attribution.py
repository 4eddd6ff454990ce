"""The shared attribution rules: estimates, baselines, diffs, the inferred head."""

from __future__ import annotations

from typing import Any

from agent_profiler.attribution import (
    INFERRED_HEAD_ID,
    MAX_CHANGES,
    ContextLog,
    Observation,
)
from agent_profiler.estimate import chars4
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ChangeKind,
    Coverage,
    SourceKind,
    Stage,
)


def obs(
    time: int, reported: int | None = None, model: str | None = "m1", **facts: Any
) -> Observation:
    """What the transcript holds at request `r<time>`'s start, with its reported size."""
    return Observation.request(time, f"r{time}", model=model, reported_tokens=reported, **facts)


def test_estimate_is_chars_over_four_rounded_up() -> None:
    assert [chars4(n) for n in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]


def test_first_snapshot_is_a_baseline_with_the_inferred_head() -> None:
    # GIVEN a prompt of 40 chars (10 tokens) and a reported request of 1,010 tokens
    log = ContextLog()
    log.add("p1", Category.PROMPTS, 40, label="User prompt", source_kind=SourceKind.PROMPT)
    log.observe(obs(1, reported=1010))
    # WHEN replayed
    (snap,) = log.replay()
    # THEN the missing 1,000 tokens are one inferred unattributed item, marked baseline
    assert snap.baseline
    assert dict(snap.categories) == {Category.PROMPTS: 10, Category.UNATTRIBUTED: 1000}
    assert snap.estimated_tokens == 1010 == snap.reported_tokens
    head = next(c for c in snap.changes if c.id == INFERRED_HEAD_ID)
    assert head.change is ChangeKind.BASELINE and head.tokens == 1000
    assert "inferred" in head.label.lower()
    assert all(c.change is ChangeKind.BASELINE for c in snap.changes)


def test_later_snapshots_diff_added_replaced_removed_and_never_rescale() -> None:
    log = ContextLog()
    log.add("a", Category.RESULTS, 400, source_id="call1", source_kind=SourceKind.TOOL)
    log.add("b", Category.ASSISTANT, 80)
    log.observe(obs(1, reported=500))
    log.add("c", Category.RESULTS, 4000, source_id="call2", source_kind=SourceKind.TOOL)
    log.add("b", Category.ASSISTANT, 120)  # replaced: 20 → 30 tokens
    assert log.remove("a")
    assert not log.remove("never-added")
    log.observe(obs(2, reported=99_999))
    first, second = log.replay()
    assert first.baseline and not second.baseline
    changes = {c.id: c for c in second.changes}
    assert set(changes) == {"a", "b", "c"}
    assert (changes["c"].change, changes["c"].delta_tokens, changes["c"].source_id) == (
        ChangeKind.ADDED,
        1000,
        "call2",
    )
    assert (changes["b"].change, changes["b"].tokens, changes["b"].delta_tokens) == (
        ChangeKind.REPLACED,
        30,
        10,
    )
    assert (changes["a"].change, changes["a"].tokens, changes["a"].delta_tokens) == (
        ChangeKind.REMOVED,
        0,
        -100,
    )
    # sorted by |delta|, largest first
    assert [c.id for c in second.changes] == ["c", "a", "b"]
    # the head stays what it was at the first request; the new reported size is not
    # used to rescale anything
    head = 500 - (100 + 20)
    assert dict(second.categories)[Category.UNATTRIBUTED] == head
    assert second.estimated_tokens == 1000 + 30 + head


def test_model_change_starts_a_new_baseline() -> None:
    log = ContextLog()
    log.add("a", Category.PROMPTS, 8)
    log.observe(obs(1, model="m1"))
    log.add("b", Category.ASSISTANT, 8)
    log.observe(obs(2, model="m1"))
    log.observe(obs(3, model="m2"))
    snaps = log.replay()
    assert [s.baseline for s in snaps] == [True, False, True]
    assert {c.id for c in snaps[2].changes} == {"a", "b"}


def test_clear_keeps_only_the_inferred_head_and_reports_removals() -> None:
    log = ContextLog()
    log.add("a", Category.RESULTS, 40)
    log.observe(obs(1, reported=110))
    assert log.clear() == 1
    log.add("s", Category.SUMMARIES, 8)
    log.observe(Observation(2, AnchorKind.COMPACTION, "c1", Stage.POST_COMPACTION))
    _, post = log.replay()
    assert dict(post.categories) == {Category.SUMMARIES: 2, Category.UNATTRIBUTED: 100}
    kinds = {c.id: c.change for c in post.changes}
    assert kinds == {"a": ChangeKind.REMOVED, "s": ChangeKind.ADDED}


def test_changes_are_capped_at_64_and_the_rest_counted() -> None:
    log = ContextLog()
    log.observe(obs(1))
    for index in range(100):
        log.add(f"i{index}", Category.RESULTS, 4 * (index + 1))
    log.observe(obs(2))
    _, snap = log.replay()
    assert len(snap.changes) == MAX_CHANGES
    assert snap.omitted_changes == 100 - MAX_CHANGES
    assert snap.changes[0].id == "i99"
    assert sum(t for _, t in snap.categories) == sum(range(1, 101))


def test_dropped_observation_gives_no_snapshot_and_does_not_reset_the_diff() -> None:
    log = ContextLog()
    log.add("a", Category.PROMPTS, 4)
    log.observe(obs(1))
    log.add("b", Category.ASSISTANT, 4)
    log.settle(log.observe(obs(2)), dropped=True)
    log.observe(obs(3))
    snaps = log.replay()
    assert [s.time_ns for s in snaps] == [1, 3]
    assert [c.id for c in snaps[1].changes] == ["b"]


def test_head_is_not_inferred_when_estimate_exceeds_reported() -> None:
    log = ContextLog()
    log.add("a", Category.RESULTS, 4000)
    log.observe(obs(1, reported=10))
    (snap,) = log.replay()
    assert Category.UNATTRIBUTED not in dict(snap.categories)


def test_head_is_measured_again_after_a_compaction() -> None:
    # GIVEN a journal that starts mid-session: the first request carries 10,000
    # tokens of history the journal does not show
    log = ContextLog()
    log.add("p", Category.PROMPTS, 40)
    log.observe(obs(1, reported=10_010))
    log.clear()
    log.add("s", Category.SUMMARIES, 400)
    log.observe(obs(2, reported=2_100))
    first, after = log.replay()
    assert dict(first.categories)[Category.UNATTRIBUTED] == 10_000
    # THEN after the compaction the head is what the next request leaves unexplained
    assert dict(after.categories) == {Category.SUMMARIES: 100, Category.UNATTRIBUTED: 2_000}
    head = next(c for c in after.changes if c.id == INFERRED_HEAD_ID)
    assert (head.change, head.delta_tokens) == (ChangeKind.REPLACED, -8_000)


def test_native_categories_replace_item_totals_but_changes_stay_items() -> None:
    log = ContextLog()
    log.add("p", Category.PROMPTS, 40, source_kind=SourceKind.PROMPT)
    native = ((Category.SYSTEM, 3000), (Category.TOOLS, 5000), (Category.PROMPTS, 12))
    log.observe(
        Observation(
            1,
            AnchorKind.RESPONSE,
            "r1",
            Stage.REQUEST_INPUT,
            reported_tokens=9000,
            native_categories=native,
            basis=Basis.NATIVE_BYTES,
            item_stage="transcript-observed",
        )
    )
    (snap,) = log.replay()
    assert dict(snap.categories) == dict(native)
    assert snap.basis is Basis.NATIVE_BYTES and snap.item_stage == "transcript-observed"
    assert [c.id for c in snap.changes] == ["p"]  # no inferred head beside native numbers


def test_an_observation_is_never_changed_after_it_is_logged() -> None:
    # GIVEN an observation logged before its request's usage is known
    log = ContextLog()
    log.add("a", Category.PROMPTS, "x" * 40)
    made = obs(1)
    logged = log.observe(made)
    # WHEN the usage is settled
    settled = log.settle(logged, reported_tokens=100, window_tokens=1000)
    # THEN the log holds a corrected copy, and the observation that was logged is unchanged
    assert made.reported_tokens is None and made.window_tokens is None
    assert log.observation(logged) is settled and settled.reported_tokens == 100
    # (Assigning a field is refused by the type checker, as for the model's classes:
    # `records.frozen`, not at run time.)
    (snapshot,) = log.replay()
    assert (snapshot.reported_tokens, snapshot.window_tokens) == (100, 1000)


def test_a_snapshot_carries_each_fact_of_its_observation_under_its_own_name() -> None:
    # The replay makes a snapshot by position (once per request): every fact set apart,
    # so a field given in the wrong place shows here.

    log = ContextLog()
    log.add("p1", Category.PROMPTS, "x" * 40)
    log.observe(
        Observation(
            11,
            AnchorKind.COMPACTION,
            "c1",
            Stage.POST_COMPACTION,
            model="m9",
            reported_tokens=12_000,
            window_tokens=13_000,
            effective_window_tokens=14_000,
            compact_threshold_tokens=15_000,
            basis=Basis.CALIBRATED,
            coverage=Coverage.COMPLETE,
            item_stage="items-stage",
        )
    )
    (snapshot,) = log.replay(infer_head=False)
    assert (snapshot.time_ns, snapshot.anchor, snapshot.anchor_id, snapshot.stage) == (
        11,
        AnchorKind.COMPACTION,
        "c1",
        Stage.POST_COMPACTION,
    )
    assert (snapshot.basis, snapshot.coverage, snapshot.item_stage) == (
        Basis.CALIBRATED,
        Coverage.COMPLETE,
        "items-stage",
    )
    assert (
        snapshot.reported_tokens,
        snapshot.window_tokens,
        snapshot.effective_window_tokens,
        snapshot.compact_threshold_tokens,
        snapshot.model,
    ) == (12_000, 13_000, 14_000, 15_000, "m9")
    assert snapshot.baseline is True and snapshot.omitted_changes == 0
    assert snapshot.categories == ((Category.PROMPTS, 10),)
    (change,) = snapshot.changes
    assert (change.id, change.change, change.tokens, change.delta_tokens, change.chars) == (
        "p1",
        ChangeKind.BASELINE,
        10,
        10,
        40,
    )


def test_changes_of_equal_size_are_ordered_by_id_whatever_their_kind() -> None:
    # Largest |delta| first, ties by id: an addition and a removal of the same size sort
    # by their ids alone, and a replacement by its |delta|.
    log = ContextLog()
    log.add("b-old", Category.RESULTS, "x" * 40)  # 10 tokens
    log.add("z-grows", Category.RESULTS, "x" * 4)  # 1 token
    log.observe(obs(1))
    log.remove("b-old")  # -10
    log.add("a-new", Category.RESULTS, "y" * 40)  # +10
    log.add("z-grows", Category.RESULTS, "x" * 48)  # 1 -> 12: +11
    log.add("c-small", Category.RESULTS, "y" * 8)  # +2
    log.observe(obs(2))
    _, later = log.replay(infer_head=False)
    assert [(c.id, c.change, c.delta_tokens) for c in later.changes] == [
        ("z-grows", ChangeKind.REPLACED, 11),
        ("a-new", ChangeKind.ADDED, 10),
        ("b-old", ChangeKind.REMOVED, -10),
        ("c-small", ChangeKind.ADDED, 2),
    ]
