"""The trace decoder and the contract checker, proven against agentprof's own traces.

The three reference traces in `/work/shared/reference-traces/` were written by Agent Profiler and
import cleanly into its UI, so `check_contract` must accept them. Every rule must also be able to
fail: each negative test breaks one thing in a reference trace (or in a small hand-built trace)
and asserts that exactly that problem is reported.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest
from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

import shared_paths
from contract import CONTEXT_LABELS, check_contract, drawn_backwards, drawn_start
from traceview import TraceView, load_trace

REFERENCE_DIR = shared_paths.SHARED / "reference-traces"
REFERENCES = ("claude-coding", "codex-coding", "muse-coding")

needs_references = pytest.mark.skipif(
    not REFERENCE_DIR.is_dir(), reason="reference traces are not available on this machine"
)


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def reference_trace(name: str) -> Any:
    """A fresh, mutable `perfetto_trace_pb2.Trace` of one reference file."""
    trace = pb.Trace()
    trace.ParseFromString((REFERENCE_DIR / f"{name}.pftrace").read_bytes())
    return trace


def problems_of(trace: Any, **options: bool) -> list[str]:
    return check_contract(load_trace(trace.SerializeToString()), **options)


def assert_reported(problems: list[str], *fragments: str) -> None:
    """Some single problem line contains every fragment."""
    matching = [p for p in problems if all(fragment in p for fragment in fragments)]
    assert matching, f"expected a problem containing {fragments!r}; got:\n" + "\n".join(problems)


def descriptors(trace: Any) -> dict[str, list[Any]]:
    """Track descriptors by name (process descriptors under '')."""
    found: dict[str, list[Any]] = {}
    for packet in trace.packet:
        if packet.HasField("track_descriptor"):
            found.setdefault(packet.track_descriptor.name, []).append(packet.track_descriptor)
    return found


def events_on(trace: Any, track_name: str) -> list[Any]:
    """Track-event packets on tracks with this name, in file order."""
    uuids = {d.uuid for d in descriptors(trace).get(track_name, [])}
    return [
        p for p in trace.packet if p.HasField("track_event") and p.track_event.track_uuid in uuids
    ]


def annotation(event: Any, name: str) -> Any:
    for entry in event.debug_annotations:
        if entry.name == name:
            return entry
    raise KeyError(name)


def entry(dict_annotation: Any, name: str) -> Any:
    for item in dict_annotation.dict_entries:
        if item.name == name:
            return item
    raise KeyError(name)


def remove_annotation(event: Any, name: str) -> None:
    for index, item in enumerate(event.debug_annotations):
        if item.name == name:
            del event.debug_annotations[index]
            return
    raise KeyError(name)


def move_packet(trace: Any, predicate: Callable[[Any], bool], position: int) -> None:
    """Move the first packet matching `predicate` to `position` (file order only)."""
    packets = [bytes(p.SerializeToString()) for p in trace.packet]
    index = next(i for i, p in enumerate(trace.packet) if predicate(p))
    packets.insert(position, packets.pop(index))
    del trace.packet[:]
    for data in packets:
        trace.packet.add().ParseFromString(data)


def first_event(trace: Any, predicate: Callable[[Any], bool]) -> Any:
    for packet in trace.packet:
        if packet.HasField("track_event") and predicate(packet.track_event):
            return packet.track_event
    raise LookupError("no such event")


def has_kind(kind: str) -> Callable[[Any], bool]:
    def predicate(event: Any) -> bool:
        return any(a.name == "kind" and a.string_value == kind for a in event.debug_annotations)

    return predicate


def later_snapshot(trace: Any) -> Any:
    """The `context` annotation of the second snapshot of a trace (a non-baseline one)."""
    snapshots = [
        packet.track_event
        for packet in trace.packet
        if packet.HasField("track_event")
        and any(a.name == "context" for a in packet.track_event.debug_annotations)
    ]
    return annotation(snapshots[1], "context")


# ---------------------------------------------------------------------------------------------
# A tiny conforming trace built from scratch
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Int:
    """Force `int_value` for a value the builder would otherwise write as `uint_value`."""

    value: int


def set_value(target: Any, value: Any) -> None:
    """Write a Python value into a DebugAnnotation with the contract's typing (§4)."""
    if isinstance(value, Int):
        target.int_value = value.value
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        if value >= 0:
            target.uint_value = value
        else:
            target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, dict):
        for key, item in value.items():
            child = target.dict_entries.add()
            child.name = key
            set_value(child, item)
    elif isinstance(value, list):
        for item in value:
            set_value(target.array_values.add(), item)
    else:  # pragma: no cover - guard for test authors
        raise TypeError(value)


