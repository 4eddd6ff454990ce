"""Small helpers every adapter shares: timestamps, token counts, previews, and the
per-file clock that keeps going when a record has no readable time."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import orjson

from agent_profiler.console import counted
from agent_profiler.diagnostics import LATER, Diagnostics, journal_name
from agent_profiler.digest import blake2b
from agent_profiler.errors import DamagedJournalError, JournalError
from agent_profiler.jsonl import head_values, read_head
from agent_profiler.model import Response, ToolCall
from agent_profiler.privacy import private_path as private_path  # re-exported for adapters

PREVIEW_CHARS = 200
MS = 1_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_fromisoformat = datetime.fromisoformat


def timestamp_ns(value: object) -> int | None:
    """ISO-8601 (with `Z` or an offset; naive means UTC) → epoch nanoseconds."""
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    ns = (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000
    # Perfetto timestamps are unsigned 64-bit; before 1970 or past 2262 is unusable.
    return ns if 0 <= ns < 2**63 else None


# Beyond 10^15 a "token count" is damage, and would not fit a trace's integers.
TOKEN_LIMIT = 10**15


def token_count(value: object) -> int:
    """A token count from a journal: a non-negative integer; anything else counts as 0.
    Where every record asks it several times, `v if type(v) is int and 0 <= v < TOKEN_LIMIT
    else token_count(v)` is the same without a call for a valid count."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < TOKEN_LIMIT:
        return value
    return 0


def bad_counts(usage: Mapping[str, object], keys: Iterable[str] | None = None) -> list[str]:
    """The keys of a usage record (`keys` of it, else all) whose value is there but is no
    token count (negative, a string, a fraction): `token_count` reads each as 0, which a
    warning must say. `null` is a count not given, as an absent key is: not bad."""
    return [
        key
        for key in (usage if keys is None else keys)
        if (value := usage.get(key)) is not None
        and not (type(value) is int and 0 <= value < TOKEN_LIMIT)
    ]


def warn_bad_usage(
    diagnostics: Diagnostics,
    path: str,
    line: int | None,
    usage: Mapping[str, object],
    bad: list[str],
    name: str = "usage",
) -> None:
    """The `bad-usage` warning for a record whose `bad` keys are no token counts: one per
    record, the file's first listed (`Diagnostics.warn_each`); the value shown capped and
    escaped (`journal_name`), quoted when it is a string."""
    value = usage[bad[0]]
    shown = f"'{journal_name(value)}'" if isinstance(value, str) else journal_name(value)
    diagnostics.warn_each(
        path,
        line,
        "bad-usage",
        f"{name} {', '.join(bad)} not a token count ({shown}); counted as 0",
    )


def json_text(value: object) -> str:
    """Compact JSON of a journal value, for sizes and previews. orjson writes at
    most 255 levels of nesting though it reads 1024; deeper values are measured
    by their repr instead of failing the export."""
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def turn_ends(responses: Iterable[Response], tools: Iterable[ToolCall]) -> dict[str, int]:
    """A user turn lasts until the last response or tool call it started has ended:
    prompt id → that end."""
    ends: dict[str, int] = {}
    for prompt_id, end in [(r.prompt_id, r.end_ns) for r in responses] + [
        (t.prompt_id, t.end_ns) for t in tools
    ]:
        if prompt_id is not None:
            ends[prompt_id] = max(ends.get(prompt_id, 0), end)
    return ends


def text_field(record: Mapping[str, object], key: str) -> str | None:
    """A string field of a record, or None: a list or dict where a string belongs
    (a damaged record) must not reach a set lookup or a format string."""
    value = record.get(key)
    return value if isinstance(value, str) else None


def preview(text: str) -> str:
    return text[:PREVIEW_CHARS]


def is_damaged_gzip(path: Path) -> bool:
    """A gzip too damaged to give even its head. A folder walk judges a `.json.gz` by its
    head (an OpenCode export, a Gemini CLI document); without one it would be passed over
    in silence, so such a file is read, and the loader names it and its damage once."""
    try:
        read_head(path, 4096)
    except DamagedJournalError:
        return True
    except JournalError:
        return False
    return False


_ARGS_HASHER = blake2b(digest_size=8)  # copied for each digest (args_digest)


