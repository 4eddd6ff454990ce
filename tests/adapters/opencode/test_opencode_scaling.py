"""OpenCode sessions whose reading cost grew with the square of their size (the scaling
sweep, review-scaling): every compaction scanned the whole message list (`.index`, twice)
and handed every earlier message to `drop` again; every request passed every tool output
pruned later than it; every request with a reported size looked its model and provider
up in a list. The work is counted (scans, comparisons), not timed; and the new code is
held to the old meaning (`Before`: the old scans, kept here) on sessions built for it,
on damaged ones, and on the real compacting session (shared corpus)."""

from __future__ import annotations

import copy
import json
import random
from itertools import pairwise
from typing import Any, SupportsIndex

import pytest

from agent_profiler.adapters import opencode_session
from agent_profiler.adapters.opencode_session import SessionBuilder, _Pending, _Prune
from agent_profiler.adapters.opencode_storage import StoredSession
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.model import Session
from counting import CountedNs
from shared_paths import CORPUS

T0 = 1_776_105_641_967  # epoch ms
COMPACTING = (
    CORPUS
    / "opencode"
    / "session-bridge-1.4.3-compaction"
    / "ses_277daa810ffePOBsdfS6gm8uA2.export.json"
)
Message = tuple[dict[str, Any], list[dict[str, Any]]]


class Before(SessionBuilder):
    """The old meaning, by the old scans: a compaction drops `order[:cut]`, the cut found
    with `.index` (the first place of an id); a request takes, in journal order, every
    waiting prune due by its start."""

    def leaving(self, pending: _Pending | None) -> list[str]:
        cut = self.order.index(pending.message_id) if pending else len(self.order) - 1
        if pending and pending.tail_start in self.order:
            cut = min(cut, self.order.index(pending.tail_start))
        return self.order[:cut]

    def due_prunes(self, ts: int) -> list[_Prune]:
        waiting = sorted(self.prunes, key=lambda entry: entry[1])  # journal order
        self.prunes = [entry for entry in waiting if entry[0] > ts]
        return [prune for at, _, prune in waiting if at <= ts]