class MiniTrace:
    """Writes a small trace the way the contract asks; one method per session."""

    SEQUENCE = 4242
    PROCESS = 1

    def __init__(self) -> None:
        self.trace = pb.Trace()
        clock = self.packet()
        clock.clock_snapshot.primary_trace_clock = pb.BUILTIN_CLOCK_REALTIME
        for clock_id in (1, 6):
            item = clock.clock_snapshot.clocks.add()
            item.clock_id, item.timestamp = clock_id, 1_000
        process = self.packet().track_descriptor
        process.uuid = self.PROCESS
        process.process.pid = 7
        process.process.process_name = "codex"

    def packet(self) -> Any:
        packet = self.trace.packet.add()
        packet.trusted_packet_sequence_id = self.SEQUENCE
        return packet

    def track(
        self, uuid: int, name: str, parent: int, *, counter: bool = False, share: bool = False
    ) -> None:
        desc = self.packet().track_descriptor
        desc.uuid, desc.name, desc.parent_uuid = uuid, name, parent
        if name == "agentprof.capture":
            desc.sibling_merge_behavior = pb.TrackDescriptor.SIBLING_MERGE_BEHAVIOR_NONE
        if counter:
            desc.counter.unit_name = "tokens"
            if share:
                desc.counter.y_axis_share_key = "llm.context.tokens"

    def event(
        self,
        ts: int,
        track: int,
        kind: int,
        name: str = "",
        *,
        category: str = "codex.activity",
        args: dict[str, Any] | None = None,
        flows: tuple[int, ...] = (),
        value: int | None = None,
    ) -> Any:
        packet = self.packet()
        packet.timestamp, packet.timestamp_clock_id = ts, 1
        event = packet.track_event
        event.type, event.track_uuid = kind, track
        if name:
            event.name = name
        if kind != pb.TrackEvent.TYPE_SLICE_END:
            event.categories.append(category)
        for key, item in (args or {}).items():
            entry = event.debug_annotations.add()
            entry.name = key
            set_value(entry, item)
        event.flow_ids.extend(flows)
        if value is not None:
            event.counter_value = value
        return event

    def session(
        self, base: int, session_id: str, start: int, *, parent_session: str | None = None
    ) -> None:
        """One capture: a prompt, two responses with context snapshots and a tool between."""
        begin, end = pb.TrackEvent.TYPE_SLICE_BEGIN, pb.TrackEvent.TYPE_SLICE_END
        instant, counter = pb.TrackEvent.TYPE_INSTANT, pb.TrackEvent.TYPE_COUNTER
        capture, session, inputs, prompts, responses, tools = (base + i for i in range(6))
        input_tokens, output_tokens, size, group, prompts_ctr, results_ctr = (
            base + i for i in range(6, 12)
        )
        self.track(capture, "agentprof.capture", self.PROCESS)
        for uuid, name in (
            (session, "Session"),
            (inputs, "Inputs"),
            (prompts, "Session"),
            (responses, "Responses"),
            (tools, "Tools"),
        ):
            self.track(uuid, name, capture)
        self.track(input_tokens, "Input tokens", capture, counter=True)
        self.track(output_tokens, "Output tokens", capture, counter=True)
        self.track(size, "Context size", capture, counter=True, share=True)
        self.track(group, "Context", capture)
        self.track(prompts_ctr, "Context: User prompts", group, counter=True, share=True)
        self.track(results_ctr, "Context: Tool results", group, counter=True, share=True)
        profile: dict[str, Any] = {
            "kind": "capture",
            "schema_version": 1,
            "session_id": session_id,
            "capture_id": format(capture, "x"),
            "harness": "codex",
            "provider": "openai",
            "model": "gpt-test",
            "context_window_tokens": 1000,
        }
        if parent_session is not None:
            profile["parent_session"] = parent_session
        usage = {"input_tokens": 100, "output_tokens": 10, "cache_read_tokens": 0}
        usage["cache_write_tokens"] = 0
        first = {
            "version": 1,
            "stage": "request-input",
            "basis": "chars/4",
            "coverage": "partial",
            "baseline": True,
            "categories": {"prompts": 100},
            "estimated_tokens": 100,
            "changes": [
                {
                    "id": "msg:1",
                    "category": "prompts",
                    "change": "baseline",
                    "tokens": 100,
                    "delta_tokens": 100,
                }
            ],
        }
        second = {
            **first,
            "baseline": False,
            "categories": {"prompts": 90, "results": 40},
            "estimated_tokens": 130,
            "changes": [
                {
                    "id": f"result:{session_id}",
                    "category": "results",
                    "change": "added",
                    "tokens": 40,
                    "delta_tokens": 40,
                    "source_id": f"call-{session_id}",
                },
                {
                    "id": "msg:1",
                    "category": "prompts",
                    "change": "replaced",
                    "tokens": 90,
                    "delta_tokens": -10,
                },
            ],
        }
        s = start
        flow = base * 100
        self.event(s, session, begin, "profile (1)", category="codex.metadata", args=profile)
        for uuid in (input_tokens, output_tokens, size):
            self.event(s, uuid, counter, value=0)
        self.event(s + 10, inputs, instant, "prompt-input", args={"source": "user"}, flows=(flow,))
        self.event(
            s + 10,
            prompts,
            begin,
            "prompt",
            args={"kind": "prompt", "text": "fix it"},
            flows=(flow, flow + 1, flow + 2),
        )
        response = {"kind": "assistant-message", **usage, "context": first}
        self.event(s + 20, responses, begin, "response", args=response, flows=(flow + 1, flow + 3))
        self.event(s + 20, prompts_ctr, counter, value=100)
        self.event(s + 20, size, counter, value=100)
        self.event(s + 30, responses, end)
        self.event(s + 30, input_tokens, counter, value=100)
        self.event(s + 30, output_tokens, counter, value=10)
        tool = {"kind": "tool-execution", "call_id": f"call-{session_id}", "is_error": False}
        self.event(s + 40, tools, begin, "exec_command", args=tool, flows=(flow + 2, flow + 3))
        self.event(s + 50, tools, end)
        response = {"kind": "assistant-message", **usage, "context": second}
        self.event(s + 60, responses, begin, "response", args=response)
        self.event(s + 60, prompts_ctr, counter, value=90)
        self.event(s + 60, results_ctr, counter, value=40)
        self.event(s + 60, size, counter, value=130)
        self.event(s + 70, responses, end)
        self.event(s + 70, input_tokens, counter, value=230)
        self.event(s + 70, output_tokens, counter, value=20)
        self.event(s + 80, prompts, end)
        for uuid in (input_tokens, output_tokens, size, prompts_ctr, results_ctr):
            self.event(s + 100, uuid, counter, value=0)
        self.event(s + 100, session, end)

    def view(self) -> TraceView:
        return load_trace(self.trace.SerializeToString())


