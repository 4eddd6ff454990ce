"""What a tool call acted on, safe for a default output (issue 29): the file it read or
wrote, relative to the session's cwd (its name alone when outside it), the program a
shell command ran, or the host of a URL it fetched. Never an argument's body, an absolute
path, a home directory or a user name.

Two steps, because a tool call is read before its session's cwd is known: `raw_target`
(drafts.ToolArguments.of) keeps the kind and the value (a path as written; a program
name or a host, already safe), and `safe_target` (model.Session, which has the cwd)
turns a path into its shown form. The model never keeps a raw path past its session.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # model imports this module
    from agent_profiler.model import Session

# Argument keys naming what a call acts on, in the order they are looked for (the
# harnesses' own names: Claude Code `file_path`, `notebook_path`; Gemini CLI
# `absolute_path`, `dir_path`; OpenCode `filePath`; Pi and Grep/Glob `path`; …).
PATH_KEYS = (
    "file_path",
    "filePath",
    "notebook_path",
    "absolute_path",
    "target_file",
    "path",
    "file",
    "filename",
    "dir_path",
    "directory",
)
_PATH_KEY_SET = frozenset(PATH_KEYS)
COMMAND_KEYS = ("command", "cmd")
URL_KEYS = ("url", "uri")
# Shells whose script is the program's argument (`bash -lc "git status"`, Codex's argv).
_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "fish", "pwsh", "powershell", "cmd", "cmd.exe"})
_SEPARATORS = re.compile(r"[\\/]+")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "command"})
# A wrapper's options whose value is the next word (`sudo -u alice`: a user name, never
# the program).
_VALUED = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-R", "-r", "-T", "-t", "-U"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir", "--split-string"}),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "exec": frozenset({"-a"}),
}
_NO_VALUED: frozenset[str] = frozenset()
# `shlex.split(command, posix=True)` in regular expressions (shlex reads a character at a
# time through several method calls: a fifth of reading a Pi session). A word is pieces
# glued together: plain characters, `\x` (x itself), '…' (as written) and "…" (where only
# `\"` and `\\` are escapes); words are split on shlex's whitespace only. A command that
# is not such words throughout (an unclosed quote, a trailing backslash) is one shlex
# refuses too. Possessive quantifiers, so a refusal is found in linear time.
_PIECE = r"""[^ \t\r\n'"\\]++|\\.|'[^']*+'|"(?:[^"\\]++|\\.)*+" """.rstrip()
_WORD = re.compile(rf"(?:{_PIECE})++", re.S)
_WORDS = re.compile(rf"[ \t\r\n]*+(?:(?:{_PIECE})++[ \t\r\n]*+)*+", re.S)
_PIECES = re.compile(r"""([^'"\\]++)|\\(.)|'([^']*+)'|"((?:[^"\\]++|\\.)*+)" """.rstrip(), re.S)
_QUOTED_ESCAPE = re.compile(r'\\(["\\])')
_PROGRAM = re.compile(r"[\w.+@-]{1,64}")
# A command's first word when it is plain: no quote, escape or whitespace of any kind in
# it, after whitespace shlex splits on and before such whitespace or the end. shlex's
# first word and str.split()'s (a command shlex refuses) are then both this word.
_FIRST_PLAIN = re.compile(r"[ \t\r\n]*+([^\s'\"\\]++)(?:[ \t\r\n]|\Z)")

PATH, PROGRAM, HOST = "path", "program", "host"


def raw_target(arguments: object) -> str:
    """`<kind>:<value>` of what a call's arguments act on ("" when none says): a path as
    written (made safe by safe_target), a shell command's program name, a URL's host."""
    if type(arguments) is not dict and (
        # (a parsed dict first, then None and a text, an input not decoded: asking the
        # Mapping ABC costs more than the rest, and most for None)
        arguments is None or type(arguments) is str or not isinstance(arguments, Mapping)
    ):
        return ""
    # (a call names one of the keys at most, or none: its keys are asked first, in C)
    if not _PATH_KEY_SET.isdisjoint(arguments):
        for key in PATH_KEYS:
            value = arguments.get(key)
            if isinstance(value, str) and value.strip():
                return f"{PATH}:{value.strip()}"
    for key in COMMAND_KEYS:
        program = program_name(arguments.get(key))
        if program:
            return f"{PROGRAM}:{program}"
    for key in URL_KEYS:
        value = arguments.get(key)
        host = _host(value) if isinstance(value, str) else None
        if host:
            return f"{HOST}:{host}"
    return ""


def _host(url: str) -> str | None:
    """A URL's host, or None: none, or a URL `urlsplit` refuses (`http://[oops/`, an
    unclosed IPv6 bracket; a port that is no number), which names no host it can tell."""
    try:
        return urllib.parse.urlsplit(url).hostname
    except ValueError:
        return None


def program_name(command: object) -> str:
    """The program a shell command runs first, by its name alone (`/usr/bin/git` → `git`):
    environment assignments and wrappers (`sudo`, `env`) skipped, a shell's `-c` script
    looked into. "" when there is none."""
    if isinstance(command, list):
        words = [w for w in command if isinstance(w, str)]
        if len(words) >= 3 and _name(words[0]) in _SHELLS and words[1].startswith(("-", "/")):
            return program_name(words[2])
        return _first_program(words)
    if isinstance(command, str):
        first = _FIRST_PLAIN.match(command)
        if first is not None:
            # Its first word is plain: the same word whichever way the rest is split
            # (most commands: `cd`, `grep`), and the rest is not read when it is the program.
            word = first.group(1)
            if not word.startswith("-") and not ("=" in word and _ASSIGNMENT.match(word)):
                name = _name(word)
                if name not in _WRAPPERS:
                    return name if _PROGRAM.fullmatch(name) else ""
        if "'" not in command and '"' not in command and "\\" not in command:
            # Without quotes and escapes shlex accepts any command: the check of the whole
            # command (a third of the cost of a call's target) is left out.
            return _first_program(_shell_words(command))
        # Unbalanced quotes (shlex refuses them): plain words are enough for the first one.
        accepted = _WORDS.fullmatch(command) is not None
        return _first_program(_shell_words(command) if accepted else command.split())
    return ""


