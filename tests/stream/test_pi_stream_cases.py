"""The one pass against the model path on hand-made Pi journals: what the corpus holds
little of (branches left and summarised, parallel calls ending in any order, a call
without a result, failed requests, model changes) must come out equal, and what the pass
does not handle (a compaction, a request starting long before one already written) must
fall back to the model path's bytes. Random sessions too, as adapters/pi/test_pi.py's
random trees: each either handled and equal, or not handled and the same bytes."""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import pytest
from test_pi_stream import assert_same_trace, export_both, refusals

from agent_profiler import stream
from agent_profiler.stream import pi as stream_pi
from agent_profiler.stream import pi_reading
from shared_paths import TESTS

sys.path.insert(0, str(TESTS / "adapters" / "pi"))
from test_pi import Journal
from test_pi_fork import _fork, _source, _source_v1


def both(path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Export `path` both ways; True when the pass handled it (the traces equal), False
    when it fell back (the bytes equal)."""
    expected, got, handled = export_both(path, export_trace, monkeypatch)
    assert len(handled) == 1
    if not handled[0]:
        assert got.path.read_bytes() == expected.path.read_bytes()
        return False
    assert got.stderr == expected.stderr.replace(str(expected.path), str(got.path))
    assert_same_trace(expected, got)
    return True


def reasons(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Why the Pi pass fell back (test_pi_stream.refusals)."""
    return refusals(monkeypatch, stream_pi.PiPass)


def result_at(j: Journal, parent: str, call_id: str, text: str, seconds: int = 1) -> str:
    j.second += seconds - 1
    return j.result(parent, call_id, text)


def test_branches_failed_requests_and_model_changes(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal()
    u1 = j.user(None, "look at the repo")
    a1 = j.assistant(u1, "which file?", 5_000)
    u2 = j.user(a1, "read big.txt")
    a2 = j.assistant(u2, "", 5_100, calls=(("c1", "read"),))
    r2 = j.result(a2, "c1", "x" * 40_000)
    a3 = j.assistant(r2, "it is big", 15_200)
    summary = j.entry("branch_summary", a1, fromId=a3, summary="Read big.txt: 40k of x.")
    u3 = j.user(summary, "never mind, list files")
    aborted = j.assistant(u3, "", 0, stop="aborted")
    u4 = j.user(aborted, "again")
    failed = j.assistant(u4, "partial", 5_060, stop="error", calls=(("c9", "bash"),))
    change = j.entry("model_change", failed, provider="openai", modelId="m2")
    level = j.entry("thinking_level_change", change, thinkingLevel="high")
    u5 = j.user(level, "and now?")
    j.assistant(u5, "a, b", 5_050, model="m2")
    assert both(j.write(tmp_path / "branches.jsonl"), export_trace, monkeypatch)


def test_context_edits(tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pi 1.6 `context_edit`s and `usage` (adapters/pi/test_pi_1_6_entries.py): a
    truncated attempt and its result taken out, a cache warm, then a prompt replaced. (A
    branch back to the result, off the edits, brings the result back: an addition of a
    call written already, which the pass does not write: docs/onepass.md, step 6.)"""
    j = Journal()
    u1 = j.user(None, "read big.txt")
    a1 = j.assistant(u1, "reading", 5_000, stop="length", calls=(("c1", "read"),))
    r1 = j.result(a1, "c1", "x" * 40_000)
    e1 = j.entry("context_edit", r1, targetId=a1, replacement=None)
    e2 = j.entry("context_edit", e1, targetId=r1, replacement=None)
    a2 = j.assistant(e2, "done", 5_010)
    usage = {"input": 3, "output": 1, "cacheRead": 5_015, "cacheWrite": 0}
    warm = j.entry("usage", a2, provider="anthropic", model="m1", usage=usage)
    j.lines[-1]["kind"] = "cache_warm"  # (and a request of the cache warmer's)
    e3 = j.entry("context_edit", warm, targetId=u1, replacement={"content": "read it"})
    u2 = j.user(e3, "and now?")
    j.assistant(u2, "ok", 5_020)
    assert both(j.write(tmp_path / "edits.jsonl"), export_trace, monkeypatch)


def test_parallel_calls_ending_in_any_order_and_calls_without_results(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    j = Journal()
    u1 = j.user(None, "read three files")
    calls = (("c1", "read"), ("c2", "read"), ("c3", "bash"))
    a1 = j.assistant(u1, "", 3_000, calls=calls)
    r3 = result_at(j, a1, "c3", "z" * 9_000, 5)
    r1 = result_at(j, r3, "c1", "x" * 100)
    r2 = result_at(j, r1, "c2", "y" * 20_000, 3)
    a2 = j.assistant(r2, "", 9_000, calls=(("c4", "read"), ("c5", "read")))
    r4 = result_at(j, a2, "c4", "w" * 5_000)
    # c5 gets no result: the conversation moves on
    u2 = j.user(r4, "stop")
    a3 = j.assistant(u2, "ok", 12_000, calls=(("c6", "bash"),))
    j.user(a3, "and the end")  # c6 too, without a result …
    j.assistant(j.lines[-1]["id"], "", 12_100, calls=(("c7", "read"),))  # … and c7 at the end
    assert both(j.write(tmp_path / "parallel.jsonl"), export_trace, monkeypatch)


def test_a_failed_request_whose_call_never_ran(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a request that failed with a call in it (Pi runs no call of a failed message:
    # no result), then a prompt and a request
    j = Journal()
    u1 = j.user(None, "read it")
    failed = j.assistant(u1, "", 2_000, stop="error", calls=(("c1", "read"),))
    u2 = j.user(failed, "again")
    j.assistant(u2, "done", 2_100)
    said = reasons(monkeypatch)
    # THEN the pass writes what the model path writes
    assert both(j.write(tmp_path / "failed-call.jsonl"), export_trace, monkeypatch)
    assert said == []


@pytest.mark.parametrize("version", [1, 3])
def test_a_fork(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    # GIVEN a fork: its source's entries copied first (dated before its header), then its
    # own prompt and a request with a call
    source, leaf = _source() if version == 3 else _source_v1()
    fork = _fork(source, leaf, version=version)
    u2 = fork.user(leaf or None, "now b")
    a3 = fork.assistant(u2, "", 400, calls=(("c2", "read"),))
    fork.result(a3, "c2", "y" * 40)
    fork.assistant(fork.lines[-1].get("id"), "done", 450)
    # THEN the pass writes what the model path writes
    assert both(fork.write(tmp_path / "fork.jsonl"), export_trace, monkeypatch)


def test_a_session_without_a_measured_request(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a prompt, an aborted request without usage and a model change
    j = Journal()
    u1 = j.user(None, "question")
    aborted = j.assistant(u1, "", 0, stop="aborted")
    j.entry("model_change", aborted, provider="openai", modelId="m2")
    # THEN the pass writes what the model path writes (all of it at the end)
    assert both(j.write(tmp_path / "no-request.jsonl"), export_trace, monkeypatch)


def test_compactions(tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN two compactions (the second keeps nothing before it), with calls around them
    j = Journal()
    u1 = j.user(None, "question")
    a1 = j.assistant(u1, "", 1_000, calls=(("c1", "read"),))
    r1 = j.result(a1, "c1", "x" * 4_000)
    a2 = j.assistant(r1, "answer", 2_000)
    c1 = j.entry("compaction", a2, summary="asked", firstKeptEntryId=u1, tokensBefore=2_005)
    u2 = j.user(c1, "more")
    a3 = j.assistant(u2, "more answer", 700, calls=(("c2", "bash"),))
    r2 = j.result(a3, "c2", "y" * 900)
    c2 = j.entry("compaction", r2, summary="all of it", firstKeptEntryId=r2, tokensBefore=900)
    u3 = j.user(c2, "and?")
    j.assistant(u3, "done", 500)
    # THEN the pass writes what the model path writes
    assert both(j.write(tmp_path / "compacted.jsonl"), export_trace, monkeypatch)
    # and a 1.6 compaction that records its summariser's usage (its request, whose tokens
    # the Input and Output tokens counters add up) falls back to the model path
    (entry,) = [line for line in j.lines if line.get("id") == c2]
    entry["usage"] = {"input": 900, "output": 80, "cacheRead": 0, "cacheWrite": 0}
    said = reasons(monkeypatch)
    assert not both(j.write(tmp_path / "summarised.jsonl"), export_trace, monkeypatch)
    assert said == ["a compaction with a request of its own"]


def test_one_request_and_a_compaction_at_the_end(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a session of one request, then one that ends with a compaction (no request
    # after it tells its size after)
    j = Journal()
    u1 = j.user(None, "question")
    j.assistant(u1, "answer", 1_000)
    said = reasons(monkeypatch)
    # THEN the pass writes what the model path writes (the counters' opening zeros too)
    assert both(j.write(tmp_path / "one.jsonl"), export_trace, monkeypatch)
    u2 = j.user(j.lines[-1]["id"], "more")
    a2 = j.assistant(u2, "more answer", 1_500, calls=(("c1", "read"),))
    r1 = j.result(a2, "c1", "x" * 3_000)
    j.entry("compaction", r1, summary="all of it", firstKeptEntryId=u2, tokensBefore=2_300)
    assert both(j.write(tmp_path / "compacted-last.jsonl"), export_trace, monkeypatch)
    assert said == []


def test_a_compaction_stamped_at_its_parents_time(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a compaction entry written in the millisecond of the entry before it: it
    # starts and ends at one time, so its size before and after are samples of one time
    # (the model path writes one, the after: writers/perfetto.py `_counter_packets`)
    j = Journal()
    u1 = j.user(None, "question")
    a1 = j.assistant(u1, "answer", 1_000)
    u2 = j.user(a1, "more")
    a2 = j.assistant(u2, "more answer", 1_500, calls=(("c1", "read"),))
    r1 = j.result(a2, "c1", "x" * 3_000)
    c1 = j.entry("compaction", r1, summary="all of it", firstKeptEntryId=u2, tokensBefore=2_300)
    j.lines[-1]["timestamp"] = j.lines[-2]["timestamp"]
    u3 = j.user(c1, "again")
    j.assistant(u3, "again answer", 900)
    said = reasons(monkeypatch)
    # THEN the pass writes what the model path writes
    assert both(j.write(tmp_path / "instant.jsonl"), export_trace, monkeypatch)
    assert said == []


def test_a_request_starting_before_the_one_read_before_it(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a request whose message was created before the request read before it
    # started, and before every entry of the journal (the session starts there)
    j = Journal()
    u1 = j.user(None, "question")
    a1 = j.assistant(u1, "answer", 1_000)
    u2 = j.user(a1, "more")
    j.assistant(u2, "more answer", 1_100)
    j.lines[-1]["message"]["timestamp"] -= 10 * 1_000
    # THEN the pass writes the two in time order
    assert both(j.write(tmp_path / "early.jsonl"), export_trace, monkeypatch)


def test_a_request_starting_before_one_written_falls_back(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a request whose message was created before a request the pass has written
    # (written once the journal is REORDER_NS past its start; the pass looks every line)
    monkeypatch.setattr(pi_reading, "BATCH_LINES", 1)
    j = Journal()
    u1 = j.user(None, "question")
    a1 = j.assistant(u1, "answer", 1_000)
    j.second += 1_200
    u2 = j.user(a1, "more")
    a2 = j.assistant(u2, "more answer", 1_100)
    u3 = j.user(a2, "again")
    j.assistant(u3, "again answer", 1_200)
    j.lines[-1]["message"]["timestamp"] -= 1_300 * 1_000
    said = reasons(monkeypatch)
    # THEN the model path writes it
    assert not both(j.write(tmp_path / "late.jsonl"), export_trace, monkeypatch)
    assert said == ["a request that starts before one written already"]


def test_two_requests_at_one_time_fall_back(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a request whose message was created at the very time of the one before it
    # (their snapshots share a time: which came first is not the pass's to say)
    j = Journal()
    u1 = j.user(None, "question")
    a1 = j.assistant(u1, "answer", 1_000)
    u2 = j.user(a1, "more")
    j.assistant(u2, "more answer", 1_100)
    j.lines[-1]["message"]["timestamp"] = j.lines[-3]["message"]["timestamp"]
    said = reasons(monkeypatch)
    # THEN the model path writes it
    assert not both(j.write(tmp_path / "together.jsonl"), export_trace, monkeypatch)
    assert said == ["two requests at one time"]


def random_session(seed: int, *, compacts: bool, together: float = 0.0) -> Journal:
    """A session that branches back to random earlier entries, summarises branches, makes
    parallel calls some of which get no result, fails requests, changes models, and
    (`compacts`) compacts; `together`: the share of entries written in the second of the
    entry before them (their times equal)."""
    rng = random.Random(seed)
    j = Journal()
    leaf: str | None = None
    path: list[str] = []
    for step in range(150):
        if together and rng.random() < together:
            j.second -= 1
        roll = rng.random()
        if path and roll < 0.1:
            back = rng.randrange(len(path))
            leaf = path[back]
            path = path[: back + 1]
            if rng.random() < 0.5:
                text = "summary " * rng.randint(1, 30)
                leaf = j.entry("branch_summary", leaf, fromId=path[-1], summary=text)
                path.append(leaf)
        elif path and roll < 0.14 and compacts:
            # (the size before: with `together` only, the first seeds' sessions as they were)
            size = {"tokensBefore": rng.randint(1_000, 90_000)} if together else {}
            leaf = j.entry(
                "compaction", leaf, summary="compacted", firstKeptEntryId=rng.choice(path), **size
            )
            path.append(leaf)
        elif roll < 0.17:
            model = rng.choice(["m1", "m2"])
            leaf = j.entry("model_change", leaf, provider="anthropic", modelId=model)
            path.append(leaf)
        elif roll < 0.45:
            leaf = j.user(leaf, "q" * rng.randint(1, 300))
            path.append(leaf)
        else:
            calls = tuple(
                (f"c{step}-{i}", rng.choice(["read", "bash"])) for i in range(rng.randint(0, 3))
            )
            stop = rng.choice(["toolUse", "toolUse", "toolUse", "aborted", "error"])
            size = 0 if stop == "aborted" else rng.randint(1_000, 60_000)
            leaf = j.assistant(
                leaf,
                "t" * rng.randint(0, 200),
                size,
                stop=stop,
                calls=calls,
                model=rng.choice(["m1", "m1", "m2"]),
            )
            path.append(leaf)
            # (Pi runs no call of a failed message)
            ran = calls if stop == "toolUse" else ()
            for call_id, _ in rng.sample(ran, len(ran)):
                if rng.random() < 0.85:
                    j.second += rng.randint(0, 4)
                    leaf = j.result(leaf, call_id, "r" * rng.randint(0, 20_000))
                    path.append(leaf)
    return j


@pytest.mark.parametrize("seed", range(24))
def test_random_sessions(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # GIVEN a random session (`random_session`) that (one seed in three) compacts
    compacts = seed % 3 == 2
    j = random_session(seed, compacts=compacts)
    # (the log replayed and the requests written every line, every few, or every 256)
    monkeypatch.setattr(pi_reading, "BATCH_LINES", (1, 7, 256)[seed // 3 % 3])
    said = reasons(monkeypatch)
    handled = both(j.write(tmp_path / f"random-{seed}.jsonl"), export_trace, monkeypatch)
    # THEN every session without a compaction is the pass's (one with a compaction may
    # not be: a call's result kept by a compaction after a branch can come back into the
    # context as a new addition, long after the call was written; or a compaction comes
    # before the first request)
    assert handled or compacts
    assert said == ([] if handled else [said[0]])
    assert set(said) <= {
        "an addition of a call written before it was one",
        "a compaction before the first request",
    }


@pytest.mark.parametrize("seed", range(100, 116))
def test_random_sessions_with_entries_at_one_time(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    # GIVEN a random session, half of them compacting, one entry in twenty written in the
    # second of the one before it (a compaction at its parent's time was written unlike
    # the model path until the pass merged the samples of one time: stream/emit.py)
    compacts = seed % 2 == 0
    j = random_session(seed, compacts=compacts, together=0.05)
    monkeypatch.setattr(pi_reading, "BATCH_LINES", (1, 7, 256)[seed % 3])
    said = reasons(monkeypatch)
    handled = both(j.write(tmp_path / f"together-{seed}.jsonl"), export_trace, monkeypatch)
    # THEN the pass's trace is the model path's, or it fell back for a time it shares
    assert said == ([] if handled else [said[0]])
    assert set(said) <= {
        "an addition of a call written before it was one",
        "a compaction before the first request",
        "a compaction starting before the request before it",
        "a compaction at the time of a request",
        "two requests at one time",
    }


def test_the_pass_reads_without_argument_digests(
    tmp_path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a session with tool calls, and a count of the digests of their input made
    from agent_profiler.adapters import drafts

    made: list[bool] = []
    digest = drafts.args_digest

    def counted(arguments: object) -> str:
        made.append(stream.enabled())
        return digest(arguments)

    monkeypatch.setattr(drafts, "args_digest", counted)
    j = Journal()
    u1 = j.user(None, "read two files")
    a1 = j.assistant(u1, "", 3_000, calls=(("c1", "read"), ("c2", "bash")))
    r1 = result_at(j, a1, "c1", "x" * 100)
    r2 = result_at(j, r1, "c2", "y" * 2_000)
    j.assistant(r2, "done", 4_000)
    # WHEN it is exported both ways
    handled = both(j.write(tmp_path / "digests.jsonl"), export_trace, monkeypatch)
    # THEN the pass handled it, and neither way made a digest (no trace shows one: an
    # export of the model path reads without them too), and the traces are equal
    assert handled and made == []
