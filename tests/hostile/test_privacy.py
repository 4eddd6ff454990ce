"""Privacy of the default outputs (issue 15, point 3): without `--previews`, no absolute path,
home directory, user name or cwd reaches a trace, a summary or a report, from any field of any
harness's journal. Every journal of the shared corpus that the tool reads is exported in the
default mode and scanned, and the cwd to look for is read from the raw journal here, not from
the code under test."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters.common import private_path
from agent_profiler.cli import app
from traceview import load_trace, plain_bytes

CORPUS = Path("/work/shared/corpus")
LOCAL = Path(__file__).resolve().parents[1] / "data" / "journals"
ROOT = CORPUS if CORPUS.is_dir() else LOCAL
HARNESSES = ("claude-code", "codex", "pi", "muse", "gemini-cli", "opencode")
# A home directory anywhere in the output, in any spelling a journal uses (JSON escapes a
# backslash, so Windows paths may appear with two).
HOME_SHAPES = re.compile(
    rb"/home/[^/\s\"]+/|/Users/[^/\s\"]+/|[A-Za-z]:(?:\\\\|\\|/)+Users(?:\\\\|\\|/)+[^\\/\s\"]+"
)
USER_IN_PATH = re.compile(r"(?:/home/|/Users/|[A-Za-z]:[\\/]+Users[\\/]+)([^\\/\s\"]+)")
CWD_KEYS = (
    "cwd",
    "workingDirectory",
    "working_directory",
    # Gemini CLI: the project's path hash and its workspace directories; OpenCode: the
    # session's `directory` and each assistant message's `path.cwd` / `path.root`.
    "projectHash",
    "directories",
    "directory",
    "root",
)
# Session files of Gemini CLI (JSON documents) and OpenCode (exports, the database).
DOCUMENT_SUFFIXES = (".json", ".json.gz", ".db")
runner = CliRunner()


def journals() -> Iterator[Path]:
    """What a user would pass: each journal, and a session folder (with subagents) whole."""
    for harness in HARNESSES:
        folder = ROOT / harness
        for path in sorted(folder.rglob("*")):
            suffixes = (".jsonl", ".jsonl.gz", ".txt")
            if harness in {"gemini-cli", "opencode"}:
                suffixes += DOCUMENT_SUFFIXES
            if not path.is_file() or not path.name.endswith(suffixes):
                continue
            if "subagents" in path.parts or path.name.startswith("agent-"):
                continue  # read with their parent, from its folder
            if path.parent.parent.name == "chats" or path.name == "logs.json":
                continue  # a Gemini CLI subagent (read from its parent's folder); the prompt log
            yield path


def raw_lines(path: Path) -> Iterator[object]:
    if path.suffix == ".db":
        yield from database_rows(path)
        return
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as stream:
        data = stream.read()
    if path.name.endswith((".json", ".json.gz")):
        yield json.loads(data)  # a Gemini CLI session document, an OpenCode export
        return
    for line in data.split(b"\n"):
        try:
            yield json.loads(line)
        except ValueError:
            continue


def database_rows(path: Path) -> Iterator[object]:
    """Every row of an OpenCode database (a copy in tmp: see `default_outputs`), its JSON
    `data` column parsed."""
    connection = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)
    try:
        for (table,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'"):
            cursor = connection.execute(f'SELECT * FROM "{table}"')
            names = [d[0] for d in cursor.description]
            for row in cursor:
                record = dict(zip(names, row, strict=True))
                data = record.get("data")
                if isinstance(data, str):
                    with contextlib.suppress(ValueError):
                        record["data"] = json.loads(data)
                yield {k: v for k, v in record.items() if not isinstance(v, bytes)}
    finally:
        connection.close()


def strings_under(value: object, keys: tuple[str, ...]) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key in keys and isinstance(item, str):
                yield item
            elif key in keys and isinstance(item, list):
                yield from (i for i in item if isinstance(i, str))
            else:
                yield from strings_under(item, keys)
    elif isinstance(value, list):
        for item in value:
            yield from strings_under(item, keys)


def private_facts(path: Path) -> tuple[set[str], set[str]]:
    """The journal's own cwds and the user names in its home paths, read from the raw file."""
    cwds: set[str] = set()
    users: set[str] = set()
    for value in raw_lines(path):
        cwds.update(c for c in strings_under(value, CWD_KEYS) if len(c) > 3)
        users.update(USER_IN_PATH.findall(json.dumps(value, ensure_ascii=False)))
    return cwds, users


