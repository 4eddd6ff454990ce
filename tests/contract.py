"""TRACE_CONTRACT.md as executable checks: `check_contract(view) -> list[str]`.

Each problem is one human-readable line starting with a rule tag (`clock:`, `sequence:`,
`category:`, `capture:`, `track:`, `profile:`, `kind:`, `response:`, `tool:`, `prompt:`,
`counter:`, `context-counter:`, `context:`, `example:`, `flow:`, `nesting:`, `subagent:`,
`decode:`); an empty list means the trace conforms. The checks cover §8's checklist, the example
check at the end of §8 and the SAFE rules of §1–§7 (clock snapshot, a track's events on one
sequence, typing of values, flows, nesting), and, on request, one rule of ours for
ui.perfetto.dev: no arrow from a prompt or its input is drawn backwards (`drawn_backwards`, the
UI's rule). HABIT rules (track names other than the required ones, machine_id, packet order,
lanes) are deliberately not checked.

Where the reference traces show that a rule needs a narrower reading than a one-line summary
suggests, the decision is documented next to the check (search for "Reference traces:").
"""

from __future__ import annotations

import itertools
import re
from collections import Counter, defaultdict
from collections.abc import Iterator

from traceview import CAPTURE_TRACK_NAME, PROFILE_NAME_RE, Slice, TraceView, Track, Typed

CLOCK_REALTIME = 1
CLOCK_BOOTTIME = 6
ACCEPTED_PREFIXES = ("claude", "codex", "pi", "muse", "agentprof")
ACCEPTED_CATEGORY_RE = re.compile(r"^(claude|codex|pi|muse|agentprof)\.[^,]+$")
# harness annotation → category prefix (§3); any other harness must use the agentprof fallback.
HARNESS_PREFIX = {"claude-code": "claude", "codex": "codex", "muse": "muse", "pi": "pi"}
CONTEXT_LABELS: dict[str, str] = {
    "system": "System instructions",
    "rules": "Rules and memory",
    "skills": "Skills",
    "tools": "Tool definitions",
    "environment": "Environment",
    "prompts": "User prompts",
    "assistant": "Assistant history",
    "results": "Tool results",
    "summaries": "Compaction summaries",
    "overhead": "Harness overhead",
    "messages": "Conversation",
    "unattributed": "Unattributed",
}
CONTEXT_COUNTER_PREFIX = "Context: "
CONTEXT_GROUP_NAME = "Context"
SHARE_KEY = "llm.context.tokens"
TOKENS_UNIT = "tokens"
REQUIRED_COUNTERS = ("Input tokens", "Output tokens", "Context size")
CUMULATIVE_COUNTERS = ("Input tokens", "Output tokens")
STAGES = ("request-input", "capture-start", "post-compaction", "transcript-observed")
# chars/calibrated-v3 is our extension of the contract's list (docs/traces.md): opt-in.
BASES = ("native-summary", "native-bytes/4", "chars/4", "chars/calibrated-v3")
COVERAGES = ("complete", "partial")
CHANGE_KINDS = ("baseline", "added", "replaced", "removed")
MAX_CHANGES = 64
UINT_SIGN_BIT = 1 << 63
PROFILE_REQUIRED_STRINGS = ("session_id", "capture_id", "harness", "provider", "model")
RESPONSE_TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
TOOL_KINDS = ("tool-execution", "script")
# Slices named like this are read by the UI even without `kind` (§3, §4), so they never count as
# "extras" that may leave the accepted category prefixes.
UI_NAMES_WITHOUT_KIND = ("prompt-input", "run-configuration")
# Optional keys whose wire type is fixed by §3–§5 when they are present.
OPTIONAL_UINT_ARGS = (
    "first_content_ns",
    "duration_ns",
    "pre_tokens",
    "post_tokens",
    "tokens_before",
    "tokens_after",
    "peak_context_tokens",
)
BOOL_ARGS = ("incomplete", "is_error", "args_truncated")
OPTIONAL_CONTEXT_UINTS = (
    "reported_tokens",
    "window_tokens",
    "effective_window_tokens",
    "compact_threshold_tokens",
    "omitted_changes",
    "sample_offset_ns",
)
OPTIONAL_CONTEXT_STRINGS = ("item_stage", "model")
OPTIONAL_CHANGE_STRINGS = ("source_id", "label", "source_kind")


