"""The shared estimator (issue 19): content classes on small hand-made items, the shipped
calibrated table, the default staying characters / 4, the summary's estimate error, and
one real session exported with `--estimate calibrated` under the trace contract."""

from __future__ import annotations

import dataclasses
import json
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from test_claude_code import ENTIRE_4B
from typer.testing import CliRunner

from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.cli import app
from agent_profiler.estimate import (
    CALIBRATED_NOTE,
    CHARS4,
    CHARS4_NOTE,
    CLAUDE_47,
    FAMILY_FACT,
    Estimator,
    TextClass,
    calibrated,
    classify,
    current,
    load_calibration,
    load_family_ratios,
    tool_call_text,
    use_estimator,
)
from agent_profiler.model import AnchorKind, Basis, Category, Stage
from shared_paths import CORPUS, REPO

SHARED = CORPUS
runner = CliRunner()

# One small item per class, written by hand.
PROSE = "The quick brown fox jumps over the lazy dog, and then it rests."
CODE = "def area(r):\n    return 3.14159 * r ** 2  # circle"
JSON_LINE = '{"name": "agent", "calls": [1, 2, 3], "ok": true}'
CJK = "上下文窗口的组成"
CYRILLIC = "Привет мир"
BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (PROSE, {TextClass.PROSE: 63}),
        (CODE, {TextClass.CODE: 50}),
        (JSON_LINE, {TextClass.JSON: 49}),
        (CJK, {TextClass.CJK: 8}),
        (CYRILLIC, {TextClass.OTHER: 9, TextClass.PROSE: 1}),  # the space is ASCII prose
        (BASE64, {TextClass.OPAQUE: 60}),
        ("", {}),
    ],
)
def test_each_class_on_a_hand_made_item(text: str, expected: dict[TextClass, int]) -> None:
    assert classify(text) == expected
    assert sum(expected.values()) == len(text)


def test_a_numbered_file_listing_is_code_even_where_a_line_reads_as_prose() -> None:
    """Claude Code's Read (`   12→…` and 2.1.16x's `12\t…`) and `cat -n` number every line
    of a file: a comment in words inside it is still source code, not prose (on the
    planetfall 2.1.179 journal such reads are ≈ 2.1 characters per token)."""
    comment = "the drone bay shows the conveyor belt and the blocks"
    listing = f"    12\t// {comment}\n13→    // {comment}"
    # (the arrow is a non-ASCII character: its own class)
    assert classify(listing) == {TextClass.CODE: len(listing) - 1, TextClass.OTHER: 1}
    assert classify(f"// {comment}") == {TextClass.PROSE: len(comment) + 3}
    # a sentence that starts with a number and a tab-less space stays prose
    assert classify(f"12 {comment}") == {TextClass.PROSE: len(comment) + 3}


def test_mixed_text_is_split_by_line_and_adds_up() -> None:
    text = f"{PROSE}\n{CODE}\n{JSON_LINE}\n{BASE64} {CJK}"
    counts = classify(text)
    assert sum(counts.values()) == len(text)
    assert counts[TextClass.OPAQUE] == 60 and counts[TextClass.CJK] == 8
    assert counts[TextClass.JSON] == 50  # its line and its newline
    # A long word without digits is not base64, and a long number is not either.
    assert TextClass.OPAQUE not in classify("a" * 80 + " " + "7" * 80)
    # A run counts from 40 characters, also when it is the whole text.
    assert classify("a1" * 20) == {TextClass.OPAQUE: 40}
    assert TextClass.OPAQUE not in classify("a1" * 19 + "a")


def test_a_calibration_table_must_name_every_class() -> None:
    with pytest.raises(ValueError) as caught:
        calibrated({TextClass.PROSE: 4.0, TextClass.CODE: 3.0})
    assert str(caught.value) == "calibration table lacks json, cjk, other, opaque, unknown"


