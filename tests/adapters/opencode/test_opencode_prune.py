"""OpenCode's prune (`SessionCompaction.prune`, on by default): once a turn ends it marks
old completed tool parts with `state.time.compacted`, and every request made after that
sends "[Old tool result content cleared]" instead of the output (`MessageV2.toModelMessages`;
the call's `input` is still sent). No corpus journal has a pruned part, so this is pinned on
a hand-made export (tests/data/journals/opencode/handmade, also laid out as the ≤1.1 storage
folder) and on the real compacting session with one part marked as OpenCode marks it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_profiler.adapters.opencode_session import PRUNED_LABEL, PRUNED_OUTPUT
from agent_profiler.cli import app
from agent_profiler.model import AnchorKind, Category, ChangeKind, ContextSnapshot, Session
from samples import read
from shared_paths import CORPUS, TESTS
from traceview import load_trace

HANDMADE = (
    TESTS
    / "data"
    / "journals"
    / "opencode"
    / "handmade"
    / "ses_1f00aa000ffeHandmadePrune01.export.json"
)
COMPACTING = (
    CORPUS
    / "opencode"
    / "session-bridge-1.4.3-compaction"
    / "ses_277daa810ffePOBsdfS6gm8uA2.export.json"
)
PLACEHOLDER_TOKENS = 9  # 33 characters, chars/4 rounded up


def _session(tmp_path: Path, doc: dict[str, Any], name: str = "doc") -> Session:
    path = tmp_path / name / f"{doc['info']['id']}.export.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc), encoding="utf-8")
    (session,), _ = read(path)
    return session


def _requests(session: Session) -> dict[str, ContextSnapshot]:
    return {s.anchor_id: s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE}


def _results(snapshot: ContextSnapshot) -> int:
    return dict(snapshot.categories).get(Category.RESULTS, 0)


def _changes_of(snapshot: ContextSnapshot, item_id: str) -> list[tuple[object, ...]]:
    return [
        (c.change, c.tokens, c.delta_tokens, c.chars, c.label, c.source_id)
        for c in snapshot.changes
        if c.id == item_id
    ]


def _as_storage(doc: dict[str, Any], root: Path) -> Path:
    """The export laid out as OpenCode ≤1.1 storage, one pretty-printed JSON file per object
    (`JSON.stringify(obj, null, 2)`, as OpenCode writes them)."""
    info = doc["info"]
    storage = root / "storage"
    folder = storage / "session" / "global"
    folder.mkdir(parents=True)
    (folder / f"{info['id']}.json").write_text(json.dumps(info, indent=2))
    for message in doc["messages"]:
        m = message["info"]
        (storage / "message" / info["id"]).mkdir(parents=True, exist_ok=True)
        (storage / "message" / info["id"] / f"{m['id']}.json").write_text(json.dumps(m, indent=2))
        parts = storage / "part" / m["id"]
        parts.mkdir(parents=True)
        for part in message["parts"]:
            (parts / f"{part['id']}.json").write_text(json.dumps(part, indent=2))
    return storage


# --------------------------------------------------------------------------- hand-made


def _handmade() -> dict[str, Any]:
    return json.loads(HANDMADE.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_a_pruned_output_is_the_placeholder_from_the_first_request_after_the_prune(
    tmp_path: Path,
) -> None:
    """The `read` of msg_0002 (2,135 characters, 534 tokens) was pruned when the first turn
    ended (its `compacted` time falls between msg_0003 and the next prompt): msg_0003 sent
    it whole, msg_0005 (the next turn) the placeholder; its arguments stay."""
    doc = _handmade()
    session = _session(tmp_path, doc)
    requests = _requests(session)
    assert list(requests) == ["msg_0002", "msg_0003", "msg_0005", "msg_0006"]
    result = "result:toolu_read_notes"
    assert _changes_of(requests["msg_0003"], result) == [
        (ChangeKind.ADDED, 534, 534, 2135, "Tool result", "toolu_read_notes")
    ]
    assert _changes_of(requests["msg_0005"], result) == [
        (
            ChangeKind.REPLACED,
            PLACEHOLDER_TOKENS,
            PLACEHOLDER_TOKENS - 534,
            len(PRUNED_OUTPUT),
            PRUNED_LABEL,
            "toolu_read_notes",
        )
    ]
    assert _results(requests["msg_0005"]) == PLACEHOLDER_TOKENS
    # The call's arguments are still sent: no change on them.
    assert _changes_of(requests["msg_0005"], "call:toolu_read_notes") == []
    # The `bash` output pruned after the session's last request was sent whole every time.
    assert _results(requests["msg_0006"]) == PLACEHOLDER_TOKENS + 315
    # A prune is no compaction (no request, no summary, nothing removed); it is a fact.
    assert session.compactions == ()
    assert dict(session.facts)["pruned_tool_results"] == 1
    # The tool call itself still produced its whole output.
    call = next(t for t in session.tool_calls if t.call_id == "toolu_read_notes")
    assert call.result_chars == 2135


def test_the_storage_folder_reads_a_prune_as_the_export_does(tmp_path: Path) -> None:
    doc = _handmade()
    from_export = _session(tmp_path, doc)
    (from_storage,), _ = read(_as_storage(doc, tmp_path / "opencode"))
    assert from_storage.snapshots == from_export.snapshots
    labels = [c.label for s in from_storage.snapshots for c in s.changes]
    assert labels.count(PRUNED_LABEL) == 1


def test_what_counts_as_pruned(tmp_path: Path) -> None:
    """`compacted` is tested as OpenCode tests it (JavaScript truthiness), on completed
    parts only (its prune marks no other); a value that is no time prunes from the next
    request on; 0 (falsy) prunes nothing."""
    whole = _requests(_session(tmp_path, _handmade(), "as-is"))

    def with_compacted(value: object, status: str = "completed") -> dict[str, ContextSnapshot]:
        doc = _handmade()
        state = doc["messages"][1]["parts"][2]["state"]
        state["status"] = status
        if status == "error":
            state["error"] = state.pop("output")
        state["time"]["compacted"] = value
        return _requests(_session(tmp_path, doc, f"{status}-{json.dumps(value)}"))

    # no time: from the next request on (msg_0003, the first after the result came)
    for no_time in (True, "yes"):
        assert _results(with_compacted(no_time)["msg_0003"]) == PLACEHOLDER_TOKENS
    for falsy in (0, None, False, ""):
        assert _results(with_compacted(falsy)["msg_0005"]) == 534
    # a failed call's error is sent as it is
    assert _results(with_compacted(1776100006050, "error")["msg_0005"]) == 534
    # the prune's own millisecond: a request made then reads the placeholder
    assert _results(with_compacted(1776100004100)["msg_0003"]) == PLACEHOLDER_TOKENS
    assert _results(with_compacted(1776100004101)["msg_0003"]) == 534
    assert _results(whole["msg_0003"]) == 534
    # a `time` that is no object is no prune (and no failure)
    doc = _handmade()
    doc["messages"][1]["parts"][2]["state"]["time"] = "soon"
    assert _results(_requests(_session(tmp_path, doc, "bad-time"))["msg_0005"]) == 534


def test_the_trace_says_how_many_outputs_were_pruned(tmp_path: Path) -> None:
    """The count is a session fact of the trace, an integer (TRACE_CONTRACT §4); the
    request after the prune carries the labelled replacement in its context."""
    out = tmp_path / "t.pftrace"
    result = CliRunner().invoke(app, ["export", str(HANDMADE), "-o", str(out), "--force"])
    assert result.exit_code == 0, result.output
    view = load_trace(out)
    (capture,) = view.captures()
    profile = view.profile_of(capture.uuid)
    assert profile is not None
    assert (profile.arg_types["pruned_tool_results"], profile.args["pruned_tool_results"]) == (
        "uint",
        1,
    )
    (response,) = [
        s
        for s in view.slices_of_kind("assistant-message", capture.uuid)
        if s.args.get("response_id") == "msg_0005"
    ]
    (change,) = [
        c for c in response.args["context"]["changes"] if c["id"] == "result:toolu_read_notes"
    ]
    assert (change["change"], change["label"], change["delta_tokens"]) == (
        "replaced",
        PRUNED_LABEL,
        PLACEHOLDER_TOKENS - 534,
    )


# --------------------------------------------------------------------------- corpus


@pytest.mark.skipif(not COMPACTING.is_file(), reason=f"shared corpus not found at {COMPACTING}")
def test_a_part_pruned_in_the_real_compacting_session(tmp_path: Path) -> None:
    """The 1.4.3 session with its `read` of 24,163 characters (6,041 tokens) marked pruned
    1 ms after its 21st request ended: from the 22nd request on it is the placeholder
    (results 6,032 lower), as an independent recount of the file finds; requests before
    are as in the untouched file, and the compaction later removes the placeholder."""
    real = json.loads(COMPACTING.read_text(encoding="utf-8"))
    doc = copy.deepcopy(real)
    answers = [m for m in doc["messages"] if m["info"]["role"] == "assistant"]
    pruned_at = answers[20]["info"]["time"]["completed"] + 1
    call_id = "tooluse_1wJ3iO9cfrlOUJpMLztN6V"
    (part,) = [p for m in doc["messages"] for p in m["parts"] if p.get("callID") == call_id]
    assert len(part["state"]["output"]) == 24_163
    part["state"]["time"]["compacted"] = pruned_at

    before, after = _session(tmp_path, real, "real"), _session(tmp_path, doc, "pruned")
    old, new = list(_requests(before).values()), list(_requests(after).values())
    assert len(old) == len(new) == 68
    assert new[:21] == old[:21]
    assert _changes_of(new[21], f"result:{call_id}") == [
        (ChangeKind.REPLACED, 9, -6_032, 33, PRUNED_LABEL, call_id)
    ]
    assert new[21].time_ns > pruned_at * 1_000_000 > new[20].time_ns
    response = _requests(after)["msg_d882bf7680011WuE7X6TL3C2cE"]
    assert _results(response) == 16_303 == _results(_requests(before)[response.anchor_id]) - 6_032
    (compaction,) = after.compactions
    assert compaction.removed_items == before.compactions[0].removed_items
    first_after = next(i for i, s in enumerate(new) if s.time_ns > compaction.end_ns)
    assert new[first_after:] == old[first_after:]
    assert dict(after.facts)["pruned_tool_results"] == 1
