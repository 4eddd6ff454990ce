"""Fit the calibrated estimator's table (characters per token, per content class) from
the corpus's own request deltas, and check it leave-one-input-out.

    python scripts/calibrate.py            # fit, evaluate, print; do not write
    python scripts/calibrate.py --write    # also write src/agent_profiler/calibration.json

Method (the table is `chars/calibrated-v1`):
- Between a session's head anchor (its first request with a reported size, or the
  first after a compaction) and any later request, the inferred head is constant, so
  reported growth = Σ_class x_class · (growth of that class's characters), where
  x = tokens per character. Every such request is one equation (`_corpus.points`).
- x is fitted by least absolute *relative* error (|error| / reported, the quantity
  `summary` reports), by iteratively reweighted least squares; each weighted least
  squares step is a box-bounded quadratic solved by coordinate descent (7 unknowns:
  no numpy needed). Each input weighs the same however many requests it has, so the
  two long Pi sessions cannot drown the rest. Bounds: 0.5 to 8 characters per token.
- A class with little evidence keeps a prior (pseudo-observations of `PRIOR_CHARS`
  characters at the prior ratio), e.g. CJK at about one character per token.
Nothing is ever scaled per session or per request: the table is one fixed set of
ratios, and the head is inferred with the same estimator at run time.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence

import _corpus
import fidelity
from agent_profiler.estimate import CALIBRATION_FILE, TextClass

VERSION = "chars/calibrated-v1"
TABLE_PATH = _corpus.REPO / "src" / "agent_profiler" / CALIBRATION_FILE
# Prior characters per token (typical BPE figures) for classes the corpus barely has.
PRIOR = {
    TextClass.PROSE: 4.2,
    TextClass.CODE: 3.2,
    TextClass.JSON: 3.0,
    TextClass.CJK: 1.0,
    TextClass.OTHER: 1.5,
    TextClass.OPAQUE: 2.0,
    TextClass.UNKNOWN: 4.0,
}
PRIOR_CHARS = 500000.0
LOW, HIGH = 1 / 8, 2.0  # tokens per character: 8 … 0.5 characters per token
ITEM_LOW, ITEM_HIGH = 0.0, 200.0  # tokens per item
ROUNDS = 40


def solve_box(
    a: list[list[float]], b: list[float], bounds: Sequence[tuple[float, float]]
) -> list[float]:
    """argmin xᵀAx − 2bᵀx within `bounds` (A symmetric positive definite): exact
    coordinate minimisation, clamped, until nothing moves (convex, so it converges)."""
    k = len(b)
    x = [min(max(1 / 4, lo), hi) for lo, hi in bounds]
    for _ in range(2000):
        moved = 0.0
        for c in range(k):
            rest = b[c] - sum(a[c][j] * x[j] for j in range(k) if j != c)
            lo, hi = bounds[c]
            new = min(hi, max(lo, rest / a[c][c])) if a[c][c] > 0 else x[c]
            moved = max(moved, abs(new - x[c]))
            x[c] = new
        if moved < 1e-10:
            break
    return x


def _residual(point: _corpus.Point, x: Sequence[float]) -> float:
    return sum(g * v for g, v in zip(point.growth, x, strict=True)) - point.reported_growth


def fit(
    points: Sequence[_corpus.Point], per_item: bool = True, prior_chars: float = PRIOR_CHARS
) -> tuple[dict[TextClass, float], float]:
    """Characters per token per class and tokens per item, fitted on `points` (see the
    module's method); `per_item=False` fits the classes alone (for comparison)."""
    classes = list(TextClass)
    k = len(_corpus.FEATURES)
    bounds = [(LOW, HIGH)] * len(classes) + [(ITEM_LOW, ITEM_HIGH if per_item else 0.0)]
    per_input: dict[str, int] = defaultdict(int)
    for p in points:
        per_input[p.input] += 1
    typical = statistics.median([p.reported for p in points]) if points else 1.0
    prior = [
        (
            tuple(prior_chars if j == c else 0.0 for j in range(k)),
            prior_chars / PRIOR[cls],
            typical,
        )
        for c, cls in enumerate(classes)
    ]
    weights = [1.0] * len(points)
    x = [1 / 4] * k
    for _ in range(ROUNDS):
        a = [[0.0] * k for _ in range(k)]
        b = [0.0] * k
        rows = [
            (p.growth, p.reported_growth, p.reported, w / per_input[p.input])
            for p, w in zip(points, weights, strict=True)
        ]
        rows += [(g, r, t, 1.0 / max(len(per_input), 1)) for g, r, t in prior]
        for growth, reported_growth, reported, weight in rows:
            scale = weight / reported**2
            for i in range(k):
                if growth[i]:
                    b[i] += scale * growth[i] * reported_growth
                    for j in range(k):
                        a[i][j] += scale * growth[i] * growth[j]
        x = solve_box(a, b, bounds)
        # Reweight towards least absolute relative error (floored so one exact point
        # cannot take all the weight).
        weights = [
            1.0
            / max(
                abs(sum(g * v for g, v in zip(p.growth, x, strict=True)) - p.reported_growth)
                / p.reported,
                0.002,
            )
            for p in points
        ]
    return {cls: round(1 / x[c], 3) for c, cls in enumerate(classes)}, round(x[-1], 3)


def main(argv: list[str]) -> int:
    inputs = _corpus.corpus_inputs()
    if not inputs:
        print(f"no corpus at {_corpus.CORPUS}", file=sys.stderr)
        return 2
    by_input = {path: list(_corpus.points(path)) for path in inputs}
    everything = [p for pts in by_input.values() for p in pts]
    table = fit(everything, per_item="--no-per-item" not in argv)
    print(
        f"{VERSION} fitted on {len(everything)} requests from "
        f"{sum(1 for v in by_input.values() if v)} inputs (characters per token):"
    )
    for cls, ratio in table[0].items():
        evidence = sum(abs(p.growth[list(TextClass).index(cls)]) for p in everything)
        print(f"  {cls.value:8} {ratio:6.2f}   (evidence: {evidence:,.0f} character-requests)")
    print(f"  per item {table[1]:6.2f} tokens")
    print()
    print(fidelity.table(inputs, by_input, per_item="--no-per-item" not in argv))
    if "--write" in argv:
        TABLE_PATH.write_text(
            json.dumps(
                {
                    "version": VERSION,
                    "method": "least absolute relative error on request growth since the "
                    "head anchor, per-class tokens per character, bounded 0.5–8 chars/token "
                    "(scripts/calibrate.py)",
                    "inputs": [p.name for p in inputs if by_input[p]],
                    "requests": len(everything),
                    "chars_per_token": {cls.value: ratio for cls, ratio in table[0].items()},
                    "per_item_tokens": table[1],
                },
                indent=2,
            )
            + "\n"
        )
        print(f"\nwrote {TABLE_PATH.relative_to(_corpus.REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