def test_default_is_characters_over_four_rounded_up_per_item() -> None:
    assert current() is CHARS4
    for text in (PROSE, CODE, JSON_LINE, CJK, CYRILLIC, BASE64):
        assert CHARS4.text_tokens(text) == math.ceil(len(text) / 4)
    assert [CHARS4.chars_tokens(n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]


def test_shipped_table_pins_every_class() -> None:
    """The shipped table on the hand-made items: a change to the table or to the classes
    must show up here (then re-run scripts/calibrate.py and update the README table)."""
    ratios, per_item, by_harness = load_calibration()
    assert set(ratios) == set(TextClass)
    assert all(0.5 <= r <= 8 for r in ratios.values()) and 0 <= per_item <= 200
    # Every harness with at least two corpus inputs has its own framing cost (Muse has
    # none with requests, so it keeps the shared one).
    assert set(by_harness) == {"claude-code", "codex", "pi", "gemini-cli", "opencode"}
    assert all(0 <= v <= 200 for v in by_harness.values())
    # Code and JSON cost more tokens per character than prose: the bias issue 19 is about.
    assert ratios[TextClass.CODE] < ratios[TextClass.PROSE]
    assert ratios[TextClass.JSON] < ratios[TextClass.PROSE]
    estimator = calibrated()
    assert estimator.basis is Basis.CALIBRATED
    items = (PROSE, CODE, JSON_LINE, CJK, CYRILLIC, BASE64)
    assert [estimator.text_tokens(t) for t in items] == [38, 46, 42, 37, 36, 61]
    assert estimator.chars_tokens(400) == 146  # a redaction marker's length: unknown class
    assert estimator.text_tokens("") == 0 and estimator.chars_tokens(0) == 0
    for text in (PROSE, CODE, BASE64):
        expected = sum(n / ratios[c] for c, n in classify(text).items()) + per_item
        assert estimator.text_tokens(text) == math.ceil(expected)
    # The same items in a Claude Code and in a Gemini CLI request: only the framing differs.
    claude, gemini = estimator.for_harness("claude-code"), estimator.for_harness("gemini-cli")
    assert [claude.text_tokens(t) for t in items] == [99, 107, 104, 99, 98, 122]
    assert [gemini.text_tokens(t) for t in items] == [28, 36, 33, 28, 26, 51]
    assert claude.chars_tokens(400) == 208 and gemini.chars_tokens(400) == 137
    assert estimator.for_harness("muse") is estimator
    # The same items in a request of a model with Anthropic's updated tokenizer: its own
    # class ratios (code at ≈ 2.2 characters per token instead of ≈ 3.1).
    families = load_family_ratios()
    assert set(families) == {CLAUDE_47}
    assert set(families[CLAUDE_47]) == set(TextClass)
    assert families[CLAUDE_47][TextClass.CODE] < ratios[TextClass.CODE]
    newer = claude.for_models(["claude-opus-4-8"])
    assert newer.family == CLAUDE_47 and newer.ratios == families[CLAUDE_47]
    assert [newer.text_tokens(t) for t in items] == [99, 114, 104, 99, 97, 121]
    assert newer.chars_tokens(400) == 208  # no such evidence: the shared unknown ratio
    assert claude.for_models(["claude-opus-4-6", "gpt-5.5"]) is claude


def test_a_real_session_is_measured_with_its_harness_cost() -> None:
    """The shipped per-harness cost reaches a real Claude Code journal through the loader:
    the estimate differs from the shared cost's by the cost difference on every item."""
    ratios, per_item, by_harness = load_calibration()

    def last(estimator: Estimator) -> int:
        from agent_profiler.diagnostics import Diagnostics
        from agent_profiler.loader import load

        with use_estimator(estimator):
            (session,) = load([ENTIRE_4B], Diagnostics()).sessions
        snaps = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE]
        # Items only: the inferred head absorbs the difference at the anchor.
        return sum(t for c, t in snaps[-1].categories if c is not Category.UNATTRIBUTED)

    own, shared = last(calibrated()), last(calibrated(ratios, per_item, {}))
    assert by_harness["claude-code"] > per_item and own > shared


