"""Every corpus journal, exported and loaded by Perfetto's real importer (trace_processor
v58.2, through the `perfetto` package's TraceProcessor API): what ui.perfetto.dev holds is
what the writer meant.

Per trace, default and `--previews`: no import error or data loss in `stats`; every counter
track holds exactly the samples the trace carries (count and values, from our own decoding
of the protobuf), its last sample is 0 and strictly later than all others; slice counts per
track, flows (by the names of their two ends) and every `debug.context.*` argument match;
and per capture, responses, tool calls and context snapshots match the model the adapters
read (`agent_profiler.loader.load`).

Journals come from `CORPUS_JOURNALS` (globs per harness under ../shared/corpus; a new
harness is one line) and from tests/data/journals (entries whose content the corpus already
has are not exported twice). Each TraceProcessor takes about a second to start, so the traces
are loaded by a small thread pool while the tests before them check their results.
"""

from __future__ import annotations

import gzip
import hashlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Session
from contract import check_contract
from realtp import BINARY, SHARED, SKIP_REASON, open_trace, rows, stat_errors
from shared_paths import TESTS
from traceview import CAPTURE_TRACK_NAME, TraceView, Typed, load_trace

CORPUS = SHARED / "corpus"
DATA = TESTS / "data" / "journals"

# What one trace is made of: a file, or a folder exported as one (a Claude Code session with
# its subagents, a Muse session tree). gemini-cli and opencode join when their adapters do.
CORPUS_JOURNALS: dict[str, tuple[str, ...]] = {
    "claude-code": ("transcripts/*", "stream-json/*", "context-command/*.jsonl"),
    "codex": ("*/*.jsonl",),
    "pi": ("*.jsonl", "*.jsonl.gz"),
    "muse": ("*.jsonl", "*.json"),
    "gemini-cli": ("*.json", "*/"),  # documents, and folders of JSONL logs / subagent chats
    "opencode": ("*/",),  # export folders and a database folder
}
# Not a session journal: Muse's `muse export` event array (the CLI refuses it, by design).
NOT_SESSIONS = frozenset({"hcn-1.1.1_compaction-records.export-events.json"})
MODES: dict[str, tuple[str, ...]] = {
    "default": (),
    "previews": ("--previews",),
    "two-processes": ("--jobs", "2"),
}
WORKERS = 6  # TraceProcessors starting at once (each mostly waits for its server)