def args_digest(arguments: object) -> str:
    """A short stable hash of a tool call's full input (key order ignored), so that
    identical calls can be recognised without keeping their bodies."""
    try:
        encoded = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        encoded = repr(arguments).encode()
    # A copy of an empty 8-byte state, not a new hasher: the constructor's keywords are
    # parsed at each call (a third of this function, once per tool call).
    digest = _ARGS_HASHER.copy()
    digest.update(encoded)
    return digest.hexdigest()


# A record dated before this is damage (no coding agent wrote journals in the 1990s, and a
# zeroed clock says 1970): never a session's start.
EARLIEST_NS = 946_684_800 * 1_000_000_000  # 2000-01-01T00:00:00Z
# How far one record may jump from the record before it and still be believed. Backwards by
# more than a day is a clock that lies (records are appended in order; a few seconds back
# is normal, e.g. Claude Code's /context markdown record); forwards by more than a year too
# (a session resumed after a holiday is still believed).
BACKWARD_LIMIT_NS = 86_400 * 1_000_000_000
FORWARD_LIMIT_NS = 365 * 86_400 * 1_000_000_000
_DAY_NS = 86_400 * 1_000_000_000
_BACKWARD_FLOOR_NS = -BACKWARD_LIMIT_NS


def is_plausible_time(ts: int) -> bool:
    return ts >= EARLIEST_NS


class Clock:
    """Record times for one file. A record without a readable time is placed 1 ms
    after the previous one; when times are expected, that is a warning each (the first
    listed, the others counted).

    A record dated far from its neighbours (the Unix epoch, years away, a day or more
    backwards) would stretch its session over decades: it is warned about with its
    `path:line` and placed 1 ms after the previous record instead. Two records in a row
    that agree on the new time are a real jump (the machine's clock was changed, a session
    resumed much later), and the clock follows them. This is the one outlier rule every
    adapter uses.

    `spacing(line)`, when given, is the step for an undated record in ns (a synthetic
    timeline built from the journal's own durations) instead of 1 ms.

    `record_name(line)`, when given, names a record of a file that has no lines to number
    (a JSON document's `messages[6]`, a database row): the warning then says
    `path: messages[6]: …` instead of `path:line: …`. Adapters whose times are not ISO
    `timestamp` fields hand them to `place` in nanoseconds."""

    def __init__(
        self,
        path: str,
        diagnostics: Diagnostics,
        *,
        expect_timestamps: bool,
        origin_ns: int | None = None,
        spacing: Callable[[int], int] | None = None,
        reference_ns: int | None = None,
        record_name: Callable[[int], str] | None = None,
    ) -> None:
        self.path = path
        self.diagnostics = diagnostics
        self.expect_timestamps = expect_timestamps
        self.origin_ns = origin_ns  # where undated records before the first dated one go
        self.spacing = spacing
        self.last: int | None = None
        self.seen_timestamp = False
        self.warned = False
        self.outliers = 0
        # What the first dated record is judged against: the median of the head's first
        # three times (its neighbours), so a lie on line 1 (2099) is not the session's start.
        self.reference_ns = reference_ns
        self._rejected: int | None = None  # the last outlier's own time, to spot a real jump
        self.record_name = record_name

    def time(self, record: Mapping[str, object], line: int) -> int:
        value = record.get("timestamp")
        ts: int | None
        if type(value) is str:
            # `timestamp_ns`, inline for a time with its zone (once a line of every
            # journal; a naive or unreadable one takes the function).
            try:
                moment = _fromisoformat(value)
            except ValueError:
                moment = None
            if moment is not None and moment.tzinfo is not None:
                delta = moment - _EPOCH
                ns = (
                    delta.days * 86_400 + delta.seconds
                ) * 1_000_000_000 + delta.microseconds * 1_000
                ts = ns if 0 <= ns < 2**63 else None
            else:
                ts = timestamp_ns(value)
        else:
            ts = timestamp_ns(value)
        if (
            ts is not None
            and self.seen_timestamp  # (then `last` is a time: `place` set it)
            and ts >= EARLIEST_NS
            and _BACKWARD_FLOOR_NS <= ts - self.last <= FORWARD_LIMIT_NS  # type: ignore[operator]
        ):
            # Nearly every record: dated, near the one before it. `place` in short.
            self._rejected = None
            self.last = ts
            return ts
        return self.place(ts, line)

    def neighbour(self) -> int | None:
        """What a record read now is judged against: the last record's time, or before any
        dated record the reference (the median of the head's first times)."""
        return self.last if self.seen_timestamp else self.reference_ns

    def place(self, ts: int | None, line: int) -> int:
        """A record's time in ns (None: it has none) → where the session puts it."""
        outlier = ts is not None and self._is_outlier(ts, line)
        if outlier:
            ts = None
        elif ts is not None:
            self._rejected = None
        if ts is None:
            if self.expect_timestamps and not outlier:
                self._undated(line)
            step = self.spacing(line) if self.spacing is not None else MS
            if self.last is not None:
                ts = self.last + step
            else:
                ts = self.origin_ns if self.origin_ns is not None else 0
        else:
            self.seen_timestamp = True
        self.last = ts
        return ts

    def _undated(self, line: int) -> None:
        """A record without a readable time: each one is a warning, the file's first
        listed with its place and the others counted (`Diagnostics.warn_again`)."""
        if self.warned:
            self.diagnostics.warn_again("bad-timestamp")
            return
        self.warned = True
        self._warn(
            line,
            "bad-timestamp",
            "missing or unreadable timestamp; placed 1 ms after the previous record (the "
            f"first in this file; {LATER})",
        )

    def _is_outlier(self, ts: int, line: int) -> bool:
        previous = self.neighbour()
        if ts >= EARLIEST_NS:
            if previous is None:
                return False
            if -BACKWARD_LIMIT_NS <= ts - previous <= FORWARD_LIMIT_NS:
                return False
            if self._rejected is not None and abs(ts - self._rejected) <= _DAY_NS:
                return False  # the second record in a row at the new time: a real jump
        self._rejected = ts
        self.outliers += 1
        if previous is None:
            where = "before 2000, so not a real time"
        elif not self.seen_timestamp:
            days = (ts - previous) / _DAY_NS
            where = f"{counted(round(abs(days)), 'day')} from the times around it"
        else:
            days = (ts - previous) / _DAY_NS
            where = (
                f"{counted(round(abs(days)), 'day')} {'after' if days > 0 else 'before'} "
                "the record before it"
            )
        self._warn(
            line,
            "time-outlier",
            f"timestamp {record_time_text(ts)} is {where}; placed just after that record",
        )
        return True

    def _warn(self, line: int, kind: str, message: str) -> None:
        if self.record_name is None:
            self.diagnostics.warn(self.path, line, kind, message)
        else:
            self.diagnostics.warn(self.path, None, kind, f"{self.record_name(line)}: {message}")