def spellings(text: str) -> set[bytes]:
    """A string as raw bytes and as JSON or HTML would escape it."""
    forms = {text, json.dumps(text)[1:-1], text.replace("\\", "\\\\")}
    return {form.encode() for form in forms}


def default_outputs(path: Path, tmp: Path) -> dict[str, bytes]:
    """The default trace, summary and report (and, under "stderr", what export said)."""
    # a session with subagent folders is passed as its folder, as a user would
    gemini_tree = path.parent.name == "chats" and any(p.is_dir() for p in path.parent.iterdir())
    if gemini_tree or (path.parent / path.name.split(".")[0]).is_dir():
        inputs = [str(path.parent)]
    else:
        inputs = [str(path)]
    outputs: dict[str, bytes] = {}
    trace, page = tmp / "t.pftrace", tmp / "t.html"
    exported = runner.invoke(app, ["export", *inputs, "-o", str(trace), "--force"])
    outputs["stderr"] = exported.stderr.encode()
    if trace.exists():
        outputs["trace"] = plain_bytes(trace)  # deflated text would hide from the scan
    summary = runner.invoke(app, ["summary", *inputs, "--json"])
    outputs["summary"] = summary.stdout.encode()
    runner.invoke(app, ["report", *inputs, "-o", str(page), "--force"])
    if page.exists():
        outputs["report"] = page.read_bytes()
    return outputs


@pytest.mark.slow  # every output of every harness's journals
@pytest.mark.parametrize("path", list(journals()), ids=lambda p: p.name[:60])
def test_no_path_user_name_or_cwd_in_default_outputs(path: Path, tmp_path: Path) -> None:
    if path.suffix == ".db":
        # Never opened in the shared corpus (a reader may create -wal/-shm beside it).
        copy = tmp_path / "db" / path.name
        copy.parent.mkdir()
        shutil.copyfile(path, copy)
        path = copy
    # GIVEN a real journal and what it says about the machine it was written on
    cwds, users = private_facts(path)
    # WHEN it is exported, summarised and reported without --previews
    outputs = default_outputs(path, tmp_path)
    stderr = outputs.pop("stderr")  # not an output: its warnings name the input as given
    if not outputs.get("trace") and b"no session records" in stderr:
        pytest.skip("nothing to show (a Gemini CLI log holding only its header)")
    assert outputs.get("trace"), f"{path}: nothing exported"
    # THEN every tool target (issue 29) is a relative path inside the project, a file name,
    # a program or a host: never absolute, home-relative, upward, or a user name
    view = load_trace(outputs["trace"])
    for slice_ in view.slices:
        target = slice_.args.get("target")
        if target is None:
            continue
        assert isinstance(target, str) and target, slice_.name
        assert not target.startswith(("/", "\\", "~")), f"{path.name}: target {target!r}"
        assert not re.match(r"[A-Za-z]:", target), f"{path.name}: target {target!r}"
        assert ".." not in re.split(r"[\\/]", target), f"{path.name}: target {target!r}"
        assert not set(re.split(r"[\\/]", target)) & users, f"{path.name}: {target!r}"
    for name, data in outputs.items():
        # THEN no home directory, no cwd and no user name framed as a path segment
        found = HOME_SHAPES.findall(data)
        assert not found, f"{name} of {path.name}: {found[:3]}"
        for cwd in cwds:
            assert not any(form in data for form in spellings(cwd)), f"{name}: cwd {cwd}"
        for user in users:
            framed = [f"/{user}/", f"\\{user}\\", f"-{user}-"]
            leaked = [f for f in framed if any(s in data for s in spellings(f))]
            assert not leaked, f"{name} of {path.name}: user name {user!r} in {leaked}"


