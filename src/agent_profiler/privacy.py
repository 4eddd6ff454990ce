"""What a default (content-free) output may say about where a session ran.

A default trace, summary or report is promised to be safe to attach to a bug report: no
absolute path, home directory, user name or cwd. Journals are full of them (every Claude
Code record carries `cwd`; `/context` lists memory files by absolute path), so every path
that reaches the model goes through `private_path`, the session's project through
`project_name`, and a model id (a local server's may be a file path) through `model_name`.
Pure string work: a journal written on Windows is read on Linux too.
"""

from __future__ import annotations

import re

# A home directory: POSIX (`/home`, FreeBSD's `/usr/home`, Solaris' `/export/home`,
# Fedora Atomic's `/var/home`), macOS (also by its firmlink `/System/Volumes/Data/Users`),
# root's (`/root`, macOS `/var/root`), and Windows (either slash; the `\\?\` long-path
# form; WSL `/mnt/c/Users`, Cygwin `/cygdrive/c/Users`, MSYS and Git Bash `/c/Users`).
# Separators may be doubled (`/home//alice` is the same folder).
_HOME = (
    r"(?:/+(?:System/+Volumes/+Data/+)?(?:(?:usr|export|var)/+)?home/+[^/]+"
    r"|/+(?:System/+Volumes/+Data/+)?Users/+[^/]+"
    r"|/+(?:private/+)?(?:var/+)?root"
    r"|/+(?:mnt/+|cygdrive/+)?[A-Za-z]/+Users/+[^/]+"
    r"|(?:[\\/]{2}[?.][\\/]+)?[A-Za-z]:[\\/]+Users[\\/]+[^\\/]+)"
    r"(?=[\\/]|$)"
)
_HOME_DIR = re.compile("^" + _HOME, re.IGNORECASE)
# A home directory inside a longer text (a model id `llama.cpp:/home/alice/m.gguf`): after
# the start or a character that cannot end a name.
_HOME_INSIDE = re.compile(r"(?<![\w.~-])" + _HOME, re.IGNORECASE)
# `~/.claude/projects/<sanitized cwd>/…`: the folder name spells the cwd, user name included.
_PROJECT_FOLDER = re.compile(r"([\\/]\.claude[\\/]projects[\\/])([^\\/]+)")
# The same folder named alone or in a relative path (`-home-alice-src-app`): Claude Code
# writes the cwd with every character but letters and digits as `-`, so one under a home
# folder starts with the home's spelling (each home above, `C:\Users` as `C--Users`).
_SANITIZED_HOME = re.compile(
    r"^-+(?:System-+Volumes-+Data-+)?(?:(?:usr|export|var)-+)?home-+[^-]"
    r"|^-+(?:System-+Volumes-+Data-+)?Users-+[^-]"
    r"|^-+(?:mnt-+|cygdrive-+)?[A-Za-z]-+Users-+[^-]"
    r"|^-*[A-Za-z]--+Users-+[^-]"
    r"|^-+(?:private-+)?(?:var-+)?root(?:-|$)",
    re.IGNORECASE,
)
# Gemini CLI's `~/.gemini/tmp/<project>/chats/…`: the folder is the project's path hash
# (≤0.28, `projectHash`) or its slug, which is the user name for a project at home.
_CHATS_PROJECT = re.compile(r"(^|[\\/])[^\\/]+(?=[\\/]chats[\\/])")


def private_path(path: str, cwd: str | None = None) -> str:
    """A path as a default (content-free) trace may show it: relative to the session's
    cwd (`CLAUDE.md`, `../../CLAUDE.md` for an ancestor's), else `~/…` under a home
    directory, else its basename when absolute. A default trace is promised to be safe to
    attach, and absolute paths carry user names and project layouts (`/context` lists
    every memory file by its absolute path). A Gemini CLI project folder (`<project>/chats/`)
    is shown as `…` in every form."""
    return _CHATS_PROJECT.sub(r"\1…", _safe_segments(_shortened(path, cwd)))


def input_name(name: str) -> str:
    """A file or folder name as a default output may show it (an input's name, a path's
    segment): itself, unless it is a Claude Code project folder under a home folder
    (`-home-alice-src-app`, what `export ~/.claude/projects/<project>/` is given), which
    spells the user name: then what follows this machine's home in it (`src-app`), or
    `…` when the home is another's."""
    if not name.startswith("-") and not re.match(r"[A-Za-z]--", name):
        return name
    from pathlib import Path

    home = re.sub(r"[^A-Za-z0-9]", "-", str(Path.home()))
    if name.lower() == home.lower():
        return "…"
    if len(home) > 1 and name.lower().startswith(home.lower() + "-"):
        return name[len(home) + 1 :] or "…"
    return "…" if _SANITIZED_HOME.match(name) else name