def mini() -> MiniTrace:
    """A conforming one-session trace (capture uuid 1000, session "root", ts 10_000…10_100)."""
    trace = MiniTrace()
    trace.session(1000, "root", 10_000)
    return trace


# ---------------------------------------------------------------------------------------------
# Positive: the references (and a hand-built trace) conform
# ---------------------------------------------------------------------------------------------


@needs_references
@pytest.mark.parametrize("name", REFERENCES)
def test_reference_trace_conforms(name: str) -> None:
    # GIVEN a trace written by Agent Profiler itself
    view = load_trace(REFERENCE_DIR / f"{name}.pftrace")
    # WHEN it is checked against the contract THEN nothing is reported
    assert view.decode_problems == []
    assert check_contract(view) == []


@needs_references
def test_strict_mode_reports_what_the_references_relax() -> None:
    # Claude's profile has no context_window_tokens; Codex apply_patch tools have no is_error.
    claude = load_trace(REFERENCE_DIR / "claude-coding.pftrace")
    codex = load_trace(REFERENCE_DIR / "codex-coding.pftrace")
    assert_reported(check_contract(claude, strict=True), "profile:", "context_window_tokens")
    assert_reported(check_contract(codex, strict=True), "tool:", "apply_patch", "is_error")
    assert check_contract(load_trace(REFERENCE_DIR / "muse-coding.pftrace"), strict=True) == []


def test_hand_built_trace_conforms_with_a_subagent() -> None:
    trace = mini()
    trace.session(2000, "child", 10_005, parent_session="root")
    view = trace.view()
    assert view.decode_problems == []
    assert check_contract(view, strict=True) == []
    assert len(view.captures()) == 2


# ---------------------------------------------------------------------------------------------
# The decoder
# ---------------------------------------------------------------------------------------------


@needs_references
def test_decoder_reads_the_codex_reference_as_documented() -> None:
    view = load_trace(REFERENCE_DIR / "codex-coding.pftrace")
    assert view.packets == 119
    assert len(view.sequence_ids) == 1 and 0 not in view.sequence_ids
    assert [c.primary_trace_clock for c in view.clock_snapshots] == ["BUILTIN_CLOCK_REALTIME"]
    (capture,) = view.captures()
    assert view.tracks[capture.parent_uuid].process.name == "codex"  # type: ignore[index,union-attr]
    assert capture.sibling_merge_behavior == "SIBLING_MERGE_BEHAVIOR_NONE"
    profile = view.profile_of(capture.uuid)
    assert profile is not None and profile.args["capture_id"] == format(capture.uuid, "x")
    assert profile.arg_types["schema_version"] == "uint"
    assert profile.args["session_labels"] == ["scripted tools"]
    # §6: "Context: Tool results" decoded: 59, 2243, 2275, 2718, 2718, then 0 at session end.
    samples = view.counter_samples(capture.uuid, "Context: Tool results")
    assert [value for _, value in samples] == [59, 2243, 2275, 2718, 2718, 0]
    assert samples[-1][0] == profile.end
    # §7: 28 flows, each on exactly two events.
    assert len(view.flows) == 28
    assert {len(events) for events in view.flows.values()} == {2}
    # Every track of the session resolves to the capture.
    assert all(
        view.capture_of(t.uuid) == capture.uuid for t in view.tracks.values() if not t.is_process
    )
    tool = next(s for s in view.slices if s.name == "exec_command")
    assert tool.args["args"] == {"cmd": "pwd && rg --files", "max_output_tokens": 1500}
    assert tool.arg_types["args"] == "dict" and tool.type_at("args", "cmd") == "string"
    assert tool.args["keys"] == ["cmd", "max_output_tokens"]


