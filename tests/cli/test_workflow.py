"""`open` (serving a trace once to ui.perfetto.dev, tested with a real HTTP client and
no browser) and `discover` (journals in a fake home folder)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler import cli
from agent_profiler.cli import app
from agent_profiler.discover import discover
from agent_profiler.model import Harness
from agent_profiler.serve import ServeError, serve_once, ui_url
from shared_paths import TESTS

DATA = TESTS / "data" / "journals"
SMALL = DATA / "claude-code" / "handmade" / "small.jsonl"
CODEX = DATA / "codex" / "rollout-2026-02-23T20-34-25-019c8bfe-ec25-79e0-97d7-bda6a9c575ff.jsonl"
runner = CliRunner()


def fetch(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), b""


def local_url(ui: str) -> str:
    """The address the UI fetches: its URL's `url=` (startup commands follow it after `&`),
    decoded once, as the UI reads its route's query (ui/src/core/router.ts: `+` is a
    space, then mithril's parseQueryString decodes each value)."""
    value = ui.split("url=", 1)[1].split("&", 1)[0]
    return urllib.parse.unquote(value.replace("+", " "))


def test_ui_url_is_perfettos_recipe() -> None:
    assert ui_url("a.pftrace") == "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/a.pftrace"
    # Quoted twice: the UI decodes once and fetches what it got, which the server unquotes.
    assert ui_url("a b.pftrace") == (
        "https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/a%2520b.pftrace"
    )


@pytest.mark.parametrize("name", ["a#b.pftrace", "a?b.pftrace", "a%41+b c.pftrace"])
def test_a_trace_of_any_name_is_fetched_as_the_ui_fetches_it(tmp_path: Path, name: str) -> None:
    """Quoted once, `a#b.pftrace` reached the UI as `…/a#b.pftrace` (a fragment: it fetched
    `/a`, 404) and `a%41.pftrace` as `…/aA.pftrace`: the trace never loaded."""
    trace = tmp_path / name
    trace.write_bytes(b"\x0a\x00trace")
    got: list[tuple[int, dict[str, str], bytes]] = []
    clients: list[threading.Thread] = []

    def ready(url: str) -> None:
        # What a browser does with the decoded address: the fragment is not sent.
        address = local_url(url).partition("#")[0]
        clients.append(threading.Thread(target=lambda: got.append(fetch(address)), daemon=True))
        clients[0].start()

    assert serve_once(trace, port=0, timeout_s=5, on_ready=ready) is True
    clients[0].join(5)  # the client finishes reading after the server stopped
    assert [(status, body) for status, _, body in got] == [(200, trace.read_bytes())]


def test_a_connection_that_sends_nothing_does_not_hold_up_the_fetch(tmp_path: Path) -> None:
    """One thread served every connection, without a time limit: a spare connection a
    browser opens and never uses held the UI's fetch, and `open` past its --timeout, for
    good. Each connection has its own thread now, and a silent one is closed; `open` ends
    once the trace is fetched, the spare connection still open (as a browser keeps it), not
    when the silent one is closed 5 s later."""
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00trace")
    got: list[bytes] = []
    idle: list[socket.socket] = []
    clients: list[threading.Thread] = []

    def ready(url: str) -> None:
        host, port = local_url(url).split("/")[2].split(":")
        idle.append(socket.create_connection((host, int(port))))  # connects, says nothing

        def client() -> None:
            time.sleep(0.2)  # after the silent one
            got.append(fetch(local_url(url))[2])

        clients.append(threading.Thread(target=client, daemon=True))
        clients[0].start()

    started = time.monotonic()
    try:
        served = serve_once(trace, port=0, timeout_s=10, on_ready=ready)
        took = time.monotonic() - started
    finally:
        idle[0].close()
    clients[0].join(5)
    assert served and got == [trace.read_bytes()] and took < 4


