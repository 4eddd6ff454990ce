"""The report's receipt of one session (`report --cost`): both receipts of cost.py as
two small tables, with the price table's name and date and any model without a price."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_profiler.cost import SEARCHES, WRITER_OF
from agent_profiler.cost_text import receipt_notes
from agent_profiler.model import Category
from agent_profiler.report.text import esc
from agent_profiler.views import category_label

_BILLED = (
    ("input", "uncached input"),
    ("cache_write_5m", "cache writes, 5 minutes"),
    ("cache_write_1h", "cache writes, 1 hour"),
    ("cache_read", "re-read (cache reads)"),
    ("output", "model output"),
)


def _usd(value: float) -> str:
    return f"${value:,.4f}"


def _searches_row(receipt: Mapping[str, Any]) -> str:
    """Server-side web searches, a row when the session ran any (their count, not tokens)."""
    searches = receipt.get(SEARCHES) or {"count": 0}
    priced = searches["count"] - searches.get("unpriced", 0)  # the others: a note
    if not priced:
        return ""
    return (
        f'<tr><td>web searches ({priced:,})</td><td class="num"></td>'
        f'<td class="num">{_usd(searches["usd"])}</td></tr>'
    )


def _priced(data: Mapping[str, Any]) -> str:
    """Said beside "As billed" when some requests have no price: the rows are the others'."""
    unpriced = sum(entry["requests"] for entry in data["unpriced_models"])
    if not unpriced or "requests_priced" not in data:
        return ""
    return f" (the {data['requests_priced']:,} requests priced; {unpriced:,} not: below)"


def _writer(writer: str, by_category: Mapping[str, float], head: str) -> str:
    """A writer of "written once" as the page names it: when the session's Unattributed is
    its inferred head, "unattributed" says so by the name the chart gives it."""
    if not head or writer != WRITER_OF[Category.UNATTRIBUTED]:
        return writer
    held = [
        category_label(c, head)
        for c in Category
        if WRITER_OF[c] == writer and by_category.get(c.value)
    ]
    return f"{writer}: {' + '.join(held)}" if held else writer


# Who "code + disk" is: the categories cost.WRITER_OF files under it, as the chart names them.
_CODE_AND_DISK = ", ".join(
    c.label.lower() for c in Category if WRITER_OF[c] == WRITER_OF[Category.SYSTEM]
)


def receipt_section(anchor: str, data: Mapping[str, Any], head: str = "") -> str:
    """`head`: the session's Unattributed is its inferred head (views.unattributed_is_head),
    named as the chart names it."""
    billed, hit = data["billed"], data["every_cache_hit"]
    rows = "".join(
        f'<tr><td>{label}</td><td class="num">{billed[key]["tokens"]:,}</td>'
        f'<td class="num">{_usd(billed[key]["usd"])}</td></tr>'
        for key, label in _BILLED
    ) + _searches_row(billed)
    hit_rows = (
        "".join(
            f"<tr><td>written once, "
            f"{esc(_writer(writer, hit.get('written_once_by_category', {}), head))}</td>"
            f'<td class="num"></td><td class="num">{_usd(usd)}</td></tr>'
            for writer, usd in hit["written_once_by_writer"].items()
        )
        + (
            '<tr><td>written once, no composition to split it</td><td class="num"></td>'
            f'<td class="num">{_usd(hit["written_once_unsplit_usd"])}</td></tr>'
            if hit.get("written_once_unsplit_usd")
            else ""
        )
        + "".join(
            f'<tr><td>{label}</td><td class="num">{hit[key]["tokens"]:,}</td>'
            f'<td class="num">{_usd(hit[key]["usd"])}</td></tr>'
            for key, label in (("re_read", "re-read, every turn"), ("output", "model output"))
        )
        + _searches_row(hit)
    )
    notes = "".join(f"<li>{esc(note[:1].upper() + note[1:])}.</li>" for note in receipt_notes(data))
    prices = data["prices"]
    columns = '<tr><th></th><th class="num">tokens</th><th class="num">USD</th></tr>'
    return (
        f'<section class="receipt" id="{esc(anchor)}-cost"><h3>What the context cost</h3>'
        f'<p class="note">List prices from {esc(prices["table"])} (table of '
        f"{esc(prices['date'])}), applied to the usage the journal reports. "
        "“Written once” is split in the shares of the end-of-session composition "
        "(estimated), by who wrote each category: code + disk is the harness's own text "
        f"and the files it loads ({esc(_CODE_AND_DISK)}).</p>"
        f"<h4>As billed{_priced(data)}</h4><table>{columns}{rows}<tr><th>total</th><td></td>"
        f'<th class="num">{_usd(billed["total_usd"])}</th></tr></table>'
        "<h4>Every cache hit (hypothetical, not what was paid)</h4>"
        f"<table>{columns}{hit_rows}<tr><th>total</th><td></td>"
        f'<th class="num">{_usd(hit["total_usd"])}</th></tr></table>'
        + (f'<ul class="note">{notes}</ul>' if notes else "")
        + "</section>"
    )