def test_decoder_keeps_value_types_for_delta_tokens() -> None:
    view = mini().view()
    snapshot = view.snapshots()[1]
    changes = snapshot.args["context"]["changes"]
    assert [c["delta_tokens"] for c in changes] == [40, -10]
    assert snapshot.type_at("context", "changes", 0, "delta_tokens") == "uint"
    assert snapshot.type_at("context", "changes", 1, "delta_tokens") == "int"
    assert snapshot.type_at("context", "changes", 5, "delta_tokens") is None
    assert snapshot.typed("context", "baseline").value is False  # type: ignore[union-attr]


@needs_references
def test_decoder_marks_name_only_annotations_as_empty() -> None:
    # Claude's capture-start snapshot writes `changes` with no value: protobuf's empty array.
    view = load_trace(REFERENCE_DIR / "claude-coding.pftrace")
    first = view.snapshots()[0]
    assert first.name == "profile (1)"
    assert first.type_at("context", "changes") == "empty"
    assert first.args["context"]["changes"] is None


def test_decoder_matches_slices_and_instants() -> None:
    view = mini().view()
    prompt_input = view.slices_named("prompt-input")[0]
    assert prompt_input.instant and prompt_input.dur == 0 and prompt_input.complete
    responses = view.slices_of_kind("assistant-message")
    assert [(r.ts, r.dur) for r in responses] == [(10_020, 10), (10_060, 10)]
    (prompt,) = view.slices_named("prompt")
    assert prompt.end == 10_080 and len(prompt.flow_ids) == 3
    assert [s.name for s in view.flows[100_000]] == ["prompt-input", "prompt"]


def test_decoder_reads_extra_and_double_counter_values() -> None:
    trace = mini()
    event = trace.event(10_050, 1002, pb.TrackEvent.TYPE_INSTANT, "marker", args={})
    event.extra_counter_track_uuids.append(1008)  # Context size
    event.extra_counter_values.append(77)
    double = trace.event(10_055, 1008, pb.TrackEvent.TYPE_COUNTER)
    double.double_counter_value = 78.5
    view = trace.view()
    samples = view.counter_samples(1000, "Context size")
    assert (10_050, 77) in samples and (10_055, 78.5) in samples
    assert any(s.is_double and s.value == 78.5 for s in view.samples)


@needs_references
def test_decoder_resolves_interned_names() -> None:
    # GIVEN the codex reference rewritten with sequence-scoped interning
    plain = reference_trace("codex-coding")
    interned = intern_everything(reference_trace("codex-coding"))
    assert not any(p.track_event.name for p in interned.packet if p.HasField("track_event"))
    # WHEN both are decoded THEN they read the same, and the contract still holds
    plain_view, interned_view = load_trace(plain), load_trace(interned)
    assert interned_view.uses_interning and not plain_view.uses_interning
    assert interned_view.decode_problems == []
    text = interned_view.to_text().replace("interning: yes", "interning: no")
    assert text == plain_view.to_text()
    assert check_contract(interned_view) == []


def intern_everything(trace: Any) -> Any:
    """Move event names, categories, annotation names and strings to interned tables."""
    names: dict[str, int] = {}
    categories: dict[str, int] = {}
    annotation_names: dict[str, int] = {}
    strings: dict[str, int] = {}

    def iid(table: dict[str, int], value: str) -> int:
        return table.setdefault(value, len(table) + 1)

    def intern_annotation(item: Any, *, named: bool = True) -> None:
        if named:
            item.name_iid = iid(annotation_names, item.name)  # clears `name` (same oneof)
        if item.HasField("string_value"):
            item.string_value_iid = iid(strings, item.string_value)
        for child in item.dict_entries:
            intern_annotation(child)
        for child in item.array_values:
            intern_annotation(child, named=False)

    for packet in trace.packet:
        if not packet.HasField("track_event"):
            continue
        event = packet.track_event
        if event.name:
            event.name_iid = iid(names, event.name)
        for category in event.categories:
            event.category_iids.append(iid(categories, category))
        del event.categories[:]
        for item in event.debug_annotations:
            intern_annotation(item)
    first = trace.packet[0]
    first.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    data = first.interned_data
    for table, target in ((names, data.event_names), (categories, data.event_categories)):
        for value, number in table.items():
            target.add(iid=number, name=value)
    for value, number in annotation_names.items():
        data.debug_annotation_names.add(iid=number, name=value)
    for value, number in strings.items():
        data.debug_annotation_string_values.add(iid=number, str=value.encode())
    return trace


@pytest.mark.importer_broken  # an END without a BEGIN, a BEGIN never ended
def test_decoder_reports_unmatched_ends_and_open_slices() -> None:
    trace = mini()
    trace.event(10_001, 1004, pb.TrackEvent.TYPE_SLICE_END)  # Responses: nothing open yet
    trace.event(10_090, 1005, pb.TrackEvent.TYPE_SLICE_BEGIN, "dangling", args={"kind": "x"})
    view = trace.view()
    assert_reported(view.decode_problems, "SLICE_END without open slice")
    assert_reported(view.decode_problems, "'dangling'", "never ended")
    assert_reported(check_contract(view), "decode:", "never ended")


# ---------------------------------------------------------------------------------------------
# to_text
# ---------------------------------------------------------------------------------------------