@pytest.mark.parametrize(
    ("path", "cwd", "shown"),
    [
        ("/home/moxa/.claude/CLAUDE.md", "/home/moxa/work/app", "~/.claude/CLAUDE.md"),
        ("/Users/x/p/CLAUDE.md", "/Users/x/p", "CLAUDE.md"),
        ("/Users/x/p/CLAUDE.md", "/Users/x/p/sub/dir", "../../CLAUDE.md"),
        (r"C:\Users\danil\.claude\CLAUDE.md", r"d:\work", "~/.claude/CLAUDE.md"),
        (r"d:\ClaudeWorkspace\CLAUDE.md", r"d:\ClaudeWorkspace", "CLAUDE.md"),
        (
            "/home/u/.claude/projects/-home-u-app/memory/MEMORY.md",
            None,
            "~/.claude/projects/…/memory/MEMORY.md",
        ),
        ("/etc/claude-code/CLAUDE.md", "/home/u/app", "CLAUDE.md"),
        # Gemini CLI's project folder is its path hash or slug (the user name at home)
        (
            "/home/alice/.gemini/tmp/alice/chats/session-1.json",
            "/home/alice",
            "~/.gemini/tmp/…/chats/session-1.json",
        ),
        (
            "/Users/a/.gemini/tmp/0f3e9c2d/chats/01b2c62e/x.json",
            None,
            "~/.gemini/tmp/…/chats/01b2c62e/x.json",
        ),
        ("../corpus/jules/chats/session-1.json", None, "../corpus/…/chats/session-1.json"),
        ("CLAUDE.md", "/home/u/app", "CLAUDE.md"),
        # A folder written with its separator at the end is still shown by its last name
        # (it was shown whole), and a cwd written so is still the project's folder.
        ("/srv/alice/app/", None, "app"),
        ("D:\\work\\alice\\", None, "alice"),
        ("/home/u/app/src/x.py", "/home/u/app/", "src/x.py"),
        (r"d:\work\app\CLAUDE.md", "d:\\work\\app\\", "CLAUDE.md"),
        # Outside any home folder a parent within the same tree is still relative.
        ("/srv/CLAUDE.md", "/srv/app", "../CLAUDE.md"),
        # A cwd's last letters are its own (only separators end it): not `../BOX/a.md`.
        ("/srv/BOX/a.md", "/srv/BOX", "a.md"),
        # The cwd itself, also with a separator at its end, is shown as any folder (it was
        # shown as an empty name).
        ("/srv/app\\", "/srv/app\\", "app"),
        ("/srv/app/", "/srv/app/", "app"),
        ("/srv/app", "/srv/app", "app"),
        ("/home/u/app", "/home/u/app", "~/app"),
        # A bare root shows nothing about anyone: as it is.
        ("/", None, "/"),
        ("\\", "/srv/app", "\\"),
    ],
)
def test_private_path_shortening(path: str, cwd: str | None, shown: str) -> None:
    assert private_path(path, cwd) == shown


@pytest.mark.parametrize(
    ("cwd", "name"),
    [
        ("/Users/pretor/Documents/PAI - TPOS", "PAI - TPOS"),
        ("/home/u/.claude/projects/-home-u-src-app", "src-app"),
        ("/home/moxa/.claude/projects/-home-moxa-sdc1-home-moxa-buildroot", "buildroot"),
        ("/home/u", "~"),  # the home folder itself is named by the user: never shown
        (r"d:\ClaudeWorkspace", "ClaudeWorkspace"),
        # The project folder of the home folder itself spells only the user name.
        ("/home/alice/.claude/projects/-home-alice", "…"),
        ("/home/u/BOX/", "BOX"),
        ("D:\\work\\alice\\", "alice"),  # it was the whole path
    ],
)
def test_a_session_keeps_only_its_project_name(cwd: str, name: str) -> None:
    from agent_profiler.model import Harness, Session

    session = Session(Harness.CLAUDE_CODE, "s", 0, 1, ("j.jsonl",), project=cwd)
    assert session.project == name


