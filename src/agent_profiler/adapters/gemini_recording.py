"""Gemini CLI's two session containers, replayed into one shape (FORMATS-gemini-opencode.md
§1.3): the ≤0.38 pretty-printed JSON document (rewritten whole on every change, so parsed
whole, and a cut-off copy salvaged message by message) and the ≥0.39 JSONL append log (the
last version of each message id wins, in first-seen order; `$set.messages` replaces the
list; `$rewindTo` truncates it), and the project folder a recording's place names.
`gemini_cli` maps the result onto the model."""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from dataclasses import field
from pathlib import Path
from typing import Any

import orjson

from agent_profiler.adapters.common import json_text, text_field, timestamp_ns
from agent_profiler.console import counted
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.jsonl import open_journal, peek, read_jsonl
from agent_profiler.records import record

MAX_DOCUMENT_BYTES = 512 * 1024 * 1024
HEADER_ID = re.compile(rb'"sessionId"\s*:\s*"([^"\\]{1,200})"')


def is_header(value: object) -> bool:
    """The header of a recording: `sessionId` and `projectHash` (no other format we
    know has `projectHash`)."""
    return (
        isinstance(value, dict)
        and text_field(value, "sessionId") is not None
        and text_field(value, "projectHash") is not None
    )


@record
class Recording:
    """One file, replayed: the header, the last version of each message, and the
    order of events (a message first seen, a `$set.messages` checkpoint, a rewind)."""

    path: Path
    header: dict[str, Any]
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[str, Any]] = field(default_factory=list)
    container: str = "json"
    # Where each message's last version is: its line (JSONL log) or 1 + its index in the
    # document's `messages` list, for warnings that name one record.
    lines: dict[str, int] = field(default_factory=dict)

    @property
    def session_id(self) -> str:
        return text_field(self.header, "sessionId") or self.path.stem

    @property
    def kind(self) -> str | None:
        return text_field(self.header, "kind")

    def first_prompt(self) -> str:
        for event, value in self.events:
            record = self.messages.get(value) if event == "message" else None
            if record is not None and text_field(record, "type") == "user":
                return "".join(text for _, text, _ in parts(record.get("content")))
        return ""

    def add(
        self, record: dict[str, Any], fallback_id: str, line: int, *, listed: bool = True
    ) -> str:
        """Keep the last version of a message; `listed` records where it was first seen
        (a checkpoint's messages are placed by the checkpoint event instead)."""
        message_id = text_field(record, "id") or fallback_id
        if listed and message_id not in self.messages:
            self.events.append(("message", message_id))
        self.messages[message_id] = record
        self.lines[message_id] = line
        return message_id

    def record_name(self, line: int) -> str | None:
        """How a warning names a message: None for a log (its `path:line` says it), else
        its place in the document's `messages` list."""
        return None if self.container == "jsonl" else f"messages[{line - 1}]"


def load_recording(path: Path, diagnostics: Diagnostics) -> Recording:
    """Read one file of either container. Raises `JournalError` for a file that holds
    no Gemini CLI session at all."""
    if path.name.endswith((".jsonl", ".jsonl.gz")) or _is_jsonl(peek(path, 64 * 1024)):
        recording = _load_jsonl(path, diagnostics)
        if recording is not None:
            return recording
    return _load_document(path, diagnostics)


BOM = b"\xef\xbb\xbf"


def _is_jsonl(head: bytes) -> bool:
    """A log (one object per line) under another name: its first line is a whole JSON
    object (a header is about 210 bytes), where a pretty-printed document's first line is
    only its opening brace."""
    line, newline, _ = head.removeprefix(BOM).lstrip().partition(b"\n")
    if not newline or line[:1] != b"{":
        return False
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _load_jsonl(path: Path, diagnostics: Diagnostics) -> Recording | None:
    source = str(path)
    recording: Recording | None = None
    for line, value in read_jsonl(path, diagnostics):
        if not isinstance(value, dict):
            diagnostics.reject(source, line, "line is not a JSON object")
            continue
        if recording is None:
            if "messages" in value and is_header(value):
                return _from_document(path, value, "json (one line)", diagnostics)
            if not is_header(value):
                # The header line was lost (the file re-created while running): go on.
                diagnostics.warn(
                    source, line, "no-header", "no session header line; id from the name"
                )
                recording = Recording(path, {}, container="jsonl")
            else:
                recording = Recording(path, dict(value), container="jsonl")
                continue
        if "$set" in value:
            update = value["$set"]
            if not isinstance(update, dict):
                diagnostics.warn(source, line, "bad-shape", "$set is not an object")
                continue
            messages = update.get("messages")
            if isinstance(messages, list):
                ids = []
                for index, message in enumerate(messages):
                    if isinstance(message, dict):
                        fallback = f"line-{line}.{index}"
                        ids.append(recording.add(message, fallback, line, listed=False))
                    else:  # never dropped without a word
                        said = f"$set.messages[{index}] is not a JSON object; not read"
                        diagnostics.warn(source, line, "bad-shape", said)
                _rewritten(recording, ids)
                recording.events.append(("checkpoint", ids))
            recording.header.update({k: v for k, v in update.items() if k != "messages"})
        elif "$rewindTo" in value:
            recording.events.append(("rewind", value["$rewindTo"]))
        elif text_field(value, "type") is not None:
            recording.add(value, f"line-{line}", line)
        else:
            diagnostics.not_recognised("gemini-cli:untyped", source, line)
    return recording