@needs_references
@pytest.mark.parametrize("name", REFERENCES)
def test_to_text_is_deterministic(name: str) -> None:
    first = load_trace(REFERENCE_DIR / f"{name}.pftrace").to_text()
    second = load_trace((REFERENCE_DIR / f"{name}.pftrace").read_bytes()).to_text()
    assert first == second
    assert " at 0x" not in first and "object at" not in first


@needs_references
def test_to_text_shows_tree_events_and_typed_args() -> None:
    text = load_trace(REFERENCE_DIR / "codex-coding.pftrace").to_text()
    lines = text.splitlines()
    expected = [
        "  t0 process pid=1087335 name='codex' labels=[Codex]",
        "    t1 'agentprof.capture' merge=NONE",
        "      t14 'Context'",
        "        t18 'Context: Tool results' counter unit=UNIT_UNSPECIFIED unit_name=tokens "
        "share=llm.context.tokens",
        "  +0 S 'profile (1)' [t2 'Session'] cat=codex.metadata dur=12894000000",
        '      capture_id = s:"35a32d8e3c09096d"',
        "      schema_version = u:1",
        '      session_labels = [s:"scripted tools"]',
        "  +0 C [t10 'Input tokens'] = 0",
        "  +176000000 I 'prompt-input' [t3 'Inputs'] cat=codex.activity flows=f1",
        "            delta_tokens = u:826",
        "  +12894000000 C [t18 'Context: Tool results'] = 0",
    ]
    for line in expected:
        assert line in lines, line
    assert lines[:3] == ["packets: 119", "sequences: 2813778506", "interning: no"]
    # Args are listed with sorted keys.
    profile_at = lines.index(expected[4])
    keys = [line.split(" = ")[0].strip() for line in lines[profile_at + 1 : profile_at + 14]]
    assert keys == sorted(keys)


# ---------------------------------------------------------------------------------------------
# Negative: each rule can fail
# ---------------------------------------------------------------------------------------------

Mutation = Callable[[Any], None]


def drop_clock_snapshots(trace: Any) -> None:
    for index in reversed(range(len(trace.packet))):
        if trace.packet[index].HasField("clock_snapshot"):
            del trace.packet[index]


def drop_boottime(trace: Any) -> None:
    del trace.packet[0].clock_snapshot.clocks[1]


def primary_boottime(trace: Any) -> None:
    trace.packet[0].clock_snapshot.primary_trace_clock = pb.BUILTIN_CLOCK_BOOTTIME


def clock_not_first(trace: Any) -> None:
    move_packet(trace, lambda p: p.HasField("clock_snapshot"), len(trace.packet) - 1)


def events_on_boottime(trace: Any) -> None:
    for packet in trace.packet:
        if packet.HasField("track_event"):
            packet.timestamp_clock_id = 6


def two_sequences(trace: Any) -> None:
    """One event of a track moved to another sequence (its BEGIN and END no longer meet)."""
    event = next(p for p in trace.packet if p.HasField("track_event"))
    event.trusted_packet_sequence_id += 1


def sequence_zero(trace: Any) -> None:
    for packet in trace.packet:
        packet.ClearField("trusted_packet_sequence_id")


def rename_tool_results_counter(trace: Any) -> None:
    descriptors(trace)["Context: Tool results"][0].name = "Context: results"


def drop_final_zero(trace: Any) -> None:
    last = events_on(trace, "Context: Tool results")[-1]
    trace.packet.remove(last)


def drop_final_zero_of_input_tokens(trace: Any) -> None:
    trace.packet.remove(events_on(trace, "Input tokens")[-1])


def flow_on_three_events(trace: Any) -> None:
    flow = first_event(trace, lambda e: e.name == "prompt-input").flow_ids[0]
    first_event(trace, has_kind("turn")).flow_ids.append(flow)


def flow_on_one_event(trace: Any) -> None:
    first_event(trace, has_kind("turn")).flow_ids.append(123456789)


def response_without_kind(trace: Any) -> None:
    remove_annotation(first_event(trace, has_kind("assistant-message")), "kind")


def response_without_usage(trace: Any) -> None:
    remove_annotation(first_event(trace, has_kind("assistant-message")), "cache_read_tokens")


def estimated_differs_from_categories(trace: Any) -> None:
    entry(later_snapshot(trace), "estimated_tokens").uint_value += 1


def negative_delta_as_uint(trace: Any) -> None:
    change = entry(later_snapshot(trace), "changes").array_values[0]
    entry(change, "delta_tokens").uint_value = 2**64 - 5  # -5 written as uint64


def positive_delta_as_int(trace: Any) -> None:
    change = entry(later_snapshot(trace), "changes").array_values[0]
    delta = entry(change, "delta_tokens")
    delta.int_value = delta.uint_value


def tokens_as_string(trace: Any) -> None:
    change = entry(later_snapshot(trace), "changes").array_values[0]
    entry(change, "tokens").string_value = "12"


def legacy_change_kind(trace: Any) -> None:
    change = entry(later_snapshot(trace), "changes").array_values[0]
    entry(change, "change").string_value = "add"


