"""The console script: a plain `agent-profiler export FILE… [-o OUT] [flags]` or `agent-profiler
summary FILE… [flags]` runs without importing Typer (its import, the pydantic it loads and
the checks it builds per option are ≈ 100 ms, more than half of a small export's or
summary's time); anything else — another command, --help, --open, shell completion, an
option or a value this parser does not know — goes to the Typer app in cli.py, which
then also reports the usage error. Both run exporting.run_export (run_summary), so they
behave alike, and both take the flags declared once in options.py.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_profiler.options import ReadOptions, Spec


def _flags(specs: dict[str, Spec]) -> tuple[dict[str, str], dict[str, str]]:
    """A command's switches and valued options that this parser takes, by flag."""
    switches = {f: key for key, d in specs.items() if d.flag for f in d.flags}
    valued = {f: key for key, d in specs.items() if not d.flag for f in d.flags}
    return switches, valued


def _parse_line(argv: list[str], specs: dict[str, Spec]) -> tuple[dict[str, Any], list[Path]]:
    """The options (by key: True for a switch, the text for a value) and the journals of
    one command line, or ValueError when Typer should parse it."""
    switches, valued = _flags(specs)
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
                raise ValueError(token)
            value = following
        elif token == "-":
            journals.append(Path(token))  # standard input
            continue
        elif token.startswith("-") or not token:
            raise ValueError(token)  # --help, --open, --, a typo: Typer's to handle
        else:
            journals.append(Path(token))
            continue
        key = valued[name]  # `name` is the token itself when it holds no "="
        if key in values:
            raise ValueError(token)
        values[key] = value
    if not journals:
        raise ValueError("no journal")
    return values, journals


def _count(text: str | None) -> int | None:
    """A count of at least 1 (--jobs), None when not given, or ValueError (Typer
    then says what is wrong with it). ASCII digits only: str.isdigit() also takes "١" and
    "³", which Typer refuses."""
    if text is None:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(text)
    return int(text)


def _read_options(values: dict[str, Any], previews: bool = False) -> ReadOptions:
    """The read options of --harness, --estimate, --jobs and --align, or ValueError."""
    from agent_profiler.estimate import EstimateChoice
    from agent_profiler.model import Harness
    from agent_profiler.options import ReadOptions

    harness = values.get("harness")
    estimate = values.get("estimate", EstimateChoice.CHARS4.value)
    if harness is not None and harness not in {h.value for h in Harness}:
        raise ValueError(harness)
    if estimate not in {e.value for e in EstimateChoice}:
        raise ValueError(estimate)
    if values.get("align", "start") != "start":
        raise ValueError(values["align"])
    return ReadOptions(
        None if harness is None else Harness(harness),
        EstimateChoice(estimate),
        previews,
        _count(values.get("jobs")),
        values.get("align") == "start",
    )


def _parse_export(argv: list[str]) -> dict[str, Any] | None:
    """export's arguments from argv[1:], or None when Typer should parse them."""
    from agent_profiler.options import FAST_EXPORT

    try:
        values, journals = _parse_line(argv, FAST_EXPORT)
        options = _read_options(values, previews=values.get("previews", False))
    except ValueError:
        return None
    output = values.get("output")
    return {
        "journals": journals,
        "output": None if output is None else Path(output),
        "options": options,
        "force": values.get("force", False),
        "redact": values.get("redact", False),
        "compress": not values.get("no_compress", False),
        "strict": values.get("strict", False),
        "format_name": values.get("format_name"),
    }


def _parse_summary(argv: list[str]) -> dict[str, Any] | None:
    """summary's arguments from argv[1:], or None when Typer should parse them."""
    from agent_profiler.options import FAST_SUMMARY, tokens

    try:
        values, journals = _parse_line(argv, FAST_SUMMARY)
        options = _read_options(values)
        given = values.get("window")
        window = None if given is None else tokens(given)
    except ValueError:
        return None
    return {
        "journals": journals,
        "options": options,
        "window": window,
        "calls": values.get("calls", False),
        "as_json": values.get("as_json", False),
        "cost": values.get("cost", False),
    }


