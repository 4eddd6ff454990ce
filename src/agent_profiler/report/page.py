"""The report's page: `render_report` assembles the Overview and a Context view per session
from its rooms (data, svg, html, text), and `HtmlReportWriter` writes it. Reached through
the package (`agent_profiler.report`), which imports it only when asked."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import IO

from agent_profiler.console import sessions_line
from agent_profiler.model import Session
from agent_profiler.report.data import page, session_data
from agent_profiler.report.html import CSS, context_view, overview
from agent_profiler.report.svg import legend, pattern_defs
from agent_profiler.report.text import esc, listing
from agent_profiler.version import __version__

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
    the same sessions always give the same text.
    """
    if not previews:
        sessions = _without_previews(sessions)
    shown = page(sessions, window, inputs)
    head = (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        # No fetch of any kind is allowed: the page must open offline and never call home.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="agent-profiler {__version__}">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
    )
    out = [
        head,
        pattern_defs(),
        f"<header><h1>{esc(title)}</h1>",
        f'<p class="muted">{sessions_line(len(shown.rows), shown.subagents)} from '
        f"{esc(listing(shown.sources)) or 'no input'} · agent-profiler {__version__}. "
        "Sizes are in tokens. Context size is the reported request input (cached tokens "
        "counted once), the same series as the trace's Context size counter; the composition "
        "by category is an estimate (see each session's basis).</p>",
        # The Overview's session links are the table of contents.
        "</header><main>",
        overview(shown),
        legend(shown.categories),
        "</section>",
    ]
    table = None
    if cost:  # `report --cost`: the price table is imported only when asked for
        from agent_profiler.cost import PriceTable

        table = PriceTable()
    for row, session in shown.rows:
        out.append(
            context_view(
                session_data(row, session),
                shown.anchors[session.session_id],
                window,
                shown.anchors,
                shown.kids.get(session.session_id, []),
            )
        )
        if table is not None:
            from agent_profiler.cost import session_receipt
            from agent_profiler.report.receipt import receipt_section

            receipt = session_receipt(session, table).to_json(table)
            out.append(receipt_section(shown.anchors[session.session_id], receipt))
    if not shown.rows:
        out.append("<p>No sessions.</p>")
    out.append("</main></body></html>\n")
    return "".join(out)


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
