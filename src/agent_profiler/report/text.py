"""How the report writes numbers, times and untrusted text: escaping, thousands, shares,
elapsed times, dates, window origins and shortened ids (shared by the data, SVG and HTML).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

from agent_profiler.model import Session
from agent_profiler.views import window_origin


def esc(text: object) -> str:
    """Escape for text and attributes alike: journals are untrusted input."""
    return html.escape(str(text), quote=True)


def number(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def window_note(session: Session) -> str:
    origin = window_origin(session)
    return "" if origin == "journal" else f" ({origin})"


def percent(value: float) -> str:
    # A share that rounds to 0% but is not nothing says so.
    return "<1%" if 0 < value < 0.005 else f"{100 * value:.0f}%"


def short_tokens(value: float) -> str:
    """Axis tick labels: 0, 500, 50k, 1.5M."""
    if value >= 1_000_000:
        return f"{value / 1_000_000:g}M"
    if value >= 1_000:
        return f"{value / 1_000:g}k"
    return f"{value:g}"


def clock_text(ns: int) -> str:
    """Elapsed time as h:mm:ss (tables)."""
    seconds = max(0, ns) // 1_000_000_000
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def duration(seconds: float) -> str:
    """Elapsed time in words (headers, tables, idle stretches): <1 s, 30 s, 5 min, 1 h 30 min.
    Under a second is "<1 s", never a bare "0" that reads as a number without a unit (the
    axis writes its origin "0" itself: timeaxis._tick_text)."""
    if seconds < 1:
        return "<1 s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    parts = []
    if hours:
        parts.append(f"{hours} h")
    if minutes:
        parts.append(f"{minutes} min")
    if secs and not hours:
        parts.append(f"{secs} s")
    return " ".join(parts)


def utc(ns: int) -> str:
    return datetime.fromtimestamp(ns / 1e9, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def listing(names: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")


def short_id(session_id: str, limit: int = 16) -> str:
    """A long id (a UUID) shortened as the trace names the session (views.short_id: a
    time-ordered UUID by its last 8 digits), marked "…"; the full id stays in the title.
    A copy's `#n` (the loader's) is not counted, and is kept after it: `258c7280…#2`."""
    from agent_profiler.views import short_id as trace_short_id

    base, mark, copy = session_id.rpartition("#")
    if not (mark and base and copy.isdigit()):
        base, mark, copy = session_id, "", ""
    if len(base) <= limit:
        return session_id
    piece = trace_short_id(base)
    return f"{piece}…{mark}{copy}" if base.startswith(piece) else f"…{piece}{mark}{copy}"
