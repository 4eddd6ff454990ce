"""The report's page: `render_report` assembles the Overview and a Context view per session
from its rooms (data, svg, html, text), and `HtmlReportWriter` writes it. Reached through
the package (`agent_profiler.report`), which imports it only when asked."""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Collection, Sequence
from typing import IO, TYPE_CHECKING, Any

from agent_profiler.console import sessions_line
from agent_profiler.model import Category, Session
from agent_profiler.records import record
from agent_profiler.report.data import ANCHOR, page, session_data
from agent_profiler.report.fills import legend, pattern_defs
from agent_profiler.report.html import CSS, context_view, overview_rows, overview_table
from agent_profiler.report.text import esc, listing
from agent_profiler.spools import temporary_file
from agent_profiler.version import __version__
from agent_profiler.views import HEAD_AFTER_COMPACTION_LABEL, HEAD_LABEL, basename

if TYPE_CHECKING:
    from agent_profiler.cost import PriceTable

DEFAULT_TITLE = "Agent Profiler report"


def render_report(
    sessions: Sequence[Session],
    *,
    title: str = DEFAULT_TITLE,
    window: int | None = None,
    inputs: Sequence[str] = (),
    cost: bool = False,
    previews: bool = False,
) -> str:
    """The whole HTML document: an Overview of every session, then one Context view each.
    Tool calls' argument previews are shown only with `previews` (report --previews).

    `window` overrides the window for fill and the chart's window line (as `summary
    --window` does); `inputs` are the names shown as the report's sources. Deterministic:
    the same sessions always give the same text. `report` makes the same page a journal
    group at a time (`ReportParts`, `Assembly`), in bounded memory.
    """
    part = report_part(sessions, window=window, cost=cost, previews=previews)
    return "".join(
        [
            _head(title, part.sessions, part.subagents, _sources(inputs, part.sources)),
            overview_table(part.rows, cost),
            legend(_used(part.categories), unattributed=_unattributed_name(part.heads)),
            "</section>",
            part.sections.decode("utf-8"),
            _TAIL if part.sessions else _EMPTY + _TAIL,
        ]
    )


@record
class ReportPart:
    """Some sessions' share of the page (a journal group's, made where it was read): their
    Overview rows and their Context views (with receipts), anchors numbered 1, 2, … after
    the `anchor` they were made with, and what the page's header and legend need of them."""

    rows: list[str]
    sections: bytes  # UTF-8
    categories: frozenset[Category]  # of any latest composition
    sources: frozenset[str]  # the sessions' journal file names
    sessions: int
    subagents: int
    # Of the rows whose latest composition holds Unattributed: what each names it (the
    # inferred head's name, SessionSummary.head_name; "": its own name, something else).
    heads: frozenset[str] = frozenset()


def report_part(
    sessions: Sequence[Session],
    *,
    window: int | None,
    cost: bool = False,
    previews: bool = False,
    anchor: str = ANCHOR,
) -> ReportPart:
    """The Overview rows and Context views of `sessions`, in page order."""
    if not previews:
        sessions = _without_previews(sessions)
    shown = page(sessions, window, anchor)
    sections = []
    table = _price_table() if cost else None  # `--cost`: imported only when asked for
    receipts: dict[str, dict[str, Any]] | None = None
    if table is not None:
        from agent_profiler.cost import session_receipt
        from agent_profiler.report.receipt import receipt_section

        receipts = {s.session_id: session_receipt(s, table).to_json(table) for _, s in shown.rows}
    for row, session in shown.rows:
        sections.append(
            context_view(
                session_data(row, session),
                shown.anchors[session.session_id],
                window,
                shown.anchors,
                shown.kids.get(session.session_id, []),
            )
        )
        if receipts is not None:
            anchor_of = shown.anchors[session.session_id]
            receipt = receipts[session.session_id]
            sections.append(receipt_section(anchor_of, receipt, head=row.head_name))
    return ReportPart(
        overview_rows(shown, receipts),
        "".join(sections).encode("utf-8"),
        frozenset(c for c in Category if any(c.value in r.end_categories for r, _ in shown.rows)),
        frozenset(basename(p) for _, s in shown.rows for p in s.sources),
        len(shown.rows),
        shown.subagents,
        frozenset(r.head_name for r, _ in shown.rows if r.end_categories.get("unattributed")),
    )


@functools.cache
def _price_table() -> PriceTable:
    from agent_profiler.cost import PriceTable

    return PriceTable()


@record
class ReportParts:
    """A journal group's `ReportPart`, as pipeline.run_groups uses a group (in a worker
    process or this one); `redact` leaves out each tool call's target too."""

    window: int | None
    cost: bool
    previews: bool
    redact: bool
    anchor: str  # anchors the page cannot otherwise hold (`Assembly` renumbers them)

    def __call__(
        self, sessions: list[Session], diagnostics: Any, task: Any, out: Any
    ) -> ReportPart:
        if self.redact:
            from agent_profiler.targets import without_targets

            sessions = without_targets(sessions)
        return report_part(
            sessions,
            window=self.window,
            cost=self.cost,
            previews=self.previews,
            anchor=self.anchor,
        )


