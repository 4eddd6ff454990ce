"""The context log of a one-pass Codex export (stream/codex.py): stream/log.py's
`StreamLog`, with what a Codex rollout needs of it besides. A Codex request is observed
when its first output item comes (`RolloutBuilder.start_request`) and settled when its
`token_count` comes (its reported size and window), and its encrypted reasoning is an item
sized from evidence settled then too: so the log's handles stay valid across replays (an
index from the log's start, not the batch's), and a replay stops before the observation
of the request still open (`replayed_to`), whose facts and reasoning are not known yet."""

from __future__ import annotations

from typing import Any

from agent_profiler.attribution import Logged, Observation, Settled
from agent_profiler.model import ContextSnapshot, Tokens
from agent_profiler.stream.log import NotHandled, StreamLog

# What settling an observation replayed already returns: nothing reads it, and `finish`
# settles every request again (one made each time: 4 ms of a 100 MB transcript's end).
SETTLED_BEFORE = Observation.request(0, "")


class CodexLog(StreamLog):
    """A StreamLog whose handles (`observe`, `add_evidence`) are settled while they wait
    to be replayed; one replayed already is not settled again (`NotHandled`, but for the
    settle that changes nothing: the session's window, None, at the end)."""

    def __init__(self) -> None:
        super().__init__()
        self.base = 0  # entries replayed so far: the index of `_ops[0]`
        self.early: dict[int, dict[str, object]] = {}  # settled by the pass (`settle_early`)

    def observe(self, observation: Observation) -> Logged:
        if observation.dropped:
            raise NotHandled("an observation that makes no snapshot")
        self._ops.append(observation)
        return Logged(self.base + len(self._ops) - 1)

    def settle(self, logged: Logged, **facts: object) -> Observation:
        index = logged - self.base
        if index < 0:
            # (`finish` settling what the pass settled already, or a request without a
            # window in a session without one: nothing changes)
            if facts == self.early.get(logged) or facts == {"window_tokens": None}:
                return SETTLED_BEFORE
            raise NotHandled("an observation settled after it was replayed")
        settled: Settled = facts  # type: ignore[assignment]  # (ContextLog.settle's facts)
        return super(StreamLog, self).settle(Logged(index), **settled)

    def settle_early(self, logged: Logged, **facts: object) -> None:
        """Settle an observation as the builder's `finish` will (a compaction's, once the
        request after it told its size): it can be replayed then."""
        self.early[logged] = facts
        self.settle(logged, **facts)

    def add_evidence(self, *args: Any, **kwargs: Any) -> Logged:
        # (ContextLog.add_evidence's, its handle counted from the log's start)
        return Logged(self.base + super().add_evidence(*args, **kwargs))

    def settle_evidence(
        self, logged: Logged, tokens: Tokens | None, unmeasured: str = "hidden-content"
    ) -> None:
        index = logged - self.base
        if index < 0:
            raise NotHandled("an item sized from evidence after it was replayed")
        super().settle_evidence(Logged(index), tokens, unmeasured)

    def replayed_to(self, cut: Logged | None) -> list[ContextSnapshot]:
        """The snapshots of the observations logged before `cut` (None: every entry)
        since the last call, in order; the entries from `cut` on wait."""
        ops = self.taken_to(cut)
        return self.snapshots_of(ops) if ops else []

    def taken_to(self, cut: Logged | None) -> list[Any]:
        """The entries logged before `cut` (None: every entry) since the last call, in
        order, settled: the log holds them no more. The entries from `cut` on wait."""
        ops = self._ops
        end = len(ops) if cut is None else cut - self.base
        if end <= 0:
            return []
        if end == len(ops):
            self._ops = []
        else:
            ops, self._ops = ops[:end], ops[end:]
        self.base += end
        return ops
