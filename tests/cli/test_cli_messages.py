"""What `open` says and where, which files it takes for traces, and how the console entry
point ends on Ctrl-C and on a bug (in-process: the server is faked, no socket, no browser)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler import cli
from agent_profiler.cli import app
from agent_profiler.own import is_trace
from shared_paths import TESTS

SMALL = TESTS / "data" / "journals" / "claude-code" / "handmade" / "small.jsonl"
URL = "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/t.pftrace"
runner = CliRunner()


def _serve(monkeypatch: pytest.MonkeyPatch, fetched: bool) -> list[float]:
    timeouts: list[float] = []

    def fake(trace: Path, *, timeout_s: float, on_ready: Callable[[str], None]) -> bool:
        timeouts.append(timeout_s)
        on_ready(URL)
        return fetched

    monkeypatch.setattr(cli, "serve_once", fake)
    return timeouts


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    out = tmp_path / "t.pftrace"
    assert runner.invoke(app, ["export", str(SMALL), "-o", str(out)]).exit_code == 0
    return out


SERVING = "serving t.pftrace on 127.0.0.1:9001 until it is fetched (at most 300 s; Ctrl-C stops)"


@pytest.mark.parametrize("found", [True, False])
def test_open_says_on_stderr_what_it_does(
    monkeypatch: pytest.MonkeyPatch, trace: Path, found: bool
) -> None:
    timeouts = _serve(monkeypatch, fetched=True)
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or found)
    result = runner.invoke(app, ["open", str(trace)])
    assert result.exit_code == 0 and result.stdout == "" and opened == [URL]
    assert timeouts == [300.0]
    assert result.stderr.splitlines() == [
        f"opening {URL}" if found else f"no browser found: open {URL} yourself",
        SERVING,
        "trace fetched by the UI; server stopped",
    ]


def test_without_a_browser_the_url_is_the_output(
    monkeypatch: pytest.MonkeyPatch, trace: Path
) -> None:
    _serve(monkeypatch, fetched=True)
    monkeypatch.setattr("webbrowser.open", lambda url: pytest.fail("no browser was asked for"))
    result = runner.invoke(app, ["open", "--no-browser", str(trace)])
    assert result.exit_code == 0 and result.stdout == f"{URL}\n"


def test_a_trace_not_fetched_in_time_is_an_error(
    monkeypatch: pytest.MonkeyPatch, trace: Path
) -> None:
    timeouts = _serve(monkeypatch, fetched=False)
    result = runner.invoke(app, ["open", "--no-browser", "--timeout", "7", str(trace)])
    assert result.exit_code == cli.EXIT_INPUT and timeouts == [7.0]
    assert result.stderr.splitlines()[-1] == "not fetched within 7 s; stopped serving"
    assert "fetched by the UI" not in result.stderr


def test_which_files_are_traces(tmp_path: Path, trace: Path) -> None:
    def named(name: str, data: bytes) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    chrome = json.dumps([{"ph": "X", "name": "a", "ts": 0}]).encode()
    assert is_trace(trace)
    assert is_trace(named("t.bin", trace.read_bytes()))  # by its first byte
    assert is_trace(named("t.data", b'  {"traceEvents": []}'))  # by its head
    assert is_trace(named("array.json", b"\n " + chrome))
    # An array of objects is a trace only named .json and only with a phase in its head:
    assert not is_trace(named("array.jsonl", chrome))
    assert not is_trace(named("objects.json", b'[{"a": 1}]'))
    assert not is_trace(named("late.json", b'[{"a": "' + b"x" * 5000 + b'", "ph": "X"}]'))
    assert not is_trace(SMALL)
    # A journal that starts with a blank line is no packet (it was served as a trace).
    assert not is_trace(named("blank-first.jsonl", b"\n" + SMALL.read_bytes()))
    assert not is_trace(named("blank-first", b"\n\r\n\t" + SMALL.read_bytes()))
    assert not is_trace(tmp_path / "missing.data")
    # By its packets whatever its name: a trace of one track, its first packet 13 bytes
    # long (an odd length), or 291 (a length of two bytes).
    assert is_trace(named("odd.bin", _track_trace("abcd")))
    assert is_trace(named("long.bin", _track_trace("x" * 280)))
    # Files that start as a trace would and are none.
    for head in (
        b"\x0a\x81\x82\x01",  # a first packet's length that runs to the end of the file
        b"\x0a\x05\x08\x01",  # a packet of 5 bytes in a file of 4
        b"\x0a\x03\x02\x00\x00",  # a first field numbered 0
        b"\x0a\x02\x0f\x00",  # a wire type protobuf does not use (7)
    ):
        assert not is_trace(named("data.bin", head)), head


def _track_trace(name: str) -> bytes:
    """A Perfetto trace of one packet: a track named `name`."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    made = pb.Trace()
    packet = made.packet.add()
    packet.trusted_packet_sequence_id = 1
    packet.track_descriptor.uuid = 7
    packet.track_descriptor.name = name
    return made.SerializeToString()


