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
import io
import json
import os
import time
import urllib.parse
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent_profiler.errors import ServeError as ServeError  # its home is errors.py

if TYPE_CHECKING:  # the full schema's types; _trace_pb2 holds the part we use
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
else:
    from agent_profiler.writers import _trace_pb2 as pb

HOST = "127.0.0.1"
PORT = 9001
UI_ORIGIN = "https://ui.perfetto.dev"


# Commands the UI runs after loading the trace (`startupCommands` in the URL, a JSON
# array: Perfetto's docs/visualization/deep-linking-to-perfetto-ui.md). The UI runs only
# ids on its allow-list (ui/src/core/startup_command_allowlist.ts); we use these.
ALLOWED_STARTUP_COMMANDS = frozenset(
    {
        "dev.perfetto.ExpandTracksByRegex",
        "dev.perfetto.PinTracksByRegex",
    }
)
_TRACK_DESCRIPTOR_TAG = b"\xe2\x03"  # TracePacket field 60 (track_descriptor), length-delimited
_COMPRESSED_PACKETS_TAG = b"\x92\x03"  # TracePacket field 50, length-delimited
_CAPTURE = "agentprof.capture"
# How long a connection may take to send its request (a browser's spare connection may
# send none): after it, the connection is closed, never waited on for good.
REQUEST_TIMEOUT_S = 5.0


def ui_url(name: str, port: int = PORT, commands: Sequence[dict[str, Any]] = ()) -> str:
    """The UI's address that fetches `name` from the local server, with its startup
    commands (only allow-listed ones: anything else is refused here)."""
    # Quoted twice: the UI decodes its route's query once and fetches what it got, so a
    # name with `#`, `?` or `%` would reach the server cut or changed after one quoting.
    quoted = urllib.parse.quote(urllib.parse.quote(name, safe=""), safe="")
    url = f"{UI_ORIGIN}/#!/?url=http://{HOST}:{port}/{quoted}"
    for command in commands:
        if command.get("id") not in ALLOWED_STARTUP_COMMANDS:
            raise ValueError(f"startup command {command.get('id')!r} is not allow-listed")
    if commands:
        encoded = json.dumps(list(commands), ensure_ascii=False, separators=(",", ":"))
        # The UI reads the route's query with URL(): '+' would read as a space.
        url += "&startupCommands=" + urllib.parse.quote(encoded, safe="")
    return url


def _js_escape(text: str) -> str:
    """`text` as a JavaScript RegExp matching it literally (no flags)."""
    return "".join("\\" + c if c in r"\^$.|?*+()[]{}/" else c for c in text)


def startup_commands(trace: Path) -> list[dict[str, Any]]:
    """What makes the first view of one of our Perfetto traces useful: the trace's root,
    the first session's group, its capture and its Context group expanded, its Context
    size pinned. Names are matched by their path in the track tree (`A > B`, as the UI
    joins TrackNode.fullPath). Empty for a trace that is not ours (or a JSON trace)."""
    root: tuple[int, str] | None = None
    tracks: dict[int, tuple[str, int | None, int]] = {}  # uuid → name, parent, rank
    try:
        with trace.open("rb") as stream:
            for packet in _packets(stream):
                if _TRACK_DESCRIPTOR_TAG not in packet[:16]:
                    continue
                descriptor = pb.TracePacket.FromString(packet).track_descriptor
                parent = descriptor.parent_uuid if descriptor.HasField("parent_uuid") else None
                tracks[descriptor.uuid] = (descriptor.name, parent, descriptor.sibling_order_rank)
                if parent is None and descriptor.name.startswith("agent-profiler · "):
                    root = (descriptor.uuid, descriptor.name)
    except (OSError, ValueError):
        return []
    if root is None:
        return []
    sessions = sorted(
        (rank, uuid, name) for uuid, (name, parent, rank) in tracks.items() if parent == root[0]
    )
    if not sessions:
        return []
    first = sessions[0]
    path = [root[1], first[2]]
    capture = next((u for u, (n, p, _) in tracks.items() if p == first[1] and n == _CAPTURE), None)

    def at(*names: str) -> str:
        return "^" + " > ".join(_js_escape(n) for n in names) + "$"

    commands: list[dict[str, Any]] = [
        {"id": "dev.perfetto.ExpandTracksByRegex", "args": [at(*path[:1]), "path"]},
        {"id": "dev.perfetto.ExpandTracksByRegex", "args": [at(*path), "path"]},
    ]
    if capture is not None:
        names = {n for n, p, _ in tracks.values() if p == capture}
        commands.append(
            {"id": "dev.perfetto.ExpandTracksByRegex", "args": [at(*path, _CAPTURE), "path"]}
        )
        if "Context" in names:
            commands.append(
                {
                    "id": "dev.perfetto.ExpandTracksByRegex",
                    "args": [at(*path, _CAPTURE, "Context"), "path"],
                }
            )
        if "Context size" in names:
            commands.append(
                {
                    "id": "dev.perfetto.PinTracksByRegex",
                    "args": [at(*path, _CAPTURE, "Context size"), "path"],
                }
            )
    return commands


