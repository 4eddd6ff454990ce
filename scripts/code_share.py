"""How much of a session's prompt is code (and code-carrying JSON), and what chars/4 misses
on those characters alone: the bound in docs/estimates.md ("Can chars/4 reach 15%?").

    python scripts/code_share.py [NAME-SUBSTRING ...] [--ratio 2.1 --ratio 2.3]

For every request after its segment's anchor (`_corpus.points(as_exported=True)`: the visible
text of a response whose hidden thinking is sized as output minus visible is left out, since
with chars/4 too that response counts its whole output): the code + JSON characters
added since the anchor ÷ the given characters per token, as a share of the reported prompt,
and (those characters ÷ ratio − those characters ÷ 4) ÷ reported, the part of chars/4's
error those characters alone cause. Medians over the requests, then the last request. The
head measured at the anchor is left out, so both figures are lower bounds.
"""

from __future__ import annotations

import statistics
import sys

import _corpus
from agent_profiler.estimate import TextClass

CLASSES = (TextClass.CODE, TextClass.JSON)


def main(argv: list[str]) -> int:
    ratios = [float(argv[i + 1]) for i, a in enumerate(argv) if a == "--ratio"] or [2.1, 2.3]
    names = [a for i, a in enumerate(argv) if not a.startswith("--") and argv[i - 1] != "--ratio"]
    names = [a for a in names if a not in {str(r) for r in ratios}] or ["planetfall"]
    index = [list(TextClass).index(c) for c in CLASSES]
    for path in _corpus.corpus_inputs():
        if not any(n in path.name for n in names):
            continue
        points = list(_corpus.points(path, as_exported=True))
        if not points:
            continue
        for ratio in ratios:
            chars = [sum(p.growth[i] for i in index) for p in points]
            share = [c / ratio / p.reported for c, p in zip(chars, points, strict=True)]
            under = [
                c * (1 / ratio - 1 / 4) / p.reported for c, p in zip(chars, points, strict=True)
            ]
            print(
                f"{path.name[:44]}  at {ratio} chars/token: code + JSON share of the prompt "
                f"median {statistics.median(share):.1%} (last {share[-1]:.1%} of "
                f"{points[-1].reported:,.0f}); chars/4 under-count from them alone median "
                f"{statistics.median(under):.1%} (last {under[-1]:.1%})"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
