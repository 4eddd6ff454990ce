"""What caused an addition, safe by default (issue 29): a tool call's target is a path
relative to the session's cwd (its file name when outside), a shell command's program
name or a URL's host — never a body, an absolute path, a home folder or a user name. The
tool slice and its Largest additions instant carry it; `--redact` leaves it out; `open`
and `report` take `--previews` like `export`."""

from __future__ import annotations

import dataclasses
import random
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.model import Harness, Session, ToolCall
from agent_profiler.targets import (
    _WORDS,
    program_name,
    raw_target,
    safe_target,
    shell_words,
    shown,
)
from samples import DATA, pi_fork_source

SPOTTER = DATA / "claude-code" / "spotter-2.1.39-subagents-compaction"
PI = pi_fork_source()  # the corpus fork made no tool call: its source, as the fork holds it
runner = CliRunner()


@pytest.mark.parametrize(
    ("arguments", "cwd", "shown"),
    [
        ({"file_path": "/home/alice/app/src/x.py"}, "/home/alice/app", "path:src/x.py"),
        ({"file_path": "/home/alice/other/secret.txt"}, "/home/alice/app", "path:secret.txt"),
        ({"filePath": "/Users/bob/app/README.md"}, "/Users/bob/app", "path:README.md"),
        ({"path": "src/lib"}, "/home/alice/app", "path:src/lib"),
        ({"path": "../alice/x.md"}, "/home/alice/app", "path:x.md"),
        ({"path": "~/notes/todo.md"}, "/home/alice/app", "path:todo.md"),
        ({"absolute_path": r"C:\Users\dan\proj\a.ts"}, r"c:\users\dan\proj", "path:a.ts"),
        ({"file_path": "/home/alice/app/src/x.py"}, None, "path:x.py"),
        ({"command": "cd /home/alice/app && git status"}, None, "program:cd"),
        ({"command": "FOO=1 sudo /usr/bin/python3 -m pytest -q"}, None, "program:python3"),
        # an option's value is no program: `sudo -u alice` named the user as the target
        (
            {"command": "sudo -u alice /usr/bin/env python3 /home/alice/x.py"},
            None,
            "program:python3",
        ),
        ({"command": "env -u HOME -C /srv FOO=1 node x.js"}, None, "program:node"),
        ({"command": "time -f %e git status"}, None, "program:git"),
        ({"cmd": ["bash", "-lc", "rg --files /home/alice"]}, None, "program:rg"),
        ({"cmd": "echo 'unbalanced"}, None, "program:echo"),
        ({"command": "'(' weird"}, None, ""),
        ({"url": "https://user:pw@docs.example.com:8443/a?q=alice"}, None, "host:docs.example.com"),
        ({"pattern": "/home/alice/.*"}, None, ""),
        # A URL argument that is not text (a number, a list) names no host.
        ({"url": 8443}, None, ""),
        ({"uri": ["https://docs.example.com/"]}, None, ""),
        ("plain text input", None, ""),
        # A project at home (Gemini CLI run there): the names that spell the user are `…`
        (
            {"file_path": "/home/alice/.gemini/tmp/alice/9dc5/plans/x.md"},
            "/home/alice",
            "path:.gemini/tmp/…/9dc5/plans/x.md",
        ),
        ({"file_path": "/home/alice/Alice/notes.md"}, "/home/alice", "path:…/notes.md"),
        (
            {"file_path": "/home/alice/.claude/projects/-home-alice-app/s.jsonl"},
            "/home/alice",
            "path:.claude/projects/…/s.jsonl",
        ),
        (
            {"path": r"C:\Users\alice\.gemini\tmp\alice\x"},
            r"C:\Users\alice",
            "path:.gemini/tmp/…/x",
        ),
    ],
)
def test_targets_are_safe(arguments: object, cwd: str | None, shown: str) -> None:
    raw = raw_target(arguments)
    assert safe_target(raw, cwd) == shown
    assert safe_target(shown, "app") == shown  # idempotent, as Session re-runs it
    assert "alice" not in shown and "/home" not in shown and "~" not in shown


def test_program_name_of_a_shell_script_argv() -> None:
    assert program_name(["/bin/zsh", "-c", "npm test"]) == "npm"
    assert program_name(["git", "log"]) == "git"
    assert program_name(None) == ""