def test_a_log_measures_with_the_estimator_of_its_load() -> None:
    table = {c: 2.0 for c in TextClass}
    with use_estimator(calibrated(table, 0.0)):
        log = ContextLog()
    log.add("a", Category.PROMPTS, "x" * 10)  # the log keeps its estimator
    log.add("b", Category.RESULTS, 7)  # a length only: unknown class
    log.observe(Observation(0, AnchorKind.RESPONSE, "r1", Stage.TRANSCRIPT_OBSERVED))
    (snapshot,) = log.replay()
    assert snapshot.basis is Basis.CALIBRATED
    assert dict(snapshot.categories) == {Category.PROMPTS: 5, Category.RESULTS: 4}
    assert current() is CHARS4  # the block restored the default


def test_the_inferred_head_is_measured_with_the_same_estimator() -> None:
    def head(estimator: Estimator) -> int:
        with use_estimator(estimator):
            log = ContextLog()
        log.add("p", Category.PROMPTS, "y" * 400)
        log.observe(
            Observation(
                0, AnchorKind.RESPONSE, "r1", Stage.TRANSCRIPT_OBSERVED, reported_tokens=1000
            )
        )
        (snapshot,) = log.replay()
        assert snapshot.estimated_tokens == 1000
        return dict(snapshot.categories)[Category.UNATTRIBUTED]

    assert head(CHARS4) == 900
    assert head(calibrated({c: 2.0 for c in TextClass}, 0.0)) == 800


def test_tool_arguments_are_sized_in_characters_by_one_function() -> None:
    assert tool_call_text("Bash", {"command": "échó"}) == 'Bash{"command":"échó"}'
    assert tool_call_text("apply_patch", "*** Begin Patch") == "apply_patch*** Begin Patch"
    assert tool_call_text("noop", None) == "noop"


def _summary(*args: str) -> dict[str, Any]:
    result = runner.invoke(app, ["summary", str(ENTIRE_4B), "--json", *args])
    assert result.exit_code == 0, result.output
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows[0]


def test_summary_reports_the_estimate_error_of_a_real_session() -> None:
    """Claude Code 2.1.14 (entire-4b): 40 requests; chars/4 runs ~7% below the reported
    input after the first request, the calibrated table (fitted on every harness) ~5%."""
    before = _summary()
    after = _summary("--estimate", "calibrated")
    assert before["estimate_basis"] == "chars/4"
    assert after["estimate_basis"] == "chars/calibrated-v3"
    assert before["estimate_error_requests"] == after["estimate_error_requests"] == 39
    assert before["estimate_error_median"] == pytest.approx(0.0746, abs=0.0005)
    assert before["estimate_error_worst"] == pytest.approx(0.1102, abs=0.0005)
    assert after["estimate_error_median"] < 0.05
    assert after["estimate_error_worst"] < 0.06
    # Only the estimate changes, never the reported numbers.
    assert before["peak_prompt_tokens"] == after["peak_prompt_tokens"]
    table = runner.invoke(app, ["summary", str(ENTIRE_4B)]).stdout
    assert "est. error" in table and "7.5% / 11.0%" in table


def test_calibrated_export_keeps_the_contract(export_trace: Any) -> None:
    exported = export_trace(ENTIRE_4B, args=("--estimate", "calibrated"))
    contexts = [s.args["context"] for s in exported.view.slices if "context" in s.args]
    assert contexts and {c["basis"] for c in contexts} == {"chars/calibrated-v3"}
    (profile,) = [s for s in exported.view.slices if s.name == "profile (1)"]
    assert profile.args["estimate_basis"] == "chars/calibrated-v3"
    assert "chars/calibrated-v3" in profile.args["estimation"]
    # Claude Opus 4.5: the shared class ratios, and the profile says whose they are.
    family = "claude: earlier Claude models (Claude 3 to Opus 4.6, Sonnet 4.6, Haiku 4.5)"
    assert profile.args[FAMILY_FACT] == f"{family} (the shared class ratios)"
    assert profile.args["estimation"].endswith(
        f"tokenizer family {family} (the shared class ratios)"
    )
    # the Largest additions and the context counters say which estimate they show
    assert _estimate_notes(exported.view) == {CALIBRATED_NOTE}


