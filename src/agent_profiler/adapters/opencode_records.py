"""What an OpenCode assistant message's fields mean for its requests: its usage
(`tokens`: which counts are a request's prompt and completion, and which are no token
counts) and whether what it wrote is sent again (`MessageV2.toModelMessages`)."""

from __future__ import annotations

from typing import Any

from agent_profiler.adapters.common import bad_counts, text_field, token_count
from agent_profiler.model import Usage


def bad_tokens(tokens: object) -> dict[str, object]:
    """The counts of a `tokens` object that are no token counts (read as 0), by their
    path in it (`cache.read`); {} for almost every one."""
    if not isinstance(tokens, dict):
        return {}
    cache = tokens.get("cache")
    counts = {k: tokens.get(k) for k in ("input", "output", "reasoning", "total")}
    if isinstance(cache, dict):
        counts |= {f"cache.{k}": cache.get(k) for k in ("read", "write")}
    return {k: counts[k] for k in bad_counts(counts)}


def usage_of(tokens: object) -> Usage:
    """`input` excludes the cache: the prompt is input + cache.read + cache.write."""
    tokens = tokens if isinstance(tokens, dict) else {}
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    fresh, read, write = (
        token_count(tokens.get("input")),
        token_count(cache.get("read")),
        token_count(cache.get("write")),
    )
    output, reasoning = token_count(tokens.get("output")), token_count(tokens.get("reasoning"))
    # The whole completion, as for the other harnesses. Most providers report `reasoning`
    # beside `output`, some inside it; `total` (≥1.2) tells which: it is the sum of what
    # was billed, so completion = total − prompt. Without `total`, beside is assumed.
    total = token_count(tokens.get("total"))
    prompt = fresh + read + write
    completion = total - prompt if total >= prompt + output else output + reasoning
    return Usage(
        prompt_tokens=prompt,
        input_tokens=fresh,
        output_tokens=completion,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=reasoning,
    )


def failed(error: object) -> bool:
    """Whether a message's `error` says it failed, as JavaScript reads it (`if
    (msg.info.error)`: any object, `{}` and `[]` too)."""
    return error not in (None, False, 0, "")


def not_sent_again(message: dict[str, Any], parts: list[dict[str, Any]]) -> bool:
    """A 1.x assistant message that failed is left out of every later request
    (`MessageV2.toModelMessages`), unless it was aborted with parts beyond its step starts
    and reasoning (`AbortedError`, "MessageAbortedError": what it wrote stays). 2.x sends
    it all the same (`to-llm-message.ts`: its reasoning as text): a message read from a
    2.x row says so (`SENT_WHEN_FAILED`)."""
    error = message.get("error")
    if not failed(error) or message.get(SENT_WHEN_FAILED) is True:
        return False
    if isinstance(error, dict) and error.get("name") == "MessageAbortedError":
        return not any(
            not isinstance(p, dict) or text_field(p, "type") not in ABORT_KEEPS_NOT for p in parts
        )
    return True


ABORT_KEEPS_NOT = ("step-start", "reasoning")
# Set by opencode_v2 on the 1.x-shaped message it makes of a 2.x row (not OpenCode's key).
SENT_WHEN_FAILED = "agentprof:sent-when-failed"
