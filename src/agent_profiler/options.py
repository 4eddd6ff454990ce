"""The options the commands share, declared once, and the read options that travel with
each journal group.

`ReadOptions` is what reading a journal depends on besides the journal: the harness forced
with --harness, the estimator (--estimate), whether tool calls keep their argument previews
(only a --previews trace shows them), the number of reading processes (--jobs), and whether
the sessions read are moved to one origin (--align start). It is
frozen and picklable: a worker process gets it with its group (`pipeline.GroupTask`), and
`applied()` is the one place where it takes effect for the adapters.

`Spec` declares a command-line option once: its flags and help. cli.py builds the Typer
options from the specs, and entry.py's fast `export` and `summary` parser takes its flags
from the same specs (it must not import Typer), so a flag renamed here is renamed in both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import Enum
from typing import TypeVar

from agent_profiler.estimate import EstimateChoice
from agent_profiler.model import Harness, frozen


@frozen
class ReadOptions:
    harness: Harness | None = None
    estimate: EstimateChoice = EstimateChoice.CHARS4
    previews: bool = False  # keep tool calls' argument previews (a trace with --previews)
    jobs: int | None = None  # reading processes; None: one per core when it pays
    # export --align start: each session tree, once read, moved to one origin (align.py)
    align: bool = False

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Read journals inside this block with these options: their text measured with
        the chosen estimator, their tool calls' previews kept or not."""
        from agent_profiler.adapters.drafts import argument_previews
        from agent_profiler.estimate import named, use_estimator

        with use_estimator(named(self.estimate)), argument_previews(self.previews):
            yield


@frozen
class Spec:
    """One option: its flags (long first), its help, the name of its value in --help
    (`metavar`); `flag` for a switch."""

    flags: tuple[str, ...]
    help: str
    flag: bool = False
    metavar: str | None = None
    # What makes its value of the word given: a ValueError says, in the tool's words, what
    # is wrong with it (cli.py makes it a usage error).
    parse: Callable[[str], object] | None = None


E = TypeVar("E", bound=Enum)


def choice(kind: type[E], what: str) -> Callable[[str], E]:
    """A parser of one of an enum's values: ValueError in the tool's words otherwise (Typer's
    own said `Value error, 'claude' is not one of 'claude-code', …`)."""

    def parse(text: str) -> E:
        try:
            return kind(text)
        except ValueError:
            names = ", ".join(str(k.value) for k in kind)
            raise ValueError(f"{text!r} is not {what} ({names})") from None

    return parse


harness = choice(Harness, "a harness")


def at_least_one(unit: str) -> Callable[[str], float]:
    """A parser of a number of `unit` of at least 1 (Typer's own said `Input should be
    greater than or equal to 1`); ValueError saying what is expected otherwise."""

    def parse(text: str) -> float:
        text = str(text)  # (Typer hands it the default too: a number)
        try:
            value = float(text)
        except ValueError:
            value = 0
        if not text.isascii() or not value >= 1:
            raise ValueError(f"{text!r} is not a number of {unit} (1 or more)")
        return value

    return parse


def count(text: str) -> int:
    """A number of processes (--jobs): a whole number, at least 1."""
    text = str(text)
    if not (text.isascii() and text.strip().isdigit()) or int(text) < 1:
        raise ValueError(f"{text!r} is not a number of processes (1 or more)")
    return int(text)


def moment_ns(text: str) -> int | None:
    """A date (YYYY-MM-DD: its midnight, UTC) or an ISO time → epoch ns; None if neither."""
    from agent_profiler.adapters.common import timestamp_ns

    text = text.strip()
    if " " in text and "T" not in text:  # `2026-01-05 10:00`, as people write it (RFC 3339)
        text = text.replace(" ", "T", 1)
    return timestamp_ns(text if "T" in text else f"{text}T00:00:00")


def moment(text: str) -> str:
    """A date or an ISO time (--since, --before, --split), kept as written (messages and
    headings say it back); ValueError in the tool's words otherwise."""
    text = str(text)
    if moment_ns(text) is None:
        from datetime import datetime

        try:  # a date all the same, beyond the times a trace holds (epoch ns, int64)
            datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is not a date (use YYYY-MM-DD or an ISO time)") from None
        raise ValueError(
            f"{text!r} is outside 1970-01-01 … 2262-04-11 (the times a trace can hold)"
        )
    return text.strip()


