"""The console script: a plain `agent-profiler export FILE… [-o OUT] [flags]` runs without
importing Typer (its import and the pydantic it loads are ≈ 60–70 ms, most of a small
export's start-up); anything else — another command, --help, --open, shell completion, an
option or a value this parser does not know — goes to the Typer app in cli.py, which
then also reports the usage error. Both run exporting.run_export, so they behave alike.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

# Flags and options of `export` (cli.export) this parser takes; the rest goes to Typer.
_FLAGS = {
    "--force": "force",
    "--previews": "previews",
    "--strict": "strict",
    "--redact": "redact",
}
_OPTIONS = {
    "-o": "output",
    "--output": "output",
    "--harness": "harness",
    "--format": "format_name",
    "--estimate": "estimate",
    "--jobs": "jobs",
    "-j": "jobs",
    "--align": "align",
}


def _parse_export(argv: list[str]) -> dict[str, Any] | None:
    """export's arguments from argv[1:], or None when Typer should parse them."""
    from agent_profiler.estimate import EstimateChoice
    from agent_profiler.model import Harness

    values: dict[str, Any] = {}
    journals: list[Path] = []
    tokens = iter(argv)
    for token in tokens:
        if token in _FLAGS and _FLAGS[token] not in values:
            values[_FLAGS[token]] = True
            continue
        name, equals, value = token.partition("=")
        if name in _OPTIONS and name.startswith("--") and equals:
            pass
        elif token in _OPTIONS:
            following = next(tokens, None)
            if following is None:
                return None
            value = following
        elif token == "-":
            journals.append(Path(token))  # standard input
            continue
        elif token.startswith("-") or not token:
            return None  # --help, --open, --, a typo: Typer's to handle (or refuse)
        else:
            journals.append(Path(token))
            continue
        key = _OPTIONS[name]  # `name` is the token itself when it holds no "="
        if key in values:
            return None
        values[key] = value
    if not journals:
        return None
    harness = values.get("harness")
    estimate = values.get("estimate", EstimateChoice.CHARS4.value)
    if (harness is not None and harness not in {h.value for h in Harness}) or estimate not in {
        e.value for e in EstimateChoice
    }:
        return None
    if values.get("align", "start") != "start":
        return None  # Typer says what is wrong with it
    jobs = values.get("jobs")
    if jobs is not None:
        # ASCII digits only: str.isdigit() also takes "١" and "³", which Typer refuses.
        if not (jobs.isascii() and jobs.isdigit()) or int(jobs) < 1:
            return None  # Typer says what is wrong with it
        jobs = int(jobs)
    output = values.get("output")
    return {
        "journals": journals,
        "output": None if output is None else Path(output),
        "harness": None if harness is None else Harness(harness),
        "force": values.get("force", False),
        "previews": values.get("previews", False),
        "strict": values.get("strict", False),
        "format_name": values.get("format_name"),
        "estimate": EstimateChoice(estimate),
        "jobs": jobs,
        "align": values.get("align"),
        "redact": values.get("redact", False),
    }


EXIT_TERMINATED = 143  # 128 + SIGTERM, as a process killed by it reports


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM (`timeout`, a CI runner, `kill`) unwinds like Ctrl-C does: temporary files are
    # removed and worker processes stopped on the way out, instead of being left behind.
    raise SystemExit(EXIT_TERMINATED)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    argv = sys.argv[1:]
    if argv[:1] == ["export"] and not any(k.endswith("_COMPLETE") for k in os.environ):
        parsed = _parse_export(argv[1:])
        if parsed is not None:
            sys.exit(_fast_export(parsed))
    from agent_profiler.cli import main as typer_main

    typer_main()


def _fast_export(parsed: dict[str, Any]) -> int:
    """cli.export without Typer; it ends as the Typer app's commands do (`failure`)."""
    from agent_profiler.exporting import failure, run_export

    try:
        return run_export(**parsed, stdout_is_terminal=lambda: sys.stdout.isatty(), open_ui=None)
    except (Exception, KeyboardInterrupt) as error:
        return failure(error)