class Assembly:
    """The page made of parts in page order: each part's anchors renumbered after those
    before it, its Overview rows kept (a row is small), its Context views spooled to a
    temporary file; `write` puts the header, the Overview and the views together. Nothing
    holds more than one group's model, and the views wait on disk."""

    def __init__(self, anchor: str, cost: bool = False) -> None:
        self.cost = cost  # the rows have a Cost cell
        self.anchor = re.compile(re.escape(anchor) + r"(\d+)")
        self.anchor_bytes = re.compile(re.escape(anchor.encode()) + rb"(\d+)")
        self.rows: list[str] = []
        self.categories: set[Category] = set()
        self.sources: set[str] = set()
        self.sessions = 0
        self.subagents = 0
        self.heads: set[str] = set()
        # In the temporary folder; its failures (a full /tmp) name that folder (outputs.py).
        self.spool = temporary_file()

    def __enter__(self) -> Assembly:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        self.spool.close(failing=kind is not None)

    def add(self, part: ReportPart) -> None:
        offset = self.sessions
        self.rows += [
            self.anchor.sub(lambda m: f"{ANCHOR}{offset + int(m[1])}", row) for row in part.rows
        ]
        self.spool.write(
            self.anchor_bytes.sub(
                lambda m: b"%s%d" % (ANCHOR.encode(), offset + int(m[1])), part.sections
            )
        )
        self.categories |= part.categories
        self.sources |= part.sources
        self.sessions += part.sessions
        self.subagents += part.subagents
        self.heads |= part.heads

    def write(self, stream: IO[bytes], *, title: str, inputs: Sequence[str]) -> int:
        """The page to `stream`; its size in bytes."""
        start = (
            _head(title, self.sessions, self.subagents, _sources(inputs, self.sources))
            + overview_table(self.rows, self.cost)
            + legend(_used(self.categories), unattributed=_unattributed_name(self.heads))
            + "</section>"
        ).encode("utf-8")
        size = stream.write(start) or 0
        self.spool.seek(0)
        while chunk := self.spool.read(1 << 20):
            size += stream.write(chunk) or 0
        end = (_TAIL if self.sessions else _EMPTY + _TAIL).encode("utf-8")
        return size + (stream.write(end) or 0)


_EMPTY = "<p>No sessions.</p>"
_TAIL = "</main></body></html>\n"


def _used(categories: Collection[Category]) -> list[Category]:
    """The legend's categories: those of any latest composition (all when there is none)."""
    return [c for c in Category if c in categories] or list(Category)


def _unattributed_name(heads: Collection[str]) -> str:
    """How the Overview's legend names Unattributed: as the bars name it when every row
    names it alike, or by each name the rows give it ("" for its own, then the inferred
    head's as the first request measured it, then as measured again after a compaction)."""
    order = ["", HEAD_LABEL, HEAD_AFTER_COMPACTION_LABEL]
    names = sorted(set(heads), key=lambda name: order.index(name) if name in order else 3)
    if len(names) < 2:
        return names[0] if names else ""
    named = ", or ".join(name or Category.UNATTRIBUTED.label for name in names)
    return f"{named} (as each bar names it)"


def _sources(inputs: Sequence[str], names: Collection[str]) -> list[str]:
    return list(inputs) or sorted(names)


def _head(title: str, sessions: int, subagents: int, sources: Sequence[str]) -> str:
    """The document up to the Overview: head, patterns, header, `<main>`."""
    return "".join(
        [
            "<!DOCTYPE html>\n"
            '<html lang="en"><head><meta charset="utf-8">'
            # No fetch of any kind is allowed: the page must open offline and never call home.
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "style-src 'unsafe-inline'; img-src data:\">"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="agent-profiler {__version__}">'
            f"<title>{esc(title)}</title><style>{CSS}</style></head><body>",
            pattern_defs(),
            f"<header><h1>{esc(title)}</h1>",
            f'<p class="muted">{sessions_line(sessions, subagents)} from '
            f"{esc(listing(sources)) or 'no input'} · agent-profiler {__version__}. "
            "Sizes are in tokens. Context size is the reported request input (cached tokens "
            "counted once), the same series as the trace's Context size counter; the "
            "composition by category is an estimate (see each session's basis).</p>",
            # The Overview's session links are the table of contents.
            "</header><main>",
        ]
    )


def _without_previews(sessions: Sequence[Session]) -> list[Session]:
    return [
        dataclasses.replace(
            s,
            tool_calls=tuple(
                dataclasses.replace(c, args_preview=()) if c.args_preview else c
                for c in s.tool_calls
            ),
        )
        if any(c.args_preview for c in s.tool_calls)
        else s
        for s in sessions
    ]


class HtmlReportWriter:
    """`render_report` behind the `Writer` protocol, so the CLI's atomic write serves it."""

    name = "html"
    extension = ".html"
    binary = False

    def __init__(
        self,
        *,
        title: str = DEFAULT_TITLE,
        window: int | None = None,
        inputs: Sequence[str] = (),
        cost: bool = False,
        previews: bool = False,
    ) -> None:
        self.title = title
        self.window = window
        self.inputs = tuple(inputs)
        self.cost = cost
        self.previews = previews

    def write(self, sessions: Sequence[Session], stream: IO[bytes]) -> int:
        data = render_report(
            sessions,
            title=self.title,
            window=self.window,
            inputs=self.inputs,
            cost=self.cost,
            previews=self.previews,
        ).encode("utf-8")
        stream.write(data)
        return len(data)
