"""Exported traces, decoded with perfetto_trace_pb2: the capture tree, `profile (1)`,
counters and their closing zeros, `context` annotations, `source_id` links, flows,
subagents, determinism and the no-bodies default. `export_trace` (conftest) also runs
TRACE_CONTRACT §8's checklist on every one of them."""

from __future__ import annotations

import itertools
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from test_claude_code import (
    DATA,
    ENTIRE_4B,
    ENTIRE_51,
    LEGACY,
    SMALL,
    SPOTTER,
    SPOTTER_DIR,
    SPOTTER_ID,
    STREAM_BG,
    STREAM_GHAW,
    STREAM_INIT_ONLY,
    independent_prompts,
)

import shared_paths
from agent_profiler.model import Category
from contract import drawn_backwards, drawn_start
from traceview import Slice, TraceView, inflated, plain_bytes

LABELS = {c.label for c in Category}
SHARED = shared_paths.CORPUS / "claude-code"


def capture_for(view: TraceView, session_id: str) -> int:
    for capture in view.captures():
        profile = view.profile_of(capture.uuid)
        if profile is not None and profile.args["session_id"] == session_id:
            return capture.uuid
    raise AssertionError(f"no capture for {session_id}")


def kinds(view: TraceView, capture: int, kind: str) -> list[Slice]:
    return view.slices_of_kind(kind, capture)


def metered(view: TraceView, capture: int) -> list[Slice]:
    """Responses with a usage: those marked `usage_known = false` (all-zero usage) are
    requests too, but not counted as responses (issue 15.6)."""
    return [s for s in kinds(view, capture, "assistant-message") if "usage_known" not in s.args]


# --------------------------------------------------------------------------- spotter


