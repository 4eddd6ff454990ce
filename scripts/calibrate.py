"""Fit the calibrated estimator's table (characters per token, per content class) from
the corpus's own request deltas, and check it leave-one-input-out.

    python scripts/calibrate.py            # fit, evaluate, print; do not write
    python scripts/calibrate.py --write    # also write src/agent_profiler/calibration.json

    python scripts/calibrate.py --shared-item   # one per-item cost for all (as -v1)
    python scripts/calibrate.py --evidence-as-exported   # hidden thinking as an export
                                                  # sizes it (measured, not shipped)

Method (the table is `chars/calibrated-v3`):
- Between a session's head anchor (its first request with a reported size, or the
  first after a compaction) and any later request, the inferred head is constant, so
  reported growth = Σ_class x_class · (growth of that class's characters)
  + y_harness · (growth of the non-empty items), where x = tokens per character and
  y = the harness's framing tokens per item. Every such request is one equation
  (`_corpus.points`).
- The per-item cost is per harness (a harness's request serialisation is a property of
  the harness, not of a session), but only for a harness with `MIN_HARNESS_INPUTS`
  inputs in the fit; the others use one cost fitted on every harness (`-v1`'s), which
  is also the shipped value for a harness the table does not name.
- x is fitted by least absolute *relative* error (|error| / reported, the quantity
  `summary` reports), by iteratively reweighted least squares; each weighted least
  squares step is a box-bounded quadratic solved by coordinate descent (7 class
  unknowns and the per-item ones: no numpy needed). Each input weighs the same however
  many requests it has, so the two long Pi sessions cannot drown the rest. Bounds: 0.5
  to 8 characters per token.
- A class with little evidence keeps a prior (pseudo-observations of `PRIOR_CHARS`
  characters at the prior ratio), e.g. CJK at about one character per token.
- The class ratios are a tokenizer's, so a tokenizer family in `OWN_FAMILIES`
  (`estimate.tokenizer_family` of the model that served most of an input's requests)
  with at least `MIN_FAMILY_INPUTS` inputs gets ratios of its own, fitted in a last
  least-squares step on its inputs' points (the shared ratios again on everyone else's),
  each class shrunk by `FAMILY_PRIOR_CHARS` pseudo-characters towards the ratio fitted
  for every model (the step before, as `-v2`). Today that is Claude Opus 4.7 and later
  (Anthropic's updated tokenizer: code at ≈ 2.2 characters per token, others ≈ 3.1).
Nothing is ever scaled per session or per request: the table is one fixed set of
ratios, and the head is inferred with the same estimator at run time.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import _corpus
import fidelity
from agent_profiler.estimate import (
    CALIBRATION_FILE,
    CLAUDE_47,
    Estimator,
    TextClass,
    calibrated,
)

VERSION = "chars/calibrated-v3"
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
# A harness gets a per-item cost of its own only when at least this many inputs (session
# trees) show it: one input alone would let the cost fit that journal. In leave-one-out, a
# harness with two inputs therefore falls back to the shared cost for both of them.
MIN_HARNESS_INPUTS = 2
# Tokenizer families (`estimate.tokenizer_family`) that may get class ratios of their own,
# fitted on their inputs alone and shrunk towards the shared ratios by `FAMILY_PRIOR_CHARS`
# pseudo-characters per class; the others are measured with the shared ratios. A family's
# ratios describe its tokenizer, not a journal, so one input of the family is enough to
# fit them (in leave-one-out, the other session of that family).
OWN_FAMILIES: tuple[str, ...] = (CLAUDE_47,)
MIN_FAMILY_INPUTS = 1
FAMILY_PRIOR_CHARS = 500000.0


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


@dataclass(frozen=True, slots=True)
class Table:
    """A fitted table: characters per token per class, the all-harness per-item cost, and
    the per-item cost of each harness with enough inputs (`MIN_HARNESS_INPUTS`)."""

    ratios: dict[TextClass, float]
    per_item: float
    per_item_by_harness: dict[str, float] = field(default_factory=dict)
    # Harnesses in the points with too few inputs for their own cost: they use `per_item`.
    shared_for: tuple[str, ...] = ()
    # Inputs left out of the fit: redacted journals (`_corpus.redacted_journal`).
    excluded: tuple[str, ...] = ()
    # Class ratios of the tokenizer families with enough inputs (`OWN_FAMILIES`).
    ratios_by_family: dict[str, dict[TextClass, float]] = field(default_factory=dict)

    def estimator(self) -> Estimator:
        return calibrated(
            self.ratios, self.per_item, self.per_item_by_harness, self.ratios_by_family
        )


def _irls(
    points: Sequence[_corpus.Point],
    rows: Sequence[tuple[tuple[float, ...], float]],
    bounds: Sequence[tuple[float, float]],
    prior_chars: float,
    priors: Sequence[tuple[int, float, float]] = (),
) -> list[float]:
    """Least absolute relative error of `rows` (features, target), one per point, the
    class columns first; see the module's method. Each class column has `prior_chars`
    pseudo-characters at its `PRIOR` ratio, and each of `priors` (column, pseudo-
    characters, characters per token) more."""
    classes = list(TextClass)
    k = len(bounds)
    per_input: dict[str, int] = defaultdict(int)
    for p in points:
        per_input[p.input] += 1
    typical = statistics.median([p.reported for p in points]) if points else 1.0
    wanted = [(c, prior_chars, PRIOR[cls]) for c, cls in enumerate(classes)] + list(priors)
    prior = [
        (tuple(chars if j == c else 0.0 for j in range(k)), chars / ratio, typical)
        for c, chars, ratio in wanted
    ]
    weights = [1.0] * len(points)
    x = [1 / 4] * k
    for _ in range(ROUNDS):
        a = [[0.0] * k for _ in range(k)]
        b = [0.0] * k
        weighted = [
            (growth, target, p.reported, w / per_input[p.input])
            for p, (growth, target), w in zip(points, rows, weights, strict=True)
        ]
        weighted += [(g, r, t, 1.0 / max(len(per_input), 1)) for g, r, t in prior]
        for growth, target, reported, weight in weighted:
            scale = weight / reported**2
            for i in range(k):
                if growth[i]:
                    b[i] += scale * growth[i] * target
                    for j in range(k):
                        a[i][j] += scale * growth[i] * growth[j]
        x = solve_box(a, b, bounds)
        # Reweight towards least absolute relative error (floored so one exact point
        # cannot take all the weight).
        weights = [
            1.0
            / max(
                abs(sum(g * v for g, v in zip(growth, x, strict=True)) - target) / p.reported,
                0.002,
            )
            for p, (growth, target) in zip(points, rows, strict=True)
        ]
    return x


def fit(
    points: Sequence[_corpus.Point],
    per_item: bool = True,
    prior_chars: float = PRIOR_CHARS,
    by_harness: bool = True,
    families_fitted: Sequence[str] = OWN_FAMILIES,
    family_prior_chars: float = FAMILY_PRIOR_CHARS,
) -> Table:
    """The table fitted on `points` (see the module's method). First one per-item cost
    for every harness (the value for a harness without enough evidence of its own); then,
    with `by_harness`, the class ratios again with one per-item cost per harness that has
    at least `MIN_HARNESS_INPUTS` inputs among the points, the others' items held at the
    shared cost. `per_item=False` fits the classes alone (for comparison). Points of a
    redacted journal are left out (and named in `Table.excluded`)."""
    excluded = tuple(sorted({p.input for p in points if p.redacted}))
    points = [p for p in points if not p.redacted]
    n_classes = len(TextClass)
    class_bounds = [(LOW, HIGH)] * n_classes
    item_bounds = (ITEM_LOW, ITEM_HIGH if per_item else 0.0)
    shared = _irls(
        points,
        [(p.growth, p.reported_growth) for p in points],
        [*class_bounds, item_bounds],
        prior_chars,
    )
    shared_item = round(shared[-1], 3)
    inputs: dict[str, set[str]] = defaultdict(set)
    for p in points:
        inputs[p.harness].add(p.input)
    own = sorted(h for h, found in inputs.items() if len(found) >= MIN_HARNESS_INPUTS)
    fallback = tuple(sorted(h for h in inputs if h not in own))
    of_family: dict[str, set[str]] = defaultdict(set)
    for p in points:
        of_family[p.family].add(p.input)
    families = sorted(f for f in families_fitted if len(of_family.get(f, ())) >= MIN_FAMILY_INPUTS)
    if not (per_item and by_harness and own) and not families:
        ratios = {cls: round(1 / shared[c], 3) for c, cls in enumerate(TextClass)}
        return Table(ratios, shared_item, {}, fallback if per_item and by_harness else (), excluded)
    if not (per_item and by_harness):
        own, fallback = [], ()

    def stage(families: Sequence[str], towards: Sequence[float]) -> Table:
        """The class ratios (shared, and each of `families`' own, shrunk towards the
        tokens per character `towards`) with each of `own`'s per-item cost."""
        # Columns: the shared classes, each family's classes, each own harness's item cost.
        family_at = {f: n_classes * (1 + i) for i, f in enumerate(families)}
        width = n_classes * (1 + len(families))
        rows = []
        for p in points:
            items = p.growth[-1]
            classes = [0.0] * width
            at = family_at.get(p.family, 0)
            classes[at : at + n_classes] = p.growth[:-1]
            columns = tuple(items if p.harness == h else 0.0 for h in own)
            held = 0.0 if p.harness in own else shared_item * items
            rows.append(((*classes, *columns), p.reported_growth - held))
        priors = [
            (at + c, family_prior_chars, 1 / towards[c])
            for at in family_at.values()
            for c in range(n_classes)
        ]
        bounds = [*[(LOW, HIGH)] * width, *[item_bounds] * len(own)]
        x = _irls(points, rows, bounds, prior_chars, priors)
        return Table(
            {cls: round(1 / x[c], 3) for c, cls in enumerate(TextClass)},
            shared_item,
            {h: round(x[width + i], 3) for i, h in enumerate(own)},
            fallback,
            excluded,
            {
                f: {cls: round(1 / x[at + c], 3) for c, cls in enumerate(TextClass)}
                for f, at in family_at.items()
            },
        )

    # One set of ratios for every model (`-v2`'s fit); then, with families, each family's
    # own, shrunk towards those (a class the family's inputs barely show keeps the shared
    # ratio), the shared ones fitted again on the other families' requests.
    common = stage([], shared[:n_classes])
    if not families:
        return common
    return stage(families, [1 / common.ratios[cls] for cls in TextClass])


def main(argv: list[str]) -> int:
    inputs = _corpus.corpus_inputs()
    if not inputs:
        print(f"no corpus at {_corpus.CORPUS}", file=sys.stderr)
        return 2
    # Measured, not shipped (docs/estimates.md): --write refuses it, so the shipped table is
    # always what the default method fits.
    as_exported = "--evidence-as-exported" in argv
    if as_exported and "--write" in argv:
        print("--evidence-as-exported is a measurement: it does not --write", file=sys.stderr)
        return 2
    by_input = {path: list(_corpus.points(path, as_exported)) for path in inputs}
    everything = [p for pts in by_input.values() for p in pts]
    options = {"per_item": "--no-per-item" not in argv, "by_harness": "--shared-item" not in argv}
    table = fit(everything, **options)
    fitted = [p for p in everything if not p.redacted]
    shape = "" if options["by_harness"] else " with one shared per-item cost (as -v1)"
    print(
        f"{VERSION}{shape} fitted on {len(fitted)} requests from "
        f"{len({p.input for p in fitted})} inputs (characters per token):"
    )
    for name in table.excluded:
        left = sum(1 for p in everything if p.input == name)
        print(
            f"  left out of the fit: {name} ({left} requests): a redacted journal (more "
            "`REDACTED` placeholders than requests, so it holds less than was sent)"
        )
    for cls, ratio in table.ratios.items():
        evidence = sum(abs(p.growth[list(TextClass).index(cls)]) for p in fitted)
        print(f"  {cls.value:8} {ratio:6.2f}   (evidence: {evidence:,.0f} character-requests)")
    print(f"  per item {table.per_item:6.2f} tokens (every harness; the value for one not below)")
    for family, ratios in table.ratios_by_family.items():
        of_family = [p for p in fitted if p.family == family]
        print(
            f"  tokenizer family {family} ({len({p.input for p in of_family})} inputs, "
            f"{len(of_family)} requests; the others use the ratios above):"
        )
        for cls, ratio in ratios.items():
            evidence = sum(abs(p.growth[list(TextClass).index(cls)]) for p in of_family)
            print(
                f"    {cls.value:8} {ratio:6.2f}   (evidence: {evidence:,.0f} character-requests)"
            )
    counts = _corpus.inputs_per_harness(
        {k: [p for p in v if not p.redacted] for k, v in by_input.items()}
    )
    for harness, count in counts.items():
        cost = table.per_item_by_harness.get(harness)
        own = f"{cost:6.2f} tokens" if cost is not None else "  (the shared value)"
        print(f"  per item, {harness:11} {own}   ({count} inputs with requests to fit)")
    print()
    print(fidelity.table(inputs, by_input, **options))
    if "--write" in argv:
        TABLE_PATH.write_text(
            json.dumps(
                {
                    "version": VERSION,
                    "method": "least absolute relative error on request growth since the "
                    "head anchor, per-class tokens per character, bounded 0.5–8 chars/token, "
                    "per tokenizer family of the model (estimate.tokenizer_family) for the "
                    "families in chars_per_token_by_family and shared for the others, "
                    "plus tokens per item per harness with at least "
                    f"{MIN_HARNESS_INPUTS} inputs (scripts/calibrate.py)",
                    "inputs": [p.name for p in inputs if any(not x.redacted for x in by_input[p])],
                    "left_out": list(table.excluded),
                    "requests": len(fitted),
                    "chars_per_token": {cls.value: ratio for cls, ratio in table.ratios.items()},
                    "chars_per_token_by_family": {
                        family: {cls.value: ratio for cls, ratio in ratios.items()}
                        for family, ratios in table.ratios_by_family.items()
                    },
                    "inputs_by_family": {
                        family: sorted({p.input for p in fitted if p.family == family})
                        for family in table.ratios_by_family
                    },
                    "per_item_tokens": table.per_item,
                    "per_item_tokens_by_harness": table.per_item_by_harness,
                },
                indent=2,
            )
            + "\n"
        )
        print(f"\nwrote {TABLE_PATH.relative_to(_corpus.REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