class Doc:
    """A session's messages (1.x shape), one at a time, 100 ms apart."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    def add(self, role: str, parts: list[dict[str, Any]], **info: Any) -> str:
        number = len(self.messages)
        message_id = f"msg_{number:08d}"
        ms = T0 + 100 * number
        body = {"id": message_id, "role": role, "time": {"created": ms}, **info}
        if role == "assistant":
            body["time"]["completed"] = ms + 50
        parts = [{**p, "id": f"prt_{number:08d}_{i}"} for i, p in enumerate(parts)]
        self.messages.append((body, parts))
        return message_id

    def prompt(self, text: str = "do it", **part: Any) -> str:
        return self.add("user", [{"type": "text", "text": text, **part}])

    def request(
        self,
        k: int,
        *,
        model: str = "claude-sonnet-4-5",
        provider: str = "anthropic",
        pruned_at: int | None = None,
        summary: bool = False,
    ) -> str:
        ms = T0 + 100 * len(self.messages)
        tokens: dict[str, Any] = {"total": 20_070 + k, "input": 27, "output": 70, "reasoning": 0}
        tokens["cache"] = {"write": 0, "read": 19_973 + k}
        times: dict[str, Any] = {"start": ms + 1, "end": ms + 20}
        if pruned_at is not None:
            times["compacted"] = pruned_at
        tool = {"status": "completed", "input": {"pattern": f"*{k}"}, "output": f"x{k}"}
        tool["time"] = times
        parts: list[dict[str, Any]] = [{"type": "step-start"}]
        parts.append({"type": "text", "text": f"answer {k}"})
        if not summary:
            parts.append({"type": "tool", "tool": "glob", "callID": f"call_{k}", "state": tool})
        parts.append({"type": "step-finish", "reason": "stop", "tokens": tokens, "cost": 0})
        info: dict[str, Any] = {"modelID": model, "providerID": provider, "tokens": tokens}
        if summary:
            info |= {"summary": True, "agent": "compaction", "mode": "compaction"}
        return self.add("assistant", parts, **info)

    def compaction(self, k: int, tail: str | None = None) -> None:
        """A user `compaction` part (keeping the tail from `tail`), the summary, the nudge."""
        part: dict[str, Any] = {"type": "compaction", "auto": True}
        if tail is not None:
            part["tail_start_id"] = tail
        self.add("user", [part])
        self.request(k, summary=True)
        self.prompt("Continue if you have next steps.", synthetic=True)


def _cycles(n: int, *, tail: bool = False) -> list[Message]:
    """`n` rounds of a prompt, a request with a tool call, and a compaction (keeping that
    request, when `tail`): 5n messages."""
    doc = Doc()
    for k in range(n):
        doc.prompt(f"task {k}")
        request = doc.request(k)
        doc.compaction(k, tail=request if tail else None)
    return doc.messages


def _builder(messages: list[Message], kind: type[SessionBuilder] = SessionBuilder) -> Any:
    info = {"id": "ses_generated", "time": {"created": T0}, "directory": "/w"}
    stored = StoredSession(info, "generated.export.json", copy.deepcopy(messages))
    return kind(stored, Diagnostics())


def _read(messages: list[Message], kind: type[SessionBuilder] = SessionBuilder) -> Session:
    builder = _builder(messages, kind)
    builder.run()
    session = builder.finish()
    assert isinstance(session, Session)
    return session


def _linear(counts: list[int], sizes: tuple[int, ...], per: int, ratio: float = 2.2) -> None:
    """Each doubling of the size at most `ratio` times the work, at most `per` a unit."""
    assert all(count <= per * size for count, size in zip(counts, sizes, strict=True)), counts
    assert all(later <= ratio * earlier for earlier, later in pairwise(counts)), counts


# --------------------------------------------------------------------------- compactions


class Scanned(list[str]):
    """The message order, counting the places a scan of it passes (`.index`, `in`, and
    every message of a slice)."""

    passed = 0

    def index(self, value: str, *args: SupportsIndex) -> int:
        at = super().index(value, *args)
        Scanned.passed += at + 1
        return at

    def __contains__(self, value: object) -> bool:
        Scanned.passed += len(self)
        return super().__contains__(value)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            Scanned.passed += len(range(*key.indices(len(self))))
        return super().__getitem__(key)


def _compaction_work(monkeypatch: pytest.MonkeyPatch, rounds: int, *, tail: bool) -> int:
    """The messages passed in the order and handed to `drop` by `rounds` compactions."""
    handed = [0]
    drop = SessionBuilder.drop

    def counted(self: SessionBuilder, message_ids: Any) -> int:
        leaving = list(message_ids)
        handed[0] += len(leaving)
        return drop(self, leaving)

    monkeypatch.setattr(SessionBuilder, "drop", counted)
    builder = _builder(_cycles(rounds, tail=tail))
    builder.order = Scanned()
    Scanned.passed = 0
    builder.run()
    session = builder.finish()
    assert len(session.compactions) == rounds and len(session.responses) == rounds
    # Each compaction drops the round before it: its prompt, text, call and result (the
    # request, with `tail`, stays until the next one), and the summary and nudge before.
    assert [c.removed_items for c in session.compactions[1:]] == [6] * (rounds - 1)
    return handed[0] + Scanned.passed


@pytest.mark.parametrize("tail", [False, True])
def test_many_compactions_drop_each_message_once(
    monkeypatch: pytest.MonkeyPatch, tail: bool
) -> None:
    """Doubling the compactions (and the messages with them) doubles the work (each
    compaction scanned and dropped every message before it again: 4x, 100 → 200 rounds
    went from 100,100 to 400,200 places, 124,850 to 499,700 with a kept tail; now 497
    to 997)."""
    sizes = (100, 200, 400)
    counts = [_compaction_work(monkeypatch, n, tail=tail) for n in sizes]
    _linear(counts, sizes, per=10)


def test_compactions_drop_what_the_old_scans_dropped() -> None:
    """Same sessions as with the old scans: kept tails before, at and after the message
    asking, unknown ones, summaries without a request asking, and ids repeated or missing
    (damaged input: a message under an id seen before leaves with that id's first place;
    one without an id is `None`, as every other one without)."""
    doc = Doc()
    first = doc.prompt("one")
    doc.request(0)
    doc.compaction(0, tail="msg_unknown")  # as if none: all before the compaction leave
    doc.request(1, summary=True)  # a summary nobody asked for: all before it leave
    doc.prompt("two")
    second = doc.request(2)
    doc.compaction(2, tail=first)  # a tail before everything: nothing leaves
    doc.prompt("three")
    doc.request(3)
    doc.compaction(3, tail=second)
    session = _read(doc.messages)
    assert session == _read(doc.messages, Before)
    assert [c.removed_items for c in session.compactions] == [4, 2, 0, 2]
    repeated = copy.deepcopy(doc.messages)
    repeated[11][0]["id"] = first  # "three" under the first prompt's id
    repeated[4][0].pop("id")  # the first two nudges: both `None`
    repeated[10][0].pop("id")
    session = _read(repeated)
    assert session == _read(repeated, Before)
    # The last compaction keeps the tail from "two" on, but "three" and the second nudge
    # leave too: their ids were first met before "two".
    assert [c.removed_items for c in session.compactions] == [4, 2, 0, 4]
    for seed in range(30):
        damaged = _damaged(_cycles(12, tail=seed % 2 == 1), seed)
        assert _read(damaged) == _read(damaged, Before), seed


def _damaged(messages: list[Message], seed: int) -> list[Message]:
    """Ids repeated or missing, compactions asked with tails anywhere, summaries, prune
    times that are times, no times, or later than everything."""
    rnd = random.Random(seed)
    messages = copy.deepcopy(messages)
    ids = [str(m.get("id")) for m, _ in messages] + ["msg_unknown"]
    times = [m["time"]["created"] for m, _ in messages if isinstance(m.get("time"), dict)]
    for message, parts in messages:
        chance = rnd.random()
        if chance < 0.1:
            message["id"] = rnd.choice(ids)
        elif chance < 0.15:
            message.pop("id", None)
        if message.get("role") == "user" and rnd.random() < 0.2:
            part = {"type": "compaction", "id": f"prt_c{rnd.random()}", "auto": True}
            parts.append(part | ({"tail_start_id": rnd.choice(ids)} if rnd.random() < 0.6 else {}))
        if message.get("role") == "assistant" and rnd.random() < 0.15:
            message["summary"] = True
        for part in parts:
            state = part.get("state")
            if part.get("type") == "tool" and isinstance(state, dict) and rnd.random() < 0.3:
                pruned = [rnd.choice(times), rnd.choice(times) + 1, True, "x", times[-1] + 10**6]
                state.setdefault("time", {})["compacted"] = rnd.choice(pruned)
    return messages


def test_the_real_compacting_session_reads_as_with_the_old_scans() -> None:
    """OpenCode 1.4.3's compacting session (shared corpus), whole and damaged as above."""
    if not COMPACTING.is_file():
        pytest.skip("shared corpus absent")
    document = json.loads(COMPACTING.read_bytes())
    messages = [(entry["info"], entry["parts"]) for entry in document["messages"]]
    session = _read(messages)
    assert len(session.compactions) == 1 and session.compactions[0].removed_items > 0
    assert session == _read(messages, Before)
    for seed in range(8):
        damaged = _damaged(messages, seed)
        assert _read(damaged) == _read(damaged, Before), seed


