"""A receipt as text: the till receipt `summary --cost` and `fleet` print, and the notes
under its totals that the report's page lists too (cost.py makes the receipts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_profiler.console import counted
from agent_profiler.cost import SEARCHES


def _searches_line(receipt: Mapping[str, Any]) -> list[str]:
    """The web searches' line of a receipt, when it ran any (a receipt from before the key
    has none)."""
    searches = receipt.get(SEARCHES) or {"count": 0}
    priced = searches["count"] - searches.get("unpriced", 0)  # the others: a note, below
    if not priced:
        return []
    return [f"    {'web searches':<24}{priced:>14,}      ${searches['usd']:>10.4f}"]


def render_receipt(name: str, data: Mapping[str, Any]) -> str:
    """A till receipt of one session (or a fleet) as text."""
    billed, hit = data["billed"], data["every_cache_hit"]
    lines = [f"{name}: what the context cost ({data['prices']['table']}, {data['prices']['date']})"]
    unpriced = sum(entry["requests"] for entry in data["unpriced_models"])
    of = f" of the {data['requests_priced']:,} requests priced" if "requests_priced" in data else ""
    lines.append(
        f"  as billed, at list price, from the reported usage{of if unpriced else ''}"
        + (f" ({unpriced:,} not: below)" if unpriced else "")
        + ":"
    )
    labels = {
        "input": "uncached input",
        "cache_write_5m": "cache writes, 5 min",
        "cache_write_1h": "cache writes, 1 hour",
        "cache_read": "re-read (cache reads)",
        "output": "model output",
    }
    for component, label in labels.items():
        line = billed[component]
        lines.append(f"    {label:<24}{line['tokens']:>14,} tok  ${line['usd']:>10.4f}")
    lines.extend(_searches_line(billed))
    lines.append(f"    {'total':<42}  ${billed['total_usd']:>10.4f}")
    lines.append("  every cache hit (hypothetical, not what was paid):")
    for writer, usd in hit["written_once_by_writer"].items():
        label = f"written once, {writer}"
        lines.append(f"    {label:<42}  ${usd:>10.4f}")
    if unsplit := hit.get("written_once_unsplit_usd"):
        lines.append(f"    {'written once, no composition to split it':<42}  ${unsplit:>10.4f}")
    for line_name, label in (("re_read", "re-read, every turn"), ("output", "model output")):
        line = hit[line_name]
        lines.append(f"    {label:<24}{line['tokens']:>14,} tok  ${line['usd']:>10.4f}")
    lines.extend(_searches_line(hit))
    lines.append(f"    {'total':<42}  ${hit['total_usd']:>10.4f}")
    lines += [f"  {note}" for note in receipt_notes(data)]
    return "\n".join(lines)


def receipt_notes(data: Mapping[str, Any]) -> list[str]:
    """What a receipt says under its totals, one sentence each, the same in text (summary,
    fleet) and on the report's page: a lower bound, what the harness recorded, what has no
    price, and which model of the table priced each of the journal's."""
    notes = []
    if data.get("output_lower_bound"):
        streaming = data.get("streaming_outputs")
        which = f" for {counted(streaming, 'request')}" if streaming else ""
        notes.append(
            f"model output is a lower bound{which}: the journal records streaming output "
            "counts, often below what was billed"
        )
    recorded = data.get("recorded")
    if recorded:
        notes.append(
            f"recorded by the harness: ${recorded['usd']:.4f} for "
            f"{counted(recorded['requests'], 'request')} (at its own prices: a subscription or "
            "a free model records 0)"
        )
    if total := data.get("recorded_total"):
        sessions = total["sessions"]
        which = "the whole run" if sessions == 1 else f"{sessions} whole runs"
        notes.append(
            f"recorded by the harness for {which}: ${total['usd']:.4f} (its own total at its "
            "prices: every call, side models and subagents included; the lines above price "
            "only the requests the journal records)"
        )
    if unpriced := data["billed"].get(SEARCHES, {}).get("unpriced"):
        notes.append(
            f"no price for {counted(unpriced, 'web search', 'web searches')}: the table "
            "gives their model none (nothing is guessed), left out of the totals"
        )
    if unmetered := data.get("responses_without_usage"):
        notes.append(
            f"{counted(unmetered, 'response')} without usage in the journal (every count 0): "
            "not priced, so the totals lack what they cost"
        )
    for entry in data["unpriced_models"]:
        notes.append(
            f"no price for {entry['model']} ({counted(entry['requests'], 'request')}): "
            "its name matched no model of the table (nothing is guessed), left out of the totals"
        )
    if data["models"]:
        notes.append("priced as: " + ", ".join(f"{k} → {v}" for k, v in data["models"].items()))
    return notes


__all__ = ["receipt_notes", "render_receipt"]