def _terminate(signum: int, frame: Any) -> None:
    # SIGTERM (`timeout`, a CI runner, `kill`) unwinds like Ctrl-C does: temporary files are
    # removed and worker processes stopped on the way out, instead of being left behind.
    # No import here: the signal may come while a module is half imported (console.py
    # itself: "cannot import name … from partially initialized module", a traceback).
    if _in_import_system(frame):
        # Raised inside importlib (a module being compiled), the exit was lost and the
        # export ran to its end (seen under load: exit 0 after SIGTERM): the signal is
        # sent again once this import is done, and handled outside it.
        _resend(signum)
        return
    raise Terminated(EXIT_TERMINATED)


def _in_import_system(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _resend(signum: int) -> None:
    import _thread  # built in: nothing to load while the import system is busy
    import time

    def later() -> None:
        time.sleep(0.02)
        os.kill(os.getpid(), signum)

    _thread.start_new_thread(later, ())


EXIT_TERMINATED = 143  # console.EXIT_TERMINATED (tests/cli holds them equal)


class Terminated(SystemExit):
    """SIGTERM: a SystemExit (every `except Exception` lets it through, each `finally`
    cleans up on its way out), told from another by `main`, which says `terminated`."""


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
    try:
        # Every command imports the console: its import here costs nothing more.
        from agent_profiler.console import steady_streams

        steady_streams()  # closed ones stood in for, every byte written, stderr never fatal
        # Inside the guard: a Ctrl-C held back while orjson sets itself up is raised the
        # moment the mask is lifted, and ended the run in a traceback (rc -2).
        _import_orjson_whole()
        _main(sys.argv[1:])
    except KeyboardInterrupt as error:  # Ctrl-C while the modules load: one word too
        from agent_profiler.console import failure

        sys.exit(failure(error))
    except Terminated:
        # One word, as Ctrl-C's `interrupted`, once everything is cleaned up (the
        # workers stopped, no temporary file left); the code is the signal's.
        from agent_profiler.console import echo

        echo("terminated", err=True)
        raise


def console() -> None:
    """The `agent-profiler` console script (and `python -m agent_profiler`): `main`, then the
    process leaves without freeing what the command built (leaving.py), where it may."""
    from agent_profiler import leaving

    leaving.start()
    try:
        main()
    except SystemExit as end:
        leaving.leave(end.code)
        raise
    leaving.leave(0)


def _main(argv: list[str]) -> None:
    fast = _FAST.get(argv[0]) if argv else None
    if fast is not None and not any(k.endswith("_COMPLETE") for k in os.environ):
        parse, run = fast
        parsed = parse(argv[1:])
        if parsed is not None:
            sys.exit(_run_fast(run, parsed))
    from agent_profiler.cli import main as typer_main

    typer_main()


def _run_export(parsed: dict[str, Any]) -> int:
    from agent_profiler.exporting import run_export

    return run_export(**parsed, stdout_is_terminal=lambda: sys.stdout.isatty(), open_ui=None)


def _run_summary(parsed: dict[str, Any]) -> int:
    from agent_profiler.exporting import run_summary

    return run_summary(**parsed)


# The commands run without Typer: how their line is parsed, and what runs them.
_FAST: dict[str, tuple[Callable[[list[str]], dict[str, Any] | None], Callable[..., int]]] = {
    "export": (_parse_export, _run_export),
    "summary": (_parse_summary, _run_summary),
}


def _run_fast(run: Callable[[dict[str, Any]], int], parsed: dict[str, Any]) -> int:
    """cli.export or cli.summary without Typer; it ends as the Typer app's commands do
    (`failure`)."""
    from agent_profiler import collector
    from agent_profiler.console import failure

    collector.quiet_start()
    try:
        return run(parsed)
    except (Exception, KeyboardInterrupt) as error:
        return failure(error)
