"""Print, per session, the numbers we quote about real journals: responses,
compactions, subagents, the largest non-baseline addition, and how far the
chars/4 estimate is from the reported request size after the first response.

    python scripts/corpus_numbers.py JOURNAL_OR_DIR...

The estimate is expected to differ from the reported size (it is not a tokenizer
count, and Claude Code journals omit parts of the request); this script measures
by how much, it does not correct anything.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    diagnostics = Diagnostics()
    result = load([Path(a) for a in argv], diagnostics)
    for failure in result.failures:
        print(f"error: {failure}", file=sys.stderr)
    header = (
        "session",
        "role",
        "responses",
        "compactions",
        "largest addition",
        "est/rep median",
        "worst",
    )
    print(" | ".join(header))
    for session in result.sessions:
        snaps = [
            s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE and s.reported_tokens
        ]
        ratios = [s.estimated_tokens / s.reported_tokens for s in snaps[1:] if s.reported_tokens]
        deviations = [abs(r - 1) for r in ratios]
        additions = [
            (c.delta_tokens, c.label, c.source_id)
            for s in session.snapshots
            if not s.baseline
            for c in s.changes
            if c.delta_tokens > 0
        ]
        tools = {t.call_id: t.name for t in session.tool_calls}
        largest = max(additions, default=None)
        largest_text = f"+{largest[0]:,} {tools.get(largest[2], largest[1])}" if largest else "-"
        median = f"{statistics.median(ratios):.2f}" if ratios else "-"
        worst_ratio = ratios[deviations.index(max(deviations))] if ratios else None
        worst = f"{worst_ratio:.2f}" if worst_ratio is not None else "-"
        print(
            " | ".join(
                (
                    session.session_id[:48],
                    "subagent" if session.is_subagent else "main",
                    str(len(session.responses)),
                    str(len(session.compactions)),
                    largest_text,
                    median,
                    worst,
                )
            )
        )
    for line in diagnostics.summary_lines():
        print(line, file=sys.stderr)
    return 1 if result.failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