def _estimate_notes(view: Any) -> set[str]:
    additions = [s for s in view.slices if s.category == "agentprof-additions"]
    assert additions
    notes = {s.args["estimate"] for s in additions}
    for track in view.tracks.values():
        if track.name.startswith("Context: "):
            notes |= {n for n in (CHARS4_NOTE, CALIBRATED_NOTE) if n in track.description}
    return notes


def test_default_export_says_nothing_new(export_trace: Any) -> None:
    (profile,) = [s for s in export_trace(ENTIRE_4B).view.slices if s.name == "profile (1)"]
    assert "estimate_basis" not in profile.args
    assert profile.args["estimation"].startswith("context categories: characters / 4")
    assert _estimate_notes(export_trace(ENTIRE_4B).view) == {CHARS4_NOTE}


def test_unknown_estimator_is_a_usage_error() -> None:
    result = runner.invoke(app, ["summary", str(ENTIRE_4B), "--estimate", "tokens"])
    assert result.exit_code == 2


# ------------------------------------------------------------------ the calibration script

sys.path.insert(0, str(REPO / "scripts"))


def _synthetic(per_item: dict[str, float], inputs: dict[str, int]) -> list[Any]:
    """Requests whose growth is exactly 3 chars/token of code, 5 of prose and the
    harness's tokens per item, spread over `inputs[harness]` inputs per harness."""
    import _corpus

    points = []
    for harness, cost in per_item.items():
        for i in range(1, 60):
            code, prose, items = 900.0 * i, 400.0 * (i % 7), float(i + (5 * i) % 11)
            growth = [0.0] * len(_corpus.FEATURES)
            growth[list(TextClass).index(TextClass.CODE)] = code
            growth[list(TextClass).index(TextClass.PROSE)] = prose
            growth[-1] = items
            reported_growth = code / 3 + prose / 5 + cost * items
            points.append(
                _corpus.Point(
                    f"{harness}{i % inputs[harness]}",
                    "s",
                    tuple(growth),
                    reported_growth,
                    1e4 + i,
                    harness,
                )
            )
    return points


Fit = Callable[..., Any]


@pytest.fixture(scope="session")
def fit() -> Fit:
    """`calibrate.fit`, each distinct fit computed once per test session: a fit is pure
    Python (2-5 s each on 2 cores), and the tests below ask for some of them twice."""
    import calibrate

    fitted: dict[tuple[Any, ...], Any] = {}

    def run(points: Sequence[Any], **options: Any) -> Any:
        key = (tuple(points), tuple(sorted(options.items())))
        if key not in fitted:
            fitted[key] = calibrate.fit(points, **options)
        return fitted[key]

    return run


@pytest.fixture(scope="session")
def corpus_points(corpus_points_by_input: dict[str, list[Any]]) -> list[Any]:
    """Every calibration point of the shared corpus (conftest.py: read once per session)."""
    return [point for points in corpus_points_by_input.values() for point in points]


