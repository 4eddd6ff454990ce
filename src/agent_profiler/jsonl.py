"""The one JSONL reader every journal adapter uses.

This module owns everything between a journal file on disk and a parsed JSON
value: opening (plain, gzip or zstd, told apart by magic bytes: `jsonl_open`),
deciding whether the file is a JSONL journal at all, splitting lines, decoding, and
turning every per-line problem into a `Diagnostics` warning instead of an exception.

What it promises:

* Streaming: the file is read line by line from a binary file object, so memory
  is bounded by the longest line, and a journal still being written (or a pipe)
  yields records as they arrive.
* Lines are split on `\\n` only. `str.splitlines` would also split on U+2028,
  U+2029 and U+0085, which are legal inside JSON strings. A trailing `\\r` is
  dropped (CRLF files); blank lines are skipped but keep their line numbers.
* A line without its `\\n` is the last one read, as the file is at that moment: a
  harness may write a line in two pieces, and the rest, landing after the read met the
  end, is not a line of its own. A cut JSON line is one "truncated-last-line" warning.
* A file that is not a journal at all (UTF-16, binary, prose) raises
  `JournalError` before anything is yielded. A journal with a few bad lines is
  still a journal: each bad line is one warning and reading goes on.

What a record *means* is left to the adapters: `Record.value` is whatever
`orjson.loads` returned.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Generator, Iterator
from typing import BinaryIO, NamedTuple, cast

import orjson

from agent_profiler.diagnostics import Diagnostics
from agent_profiler.errors import JournalError
from agent_profiler.jsonl_open import (
    HEAD_BYTES,
    READ_ERRORS,
    Guarded,
    Stream,
    compression,
    damage,
    open_stream,
    position_of,
    reason,
)
from agent_profiler.scan import LineScan, Told

UTF8_BOM = b"\xef\xbb\xbf"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # also the start of UTF-32 LE; same advice applies

# How many non-blank lines may fail to parse before a file is judged "not a
# journal". Generous on purpose: `claude -p` output with stderr merged in can
# start with a few `[DEBUG]` lines before the first JSON frame.
PROBE_LINES = 50

# A head at least this long without a newline, not starting like JSON, is one
# enormous non-JSON line: refuse it rather than read it whole into memory.
NO_NEWLINE_LIMIT = 8 * 1024

UTF16_MESSAGE = "UTF-16 text; re-save as UTF-8 (e.g. PowerShell: Out-File -Encoding utf8)"
NOT_JOURNAL_MESSAGE = "not a JSONL journal (first line is not JSON)"
TRUNCATED_MESSAGE = (
    "last line is incomplete (no newline at the end; the journal may still be being written)"
)
BAD_UTF8_MESSAGE = (
    "invalid UTF-8 bytes replaced with U+FFFD (first occurrence; later ones not reported)"
)

# Everything a parse or a decompression may raise that means "bad input", not
# "bug": orjson.JSONDecodeError is a ValueError; the other two are cheap insurance.
_PARSE_ERRORS = (ValueError, RecursionError, OverflowError)
# An escaped high surrogate not followed by an escaped low one, or a low one not
# preceded by a high one (case-insensitive hex, as JSON allows).
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
_JSON_OPENERS = (b"{", b"[")

# How far into a line `LineSkip` looks for the record's type: a Claude Code record names it
# after a few short fields (at byte 200–300); further in, the line is parsed as any other.
SKIP_WINDOW = 1024


class LineSkip:
    """Lines of one record type a reader may leave unparsed (the bulk of a transcript,
    Claude Code's `progress` records, 40% of its bytes and 70% of its lines): told by
    their bytes before `orjson.loads`, and yielded as those bytes.

    A line is such a record when `,"type":"<kind>",` is in its first `SKIP_WINDOW` bytes
    with no `{` or `[` between the line's opening `{` and it. In valid JSON that is the
    top-level key: every quote of the pattern is unescaped (each follows a character that
    is not a backslash), so `"type"` and `"<kind>"` are a key and its value, and no object
    or array opened before them. A `{` or `[` inside an earlier string only makes the test
    say no.

    Such a line is not parsed, so not checked to be valid JSON; what a damaged journal
    most often holds is checked, by its bytes: a record torn and another written after it
    on the same line (`key`, a key every record has before its type, is found after the
    type: that line is parsed, and said to be no JSON, as ever), or a line cut short (it
    must end with `}`). A line damaged inside a skipped record's fields
    loses nothing but the `not-json` warning its record, read no further, would have had.

    A line holding any of the byte strings `unless` anywhere is parsed: such a record may
    matter after all (`"message":` is a key wherever it is found, as quotes inside a
    string are escaped).

    `active` is the reader's to switch: while it needs to see these records (a /context
    run awaits its output, the span's first time is not known yet), it sets it False and
    they are parsed as any other.

    `told`: what the reader asks a scanning helper to work out of other lines, where one
    runs (scan.py `Told`)."""

    __slots__ = ("active", "key", "marker", "told", "unless")

    def __init__(
        self, kind: str, key: str, unless: tuple[bytes, ...] = (), told: Told | None = None
    ) -> None:
        self.marker = b',"type":' + orjson.dumps(kind) + b","
        self.key = orjson.dumps(key) + b":"
        self.unless = unless
        self.active = False
        self.told = told

    def matches(self, raw: bytes) -> bool:
        # Run on most lines of a transcript, so in the forms that cost least in CPython
        # 3.11: a byte looked for as an int (`123 in head`; a bytes operand of `in` is
        # first tried as an int, its TypeError made and dropped), one slice for the head
        # rather than two bounded `find`s, the end's bytes compared rather than `endswith`
        # (both parse their arguments the generic way, PyArg_ParseTuple).
        at = raw.find(self.marker, 0, SKIP_WINDOW)
        if at < 0 or raw[0] != 123:
            return False  # (at 0 the line starts with a comma: raw[0] is not "{")
        head = raw[1:at]
        if 123 in head or 91 in head:  # a "{" or "[" before the type: not the record's
            return False
        if raw.find(self.key, at) >= 0 or (raw[-2:] != b"}\n" and raw[-3:] != b"}\r\n"):
            return False  # another record glued on, or the line cut short: parsed, said
        for part in self.unless:  # noqa: SIM110  (a generator for all() costs more here)
            if raw.find(part) >= 0:
                return False
        return True


class Record(NamedTuple):
    """One parsed line of a journal. (A named tuple, not a frozen dataclass: one is made
    for every line, and a frozen dataclass's __init__ cost as much as the line's
    orjson.loads.)"""

    line: int  # 1-based line number in the (decompressed) file
    value: object  # whatever orjson.loads returned; adapters check the shape


def read_jsonl(
    path: str | os.PathLike[str], diagnostics: Diagnostics, skip: LineSkip | None = None
) -> Generator[tuple[int, object], None, None]:
    """Yield `(line, value)` for every parseable non-blank line of a journal, in file
    order: plain pairs shaped as `Record` (a named tuple is made through a Python-level
    `__new__`, a pair is not).

    Raises `JournalError` if the file cannot be opened, is UTF-16, or is not a
    JSONL journal at all; being a generator, it raises on the first `next()`,
    before any record is yielded. Every other problem is a warning
    in `diagnostics` and costs at most one line: "not-json", "bad-utf8" (once per
    file), "truncated-last-line", "bad-gzip" / "read-error" (reading stops, the
    records read so far are kept; a damaged zstd stream is a "read-error" that says so).

    With `skip`, a line it matches while it is active is yielded as its bytes, unparsed,
    and counted as a record (its reader counts it as skipped).
    """
    name = os.fspath(path)
    with open_stream(name) as stream:
        position = position_of(stream)
        progress = diagnostics.on_progress
        size = _size(name) if progress is not None else 0
        journal = _Journal(name, stream)
        loads = orjson.loads
        readline = stream.readline
        # The outcomes of the careful way: the probe, then each line that did not parse as
        # it is, and the end.
        outcomes: list[Record | _Outcome] = journal.probe()
        # A long plain file's skippable lines told by a helper on another core (scan.py).
        scan = LineScan.start(stream, skip) if skip is not None else None
        try:
            while True:
                for outcome in outcomes:
                    if isinstance(outcome, Record) or outcome.counted:
                        diagnostics.lines_read += 1
                        if progress is not None and diagnostics.lines_read % 2000 == 0:
                            progress(name, position(), size)
                    if isinstance(outcome, Record):
                        diagnostics.records_parsed += 1
                        yield outcome.line, outcome.value
                    else:
                        diagnostics.warn(name, outcome.line, outcome.kind, outcome.message)
                if journal.ended:
                    return
                # Every other line, in this one loop (`_Journal.outcomes` line by line,
                # without two generators and a `Record` per line between the file and the
                # adapter: 4% of reading a Codex rollout). Only reading a line may raise a
                # read error. Its records are counted here and added to `diagnostics` when
                # the loop ends, however it ends (nothing reads the counts while a file is
                # being read).
                number = journal.number
                parsed = 0
                try:
                    while True:
                        try:
                            raw = readline()
                        except READ_ERRORS as error:
                            journal.number = number
                            journal.failed(error)
                            outcomes = journal.finish()
                            break
                        if not raw:
                            journal.ended = True
                            outcomes = []
                            break
                        number += 1
                        if raw[-1] != 10:  # no "\n": the last line there is (`careful`)
                            journal.number = number
                            outcomes = journal.careful(raw)
                            break
                        if (
                            scan.matches(number, raw)  # (it asks `skip.active` itself)
                            if scan is not None
                            else skip is not None and skip.active and skip.matches(raw)
                        ):
                            value: object = raw
                        else:
                            try:
                                value = loads(raw)  # `_Journal.line`'s first try (not line 1)
                            except _PARSE_ERRORS:
                                journal.number = number
                                outcomes = journal.careful(raw)
                                break
                        parsed += 1
                        if progress is not None and (diagnostics.lines_read + parsed) % 2000 == 0:
                            progress(name, position(), size)
                        yield number, value
                finally:
                    diagnostics.lines_read += parsed
                    diagnostics.records_parsed += parsed
        finally:
            if scan is not None:
                scan.close()


def open_journal(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a journal for binary reading, decompressing it if it is gzip or zstd.

    Both are recognised by their magic bytes, not the suffix: people rename files.
    Raises `JournalError` when the file cannot be opened (missing, a directory,
    permission denied; a zstd file on a Python without a zstd decompressor). Reading
    the stream raises `DamagedJournalError` (a `JournalError` and an `OSError`) for a
    damaged gzip or zstd stream, never `EOFError` or `zlib.error`: this is the guarded
    reader for adapters that look at raw bytes.
    """
    name = os.fspath(path)
    return cast(BinaryIO, io.BufferedReader(Guarded(name, open_stream(name)), HEAD_BYTES))


def read_head(path: str | os.PathLike[str], size: int = HEAD_BYTES) -> bytes:
    """The first `size` bytes of a journal, decompressed if need be, for an adapter
    that must look at raw bytes (a JSON array is no JSONL). Raises `JournalError` for a
    file that cannot be opened and for a compressed stream too damaged to give even
    its head: a truncated or corrupt gzip raises `EOFError` or `zlib.error`, which are
    neither `OSError` nor ours, and once escaped they ended the whole run."""
    with open_journal(path) as stream:
        return stream.read(size)


def peek(path: str | os.PathLike[str], size: int = 4096) -> bytes:
    """The first `size` bytes of a file, decompressed if need be, or b"" when it cannot
    give them: for a sniffer, to which a file it cannot read is not of its format."""
    try:
        return read_head(path, size)
    except (JournalError, OSError, EOFError, ValueError):
        return b""


def is_json(line: bytes) -> bool:
    """Whether these bytes are one JSON value (a line of a journal, said why it gave none)."""
    try:
        orjson.loads(line)
    except _PARSE_ERRORS:
        return False
    return True


def sniff(path: str | os.PathLike[str], max_lines: int = 50) -> list[object]:
    """The parsed values among the first `max_lines` non-blank lines, for auto-detection.

    Bad lines are simply left out (never raises for them). Raises `JournalError`
    for what `read_jsonl` would refuse (unreadable, UTF-16, not a journal) and for
    a compressed stream so corrupt that not one value could be read.
    """
    return list(head_values(path, max_lines))


def head_values(path: str | os.PathLike[str], max_lines: int = 50) -> Generator[object, None, None]:
    """`sniff`'s values one at a time, read as they are asked for: a caller that has what
    it needs stops (and closes it) before the rest of the head is parsed."""
    name = os.fspath(path)
    given = False
    seen = 0
    with open_stream(name) as stream:
        for outcome in _Journal(name, stream).outcomes():
            if isinstance(outcome, Record):
                seen += 1
                if seen > max_lines:
                    break
                given = True
                yield outcome.value
                continue
            if outcome.counted:
                seen += 1
                if seen > max_lines:
                    break
            if outcome.kind in {"bad-gzip", "read-error"} and not given:
                raise JournalError(name, outcome.message)


def json_document(path: str | os.PathLike[str]) -> str | None:
    """Name a pretty-printed JSON document that no adapter claims for what it is (the
    loader asks, for a file that is not JSONL)."""
    try:
        if os.stat(path).st_size > 64 * 1024 * 1024:
            return None
        with open(path, "rb") as stream:
            orjson.loads(stream.read())
    except (OSError, ValueError):
        return None
    return "one JSON document, not a JSONL journal (one JSON object per line)"


# --- internals ---------------------------------------------------------------------------


class _Outcome(NamedTuple):
    """A line that could not be read (or an event of the file, `counted=False`): a line
    that parsed is its `Record` (`_Journal._lines`)."""

    line: int | None
    kind: str  # the warning kind
    message: str
    counted: bool = True  # a non-blank line, for Diagnostics.lines_read


def _is_container(outcome: Record | _Outcome) -> bool:
    return isinstance(outcome, Record) and isinstance(outcome.value, dict | list)


class _Journal:
    """One open journal: the head checks, the probe, then the outcome of each line.

    Reading a line (`readline`) and judging it (`line`) are apart, so that `read_jsonl`
    can run the common case (a line that parses as it is) in its own loop and hand
    only the other lines to `careful`."""

    def __init__(self, name: str, stream: Stream) -> None:
        self.name = name
        self.stream = stream
        self.compression = compression(stream)
        self.head = b""
        self.number = 0  # lines read so far (the 1-based number of the last one)
        self.ended = False  # no line is left to read (the end, or a read failure)
        self.failure: _Outcome | None = None  # a read failure, reported once at the end
        self.warned_utf8 = False
        try:
            self.head = stream.peek(HEAD_BYTES)[:HEAD_BYTES]
        except READ_ERRORS as error:
            # Reported as the first (and only) outcome: a compressed stream that failed
            # once is in no state to be read again.
            self.ended = True
            self.failure = self._read_failure(self._read_error_message(error, 0))

    def outcomes(self) -> Iterator[Record | _Outcome]:
        """The head checks, then the probe, then every line outcome in order."""
        yield from self.probe()
        while raw := self.readline():
            yield from self.line(raw)
        yield from self.finish()

    def probe(self) -> list[Record | _Outcome]:
        """The head checks, then the outcomes of the first lines: up to the first JSON
        object or array, or `PROBE_LINES` non-blank lines. Held back (warnings included)
        until the file is known to be a journal, so a refused file leaves no stray
        warnings behind; raises `JournalError` for one that is not."""
        self._check_head()
        probe: list[Record | _Outcome] = []
        non_blank = 0
        # Line by line: of a line's outcomes only the last can be a record or counted
        # (a "bad-utf8" note comes before its line's record or warning).
        while non_blank < PROBE_LINES:
            raw = self.readline()
            if not raw:
                probe += self.finish()
                break
            outcomes = self.line(raw)
            probe += outcomes
            if outcomes and _is_container(outcomes[-1]):
                break
            non_blank += sum(1 for o in outcomes if isinstance(o, Record) or o.counted)
        self._check_probe(probe)
        return probe

    def readline(self) -> bytes:
        """The next line with its `\\n` (b"" when none is left). Reading a binary file
        object by lines splits on b"\\n" only and reads one line at a time: the
        streaming and splitting rules in one."""
        if self.ended:
            return b""
        try:
            raw = self.stream.readline()
        except READ_ERRORS as error:
            self.failed(error)
            return b""
        if not raw:
            self.ended = True
        return raw

    def failed(self, error: BaseException) -> None:
        """Reading the line after line `number` failed: nothing more can be read."""
        self.ended = True
        self.failure = self._read_failure(self._read_error_message(error, self.number))

    def finish(self) -> list[Record | _Outcome]:
        """What the end of the lines leaves to report: the read failure, once."""
        failure, self.failure = self.failure, None
        return [failure] if failure is not None else []

    def line(self, raw: bytes) -> list[Record | _Outcome]:
        """The outcomes of the next line (`raw`, as read)."""
        self.number += 1
        if self.number > 1 and raw.endswith(b"\n"):
            # Most lines: JSON followed by its "\n" (and a CRLF "\r"), which JSON reads
            # as trailing whitespace, so `raw` parses as its body would. A line that does
            # not parse, and the last line (no "\n"), take the careful way.
            try:
                return [Record(self.number, orjson.loads(raw))]
            except _PARSE_ERRORS:
                pass
        return self.careful(raw)

    def careful(self, raw: bytes) -> list[Record | _Outcome]:
        """The outcomes of line `number` read the careful way: its "\\n", a CRLF "\\r" and
        (on line 1) a BOM taken off, blank lines skipped, bad UTF-8 and lone escaped
        surrogates replaced, a cut-off last line told from one that is not JSON."""
        number = self.number
        loads = orjson.loads
        complete = raw.endswith(b"\n")
        if not complete:
            # The end of the file, as it is now: a line without its "\n" is the last one.
            # A writer may write a line in two pieces, the second landing after this
            # read: read on, the rest of the line was a line of its own ("not JSON"), and
            # every later line number one too high.
            self.ended = True
        body = _clean(raw, number == 1)
        if not body or body.isspace():
            return []
        outcomes: list[Record | _Outcome] = []
        try:
            return [Record(number, loads(body))]
        except _PARSE_ERRORS as error:
            # Without its traceback: that holds this frame, which holds the error, a cycle
            # that kept each bad line's bytes until a collection (none runs where the
            # console script reads its last group: collector.none_for_the_last).
            failure: BaseException = error.with_traceback(None)
        text: bytes | str = body
        if not body.isascii():
            try:
                body.decode("utf-8")
            except UnicodeDecodeError:
                # orjson refuses invalid UTF-8 outright, so replace the bad bytes
                # and parse again. One warning per file: a legacy-encoded file has
                # such bytes on many lines, and a warning each would drown the rest.
                if not self.warned_utf8:
                    self.warned_utf8 = True
                    outcomes.append(_Outcome(number, "bad-utf8", BAD_UTF8_MESSAGE, counted=False))
                text = body.decode("utf-8", errors="replace")
        if text is body and b"\\u" in body and _LONE_SURROGATE.search(body):
            # JavaScript's JSON.stringify writes a split emoji (a cut tool output)
            # as an escaped lone surrogate, which orjson rejects: replace it with
            # U+FFFD rather than lose the whole record.
            text = _LONE_SURROGATE.sub(rb"\\ufffd", body)
        if text is not body:
            try:
                outcomes.append(Record(number, loads(text)))
                return outcomes
            except _PARSE_ERRORS as error:
                failure = error.with_traceback(None)
        # Only a cut-off *JSON* line is a record still being written; a last
        # line of plain text (a crash message) is just not JSON.
        if not complete and body.lstrip()[:1] in _JSON_OPENERS:
            outcomes.append(_Outcome(number, "truncated-last-line", TRUNCATED_MESSAGE))
        else:
            outcomes.append(_Outcome(number, "not-json", f"not JSON ({reason(failure)})"))
        return outcomes

    def _check_head(self) -> None:
        head = self.head
        if head.startswith(UTF16_BOMS) or _looks_utf16(head):
            raise JournalError(self.name, UTF16_MESSAGE)
        nul = head.find(b"\x00")
        if nul != -1:
            # Raw NUL is never valid in JSON text: binary, unless complete JSON
            # lines come first (a journal with a NUL-filled block after a crash).
            complete = head[:nul].split(b"\n")[:-1]
            if not any(
                _parses_as_container(_clean(line, i == 0)) for i, line in enumerate(complete)
            ):
                raise JournalError(self.name, NOT_JOURNAL_MESSAGE, line=_first_non_blank(head, nul))
        if b"\n" not in head and len(head) >= NO_NEWLINE_LIMIT:
            start = head.removeprefix(UTF8_BOM).lstrip()[:1]
            if start and start not in _JSON_OPENERS:
                raise JournalError(self.name, NOT_JOURNAL_MESSAGE, line=1)

    def _check_probe(self, probe: list[Record | _Outcome]) -> None:
        if any(_is_container(o) for o in probe):
            return
        counted = [o for o in probe if isinstance(o, Record) or o.counted]
        if not counted:
            return  # empty, or unreadable from the start (that warning is in the probe)
        last = counted[-1]
        if isinstance(last, _Outcome) and last.kind == "truncated-last-line":
            return  # a journal whose first record is still being written
        raise JournalError(self.name, NOT_JOURNAL_MESSAGE, line=counted[0].line)

    def _read_error_message(self, error: BaseException, last_line: int) -> str:
        what = damage(self.compression)
        if not last_line:
            return f"{what} at the start ({reason(error)}); nothing in it could be read"
        return f"{what} after line {last_line} ({reason(error)}); records before it are kept"

    def _read_failure(self, message: str) -> _Outcome:
        kind = "bad-gzip" if self.compression == "gzip" else "read-error"
        return _Outcome(None, kind, message, counted=False)


def _clean(raw: bytes, first: bool) -> bytes:
    """The line without its `\\n`, a CRLF `\\r`, and (on line 1) a UTF-8 BOM."""
    body = raw[:-1] if raw.endswith(b"\n") else raw
    if body.endswith(b"\r"):
        body = body[:-1]
    if first:
        body = body.removeprefix(UTF8_BOM)
    return body


def _parses_as_container(body: bytes) -> bool:
    try:
        return isinstance(orjson.loads(body), dict | list)
    except _PARSE_ERRORS:
        return False


def _looks_utf16(head: bytes) -> bool:
    """UTF-16 without a BOM: the first non-empty line has NUL in every other byte
    (the high byte of ASCII characters) and something else in between."""
    sample = next((part for part in head.split(b"\n", 8) if part), b"")[:256]
    if len(sample) < 2:
        return False
    even, odd = sample[0::2], sample[1::2]
    return (not odd.strip(b"\x00") and bool(even.strip(b"\x00"))) or (
        not even.strip(b"\x00") and bool(odd.strip(b"\x00"))
    )


def _first_non_blank(head: bytes, end: int) -> int:
    """1-based number of the first non-blank line starting before `end`."""
    lines = head[:end].split(b"\n")
    for index, line in enumerate(lines):
        body = _clean(line, index == 0)
        if body and not body.isspace():
            return index + 1
    return len(lines)


def _size(name: str) -> int:
    """The file's size for the progress line; 0 (no total shown) when it is gone since it
    was opened: an `OSError` here ended the read with an internal error naming the file's
    absolute path."""
    try:
        return os.path.getsize(name)
    except OSError:
        return 0