def check_contract(
    view: TraceView,
    *,
    require_addition: bool = True,
    strict: bool = False,
    forward_arrows: bool = False,
) -> list[str]:
    """Problems that keep `view` from lighting up Agent Profiler's Overview and Context tabs.

    `require_addition` enables the strictest line of §8's example check (some non-baseline
    snapshot has a change with `delta_tokens > 0`); turn it off for tiny journals whose context
    never grows after the first snapshot.

    `strict` adds two rules that §8 states but the reference traces themselves relax (so they are
    off by default): `context_window_tokens` on `profile (N)` itself rather than only on a
    `run-configuration` slice, and `is_error` on every tool slice even when the outcome is unknown.

    `forward_arrows` adds a rule of ours, not the contract's (its flows are HABIT, §7): no
    arrow from a prompt or its input is drawn backwards in ui.perfetto.dev (`drawn_backwards`).
    The reference traces break it (their prompt → response flows leave the prompt, which spans
    the turn), so it is off by default; every trace we export is checked with it.
    """
    problems: list[str] = [f"decode: {problem}" for problem in view.decode_problems]
    # Perfetto's importer rules (importer_rules.py), for views decoded from bytes.
    problems += [f"importer: {f}" for f in view.import_findings if f.severity != "note"]
    problems += _check_clocks(view)
    problems += _check_sequences(view)
    problems += _check_tracks(view)
    problems += _check_track_identity(view)
    problems += _check_categories(view)
    problems += _check_profiles(view, strict=strict)
    problems += _check_operations(view, strict=strict)
    problems += _check_counters(view)
    for slice_ in view.slices:
        if "context" in slice_.typed_args:
            problems += _check_context(view, slice_)
    problems += _check_example(view, require_addition=require_addition)
    problems += _check_flows(view, forward_arrows=forward_arrows)
    problems += _check_nesting(view)
    problems += _check_subagents(view)
    return problems


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------


def where(view: TraceView, slice_: Slice) -> str:
    """`'response' at ts=… on 'Responses'` — enough to find a slice in `to_text()` output."""
    track = view.tracks.get(slice_.track_uuid)
    track_name = track.name if track is not None else str(slice_.track_uuid)
    return f"{slice_.name!r} at ts={slice_.ts} on {track_name!r}"


def _capture_label(view: TraceView, capture_uuid: int) -> str:
    profile = view.profile_of(capture_uuid)
    session = profile.args.get("session_id") if profile is not None else None
    return f"capture {format(capture_uuid, 'x')}" + (f" (session {session})" if session else "")


def _is_uint(value: Typed | None) -> bool:
    return value is not None and value.type == "uint" and value.value < UINT_SIGN_BIT


def _is_string(value: Typed | None) -> bool:
    return value is not None and value.type == "string"


def _is_boolish(value: Typed | None) -> bool:
    """§4: `incomplete`, `is_error`, `baseline` must be booleans (or 0/1)."""
    if value is None:
        return False
    return value.type == "bool" or (value.type in ("uint", "int") and value.value in (0, 1))


def _type_name(value: Typed | None) -> str:
    if value is None:
        return "missing"
    if value.type == "uint" and value.value >= UINT_SIGN_BIT:
        return f"uint {value.value} (a wrapped negative number?)"
    return (
        value.type if value.type in ("dict", "array", "empty") else f"{value.type} {value.value!r}"
    )


def _expect_uint(label: str, value: Typed | None) -> Iterator[str]:
    if not _is_uint(value):
        yield f"{label} must be a uint, got {_type_name(value)}"


def _expect_string(label: str, value: Typed | None, *, non_empty: bool = False) -> Iterator[str]:
    if not _is_string(value):
        yield f"{label} must be a string, got {_type_name(value)}"
    elif non_empty and not value.value:  # type: ignore[union-attr]
        yield f"{label} must not be empty"


def _as_list(value: Typed | None) -> list[Typed] | None:
    """Array items; a name-only annotation ("empty") is how an empty array is encoded."""
    if value is None:
        return None
    if value.type == "array":
        return list(value.value)
    if value.type == "empty":
        return []
    return None


def _as_dict(value: Typed | None) -> dict[str, Typed] | None:
    if value is None:
        return None
    if value.type == "dict":
        return dict(value.value)
    if value.type == "empty":
        return {}
    return None


def _prefix(category: str) -> str | None:
    match = ACCEPTED_CATEGORY_RE.match(category)
    return match.group(1) if match else None


# ---------------------------------------------------------------------------------------------
# §1 packets and clocks
# ---------------------------------------------------------------------------------------------