def shell_words(command: str) -> list[str]:
    """`shlex.split(command, comments=False, posix=True)` of a command that shlex accepts
    (`_WORDS.fullmatch(command)`): the same words, without reading it a character at a
    time."""
    return list(_shell_words(command))


def _shell_words(command: str) -> Iterator[str]:
    """shell_words one at a time: the first program is most often the first word, and a
    heredoc or a long script need not be unquoted past it."""
    for word in _WORD.finditer(command):
        yield _unquoted(word.group())


def _unquoted(word: str) -> str:
    if "\\" not in word and "'" not in word and '"' not in word:
        return word
    parts = []
    for plain, escaped, single, double in _PIECES.findall(word):
        if double:
            parts.append(_QUOTED_ESCAPE.sub(r"\1", double) if "\\" in double else double)
        else:
            parts.append(plain or escaped or single)
    return "".join(parts)


def _first_program(words: Iterable[str]) -> str:
    valued = _NO_VALUED  # the options of the wrapper read last that take a value
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word.startswith("-"):
            skip = word in valued
            continue
        if "=" in word and _ASSIGNMENT.match(word):
            continue
        name = _name(word)
        if name in _WRAPPERS:
            valued = _VALUED.get(name, _NO_VALUED)
            continue
        # A name, not a fragment of shell syntax or text (`(`, `{`, `"…`).
        return name if _PROGRAM.fullmatch(name) else ""
    return ""


def _name(word: str) -> str:
    if "/" not in word and "\\" not in word:
        return word  # (most words: no separator to split on)
    return next((part for part in reversed(_SEPARATORS.split(word)) if part), "")


# Memoised: a Session makes every `path:` target safe when it is made and again when it is
# replaced (a long Claude Code session's reads and edits name a few hundred files thousands
# of times: 4.6% of a 100 MB export's instructions). Bounded, so a folder of sessions does
# not keep every target it met.
@functools.lru_cache(maxsize=4096)
def safe_target(raw: str, cwd: str | None) -> str:
    """A raw target's shown form: a path relative to `cwd` when inside it, else its file
    name; a relative path with no way up (`..`) or home (`~`) as written; a program or a
    host as it is. Idempotent: a shown form is its own shown form."""
    kind, _, value = raw.partition(":")
    if kind != PATH:
        return raw if kind in (PROGRAM, HOST) else ""
    parts = [p for p in _SEPARATORS.split(value) if p not in ("", ".")]
    absolute = value.startswith(("/", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", value))
    if absolute and cwd and _is_path(cwd):
        base = [p for p in _SEPARATORS.split(cwd) if p not in ("", ".")]
        if [p.lower() for p in parts[: len(base)]] == [p.lower() for p in base]:
            inside = _unnamed(parts[len(base) :], cwd)
            return f"{PATH}:{'/'.join(inside) or '.'}"
    if absolute or value.startswith("~") or ".." in parts:
        return f"{PATH}:{parts[-1] if parts else '.'}"
    return f"{PATH}:{'/'.join(parts) or '.'}"


# Folders whose next name spells the user: Gemini CLI's project slug (the user's name for a
# project at home) and Claude Code's project folder (the cwd, home included).
_NAMING_FOLDERS = ((".gemini", "tmp"), (".claude", "projects"))
_HOME_USER = re.compile(
    r"^(?:[\\/]home[\\/]|[\\/]Users[\\/]|[\\/]var[\\/]home[\\/]|[A-Za-z]:[\\/]+Users[\\/]+)"
    r"([^\\/]+)[\\/]*$",
    re.IGNORECASE,
)


def _unnamed(inside: list[str], cwd: str) -> list[str]:
    """A path inside the cwd, with `…` for each name that spells the user: when the cwd is
    a home folder (a Gemini CLI project at home), its user's name, and the name after
    `.gemini/tmp/` or `.claude/projects/`
    (`.gemini/tmp/alice/<id>/plans/x.md` → `.gemini/tmp/…/<id>/plans/x.md`)."""
    home = _HOME_USER.match(cwd)
    user = home.group(1).lower() if home else None
    shown = []
    for index, part in enumerate(inside):
        before = tuple(p.lower() for p in inside[max(0, index - 2) : index])
        if part.lower() == user or before in _NAMING_FOLDERS:
            part = "…"
        shown.append(part)
    return shown


def _is_path(cwd: str) -> bool:
    return cwd.startswith(("/", "\\")) or bool(re.match(r"^[A-Za-z]:[\\/]", cwd))


def shown(target: str) -> tuple[str, str]:
    """(kind, value) of a safe target, ("", "") for none."""
    kind, _, value = target.partition(":")
    return (kind, value) if value else ("", "")


def without_targets(sessions: Sequence[Session]) -> list[Session]:
    """The sessions with no tool targets (`--redact` for outputs made from the model)."""
    return [
        dataclasses.replace(
            s,
            tool_calls=tuple(
                dataclasses.replace(c, target="") if c.target else c for c in s.tool_calls
            ),
        )
        if any(c.target for c in s.tool_calls)
        else s
        for s in sessions
    ]


__all__ = ["program_name", "raw_target", "safe_target", "shown", "without_targets"]
