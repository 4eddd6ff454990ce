"""Start-up stays small (issue 17): an export of one harness's journal imports only that
harness's adapter, and a plain export does not import Typer, the report or the server.
Nor what only a rare case needs (issue 32: start-up within 4x of `import orjson`): the
standard modules below, a runtime-frozen dataclass (its generated methods are twice the
cost of records.frozen's), the CJK pattern of the estimate's classes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from shared_paths import TESTS

pytestmark = pytest.mark.slow  # a fresh interpreter per test: `make check` leaves it out

DATA = TESTS / "data" / "journals"
PROBE = """
import sys
from agent_profiler.entry import main
sys.argv = ["agent-profiler", "export", sys.argv[1], "-o", sys.argv[2]]
try:
    main()
except SystemExit as end:
    assert not end.code, end.code
loaded = sorted(m for m in sys.modules if m.startswith(("agent_profiler", "typer", "http")))
print("\\n".join(loaded))
import dataclasses
from agent_profiler import estimate
for name in list(sys.modules):
    if name.startswith("agent_profiler"):
        for value in list(vars(sys.modules[name]).values()):
            if isinstance(value, type) and dataclasses.is_dataclass(value):
                if value.__dataclass_params__.frozen and value.__module__ == name:
                    print("frozen:" + name + "." + value.__qualname__)
for name in ("hashlib", "tempfile", "shutil", "decimal", "base64", "pickle"):
    if name in sys.modules:
        print("std:" + name)
print("cjk:" + str(estimate._cjk.cache_info().currsize))
"""


def loaded_by_export(journal: Path, tmp_path: Path) -> set[str]:
    out = tmp_path / "t.pftrace"
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(journal), str(out)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    assert out.stat().st_size > 0
    return set(run.stdout.split())


def test_a_claude_code_export_imports_only_its_adapter(tmp_path: Path) -> None:
    journal = DATA / "claude-code" / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
    loaded = loaded_by_export(journal, tmp_path)
    adapters = {m.rsplit(".", 1)[-1] for m in loaded if m.startswith("agent_profiler.adapters.")}
    assert {"claude_code", "claude_session"} <= adapters
    assert not adapters & {"codex", "pi", "muse", "gemini_cli", "opencode", "muse_journal"}
    assert not {"typer", "agent_profiler.report", "agent_profiler.serve"} & loaded
    assert not any(m.startswith("http") for m in loaded)


def test_a_plain_export_leaves_out_what_only_rare_cases_need(tmp_path: Path) -> None:
    journal = DATA / "claude-code" / "entire-51-0c10bf7b7a-0_v2.0.76_parallel-task-subagents.jsonl"
    loaded = loaded_by_export(journal, tmp_path)
    # No runtime-frozen class: the attribution log's Observation, the last, is frozen to
    # the type checker only (records.frozen), as the model's classes are.
    assert not {m for m in loaded if m.startswith("frozen:")}
    # hashlib loads OpenSSL (digest.py); a pipe's copy, /context's decimals, an image's
    # base64, a worker's failure sent back (pickle) are rare.
    assert not {m for m in loaded if m.startswith("std:")}
    assert "cjk:0" in loaded  # compiled only when the estimate classifies text


def test_a_codex_export_does_not_import_the_others_it_never_asks(tmp_path: Path) -> None:
    # Detection asks the adapters in registry order: Claude Code before Codex, none after.
    journal = (
        DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
    )
    adapters = {
        m.rsplit(".", 1)[-1]
        for m in loaded_by_export(journal, tmp_path)
        if m.startswith("agent_profiler.adapters.")
    }
    assert "codex" in adapters
    assert not adapters & {"pi", "muse", "gemini_cli", "opencode"}