def _check_clocks(view: TraceView) -> Iterator[str]:
    if not view.clock_snapshots:
        yield "clock: no clock_snapshot packet (Trace Processor drops REALTIME events without one)"
        return
    if view.packet_kinds and view.packet_kinds[0] != "clock_snapshot":
        first = view.packet_kinds[0] or "empty packet"
        yield f"clock: first packet is {first}, not a clock_snapshot"
    for number, snapshot in enumerate(view.clock_snapshots):
        label = f"clock: snapshot #{number} (packet {snapshot.packet_index})"
        if CLOCK_REALTIME not in snapshot.clocks:
            yield f"{label} lacks REALTIME (clock id 1)"
        if CLOCK_BOOTTIME not in snapshot.clocks:
            yield f"{label} lacks BOOTTIME (clock id 6): clock_sync_unrelatable_clock_domains"
        if snapshot.primary_trace_clock != "BUILTIN_CLOCK_REALTIME":
            primary = snapshot.primary_trace_clock or "unset"
            yield f"{label} primary_trace_clock is {primary}, not BUILTIN_CLOCK_REALTIME"
    for clock_id, count in sorted(view.event_clock_ids.items()):
        # REALTIME itself, or deltas on an incremental clock a snapshot ties to REALTIME
        # (our writer's CLOCK_DELTA, docs/traces.md): either way the events are on REALTIME.
        if clock_id != CLOCK_REALTIME and clock_id not in view.realtime_delta_clocks:
            yield f"clock: {count} track events use clock id {clock_id}, not REALTIME (1)"


def _check_sequences(view: TraceView) -> Iterator[str]:
    if 0 in view.sequence_ids:
        yield "sequence: some packets have trusted_packet_sequence_id 0 (or none)"
    # One sequence per journal group is ours (docs/traces.md; theirs is one per file): what
    # must hold is that a track's events, and so its slices' BEGIN and END, share one.
    for uuid, sequences in sorted(view.track_sequences.items()):
        if len(sequences) > 1:
            name = view.tracks[uuid].name if uuid in view.tracks else str(uuid)
            yield f"sequence: track {name!r} has events on sequences {sorted(sequences)}"


# ---------------------------------------------------------------------------------------------
# §2 track tree
# ---------------------------------------------------------------------------------------------


def _check_tracks(view: TraceView) -> Iterator[str]:
    captures = view.captures()
    if not captures:
        yield f"capture: no {CAPTURE_TRACK_NAME!r} track"
    for capture in captures:
        if capture.sibling_merge_behavior != "SIBLING_MERGE_BEHAVIOR_NONE":
            yield (
                f"capture: {format(capture.uuid, 'x')} has sibling_merge_behavior "
                f"{capture.sibling_merge_behavior}, not SIBLING_MERGE_BEHAVIOR_NONE "
                "(same-named captures would be merged into one session)"
            )
        for ancestor in view.ancestors(capture.uuid)[1:]:
            # §7: their SQL takes the highest track id among capture ancestors, so a capture
            # nested in another one works only when declared after it.
            if ancestor.name == CAPTURE_TRACK_NAME and ancestor.order > capture.order:
                yield (
                    f"capture: {format(capture.uuid, 'x')} is nested in capture "
                    f"{format(ancestor.uuid, 'x')} but declared before it"
                )
    # Tracks above the captures (ours: the trace's root and each session's group track,
    # docs/traces.md) hold no events: nothing is outside a session.
    grouping = {
        ancestor.uuid
        for capture in captures
        for ancestor in view.ancestors(capture.uuid)[1:]
        if ancestor.name != CAPTURE_TRACK_NAME
    }
    busy = {s.track_uuid for s in view.slices} | {s.track_uuid for s in view.samples}
    for uuid in sorted(grouping & busy):
        yield f"track: {view.tracks[uuid].name!r} above a capture holds events"
    for track in view.tracks.values():
        if track.parent_uuid is not None and track.parent_uuid not in view.tracks:
            yield f"track: {track.name!r} ({track.uuid}) has undeclared parent {track.parent_uuid}"
        if track.is_process or track.name == CAPTURE_TRACK_NAME or track.uuid in grouping:
            continue
        if view.capture_of(track.uuid) is None:
            yield f"track: {track.name!r} ({track.uuid}) is not below any {CAPTURE_TRACK_NAME!r}"


def _check_track_identity(view: TraceView) -> Iterator[str]:
    """Every track uuid is declared once and every event lands on a declared track.

    The decoder keeps the first of two descriptors with one uuid when they agree, so two
    sessions hashed to the same tracks (one session in two files, issue 15) would look like
    one; count the descriptor packets instead. Our writer never re-emits a descriptor."""
    declared = view.packet_kinds.count("track_descriptor")
    if declared != len(view.tracks):
        yield (
            f"track: {declared} descriptors for {len(view.tracks)} uuids "
            "(two sessions or tracks share a uuid)"
        )
    for slice_ in view.slices:
        if slice_.track_uuid not in view.tracks:
            yield f"track: {where(view, slice_)} is on undeclared track {slice_.track_uuid}"
    undeclared = {s.track_uuid for s in view.samples} - view.tracks.keys()
    for uuid in sorted(undeclared):
        yield f"track: counter samples on undeclared track {uuid}"