def test_ctrl_c_and_a_bug_end_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    def broken() -> None:
        raise ValueError("boom")

    for fake, code, said in (
        (interrupted, 130, "interrupted"),
        (
            broken,
            70,
            "internal error: ValueError: boom (please report this with the harness name "
            "and version)",
        ),
    ):
        monkeypatch.setattr(cli, "app", fake)
        with pytest.raises(SystemExit) as caught:
            cli.main()
        assert caught.value.code == code
        out, err = capsys.readouterr()
        assert (out, err) == ("", said + "\n")


def test_ctrl_c_inside_a_generated_method_still_ends_in_130_under_python_m(
    tmp_path: Path,
) -> None:
    """Ctrl-C that lands while a dataclass makes its methods (an `exec` of source text: a
    harness's modules are imported while reading) leaves CPython's "unhandled
    KeyboardInterrupt" flag set; `python -m` would then end by SIGINT (-2) after our 130."""
    package = tmp_path / "probe"
    package.mkdir()
    (package / "__main__.py").write_text(
        "import sys\n"
        "from agent_profiler.console import failure\n"
        "try:\n"
        "    exec('raise KeyboardInterrupt')  # where dataclasses' exec would meet it\n"
        "except KeyboardInterrupt as error:\n"
        "    sys.exit(failure(error))\n"
    )
    # GIVEN a `python -m` program interrupted inside an exec of source, which handles it
    done = subprocess.run(
        [sys.executable, "-m", "probe"], cwd=tmp_path, capture_output=True, timeout=60
    )
    # THEN it ends as the interrupted tool says, not killed by SIGINT
    assert (done.returncode, done.stderr.decode()) == (130, "interrupted\n")


def test_a_file_named_like_an_option_gets_a_hint(tmp_path: Path) -> None:
    """A Claude Code project folder's name starts with `-`: `export -home-me-app/s.jsonl`
    said only "No such option: -h". The usage error stands (exit 2) and a hint follows; a
    misspelt option that names nothing gets none."""
    folder = tmp_path / "-home-me-app"
    folder.mkdir()
    (folder / "s.jsonl").write_bytes(SMALL.read_bytes())

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        line = [sys.executable, "-m", "agent_profiler", *argv]
        return subprocess.run(line, cwd=tmp_path, capture_output=True, text=True, timeout=60)

    done = run("export", "-home-me-app/s.jsonl")
    assert done.returncode == 2
    assert done.stderr.endswith(
        "hint: -home-me-app/s.jsonl is a file or folder; name it ./-home-me-app/s.jsonl (or "
        "put -- before it): a word starting with - is read as an option\n"
    )
    assert run("export", "./-home-me-app/s.jsonl", "-o", "t.pftrace").returncode == 0
    typo = run("export", "./-home-me-app/s.jsonl", "--forse")
    assert typo.returncode == 2 and "hint:" not in typo.stderr
    # Named after `--`, as the hint says to: a typo elsewhere gets no hint about it.
    after = run("export", "--forse", "--", "-home-me-app/s.jsonl")
    assert after.returncode == 2 and "--forse" in after.stderr, after.stderr
    assert "hint:" not in after.stderr
    # An output option that took the next option for its file name: Click's error names
    # only the word left over, and the hint says what happened.
    taken = run("fleet", "ds", "--html", "-o", "page.html")
    assert taken.returncode == 2 and "unexpected extra argument" in taken.stderr
    assert taken.stderr.endswith(
        "hint: --html took -o for its file name; name the file after it\n"
    ), taken.stderr
    # Our own refusal says it all in its one line: no hint under it.
    ours = run("export", "./-home-me-app/s.jsonl", "-o", "--force")
    assert ours.returncode == 2 and ours.stderr.count("\n") == 1, ours.stderr
    assert ours.stderr.startswith("error: -o --force: --force looks like an option")


def test_an_internal_os_error_shows_its_file_as_a_warning_shows_a_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # An unexpected OSError's text spells its file's absolute path (home folder, user
    # name): both catch-alls, the command's and a journal group's, show it as a warning
    # shows a path.
    from agent_profiler import loader
    from agent_profiler.diagnostics import Diagnostics, error_text

    home = tmp_path / "home" / "alice"
    (home / "work").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    gone = str(home / "work" / "s.jsonl")
    error = FileNotFoundError(2, "No such file or directory", gone)
    assert error_text(error) == "[Errno 2] No such file or directory: ~/work/s.jsonl"

    def broken() -> None:
        raise error

    monkeypatch.setattr(cli, "app", broken)
    with pytest.raises(SystemExit):
        cli.main()
    said = capsys.readouterr().err
    assert "~/work/s.jsonl" in said and "alice" not in said

    journal = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl"
    (group,), _ = loader.plan([journal], None)
    adapter = loader.adapter_for(group.harness)
    assert adapter is not None

    def read(*_args: object) -> None:
        raise error

    monkeypatch.setattr(type(adapter), "read", property(lambda _self: read))
    (failure,) = loader.read_group(group, Diagnostics(), {}).failures
    assert "~/work/s.jsonl" in failure.message and "alice" not in failure.message