def change_without_id(trace: Any) -> None:
    change = entry(later_snapshot(trace), "changes").array_values[0]
    for index, item in enumerate(change.dict_entries):
        if item.name == "id":
            del change.dict_entries[index]
            return


def too_many_changes(trace: Any) -> None:
    changes = entry(later_snapshot(trace), "changes")
    template = pb.DebugAnnotation()
    template.CopyFrom(changes.array_values[-1])
    entry(template, "delta_tokens").uint_value = 0
    while len(changes.array_values) <= 64:
        changes.array_values.add().CopyFrom(template)


def unsorted_changes(trace: Any) -> None:
    changes = entry(later_snapshot(trace), "changes")
    entry(changes.array_values[-1], "delta_tokens").uint_value = 10**6


def context_version_two(trace: Any) -> None:
    entry(later_snapshot(trace), "version").uint_value = 2


def unknown_stage(trace: Any) -> None:
    entry(later_snapshot(trace), "stage").string_value = "request"


def unknown_category_key(trace: Any) -> None:
    entry(entry(later_snapshot(trace), "categories"), "results").name = "tool_results"


def baseline_as_string(trace: Any) -> None:
    entry(later_snapshot(trace), "baseline").string_value = "false"


def every_snapshot_is_baseline(trace: Any) -> None:
    for packet in trace.packet:
        if packet.HasField("track_event"):
            for item in packet.track_event.debug_annotations:
                if item.name == "context":
                    entry(item, "baseline").bool_value = True


def no_snapshots(trace: Any) -> None:
    for packet in trace.packet:
        if packet.HasField("track_event"):
            with contextlib.suppress(KeyError):
                remove_annotation(packet.track_event, "context")


def wrong_category(trace: Any) -> None:
    event = first_event(trace, has_kind("assistant-message"))
    event.categories[0] = "llm.activity"


def capture_merged(trace: Any) -> None:
    descriptors(trace)["agentprof.capture"][0].ClearField("sibling_merge_behavior")


def track_outside_capture(trace: Any) -> None:
    process = descriptors(trace)[""][0]
    descriptors(trace)["Responses"][0].parent_uuid = process.uuid


def wrong_capture_id(trace: Any) -> None:
    profile = first_event(trace, has_kind("capture"))
    annotation(profile, "capture_id").string_value = (
        "0x" + annotation(profile, "capture_id").string_value
    )


def schema_version_as_int(trace: Any) -> None:
    profile = first_event(trace, has_kind("capture"))
    annotation(profile, "schema_version").int_value = 1


def profile_without_model(trace: Any) -> None:
    remove_annotation(first_event(trace, has_kind("capture")), "model")


def profile_renamed(trace: Any) -> None:
    first_event(trace, has_kind("capture")).name = "session"


def profile_on_activity_category(trace: Any) -> None:
    first_event(trace, has_kind("capture")).categories[0] = "codex.activity"


def tool_without_call_id(trace: Any) -> None:
    remove_annotation(first_event(trace, has_kind("tool-execution")), "call_id")


def is_error_as_string(trace: Any) -> None:
    annotation(first_event(trace, has_kind("tool-execution")), "is_error").string_value = "no"


def prompt_without_text(trace: Any) -> None:
    remove_annotation(first_event(trace, has_kind("prompt")), "text")


def input_tokens_decrease(trace: Any) -> None:
    events_on(trace, "Input tokens")[2].track_event.counter_value = 1


def no_context_size_counter(trace: Any) -> None:
    descriptors(trace)["Context size"][0].name = "Context total"


def input_tokens_in_bytes(trace: Any) -> None:
    descriptors(trace)["Input tokens"][0].counter.unit_name = "bytes"


def context_counter_without_share_key(trace: Any) -> None:
    descriptors(trace)["Context: Tool results"][0].counter.ClearField("y_axis_share_key")


def context_group_is_a_counter(trace: Any) -> None:
    descriptors(trace)["Context"][0].counter.unit_name = "tokens"


def results_counter_under_capture(trace: Any) -> None:
    capture = descriptors(trace)["agentprof.capture"][0]
    descriptors(trace)["Context: Tool results"][0].parent_uuid = capture.uuid