def _check_categories(view: TraceView) -> Iterator[str]:
    for slice_ in view.slices:
        category = slice_.category
        if ACCEPTED_CATEGORY_RE.match(category):
            continue
        # Extras the UI must not see (our "Largest additions" instants, §9) may use any category
        # as long as they carry neither `kind` nor `context`; slices the UI reads by name may not.
        is_extra = (
            "kind" not in slice_.args
            and "context" not in slice_.args
            and slice_.name not in UI_NAMES_WITHOUT_KIND
            and not PROFILE_NAME_RE.match(slice_.name)
        )
        if not is_extra:
            yield (
                f"category: {where(view, slice_)} has category {category or '(none)'!r}; "
                f"expected one of {', '.join(p + '.*' for p in ACCEPTED_PREFIXES)}"
            )
    for capture in view.captures():
        prefixes = Counter(
            prefix for s in view.slices_in_capture(capture.uuid) if (prefix := _prefix(s.category))
        )
        if len(prefixes) > 1:
            yield (
                f"category: {_capture_label(view, capture.uuid)} mixes category prefixes "
                f"{sorted(prefixes)}"
            )


# ---------------------------------------------------------------------------------------------
# §3 profile (1)
# ---------------------------------------------------------------------------------------------


def _check_profiles(view: TraceView, *, strict: bool) -> Iterator[str]:
    sessions: dict[str, list[int]] = defaultdict(list)
    for capture in view.captures():
        label = _capture_label(view, capture.uuid)
        capture_slices = view.slices_in_capture(capture.uuid)
        profiles = [s for s in capture_slices if PROFILE_NAME_RE.match(s.name)]
        if len(profiles) != 1:
            yield f"profile: {label} has {len(profiles)} 'profile (N)' slices, expected 1"
        if not profiles:
            continue
        profile = profiles[0]
        at = f"profile: {label}"
        prefix = _prefix(profile.category)
        if prefix is None or profile.category != f"{prefix}.metadata":
            yield f"{at} category {profile.category!r} is not '<harness>.metadata'"
        if profile.args.get("kind") != "capture" or profile.arg_types.get("kind") != "string":
            yield f"{at} kind must be string 'capture', got {_type_name(profile.typed('kind'))}"
        version = profile.typed("schema_version")
        if not (_is_uint(version) and version.value == 1):  # type: ignore[union-attr]
            yield f"{at} schema_version must be uint 1, got {_type_name(version)}"
        for key in PROFILE_REQUIRED_STRINGS:
            yield from _expect_string(f"{at} {key}", profile.typed(key), non_empty=True)
        window = profile.typed("context_window_tokens")
        if window is not None or strict:
            yield from _expect_uint(f"{at} context_window_tokens", window)
        else:
            # Reference traces: Claude's profile has no context_window_tokens; the window is on
            # its `run-configuration` slice (and on every response). Accept that fallback.
            configurations = [s for s in capture_slices if s.name == "run-configuration"]
            if not any(_is_uint(s.typed("context_window_tokens")) for s in configurations):
                yield (
                    f"{at} context_window_tokens must be a uint on the profile "
                    "(or at least on a run-configuration slice), got missing"
                )
        capture_id = profile.args.get("capture_id")
        if isinstance(capture_id, str) and capture_id != format(capture.uuid, "x"):
            yield (
                f"{at} capture_id {capture_id!r} != format(capture uuid, 'x') "
                f"{format(capture.uuid, 'x')!r}"
            )
        harness = profile.args.get("harness")
        expected = HARNESS_PREFIX.get(harness, "agentprof") if isinstance(harness, str) else None
        if prefix is not None and expected is not None and prefix != expected:
            yield (
                f"{at} harness {harness!r} should use category prefix {expected!r}, not {prefix!r}"
            )
        for key in ("parent_session", "child_role", "agent_id", "effort", "label"):
            if key in profile.typed_args:
                yield from _expect_string(f"{at} {key}", profile.typed(key))
        session_id = profile.args.get("session_id")
        if isinstance(session_id, str):
            sessions[session_id].append(capture.uuid)
        # "from session start to session end": everything of the capture lies inside it.
        outside = [s for s in capture_slices if s.ts < profile.ts or s.end > profile.end]
        counter_uuids = {t.uuid for t in view.counter_tracks(capture.uuid)}
        late = [
            s
            for s in view.samples
            if s.track_uuid in counter_uuids and not profile.ts <= s.ts <= profile.end
        ]
        for slice_ in outside[:3]:
            yield f"{at} does not span {where(view, slice_)} (ends at {slice_.end})"
        if late:
            yield f"{at} does not span {len(late)} counter samples of its capture"
    for session_id, uuids in sessions.items():
        if len(uuids) > 1:
            yield f"capture: session {session_id!r} has {len(uuids)} captures, expected 1"


