"""Which journal groups the one pass took (stream/group.py `try_group` spied on), for
the tests of the pass and of what reads beside it."""

from __future__ import annotations

from typing import Any

import pytest

from agent_profiler.stream import group as stream_group


def spy_on_try_group(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each group `try_group` is asked about from now on, whether the pass took it."""
    handled: list[bool] = []
    original = stream_group.try_group

    def spy(*args: Any, **kwargs: Any) -> Any:
        outcome = original(*args, **kwargs)
        handled.append(outcome is not None)
        return outcome

    monkeypatch.setattr(stream_group, "try_group", spy)
    return handled