@pytest.mark.slow
def test_the_solver_recovers_known_ratios(fit: Fit) -> None:
    import calibrate

    # One harness at 20 tokens per item: the fit must find the truth (the prior is
    # negligible here), as the shared and as the harness's own cost.
    table = fit(_synthetic({"codex": 20.0}, {"codex": 3}), prior_chars=0.0)
    assert table.ratios[TextClass.CODE] == pytest.approx(3.0, rel=0.01)
    assert table.ratios[TextClass.PROSE] == pytest.approx(5.0, rel=0.01)
    assert table.per_item == pytest.approx(20.0, rel=0.01)
    assert table.per_item_by_harness["codex"] == pytest.approx(20.0, rel=0.01)
    # With the prior, a class the points never show keeps its prior ratio, and the
    # classes they do show move away from their priors (3.2 and 4.2) towards the truth.
    shrunk = fit(_synthetic({"codex": 20.0}, {"codex": 3}))
    assert shrunk.ratios[TextClass.CJK] == pytest.approx(calibrate.PRIOR[TextClass.CJK], rel=0.01)
    assert shrunk.ratios[TextClass.CODE] < calibrate.PRIOR[TextClass.CODE]


@pytest.mark.slow
def test_the_per_item_cost_is_fitted_per_harness(fit: Fit) -> None:
    # Two harnesses frame their items differently (40 and 10 tokens): each gets its own
    # cost, and the shared value lies between them.
    two = _synthetic({"claude-code": 40.0, "gemini-cli": 10.0}, {"claude-code": 2, "gemini-cli": 3})
    table = fit(two, prior_chars=0.0)
    assert table.per_item_by_harness["claude-code"] == pytest.approx(40.0, rel=0.01)
    assert table.per_item_by_harness["gemini-cli"] == pytest.approx(10.0, rel=0.01)
    assert table.ratios[TextClass.CODE] == pytest.approx(3.0, rel=0.01)
    assert 10.0 < table.per_item < 40.0 and table.shared_for == ()
    # A harness seen in one input only keeps the shared cost (its own would be fitted to
    # that one journal).
    points = two + _synthetic({"pi": 25.0}, {"pi": 1})
    table = fit(points, prior_chars=0.0)
    assert "pi" not in table.per_item_by_harness and table.shared_for == ("pi",)
    assert set(table.per_item_by_harness) == {"claude-code", "gemini-cli"}
    # --shared-item: one cost for all, as chars/calibrated-v1 had.
    assert fit(points, prior_chars=0.0, by_harness=False).per_item_by_harness == {}
    # A redacted journal's requests are not fitted, and the table says so.
    redacted = [dataclasses.replace(p, redacted=True) for p in points if p.input == "pi0"]
    kept = [p for p in points if p.input != "pi0"]
    again = fit(kept + redacted, prior_chars=0.0)
    assert again.excluded == ("pi0",) and again == dataclasses.replace(
        fit(kept, prior_chars=0.0), excluded=("pi0",)
    )


@pytest.mark.slow
def test_the_shipped_table_is_what_the_script_fits_on_the_corpus(
    fit: Fit, corpus_points: list[Any]
) -> None:
    table = fit(corpus_points)
    shipped, shipped_per_item, shipped_by_harness = load_calibration()
    assert table.ratios == pytest.approx(shipped, abs=0.002)
    assert table.per_item == pytest.approx(shipped_per_item, abs=0.002)
    assert table.per_item_by_harness == pytest.approx(shipped_by_harness, abs=0.002)
    shipped_families = load_family_ratios()
    assert set(table.ratios_by_family) == set(shipped_families) == {CLAUDE_47}
    for family, ratios in shipped_families.items():
        assert table.ratios_by_family[family] == pytest.approx(ratios, abs=0.002)
    # The one redacted journal of the corpus is left out of the fit, by name.
    assert table.excluded == ("session-bridge-1.4.3-compaction",)


def test_a_rule_line_of_one_repeated_character_counts_with_its_line() -> None:
    """`─` × 40 (Codex's tool output draws such rules) is tokenized in merged runs like
    `-` × 40: it is counted with its line (code: symbol-dense), not as other scripts; a
    lone `─` or three in a row, and Cyrillic letters, stay `other`."""
    rule = "─" * 40
    assert classify(rule) == classify("-" * 40) == {TextClass.CODE: 40}
    assert classify("a ─ b ─── c")[TextClass.OTHER] == 4
    assert classify("привет")[TextClass.OTHER] == 6