# ---------------------------------------------------------------------------------------------
# §4 operation slices
# ---------------------------------------------------------------------------------------------


def _check_operations(view: TraceView, *, strict: bool) -> Iterator[str]:
    for slice_ in view.slices:
        at = where(view, slice_)
        kind_value = slice_.typed("kind")
        if kind_value is not None and not _is_string(kind_value):
            yield f"kind: {at} kind must be a string, got {_type_name(kind_value)}"
        # Reference traces: every non-instant `<h>.activity` slice carries `kind`; the ones
        # without it are `prompt-input` instants (read by name) and `run-configuration` on a
        # `<h>.metadata` category (claude/codex omit kind, muse writes `configuration`). So an
        # "operation slice" is a non-instant slice with an accepted, non-metadata category.
        # Extras outside the accepted prefixes are invisible to the UI and need no kind.
        category = slice_.category
        is_operation = (
            not slice_.instant
            and ACCEPTED_CATEGORY_RE.match(category) is not None
            and not category.endswith(".metadata")
        )
        if is_operation and kind_value is None:
            yield f"kind: {at} (category {category}) has no 'kind' annotation"
        for key in BOOL_ARGS:
            if key in slice_.typed_args and not _is_boolish(slice_.typed(key)):
                yield f"kind: {at} {key} must be a bool, got {_type_name(slice_.typed(key))}"
        for key in OPTIONAL_UINT_ARGS:
            if key in slice_.typed_args:
                yield from _expect_uint(f"kind: {at} {key}", slice_.typed(key))
        kind = slice_.kind
        if kind == "assistant-message":
            for key in RESPONSE_TOKEN_KEYS:
                yield from _expect_uint(f"response: {at} {key}", slice_.typed(key))
            for key in ("model", "provider"):
                if key in slice_.typed_args:
                    yield from _expect_string(f"response: {at} {key}", slice_.typed(key))
        elif kind in TOOL_KINDS:
            yield from _expect_string(
                f"tool: {at} call_id", slice_.typed("call_id"), non_empty=True
            )
            # Reference traces: Codex `apply_patch` tools omit is_error (outcome unknown); the UI
            # reads it when present, so only its type is checked unless `strict`.
            is_error = slice_.typed("is_error")
            if strict and not _is_boolish(is_error):
                yield f"tool: {at} is_error must be a bool, got {_type_name(is_error)}"
            if "args" in slice_.typed_args and _as_dict(slice_.typed("args")) is None:
                yield f"tool: {at} args must be a dict, got {_type_name(slice_.typed('args'))}"
        elif kind == "prompt":
            if slice_.name != "prompt":
                yield f"prompt: {at} has kind 'prompt' but its name must be 'prompt'"
            yield from _expect_string(f"prompt: {at} text", slice_.typed("text"))
        elif kind == "child-operation":
            yield from _expect_string(
                f"subagent: {at} child_session", slice_.typed("child_session"), non_empty=True
            )


# ---------------------------------------------------------------------------------------------
# §6 counters
# ---------------------------------------------------------------------------------------------


def _check_counters(view: TraceView) -> Iterator[str]:
    for uuid in view.counters:
        track = view.tracks.get(uuid)
        if track is not None and not track.is_counter:
            yield f"counter: samples on non-counter track {track.name!r} ({uuid})"
    for track in view.counter_tracks():
        samples = view.counters.get(track.uuid, [])
        if samples and samples[-1][1] != 0:
            yield (
                f"counter: {track.name!r} ({track.uuid}) last sample is {samples[-1][1]} at "
                f"ts={samples[-1][0]}, expected a closing 0"
            )
        if track.name.startswith(CONTEXT_COUNTER_PREFIX) or _parent_name(view, track) == (
            CONTEXT_GROUP_NAME
        ):
            yield from _check_context_counter(view, track)
    for capture in view.captures():
        label = _capture_label(view, capture.uuid)
        for name in REQUIRED_COUNTERS:
            found = view.counters_named(capture.uuid, name)
            if not found:
                yield f"counter: {label} has no {name!r} counter"
                continue
            track = found[0]
            if track.unit_name != TOKENS_UNIT:
                yield f"counter: {label} {name!r} unit_name is {track.unit_name!r}, not 'tokens'"
            if not view.counters.get(track.uuid):
                yield f"counter: {label} {name!r} has no samples"
            if name == "Context size" and track.y_axis_share_key != SHARE_KEY:
                yield (
                    f"counter: {label} 'Context size' y_axis_share_key is "
                    f"{track.y_axis_share_key!r}, not {SHARE_KEY!r}"
                )
        for name in CUMULATIVE_COUNTERS:
            track_or_none = view.counter_by_name(capture.uuid, name)
            values = (
                [v for _, v in view.counters.get(track_or_none.uuid, [])] if track_or_none else []
            )
            body = values[:-1] if values and values[-1] == 0 else values
            for earlier, later in itertools.pairwise(body):
                if later < earlier:
                    yield (
                        f"counter: {label} {name!r} must be cumulative (non-decreasing before the "
                        f"closing 0), but goes {earlier} → {later}"
                    )
                    break
        labels = Counter(
            t.name
            for t in view.counter_tracks(capture.uuid)
            if t.name.startswith(CONTEXT_COUNTER_PREFIX)
        )
        for name, count in sorted(labels.items()):
            if count > 1:
                yield f"context-counter: {label} has {count} {name!r} counters, expected 1"
        # Every category a snapshot reports needs its `Context: <Label>` counter.
        reported: set[str] = set()
        for snapshot in view.snapshots(capture.uuid):
            categories = _as_dict(snapshot.typed("context", "categories")) or {}
            reported |= {key for key in categories if key in CONTEXT_LABELS}
        for key in sorted(reported):
            counter_name = CONTEXT_COUNTER_PREFIX + CONTEXT_LABELS[key]
            if counter_name not in labels:
                yield (
                    f"context-counter: {label} reports category {key!r} but has no {counter_name!r}"
                )


