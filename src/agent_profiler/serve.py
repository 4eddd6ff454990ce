"""Open a trace in ui.perfetto.dev: serve the file once on 127.0.0.1:9001.

This is the recipe of Perfetto's own `tools/open_trace_in_ui`: ui.perfetto.dev
may fetch from `http://127.0.0.1:9001` (the one local origin its content
security policy allows), so the file is served there with
`Access-Control-Allow-Origin: https://ui.perfetto.dev` and the browser is
pointed at `https://ui.perfetto.dev/#!/?url=http://127.0.0.1:9001/<name>`.
The server answers only that path, only on the loopback interface, and stops
after the trace was fetched once or after a timeout. Nothing leaves the machine.
"""

from __future__ import annotations

import errno
import http.server
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path

from agent_profiler.errors import ServeError as ServeError  # its home is errors.py

HOST = "127.0.0.1"
PORT = 9001
UI_ORIGIN = "https://ui.perfetto.dev"


def ui_url(name: str, port: int = PORT) -> str:
    quoted = urllib.parse.quote(name)
    return f"{UI_ORIGIN}/#!/?url=http://{HOST}:{port}/{quoted}"


def serve_once(
    trace: Path,
    *,
    port: int = PORT,
    timeout_s: float = 300.0,
    on_ready: Callable[[str], None] | None = None,
) -> bool:
    """Serve `trace` until it has been fetched once (True) or `timeout_s` passed (False).
    `on_ready(url)` is called once the socket listens (e.g. to open the browser)."""
    try:
        data = trace.read_bytes()
    except OSError as error:
        raise ServeError(f"{trace}: cannot read ({error.strerror})") from error
    name = trace.name
    served = False

    class Handler(http.server.BaseHTTPRequestHandler):
        def _headers(self, status: int, length: int) -> None:
            self.send_response(status)
            self.send_header("Access-Control-Allow-Origin", UI_ORIGIN)
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(length))
            self.end_headers()

        def do_OPTIONS(self) -> None:
            self.send_response(204)
            self.send_header("Access-Control-Allow-Origin", UI_ORIGIN)
            self.send_header("Access-Control-Allow-Methods", "GET, OPTIONS")
            self.send_header("Access-Control-Allow-Headers", "*")
            self.end_headers()

        def do_GET(self) -> None:
            nonlocal served
            if urllib.parse.unquote(self.path.lstrip("/")) != name:
                self._headers(404, 0)
                return
            self._headers(200, len(data))
            self.wfile.write(data)
            served = True

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the CLI says what matters

    try:
        server = http.server.HTTPServer((HOST, port), Handler)
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {HOST} is busy (another `open` still serving?); "
                f"ui.perfetto.dev only accepts traces from {HOST}:{PORT}. Stop the other "
                f"server, or drag {trace} into {UI_ORIGIN}"
            ) from error
        raise ServeError(f"cannot listen on {HOST}:{port}: {error.strerror}") from error
    with server:
        server.timeout = 0.5
        if on_ready is not None:
            on_ready(ui_url(name, server.server_address[1]))
        deadline = time.monotonic() + timeout_s
        while not served and time.monotonic() < deadline:
            server.handle_request()
    return served
