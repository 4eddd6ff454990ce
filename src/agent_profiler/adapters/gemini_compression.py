"""Gemini CLI's compression, as far as a ≤0.43 recording shows it (FORMATS-gemini-opencode.md
§1.10; `gemini_session` uses it): which `info` notice is one.

The notice (`useHistoryManager`: a `compression` item is recorded as an `info` without
text, an `info` item with its text):
- automatic, 0.15–0.32 (`handleChatCompressionEvent`): "IMPORTANT: This conversation
  exceeded the compress threshold. A compressed context will be sent for future messages
  (compressed from: X to Y tokens)." with Gemini CLI's own counts before and after;
- automatic, ≥0.33: "Context compressed from X% to Y%." (of the model's token limit);
- `/compress` (every version from 0.18): an `info` with no text. The command writes it
  whatever `tryCompressChat` answered: compressed, nothing to compress (NOOP) or failed
  (the compressed history came out larger), so only the next request's size tells: when
  it did not fall below the last size, nothing was compressed.
The automatic notices are only written when the history was compressed.
"""

from __future__ import annotations

import re
from typing import Any

from agent_profiler.adapters.common import token_count
from agent_profiler.records import frozen

_PERCENT = re.compile(r"^Context compressed from (\d+)% to (\d+)%")
_THRESHOLD = re.compile(
    r"^IMPORTANT: This conversation exceeded the compress threshold\. .*?"
    r"\(compressed from: (\d+|unknown) to (\d+|unknown) tokens\)",
    re.DOTALL,
)


@frozen
class Notice:
    """A compression notice: `trigger` "auto" or "manual" (`/compress`); the counts
    before and after in Gemini CLI's own words, when it gives them."""

    trigger: str
    pre_tokens: int | None = None
    post_tokens: int | None = None


def notice(content: str | None) -> Notice | None:
    if content == "":
        return Notice("manual")
    if content is None:
        return None
    if _PERCENT.match(content):
        return Notice("auto")
    found = _THRESHOLD.match(content)
    if found is None:
        return None
    before, after = (int(v) if v.isdigit() else None for v in found.groups())
    return Notice("auto", before, after)


def next_reported(events: list[tuple[str, Any]], messages: dict[str, Any], after: str) -> int:
    """The prompt size of the first request recorded after message `after` (0: none)."""
    seen = False
    for event, value in events:
        ids = value if event == "checkpoint" else [value] if event == "message" else []
        for message_id in ids:
            if not seen:
                seen = message_id == after
                continue
            record = messages.get(message_id)
            record = record if isinstance(record, dict) else {}
            tokens = record.get("tokens")
            size = token_count(tokens.get("input")) if isinstance(tokens, dict) else 0
            if record.get("type") == "gemini" and size:
                return size
    return 0