def _parent_name(view: TraceView, track: Track) -> str | None:
    parent = view.tracks.get(track.parent_uuid) if track.parent_uuid is not None else None
    return parent.name if parent is not None else None


def _check_context_counter(view: TraceView, track: Track) -> Iterator[str]:
    at = f"context-counter: {track.name!r} ({track.uuid})"
    label = track.name.removeprefix(CONTEXT_COUNTER_PREFIX)
    if not track.name.startswith(CONTEXT_COUNTER_PREFIX) or label not in CONTEXT_LABELS.values():
        yield (
            f"{at} is not 'Context: <Label>' with one of the labels "
            f"{', '.join(CONTEXT_LABELS.values())}"
        )
    if track.unit_name != TOKENS_UNIT:
        yield f"{at} unit_name is {track.unit_name!r}, not 'tokens'"
    if track.y_axis_share_key != SHARE_KEY:
        yield f"{at} y_axis_share_key is {track.y_axis_share_key!r}, not {SHARE_KEY!r}"
    parent = view.tracks.get(track.parent_uuid) if track.parent_uuid is not None else None
    if parent is None or parent.name != CONTEXT_GROUP_NAME or parent.is_counter:
        yield f"{at} must be a child of a plain (non-counter) {CONTEXT_GROUP_NAME!r} track"


# ---------------------------------------------------------------------------------------------
# §5 the context annotation
# ---------------------------------------------------------------------------------------------


def _check_context(view: TraceView, slice_: Slice) -> Iterator[str]:
    at = f"context: {where(view, slice_)}"
    context = slice_.typed("context")
    entries = _as_dict(context)
    if context is None or context.type != "dict" or entries is None:
        yield f"{at} context must be a dict, got {_type_name(context)}"
        return
    version = entries.get("version")
    if not (_is_uint(version) and version.value == 1):  # type: ignore[union-attr]
        yield f"{at} version must be uint 1, got {_type_name(version)} (the UI ignores it)"
    for key, allowed in (("stage", STAGES), ("basis", BASES), ("coverage", COVERAGES)):
        value = entries.get(key)
        if not _is_string(value) or value.value not in allowed:  # type: ignore[union-attr]
            yield f"{at} {key} must be one of {', '.join(allowed)}; got {_type_name(value)}"
    if not _is_boolish(entries.get("baseline")):
        yield f"{at} baseline must be a bool, got {_type_name(entries.get('baseline'))}"
    categories = _as_dict(entries.get("categories"))
    total = 0
    if categories is None:
        yield f"{at} categories must be a dict, got {_type_name(entries.get('categories'))}"
    else:
        for key, value in categories.items():
            if key not in CONTEXT_LABELS:
                yield f"{at} unknown category key {key!r} (allowed: {', '.join(CONTEXT_LABELS)})"
            if _is_uint(value):
                total += value.value
            else:
                yield f"{at} categories.{key} must be a uint, got {_type_name(value)}"
    estimated = entries.get("estimated_tokens")
    if not _is_uint(estimated):
        yield f"{at} estimated_tokens must be a uint, got {_type_name(estimated)}"
    elif categories is not None and estimated.value != total:  # type: ignore[union-attr]
        yield (
            f"{at} estimated_tokens {estimated.value} != sum of categories {total}"  # type: ignore[union-attr]
        )
    for key in OPTIONAL_CONTEXT_UINTS:
        if key in entries:
            yield from _expect_uint(f"{at} {key}", entries[key])
    for key in OPTIONAL_CONTEXT_STRINGS:
        if key in entries:
            yield from _expect_string(f"{at} {key}", entries[key])
    changes = _as_list(entries.get("changes"))
    if changes is None:
        yield f"{at} changes must be an array, got {_type_name(entries.get('changes'))}"
        return
    if len(changes) > MAX_CHANGES:
        yield f"{at} has {len(changes)} changes, at most {MAX_CHANGES} (use omitted_changes)"
    magnitudes: list[int] = []
    for index, change in enumerate(changes):
        yield from _check_change(f"{at} changes[{index}]", change, magnitudes)
    if magnitudes != sorted(magnitudes, reverse=True):
        yield f"{at} changes must be sorted by |delta_tokens| descending"


