"""What a path is before it is read (`inputs.py`): what the twelfth session's mutation sample
found no test reading in-process (the pipe tests run the tool in a subprocess, which mutmut's
mutants never reach). The hand-made Claude Code session of tests/data, piped in."""

from __future__ import annotations

import atexit
import errno
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler import inputs
from agent_profiler.cli import app
from samples import CLAUDE_SMALL

runner = CliRunner()


@pytest.fixture
def at_exit(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[list[tuple[Callable[..., Any], tuple[Any, ...]]]]:
    """A process that has not copied a pipe yet (its copies' folder not made), and what it
    asks to run when it ends, recorded instead of registered (the folder removed after)."""
    registered: list[tuple[Callable[..., Any], tuple[Any, ...]]] = []
    monkeypatch.setattr(inputs, "_copies_folder", None)
    monkeypatch.setattr(atexit, "register", lambda f, *args: registered.append((f, args)))
    yield registered
    for _, args in registered:
        if args and isinstance(args[0], Path):
            shutil.rmtree(args[0], ignore_errors=True)


def test_a_piped_journals_warnings_name_it_as_given(at_exit: list[Any]) -> None:
    """The first journal a process reads from standard input (a line of it not JSON): the
    warning names it `<stdin>`, not its temporary copy, which lives in a folder of its own
    under the temporary folder, `agent-profiler-*`, the name the warnings are told copies
    by (inputs.copy_of__mutmut_1/2/5/6 put the copy elsewhere, and the warning named it;
    __mutmut_3 and __mutmut_11 failed)."""
    piped = CLAUDE_SMALL.read_bytes() + b"{bad\n"
    result = runner.invoke(app, ["summary", "-", "--json"], input=piped)
    assert result.exit_code == 0, result.stderr
    lines = len(CLAUDE_SMALL.read_bytes().splitlines()) + 1
    assert f"  <stdin>:{lines}: not JSON (" in result.stderr
    assert tempfile.gettempdir() not in result.stderr
    ((_, (folder, *_)),) = at_exit
    assert folder.parent == Path(tempfile.gettempdir())
    assert folder.name.startswith("agent-profiler-")
    (copy,) = folder.glob("*/stdin")
    assert copy.read_bytes() == piped


def test_the_copies_folder_goes_when_its_process_ends_and_only_then(
    at_exit: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the process asks to run at its end removes the folder of the pipes' copies, its
    copies in it; a forked child ending (another pid) leaves it to its parent; a folder
    already gone is no error (inputs.copy_of__mutmut_10/12/13/14 registered it without its
    folder, its pid or its rmtree; _remove_copies__mutmut_3/4/6 raised on a folder gone or
    named none)."""
    assert runner.invoke(app, ["summary", "-"], input=CLAUDE_SMALL.read_bytes()).exit_code == 0
    ((function, args),) = at_exit
    folder = args[0]
    assert list(folder.glob("*/stdin"))
    parent = os.getpid()
    monkeypatch.setattr(os, "getpid", lambda: parent + 1)
    function(*args)
    assert folder.is_dir()
    monkeypatch.setattr(os, "getpid", lambda: parent)
    function(*args)
    assert not folder.exists()
    function(*args)  # removed already (by the system's cleaning): nothing to say


def test_a_socket_named_as_a_journal_cannot_be_read_and_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Unix socket given as a journal is a stream to copy, and opening it fails: one
    `error:` line names it as given, with the system's words (inputs.copy_of__mutmut_48
    said `None`, __mutmut_49 failed, __mutmut_51 named it `None`)."""
    monkeypatch.chdir(tmp_path)  # a short relative name: a socket's path has 108 bytes
    with socket.socket(socket.AF_UNIX) as listening:
        listening.bind("s.sock")
        result = runner.invoke(app, ["summary", "s.sock"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == "error: s.sock: cannot read: No such device or address"


def test_the_systems_words_for_a_folder_that_cannot_be_opened() -> None:
    """As a walk says of a folder it could not open (`d/closed: cannot open: permission
    denied`, tests/hostile/test_paths.py, in a subprocess): the system's words, their first
    letter lower case (inputs.os_reason__mutmut_1 failed, __mutmut_5 kept the capital,
    __mutmut_7 lost the second letter)."""
    assert inputs.os_reason(PermissionError(errno.EACCES, "Permission denied")) == (
        "permission denied"
    )
    assert inputs.os_reason(OSError(errno.ENAMETOOLONG, "File name too long")) == (
        "file name too long"
    )


def test_a_folder_too_deep_to_look_for_a_dataset_in_is_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder named by a path of 4,080 characters: its `current/manifest.json` is past
    the system's 4,096 (the look for a dataset fails, "file name too long"), its journal
    is not. It is walked, and its session read, not refused as a dataset `collect` wrote
    (inputs.is_dataset__mutmut_7 took a folder it could not look into for one)."""
    monkeypatch.chdir(tmp_path)  # a relative name: the length is the name's, wherever tmp is
    deep = "/".join(["d" * 199] * 20)
    deep += "/" + "e" * (4080 - len(deep) - 1)
    os.makedirs(deep)
    shutil.copy(CLAUDE_SMALL, Path(deep) / "x.jsonl")
    with pytest.raises(OSError) as caught:
        (Path(deep) / "current" / "manifest.json").is_file()
    assert caught.value.errno == errno.ENAMETOOLONG
    result = runner.invoke(app, ["summary", "--json", deep])
    assert result.exit_code == 0, result.stderr
    assert '"calls": 6' in result.stdout