def test_serves_once_with_the_cors_header_then_stops(tmp_path: Path) -> None:
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00trace bytes")
    results: list[Any] = []
    threads: list[threading.Thread] = []

    def client(url: str) -> None:
        base = local_url(url)
        # The UI's preflight (a fetch from another origin may send one) does not end serving.
        preflight = urllib.request.Request(base, method="OPTIONS")
        with urllib.request.urlopen(preflight, timeout=5) as response:
            results.append((response.status, dict(response.headers)))
        results.append(fetch(base.rsplit("/", 1)[0] + "/other.pftrace"))  # not the trace
        results.append(fetch(base))

    def ready(url: str) -> None:
        results.append(url)
        threads.append(threading.Thread(target=client, args=(url,), daemon=True))
        threads[0].start()

    assert serve_once(trace, port=0, timeout_s=10, on_ready=ready) is True
    threads[0].join(5)
    url, (allowed, preflight), (missing, missing_headers, _), (status, headers, body) = results
    assert url.startswith("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:")
    assert allowed == 204
    assert preflight["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
    assert preflight["Access-Control-Allow-Methods"] == "GET, OPTIONS"
    assert preflight["Access-Control-Allow-Headers"] == "*"
    assert missing == 404 and missing_headers["Content-Length"] == "0"
    assert status == 200 and body == trace.read_bytes()
    assert headers["Access-Control-Allow-Origin"] == "https://ui.perfetto.dev"
    assert headers["Content-Type"] == "application/octet-stream"
    assert headers["Content-Length"] == str(len(body)) and headers["Cache-Control"] == "no-cache"
    with pytest.raises(OSError):  # the server is gone after one fetch
        urllib.request.urlopen(local_url(url), timeout=2)


def test_a_slow_reader_gets_the_whole_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request's time limit bounded the whole answer too (a socket's timeout bounds a
    whole sendall): a big trace read slowly was cut short and `open` said it was not
    fetched. The limit (made short here) is for the request only."""
    from agent_profiler import serve

    monkeypatch.setattr(serve, "REQUEST_TIMEOUT_S", 0.3)
    trace = tmp_path / "big.pftrace"
    trace.write_bytes(b"\x0a\x00" + os.urandom(16 << 20))
    got: list[int] = []
    clients: list[threading.Thread] = []

    def slow(url: str) -> None:
        with urllib.request.urlopen(local_url(url), timeout=30) as response:
            size = 0
            while chunk := response.read(1 << 20):
                size += len(chunk)
                time.sleep(0.1)  # about 10 MB/s: the whole trace in well over 0.3 s
            got.append(size)

    def ready(url: str) -> None:
        clients.append(threading.Thread(target=slow, args=(url,), daemon=True))
        clients[0].start()

    assert serve_once(trace, port=0, timeout_s=30, on_ready=ready) is True
    clients[0].join(30)
    assert got == [trace.stat().st_size]


def test_timeout_without_a_fetch(tmp_path: Path) -> None:
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00")
    assert serve_once(trace, port=0, timeout_s=0.6) is False


def test_an_empty_trace_is_refused_before_serving(tmp_path: Path) -> None:
    """`open e.pftrace` of a 0-byte file served it and printed the URL: the UI then
    failed on an empty trace, far from the cause. No port is opened for it now."""
    trace = tmp_path / "e.pftrace"
    trace.write_bytes(b"")
    ready: list[str] = []
    with pytest.raises(ServeError, match=r"e\.pftrace: empty file, not a trace"):
        serve_once(trace, port=0, timeout_s=5, on_ready=ready.append)
    assert ready == []


def test_busy_port_is_a_clear_error(tmp_path: Path) -> None:
    trace = tmp_path / "t.pftrace"
    trace.write_bytes(b"\x0a\x00")
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        with pytest.raises(ServeError, match=f"port {port} on 127.0.0.1 is busy"):
            serve_once(trace, port=port, timeout_s=1)


def _serving_with_a_client(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Make the CLI serve on a free port and fetch the trace like the UI would."""
    fetched: list[bytes] = []

    def fake_serve(
        trace: Path, *, timeout_s: float, on_ready: Callable[[str], None] | None = None
    ) -> bool:
        clients: list[threading.Thread] = []

        def ready(url: str) -> None:
            if on_ready is not None:
                on_ready(url)
            clients.append(
                threading.Thread(
                    target=lambda: fetched.append(fetch(local_url(url))[2]), daemon=True
                )
            )
            clients[0].start()

        served = serve_once(trace, port=0, timeout_s=timeout_s, on_ready=ready)
        clients[0].join(5)  # the client finishes reading after the server stopped
        return served

    monkeypatch.setattr(cli, "serve_once", fake_serve)
    return fetched