def _safe_segments(path: str) -> str:
    """`path` with each segment that is a Claude Code project folder under a home folder
    shown by `input_name` (a path relative to the current folder keeps them otherwise)."""
    parts = re.split(r"([\\/]+)", path)
    safe = [part if index % 2 else input_name(part) for index, part in enumerate(parts)]
    return "".join(safe)


def _home_of(path: str) -> str | None:
    """The home folder `path` starts with: one of the usual places, or this machine's own
    home wherever it is (`HOME=/srv/people/alice`: not under /home, and just as
    personal)."""
    found = _HOME_DIR.match(path)
    if found:
        return found.group(0)
    from pathlib import Path

    mine = str(Path.home()).rstrip("/\\")
    if len(mine) > 1 and (path == mine or path.startswith((mine + "/", mine + "\\"))):
        return mine
    return None


def _shortened(path: str, cwd: str | None) -> str:
    parts = _SEPARATORS.split(path)
    home = _home_of(path)
    home_depth = len(_SEPARATORS.split(home)) if home else 1
    if cwd and _is_absolute(path):
        base = _SEPARATORS.split(cwd.rstrip("/\\"))
        common = 0
        for mine, theirs in zip(parts, base, strict=False):
            if mine.lower() != theirs.lower():
                break
            common += 1
        # Only within the project (deeper than the home folder or the drive): `../..` up
        # to /home would spell the layout out again. The cwd itself (also written with a
        # separator at its end) is no path below it: shown below as any folder.
        if common > home_depth and any(parts[common:]):
            return "/".join([".."] * (len(base) - common) + parts[common:])
    if home:
        rest = _PROJECT_FOLDER.sub(r"\1…", path[len(home) :])
        return "~" + rest.replace("\\", "/")
    if _is_absolute(path):
        # The last name, also of a folder written with a separator at its end (`/srv/x/`):
        # only a bare root (`/`, `D:\\`) has none, and shows nothing about anyone.
        return next((part for part in reversed(parts) if part), path)
    return path


_SEPARATORS = re.compile(r"[\\/]+")


def _is_absolute(path: str) -> bool:
    return path.startswith(("/", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", path))


def project_name(cwd: str | None) -> str | None:
    """The name a session's project is shown by: the cwd's last folder. When the cwd is a
    Claude Code project folder (`~/.claude/projects/-home-<user>-src-app`), what follows
    the user name in it (`src-app`), since the folder name spells the whole cwd."""
    if not cwd:
        return cwd
    home = _HOME_DIR.match(cwd)
    folder = _PROJECT_FOLDER.search(cwd[home.end() :]) if home else None
    if home and folder:
        user = _SEPARATORS.split(home.group(0))[-1]
        tail = re.split(f"-{re.escape(user)}-", folder.group(2), flags=re.IGNORECASE)[-1]
        return tail if tail and tail.lower() != folder.group(2).lower() else "…"
    name = private_path(cwd).rstrip("/\\")
    return _SEPARATORS.split(name)[-1] or name


def model_name(name: str) -> str:
    """A model id as every output shows it. Local model servers name a model by its file
    (llama.cpp's server: the `.gguf` path unless given `--alias`), and that path holds the
    user name: an id that is an absolute path is shown as a path outside the session's cwd
    is (`~/models/x.gguf` under a home folder, else its file name `x.gguf`), one under `~`
    without a user after it, and a home folder inside a longer id
    (`llama.cpp:/home/alice/x.gguf`) as `~`. Every other id (`claude-opus-4-5`,
    `openai/gpt-4o`) as it is. Idempotent: the model applies it to what it is given."""
    if "/" not in name and "\\" not in name:
        return name  # the usual id: no path in it
    if name.startswith("~"):
        return re.sub(r"^~[^\\/]*", "~", name)
    if _is_absolute(name):
        return private_path(name)
    from pathlib import Path

    shown = _HOME_INSIDE.sub("~", name)
    mine = str(Path.home()).rstrip("/\\")
    return shown.replace(mine, "~") if len(mine) > 1 and mine in shown else shown