def _content(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def _fingerprint(entry: Path) -> str:
    files = sorted(entry.rglob("*")) if entry.is_dir() else [entry]
    digests = sorted(
        hashlib.sha256(_content(f)).hexdigest()
        for f in files
        if f.is_file()
        and (f.name.endswith((".jsonl", ".jsonl.gz", ".json", ".json.gz", ".txt", ".db")))
    )
    return hashlib.sha256("".join(digests).encode()).hexdigest()


def journals() -> list[tuple[str, Path]]:
    """(id, path) of every trace to export, corpus first."""
    found: list[tuple[str, Path]] = []
    if CORPUS.is_dir():
        for harness, globs in CORPUS_JOURNALS.items():
            for glob in globs:
                for path in sorted((CORPUS / harness).glob(glob)):
                    if path.name != "SOURCES.md" and path.name not in NOT_SESSIONS:
                        found.append((f"corpus/{path.relative_to(CORPUS)}", path))
    seen = {_fingerprint(path) for _, path in found}
    for harness_dir in sorted(DATA.iterdir()):
        for path in sorted(harness_dir.iterdir()):
            if path.name in {"SOURCES.md", *NOT_SESSIONS} or _fingerprint(path) in seen:
                continue
            seen.add(_fingerprint(path))
            found.append((f"data/{path.relative_to(DATA)}", path))
    return found


JOURNALS = journals()
CASES = [(name, path, mode) for name, path in JOURNALS for mode in ("default", "previews")] + [
    # Every small journal of every harness in one trace: many journal groups, read by two
    # worker processes, each group's uuids in its own block and its interning begun afresh
    # (pipeline.py): what the importer resolves must still be what each group meant.
    ("data/every-harness", DATA, "two-processes")
]

pytestmark = [
    pytest.mark.slow,  # the real importer on the whole corpus
    pytest.mark.skipif(BINARY is None, reason=SKIP_REASON),
    pytest.mark.skipif(
        not CORPUS.is_dir(), reason=f"shared corpus not beside the repository ({CORPUS})"
    ),
]


# --------------------------------------------------------------------------- what TP holds


@dataclass
class Imported:
    stats: list[str]
    tracks: list[dict[str, Any]]  # id, name, parent_id, uuid
    slices_per_track: dict[int, int]
    counters: dict[int, list[tuple[int, float]]]  # uuid → (ts, value) in (ts, id) order
    flows: list[tuple[str, str]]  # (name out, name in)
    context: list[dict[str, Any]]  # per slice: id, track_id, key, type, value


def read_back(trace: Path) -> Imported:
    """Everything the comparisons need, in one TraceProcessor session (runs in a worker)."""
    with open_trace(trace) as tp:
        tracks = rows(
            tp,
            "SELECT id, name, parent_id, "
            "EXTRACT_ARG(source_arg_set_id, 'trace_id') AS uuid FROM track",
        )
        slices = rows(tp, "SELECT track_id, COUNT(*) AS n FROM slice GROUP BY track_id")
        counters: dict[int, list[tuple[int, float]]] = {}
        for row in rows(
            tp,
            "SELECT EXTRACT_ARG(t.source_arg_set_id, 'trace_id') AS uuid, c.ts, c.value "
            "FROM counter c JOIN track t ON t.id = c.track_id ORDER BY c.track_id, c.ts, c.id",
        ):
            counters.setdefault(row["uuid"], []).append((row["ts"], row["value"]))
        flows = [
            (row["name_out"], row["name_in"])
            for row in rows(
                tp,
                "SELECT o.name AS name_out, i.name AS name_in FROM flow f "
                "JOIN slice o ON o.id = f.slice_out JOIN slice i ON i.id = f.slice_in",
            )
        ]
        context = rows(
            tp,
            "SELECT s.id, s.track_id, a.key, a.value_type AS type, "
            "COALESCE(a.int_value, a.string_value, a.real_value) AS value "
            "FROM slice s JOIN args a ON a.arg_set_id = s.arg_set_id "
            "WHERE a.key GLOB 'debug.context.*'",
        )
        return Imported(
            stats=stat_errors(tp),
            tracks=tracks,
            slices_per_track={row["track_id"]: row["n"] for row in slices},
            counters=counters,
            flows=flows,
            context=context,
        )


@dataclass(repr=False)  # short tracebacks: the fixture's dict holds ~80 of these
class Case:
    trace: Path
    view: TraceView
    sessions: list[Session]
    imported: Future[Imported]

    def __repr__(self) -> str:
        return f"Case({self.trace.name})"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Case]]:
    """Export every case (in this process), and hand each trace to the pool at once."""
    out = tmp_path_factory.mktemp("real-import")
    cases: dict[str, Case] = {}
    with ThreadPoolExecutor(WORKERS) as pool:
        for index, (name, path, mode) in enumerate(CASES):
            trace = out / f"{index}.pftrace"
            result = CliRunner().invoke(app, ["export", str(path), "-o", str(trace), *MODES[mode]])
            # Exit 1: some input could not be used; the trace still holds the rest.
            assert result.exit_code in (0, 1) and trace.is_file(), result.output + result.stderr
            view = load_trace(trace)
            sessions = load([path], Diagnostics()).sessions
            cases[f"{name}:{mode}"] = Case(trace, view, sessions, pool.submit(read_back, trace))
        yield cases
        for case in cases.values():
            case.imported.cancel()


# --------------------------------------------------------------------------- what was meant


def flatten(prefix: str, value: Typed, out: dict[str, tuple[str, Any]]) -> None:
    """A typed annotation as Trace Processor's args: `a.b`, `a.list[3].c`, with types."""
    if value.type == "dict":
        for key, item in value.value.items():
            flatten(f"{prefix}.{key}", item, out)
    elif value.type == "array":
        for index, item in enumerate(value.value):
            flatten(f"{prefix}[{index}]", item, out)
    elif value.type == "bool":
        out[prefix] = ("bool", int(value.value))
    elif value.type == "double":
        out[prefix] = ("real", value.value)
    elif value.type != "empty":  # an empty list or dict leaves no arg
        out[prefix] = (value.type, value.value)


def track_paths(tracks: list[dict[str, Any]]) -> dict[int, tuple[int, tuple[str, ...]]]:
    """TP track id → (capture uuid, names from below the capture down to the track)."""
    by_id = {t["id"]: t for t in tracks}
    paths: dict[int, tuple[int, tuple[str, ...]]] = {}
    for track in tracks:
        names: list[str] = []
        node: dict[str, Any] | None = track
        while node is not None and node["name"] != CAPTURE_TRACK_NAME:
            names.insert(0, node["name"] or "")
            node = by_id.get(node["parent_id"]) if node["parent_id"] is not None else None
        if node is not None:
            paths[track["id"]] = (node["uuid"], tuple(names))
    return paths


