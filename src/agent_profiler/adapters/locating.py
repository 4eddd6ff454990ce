"""Shared steps of the adapters' `locate`: where a harness's folder is (its environment
variable, else a default under the home folder) and what a JSONL session's first records
say (its project and start time). Each adapter names its own folders and patterns; only
these mechanics are shared, so `discover` has no harness knowledge of its own."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

from agent_profiler.adapters import Located
from agent_profiler.adapters.common import timestamp_ns
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import sniff


def home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def data_home(env: Mapping[str, str]) -> Path:
    """`$XDG_DATA_HOME`, else `~/.local/share`."""
    value = env.get("XDG_DATA_HOME")
    return Path(value) if value else home(env) / ".local" / "share"


def folder(env: Mapping[str, str], variable: str, *default: str) -> Path:
    """The folder named by `variable`, else `~/<default…>`."""
    value = env.get(variable)
    return Path(value) if value else home(env).joinpath(*default)


def head_facts(head: list[object]) -> tuple[str | None, int | None]:
    """Project folder (the first `cwd`, at the top or in a `payload`) and first timestamp
    from a journal's first records."""
    project: str | None = None
    start: int | None = None
    for value in head:
        if not isinstance(value, dict):
            continue
        payload = value.get("payload")
        for source in (value, payload if isinstance(payload, dict) else {}):
            cwd = source.get("cwd")
            if project is None and isinstance(cwd, str):
                project = cwd
        if start is None:
            start = timestamp_ns(value.get("timestamp"))
    return project, start


def jsonl_sessions(
    paths: Iterable[Path],
    facts: Callable[[list[object]], tuple[str | None, int | None]] | None = None,
) -> Iterator[Located]:
    """Each JSONL session file with the facts of its first 20 records (`head_facts`, or
    the harness's own `facts`); a file that cannot be read is left out (discover lists,
    it does not diagnose)."""
    for path in paths:
        if not path.is_file():
            continue  # a named pipe or a device: opening it would wait for a writer
        try:
            head = sniff(path, max_lines=20)
        except (OSError, JournalError):
            continue
        project, start = (facts or head_facts)(head)
        yield Located(path, project, start)
