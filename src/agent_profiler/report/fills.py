"""The report's fills and keys: one colour and one pattern per category (and the hatch of
what the estimate leaves unexplained), their hidden SVG definitions, swatches and the
legends under the Overview and each chart (svg.py draws with these fills)."""

from __future__ import annotations

from collections.abc import Iterable

from agent_profiler.model import Category
from agent_profiler.report.text import esc
from agent_profiler.views import category_label

# One colour and one pattern per category, used by every bar, band and legend of
# the page. Patterns keep the categories apart in greyscale print and for readers
# who do not see the colours apart; the hues are Tableau 10 (+2 light ones).
COLOURS: dict[Category, str] = {
    Category.SYSTEM: "#4e79a7",
    Category.RULES: "#9c755f",
    Category.SKILLS: "#edc948",
    Category.TOOLS: "#76b7b2",
    Category.ENVIRONMENT: "#59a14f",
    Category.PROMPTS: "#e15759",
    Category.ASSISTANT: "#b07aa1",
    Category.RESULTS: "#f28e2b",
    Category.SUMMARIES: "#8cd17d",
    Category.OVERHEAD: "#a0cbe8",
    Category.MESSAGES: "#ff9da7",
    Category.UNATTRIBUTED: "#bab0ac",
}
_INK = 'stroke="#000" stroke-opacity=".45"'
_DOT = 'fill="#000" fill-opacity=".45"'
PATTERNS: dict[Category, str] = {
    Category.SYSTEM: "",  # plain
    Category.RULES: f'<path d="M-1,1 l2,-2 M0,8 l8,-8 M7,9 l2,-2" {_INK}/>',
    # Rings, not dots: three light fills (Skills, Harness overhead, Unattributed) come out
    # as one light grey in greyscale, and three dot sizes did not tell them apart.
    Category.SKILLS: f'<circle cx="4" cy="4" r="2" fill="none" {_INK} stroke-width="1.1"/>',
    Category.TOOLS: f'<path d="M0,4 h8" {_INK}/>',
    Category.ENVIRONMENT: f'<path d="M4,0 v8" {_INK}/>',
    Category.PROMPTS: f'<path d="M0,4 h8 M4,0 v8" {_INK}/>',
    Category.ASSISTANT: f'<path d="M-1,7 l2,2 M0,0 l8,8 M7,-1 l2,2" {_INK}/>',
    Category.RESULTS: (f'<path d="M0,0 l8,8 M8,0 l-8,8" {_INK} stroke-width=".6"/>'),
    Category.SUMMARIES: f'<circle cx="4" cy="4" r="2.2" {_DOT}/>',
    Category.OVERHEAD: f'<path d="M0,2 h4 M4,6 h4" {_INK} stroke-width="1.6"/>',
    Category.MESSAGES: f'<path d="M0,8 l8,-8" {_INK} stroke-width="2"/>',
    Category.UNATTRIBUTED: (
        f'<circle cx="2" cy="2" r=".8" {_DOT}/><circle cx="6" cy="6" r=".8" {_DOT}/>'
    ),
}


# The part of the reported Context size the estimate does not explain (reported − estimated,
# where positive): drawn above the bands, light and hatched, so it is not read as a category.
# Nothing is ever scaled to close it (SPEC §3).
UNEXPLAINED = "Not explained by the estimate (reported − estimated)"
UNEXPLAINED_PATTERN = (
    '<pattern id="unexplained" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fafafa"/>'
    '<path d="M0,0 v6" stroke="#8a8a96" stroke-width="1.2"/></pattern>'
)


def swatch(category: Category, size: int = 14) -> str:
    return (
        f'<svg width="{size}" height="{size}" viewBox="0 0 {size} {size}" aria-hidden="true">'
        f'<rect width="{size}" height="{size}" fill="url(#cat-{category.value})" '
        'stroke="#333" stroke-width=".6"/></svg>'
    )


def pattern_defs() -> str:
    """One hidden SVG holding each category's fill (colour + pattern), referenced by id
    from every chart of the page."""
    patterns = "".join(
        f'<pattern id="cat-{c.value}" width="8" height="8" patternUnits="userSpaceOnUse">'
        f'<rect width="8" height="8" fill="{COLOURS[c]}"/>{PATTERNS[c]}</pattern>'
        for c in Category
    )
    return (
        f'<svg class="defs" aria-hidden="true" focusable="false"><defs>{patterns}'
        f"{UNEXPLAINED_PATTERN}</defs></svg>"
    )


def legend(
    categories: Iterable[Category],
    *,
    size: bool = False,
    window: bool = False,
    compaction: bool = False,
    model: bool = False,
    unattributed: str = "",
    unexplained: bool = False,
) -> str:
    """Swatches of the categories drawn, then the line styles the chart uses (only those);
    `unattributed`: Unattributed's name when it is not its own (the inferred head's,
    views.category_label, or the Overview's every name the rows give it); `unexplained`: the
    chart draws what the estimate leaves of the reported size."""
    items = [
        f"<li>{swatch(c)}<span>{esc(category_label(c, unattributed))}</span></li>"
        for c in categories
    ]
    marks = [
        (
            unexplained,
            '<li><svg width="14" height="14" aria-hidden="true"><rect width="14" height="14" '
            'fill="url(#unexplained)" stroke="#8a8a96" stroke-dasharray="3 2"/></svg>'
            f"<span>{esc(UNEXPLAINED)}</span></li>",
        ),
        (
            size,
            '<li><svg width="28" height="14" aria-hidden="true"><path d="M0,7H28" '
            'stroke="#111" stroke-width="2"/></svg><span>Context size (reported)</span></li>',
        ),
        (
            window,
            '<li><svg width="28" height="14" aria-hidden="true"><path d="M0,7H28" '
            'stroke="#333" stroke-width="1.5" stroke-dasharray="7 5"/></svg>'
            "<span>window</span></li>",
        ),
        (
            compaction,
            '<li><svg width="14" height="14" aria-hidden="true"><path d="M7,0V14" '
            'stroke="#b00020" stroke-width="1.5" stroke-dasharray="2 3"/></svg>'
            "<span>compaction</span></li>",
        ),
        (
            model,
            '<li><svg width="14" height="14" aria-hidden="true"><path d="M7,0V14" '
            'stroke="#333" stroke-width="1.5" stroke-dasharray="8 3 2 3"/></svg>'
            "<span>model change</span></li>",
        ),
    ]
    items += [item for wanted, item in marks if wanted]
    return f'<ul class="legend">{"".join(items)}</ul>'