OUTPUT = Spec(
    ("--output", "-o"),
    "File to write (default: <first journal>.<extension>; - for stdout).",
    metavar="FILE",
)
HARNESS = Spec(
    ("--harness",),
    "Skip auto-detection and read every input as this harness.",
    metavar="<" + "|".join(h.value for h in Harness) + ">",
    parse=harness,
)
FORCE = Spec(("--force",), "Overwrite an existing output.", flag=True)
PREVIEWS = Spec(
    ("--previews",),
    "Add length-capped prompt and argument previews (off by default, so the output is safe "
    "to attach to a bug report).",
    flag=True,
)
STRICT = Spec(
    ("--strict",),
    "Exit 1 when any record was warned about or not recognised (the output is still written).",
    flag=True,
)
FORMAT = Spec(
    ("--format",),
    "perfetto (protobuf) or json (Chrome Trace Event Format); default: from the output "
    "name (.json gives json), else perfetto.",
    metavar="FORMAT",
)
ESTIMATE = Spec(
    ("--estimate",),
    "How journal text becomes tokens: chars/4 (the trace contract's estimate) or calibrated "
    "(per-content-class ratios fitted on real sessions; basis chars/calibrated-v3). Never a "
    "tokenizer count; never scaled to the reported size.",
    metavar="<" + "|".join(e.value for e in EstimateChoice) + ">",
    parse=choice(EstimateChoice, "an estimate"),
)
JOBS = Spec(
    ("--jobs", "-j"),
    "Processes that read the journals (default: every core when there are several session "
    "trees and at least 4 MB of input; a long session is then read and encoded with a "
    "helper on a second core). The output is the same whatever the number.",
    metavar="N",
    parse=count,
)
REDACT = Spec(
    ("--redact",),
    "Leave out what each tool call acted on too (a file relative to the project, a program, "
    "a host), which a default output shows.",
    flag=True,
)
ALIGN = Spec(
    ("--align",),
    "start: lay every session (with its subagents) out from one origin, to compare sessions "
    "side by side; each keeps its real start in profile (1). Default: real time.",
)
NO_COMPRESS = Spec(
    ("--no-compress",),
    "Write the Perfetto trace's packets as they are instead of deflated (zlib) in "
    "compressed_packets, which every Perfetto UI and Trace Processor reads; about 4 times "
    "larger. For tools that read the protobuf themselves.",
    flag=True,
)
OPEN = Spec(("--open",), "Open the trace in ui.perfetto.dev when written.", flag=True)
TIMEOUT = Spec(
    ("--timeout",),
    "Seconds to wait for the UI to fetch it.",
    metavar="SECONDS",
    parse=at_least_one("seconds"),
)
WINDOW = Spec(
    ("--window",),
    "Context window in tokens, for the fill when the journal does not state it (e.g. 200000 "
    "or 200k).",
    metavar="TOKENS",
)


def tokens(text: str) -> int:
    """A number of tokens as people write one: 200000, 200_000, 200,000, 200k, 1m, 1.5M;
    at least 1. ValueError, with what is expected, otherwise."""
    given = text.strip().lower().replace("_", "").replace(",", "")
    scale = {"k": 1_000, "m": 1_000_000}.get(given[-1:], 1)
    number = given[:-1] if scale > 1 else given
    try:
        value = int(number) if scale == 1 else round(float(number) * scale)
    except ValueError:
        value = 0
    except OverflowError:  # `1e400k`: a float beyond any number
        value = WINDOW_LIMIT
    if not number.isascii() or not number.replace(".", "", 1).isdigit() or value < 1:
        raise ValueError(f"{text!r} is not a number of tokens (e.g. 200000 or 200k)")
    if value >= WINDOW_LIMIT:
        # More than any window, and past what a JSON summary's integers hold (2^64).
        raise ValueError(f"{text!r} is more tokens than any window (less than {WINDOW_LIMIT:,})")
    return value


# A window is less than this: adapters.common.TOKEN_LIMIT (from it on, a journal's
# token count is damage).
WINDOW_LIMIT = 10**15


SINCE = Spec(
    ("--since",),
    "Only sessions started on or after this date (YYYY-MM-DD or an ISO time; UTC).",
    metavar="DATE",
    parse=moment,
)
BEFORE = Spec(
    ("--before",),
    "Only sessions started before this date (YYYY-MM-DD or an ISO time; UTC).",
    metavar="DATE",
    parse=moment,
)
CALLS = Spec(("--calls",), "Add the per-call series and every compaction.", flag=True)
JSON = Spec(("--json",), "Print a JSON list, one object per session.", flag=True)
RECEIPT = Spec(
    ("--cost",), "Add a cost column and each session's receipt at list prices (offline).", flag=True
)

# What the console script's fast `export` and `summary` take without Typer (entry.py);
# anything else on their command line (--open, --help, a typo) is left to Typer.
FAST_EXPORT: dict[str, Spec] = {
    "output": OUTPUT,
    "harness": HARNESS,
    "force": FORCE,
    "previews": PREVIEWS,
    "strict": STRICT,
    "format_name": FORMAT,
    "estimate": ESTIMATE,
    "jobs": JOBS,
    "redact": REDACT,
    "align": ALIGN,
    "no_compress": NO_COMPRESS,
}
FAST_SUMMARY: dict[str, Spec] = {
    "window": WINDOW,
    "calls": CALLS,
    "as_json": JSON,
    "harness": HARNESS,
    "estimate": ESTIMATE,
    "jobs": JOBS,
    "cost": RECEIPT,
}


# The options that take a file or folder to write: the word after one is its name.
OUTPUT_OPTIONS = ("-o", "--output", "--html", "--to")


def usage_hints(argv: list[str]) -> list[str]:
    """What to add under a usage error (exit 2) Click printed for this command line: a
    path starting with `-` read as an option (`dash_path`), or an output option that took
    the next option for its file name (`--html -o page.html`: "unexpected extra argument
    page.html")."""
    hints = []
    if named := dash_path(argv):
        hints.append(
            f"hint: {named} is a file or folder; name it ./{named} (or put -- before it): a "
            "word starting with - is read as an option"
        )
    from itertools import pairwise

    for option, word in pairwise(argv):
        if option == "--":
            break
        if option in OUTPUT_OPTIONS and word.startswith("-") and word != "-":
            hints.append(f"hint: {option} took {word} for its file name; name the file after it")
            break
    return hints


def dash_path(argv: list[str]) -> str | None:
    """The first word before any `--` that starts with `-` and names something on disk (a
    Claude Code project folder, `-home-me-app`): Click reads it as an option."""
    import os

    for word in argv:
        if word == "--":
            return None
        if word.startswith("-") and word != "-" and os.path.lexists(word):
            return word
    return None
