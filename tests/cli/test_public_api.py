"""The public API, guarded (as httpx's tests/test_exported_members.py does): the package's
`__all__` is exactly its public names, each importable; and the names the CLI and the
writers import from the package's modules stay where they are. A change here is an API
change: make it on purpose, and say so in the changelog."""

from __future__ import annotations

import types

import pytest

import agent_profiler
import agent_profiler.adapters as adapters
import agent_profiler.errors as errors
import agent_profiler.writers as writers

PUBLIC = [
    "AgentProfilerError",
    "ChromeJsonWriter",
    "DamagedJournalError",
    "Diagnostics",
    "Harness",
    "JournalError",
    "LoadResult",
    "OutputError",
    "PerfettoWriter",
    "ServeError",
    "Session",
    "UsageError",
    "__version__",
    "load",
    "named",
    "use_estimator",
    "writer_class",
]


def test_all_is_the_public_surface() -> None:
    # GIVEN every public name, each asked for (they are imported on first use, PEP 562)
    for name in agent_profiler.__all__:
        assert getattr(agent_profiler, name) is not None
    # WHEN the package's namespace is read, without its submodules
    members = [
        name
        for name, value in vars(agent_profiler).items()
        if (not name.startswith("_") or name == "__version__")
        and not isinstance(value, types.ModuleType)
    ]
    # THEN `__all__` lists exactly those names, and no other; dir() shows them; anything
    # else is an AttributeError, as on any module
    assert sorted(agent_profiler.__all__) == sorted(members) == sorted(PUBLIC)
    assert set(PUBLIC) <= set(dir(agent_profiler))
    with pytest.raises(AttributeError):
        _ = agent_profiler.not_a_public_name  # type: ignore[attr-defined]


def test_the_package_imports_none_of_its_modules_until_asked() -> None:
    """Initialising the package (which every submodule import does) costs only the version:
    a command that needs few of the public names does not import them all."""
    import subprocess
    import sys

    probe = (
        "import sys, agent_profiler\n"
        "print(sorted(m for m in sys.modules if m.startswith('agent_profiler')))\n"
        "agent_profiler.load\n"
        "print('agent_profiler.loader' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    first, second = run.stdout.splitlines()
    assert first == "['agent_profiler', 'agent_profiler.lazy', 'agent_profiler.version']"
    assert second == "True"


def test_every_error_is_under_the_root() -> None:
    # The CLI turns the root into one line on stderr: every error it may meet is one.
    from agent_profiler.adapters.muse_journal import ApprovalReviewLogError
    from agent_profiler.serve import ServeError

    drawn = [
        errors.UsageError,
        errors.JournalError,
        errors.DamagedJournalError,
        errors.OutputError,
        errors.ServeError,
        ApprovalReviewLogError,
    ]
    for error in drawn:
        assert issubclass(error, agent_profiler.AgentProfilerError), error
        assert error.__name__ in (errors.__doc__ or ""), f"{error.__name__} not in the tree"
    assert ServeError is errors.ServeError  # one class, re-exported where it is raised
    assert issubclass(errors.DamagedJournalError, OSError)


def test_the_names_the_cli_and_the_writers_import() -> None:
    # cli.py, loader.py and the writers import these; moving one breaks them.
    assert set(writers.__all__) == {
        "WRITERS",
        "ChromeJsonWriter",
        "ContentMode",
        "PerfettoWriter",
        "TraceFacts",
        "Writer",
        "writer_class",
    }
    for name in ("ADAPTERS", "Adapter", "JournalGroup", "SniffedFile", "Located", "adapter_for"):
        assert hasattr(adapters, name), name
    # The registry is one entry per harness, each with the three calls every adapter has.
    assert [a.harness for a in adapters.ADAPTERS] == list(agent_profiler.Harness)
    for adapter in adapters.ADAPTERS:
        assert callable(adapter.detect) and callable(adapter.plan) and callable(adapter.read)
