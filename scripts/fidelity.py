"""How far the estimate is from what the model was sent, for every corpus session.

    python scripts/fidelity.py

Per session (every session the tool reads in `../shared/corpus/`: Claude Code, Codex,
Pi, Muse Code, Gemini CLI, OpenCode): the requests with a reported size, then median and worst
|estimated − reported| / reported over the requests after the first (the figure
`agent-profiler summary` prints) for `chars/4` (the default) and for
`--estimate calibrated` evaluated leave-one-input-out: the table used for a session
is fitted (`calibrate.fit`) without the input it comes from, so the figure says how
the estimator does on a journal it has not seen. `-` means fewer than two requests
with a reported size (or a native composition, where no estimator is involved).
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import _corpus
from agent_profiler.estimate import CHARS4, calibrated
from agent_profiler.model import Session

HEADER = (
    "| harness | input | session | requests | chars/4 median | chars/4 worst "
    "| calibrated (LOSO) median | calibrated (LOSO) worst |\n"
    "|---|---|---|---:|---:|---:|---:|---:|"
)


def _pct(values: Sequence[float], worst: bool) -> str:
    if not values:
        return "-"
    return f"{100 * (max(values) if worst else statistics.median(values)):.1f}%"


def _label(session: Session) -> str:
    return session.session_id[:8] + (f" › {session.agent_id}" if session.agent_id else "")


def table(
    inputs: Sequence[Path],
    by_input: Mapping[Path, Sequence[_corpus.Point]],
    *,
    per_item: bool = True,
) -> str:
    """The before/after table (markdown), one row per session of every input."""
    import calibrate  # not at the top: calibrate imports this module

    lines = [HEADER]
    targets: list[str] = []
    for path in inputs:
        training = [p for other, pts in by_input.items() if other != path for p in pts]
        table = calibrate.fit(training, per_item=per_item)
        after = {s.session_id: s for s in _corpus.read(path, calibrated(table[0], table[1]))}
        for session in _corpus.read(path, CHARS4):
            before = _corpus.errors(session)
            loso = _corpus.errors(after[session.session_id]) if session.session_id in after else []
            requests = sum(1 for r in session.responses if r.usage.prompt_tokens)
            lines.append(
                f"| {session.harness.value} | {path.name[:44]} | {_label(session)} "
                f"| {requests} | {_pct(before, False)} | {_pct(before, True)} "
                f"| {_pct(loso, False)} | {_pct(loso, True)} |"
            )
            if requests >= _corpus.MIN_REQUESTS and loso:
                targets.append(f"{statistics.median(loso):.3f}")
                if statistics.median(loso) > 0.10:
                    targets[-1] += f" ({_label(session)} misses the 10% target)"
    lines.append(
        f"\nsessions with ≥ {_corpus.MIN_REQUESTS} requests: calibrated LOSO medians "
        + ", ".join(targets)
    )
    return "\n".join(lines)


def main() -> int:
    inputs = _corpus.corpus_inputs()
    if not inputs:
        print(f"no corpus at {_corpus.CORPUS}", file=sys.stderr)
        return 2
    by_input = {path: list(_corpus.points(path)) for path in inputs}
    print(table(inputs, by_input))
    return 0


if __name__ == "__main__":
    sys.exit(main())