def _rewritten(recording: Recording, ids: list[str]) -> None:
    """A `$set.messages` list each of whose turns was first written just before it, one
    line each, in its order, at one moment, and with no model on its model turns, is the
    history written again: ≥0.44 `setHistory` records every turn it is given anew
    (`recordSyntheticMessage`: no model), then the list, as tool output masking does once
    a session holds about 80k tokens of tool output. Those lines are the list's turns, not
    prompts and requests of their own: they are left to the checkpoint. (A resumed
    session's list is its history as it was written, over time, its model turns with
    their model.)"""
    events, count = recording.events, len(ids)
    if count < 2 or events[-count:] != [("message", message_id) for message_id in ids]:
        return
    records = [recording.messages[message_id] for message_id in ids]
    times = [t for t in (timestamp_ns(r.get("timestamp")) for r in records) if t is not None]
    if (
        len(times) == count
        and max(times) - min(times) <= _ONE_MOMENT_NS
        and not any(r.get("type") == "gemini" and "model" in r for r in records)
    ):
        del events[-count:]


_ONE_MOMENT_NS = 1_000_000_000  # the turns `setHistory` writes again: a loop, milliseconds


def _load_document(path: Path, diagnostics: Diagnostics) -> Recording:
    source = str(path)
    try:
        with open_journal(path) as stream:
            data = stream.read(MAX_DOCUMENT_BYTES + 1)
    except JournalError:
        raise  # a damaged gzip: the guarded reader's one line, naming the file
    except (OSError, EOFError, ValueError) as error:
        raise JournalError(source, f"cannot read ({error})") from error
    if len(data) > MAX_DOCUMENT_BYTES:
        raise JournalError(source, "Gemini CLI session document over 512 MB; not read")
    diagnostics.documents_read += 1
    try:
        value = orjson.loads(data.removeprefix(b"\xef\xbb\xbf"))
    except (ValueError, RecursionError):
        return _salvage(path, data, diagnostics)
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        raise JournalError(source, "not a Gemini CLI session (no messages list)")
    # Each message is a record (a line of the ≥0.39 log): one not recognised is one record.
    diagnostics.records_parsed += max(1, len(value["messages"]))
    return _from_document(path, value, "json", diagnostics)


def _from_document(
    path: Path, value: dict[str, Any], container: str, diagnostics: Diagnostics
) -> Recording:
    header = {k: v for k, v in value.items() if k != "messages"}
    recording = Recording(path, header, container=container)
    messages = value.get("messages")
    for index, message in enumerate(messages if isinstance(messages, list) else []):
        if isinstance(message, dict):
            recording.add(message, f"message-{index}", index + 1)
        else:  # never dropped without a word
            said = f"messages[{index}] is not a JSON object; not read"
            diagnostics.reject(str(path), None, said)
    return recording


def _salvage(path: Path, data: bytes, diagnostics: Diagnostics) -> Recording:
    """A document cut short (copied while Gemini CLI rewrote it): keep the header
    fields and every complete message before the cut."""
    text = data.decode("utf-8", errors="replace")
    start = text.find('"messages"')
    bracket = text.find("[", start) if start != -1 else -1
    if bracket == -1 or HEADER_ID.search(data[:4096]) is None:
        raise JournalError(str(path), "not a Gemini CLI session (damaged JSON document)")
    header: dict[str, Any] = {}
    for key in ("sessionId", "projectHash", "startTime", "kind"):  # the ones read
        found = re.search(rf'"{key}"\s*:\s*"([^"\\]*)"', text[:start])
        if found:
            header[key] = found.group(1)
    recording = Recording(path, header, container="json (cut short)")
    decoder = json.JSONDecoder()
    position = bracket + 1
    kept = 0
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        try:
            message, position = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            break
        if not isinstance(message, dict):
            break
        recording.add(message, f"message-{kept}", kept + 1)
        kept += 1
    diagnostics.records_parsed += max(1, kept)
    diagnostics.warn(
        str(path),
        None,
        "truncated-document",
        f"JSON document cut short or damaged; the first {counted(kept, 'complete message')} kept",
    )
    return recording


