"""How far the estimate is from what the model was sent, for every corpus session.

    python scripts/fidelity.py

Per session (every session the tool reads in `../shared/corpus/`: Claude Code, Codex,
Pi, Muse Code, Gemini CLI, OpenCode): the requests with a reported size, then median and worst
|estimated − reported| / reported over the requests after the first (the figure
`agent-profiler summary` prints) for `chars/4` (the default) and for
`--estimate calibrated` evaluated leave-one-input-out: the table used for a session
is fitted (`calibrate.fit`) without the input it comes from (a session tree: a session
and its subagents), so the figure says how the estimator does on a journal it has not
seen. The per-item cost is per harness only for a harness with enough *other* inputs
(`calibrate.MIN_HARNESS_INPUTS`); otherwise that session is estimated with the shared
cost, and the note column says so; likewise a session whose model's tokenizer family has
class ratios of its own (`calibrate.OWN_FAMILIES`) is measured with that family's ratios
fitted on the *other* inputs of the family, and the note says on how many. `-` means fewer
than two requests with a reported size (or a native composition, where no estimator is
involved).

The note column also labels journals that hold less text than was sent: text replaced by
a bare `REDACTED` placeholder (`unmeasured` kind `redacted-placeholder`; sanitised
`[REDACTED_… len=N …]` markers are measured by N and are not counted). Such a session
is still in the fit and in the table: the label says why no estimator can agree with it.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import _corpus
from agent_profiler.estimate import CHARS4
from agent_profiler.model import Session

HEADER = (
    "| harness | input | session | requests | chars/4 median | chars/4 worst "
    "| calibrated (LOSO) median | calibrated (LOSO) worst | note |\n"
    "|---|---|---|---:|---:|---:|---:|---:|---|"
)
REDACTED = "redacted-placeholder"


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
    by_harness: bool = True,
) -> str:
    """The before/after table (markdown), one row per session of every input."""
    import calibrate  # not at the top: calibrate imports this module

    lines = [HEADER]
    targets: list[str] = []
    missed = 0
    for path in inputs:
        training = [p for other, pts in by_input.items() if other != path for p in pts]
        table = calibrate.fit(training, per_item=per_item, by_harness=by_harness)
        # (a Pi fork read with its copied requests as requests: as the fit reads it)
        with _corpus.requests_as_made(path) as made:
            after = {s.session_id: s for s in _corpus.read(made, table.estimator())}
            sessions = _corpus.read(made, CHARS4)
        for session in sessions:
            before = _corpus.errors(session)
            loso = _corpus.errors(after[session.session_id]) if session.session_id in after else []
            requests = sum(1 for r in session.responses if r.usage.prompt_tokens)
            notes = []
            harness = session.harness.value
            if loso and by_harness and per_item and harness not in table.per_item_by_harness:
                notes.append("shared per-item cost (too few other inputs of its harness)")
            family = next((p.family for p in by_input.get(path, ())), "")
            if loso and family in table.ratios_by_family:
                others = {p.input for p in training if p.family == family and not p.redacted}
                notes.append(
                    f"class ratios of tokenizer family {family}, fitted on {len(others)} "
                    f"other input{'s' if len(others) != 1 else ''}"
                )
            redacted = dict(session.unmeasured).get(REDACTED, 0)
            if redacted:
                notes.append(f"journal redacted: {redacted:,} `REDACTED` placeholders")
            if path.name in table.excluded or any(
                p.redacted and p.session == session.session_id for p in by_input.get(path, ())
            ):
                notes.append("left out of every fit (a redacted journal)")
            lines.append(
                f"| {harness} | {path.name[:44]} | {_label(session)} "
                f"| {requests} | {_pct(before, False)} | {_pct(before, True)} "
                f"| {_pct(loso, False)} | {_pct(loso, True)} | {'; '.join(notes)} |"
            )
            if requests >= _corpus.MIN_REQUESTS and loso:
                targets.append(f"{statistics.median(loso):.3f}")
                if statistics.median(loso) > 0.10:
                    missed += 1
                    why = ", journal redacted" if redacted else ""
                    targets[-1] += f" ({_label(session)} misses the 10% target{why})"
    fitted = {k: [p for p in v if not p.redacted] for k, v in by_input.items()}
    counts = _corpus.inputs_per_harness(fitted)
    lines.append(
        "\ninputs in the fit per harness (leave-one-out fits each on the others): "
        + ", ".join(f"{h} {n}" for h, n in counts.items())
        + f"; a harness with fewer than {calibrate.MIN_HARNESS_INPUTS} other inputs uses the "
        "shared per-item cost"
    )
    lines.append(
        f"sessions with ≥ {_corpus.MIN_REQUESTS} requests: calibrated LOSO medians "
        + ", ".join(targets)
        + f"\n{len(targets) - missed} of {len(targets)} within 10%; every session is in this "
        "table; left out of the fit: "
        + (
            ", ".join(sorted({p.input for v in by_input.values() for p in v if p.redacted}))
            or "none"
        )
        + " (redacted journals)"
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
