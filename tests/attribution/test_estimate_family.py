"""The calibrated table's class ratios per tokenizer family (issue 28.5): which family a
model id belongs to, the estimator taking the ratios of the family that served most of a
journal's requests, the loader reading a journal with them and saying so on `profile (1)`,
and the calibration script fitting a family's ratios on that family's inputs alone.

Hand-made journals and ratios only; the corpus figures are in test_estimate_claude_new.py."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import (
    CLAUDE,
    CLAUDE_47,
    FAMILY_FACT,
    GEMINI,
    OPENAI,
    OTHER_FAMILY,
    TextClass,
    calibrated,
    calibrated_estimation,
    family_fact,
    majority_family,
    tokenizer_family,
    use_estimator,
)
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Category, Session
from shared_paths import REPO


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-opus-4-8", CLAUDE_47),
        ("claude-opus-4-7", CLAUDE_47),
        ("claude-fable-5", CLAUDE_47),
        ("claude-opus-4-10", CLAUDE_47),
        ("anthropic/claude-opus-4.7", CLAUDE_47),
        ("claude-opus-4-6", CLAUDE),
        ("claude-sonnet-4-6", CLAUDE),
        ("claude-opus-4.6", CLAUDE),
        ("claude-sonnet-4-5-20250929", CLAUDE),
        ("claude-sonnet-4-20250514", CLAUDE),  # a date is not a minor version
        ("claude-opus-4-1-20250805", CLAUDE),
        ("claude-3-7-sonnet-20250219", CLAUDE),
        ("converse/jp.anthropic.claude-haiku-4-5-20251001-v1:0", CLAUDE),
        ("gpt-5.5", OPENAI),
        ("gpt-5.3-codex-spark", OPENAI),
        ("o3", OPENAI),
        ("gemini-3-flash-preview", GEMINI),
        ("minimax-m3", OTHER_FAMILY),
        ("monkeycode-basic/deepseek-v4-flash", OTHER_FAMILY),
        ("<synthetic>", OTHER_FAMILY),
        (None, OTHER_FAMILY),
    ],
)
def test_the_tokenizer_family_of_a_model_id(model: str | None, family: str) -> None:
    assert tokenizer_family(model) == family


SHARED = {c: 4.0 for c in TextClass}
NEWER = {c: 2.0 for c in TextClass}


def test_the_estimator_takes_the_ratios_of_the_family_of_most_requests() -> None:
    table = calibrated(SHARED, 10.0, {}, {CLAUDE_47: NEWER})
    assert majority_family(["claude-opus-4-8"] * 3 + ["claude-haiku-4-5"] * 2) == CLAUDE_47
    assert majority_family([]) is None
    newer = table.for_models(["claude-opus-4-8"] * 3 + ["claude-haiku-4-5"] * 2)
    assert newer.family == CLAUDE_47 and newer.ratios == NEWER
    assert newer.text_tokens("x" * 40) == 40 / 2 + 10  # 20 tokens of text, the item's 10
    assert table.text_tokens("x" * 40) == 40 / 4 + 10
    # A family without ratios of its own, or no model at all: the shared ones.
    assert table.for_models(["gpt-5.5", "claude-opus-4-8"] * 0 + ["gpt-5.5"]) is table
    assert table.for_models([]) is table
    back = newer.for_models(["claude-opus-4-6"])
    assert back.family is None and back.ratios == SHARED
    # Without families (chars/4, a table fitted without them): nothing changes.
    plain = calibrated(SHARED, 10.0, {})
    assert plain.for_models(["claude-opus-4-8"]) is plain
    with pytest.raises(ValueError, match=r"\(claude-4.7\+\) lacks code"):
        calibrated(SHARED, 0.0, {}, {CLAUDE_47: {TextClass.PROSE: 2.0}})


LISTING = "".join(f"{n:>6}→  const value{n} = compute({n}, [a, b]);\n" for n in range(1, 41))


def _journal(path: Path, models: list[str]) -> Path:
    """A Claude Code transcript: a prompt, then one request per model in `models`, each
    reading the same file listing (a tool call and its result)."""
    records: list[dict[str, Any]] = []

    def record(kind: str, n: int, message: dict[str, Any]) -> None:
        records.append(
            {
                "type": kind,
                "sessionId": "s-1",
                "uuid": f"{kind}-{n}",
                "parentUuid": records[-1]["uuid"] if records else None,
                "timestamp": f"2026-11-01T10:{n // 60:02d}:{n % 60:02d}Z",
                "message": message,
            }
        )

    record("user", 0, {"role": "user", "content": "Read the file, please."})
    for n, model in enumerate(models, start=1):
        call = f"toolu_{n}"
        usage = {"input_tokens": 1000 + 600 * n, "output_tokens": 20}
        content = [{"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": "a.js"}}]
        record(
            "assistant",
            2 * n - 1,
            {
                "id": f"m{n}",
                "role": "assistant",
                "model": model,
                "usage": usage,
                "content": content,
            },
        )
        result = [{"type": "tool_result", "tool_use_id": call, "content": LISTING}]
        record("user", 2 * n, {"role": "user", "content": result})
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _read(path: Path) -> tuple[Session, Diagnostics]:
    diagnostics = Diagnostics()
    with use_estimator(calibrated(SHARED, 0.0, {}, {CLAUDE_47: NEWER})):
        (session,) = load([path], diagnostics).sessions
    return session, diagnostics


def _results(session: Session) -> int:
    last = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE][-1]
    return dict(last.categories)[Category.RESULTS]


def test_the_loader_reads_a_journal_with_its_models_family(tmp_path: Path) -> None:
    newer, _ = _read(_journal(tmp_path / "new.jsonl", ["claude-opus-4-8"] * 3))
    older, _ = _read(_journal(tmp_path / "old.jsonl", ["claude-opus-4-6"] * 3))
    # The same tool results (two of them before the last request), each at its family's
    # characters per token.
    assert _results(newer) == 2 * math.ceil(len(LISTING) / 2)
    assert _results(older) == 2 * math.ceil(len(LISTING) / 4)
    assert dict(newer.facts)[FAMILY_FACT].startswith(f"{CLAUDE_47}: ")
    assert dict(newer.facts)[FAMILY_FACT].endswith("(its own class ratios)")
    assert dict(older.facts)[FAMILY_FACT].startswith(f"{CLAUDE}: ")
    assert dict(older.facts)[FAMILY_FACT].endswith("(the shared class ratios)")
    # A model switch: the family of most requests measures the whole journal.
    mixed, _ = _read(
        _journal(tmp_path / "mixed.jsonl", ["claude-opus-4-6"] + ["claude-fable-5"] * 2)
    )
    assert _results(mixed) == _results(newer)
    # One family measures a journal group: a session on another model says whose it was.
    group = calibrated(SHARED, 0.0, {}, {CLAUDE_47: NEWER}).for_models(["claude-opus-4-8"])
    fact = family_fact(group, ["claude-haiku-4-5"])
    assert fact.startswith(f"{CLAUDE_47}: ") and fact.endswith("this session's is claude)")
    # Read twice, but every warning is said once.
    assert (
        _read(tmp_path / "new.jsonl")[1].accounting()
        == _read(tmp_path / "old.jsonl")[1].accounting()
    )


def test_profile_names_the_family_whose_ratios_measured_the_session(
    tmp_path: Path, export_trace: Any
) -> None:
    exported = export_trace(
        _journal(tmp_path / "new.jsonl", ["claude-opus-4-8"] * 3), args=("--estimate", "calibrated")
    )
    (profile,) = [s for s in exported.view.slices if s.name == "profile (1)"]
    fact = profile.args[FAMILY_FACT]
    assert fact.startswith("claude-4.7+: Claude Opus 4.7 and later") and "its own" in fact
    assert profile.args["estimation"] == calibrated_estimation(fact)
    assert profile.args["estimation"].endswith(f"; class ratios of tokenizer family {fact}")
    # chars/4 (the default) has no table, so no family.
    default = export_trace(tmp_path / "new.jsonl")
    (profile,) = [s for s in default.view.slices if s.name == "profile (1)"]
    assert FAMILY_FACT not in profile.args


sys.path.insert(0, str(REPO / "scripts"))


@pytest.mark.slow
def test_a_family_gets_ratios_of_its_own_fitted_on_its_inputs() -> None:
    """Requests of one harness whose growth is code at 3 characters per token on two inputs
    and at 2 on two inputs of the newer family: the newer family's code ratio is fitted on
    its inputs alone, the shared one on the others."""
    import _corpus
    import calibrate

    points = []
    code_at = list(TextClass).index(TextClass.CODE)
    for family, ratio in ((CLAUDE, 3.0), (CLAUDE_47, 2.0)):
        for i in range(1, 40):
            growth = [0.0] * len(_corpus.FEATURES)
            growth[code_at], growth[-1] = 900.0 * i, float(i % 5 + 1)
            points.append(
                _corpus.Point(
                    f"{family}{i % 2}",
                    "s",
                    tuple(growth),
                    900.0 * i / ratio + 30.0 * growth[-1],
                    1e4 + i,
                    "claude-code",
                    family=family,
                )
            )
    table = calibrate.fit(points, prior_chars=0.0, family_prior_chars=0.0)
    assert table.ratios[TextClass.CODE] == pytest.approx(3.0, rel=0.01)
    assert table.ratios_by_family[CLAUDE_47][TextClass.CODE] == pytest.approx(2.0, rel=0.01)
    assert table.per_item_by_harness["claude-code"] == pytest.approx(30.0, rel=0.02)
    assert set(table.ratios_by_family) == {CLAUDE_47}  # only calibrate.OWN_FAMILIES
    # Without the family's inputs, or without families: one set of ratios.
    assert calibrate.fit([p for p in points if p.family == CLAUDE]).ratios_by_family == {}
    assert calibrate.fit(points, families_fitted=()).ratios_by_family == {}
    estimator = table.estimator().for_harness("claude-code").for_models(["claude-opus-4-8"])
    assert estimator.text_tokens("x = [1, 2];\n" * 100) == pytest.approx(1200 / 2 + 30, abs=1)
