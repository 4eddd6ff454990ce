"""Edge rules of the shared attribution engine that the harness tests do not reach: what a
natively measured head replaces, when the inferred head is (re)measured or dropped, which
changes count, and what a snapshot passes through. Each test states the rule it pins."""

from __future__ import annotations

from test_attribution import obs

from agent_profiler.attribution import (
    INFERRED_HEAD_ID,
    INFERRED_HEAD_LABEL,
    REDACTED_KIND,
    ContextLog,
)
from agent_profiler.estimate import chars4
from agent_profiler.model import (
    Basis,
    Category,
    ChangeKind,
    Coverage,
    SourceKind,
)

PR, SY, TO, UN, RE = (
    Category.PROMPTS,
    Category.SYSTEM,
    Category.TOOLS,
    Category.UNATTRIBUTED,
    Category.RESULTS,
)


def test_a_native_head_replaces_the_inferred_one_for_good() -> None:
    log = ContextLog()
    log.add("p", PR, 400)  # 100 tokens
    log.observe(obs(1, reported=1_100))  # the head is inferred: 1,000
    log.native_head([("n:sys", SY, 700, "System prompt"), ("n:tools", TO, 300, "Tools")])
    log.observe(obs(2, reported=1_100))
    log.clear()  # a compaction: the native head stays, nothing is inferred again
    log.add("s", Category.SUMMARIES, 40)
    log.observe(obs(3, reported=5_000))
    first, second, third = log.replay()
    assert dict(first.categories) == {PR: 100, UN: 1_000}
    assert dict(second.categories) == {PR: 100, SY: 700, TO: 300}
    changes = {c.id: c for c in second.changes}
    assert changes[INFERRED_HEAD_ID].change is ChangeKind.REMOVED
    native = changes["n:sys"]
    assert (native.change, native.tokens, native.chars, native.label) == (
        ChangeKind.ADDED,
        700,
        None,
        "System prompt",
    )
    assert (native.source_id, native.source_kind) == ("", SourceKind.NONE)
    assert dict(third.categories) == {SY: 700, TO: 300, Category.SUMMARIES: 10}


def test_a_native_head_with_nothing_inferred_yet() -> None:
    log = ContextLog()
    log.native_head([("n:sys", SY, 700, "System prompt")])
    log.add("p", PR, 40)
    log.observe(obs(1, reported=2_000))  # not re-inferred: the head is measured
    (snap,) = log.replay()
    assert dict(snap.categories) == {SY: 700, PR: 10}
    assert {c.id: c.chars for c in snap.changes} == {"n:sys": None, "p": 40}


def test_a_second_native_head_replaces_the_first() -> None:
    log = ContextLog()
    log.native_head([("a", SY, 700, "old")])
    log.observe(obs(1))
    log.native_head([("b", SY, 650, "new")])
    log.observe(obs(2))
    _, second = log.replay()
    assert dict(second.categories) == {SY: 650}
    assert sorted((c.id, c.change, c.delta_tokens) for c in second.changes) == [
        ("a", ChangeKind.REMOVED, -700),
        ("b", ChangeKind.ADDED, 650),
    ]


def test_no_head_when_the_estimate_already_explains_the_request() -> None:
    log = ContextLog()
    log.add("p", PR, 400)
    log.observe(obs(1, reported=100))  # exactly the estimate
    (snap,) = log.replay()
    assert [c.id for c in snap.changes] == ["p"]
    assert dict(snap.categories) == {PR: 100}


def test_the_inferred_head_is_an_unattributed_item_that_says_so() -> None:
    log = ContextLog()
    log.add("p", PR, 400)
    log.observe(obs(1, reported=150))
    (snap,) = log.replay()
    head = {c.id: c for c in snap.changes}[INFERRED_HEAD_ID]
    assert (head.category, head.tokens, head.chars, head.label) == (
        UN,
        50,
        None,
        INFERRED_HEAD_LABEL,
    )
    assert (head.source_id, head.source_kind) == ("", SourceKind.NONE)


def test_after_a_compaction_the_head_is_measured_again_and_may_go() -> None:
    log = ContextLog()
    log.add("p", PR, 400)
    log.observe(obs(1, reported=1_000))  # head 900
    log.clear()
    log.add("big", RE, 8_000)  # 2,000 tokens, more than the next request reports
    log.observe(obs(2, reported=1_500))
    first, second = log.replay()
    assert dict(first.categories) == {PR: 100, UN: 900}
    assert dict(second.categories) == {RE: 2_000}
    assert {c.id: c.change for c in second.changes}[INFERRED_HEAD_ID] is ChangeKind.REMOVED