def test_open_exports_a_journal_then_serves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    fetched = _serving_with_a_client(monkeypatch)
    result = runner.invoke(app, ["open", "--no-browser", "--timeout", "10", str(SMALL)])
    assert result.exit_code == 0, result.output + result.stderr
    assert result.stdout.strip().startswith("https://ui.perfetto.dev/#!/?url=http://127.0.0.1:")
    assert local_url(result.stdout.strip()).endswith("/small.pftrace")
    assert "&startupCommands=" in result.stdout  # the first view set up (issue 29)
    assert "fetched" in result.stderr
    (body,) = fetched
    assert body[:1] == b"\x0a" and len(body) > 1000


def test_open_a_trace_and_export_open(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fetched = _serving_with_a_client(monkeypatch)
    out = tmp_path / "x.pftrace"
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url: opened.append(url) or True)
    result = runner.invoke(app, ["export", str(SMALL), "-o", str(out), "--open"])
    assert result.exit_code == 0, result.output + result.stderr
    assert opened and local_url(opened[0]).endswith("/x.pftrace")
    result = runner.invoke(app, ["open", "--no-browser", str(out)])
    assert result.exit_code == 0
    assert fetched == [out.read_bytes(), out.read_bytes()]


# --------------------------------------------------------------------------- discover


def fake_home(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    claude = home / ".claude" / "projects" / "-work-app"
    claude.mkdir(parents=True)
    shutil.copy(SMALL, claude / "11111111-2222-4333-8444-555555555555.jsonl")
    (claude / "agent-1234.jsonl").write_text(SMALL.read_text())  # a subagent: not listed
    codex = tmp_path / "codex-home" / "sessions" / "2026" / "02" / "23"
    codex.mkdir(parents=True)
    shutil.copy(CODEX, codex / CODEX.name)
    (codex / "rollout-broken.jsonl").write_bytes(b"\x00\x00binary")  # skipped quietly
    return {"HOME": str(home), "CODEX_HOME": str(tmp_path / "codex-home")}


def test_discover_lists_newest_first_and_filters(tmp_path: Path) -> None:
    env = fake_home(tmp_path)
    found = discover(env=env)
    assert [(j.harness, j.path.name) for j in found] == [
        (Harness.CODEX, CODEX.name),  # 2026-02-23, newer than the Claude journal (2026-01-01)
        (Harness.CLAUDE_CODE, "11111111-2222-4333-8444-555555555555.jsonl"),
    ]
    assert found[1].project == "/home/USER/demo"
    assert [j.harness for j in discover(env=env, harness=Harness.CLAUDE_CODE)] == [
        Harness.CLAUDE_CODE
    ]
    assert discover(env=env, project="DEMO")[0].harness is Harness.CLAUDE_CODE
    assert discover(env=env, since_ns=1_771_000_000 * 10**9)[0].harness is Harness.CODEX
    assert len(discover(env=env, since_ns=1_771_000_000 * 10**9)) == 1


def test_discover_says_where_it_looked_when_it_finds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.delenv("OPENCODE_DB", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "empty-home"))
    result = runner.invoke(app, ["discover"])
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr == (
        "no journals found in each harness's default folders (`agent-profiler discover "
        "--help` lists them, and the variables that move them)\n"
    )
    for key, value in fake_home(tmp_path).items():
        monkeypatch.setenv(key, value)
    filtered = runner.invoke(app, ["discover", "--harness", "pi", "--project", "nowhere"])
    assert filtered.stderr.startswith(
        "no journals found matching --project nowhere in pi's default folders"
    )


def test_discover_cli_json_and_paths_feed_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in fake_home(tmp_path).items():
        monkeypatch.setenv(key, value)
    result = runner.invoke(app, ["discover", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert [item["harness"] for item in listed] == ["codex", "claude-code"]
    assert set(listed[0]) == {"harness", "path", "project", "start", "size", "modified"}
    out = tmp_path / "all.pftrace"
    exported = runner.invoke(app, ["export", *(i["path"] for i in listed), "-o", str(out)])
    assert exported.exit_code == 0 and "2 sessions" in exported.stdout
    assert runner.invoke(app, ["discover", "--since", "not-a-date"]).exit_code == 2
    text = runner.invoke(app, ["discover", "--harness", "codex"]).stdout
    assert "codex" in text and CODEX.name in text and "claude" not in text
