"""The one pass (agent_profiler.stream) against the model path on every Codex rollout of
tests/data and the shared corpus, each exported on its own, as tests/stream/
test_pi_stream.py does for Pi: both traces decoded (traceview.load_trace, with Perfetto's
importer rules) hold the same tracks (by name path and rank), slices with their args,
counter samples and flows (by their ends), and the export says the same (its warnings
too); the stream's trace meets TRACE_CONTRACT §8 (export_trace checks it). A rollout the
pass does not handle yet is listed in NOT_HANDLED with the reason, and its export under
the switch is the model path's, byte for byte."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_pi_stream import assert_same_export, export_both

from realtp import SHARED
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "codex"
CORPUS = SHARED / "corpus" / "codex"
# The rollouts the pass does not handle yet (docs/onepass.md, "Codex"), and why.
NOT_HANDLED: dict[str, str] = {}


def _journals() -> list[Any]:
    found = [pytest.param(p, id=f"data/{p.name}") for p in sorted(DATA.glob("*.jsonl*"))]
    if CORPUS.is_dir():
        found += [
            pytest.param(p, id=f"corpus/{p.parent.name}/{p.name}")
            for p in sorted(CORPUS.glob("*/*.jsonl*"))
        ]
    else:
        found.append(
            pytest.param(
                None, marks=pytest.mark.skip(reason=f"shared corpus not beside ({CORPUS})")
            )
        )
    return found


@pytest.mark.parametrize("path", _journals())
def test_stream_writes_what_the_model_path_writes(
    path: Path, export_trace: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected, got, handled = export_both(path, export_trace, monkeypatch)
    if path.name in NOT_HANDLED:
        assert not any(handled), NOT_HANDLED[path.name]
        assert got.path.read_bytes() == expected.path.read_bytes()
        return
    assert handled == [True]
    assert_same_export(expected, got)
