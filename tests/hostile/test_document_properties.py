"""Property-based tests for the harnesses whose sessions are JSON documents, not lines (a
Gemini CLI ≤0.38 recording, an `opencode export`): values anywhere in a real document are
replaced by random JSON, and the adapter must still end in sessions or the package's own
error, with spans that end after they start and a writer that accepts them."""

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
from agent_profiler.model import Harness
from agent_profiler.writers import PerfettoWriter

pytestmark = pytest.mark.slow  # property tests on generated documents: not in `make check`

DATA = Path(__file__).resolve().parents[1] / "data" / "journals"
DOCUMENTS = {
    Harness.GEMINI_CLI: DATA / "gemini-cli" / "entire-ab-2b9748b105-0_session.json",
    Harness.OPENCODE: DATA / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json",
}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


def replace_somewhere(value: Any, rng: random.Random, new: Any, depth: int = 0) -> Any:
    """The document with one value (at a random depth) replaced by `new`."""
    if isinstance(value, dict) and value and (depth < 2 or rng.random() < 0.7):
        key = rng.choice(sorted(value))
        return {**value, key: replace_somewhere(value[key], rng, new, depth + 1)}
    if isinstance(value, list) and value and (depth < 2 or rng.random() < 0.7):
        index = rng.randrange(len(value))
        return [
            replace_somewhere(v, rng, new, depth + 1) if i == index else v
            for i, v in enumerate(value)
        ]
    return new


@pytest.mark.parametrize("harness", list(DOCUMENTS), ids=lambda h: h.value)
@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_mutated_documents_keep_the_invariants(
    harness: Harness, data: Any, tmp_path_factory: pytest.TempPathFactory
) -> None:
    document = json.loads(DOCUMENTS[harness].read_text())
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    for _ in range(data.draw(st.integers(1, 6))):
        document = replace_somewhere(document, rng, data.draw(json_values))
    path = tmp_path_factory.mktemp(harness.value) / "session-x.json"
    path.write_text(json.dumps(document, indent=2))
    adapter = next(a for a in ADAPTERS if a.harness is harness)
    try:
        groups = adapter.plan([SniffedFile(path, [])])
        sessions = [s for g in groups for s in adapter.read(g, Diagnostics())]
    except AgentProfilerError:
        return
    for session in sessions:
        assert session.end_ns >= session.start_ns
        for op in (*session.responses, *session.tool_calls, *session.prompts):
            assert op.end_ns >= op.start_ns
        for snapshot in session.snapshots:
            assert snapshot.estimated_tokens == sum(t for _, t in snapshot.categories)
    PerfettoWriter().write(sessions, io.BytesIO())
