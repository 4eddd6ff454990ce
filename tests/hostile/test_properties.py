"""Property-based tests: random and mutated records, taken from real corpus lines, fed to
every adapter directly (not through the loader, whose safety net would hide a crash).

Invariants: no exception other than the package's own error type escapes; every
non-blank line is used, skipped with a reason, or warned about (the counts add up);
token counts and counters are never negative; each snapshot's estimated tokens equal
the sum of its categories; every span ends at or after its start; the writer accepts
whatever the adapter produced.
"""

from __future__ import annotations

import io
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_profiler.adapters import ADAPTERS, SniffedFile
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import AgentProfilerError
from agent_profiler.jsonl import sniff
from agent_profiler.model import Harness
from agent_profiler.writers import PerfettoWriter

pytestmark = pytest.mark.slow  # property tests on generated journals: not in `make check`

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
SOURCES = {
    Harness.CLAUDE_CODE: DATA / "claude-code" / "handmade" / "small.jsonl",
    Harness.CODEX: DATA
    / "codex"
    / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl",
    Harness.PI: DATA / "pi" / "pi-mono_large-session_v1.jsonl",
    Harness.MUSE: DATA / "muse" / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl",
    Harness.GEMINI_CLI: DATA
    / "gemini-cli/tp-tutor-0.39.1-jsonl/anthonyguera/chats/session-2026-04-24T23-16-c8b2cbd9.jsonl",
}
UNPARSED = ("not-json", "truncated-last-line")


def corpus_lines(harness: Harness, limit: int = 60) -> list[bytes]:
    return [line for line in SOURCES[harness].read_bytes().split(b"\n") if line.strip()][:limit]


LINES = {harness: corpus_lines(harness) for harness in SOURCES}

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)


def mutate(value: Any, rng: random.Random, replacement: Any) -> Any:
    """Replace, drop or retype one randomly chosen node of a record."""
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        action = rng.random()
        copy = dict(value)
        if action < 0.25:
            del copy[key]
        elif action < 0.5:
            copy[key] = replacement
        else:
            copy[key] = mutate(copy[key], rng, replacement)
        return copy
    if isinstance(value, list) and value:
        index = rng.randrange(len(value))
        copy = list(value)
        copy[index] = mutate(copy[index], rng, replacement) if rng.random() < 0.6 else replacement
        return copy
    return replacement


@st.composite
def journals(draw: Any, harness: Harness) -> bytes:
    lines = LINES[harness]
    rng = random.Random(draw(st.integers(0, 2**32)))
    out = [lines[0]]  # keep the header, so the file is still detected as this harness
    for line in lines[1:]:
        roll = rng.random()
        if roll < 0.6:
            out.append(line)
        elif roll < 0.9:
            record = json.loads(line)
            out.append(json.dumps(mutate(record, rng, draw(json_values))).encode())
        elif roll < 0.95:
            out.append(draw(st.binary(max_size=40)).replace(b"\n", b" "))
        else:
            out.append(line[: rng.randrange(1, max(2, len(line)))])
    return b"\n".join(out) + (b"\n" if draw(st.booleans()) else b"")


def check(harness: Harness, data: bytes, tmp: Path) -> None:
    path = tmp / ("session.jsonl" if harness is Harness.MUSE else "journal.jsonl")
    path.write_bytes(data)
    adapter = next(a for a in ADAPTERS if a.harness is harness)
    diagnostics = Diagnostics()
    try:
        groups = adapter.plan([SniffedFile(path, sniff(path))])
        sessions = [s for g in groups for s in adapter.read(g, diagnostics)]
    except AgentProfilerError:
        return  # the package's own error: a clear message, allowed
    unparsed = sum(diagnostics.warning_counts[k] for k in UNPARSED)
    # every line used, skipped, not parsed, not recognised, or rejected for its shape
    assert diagnostics.lines_read == diagnostics.records_used + diagnostics.skipped_total + (
        unparsed + diagnostics.unrecognised_total + diagnostics.records_rejected
    )
    assert diagnostics.records_used >= 0
    for session in sessions:
        assert session.end_ns >= session.start_ns
        for op in (
            *session.responses,
            *session.tool_calls,
            *session.prompts,
            *session.compactions,
            *session.failed_requests,
        ):
            assert op.end_ns >= op.start_ns
        for response in session.responses:
            usage = response.usage
            assert (
                min(
                    usage.prompt_tokens,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage.cache_read_tokens,
                    usage.cache_write_tokens,
                )
                >= 0
            )
        for snapshot in session.snapshots:
            assert all(tokens >= 0 for _, tokens in snapshot.categories)
            assert snapshot.estimated_tokens == sum(t for _, t in snapshot.categories)
            assert all(change.tokens >= 0 for change in snapshot.changes)
    PerfettoWriter().write(sessions, io.BytesIO())


SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)


@pytest.mark.parametrize("harness", list(SOURCES), ids=lambda h: h.value)
@SETTINGS
@given(data=st.data())
def test_mutated_journals_keep_the_invariants(
    harness: Harness, data: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    journal = data.draw(journals(harness))
    check(harness, journal, tmp_path_factory.mktemp(harness.value))


@SETTINGS
@given(lines=st.lists(json_values, min_size=1, max_size=15))
def test_random_records_after_a_real_header(
    lines: list[Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    for harness in SOURCES:
        body = [LINES[harness][0]] + [json.dumps(v).encode() for v in lines]
        check(harness, b"\n".join(body) + b"\n", tmp_path_factory.mktemp(harness.value))