# --------------------------------------------------------------------------- prunes


def _prune_comparisons(monkeypatch: pytest.MonkeyPatch, requests: int) -> int:
    """The time comparisons of reading one turn of `requests` requests whose tool outputs
    OpenCode all pruned after the last of them, then one more request."""
    doc = Doc()
    doc.prompt()
    later = T0 + 100 * (requests + 1) + 50  # after the turn, before the next request
    for k in range(requests):
        doc.request(k, pruned_at=later)
    doc.prompt("again")
    doc.request(requests)
    real = opencode_session._ns

    def counted(value: object) -> int | None:
        ns = real(value)
        return None if ns is None else CountedNs(ns)

    monkeypatch.setattr(opencode_session, "_ns", counted)
    builder = _builder(doc.messages)
    CountedNs.compared = 0
    builder.run()
    assert builder.pruned == requests
    return CountedNs.compared


def test_outputs_pruned_late_are_waited_for_in_linear_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Doubling the requests that each wait for the prunes not due yet doubles the time
    comparisons (each request compared every prune waiting: 4x, 500 → 1,000 requests went
    from 134,282 to 518,532; now 13,908 to 28,814, mostly the heap's and the clock's)."""
    sizes = (250, 500, 1000)
    counts = [_prune_comparisons(monkeypatch, n) for n in sizes]
    _linear(counts, sizes, per=80, ratio=2.3)


def test_prunes_take_effect_in_journal_order_by_their_time() -> None:
    """Prunes of one time and of several, in and out of time order, a prune that is no
    time (from the next request on) and one after the last request (never): the session
    is the one the old scan of every waiting prune read."""
    doc = Doc()
    doc.prompt()
    at = [T0 + 650, T0 + 350, T0 + 650, True, T0 + 50, T0 + 10**6, T0 + 350]
    for k, pruned in enumerate(at):
        doc.request(k, pruned_at=pruned)
    for k in range(len(at), len(at) + 4):
        doc.request(k)
    builder = _builder(doc.messages)
    builder.run()
    assert builder.pruned == len(at) - 1
    assert builder.finish() == _read(doc.messages, Before)


# --------------------------------------------------------------------------- models


class CountedId(str):
    """A model or provider name that counts the comparisons made with it."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedId.compared += 1
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def _model_comparisons(requests: int) -> int:
    """The name comparisons of reading `requests` requests, each of a model and a provider
    of its own."""
    doc = Doc()
    doc.prompt()
    for k in range(requests):
        doc.request(k, model=f"model-{k}", provider=f"provider-{k}")
    builder = _builder(doc.messages)
    for message, _ in builder.stored.messages[1:]:
        message["modelID"], message["providerID"] = map(
            CountedId, (message["modelID"], message["providerID"])
        )
    CountedId.compared = 0
    builder.run()
    compared = CountedId.compared
    session = builder.finish()
    assert session.models == tuple(f"model-{k}" for k in range(requests))
    assert session.provider == "provider-0"
    return compared


def test_many_models_and_providers_are_noted_in_linear_work() -> None:
    """Doubling the requests of distinct models and providers no more than doubles the
    name comparisons (each was looked up in the list of those seen: 4x, 500 → 1,000 went
    from 249,500 to 999,000; now none)."""
    sizes = (250, 500, 1000)
    counts = [_model_comparisons(n) for n in sizes]
    assert all(count <= size for count, size in zip(counts, sizes, strict=True)), counts