def _check_change(at: str, change: Typed, magnitudes: list[int]) -> Iterator[str]:
    fields = _as_dict(change)
    if change.type != "dict" or fields is None:
        yield f"{at} must be a dict, got {_type_name(change)}"
        return
    yield from _expect_string(f"{at} id", fields.get("id"), non_empty=True)
    category = fields.get("category")
    if not _is_string(category) or category.value not in CONTEXT_LABELS:  # type: ignore[union-attr]
        yield f"{at} category must be a category key, got {_type_name(category)}"
    kind = fields.get("change")
    if not _is_string(kind) or kind.value not in CHANGE_KINDS:  # type: ignore[union-attr]
        yield f"{at} change must be one of {', '.join(CHANGE_KINDS)}; got {_type_name(kind)}"
    yield from _expect_uint(f"{at} tokens", fields.get("tokens"))
    if "chars" in fields:
        yield from _expect_uint(f"{at} chars", fields["chars"])
    for key in OPTIONAL_CHANGE_STRINGS:
        if key in fields:
            yield from _expect_string(f"{at} {key}", fields[key])
    delta = fields.get("delta_tokens")
    if _is_uint(delta):
        magnitudes.append(delta.value)  # type: ignore[union-attr]
    elif delta is not None and delta.type == "int":
        magnitudes.append(abs(delta.value))
        if delta.value >= 0:
            yield f"{at} delta_tokens {delta.value} is non-negative and must be a uint, not an int"
    else:
        yield f"{at} delta_tokens must be uint (>= 0) or int (< 0), got {_type_name(delta)}"


# ---------------------------------------------------------------------------------------------
# §8 example check
# ---------------------------------------------------------------------------------------------


def _check_example(view: TraceView, *, require_addition: bool) -> Iterator[str]:
    snapshots = view.snapshots()
    for capture in view.captures():
        if not view.snapshots(capture.uuid):
            yield f"example: {_capture_label(view, capture.uuid)} has no context snapshot"
    if snapshots and not any(
        _is_uint(s.typed("context", "estimated_tokens"))
        and s.typed("context", "estimated_tokens").value > 0  # type: ignore[union-attr]
        for s in snapshots
    ):
        yield "example: no snapshot has estimated_tokens > 0"
    if require_addition and not any(_has_addition(s) for s in snapshots):
        yield (
            "example: no non-baseline snapshot has a change with delta_tokens > 0 "
            "(Largest additions would be empty)"
        )
    context_counters = [
        t for t in view.counter_tracks() if t.name.startswith(CONTEXT_COUNTER_PREFIX)
    ]
    if not context_counters:
        yield "example: no 'Context: *' counter"


def _has_addition(snapshot: Slice) -> bool:
    baseline = snapshot.typed("context", "baseline")
    if baseline is None or baseline.value:
        return False
    for change in _as_list(snapshot.typed("context", "changes")) or []:
        delta = change.at("delta_tokens")
        if _is_uint(delta) and delta.value > 0:  # type: ignore[union-attr]
            return True
    return False


# ---------------------------------------------------------------------------------------------
# §7 flows and subagents, §2 nesting
# ---------------------------------------------------------------------------------------------


def _check_flows(view: TraceView, *, forward_arrows: bool) -> Iterator[str]:
    legacy = [s for s in view.slices if s.legacy_flow_ids]
    if legacy:
        yield f"flow: {len(legacy)} slices use legacy v1 flow ids (flow_ids_old); use flow_ids"
    for flow_id, events in view.flows.items():
        if len(events) != 2:
            names = ", ".join(repr(e.name) for e in events)
            yield f"flow: id {flow_id} appears on {len(events)} events ({names}), expected 2"
            continue
        source, target = events
        if source is target:
            yield f"flow: id {flow_id} links {where(view, source)} to itself"
            continue
        # Trace Processor orders flows by time; the writer's intended direction is file order.
        if source.ts > target.ts:
            yield (
                f"flow: id {flow_id} points back in time: {where(view, source)} → "
                f"{where(view, target)}"
            )
        if flow_id in source.terminating_flow_ids:
            yield f"flow: id {flow_id} is terminated on its source {where(view, source)}"
    for source, target in drawn_backwards(view) if forward_arrows else ():
        if source.name in ("prompt-input", "prompt"):
            yield (
                f"flow: {where(view, source)} → {where(view, target)} is drawn backwards in "
                f"ui.perfetto.dev (from the source's end, {source.end})"
            )


