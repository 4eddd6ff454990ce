"""An output that cannot be written, as one line that names the right place: its path as
an input's path is shown (`diagnostics.shown_path`: relative, or `~/…`, never a home
folder's user name), and the temporary folder, not stdout or the output, when a file of
ours there is what failed (a full /tmp: a report's sections, the packets of a trace to
stdout, `open`'s trace), with what to do about it. outputs.py and collect say their
failures through these."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from agent_profiler.console import printable
from agent_profiler.errors import OutputError


def shown(path: Path) -> str:
    """An output's path as an error line shows it: as a journal's is shown
    (`diagnostics.shown_path`: as given when relative, else below the current folder or
    `~/…`, never a home folder's user name), a device by its name (`/dev/full`), and a file
    in a folder of ours in the temporary folder (`open`'s trace) as that folder."""
    text = str(path)
    if text.startswith("/dev/"):
        return printable(text)
    if in_our_temporary_folder(path):
        return f"the temporary folder ({temporary_folder()})"
    from agent_profiler.diagnostics import shown_path

    return shown_path(text)


def in_our_temporary_folder(path: Path) -> bool:
    from agent_profiler.diagnostics import is_folder_of_ours

    return is_folder_of_ours(os.path.dirname(os.path.abspath(path)))


def temporary_folder() -> str:
    """The temporary folder (TMPDIR, else /tmp …) as a line names it: below the current
    folder or `~/…` as a journal's path is shown, else as it is (`/tmp`, `/var/tmp`), unless
    a folder of its path is the user's name (then as `diagnostics.shown_path` shows it)."""
    from agent_profiler.diagnostics import shown_path

    folder = temporary_dir()
    if folder is None:
        return "none can be written"
    home = os.path.expanduser("~")
    below = [f.rstrip(os.sep) + os.sep for f in (os.getcwd(), home) if len(f) > 1]
    names = {os.path.basename(home.rstrip(os.sep))}
    names |= {os.environ.get(name) or "" for name in ("USER", "LOGNAME")}
    if any(folder.startswith(f) for f in below) or (names - {""}) & set(Path(folder).parts):
        return shown_path(folder)
    return printable(folder)


def _reason(error: OSError) -> str:
    return error.strerror or str(error)


def _what_to_do(error: OSError) -> str:
    full = error.errno in (errno.ENOSPC, errno.EDQUOT)
    return f" (set TMPDIR to a folder {'with room' if full else 'that can be written'})"


def cannot_write(path: Path, error: OSError, *, here: bool = False) -> OutputError:
    """The one line of an output that cannot be written (`here`: not even begun, `cannot
    write here (…)`): its path `shown`; in the temporary folder (`open`'s trace), what to do."""
    reason = f"cannot write here ({_reason(error)})" if here else _reason(error)
    hint = _what_to_do(error) if in_our_temporary_folder(path) else ""
    return OutputError(f"{shown(path)}: {reason}{hint}")


def temporary_failed(error: OSError) -> OutputError:
    """A file of ours in the temporary folder that failed (a full /tmp: the packets of a
    trace to stdout or a pipe, a report's sections): that folder named, not the output."""
    if temporary_dir() is None:
        return OutputError(NO_TEMPORARY_FOLDER)
    said = f"the temporary folder ({temporary_folder()}): {_reason(error)}"
    return OutputError(said + _what_to_do(error))


# Where `tempfile` finds no folder it can write a file in (`tempfile.gettempdir` raises).
NO_TEMPORARY_FOLDER = (
    "no temporary folder can be written (TMPDIR, TEMP, TMP, /tmp, /var/tmp, /usr/tmp "
    "and the current folder were tried): set TMPDIR to a folder that can be written"
)


def temporary_dir() -> str | None:
    """`tempfile.gettempdir()`, or None where no folder is usable (it raises
    FileNotFoundError then, and again at every call: the folder is not remembered)."""
    import tempfile

    try:
        return tempfile.gettempdir()
    except OSError:
        return None