NEGATIVE_CASES: list[tuple[str, Mutation, tuple[str, ...]]] = [
    ("codex-coding", drop_clock_snapshots, ("clock:", "no clock_snapshot")),
    ("codex-coding", drop_boottime, ("clock:", "lacks BOOTTIME")),
    ("codex-coding", primary_boottime, ("clock:", "not BUILTIN_CLOCK_REALTIME")),
    ("codex-coding", clock_not_first, ("clock:", "first packet is track_descriptor")),
    ("codex-coding", events_on_boottime, ("clock:", "clock id 6")),
    ("codex-coding", two_sequences, ("sequence:", "has events on sequences")),
    ("codex-coding", sequence_zero, ("sequence:", "0")),
    ("codex-coding", rename_tool_results_counter, ("context-counter:", "'Context: results'")),
    ("codex-coding", rename_tool_results_counter, ("has no 'Context: Tool results'",)),
    ("codex-coding", drop_final_zero, ("counter:", "'Context: Tool results'", "closing 0")),
    ("muse-coding", drop_final_zero_of_input_tokens, ("'Input tokens'", "closing 0")),
    ("codex-coding", flow_on_three_events, ("flow:", "appears on 3 events")),
    ("claude-coding", flow_on_one_event, ("flow:", "id 123456789", "on 1 events")),
    ("codex-coding", response_without_kind, ("kind:", "'response'", "no 'kind'")),
    ("claude-coding", response_without_usage, ("response:", "cache_read_tokens", "missing")),
    ("codex-coding", estimated_differs_from_categories, ("context:", "!= sum of categories")),
    ("codex-coding", negative_delta_as_uint, ("delta_tokens", "wrapped negative")),
    ("muse-coding", positive_delta_as_int, ("delta_tokens", "must be a uint, not an int")),
    ("muse-coding", tokens_as_string, ("context:", "tokens must be a uint", "string")),
    ("codex-coding", legacy_change_kind, ("change must be one of", "'add'")),
    ("codex-coding", change_without_id, ("changes[0] id must be a string",)),
    ("codex-coding", too_many_changes, ("context:", "at most 64")),
    ("muse-coding", unsorted_changes, ("sorted by |delta_tokens|",)),
    ("codex-coding", context_version_two, ("version must be uint 1",)),
    ("codex-coding", unknown_stage, ("stage must be one of", "'request'")),
    ("muse-coding", unknown_category_key, ("unknown category key 'tool_results'",)),
    ("codex-coding", baseline_as_string, ("baseline must be a bool",)),
    ("codex-coding", every_snapshot_is_baseline, ("example:", "no non-baseline snapshot")),
    ("codex-coding", no_snapshots, ("example:", "has no context snapshot")),
    ("codex-coding", wrong_category, ("category:", "'llm.activity'")),
    ("codex-coding", capture_merged, ("capture:", "SIBLING_MERGE_BEHAVIOR_NONE")),
    ("codex-coding", track_outside_capture, ("track:", "'Responses'", "not below any")),
    ("codex-coding", wrong_capture_id, ("profile:", "capture_id '0x35a32d8e3c09096d'")),
    ("codex-coding", schema_version_as_int, ("schema_version must be uint 1", "int 1")),
    ("muse-coding", profile_without_model, ("profile:", "model must be a string", "missing")),
    ("codex-coding", profile_renamed, ("profile:", "0 'profile (N)' slices")),
    ("codex-coding", profile_on_activity_category, ("profile:", "'<harness>.metadata'")),
    ("codex-coding", tool_without_call_id, ("tool:", "call_id must be a string")),
    ("claude-coding", is_error_as_string, ("is_error must be a bool", "string 'no'")),
    ("claude-coding", prompt_without_text, ("prompt:", "text must be a string")),
    ("codex-coding", input_tokens_decrease, ("'Input tokens' must be cumulative",)),
    ("codex-coding", no_context_size_counter, ("counter:", "no 'Context size' counter")),
    ("codex-coding", input_tokens_in_bytes, ("'Input tokens' unit_name is 'bytes'",)),
    ("muse-coding", context_counter_without_share_key, ("context-counter:", "y_axis_share_key")),
    ("claude-coding", context_group_is_a_counter, ("plain (non-counter) 'Context' track",)),
    ("codex-coding", results_counter_under_capture, ("'Context: Tool results'", "plain")),
]


@needs_references
@pytest.mark.importer_broken  # some mutations break the importer's rules too
@pytest.mark.parametrize(
    ("name", "mutate", "fragments"),
    NEGATIVE_CASES,
    ids=[f"{case[1].__name__}-{case[0]}" for case in NEGATIVE_CASES],
)
def test_checker_reports_broken_reference(
    name: str, mutate: Mutation, fragments: tuple[str, ...]
) -> None:
    # GIVEN a reference trace with one rule broken
    trace = reference_trace(name)
    mutate(trace)
    # WHEN it is checked THEN that rule is reported
    assert_reported(problems_of(trace), *fragments)


@needs_references
def test_require_addition_can_be_turned_off() -> None:
    trace = reference_trace("codex-coding")
    every_snapshot_is_baseline(trace)
    assert_reported(problems_of(trace), "example:", "no non-baseline snapshot")
    assert problems_of(trace, require_addition=False) == []


def test_extras_may_use_another_category() -> None:
    # Our "Largest additions" instants carry neither kind nor context, so they may stay outside
    # the accepted prefixes; the same instant with a `kind` may not.
    trace = mini()
    trace.event(
        10_061, 1005, pb.TrackEvent.TYPE_INSTANT, "#1 +40", category="additions", args={"n": 1}
    )
    assert check_contract(trace.view()) == []
    trace.event(
        10_062, 1005, pb.TrackEvent.TYPE_INSTANT, "#2", category="additions", args={"kind": "x"}
    )
    assert_reported(check_contract(trace.view()), "category:", "'#2'", "'additions'")


def test_prompt_input_needs_an_accepted_category() -> None:
    trace = mini()
    first_event(trace.trace, lambda e: e.name == "prompt-input").categories[0] = "inputs"
    assert_reported(check_contract(trace.view()), "category:", "'prompt-input'")