def drawn_start(source: Slice, target: Slice) -> int:
    """Where ui.perfetto.dev starts a flow's arrow, as its flow_events_renderer.ts does
    (google/perfetto ec5d16b, ui/src/core_plugins/dev.perfetto.Timeline/flow_events_renderer.ts
    l.86-92): at the source's start when the target descends from it (`flowToDescendant`,
    `slice_is_ancestor`: the same track, nested in it) or when the source starts at or after
    the target; otherwise at the source's end. The arrow ends at the target's start."""
    descends = (
        source.track_uuid == target.track_uuid
        and not source.instant
        and source.ts <= target.ts
        and target.end <= source.end
    )
    return source.ts if descends or source.ts >= target.ts else source.end


def drawn_backwards(view: TraceView) -> list[tuple[Slice, Slice]]:
    """Every flow (source, target) whose arrow ui.perfetto.dev draws leaving its source to
    the right of where it enters its target: a loop back in time. Source and target in file
    order, as Trace Processor pairs them (§7: direction = time order)."""
    found = []
    for events in view.flows.values():
        if len(events) == 2 and events[0] is not events[1]:
            source, target = events
            if drawn_start(source, target) > target.ts:
                found.append((source, target))
    return found


def _check_nesting(view: TraceView) -> Iterator[str]:
    """Slices on one track must nest (no partial overlaps).

    BEGIN/END events are matched as a stack, so a decoded view nests by construction; a writer
    that overlaps two slices on one lane shows up as swapped ends (still nested) or as
    `decode:` problems (END without BEGIN, BEGIN never ended). The interval check stays for views
    built by hand and guards the decoder itself.
    """
    by_track: dict[int, list[Slice]] = defaultdict(list)
    for slice_ in view.slices:
        if not slice_.instant:
            by_track[slice_.track_uuid].append(slice_)
    for slices in by_track.values():
        stack: list[Slice] = []
        for slice_ in sorted(slices, key=lambda s: (s.ts, -s.dur, s.order)):
            while stack and stack[-1].end <= slice_.ts:
                stack.pop()
            if stack and slice_.end > stack[-1].end:
                yield (
                    f"nesting: {where(view, slice_)} (ends {slice_.end}) partially overlaps "
                    f"{where(view, stack[-1])} (ends {stack[-1].end})"
                )
                continue
            stack.append(slice_)


def _check_subagents(view: TraceView) -> Iterator[str]:
    profiles: dict[str, Slice] = {}
    capture_parent: dict[str, int | None] = {}  # session → the track its capture hangs off
    family_size: dict[int | None, int] = {}  # that track → how many captures hang off it
    for capture in view.captures():
        # The family is the tree under the capture's topmost ancestor below the trace's
        # root (a top-level session's group), or under its parent when that is a process.
        chain = view.ancestors(capture.uuid)
        top = chain[-2].uuid if len(chain) > 2 else capture.parent_uuid
        family_size[top] = family_size.get(top, 0) + 1
        profile = view.profile_of(capture.uuid)
        session = profile.args.get("session_id") if profile is not None else None
        if profile is not None and isinstance(session, str):
            profiles.setdefault(session, profile)
            capture_parent.setdefault(session, top)
    for session, profile in profiles.items():
        parent_session = profile.args.get("parent_session")
        if not isinstance(parent_session, str) or not parent_session:
            continue
        at = f"subagent: session {session!r}"
        if parent_session == session:
            yield f"{at} names itself as parent_session"
            continue
        parent = profiles.get(parent_session)
        if parent is None:
            # A subagent exported without its parent (one OpenCode or Gemini CLI child
            # session file) is its own process's only capture: `parent_session` alone still
            # marks it a subagent (§7), and the loader warns that the parent is missing.
            # Beside other captures of its process it names a parent that should be there.
            if family_size.get(capture_parent.get(session), 0) > 1:
                yield f"{at} parent_session {parent_session!r} is not a capture in this file"
            continue
        # §7: links 2 and 3 need the child to start inside the parent's window.
        if not parent.ts <= profile.ts <= parent.end:
            yield (
                f"{at} starts at {profile.ts}, outside its parent's window "
                f"[{parent.ts}, {parent.end}]"
            )