def view_path(view: TraceView, uuid: int) -> tuple[int, tuple[str, ...]]:
    names: list[str] = []
    track = view.tracks[uuid]
    while track.name != CAPTURE_TRACK_NAME:
        names.insert(0, track.name)
        assert track.parent_uuid is not None
        track = view.tracks[track.parent_uuid]
    return track.uuid, tuple(names)


# --------------------------------------------------------------------------- the test


def _estimated(snapshot: Any) -> int:
    value = snapshot.typed("context", "estimated_tokens")
    return int(value.value) if value is not None else 0


def test_the_corpus_is_all_there() -> None:
    harnesses = Counter(name.split("/")[1] for name, _ in JOURNALS if name.startswith("corpus/"))
    assert harnesses["claude-code"] >= 28 and harnesses["codex"] == 4
    assert harnesses["pi"] == 2 and harnesses["muse"] == 2
    assert harnesses["gemini-cli"] >= 9 and harnesses["opencode"] == 4
    assert any(name.startswith("data/") for name, _ in JOURNALS)  # handmade, synthetic


@pytest.mark.parametrize(("name", "path", "mode"), CASES, ids=[f"{n}:{m}" for n, _, m in CASES])
def test_perfetto_imports_what_the_writer_meant(
    exported: dict[str, Case], name: str, path: Path, mode: str
) -> None:
    case = exported[f"{name}:{mode}"]
    view = case.view
    problems = check_contract(view, require_addition=False, strict=True, forward_arrows=True)
    if not any(_estimated(s) for s in view.snapshots()):
        # Agent Profiler's example check (§8) presumes a session with content; a journal
        # that holds only a notice (Gemini CLI's warning-only session) has one empty snapshot.
        problems = [p for p in problems if not p.startswith("example:")]
    assert problems == []
    got = case.imported.result(timeout=300)

    # No import error or data loss (the UI's red Trace Doctor icon).
    assert got.stats == []

    # Counters: exactly the samples written, the last one a 0 strictly after the others.
    meant = {uuid: sorted(samples) for uuid, samples in view.counters.items()}
    assert set(got.counters) == set(meant) == {t.uuid for t in view.counter_tracks()}
    for uuid, samples in got.counters.items():
        label = view.tracks[uuid].name
        assert sorted(samples) == meant[uuid], label
        *before, (last_ts, last_value) = samples
        assert last_value == 0, label
        assert all(ts < last_ts for ts, _ in before), label

    # Slices per track: our lanes of one name are one merged track in Trace Processor.
    paths = track_paths(got.tracks)
    held: Counter[tuple[int, tuple[str, ...]]] = Counter()
    for track_id, count in got.slices_per_track.items():
        held[paths[track_id]] += count
    written = Counter(view_path(view, s.track_uuid) for s in view.slices)
    assert held == written

    # Flows, by the names of the slices at their two ends.
    ends = Counter((a.name, b.name) for a, b in (e for e in view.flows.values() if len(e) == 2))
    assert Counter(got.flows) == ends and sum(ends.values()) == len(view.flows)

    # Every debug.context.* argument, per snapshot slice.
    per_slice: dict[int, dict[str, tuple[str, Any]]] = {}
    for row in got.context:
        per_slice.setdefault(row["id"], {})[row["key"]] = (row["type"], row["value"])
    snapshots = view.snapshots()
    expected = []
    for snapshot in snapshots:
        flat: dict[str, tuple[str, Any]] = {}
        flatten("debug.context", snapshot.typed_args["context"], flat)
        expected.append(frozenset(flat.items()))
    assert Counter(frozenset(s.items()) for s in per_slice.values()) == Counter(expected)

    # And the model the adapters read: per session, its responses, tool calls, snapshots.
    by_session = {}
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        assert profile is not None
        by_session[profile.args["session_id"]] = capture.uuid
    assert sorted(by_session) == sorted(s.session_id for s in case.sessions)
    for session in case.sessions:
        capture = by_session[session.session_id]

        def held_on(track: str, capture: int = capture) -> int:
            return sum(n for (c, p), n in held.items() if c == capture and p == (track,))

        # Responses with zeroed usage are drawn too (usage_known = false), apart in the model.
        assert held_on("Responses") == len(session.responses) + len(session.unmetered_responses)
        assert held_on("Tools") == len(session.tool_calls)
        snapshot_slices = [s for s in snapshots if view.capture_of(s.track_uuid) == capture]
        assert sorted(s.args["context"]["estimated_tokens"] for s in snapshot_slices) == sorted(
            x.estimated_tokens for x in session.snapshots
        )