def test_shell_words_split_as_shlex_does() -> None:
    """The regular-expression split accepts what shlex accepts and gives its words: quotes,
    escapes in and out of "…", empty quoted words, whitespace shlex does not split on."""
    alphabet = list("ab -=/\\'\"\t\r\n\x0b\xa0\u2028#;|&$(){}x1")
    rng = random.Random(32)
    accepted = 0
    for _ in range(20000):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))
        try:
            expected: list[str] | None = shlex.split(command, comments=False, posix=True)
        except ValueError:
            expected = None
        got = shell_words(command) if _WORDS.fullmatch(command) else None
        assert got == expected, command
        accepted += got is not None
    assert 1000 < accepted < 19000  # both sides of the refusal were tried
    assert program_name('A=1 sudo "/usr/bin/git" status') == "git"
    assert program_name("echo 'unclosed") == "echo"


def test_program_name_is_the_first_program_shlex_finds() -> None:
    """program_name's shortcuts (a command without quotes or escapes is not checked whole;
    a word without separators is its own name) give what shlex's words give: the first
    word that is no assignment, option or wrapper, by its last path part, if a name."""
    alphabet = [*"ab -=/\\'\"\t\r\n\x0b\xa0#;|&$(){}x1.", "sudo", "env", "A=1", "/usr/bin/", "-u"]
    rng = random.Random(3232)

    def expected(command: str) -> str:
        try:
            words = shlex.split(command, comments=False, posix=True)
        except ValueError:
            words = command.split()
        takes_value = False  # `sudo -u NAME`, `env -u NAME`: NAME is no program
        wrapper = ""
        for word in words:
            if takes_value:
                takes_value = False
                continue
            if word.startswith("-"):
                takes_value = word == "-u" and wrapper in {"sudo", "env"}
                continue
            if re.match(r"[A-Za-z_][A-Za-z0-9_]*=", word):
                continue
            name = next((p for p in reversed(re.split(r"[\\/]+", word)) if p), "")
            if name in {"sudo", "env", "time", "nohup", "exec", "command"}:
                wrapper = name
                continue
            return name if re.fullmatch(r"[\w.+@-]{1,64}", name) else ""
        return ""

    plain = 0
    for _ in range(20000):
        command = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        assert program_name(command) == expected(command), command
        plain += not any(c in command for c in "'\"\\")
    assert 2000 < plain < 18000  # commands with and without quotes and escapes


def test_a_session_keeps_only_safe_targets() -> None:
    call = ToolCall("c1", "Read", 0, 1, target="path:/home/alice/app/src/main.rs")
    session = Session(
        Harness.CLAUDE_CODE, "s", 0, 1, ("j.jsonl",), project="/home/alice/app", tool_calls=(call,)
    )
    (kept,) = session.tool_calls
    assert kept.target == "path:src/main.rs" and session.project == "app"


def test_a_safe_target_keeps_every_other_field_of_its_call() -> None:
    # The copy is made by position (model._retargeted), not by dataclasses.replace.
    call = ToolCall(
        "c1", "Edit", 5, 9, "r1", "p1", True, True, ("path",), 12, (("path", "x"),), "d",
        "path:/home/alice/app/src/main.rs", 7, "s/a", "from the result", False,
    )  # fmt: skip
    assert all(getattr(call, f.name) != f.default for f in dataclasses.fields(ToolCall))
    session = Session(
        Harness.CLAUDE_CODE, "s", 0, 1, ("j.jsonl",), project="/home/alice/app", tool_calls=(call,)
    )
    (kept,) = session.tool_calls
    assert kept == dataclasses.replace(call, target="path:src/main.rs")


@pytest.mark.parametrize(
    ("raw", "cwd", "safe"),
    [
        # A bare root names no one: shown as `.` (it has no last name to show).
        ("path:/", None, "path:."),
        ("path:\\", "/home/alice/app", "path:."),
    ],
)
def test_a_bare_root_shows_no_path(raw: str, cwd: str | None, safe: str) -> None:
    assert safe_target(raw, cwd) == safe


def test_a_shown_target_keeps_a_colon_in_its_value() -> None:
    # A relative file name with a colon (`notes:v2.md`, `C:x` on a Windows share) is the
    # value whole; only the first colon ends the kind.
    assert shown("path:notes:v2.md") == ("path", "notes:v2.md")
    assert shown("host:example.com") == ("host", "example.com")
    assert shown("") == ("", "") and shown("path:") == ("", "")