# Every Part a message's `content` is known to hold (Gemini API `Part`), read or skipped on
# purpose; a Part with none of these keys is "not recognised (not read)" (issue 28).
READ, SKIPPED = "read", "skipped on purpose"
PART_KINDS: dict[str, tuple[str, str]] = {
    "text": (READ, "a user's text → User prompts (or context blocks); model text → Assistant"),
    "thought": (SKIPPED, "a text part marked `thought`: the model's thinking, not re-sent"),
    "functionResponse": (READ, "a tool result sent back → Tool results"),
    "inlineData": (READ, "an image or file inline: listed as unmeasured (media-part)"),
    "fileData": (READ, "a file by URI: listed as unmeasured (media-part)"),
    "functionCall": (READ, "a call; the message's toolCalls[] holds it (unmeasured here)"),
    "executableCode": (READ, "code the model ran: listed as unmeasured (media-part)"),
    "codeExecutionResult": (READ, "its result: listed as unmeasured (media-part)"),
    "videoMetadata": (READ, "a video's metadata: listed as unmeasured (media-part)"),
    "thoughtSignature": (READ, "a thought's signature alone: listed as unmeasured (media-part)"),
}
MEDIA_PART_KEYS = frozenset(
    {"inlineData", "fileData", "functionCall", "executableCode", "codeExecutionResult"}
    | {"videoMetadata", "thoughtSignature"}
)


def parts(content: object) -> Iterator[tuple[str, str, str]]:
    """(kind, text, call id) of message content: a string (user ≤0.27, model text) or
    a list of Parts: `text`, `functionResponse` (≥0.44 synthetic turns), else media."""
    if isinstance(content, str):
        yield "text", content, ""
        return
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        text = text_field(part, "text")
        response = part.get("functionResponse")
        if text is not None:
            if not part.get("thought"):
                yield "text", text, ""
        elif isinstance(response, dict):
            yield "result", _response_text(response), text_field(response, "id") or ""
        elif any(key in part for key in MEDIA_PART_KEYS):
            yield "media", "", ""
        else:
            # No key any Gemini Part is known to have: its keys name it in the warning.
            yield "unknown", "+".join(sorted(str(k) for k in part)) or "empty", ""


# What `@path` in a prompt adds after the typed text (atCommandProcessor, every version):
# "\n--- Content from referenced files ---", then per file "\nContent from @<path>:\n" and
# its text (or an MCP resource's), then "\n--- End of content ---". Parts of their own
# from 0.28; ≤0.27 flattens the prompt to one string that holds them.
REFERENCED = "--- Content from referenced files ---"
REFERENCED_END = "--- End of content ---"


def split_attached(text: str, inside: bool) -> tuple[str, str, bool]:
    """(typed text, attached-file text, still inside the attached block after it) of one
    text part of a user turn; `inside`: the parts before opened the block."""
    if inside:
        return "", text, REFERENCED_END not in text
    at = text.find(REFERENCED)
    if at < 0:
        return text, "", False
    cut = at - 1 if at > 0 and text[at - 1] == "\n" else at
    return text[:cut], text[cut:], REFERENCED_END not in text[at:]


def result_text(result: object) -> tuple[str, int]:
    """Text of a call's embedded `result` Parts, and how many media parts it holds."""
    texts: list[str] = []
    media = 0
    for kind, text, _ in parts(result):
        if kind in ("media", "unknown"):
            media += 1
        else:
            texts.append(text)
    return "\n".join(texts), media


def _response_text(function_response: dict[str, Any]) -> str:
    """What a tool result sent back holds: its output (or error) string, else its JSON."""
    response = function_response.get("response")
    if isinstance(response, dict) and len(response) == 1:
        only = next(iter(response.values()))
        if isinstance(only, str):
            return only
    return json_text(response)


def project_of(recording: Recording) -> str | None:
    """The project folder: `.project_root` in the project dir (≥0.29), else the home
    folder when the header's `projectHash` shows the dir is its slug, else nothing."""
    chats = next((p for p in recording.path.parents if p.name == "chats"), None)
    if chats is None:
        directories = recording.header.get("directories")
        first = directories[0] if isinstance(directories, list) and directories else None
        return first if isinstance(first, str) else None
    marker = chats.parent / ".project_root"
    try:
        return marker.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):
        return home_project(chats.parent.name, recording.header.get("projectHash"))


# Where a home folder is, by the user's name (the slug of a project at home is the name).
_HOMES = ("/home/", "/Users/", "/var/home/", "C:\\Users\\", "C:/Users/")


def home_project(folder: str, project_hash: object) -> str | None:
    """Without `.project_root` (a copied journal; ≤0.28) the project dir is a slug of the
    project folder's name, or the sha256 of its path. Gemini CLI run in the home folder
    (as every Gemini CLI session of the corpus was) makes the slug the user's name, so the
    slug is never shown. The header's `projectHash`, sha256 of the project's path in every
    version, tells that case: the home folder is returned (shown as `~`). Else nothing."""
    if not isinstance(project_hash, str) or not folder or len(folder) > 64:
        return None
    # The slug lowercases the name and writes every other character as `-`: `m09_tapan`
    # became `m09-tapan`. Each `-` is tried as `-`, `_` and `.` (up to four of them).
    pieces = folder.split("-")
    names = {folder}
    if len(pieces) <= 5:
        names |= {
            "".join(p + s for p, s in zip(pieces, (*seps, ""), strict=True))
            for seps in itertools.product("-_.", repeat=len(pieces) - 1)
        }
    homes = [prefix + name for name in sorted(names) for prefix in _HOMES]
    if folder == "root":
        homes.append("/root")
    return next(
        (home for home in homes if hashlib.sha256(home.encode()).hexdigest() == project_hash),
        None,
    )
