"""One Claude Code API response as it is read: its records share `message.id`, and its
usage is merged over them per field with max (the first record's thread kept); a response
whose merged usage is all zero is not a request (FORMATS.md §1.3–1.4). The draft also
carries the hidden-thinking items sized when the response's final usage is known.

Separate from `claude_session.py`, which makes and finishes these drafts: this is the
usage arithmetic of one response, with no knowledge of the session around it."""

from __future__ import annotations

from dataclasses import field

from agent_profiler.adapters.common import TOKEN_LIMIT, token_count
from agent_profiler.attribution import Logged
from agent_profiler.model import Response, Usage
from agent_profiler.records import record

USAGE_KEYS = (
    "input_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "output_tokens",
)
_WRITE_1H = "cache_creation_1h"  # not a journal key: usage.cache_creation's 1-hour part


@record
class ResponseDraft:
    id: str
    start_ns: int
    end_ns: int
    model: str
    prompt_id: str | None
    observation: Logged
    usage: dict[str, int] = field(default_factory=dict)
    is_error: bool = False
    stop_reason: str | None = None
    # Hidden thinking (signature only, redacted): items sized at `finish` from the final
    # output_tokens minus the estimate of the visible output (`visible`).
    hidden: list[Logged] | None = None  # made by the first such item: most have none
    visible: int = 0
    price_context: str = ""  # `speed=fast` when a record's usage says so (Response's)
    web_searches: int = 0  # usage.server_tool_use.web_search_requests, merged with max
    final_usage: bool = False  # its final usage merged from elsewhere (a subagent's last)
    # The input side of its last message iteration (`usage.iterations`), when it has one:
    # the context it sent, where the usage's totals add up every iteration
    context_tokens: int | None = None

    def merge_usage(self, usage: object) -> tuple[str, ...]:
        """Merge one record's usage (max per field). Returns the keys whose value is not
        a token count (counted as 0), for the caller's one warning."""
        if not isinstance(usage, dict):
            return ()
        merged = self.usage
        i = usage.get("input_tokens")
        w = usage.get("cache_creation_input_tokens")
        r = usage.get("cache_read_input_tokens")
        o = usage.get("output_tokens")
        # Every record's four counts are valid token counts but in a damaged journal: they
        # are checked at once (ints whose bitwise or is in range: none negative, none at
        # the limit), without the loop and the calls of the general case below.
        if (
            i.__class__ is int
            and w.__class__ is int
            and r.__class__ is int
            and o.__class__ is int
            and 0 <= i | w | r | o < TOKEN_LIMIT
        ):
            bad: tuple[str, ...] = ()
            if i > merged.get("input_tokens", 0):
                merged["input_tokens"] = i
            if w > merged.get("cache_creation_input_tokens", 0):
                merged["cache_creation_input_tokens"] = w
            if r > merged.get("cache_read_input_tokens", 0):
                merged["cache_read_input_tokens"] = r
            if o > merged.get("output_tokens", 0):
                merged["output_tokens"] = o
        else:
            bad = self._merge_checked(usage)
        # The 1-hour share of the cache writes (prices differ from the 5-minute ones).
        split = usage.get("cache_creation")
        if split.__class__ is dict:
            hour = split.get("ephemeral_1h_input_tokens")
            if hour.__class__ is not int or not 0 <= hour < TOKEN_LIMIT:
                hour = token_count(hour)
            if hour > merged.get(_WRITE_1H, 0):
                merged[_WRITE_1H] = hour
        # Fast mode (2.1.17x+: `"speed": "fast"`) is billed at its own rates.
        speed = usage.get("speed")
        if speed.__class__ is str and speed and speed != "standard":
            self.price_context = f"speed={speed}"
        iterations = usage.get("iterations")
        if iterations.__class__ is list:
            context = _last_message_input(iterations)  # (none with no input: Claude Code's)
            if context is not None and context > (self.context_tokens or 0):
                self.context_tokens = context
        server = usage.get("server_tool_use")
        if server.__class__ is dict:
            searches = server.get("web_search_requests")
            if searches.__class__ is not int or not 0 <= searches < TOKEN_LIMIT:
                searches = token_count(searches)  # (a valid count, inline: every record)
            if searches > self.web_searches:
                self.web_searches = searches
        return bad

    def _merge_checked(self, usage: dict[str, object]) -> tuple[str, ...]:
        """The four counts merged one by one, each read as `token_count` does: a value that
        is there but no token count counts 0 and its key is returned."""
        merged = self.usage
        bad: tuple[str, ...] = ()
        for key in USAGE_KEYS:
            raw = usage.get(key)
            value = token_count(raw)
            if value > merged.get(key, 0):
                merged[key] = value
            elif raw is not None and value != raw:
                bad += (key,)
        return bad

    @property
    def prompt_tokens(self) -> int:
        """The context the request sent: its last message iteration's input side when the
        usage has iterations (server-side compaction, an advisor: the totals add up every
        iteration), else the usage's (Claude Code's own measure of a request's context)."""
        u = self.usage
        total = (
            u.get("input_tokens", 0)
            + u.get("cache_creation_input_tokens", 0)
            + u.get("cache_read_input_tokens", 0)
        )
        context = self.context_tokens
        return context if context is not None and total else total

    @property
    def is_request(self) -> bool:
        # Only counts above 0 are merged in (merge_usage), so any of these keys is one.
        u = self.usage
        return (
            "input_tokens" in u
            or "cache_creation_input_tokens" in u
            or "cache_read_input_tokens" in u
            or "output_tokens" in u
        )

    def finish(self) -> Response:
        """The response: its usage merged over its records, or, when every field of it was
        0 (no request by SPEC §3), unknown."""
        u = self.usage
        # By position (a class called with keywords builds a dict of them, per response);
        # tests/adapters/test_rules_drafts.py holds the field order.
        return Response(
            self.id,
            min(self.start_ns, self.end_ns),  # start_ns
            self.end_ns,
            self.model,
            Usage(
                self.prompt_tokens,
                u.get("input_tokens", 0),  # input_tokens
                u.get("output_tokens", 0),  # output_tokens
                u.get("cache_read_input_tokens", 0),  # cache_read_tokens
                u.get("cache_creation_input_tokens", 0),  # cache_write_tokens
                0,  # reasoning_tokens
                # cache_write_1h_tokens
                min(u.get(_WRITE_1H, 0), u.get("cache_creation_input_tokens", 0)),
            ),
            self.prompt_id,
            self.is_error,
            self.stop_reason,
            # A record with a stop_reason carries the response's final usage (the API's
            # message_delta); without one, every record held a streaming snapshot of the
            # output count, often far below what was billed (the 2.1.14 corpus journal).
            self.stop_reason is not None or self.final_usage,  # output_tokens_reliable
            self.is_request,  # usage_known
            self.price_context,
            self.web_searches,
        )


# The iterations that are not the request's own message (Claude Code's test of them).
_NOT_THE_MESSAGE = ("advisor_message", "compaction")
_MESSAGES = ("message", "fallback_message")


def _last_message_input(iterations: list[object]) -> int | None:
    """`usage.iterations`' last entry that is not an advisor's or a compaction's, when it is
    a message with valid counts: its input, cache writes and cache reads (Claude Code
    2.1.3xx reads a request's context size so: `findLast`, then its check)."""
    for entry in reversed(iterations):
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind in _NOT_THE_MESSAGE:
            continue
        if kind not in _MESSAGES or not isinstance(entry, dict):
            return None
        counts = [entry.get(key) for key in USAGE_KEYS]
        valid = [c for c in counts if isinstance(c, int) and 0 <= c < TOKEN_LIMIT]
        if len(valid) < len(counts) or any(isinstance(c, bool) for c in counts):
            return None
        return valid[0] + valid[1] + valid[2]
    return None