def test_the_summary_names_a_journal_under_home_without_the_user() -> None:
    from agent_profiler.model import Harness, Session
    from agent_profiler.summary import summarise

    # GIVEN a session read from the usual place, ~/.claude/projects/<sanitized cwd>/
    path = "/home/alice/.claude/projects/-home-alice-app/0f2c.jsonl"
    session = Session(Harness.CLAUDE_CODE, "s", 0, 1, (path,))
    # THEN the summary's source says where without the user name
    assert summarise(session).source == "~/.claude/projects/…/0f2c.jsonl"


def test_a_home_outside_home_folders_is_shown_as_a_tilde(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`HOME=/srv/people/alice` (not under /home or /Users): summary's source, from a
    folder beside it, was `../../people/alice/.claude/projects/-srv-people-alice-app/…`."""
    from agent_profiler.model import Harness, Session
    from agent_profiler.summary import summarise

    home = tmp_path / "people" / "alice"
    journal = home / ".claude" / "projects" / "-srv-people-alice-app" / "0f2c.jsonl"
    elsewhere = tmp_path / "work"
    elsewhere.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(elsewhere)
    session = Session(Harness.CLAUDE_CODE, "s", 0, 1, (str(journal),))
    assert summarise(session).source == "~/.claude/projects/…/0f2c.jsonl"
    assert private_path(str(home / "src" / "x.py"), str(elsewhere)) == "~/src/x.py"


@pytest.mark.parametrize(
    ("source", "layout"),
    [
        (
            LOCAL / "gemini-cli" / "entire-ab-2b9748b105-0_session.json",
            ".gemini/tmp/alice/chats/session-2026-01-15T20-51-98b30b64.json",
        ),
        (
            LOCAL / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json",
            ".local/share/opencode/ses_2bef25635ffe8EzID0I1Oeymal.export.json",
        ),
    ],
    ids=["gemini-cli", "opencode"],
)
def test_a_session_in_its_home_folder_leaves_no_user_name(
    source: Path, layout: str, tmp_path: Path
) -> None:
    # GIVEN a real session where its harness keeps it, in the home of a user `alice` whose
    # Gemini CLI project is her home folder (so its slug is her name too)
    home = tmp_path / "home" / "alice"
    path = home / layout
    path.parent.mkdir(parents=True)
    path.write_bytes(source.read_bytes())
    # WHEN exported and reported by its absolute path, without --previews (the summary's
    # source is relative to the cwd, here inside tmp: its home form is pinned above)
    outputs = default_outputs(path, tmp_path)
    outputs.pop("stderr")
    outputs.pop("summary")
    assert outputs.get("trace")
    # THEN no output holds the path, the home folder or the user name, framed in a path
    # or alone (Gemini CLI's project folder, a slug of her home's name, was the project
    # label: `Gemini CLI 98b30b64 · alice · …`)
    for name, data in outputs.items():
        assert b"/home/alice" not in data, name
        assert not any(f in data for f in (b"/alice/", b"\\alice\\", b"alice/chats")), name
        assert b"alice" not in data, name


@pytest.mark.parametrize(
    ("journal", "key", "shown"),
    [
        (
            "opencode/ses_2bef25635ffe8EzID0I1Oeymal.export.json",
            "session_title",
            "Explore codebase for context (@explore subagent)",
        ),
        (
            "gemini-cli/expenses-tracker-0.37.1-subagents/agunginsani/chats/"
            "session-2026-04-12T01-18-01b2c62e.json",
            "session_summary",
            "Create a Telegram expense tracker using Apple Numbers.",
        ),
    ],
)
def test_a_title_written_from_the_conversation_is_content(
    journal: str, key: str, shown: str, export_trace
) -> None:  # type: ignore[no-untyped-def]
    # GIVEN a session whose harness wrote a title or summary from the conversation
    path = Path(__file__).parent.parent / "data" / "journals" / journal
    # WHEN it is exported by default, and with --previews
    plain = export_trace(path, require_addition=False)
    previews = export_trace(path, args=("--previews",), require_addition=False)
    # THEN only the previews trace carries it
    assert not [s for s in plain.view.slices if key in s.args]
    assert shown in [s.args.get(key) for s in previews.view.slices if s.name == "profile (1)"]


@pytest.mark.parametrize(("home", "named"), [("/home/alice", "app"), ("/home/bob", "trace")])
def test_a_project_folder_given_whole_leaves_no_user_name(
    home: str, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`export ~/.claude/projects/-home-alice-app/` (the README's own example) put the
    folder's name, which spells /home/alice/app, into the trace's `inputs`, the report and
    the default output's name (`-home-alice-app.pftrace`, whose `open` command, printed
    next, read as options); the summary's `source`, relative to the current folder, kept
    it too. Each now shows what follows this machine's home (`app`), or `…`."""
    small = LOCAL / "claude-code" / "handmade" / "small.jsonl"
    folder = tmp_path / ".claude" / "projects" / "-home-alice-app"
    folder.mkdir(parents=True)
    shutil.copy(small, folder / "s.jsonl")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", home)
    given = str(folder.relative_to(tmp_path))
    exported = runner.invoke(app, ["export", given])
    assert exported.exit_code == 0, exported.stderr
    assert exported.stdout.startswith(f"wrote {named}.pftrace (")
    assert f"open it: agent-profiler open {named}.pftrace " in exported.stderr
    trace = plain_bytes(tmp_path / f"{named}.pftrace")
    summary = runner.invoke(app, ["summary", given, "--json"]).stdout.encode()
    assert runner.invoke(app, ["report", given, "-o", "r.html"]).exit_code == 0
    report = (tmp_path / "r.html").read_bytes()
    for name, data in (("trace", trace), ("summary", summary), ("report", report)):
        assert b"alice" not in data, name
    shown = "app" if named == "app" else "…"
    assert json.loads(summary)[0]["source"] == f".claude/projects/{shown}/s.jsonl"


@pytest.mark.parametrize(
    ("name", "home", "shown"),
    [
        ("-home-alice-src-app", "/home/alice", "src-app"),
        ("-home-alice", "/home/alice", "…"),
        ("-Users-bob-work", "/home/alice", "…"),
        ("C--Users-bob-work", "/home/alice", "…"),
        ("-root-proj", "/root", "proj"),
        ("-tmp-private", "/home/alice", "-tmp-private"),  # no home in it
        ("-x.jsonl", "/home/alice", "-x.jsonl"),
        ("session.jsonl", "/home/alice", "session.jsonl"),
    ],
)
def test_input_names(name: str, home: str, shown: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_profiler.privacy import input_name

    monkeypatch.setenv("HOME", home)
    assert input_name(name) == shown


def test_the_cost_outputs_leave_no_body_path_or_user_name(tmp_path: Path) -> None:
    pytest.importorskip("genai_prices")
    # GIVEN a hand-made journal of user alice in /home/alice/secretproj, whose tool results
    # and arguments are bodies (TOP-SECRET-BODY, SECRET-SEARCH-RESULT, "alice private query")
    journal = Path(__file__).parents[1] / "data" / "dataset" / "claude-cost-split.jsonl"
    assert b"/home/alice/secretproj" in journal.read_bytes()
    # WHEN it is exported, summarised and reported by default, the last two with the receipt
    trace, page = tmp_path / "t.pftrace", tmp_path / "t.html"
    results = [
        runner.invoke(app, ["export", str(journal), "-o", str(trace)]),
        summary := runner.invoke(app, ["summary", str(journal), "--json", "--cost"]),
        text := runner.invoke(app, ["summary", str(journal), "--cost"]),
        runner.invoke(app, ["report", str(journal), "-o", str(page), "--cost"]),
    ]
    assert all(r.exit_code == 0 for r in results), [r.output for r in results]
    outputs = {
        "trace": plain_bytes(trace),
        "summary --json --cost": summary.stdout.encode(),
        "summary --cost": text.stdout.encode(),
        "report --cost": page.read_bytes(),
    }
    assert b"what the context cost" in outputs["summary --cost"]
    assert b'class="receipt"' in outputs["report --cost"]
    # THEN none holds a body, an absolute path, the home folder or the user name
    for name, data in outputs.items():
        for private in (b"TOP-SECRET", b"SECRET-SEARCH", b"private query", b"alice", b"/home/"):
            assert private not in data, f"{name}: {private!r}"
        assert not HOME_SHAPES.findall(data), name
        assert b"secretproj/" not in data and b"secretproj\\" not in data, name
