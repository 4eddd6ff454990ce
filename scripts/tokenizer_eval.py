"""Would a real tokenizer beat the calibrated table on the Codex corpus? (issue 19, point 3)

    pip install bpe-openai        # ships o200k_base inside its wheel: no download at run time
    python scripts/tokenizer_eval.py

Prints, per Codex session, median / worst |estimated − reported| ÷ reported after the first
request for chars/4, the calibrated table (leave-one-input-out), o200k_base token counts
per item, and o200k_base plus the calibrated per-item framing cost. Items whose text is not
in the journal (sanitised rollouts' redaction markers) fall back to their length ÷ 4.
The package does not depend on bpe-openai; this script is how the README's figures were made.
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from typing import Any

import _corpus
import calibrate
from agent_profiler.estimate import CHARS4, Estimator, chars4
from agent_profiler.model import Basis

try:
    import bpe_openai  # type: ignore[import-not-found]
except ImportError:  # optional: only this script uses it
    bpe_openai = None

ENCODING: Any = None


@dataclass(frozen=True, slots=True)
class O200k(Estimator):
    """Token counts of o200k_base, plus `per_item` framing tokens per non-empty item."""

    def text_tokens(self, text: str) -> int:
        if not text:
            return 0
        return round(len(ENCODING.encode(text)) + self.per_item)

    def chars_tokens(self, chars: int) -> int:
        return chars4(chars) + round(self.per_item) if chars > 0 else 0


def _cell(errors: list[float]) -> str:
    if not errors:
        return "-"
    return f"{100 * statistics.median(errors):.1f}% / {100 * max(errors):.1f}%"


def main() -> int:
    global ENCODING
    if bpe_openai is None:
        print("needs bpe-openai (pip install bpe-openai)", file=sys.stderr)
        return 2
    ENCODING = bpe_openai.get_encoding("o200k_base")
    inputs = _corpus.corpus_inputs()
    by_input = {path: list(_corpus.points(path)) for path in inputs}
    print(
        "| Codex session | requests | chars/4 | calibrated (LOSO) | o200k_base | o200k + per item |"
    )
    print("|---|---:|---|---|---|---|")
    for path in inputs:
        if "codex" not in path.parts:
            continue
        training = [p for other, pts in by_input.items() if other != path for p in pts]
        table = calibrate.fit(training)
        per_item = table.estimator().for_harness("codex").per_item
        estimators = (
            CHARS4,
            table.estimator(),
            O200k(Basis.CHARS),
            O200k(Basis.CHARS, per_item=per_item),
        )
        runs = [{s.session_id: s for s in _corpus.read(path, e)} for e in estimators]
        for session_id, session in runs[0].items():
            cells = [_cell(_corpus.errors(run[session_id])) for run in runs]
            if cells[0] != "-":
                print(
                    f"| {session_id[:8]} | {len(session.responses)} | " + " | ".join(cells) + " |"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