def test_subagent_parent_session_must_name_a_capture_in_the_file() -> None:
    trace = mini()
    trace.session(2000, "child", 10_005, parent_session="someone-else")
    assert_reported(check_contract(trace.view()), "subagent:", "'someone-else'", "not a capture")


def test_a_subagent_exported_alone_may_name_a_parent_outside_the_file() -> None:
    # GIVEN a trace whose only capture is a subagent (its parent journal was not passed)
    trace = MiniTrace()
    trace.session(1000, "child", 10_000, parent_session="not-exported")
    # THEN parent_session alone marks it a subagent (§7): nothing to report
    assert check_contract(trace.view()) == []


def test_subagent_must_start_inside_its_parent() -> None:
    trace = mini()
    trace.session(2000, "child", 10_500, parent_session="root")
    assert_reported(check_contract(trace.view()), "subagent:", "outside its parent's window")


def test_one_capture_per_session() -> None:
    trace = mini()
    trace.session(2000, "root", 10_005)
    assert_reported(check_contract(trace.view()), "capture:", "'root' has 2 captures")


def test_nested_capture_must_be_declared_after_its_parent() -> None:
    # GIVEN capture 2000 nested inside capture 1000
    trace = mini()
    trace.session(2000, "child", 10_005, parent_session="root")
    child = next(d for d in descriptors(trace.trace)["agentprof.capture"] if d.uuid == 2000)
    child.parent_uuid = 1000
    # THEN declared after its parent it is fine …
    assert check_contract(trace.view()) == []
    # … but declared before it, their SQL attributes its slices to the parent.
    move_packet(trace.trace, lambda p: p.track_descriptor.uuid == 2000, 2)
    assert_reported(check_contract(trace.view()), "capture:", "declared before it")


@needs_references
def test_partial_overlap_on_one_track_is_reported() -> None:
    # BEGIN/END decoding always nests, so overlap is produced on the decoded view directly.
    view = load_trace(REFERENCE_DIR / "codex-coding.pftrace")
    first, second = view.slices_of_kind("assistant-message")[:2]
    first.dur = second.ts - first.ts + 1
    assert_reported(check_contract(view), "nesting:", "partially overlaps")


def test_flow_pointing_back_in_time_is_reported() -> None:
    # Swapping the file order of the two endpoints of one flow makes the source the later one.
    trace = mini()
    instant = first_event(trace.trace, lambda e: e.name == "prompt-input")
    target = first_event(trace.trace, has_kind("tool-execution"))
    instant.flow_ids.append(555)
    target.flow_ids.append(555)
    move_packet(trace.trace, lambda p: p.track_event == target, 3)
    assert_reported(check_contract(trace.view()), "flow:", "id 555", "points back in time")


def test_arrows_the_ui_draws_backwards_from_a_prompt_are_reported_on_request() -> None:
    """ui.perfetto.dev draws an arrow from its source's end unless the source starts at or
    after its target, or the target descends from it on its track (flow_events_renderer.ts
    l.86-92). The hand-built trace's prompt (as agentprof's) spans its turn and starts the
    flows to its response and tool: both loop back. Its input → prompt arrow (same start)
    and response → tool arrow (the response ends before the tool starts) run forwards."""
    view = mini().view()
    assert check_contract(view) == []
    backwards = drawn_backwards(view)
    assert [(s.name, t.name) for s, t in backwards] == [
        ("prompt", "response"),
        ("prompt", "exec_command"),
    ]
    problems = check_contract(view, forward_arrows=True)
    assert len(problems) == 2 and all("is drawn backwards" in p for p in problems)
    assert_reported(problems, "flow:", "'prompt' at ts=10010", "'response' at ts=10020")
    prompt, response = backwards[0]
    assert drawn_start(prompt, response) == prompt.end
    # a target nested in its source on the source's track: from the source's start
    assert drawn_start(prompt, replace(response, track_uuid=prompt.track_uuid)) == prompt.ts
    # nested in time only, on another track: from the end
    assert drawn_start(prompt, replace(response, dur=1)) == prompt.end
    # a source starting at or after its target: from its start
    assert drawn_start(prompt, replace(response, ts=prompt.ts)) == prompt.ts
    assert drawn_start(response, prompt) == response.ts


def test_empty_trace_reports_the_basics() -> None:
    problems = check_contract(load_trace(b""))
    assert_reported(problems, "clock:", "no clock_snapshot")
    assert_reported(problems, "capture:", "no 'agentprof.capture' track")
    assert_reported(problems, "example:", "no 'Context: *' counter")


def test_every_context_label_is_accepted() -> None:
    trace = mini()
    for offset, label in enumerate(CONTEXT_LABELS.values()):
        if label in ("User prompts", "Tool results"):
            continue
        uuid = 5000 + offset
        trace.track(uuid, f"Context: {label}", 1009, counter=True, share=True)
        trace.event(10_060, uuid, pb.TrackEvent.TYPE_COUNTER, value=5)
        trace.event(10_100, uuid, pb.TrackEvent.TYPE_COUNTER, value=0)
    assert check_contract(trace.view()) == []
