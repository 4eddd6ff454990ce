"""The console script: a plain `agent-profiler export FILE… [-o OUT] [flags]` runs without
importing Typer (its import and the pydantic it loads are ≈ 60–70 ms, most of a small
export's start-up); anything else — another command, --help, --open, shell completion, an
option or a value this parser does not know — goes to the Typer app in cli.py, which
then also reports the usage error. Both run exporting.run_export, so they behave alike,
and both take the flags declared once in options.py.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any


def _flags() -> tuple[dict[str, str], dict[str, str]]:
    """export's switches and valued options that this parser takes, by flag (options.py)."""
    from agent_profiler.options import FAST_EXPORT

    switches = {f: key for key, d in FAST_EXPORT.items() if d.flag for f in d.flags}
    valued = {f: key for key, d in FAST_EXPORT.items() if not d.flag for f in d.flags}
    return switches, valued


def _parse_export(argv: list[str]) -> dict[str, Any] | None:
    """export's arguments from argv[1:], or None when Typer should parse them."""
    from agent_profiler.estimate import EstimateChoice
    from agent_profiler.model import Harness

    switches, valued = _flags()
    values: dict[str, Any] = {}
    journals: list[Path] = []
    tokens = iter(argv)
    for token in tokens:
        if token in switches and switches[token] not in values:
            values[switches[token]] = True
            continue
        name, equals, value = token.partition("=")
        if name in valued and name.startswith("--") and equals:
            pass
        elif token in valued:
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
        key = valued[name]  # `name` is the token itself when it holds no "="
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
    from agent_profiler.options import ReadOptions

    output = values.get("output")
    return {
        "journals": journals,
        "output": None if output is None else Path(output),
        "options": ReadOptions(
            None if harness is None else Harness(harness),
            EstimateChoice(estimate),
            values.get("previews", False),
            jobs,
            values.get("align") == "start",
        ),
        "force": values.get("force", False),
        "redact": values.get("redact", False),
        "compress": not values.get("no_compress", False),
        "strict": values.get("strict", False),
        "format_name": values.get("format_name"),
    }


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM (`timeout`, a CI runner, `kill`) unwinds like Ctrl-C does: temporary files are
    # removed and worker processes stopped on the way out, instead of being left behind.
    from agent_profiler.console import EXIT_TERMINATED

    raise SystemExit(EXIT_TERMINATED)


def _import_orjson_whole() -> None:
    """Import orjson with Ctrl-C and SIGTERM held back until it is done. Its module set-up
    (compiled Rust) imports Python modules and does not survive an exception raised in
    them: a signal in those few milliseconds ended the process in a segmentation fault,
    or in "SystemError: initialization of orjson raised unreported exception". A signal
    that comes meanwhile waits and is handled right after, as any other."""
    masks = hasattr(signal, "pthread_sigmask")  # not on Windows
    held = {signal.SIGINT, signal.SIGTERM}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, held) if masks else set()
    try:
        import orjson  # noqa: F401
    finally:
        if masks:
            signal.pthread_sigmask(signal.SIG_SETMASK, before)


def main() -> None:
    signal.signal(signal.SIGTERM, _terminate)
    _import_orjson_whole()
    argv = sys.argv[1:]
    if argv[:1] == ["export"] and not any(k.endswith("_COMPLETE") for k in os.environ):
        parsed = _parse_export(argv[1:])
        if parsed is not None:
            sys.exit(_fast_export(parsed))
    from agent_profiler.cli import main as typer_main

    typer_main()


def _fast_export(parsed: dict[str, Any]) -> int:
    """cli.export without Typer; it ends as the Typer app's commands do (`failure`)."""
    from agent_profiler.console import failure
    from agent_profiler.exporting import run_export

    try:
        return run_export(**parsed, stdout_is_terminal=lambda: sys.stdout.isatty(), open_ui=None)
    except (Exception, KeyboardInterrupt) as error:
        return failure(error)
