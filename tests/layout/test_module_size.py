"""Issue 32's house rule: no module of the package over 600 lines (a module that grows
past it is split where its parts are separate, as layout/ and the adapters were)."""

from __future__ import annotations

from pathlib import Path

import agent_profiler

MAX_LINES = 600
PACKAGE = Path(agent_profiler.__file__).parent


def test_no_module_is_over_600_lines() -> None:
    modules = sorted(PACKAGE.rglob("*.py"))
    assert len(modules) > 50  # the package itself, not an empty folder
    sizes = {str(m.relative_to(PACKAGE)): len(m.read_text().splitlines()) for m in modules}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
