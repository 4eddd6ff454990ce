"""The context window of a Gemini CLI session's model: Gemini CLI's own `tokenLimit(model)`
(packages/core/src/core/tokenLimits.ts @ HEAD), 1,048,576 for every current Gemini model
and 256,000 for Gemma 4. The journal does not hold it."""

from __future__ import annotations

GEMINI_WINDOW = 1_048_576
GEMMA_WINDOW = 256_000


def window_for(model: str | None) -> tuple[int, str]:
    """The window of `model`, and where it comes from."""
    name = (model or "").lower()
    if name.startswith("gemma-4") or name.startswith("gemma4"):
        return GEMMA_WINDOW, "model: Gemini CLI tokenLimit() for Gemma 4 (not in the journal)"
    if name.startswith("gemini-"):
        return GEMINI_WINDOW, "model: Gemini CLI tokenLimit() for Gemini models (not in journal)"
    return GEMINI_WINDOW, "assumed: Gemini CLI's default window (model unknown, not in journal)"
