"""When the tool calls of one Gemini CLI `gemini` record ran, and which model response
issued each (FORMATS-gemini-opencode.md §1.5-§1.7; `gemini_session` uses it).

A record's `timestamp` is when the record was created. Gemini CLI creates it at the end of
the response's stream when the response has text (every response from 0.3x), and adds the
calls once they completed (`recordToolCalls`, merged into the last `gemini` record). When
the last record is not a `gemini` one (an `info` notice came between, older builds' tool-only
responses) or thoughts are queued, it creates a new record instead, dated at the calls'
completion. And a tool-only response without thoughts is merged into the record before it,
whatever response that record was. What tells them apart is the time Gemini CLI put into a
call's own id when the model produced it (`turn.ts` `handlePendingFunctionCall`:
`<name>-<epoch ms>-<hex>` to 0.2x, `<name>_<epoch ms>_<n>` from 0.3x, `<name>__…` later)
beside its completion (`toolCalls[].timestamp`):

- created before the record's time and completed after it: the record was written at the
  stream's end, as the calls started (the common case, unchanged);
- created before the record and completed no later than it: the record was written at the
  calls' completion; the response ended, and its calls started, when the last was created;
- created after an earlier call of the same record completed: another model response,
  merged into the record without its usage: a request of unknown size of its own;
- a record with no text, thoughts or usage whose calls were all created before the
  previous `gemini` record was written, no user turn between: that response's calls,
  written late because a notice ("Request cancelled.") came between. No request.

An id without such a time (a model-given id), or a time outside those bounds, is not used."""

from __future__ import annotations

import re
from dataclasses import field
from typing import Any

from agent_profiler.adapters.common import MS, timestamp_ns, within_limits
from agent_profiler.records import record

_CREATED = re.compile(r"(?:^|[-_])(1\d{12})(?=[-_]|$)")
STREAM_END = "journal: response end → call completion"
CREATED = "journal: call created (the time in its id) → call completion"


def created_ns(call_id: object) -> int | None:
    """When the model produced a call: the epoch milliseconds in its id, if any."""
    found = _CREATED.search(call_id) if isinstance(call_id, str) else None
    return int(found.group(1)) * MS if found else None


@record
class CallTime:
    """One call's start, the request that issued it (0: the record's own response; k: the
    k-th merged response), and where its start comes from."""

    start_ns: int
    request: int = 0
    timing: str = STREAM_END


@record
class RecordTimes:
    """The record's own response's end, its calls' starts, and the (start, end) of each
    merged response found among its calls (request 1, 2, …)."""

    end_ns: int
    calls: list[CallTime] = field(default_factory=list)
    merged: list[tuple[int, int]] = field(default_factory=list)


def _times(call: dict[str, Any], start: int, ts: int) -> tuple[int | None, int | None]:
    created = created_ns(call.get("id"))
    done = timestamp_ns(call.get("timestamp"))
    done = done if done is not None and within_limits(done, ts) else None
    if created is not None and (created < start or not within_limits(created, ts)):
        created = None  # before its request began, or far off: not believed
    if created is not None and done is not None and created > done:
        created = None
    return created, done


def plan(calls: list[dict[str, Any]], start: int, ts: int) -> RecordTimes:
    """The times of a record's calls: `start` is its request's start, `ts` the record's."""
    times = [_times(call, start, ts) for call in calls]
    groups: list[list[int]] = []
    # The current group's last completion, None once one of its calls has none: kept as
    # the calls join it, not worked out again for each call (thousands in one record).
    ended: int | None = None
    for index, (made, completed) in enumerate(times):
        if groups and not (made is not None and ended is not None and made > ended):
            groups[-1].append(index)
            ended = None if ended is None or completed is None else max(ended, completed)
        else:
            groups.append([index])
            ended = completed
    result = RecordTimes(ts, [CallTime(ts) for _ in calls])
    after = ts  # when the request before a merged one ended: its calls' completion
    for group in groups:
        created = [c for i in group if (c := times[i][0]) is not None]
        done = [d for i in group if (d := times[i][1]) is not None]
        known, finished = len(created) == len(group), len(done) == len(group)
        last = max(created, default=ts)
        if known and min(created) > ts:
            # Created after the record was written: a later response merged into it.
            result.merged.append((min(after, last), last))
            for i in group:
                result.calls[i] = CallTime(last, len(result.merged), CREATED)
        elif known and finished and max(done) <= ts:
            # Written at the calls' completion: the response ended as they were created.
            result.end_ns = min(result.end_ns, last)
            for i in group:
                result.calls[i] = CallTime(last, 0, CREATED)
        if finished:
            after = max(after, *done)
    return result


def late_calls(
    record: dict[str, Any], calls: list[dict[str, Any]], before: tuple[int, int]
) -> bool:
    """A record that only holds calls of the `gemini` record before it (`before`: that
    record's request start and end; no user turn between): no text, no thoughts, no
    usage, and every call created while that response ran."""
    content = record.get("content")
    text = content if isinstance(content, str) else "" if content in (None, []) else None
    if not calls or text is None or text.strip() or record.get("thoughts"):
        return False
    tokens = record.get("tokens")
    if isinstance(tokens, dict) and any(v for v in tokens.values() if v != 0):
        return False
    start, end = before
    created = [created_ns(c.get("id")) for c in calls]
    return all(c is not None and start <= c <= end for c in created)