def _packets(stream: IO[bytes], nested: bool = False) -> Iterator[bytes]:
    """The packets of a `Trace` (field 1, length-delimited, back to back), read lazily;
    stops at the first frame that is not a packet. A compressed_packets packet is read in
    place one level down, as the writer makes them; one inside another (a crafted trace,
    nested thousands deep, was a RecursionError) is passed over."""
    while True:
        tag = stream.read(1)
        if tag != b"\x0a":
            return
        length, shift = 0, 0
        while True:
            byte = stream.read(1)
            if not byte:
                return
            length |= (byte[0] & 0x7F) << shift
            shift += 7
            if not byte[0] & 0x80:
                break
        data = stream.read(length)
        if len(data) < length:
            return
        if data[:2] == _COMPRESSED_PACKETS_TAG:
            if nested:
                continue
            # packets deflated into compressed_packets (writers/chunks.py): read in place
            inner = _inflate(data)
            if inner is None:
                return
            yield from _packets(io.BytesIO(inner), nested=True)
            continue
        yield data


def _inflate(packet: bytes) -> bytes | None:
    """The packets a compressed_packets packet holds (zlib or gzip, as Perfetto reads
    them); None when it does not inflate."""
    length, shift, at = 0, 0, len(_COMPRESSED_PACKETS_TAG)
    while at < len(packet):
        byte = packet[at]
        at += 1
        length |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    try:
        return zlib.decompress(packet[at : at + length], 32 + zlib.MAX_WBITS)
    except zlib.error:
        return None


def keep_unserved(trace: Path, name: Path) -> str:
    """What to say of a trace `open` exported to a temporary folder and did not get
    fetched (the port busy, the time up): kept as `name` in the current folder, to drag
    into the UI by hand, never over a file of that name (then said not kept)."""
    import shutil

    from agent_profiler.errors import OutputError
    from agent_profiler.outputs import write_atomically

    again = "export it with -o FILE, then drag FILE into the UI"
    if os.path.lexists(name):  # (False for a name it cannot look at: said below)
        return f"the trace is not kept: {name} exists here ({again})"

    def copy(stream: IO[bytes]) -> None:
        with trace.open("rb") as source:
            shutil.copyfileobj(source, stream, 1 << 20)

    # As any output: whole or not at all (Ctrl-C or a kill during the copy of a large
    # trace left part of it, and the next `open` said "not kept: … exists here").
    try:
        write_atomically(name, copy)
    except OutputError as error:
        return f"the trace is not kept: {error} ({again})"
    return f"the trace is kept as {name}: drag it into {UI_ORIGIN}"


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
    except FileNotFoundError as error:
        raise ServeError(f"{trace}: no such file or directory") from error
    except OSError as error:
        raise ServeError(f"{trace}: cannot read ({error.strerror})") from error
    if not data:
        # The UI would fetch it and then fail on an empty trace, far from the cause.
        raise ServeError(f"{trace}: empty file, not a trace (export it again)")
    name = trace.name
    served = False

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = REQUEST_TIMEOUT_S  # a connection that sends no request is closed

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
            # The limit was for the request: the trace may take a slow reader longer to fetch
            # (a socket's timeout bounds a whole sendall).
            self.connection.settimeout(None)
            self._headers(200, len(data))
            self.wfile.write(data)
            served = True

        def log_message(self, format: str, *args: object) -> None:
            pass  # quiet: the CLI says what matters

    try:
        # A thread per connection: a browser's spare connection that sends nothing must not
        # hold up the UI's fetch, nor the deadline.
        server = http.server.ThreadingHTTPServer((HOST, port), Handler)
        server.daemon_threads = True
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise ServeError(
                f"port {port} on {HOST} is busy (another `open` still serving?); "
                f"ui.perfetto.dev only accepts traces from {HOST}:{PORT}. Stop the other "
                f"server, or drag the trace into {UI_ORIGIN}"
            ) from error
        raise ServeError(f"cannot listen on {HOST}:{port}: {error.strerror}") from error
    with server:
        server.timeout = 0.5
        if on_ready is not None:
            on_ready(ui_url(name, server.server_address[1], startup_commands(trace)))
        deadline = time.monotonic() + timeout_s
        while not served and time.monotonic() < deadline:
            server.handle_request()
    return served