def _tools(view: Any) -> list[Any]:
    return [s for s in view.slices if s.kind == "tool-execution"]


def test_tool_slices_and_additions_carry_their_target(export_trace: Any) -> None:
    view = export_trace(SPOTTER).view
    tools = _tools(view)
    targets = [s.args["target"] for s in tools if "target" in s.args]
    assert len(targets) > 0.8 * len(tools)
    kinds = {s.args["target_kind"] for s in tools if "target" in s.args}
    assert kinds <= {"path", "program", "host"} and {"path", "program"} <= kinds
    for target in targets:
        assert not target.startswith(("/", "~")) and not re.match(r"[A-Za-z]:", target)
        assert ".." not in target.split("/")
    reads = [s for s in tools if s.name == "Read" and "target" in s.args]
    assert reads and all(s.args["target_kind"] == "path" for s in reads)
    bash = [s for s in tools if s.name == "Bash" and "target" in s.args]
    assert bash and all(re.fullmatch(r"[\w.+@-]+", s.args["target"]) for s in bash)
    additions = [s for s in view.slices if s.category == "agentprof-additions"]
    by_call = {s.args["call_id"]: s for s in tools}
    with_target = [a for a in additions if "target" in a.args]
    assert with_target
    for instant in with_target:
        tool = by_call[instant.args["tool_call_id"]]
        assert instant.args["target"] == tool.args["target"]
        assert f"{tool.name} {tool.args['target']} (" in instant.name


def test_redact_leaves_targets_out(export_trace: Any) -> None:
    view = export_trace(PI, args=("--redact",)).view
    assert _tools(view)
    assert not any("target" in s.args for s in view.slices)
    profiles = [s for s in view.slices if s.name == "profile (1)"]
    assert all(p.args["redacted"] == "tool targets" for p in profiles)


def test_report_shows_targets_and_takes_previews_and_redact(tmp_path: Path) -> None:
    page = tmp_path / "r.html"
    assert runner.invoke(app, ["report", str(PI), "-o", str(page)]).exit_code == 0
    plain = page.read_text()
    assert '<code class="target">' in plain and 'class="args' not in plain
    result = runner.invoke(app, ["report", str(PI), "-o", str(page), "--force", "--previews"])
    assert result.exit_code == 0, result.output
    assert 'class="args muted"' in page.read_text()
    result = runner.invoke(app, ["report", str(PI), "-o", str(page), "--force", "--redact"])
    assert result.exit_code == 0
    assert '<code class="target">' not in page.read_text()


def test_open_takes_previews_and_redact(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_profiler import cli
    from traceview import load_trace

    seen: list[Any] = []

    def serve(path: Path, **_: Any) -> bool:
        seen.append(load_trace(path.read_bytes()))
        return True

    monkeypatch.setattr(cli, "serve_once", serve)
    args = ["open", "--no-browser", str(PI)]
    assert runner.invoke(app, [*args, "--previews"]).exit_code == 0
    assert runner.invoke(app, [*args, "--redact"]).exit_code == 0
    previews, redacted = seen
    assert any("args" in s.args for s in _tools(previews))
    assert not any("target" in s.args for s in _tools(redacted))


def test_only_a_mapping_of_arguments_has_a_target() -> None:
    """Arguments not decoded (None, a text: a redacted or patch input) name no target
    without asking the Mapping ABC; any mapping, not only a dict, is read."""
    from types import MappingProxyType

    assert [raw_target(a) for a in (None, "[REDACTED_ARGUMENTS len=9]", ["ls"], 3)] == [""] * 4
    assert raw_target(MappingProxyType({"path": "src/x.py"})) == "path:src/x.py"


def test_a_url_urlsplit_refuses_names_no_host() -> None:
    """An unclosed IPv6 bracket made `urlsplit` raise, and with it the reading of the
    whole journal ("could not be read"): such a URL names no host; a port that is no
    number does not matter (the host is read before it)."""
    assert raw_target({"url": "http://[oops/"}) == ""
    assert raw_target({"url": "http://[::1/x"}) == ""
    assert raw_target({"url": "http://h.example:port/"}) == "host:h.example"
    assert raw_target({"url": "http://[::1]:8080/x"}) == "host:::1"