def reference_time(times: Iterable[int | None]) -> int | None:
    """What a lying first record is judged against: the median of the first three
    plausible times (its neighbours), so a lie on line 1 (2099) is not the start."""
    dated = [ts for ts in times if ts is not None and is_plausible_time(ts)][:3]
    return sorted(dated)[len(dated) // 2] if dated else None


def within_limits(ts: int, reference_ns: int | None) -> bool:
    """A time the outlier rule would believe beside `reference_ns` (a call's end beside
    its request's start): within a day back and a year ahead, and after 2000."""
    return is_plausible_time(ts) and _near(ts, reference_ns)


def believed_times(*stamps: tuple[object, int | None]) -> list[int]:
    """The times (ns) of raw ISO `timestamp` values, each with the neighbour it is judged
    against (`Clock.neighbour()` where it was read), that the outlier rule believes: a
    record read no further may widen its session's span, never by a lie (1970, 2099)."""
    believed = []
    for value, near in stamps:
        ts = timestamp_ns(value)
        if ts is not None and within_limits(ts, near):
            believed.append(ts)
    return believed


def _near(ts: int, reference_ns: int | None) -> bool:
    """Within the outlier limits of the reference (always, without one)."""
    return reference_ns is None or -BACKWARD_LIMIT_NS <= ts - reference_ns <= FORWARD_LIMIT_NS


def record_time_text(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1e9, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def journal_clock(path: Path, diagnostics: Diagnostics, source: str | None = None) -> Clock:
    """The clock of a journal whose records carry ISO `timestamp`s: undated records before
    the first dated one go just before it, and the median of the first three times is what
    a lying first record is judged against. Reads the head through the guarded reader, up
    to its third plausible time: the median of the first three is the reference, and the
    origin is found at it or before it (`clock_origin`), so the rest of the head (50
    records, tool outputs among them) changes neither. Without three, the whole head."""
    head: list[object] = []
    dated = 0
    with closing(head_values(path)) as values:
        for value in values:
            head.append(value)
            if isinstance(value, dict):
                ts = timestamp_ns(value.get("timestamp"))
                if ts is not None and is_plausible_time(ts):
                    dated += 1
                    if dated == 3:
                        break
    reference = reference_time(
        timestamp_ns(value.get("timestamp")) for value in head if isinstance(value, dict)
    )
    return Clock(
        source or str(path),
        diagnostics,
        expect_timestamps=True,
        origin_ns=clock_origin(head, path, reference),
        reference_ns=reference,
    )


def clock_origin(values: Iterable[object], path: Path, reference_ns: int | None = None) -> int:
    """Where records without a time that come before the first dated one are placed:
    1 ms apart, ending 1 ms before the first timestamp. With no timestamp at all,
    the records end at the file's modification time (when it was last written)."""
    count = 0
    for index, value in enumerate(values):
        count = index + 1
        if isinstance(value, dict):
            ts = timestamp_ns(value.get("timestamp"))
            if ts is not None and is_plausible_time(ts) and _near(ts, reference_ns):
                return max(0, ts - index * MS)
    try:
        modified = path.stat().st_mtime_ns
    except OSError:
        modified = 0
    return max(0, modified - count * MS)


def recorded_usd(value: object, *keys: str) -> float | None:
    """A cost the harness recorded, found under `keys` (`usage.cost.total`): a finite
    number ≥ 0, else None (absent, or not a cost)."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    # (int, float), not int | float: the union was made anew at each call (every Pi request)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9:
        return float(value)  # (NaN and infinity fail the range)
    return None


_CLAUDE_NAME = re.compile(r"claude-[a-z0-9.-]*")

# Claude Code's window when no /context run states it (the trace labels it as assumed):
# 200k, except for the models its /context screens show at 1M with no `[1m]` suffix (the
# corpus: claude-opus-4-8 in 2.1.207, claude-opus-5 in 2.1.222-2.1.232; Opus 4.6 and
# Sonnet 4.6 show 200k there unless `[1m]`). A 1M beta chosen for another model is not in
# the transcript. (Here, not in claude_context.py: a Pi or OpenCode export asks it too,
# and did not need that module's 3.6 ms of import.)
DEFAULT_WINDOW = 200_000
MILLION_WINDOW = 1_000_000
MILLION_WINDOW_MODELS = ("claude-opus-4-8", "claude-opus-5")


def assumed_window(model: str) -> tuple[int, str]:
    """The window Claude Code gives `model` by default, and how it is labelled."""
    if model.startswith(MILLION_WINDOW_MODELS):
        return MILLION_WINDOW, f"assumed: Claude Code's window for {model}, not in journal"
    return DEFAULT_WINDOW, "assumed: Claude default window, not in journal"


def assumed_model_window(responses: Sequence[Response]) -> tuple[int | None, str | None]:
    """The window of a session whose journal states none (Pi, OpenCode), when the model
    that served most of its requests is a Claude model: its default window, as Claude Code
    gives it (`assumed_window`), labelled assumed. None for any other model:
    nothing is guessed."""
    served = Counter(r.model for r in responses if r.model)
    if not served:
        return None, None
    model = max(served, key=served.__getitem__)  # the first of equals: Counter keeps order
    name = _CLAUDE_NAME.search(model.lower().rsplit("/", 1)[-1])
    if name is None:
        return None, None
    window, _ = assumed_window(name.group().replace(".", "-"))
    return window, f"assumed: {model}'s default window (as Claude Code gives it), not in journal"


def version_tuple(version: str | None) -> tuple[int, ...] | None:
    """A harness version's leading numbers (`2.1.63` → (2, 1, 63)); None if it has none."""
    if version is None:
        return None
    parts = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", version)
    return tuple(int(p) for p in parts.groups() if p is not None) if parts else None