def test_a_request_without_a_model_does_not_make_the_next_one_a_baseline() -> None:
    log = ContextLog()
    log.add("p", PR, 40)
    log.observe(obs(1, model=None))
    log.add("q", PR, 40)
    log.observe(obs(2, model="m1"))
    log.add("r", PR, 40)
    log.observe(obs(3, model="m2"))
    first, second, third = log.replay()
    assert (first.baseline, second.baseline, third.baseline) == (True, False, True)


def test_empty_items_coming_going_or_unchanged_are_no_change() -> None:
    log = ContextLog()
    log.add("empty", PR, 0)
    log.add("kept", PR, 40)
    log.observe(obs(1))
    log.add("new-empty", PR, 0)  # an empty item comes
    log.remove("empty")  # an empty item goes
    log.add("kept", PR, 40)  # replaced by the same
    log.observe(obs(2))
    log.add("kept", PR, 80)
    log.observe(obs(3))
    _, second, third = log.replay()
    assert second.changes == ()
    (change,) = third.changes
    assert (change.id, change.change, change.tokens, change.delta_tokens) == (
        "kept",
        ChangeKind.REPLACED,
        20,
        10,
    )


def test_a_snapshot_carries_what_was_observed() -> None:
    log = ContextLog()
    log.add("p", PR, 40)
    log.observe(
        obs(
            1,
            reported=500,
            window_tokens=200_000,
            effective_window_tokens=180_000,
            compact_threshold_tokens=160_000,
            native_categories=((SY, 300), (TO, 0), (PR, 200), (Category.OVERHEAD, 1)),
            basis=Basis.NATIVE_SUMMARY,
            coverage=Coverage.COMPLETE,
            item_stage="native",
        )
    )
    (snap,) = log.replay()
    # Zero categories are not listed; a one-token category is.
    assert dict(snap.categories) == {SY: 300, PR: 200, Category.OVERHEAD: 1}
    assert (snap.window_tokens, snap.effective_window_tokens, snap.compact_threshold_tokens) == (
        200_000,
        180_000,
        160_000,
    )
    assert (snap.basis, snap.coverage, snap.item_stage, snap.model) == (
        Basis.NATIVE_SUMMARY,
        Coverage.COMPLETE,
        "native",
        "m1",
    )
    assert [c.id for c in snap.changes] == ["p"]  # no head inferred for a native composition


def test_no_negative_estimates_and_no_invented_labels() -> None:
    assert [chars4(n) for n in (-8, -1, 0, 3)] == [0, 0, 0, 1]
    log = ContextLog()
    log.add("p", PR, 40)  # no label given: none is made up
    log.observe(obs(1))
    (snap,) = log.replay()
    (change,) = snap.changes
    assert (change.label, change.source_id, change.source_kind) == ("", "", SourceKind.NONE)


def test_a_one_token_head_is_still_a_head() -> None:
    log = ContextLog()
    log.add("p", PR, 400)
    log.observe(obs(1, reported=101))
    (snap,) = log.replay()
    assert dict(snap.categories) == {PR: 100, UN: 1}


def test_a_token_count_given_with_the_text_wins_over_the_estimate() -> None:
    # A native count (Muse's lanes, /context rows) is handed over beside the item's text.
    log = ContextLog()
    log.add("p", PR, "four", tokens=250)
    log.observe(obs(1))
    (snapshot,) = log.replay(infer_head=False)
    assert dict(snapshot.categories) == {PR: 250}
    assert snapshot.changes[0].chars == 4


def test_no_inferred_head_when_the_caller_says_so() -> None:
    # A harness whose categories are native (Muse) replays without an inferred head even
    # though the estimator infers one by default.
    log = ContextLog()
    log.add("p", PR, 400)
    log.observe(obs(1, reported=5_000))
    assert log.estimator.infer_head
    (snapshot,) = log.replay(infer_head=False)
    assert dict(snapshot.categories) == {PR: 100}


def test_redaction_placeholders_add_to_what_the_adapter_counted() -> None:
    # OpenCode counts placeholders in part metadata; the log counts those in item text.
    log = ContextLog()
    log.add("p", PR, "a REDACTED b REDACTED c")
    counted = dict(log.unmeasured({REDACTED_KIND: 3, "image": 1, "none": 0}))
    assert counted == {REDACTED_KIND: 5, "image": 1}
