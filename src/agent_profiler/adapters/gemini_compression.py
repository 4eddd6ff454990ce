"""Gemini CLI's compression, as far as a ≤0.43 recording shows it (FORMATS-gemini-opencode.md
§1.10; `gemini_session` uses it): which `info` notice is one, and which recorded turns
the compressed prompt still holds.

The notice (`useHistoryManager`: a `compression` item is recorded as an `info` without
text, an `info` item with its text):
- automatic, 0.18–0.32 (`handleChatCompressionEvent`): "IMPORTANT: This conversation
  exceeded the compress threshold. A compressed context will be sent for future messages
  (compressed from: X to Y tokens)." with Gemini CLI's own counts before and after;
  the wording of 0.14 on, recorded from 0.18 (the first `useHistoryManager` to record an
  `info` item). Up to 0.13 the notice said "…approached the input token limit for
  <model>…": never in a recording (no `info` item was recorded then), so not read;
- automatic, ≥0.33: "Context compressed from X% to Y%." (of the model's token limit);
- `/compress` (every version from 0.18): an `info` with no text. The command writes it
  whatever `tryCompressChat` answered: compressed, nothing to compress (NOOP) or failed
  (the compressed history came out larger), so only the next request's size tells: when
  it did not fall below the last size, nothing was compressed.
The automatic notices are only written when the history was compressed.

What the compressed prompt holds (`chatCompressionService.ts` 0.25–0.43): the environment
turn, the `<state_snapshot>` summary and its answer (neither in the recording), then the
history from `findCompressSplitPoint(history, 0.7)` on, verbatim: the first user turn that
is not a tool result and has at least 70% of the history's JSON characters before it
(else the last such turn; everything when the history ends in a model turn without
calls). That rule is run here on the turns the recording holds, rebuilt as the Contents
Gemini CLI sent (user parts; model text and calls; the calls' results). It is an
approximation: the environment turn, an earlier summary and thought signatures are not
in the recording, and from 0.33 large results are truncated before the split."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from agent_profiler.adapters.common import token_count
from agent_profiler.records import frozen

_PERCENT = re.compile(r"^Context compressed from (\d+)% to (\d+)%")
_THRESHOLD = re.compile(
    r"^IMPORTANT: This conversation exceeded the compress threshold\. .*?"
    r"\(compressed from: (\d+|unknown) to (\d+|unknown) tokens\)",
    re.DOTALL,
)
KEEP = 0.3  # COMPRESSION_PRESERVE_THRESHOLD


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


def _size(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def _contents(record: dict[str, Any]) -> list[tuple[bool, int, bool]]:
    """(a split may fall before it, its JSON size, a model turn without calls) of each
    Content a turn was sent as."""
    kind = record.get("type")
    content = record.get("content")
    if kind == "user":
        sent = content if isinstance(content, list) else [{"text": content}]
        results = any(isinstance(p, dict) and "functionResponse" in p for p in sent)
        return [(not results, _size({"role": "user", "parts": sent}), False)]
    if kind != "gemini":
        return []
    calls = [c for c in record.get("toolCalls") or [] if isinstance(c, dict)]
    said: list[dict[str, Any]] = [{"text": content}] if isinstance(content, str) and content else []
    said += [{"functionCall": {"name": c.get("name"), "args": c.get("args")}} for c in calls]
    sent = [p for c in calls if isinstance(c.get("result"), list) for p in c["result"]]
    out = [(False, _size({"role": "model", "parts": said}), not calls)] if said else []
    return out + ([(False, _size({"role": "user", "parts": sent}), False)] if sent else [])


def kept_from(turns: Iterable[tuple[str, dict[str, Any]]]) -> str | None:
    """The id of the first recorded turn the compressed prompt keeps verbatim (None: it
    keeps none), by Gemini CLI's split rule over the `turns` still in the context."""
    contents: list[tuple[str, bool, int, bool]] = []
    for message_id, record in turns:
        contents += [(message_id, *content) for content in _contents(record)]
    if not contents:
        return None
    target = sum(content[2] for content in contents) * (1 - KEEP)
    total = 0
    last = contents[0][0]  # no split point: the recorded turns are all kept
    for message_id, split, size, _ in contents:
        if split:
            if total >= target:
                return message_id
            last = message_id
        total += size
    # No split after the target: all of it is compressed when the last turn is the
    # model's without calls.
    return None if contents[-1][3] else last
