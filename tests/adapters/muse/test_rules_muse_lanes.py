"""The request lanes of Muse Code (`muse_lanes`), pinned on the real 1.4.2 session (copy in
tests/data/journals/muse): line 51's `model_input_trace_recorded` (ten lanes, 96,092 bytes),
lines 24-34's `context_block_diagnostic` sizes and line 35's `run_context_messages` (four of
them redacted by the publisher, two trimmed after Muse measured them). Edited copies of those
records stand in for the cases the corpus lacks; each test says which field it edits."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from agent_profiler.adapters.muse_lanes import (
    Block,
    Lane,
    Trace,
    ceil4,
    context_block,
    lane_bytes,
    lane_category,
    native_split,
    parse_trace,
    utf8_len,
)
from agent_profiler.model import Category
from rules_spy import record
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "muse"
HCN = DATA / "hcn-1.4.2-R4684.1_meta_single-turn_retained-frame.session.jsonl"

SY, RU, SK, EN, OV, PR, SU, UN = (
    Category.SYSTEM,
    Category.RULES,
    Category.SKILLS,
    Category.ENVIRONMENT,
    Category.OVERHEAD,
    Category.PROMPTS,
    Category.SUMMARIES,
    Category.UNATTRIBUTED,
)
# Line 51 as the test reads it: (lane, source, destination, bytes) in file order.
OPTION = ("provider_options", "provider_request_options")
LINE_51 = (
    Lane("system_base", "provider_default", "option:meta.instructions", 41_022),
    Lane("context", "run_context", "message.role:developer", 54_106),
    Lane("history", "current_user", "message.role:user", 964),
    Lane("tool_specs", "default", "request.tools", 0),
    *(
        Lane(*OPTION, f"option:meta.{name}", 0)
        for name in (
            "instructions",
            "max_output_tokens",
            "model",
            "prompt_cache_key",
            "reasoning.effort",
            "session_id",
        )
    ),
)
# Lines 24-34: block id → (source, text_bytes); every lifecycle is session_start.
MEASURED = {
    "rules_file": ("rules_file", 10_317),
    "workspace_identity": ("workspace_identity", 242),
    "security_mode": ("security_mode", 479),
    "skills_catalog": ("skills", 31_998),
    "meta_context_note": ("meta_context_note", 4_387),
    "session_identity": ("session_identity", 688),
    "memory_snapshot": ("memory_snapshot", 313),
    "workflow_choice": ("workflow_choice", 3_421),
    "workflow_cookbook": ("workflow_cookbook", 1_038),
    "subagent_delegation": ("subagent_delegation", 956),
    "agent_definition_catalog": ("agent_definition_catalog", 238),
}
RULES = {"rules_file", "memory_snapshot"}
BLOCK_TOTAL = 54_077  # Σ text_bytes: 29 bytes short of the context lane (the join glue)


def _event(line: int) -> dict[str, Any]:
    event = record(HCN, line)["payload"]["event"]
    assert isinstance(event, dict)
    return copy.deepcopy(event)


def _trace() -> Trace:
    trace = parse_trace(_event(51))
    assert trace is not None
    return trace


def _blocks() -> list[Block]:
    return [Block.diagnosed(_event(n)["block_id"], _event(n)) for n in range(24, 35)]


def _messages() -> dict[str, dict[str, Any]]:
    return {m["id"]: m for m in _event(35)["run_context_messages"]}


# -- parse_trace ------------------------------------------------------------------------------


def test_a_full_request_trace_is_read_lane_by_lane() -> None:
    """Line 51: each aggregate's logical lane, source, wire destination and byte count, the
    model step and the totals, as written."""
    trace = _trace()
    assert trace == Trace(0, LINE_51, 96_092, 0)
    assert sum(lane.bytes for lane in trace.lanes) == trace.total_bytes
    assert sum(b for _, b in MEASURED.values()) == BLOCK_TOTAL


def test_a_trace_without_aggregates_has_no_lanes() -> None:
    """Line 51 with `bounded.aggregates` empty, missing, or not a list; or no `bounded`."""
    for edit in ([], None, "aggregates", {"a": 1}):
        event = _event(51)
        event["bounded"]["aggregates"] = edit
        assert parse_trace(event) is None, edit
    event = _event(51)
    del event["bounded"]
    assert parse_trace(event) is None


def test_odd_aggregates_and_steps_are_read_as_unknown_not_dropped() -> None:
    """Line 51 edited: an aggregate that is not an object, one whose fields are missing or
    not objects, a boolean or text model step, a damaged byte count: each lane still counts
    (empty names, 0 bytes), the step is unknown, the totals of `bounded` are kept."""
    event = _event(51)
    aggregates = event["bounded"]["aggregates"]
    aggregates[0] = "not an aggregate"
    aggregates[1] = {"logical_lane": "context", "source": None, "byte_count": True}
    del aggregates[2]["provider_wire_destination"]
    aggregates[3]["logical_lane"]["value"] = ""
    aggregates[3]["byte_count"] = -5
    event["bounded"]["omitted_aggregate_lane_bytes"] = 7
    for step in (True, "0", None, 1.0):
        event["model_step"] = step
        trace = parse_trace(event)
        assert trace is not None
        assert trace.model_step is None, step
        assert trace.lanes[:4] == (
            Lane("", "", "", 0),
            Lane("", "", "", 0),
            Lane("history", "current_user", "", 964),
            Lane("", "default", "request.tools", 0),
        )
        assert trace.lanes[4:] == LINE_51[4:]
        assert (trace.total_bytes, trace.omitted_bytes) == (96_092, 7)
    event["model_step"] = 3
    trace = parse_trace(event)
    assert trace is not None and trace.model_step == 3


# -- lane_bytes -------------------------------------------------------------------------------


def test_the_context_lane_is_split_by_its_measured_blocks() -> None:
    """Line 51 with lines 24-34: each block's bytes go to its kind, the 29 bytes of glue to
    overhead, the other lanes to theirs; zero-byte lanes leave no category behind."""
    by, fits = lane_bytes(_trace(), _blocks())
    assert fits is True
    assert by == {
        SY: 41_022 + 4_387 + 3_421 + 1_038 + 956,  # base instructions + guidance blocks
        RU: 10_317 + 313,
        SK: 31_998 + 238,
        EN: 242 + 479 + 688,
        OV: 54_106 - BLOCK_TOTAL,
        PR: 964,
    }
    assert sum(by.values()) == 96_092


def test_blocks_of_a_later_lifecycle_do_not_split_the_context_lane() -> None:
    """Lines 24-34 with two blocks' lifecycle edited to `turn`: only `session_start` (or
    unstated) blocks are in the lane; the rest of the lane is glue."""
    blocks = [
        Block(b.block_id, b.source, b.text_bytes, "turn" if b.block_id in RULES else "")
        for b in _blocks()
    ]
    by, fits = lane_bytes(_trace(), blocks)
    assert fits is True
    assert RU not in by
    assert by[OV] == 54_106 - (BLOCK_TOTAL - 10_317 - 313)


def test_blocks_larger_than_the_context_lane_leave_it_unattributed() -> None:
    """Line 51 with its context lane edited to 54,076 bytes, one short of the blocks: the lane
    is not split (no block category, no glue) and the reader is told (`fits` False)."""
    event = _event(51)
    event["bounded"]["aggregates"][1]["byte_count"] = BLOCK_TOTAL - 1
    trace = parse_trace(event)
    assert trace is not None
    by, fits = lane_bytes(trace, _blocks())
    assert fits is False
    assert by == {SY: 41_022, PR: 964, UN: BLOCK_TOTAL - 1 + 30}  # + the 30 B not listed
    # exactly the lane's size: split, no glue
    event["bounded"]["aggregates"][1]["byte_count"] = BLOCK_TOTAL
    event["bounded"]["total_lane_bytes"] = 96_092 - 29
    trace = parse_trace(event)
    assert trace is not None
    by, fits = lane_bytes(trace, _blocks())
    assert fits is True and OV not in by and UN not in by


def test_without_blocks_the_context_lane_is_unattributed_but_fits() -> None:
    """No block diagnostic at all (none measured): the context lane cannot be split, which is
    not a misfit."""
    by, fits = lane_bytes(_trace(), [])
    assert (by, fits) == ({SY: 41_022, UN: 54_106, PR: 964}, True)
    later = [Block(b.block_id, b.source, b.text_bytes, "turn") for b in _blocks()]
    assert lane_bytes(_trace(), later) == ({SY: 41_022, UN: 54_106, PR: 964}, True)


def test_bytes_the_lanes_do_not_list_are_unattributed() -> None:
    """Line 51 edited: `total_lane_bytes` above the listed lanes, or omitted aggregate bytes
    stated; the larger of the two is unattributed, never both."""
    event = _event(51)
    event["bounded"]["total_lane_bytes"] = 96_092 + 40
    event["bounded"]["omitted_aggregate_lane_bytes"] = 30
    trace = parse_trace(event)
    assert trace is not None
    assert lane_bytes(trace, _blocks())[0][UN] == 40
    event["bounded"]["omitted_aggregate_lane_bytes"] = 50
    trace = parse_trace(event)
    assert trace is not None
    assert lane_bytes(trace, _blocks())[0][UN] == 50
    event["bounded"]["total_lane_bytes"] = 0  # less than listed: nothing is negative
    event["bounded"]["omitted_aggregate_lane_bytes"] = 0
    trace = parse_trace(event)
    assert trace is not None
    assert UN not in lane_bytes(trace, _blocks())[0]


def test_history_lanes_by_source_and_destination() -> None:
    """Hand-made history lanes (the 1.4.2 session has only `current_user`): a source naming
    a summary or a compaction is summaries, whatever its destination."""
    for source in ("summary", "compaction", "compaction_replay", "prior_summary"):
        assert lane_category(Lane("history", source, "message.role:assistant", 1)) is SU
    assert lane_category(Lane("history", "current_user", "", 1)) is PR
    assert lane_category(Lane("history", "prior", "message.role:user:x", 1)) is Category.MESSAGES


# -- native_split -----------------------------------------------------------------------------


def test_the_lanes_in_tokens_and_what_they_leave_out() -> None:
    """Line 51 and line 64's 31,979 input tokens: bytes/4 rounded up per category, the rest
    of the reported input is its own unattributed amount; the lanes do not hold it all."""
    split = native_split(_trace(), _blocks(), 31_979)
    lanes = {
        SY: ceil4(50_824),
        RU: ceil4(10_630),
        SK: ceil4(32_236),
        EN: ceil4(1_409),
        OV: ceil4(29),
        PR: ceil4(964),
    }
    assert sum(lanes.values()) == 24_025
    # in the order of Category, the left-over input last
    assert split.categories == (
        (SY, lanes[SY]),
        (RU, lanes[RU]),
        (SK, lanes[SK]),
        (EN, lanes[EN]),
        (PR, lanes[PR]),
        (OV, lanes[OV]),
        (UN, 31_979 - 24_025),
    )
    assert (split.not_in_lanes, split.fits, split.complete) == (7_954, True, False)


def test_lanes_that_hold_the_whole_input_are_complete() -> None:
    """The same lanes with a reported input equal to or below their 24,025 tokens: nothing is
    left over and the composition is complete; an input of 0 is never complete."""
    for prompt in (24_025, 20_000):
        split = native_split(_trace(), _blocks(), prompt)
        assert (split.not_in_lanes, split.complete) == (0, True), prompt
        assert UN not in dict(split.categories)
        assert sum(t for _, t in split.categories) == 24_025
    split = native_split(_trace(), _blocks(), 24_026)
    assert (split.not_in_lanes, split.complete, dict(split.categories)[UN]) == (1, False, 1)
    assert native_split(_trace(), _blocks(), 0).complete is False


def test_an_unattributed_lane_and_the_left_over_input_add_up() -> None:
    """Line 51 with no blocks: the context lane is unattributed (54,106 B → 13,527) and the
    input the lanes miss is added to it, not put beside it."""
    split = native_split(_trace(), [], 31_979)
    lanes = ceil4(41_022) + ceil4(54_106) + ceil4(964)
    assert dict(split.categories) == {
        SY: ceil4(41_022),
        PR: ceil4(964),
        UN: ceil4(54_106) + 31_979 - lanes,
    }
    assert split.not_in_lanes == 31_979 - lanes


def test_bytes_round_up_to_tokens() -> None:
    assert [ceil4(n) for n in (0, 1, 3, 4, 5, 8, 9, -4)] == [0, 1, 1, 1, 2, 2, 3, 0]


def test_sizes_are_utf8_bytes_even_of_lone_surrogates() -> None:
    """Line 35's security_mode text: 473 characters, 479 bytes (as line 26 measured). A lone
    surrogate (hand-made; JSON allows `\\ud800`) is measured, not an error."""
    text = _messages()["security_mode"]["text"]
    assert (len(text), utf8_len(text)) == (473, 479)
    assert utf8_len("a\ud800") == 4


# -- context blocks ---------------------------------------------------------------------------


def test_a_diagnostic_block_is_its_id_source_bytes_and_lifecycle() -> None:
    """Line 27 (skills_catalog, source `skills`); the same record without source/lifecycle."""
    event = _event(27)
    assert Block.diagnosed("skills_catalog", event) == Block(
        "skills_catalog", "skills", 31_998, "session_start"
    )
    for key in ("source", "lifecycle", "text_bytes"):
        del event[key]
    assert Block.diagnosed("x", event) == Block("x", "", 0, "")


def test_a_redacted_block_is_sized_by_its_marker() -> None:
    """Line 35's rules_file block: the publisher replaced its text with `<redacted: …, N
    chars>`; its size is N, as a number (the marker is not the text), and so is its lane."""
    message = _messages()["rules_file"]
    marker = message["text"]
    assert marker.startswith("<redacted: ") and marker.endswith(" chars>")
    chars = int(marker.rsplit(", ", 1)[1].split()[0])
    for known in ({}, {b.block_id: b for b in _blocks()}):
        block = context_block(message, known)
        assert block.item_id == "context:rules_file"
        assert (block.category, block.label) == (RU, "Rules file (length from a redaction marker)")
        assert block.size == chars and not isinstance(block.size, str)
        assert block.measured == Block("rules_file", "rules_file", chars, "")


def test_a_block_trimmed_after_measuring_is_sized_by_its_diagnostic() -> None:
    """Line 35's security_mode text is 479 bytes and line 26 says 479: the text is what Muse
    measured (size = the text). meta_context_note's 4,371 characters are 4,387 bytes as
    measured too. Edited: a diagnostic of 500 bytes says the text was trimmed."""
    known = {b.block_id: b for b in _blocks()}
    message = _messages()["security_mode"]
    block = context_block(message, known)
    assert (block.size, block.label) == (message["text"], "Security mode")
    assert block.measured == Block("security_mode", "security_mode", 479, "")
    trimmed = {"security_mode": Block("security_mode", "security_mode", 500, "session_start")}
    block = context_block(message, trimmed)
    assert block.size == 500
    assert block.label == "Security mode (length from context_block_diagnostic)"
    assert block.measured == Block("security_mode", "security_mode", 479, "")
    # measured = the text's own bytes, not its characters, when nothing was measured
    note = context_block(_messages()["meta_context_note"], {})
    assert note.measured == Block("meta_context_note", "meta_context_note", 4_387, "")
    assert isinstance(note.size, str) and len(note.size) == 4_371


def test_a_block_is_named_by_its_id_else_its_source() -> None:
    """Line 35's skills_catalog (source `skills`) without its id: named by the source; with
    neither, `block`; a text that is not text has size 0 and no measure."""
    message = _messages()["skills_catalog"]
    del message["id"]
    block = context_block(message, {})
    assert (block.item_id, block.category) == ("context:skills", SK)
    assert block.label == "Skills listing (length from a redaction marker)"
    assert block.measured is not None and block.measured.block_id == "skills"
    bare = context_block({"text": ["not", "text"]}, {})
    assert (bare.item_id, bare.category, bare.size, bare.measured) == (
        "context:block",
        UN,
        0,
        None,
    )
    assert bare.label == "Context block block (kind not known)"


@pytest.mark.parametrize("block_id", sorted(MEASURED))
def test_every_real_block_in_the_session(block_id: str) -> None:
    """Each of line 35's eleven blocks with lines 24-34 known: its size is the text when the
    text is what was measured, else a number; its measure is the text's bytes."""
    known = {b.block_id: b for b in _blocks()}
    message = _messages()[block_id]
    block = context_block(message, known)
    text = message["text"]
    if text.startswith("<redacted: "):
        assert isinstance(block.size, int) and block.size > len(text)
    else:
        assert block.size == text
        assert block.measured is not None
        assert block.measured.text_bytes == MEASURED[block_id][1] == utf8_len(text)


def test_a_block_of_a_new_id_is_split_by_its_source() -> None:
    """Line 27 edited: block id `skills_catalog_v2` (unknown), source `skills` (known): its
    bytes are still skills."""
    event = _event(27)
    event["block_id"] = "skills_catalog_v2"
    blocks = [b for b in _blocks() if b.block_id != "skills_catalog"]
    blocks.append(Block.diagnosed("skills_catalog_v2", event))
    by, fits = lane_bytes(_trace(), blocks)
    assert (by[SK], fits) == (31_998 + 238, True)


def test_a_context_message_of_a_new_id_is_known_by_its_source() -> None:
    """Line 35's skills_catalog block with its id edited to `skills_catalog_v2`: the source
    `skills` still says what it is."""
    message = _messages()["skills_catalog"]
    message["id"] = "skills_catalog_v2"
    block = context_block(message, {})
    assert (block.item_id, block.category) == ("context:skills_catalog_v2", SK)
    assert block.label == "Skills listing (length from a redaction marker)"
    assert block.measured == Block("skills_catalog_v2", "skills", 31_982, "")