@pytest.fixture(scope="module")
def spotter(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from typer.testing import CliRunner

    from agent_profiler.cli import app
    from conftest import Exported  # noqa: F401 - imported for the type
    from contract import check_contract
    from traceview import load_trace

    out = tmp_path_factory.mktemp("spotter") / "spotter.pftrace"
    result = CliRunner().invoke(app, ["export", str(SPOTTER_DIR), "-o", str(out)])
    assert result.exit_code == 0, result.output
    view = load_trace(out)
    assert check_contract(view, strict=True, forward_arrows=True) == []
    return view


def test_capture_tree_and_profile(spotter: TraceView) -> None:
    captures = spotter.captures()
    assert len(captures) == 2
    # no process (its made-up pid would name it): the root, the session's group, and the
    # subagent's group inside it, each capture first in its own group
    assert not [t for t in spotter.tracks.values() if t.process is not None]
    (root,) = [t for t in spotter.tracks.values() if t.parent_uuid is None]
    assert root.name == "agent-profiler · 2 sessions (1 subagent), by start time"
    groups = [spotter.tracks[c.parent_uuid] for c in captures if c.parent_uuid]
    assert [g.name for g in groups] == [
        "Claude Code 258c7280 · spotter-gqc · claude-opus-4-6",
        "Subagent a881341 of 258c7280 via Task …9GenaK · claude-sonnet-4-5-20250929",
    ]
    assert (groups[0].parent_uuid, groups[1].parent_uuid) == (root.uuid, groups[0].uuid)
    assert [g.child_ordering for g in (root, *groups)] == ["EXPLICIT"] * 3
    assert [c.sibling_order_rank for c in captures] == [0, 0]
    assert groups[1].sibling_order_rank == 1
    assert all(c.sibling_merge_behavior == "SIBLING_MERGE_BEHAVIOR_NONE" for c in captures)
    main = capture_for(spotter, SPOTTER_ID)
    profile = spotter.profile_of(main)
    assert profile is not None
    assert profile.name == "profile (1)" and profile.category == "claude.metadata"
    args = profile.args
    assert args["kind"] == "capture" and args["schema_version"] == 1
    assert profile.arg_types["schema_version"] == "uint"
    assert args["capture_id"] == format(main, "x")
    assert (args["harness"], args["provider"], args["model"]) == (
        "claude-code",
        "anthropic",
        "claude-opus-4-6",
    )
    assert args["context_window_tokens"] == 200_000
    assert args["context_window_source"].startswith("assumed")
    assert args["content"] == "none"
    assert "chars" in args["estimation"] or "characters" in args["estimation"]
    # every track of the session hangs below its capture
    for track in spotter.tracks.values():
        if track.uuid not in {root.uuid, *(g.uuid for g in groups)}:
            assert spotter.capture_of(track.uuid) is not None, track.name


def test_responses_counters_and_end_zeros(spotter: TraceView) -> None:
    main = capture_for(spotter, SPOTTER_ID)
    expected = independent_prompts(SPOTTER)
    responses = kinds(spotter, main, "assistant-message")
    assert len(responses) == len(expected) == 152
    assert {r.args["response_id"]: r.args["context_tokens"] for r in responses} == expected
    for response in responses:
        for key in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            assert response.arg_types[key] == "uint"
    # Context size: the reported request input at each response start (+ compaction pre),
    # then 0 at the end of the recording
    size = spotter.counter_samples(main, "Context size")
    at_responses = {ts: value for ts, value in size}
    for response in responses:
        assert at_responses[response.ts] in (response.args["context_tokens"], 167_094)
    assert size[0][1] == 0 and size[-1][1] == 0
    profile = spotter.profile_of(main)
    assert profile is not None
    end = profile.end
    for track in spotter.counter_tracks(main):
        samples = spotter.counters[track.uuid]
        assert samples[-1] == (end, 0), track.name
        assert track.unit_name == ("%" if track.name == "Context fill" else "tokens")
    inputs = [v for _, v in spotter.counter_samples(main, "Input tokens")][:-1]
    assert inputs == sorted(inputs)  # cumulative
    compaction_requests = kinds(spotter, main, "compaction-response")
    assert inputs[-1] == sum(r.args["input_tokens"] for r in responses + compaction_requests)


def test_context_counters_follow_snapshots(spotter: TraceView) -> None:
    main = capture_for(spotter, SPOTTER_ID)
    names = {t.name for t in spotter.counter_tracks(main)}
    context_counters = {n for n in names if n.startswith("Context: ")}
    assert {n.removeprefix("Context: ") for n in context_counters} <= LABELS
    assert {
        "Context: Tool results",
        "Context: Unattributed",
        "Context: Compaction summaries",
    } <= context_counters
    group = next(t for t in spotter.tracks_named("Context") if spotter.capture_of(t.uuid) == main)
    assert not group.is_counter
    for track in spotter.counter_tracks(main):
        if track.name.startswith("Context: "):
            assert track.parent_uuid == group.uuid
            assert track.y_axis_share_key == "llm.context.tokens"
    # Tool results vanish at the compaction: the counter drops to 0 there (not only at the end)
    compaction = kinds(spotter, main, "compaction")[0]
    results = dict(spotter.counter_samples(main, "Context: Tool results"))
    assert results[compaction.ts + compaction.args["context"]["sample_offset_ns"]] == 0
    # the counters at a snapshot equal its categories
    snapshot = kinds(spotter, main, "assistant-message")[40]
    context = snapshot.args["context"]
    for key, tokens in context["categories"].items():
        label = Category(key).label
        samples = spotter.counter_samples(main, f"Context: {label}")
        # a counter is a step function: the value in effect at the snapshot's time
        assert [v for ts, v in samples if ts <= snapshot.ts][-1] == tokens


def test_context_annotation_fields(spotter: TraceView) -> None:
    main = capture_for(spotter, SPOTTER_ID)
    first, second = kinds(spotter, main, "assistant-message")[:2]
    context = first.args["context"]
    assert (context["version"], context["stage"], context["basis"], context["coverage"]) == (
        1,
        "transcript-observed",
        "chars/4",
        "partial",
    )
    assert context["baseline"] is True and first.type_at("context", "baseline") == "bool"
    assert context["reported_tokens"] == 25_882
    assert context["estimated_tokens"] == sum(context["categories"].values())
    head = next(c for c in context["changes"] if c["id"] == "inferred:head")
    assert head["category"] == "unattributed" and "nferred" in head["label"]
    later = second.args["context"]
    assert later["baseline"] is False
    added = [c for c in later["changes"] if c["change"] == "added"]
    assert added and all(c["delta_tokens"] > 0 for c in added)
    # negative deltas are int_value, non-negative are uint_value (contract §5)
    compaction = kinds(spotter, main, "compaction")[0]
    changes = compaction.args["context"]["changes"]
    index = next(i for i, c in enumerate(changes) if c["change"] == "removed")
    assert compaction.type_at("context", "changes", index, "delta_tokens") == "int"
    assert compaction.args["context"]["stage"] == "post-compaction"
    assert compaction.args["pre_tokens"] == 167_094


def test_source_ids_link_to_tool_slices_and_additions_have_flows(spotter: TraceView) -> None:
    main = capture_for(spotter, SPOTTER_ID)
    tools = {t.args["call_id"]: t for t in kinds(spotter, main, "tool-execution")}
    assert all(isinstance(t.args["is_error"], bool) for t in tools.values())
    sourced = [
        change
        for s in spotter.snapshots(main)
        if not s.args["context"]["baseline"]
        for change in s.args["context"]["changes"]
        if "source_id" in change
    ]
    linked = [c for c in sourced if c["source_id"] in tools]
    # a change a tool slice caused names the call; the link says the rest: no
    # `source_kind` (it is `tool`) and no default label (the UI shows the tool instead)
    assert linked and all("source_kind" not in c for c in linked)
    assert not any(c.get("label") in ("Tool result", "Tool arguments") for c in linked)
    # and a change that still says `tool` names no tool slice of the capture
    assert all(c["source_id"] not in tools for c in sourced if c.get("source_kind") == "tool")
    # "Largest additions": instants under the Context group, no kind/context, each the end
    # of a flow that starts on the tool slice named by the change's source_id
    additions = [
        s
        for s in spotter.slices_in_capture(main)
        if spotter.tracks[s.track_uuid].name == "Largest additions"
    ]
    assert 0 < len(additions) <= 10
    deltas = [a.args["delta_tokens"] for a in sorted(additions, key=lambda a: a.args["rank"])]
    assert deltas == sorted(deltas, reverse=True)
    for instant in additions:
        assert instant.instant and "kind" not in instant.args and "context" not in instant.args
        tool = tools[instant.args["tool_call_id"]]
        (_shared,) = set(instant.flow_ids) & set(tool.flow_ids)
        assert tool.ts <= instant.ts
        # named with the call and what it acted on (issue 29)
        target = tool.args.get("target")
        what = f"{tool.name} {target}" if target else tool.name
        assert f" · {what} (" in instant.name
    best = max(
        (
            c
            for s in spotter.snapshots(main)
            if not s.args["context"]["baseline"]
            for c in s.args["context"]["changes"]
            if c["delta_tokens"] > 0 and c.get("source_id", "") in tools
        ),
        key=lambda c: c["delta_tokens"],
    )
    assert deltas[0] == best["delta_tokens"]


def test_flows_prompt_response_tool(spotter: TraceView) -> None:
    main = capture_for(spotter, SPOTTER_ID)
    prompts = kinds(spotter, main, "prompt")
    inputs = [s for s in spotter.slices_in_capture(main) if s.name == "prompt-input"]
    assert len(inputs) == len(prompts) > 0
    for prompt in prompts:
        assert "text" in prompt.args
    # The responses' arrows leave the prompt's input, not the prompt: the UI draws an arrow
    # from its source's end (contract.drawn_start), and the prompt spans the whole turn.
    # The prompt keeps the one arrow from its input.
    for prompt_input, prompt in zip(inputs, prompts, strict=True):
        (arrival,) = prompt.flow_ids
        assert arrival in prompt_input.flow_ids
    in_main = {r.order for r in kinds(spotter, main, "assistant-message")}
    to_responses = [
        (source, target)
        for source, target in (ends for ends in spotter.flows.values() if len(ends) == 2)
        if target.order in in_main
    ]
    assert len(to_responses) == len(in_main) > 100
    assert {source.name for source, _ in to_responses} == {"prompt-input"}
    assert all(drawn_start(source, target) <= target.ts for source, target in to_responses)
    for flow_id, ends in spotter.flows.items():
        assert len(ends) == 2, flow_id
        assert ends[0].ts <= ends[1].ts


def _drawn_backwards_by_edge(view: TraceView) -> Counter[tuple[str, str]]:
    def end(slice_: Slice) -> str:
        if slice_.name.startswith("+"):
            return "addition"
        return str(slice_.args.get("kind") or slice_.name)

    return Counter((end(source), end(target)) for source, target in drawn_backwards(view))


@pytest.mark.slow  # every bundled journal, and the corpus, in two traces
@pytest.mark.parametrize("folder", [DATA.parent, shared_paths.CORPUS], ids=["data", "corpus"])
def test_prompt_to_response_arrows_are_drawn_forwards_on_real_journals(
    folder: Path, tmp_path: Path
) -> None:
    """The UI's rule (contract.drawn_start) on every real journal: no arrow from a prompt's
    input is drawn backwards. Those that still are, and why (docs/traces.md): response →
    tool call (Codex and OpenCode end a response at its usage, after its tool call's item),
    tool call → subagent's input (the contract's link: the launching call encloses its
    subagent) and tool call → Largest additions (a skill's body injected before its call
    ended: milliseconds)."""
    from typer.testing import CliRunner

    from agent_profiler.cli import app
    from traceview import load_trace

    if not folder.is_dir():
        pytest.skip(shared_paths.SHARED_REASON)
    out = tmp_path / "all.pftrace"
    result = CliRunner().invoke(app, ["export", str(folder), "-o", str(out)])
    assert result.exit_code == 0, result.output
    view = load_trace(out)
    from_inputs = [ends for ends in view.flows.values() if ends[0].name == "prompt-input"]
    assert sum(ends[1].kind == "assistant-message" for ends in from_inputs) > 200
    backwards = _drawn_backwards_by_edge(view)
    assert not {edge for edge in backwards if edge[0] in ("prompt-input", "prompt")}
    assert set(backwards) <= {
        ("assistant-message", "tool-execution"),
        ("tool-execution", "prompt-input"),
        ("tool-execution", "addition"),
    }


def test_subagent_is_its_own_capture_linked_by_flow_and_ids(spotter: TraceView) -> None:
    main = capture_for(spotter, SPOTTER_ID)
    child = capture_for(spotter, f"{SPOTTER_ID}/a881341")
    profile = spotter.profile_of(child)
    assert profile is not None
    assert profile.args["parent_session"] == SPOTTER_ID
    assert profile.args["child_role"] == "subagent" and profile.args["agent_id"] == "a881341"
    launcher = next(
        t
        for t in kinds(spotter, main, "tool-execution")
        if t.args["call_id"] == "toolu_01VmaERAwhb19LGUwu9GenaK"
    )
    assert launcher.args["child_session"] == f"{SPOTTER_ID}/a881341"
    assert launcher.args["delegation"] is True
    child_input = next(s for s in spotter.slices_in_capture(child) if s.name == "prompt-input")
    assert set(launcher.flow_ids) & set(child_input.flow_ids)
    # the child's window is its own: its Context size never includes the parent's
    child_sizes = [v for _, v in spotter.counter_samples(child, "Context size")]
    assert max(child_sizes) < 50_000
    # and the compaction request is on the parent, not a subagent
    request = kinds(spotter, main, "compaction-response")
    assert len(request) == 1 and request[0].args["context_tokens"] == 169_248


def test_no_bodies_by_default_and_previews_on_request(export_trace: Any) -> None:
    plain = export_trace(SMALL)
    assert b"SECRET_BODY_MARKER" not in plain_bytes(plain.path)
    assert b"Fix the bug" not in plain_bytes(plain.path)
    (prompt, *_) = [s for s in plain.view.slices if s.kind == "prompt"]
    assert prompt.args["text"] == f"[{len('Fix the bug in parser.py please')} chars; not included]"
    tool = next(s for s in plain.view.slices if s.kind == "tool-execution")
    assert "args" not in tool.args and tool.args["keys"] == ["file_path"]
    with_previews = export_trace(SMALL, args=("--previews",))
    data = plain_bytes(with_previews.path)
    assert b"Fix the bug in parser.py please" in data
    tool = next(s for s in with_previews.view.slices if s.kind == "tool-execution")
    assert tool.args["args"] == {"file_path": "/home/USER/demo/parser.py"}
    profile = next(s for s in with_previews.view.slices if s.name == "profile (1)")
    assert profile.args["content"] == "previews"


def test_same_input_same_bytes(export_trace: Any) -> None:
    first = export_trace(SPOTTER_DIR)
    second = export_trace(SPOTTER_DIR)
    assert first.path.read_bytes() == second.path.read_bytes()


def test_parallel_tools_get_lanes(export_trace: Any) -> None:
    exported = export_trace(ENTIRE_51)
    view = exported.view
    lanes = [t for t in view.tracks.values() if t.name == "Tools"]
    assert len(lanes) >= 6  # six Task calls ran at once
    assert all(t.sibling_merge_behavior == "SIBLING_MERGE_BEHAVIOR_BY_TRACK_NAME" for t in lanes)
    for lane in lanes:
        slices = sorted(view.slices_on(lane.uuid), key=lambda s: s.ts)
        for earlier, later in itertools.pairwise(slices):
            assert earlier.end <= later.ts


@pytest.mark.parametrize(
    ("journal", "require_addition"),
    [
        (ENTIRE_4B, True),
        (LEGACY, True),
        (STREAM_GHAW, True),
        (STREAM_BG, False),
        (STREAM_INIT_ONLY, False),
        (SMALL, True),
        (SPOTTER, True),
    ],
)
def test_every_bundled_journal_meets_the_contract(
    export_trace: Any, journal: Path, require_addition: bool
) -> None:
    exported = export_trace(journal, require_addition=require_addition)
    for capture in exported.view.captures():
        profile = exported.view.profile_of(capture.uuid)
        assert profile is not None
        responses = metered(exported.view, capture.uuid)
        assert profile.args["responses"] == len(responses)


def test_sessions_without_requests_still_show_their_transcript(export_trace: Any) -> None:
    exported = export_trace(STREAM_BG, require_addition=False)
    (capture,) = exported.view.captures()
    profile = exported.view.profile_of(capture.uuid)
    assert profile is not None and profile.args["responses"] == 0
    context = profile.args["context"]
    assert context["stage"] == "transcript-observed" and "reported_tokens" not in context
    assert context["categories"]["results"] > 0
    assert profile.args["context_window_tokens"] == 200_000


@pytest.mark.slow  # corpus-wide
@pytest.mark.skipif(not SHARED.is_dir(), reason="shared corpus not beside the repository")
def test_every_claude_code_file_of_the_shared_corpus(export_trace: Any) -> None:
    files = sorted(
        p
        for p in SHARED.rglob("*")
        if p.is_file()
        and p.suffix in {".jsonl", ".gz", ".txt"}
        and "/subagents/" not in str(p)
        and not p.name.startswith("agent-")
    )
    assert len(files) >= 25
    for path in files:
        exported = export_trace(path, require_addition=False)
        expected = independent_prompts(path, sidechain=False)
        main = [
            c
            for c in exported.view.captures()
            if "parent_session" not in (exported.view.profile_of(c.uuid) or _no_profile()).args
        ]
        got = sum(len(metered(exported.view, c.uuid)) for c in main)
        assert got == len(expected), path


def _no_profile() -> Any:
    raise AssertionError("capture without profile")


def test_shared_paths_exist() -> None:
    assert DATA.is_dir() and os.access(DATA, os.R_OK)


# ------------------------------------------------------------- what Trace Processor accepts


def test_no_counter_packet_carries_more_than_eight_extra_values(export_trace: Any) -> None:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

    # GIVEN a session whose end resets 12 counters at one instant (it used to be one packet
    # with 11 extra values, which Trace Processor drops whole)
    exported = export_trace(ENTIRE_4B)
    trace = inflated(exported.path)
    extras = [
        len(p.track_event.extra_counter_values)
        for p in trace.packet
        if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_COUNTER
    ]
    # THEN every packet stays within the importer's limit, and the split really happened
    assert max(extras) == 8
    # AND no extra value of 0 comes before a non-zero one (v58.2 reads all extra values
    # after a 0 as 0)
    for packet in trace.packet:
        values = list(packet.track_event.extra_counter_values)
        assert values == sorted(values, key=lambda v: v == 0), values
    assert any(0 in p.track_event.extra_counter_values for p in trace.packet)
    (capture,) = exported.view.captures()
    closing = [
        s for s in exported.view.samples if s.ts == exported.view.profile_of(capture.uuid).end
    ]
    assert len(closing) == len(exported.view.counter_tracks(capture.uuid)) > 9


def test_closing_zeros_come_strictly_after_every_other_sample(export_trace: Any) -> None:
    # GIVEN sessions whose last response ends at the session's end (its cumulative sample
    # sits there)
    for journal in (SMALL, ENTIRE_4B, ENTIRE_51):
        view = export_trace(journal, require_addition=False).view
        for capture in view.captures():
            profile = view.profile_of(capture.uuid)
            assert profile is not None
            for track in view.counter_tracks(capture.uuid):
                samples = view.counters[track.uuid]
                *body, (last_ts, last_value) = samples
                # THEN the last sample is the 0, strictly later, at the end of profile (1)
                assert last_value == 0 and last_ts == profile.end, track.name
                assert all(ts < last_ts for ts, _ in body), track.name


def test_tracks_are_ordered_like_the_session(export_trace: Any) -> None:
    view = export_trace(SMALL).view
    (capture,) = view.captures()
    assert view.tracks[capture.uuid].child_ordering == "EXPLICIT"

    def order(parent: int) -> list[str]:
        children = sorted(
            view.children_of(parent), key=lambda t: (t.sibling_order_rank or 0, t.order)
        )
        names = [t.name for t in children]
        return [n for i, n in enumerate(names) if n not in names[:i]]  # lanes once

    assert order(capture.uuid) == [
        "Session",
        "Inputs",
        "Prompts",
        "Responses",
        "Turns",
        "Tools",
        "Compaction",
        "Context size",
        "Context fill",
        "Context window",
        "Context",
        "Input tokens",
        "Output tokens",
        "Configuration",
    ]
    (group,) = [t for t in view.children_of(capture.uuid) if t.name == "Context"]
    assert view.tracks[group.uuid].child_ordering == "EXPLICIT"
    assert order(group.uuid) == [
        "Largest additions",
        "Context: User prompts",
        "Context: Assistant history",
        "Context: Tool results",
        "Context: Compaction summaries",
        "Context: Unattributed",
    ]


def test_every_track_of_a_capture_says_what_it_holds(spotter: TraceView) -> None:
    """ui.perfetto.dev shows a track's description as its help button (slice, counter and
    group tracks alike): every row of the table has one, and so does every track of a real
    export, each lane of a track the same one."""
    from agent_profiler.layout.tracks import TRACKS

    rows = [row for top in TRACKS for row in (top, *top.children)]
    assert [row.name for row in rows if not row.description] == []
    for capture in spotter.captures():
        tracks = [t for t in spotter.tracks.values() if spotter.capture_of(t.uuid) == capture.uuid]
        assert len(tracks) > 15
        assert [t.name for t in tracks if not t.description] == []
        by_name: dict[str, set[str]] = {}
        for track in tracks:
            by_name.setdefault(track.name, set()).add(track.description)
        assert all(len(said) == 1 for said in by_name.values())
        assert by_name["Turns"] == {
            "turn: one per response, over the same span as Responses; Agent Profiler counts "
            "these as its turns (kind turn: a model step, not a user turn)."
        }


def test_context_size_has_an_axis_of_its_own_and_a_fill_percentage(spotter: TraceView) -> None:
    """Issue 29: the window must not flatten the context (a 41k-token context on a 1M
    window was one pixel tall). The window has no share key, so the UI gives it its own
    axis; `Context fill` is the size as a percentage of the window, rounded up; the
    category counters keep the contract's share key."""
    main = capture_for(spotter, SPOTTER_ID)
    tracks = {t.name: t for t in spotter.counter_tracks(main)}
    assert tracks["Context size"].y_axis_share_key == "llm.context.tokens"
    assert tracks["Context window"].y_axis_share_key == ""
    assert tracks["Context fill"].y_axis_share_key == ""
    categories = [t for t in spotter.tracks.values() if t.name.startswith("Context: ")]
    assert categories and all(t.y_axis_share_key == "llm.context.tokens" for t in categories)
    window = dict(spotter.counter_samples(main, "Context window"))
    fill = spotter.counter_samples(main, "Context fill")
    size = spotter.counter_samples(main, "Context size")
    assert len(fill) > 10
    # a step function of the size: at each size sample, the fill is ceil(100 × size / window)
    kept = dict(fill)
    value = 0
    for ts, tokens in size[1:-1]:
        expected = -(-int(tokens) * 100 // 200_000)
        if ts in kept:
            value = kept[ts]
        assert value == expected, ts
    assert max(window.values()) == 200_000
    assert max(kept.values()) == -(-max(int(v) for _, v in size) * 100 // 200_000) > 50


MODEL_SWITCH = (
    shared_paths.CORPUS
    / "codex"
    / "agentv-0.140-0.141"
    / "agentv-3c162d1d8a-1_v0.141.0_model-switch.jsonl"
)


@pytest.mark.skipif(not MODEL_SWITCH.exists(), reason=shared_paths.SHARED_REASON)
def test_the_window_follows_the_model_in_use(export_trace: Any) -> None:
    """Codex 0.141 switched from gpt-5.3-codex-spark (window 121,600, 9 requests) to
    gpt-5.5 (258,400). The trace drew the session's one window (258,400) at every request:
    Context window said 258,400 and Context fill about half the true share for the first
    model's requests, and its Configuration slice named the other model's window, while
    `summary` and each request's `context` annotation said 121,600."""
    exported = export_trace(MODEL_SWITCH)
    view = exported.view
    (capture,) = [c.uuid for c in view.captures()]
    requests = sorted(kinds(view, capture, "assistant-message"), key=lambda s: s.ts)
    windows = dict(view.counter_samples(capture, "Context window"))
    assert [windows.get(r.ts) for r in requests[:10]] == [121_600, *[None] * 8, 258_400]
    assert sorted(set(windows.values())) == [0, 121_600, 258_400]
    # every fill sample is the size over the window of the request it belongs to
    window_at = 0
    fill = dict(view.counter_samples(capture, "Context fill"))
    for ts, tokens in view.counter_samples(capture, "Context size")[1:-1]:
        window_at = int(windows.get(ts, window_at))
        if ts in fill:
            assert fill[ts] == -(-int(tokens) * 100 // window_at), ts
    assert fill[requests[0].ts] == -(-13_868 * 100 // 121_600) == 12
    runs = [
        (s.args["model"], s.args["context_window_tokens"])
        for s in view.slices_named("run-configuration")
    ]
    assert runs == [("gpt-5.3-codex-spark", 121_600), ("gpt-5.5", 258_400)]
    assert requests[0].args["context"]["window_tokens"] == 121_600
    # each response states its own request's window, where it changes: not the session's
    # (gpt-5.5's 258,400) on the spark request that opens the session
    stated = [
        (i, r.args["context_window_tokens"])
        for i, r in enumerate(requests)
        if "context_window_tokens" in r.args
    ]
    assert stated == [(0, 121_600), (9, 258_400)]


def test_context_size_keeps_a_request_that_repeats_the_size_before_it(
    export_trace: Any,
) -> None:
    """Context size has a sample at every request, even one whose size repeats the one
    before (the UI reads it as one sample per request); the other counters are step
    functions that drop a repeat. ENTIRE_4B has two requests 40 ms apart whose reported
    input is the same, 49,386 tokens."""
    view = export_trace(ENTIRE_4B).view
    (capture,) = view.captures()
    size = view.counter_samples(capture.uuid, "Context size")
    repeats = [(a, b) for a, b in itertools.pairwise(size) if a[1] == b[1] != 0]
    assert [(a[1], b[0] - a[0]) for a, b in repeats] == [(49_386, 40_000_000)]
    # every request has its sample, at its start, of its reported input
    at = dict(size)
    requests = kinds(view, capture.uuid, "assistant-message")
    assert len(requests) == 40
    assert all(at[r.ts] == r.args["context_tokens"] for r in requests)
