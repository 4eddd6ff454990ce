"""Items sized from evidence (issue 28.1): a number the journal reports for the item, not
its text's estimate. Each names its method in its label, its `context` change and
`profile (1)`; one whose number never came is `unmeasured`, never a silent 0."""

from __future__ import annotations

import base64
import dataclasses
import struct
import zlib

import pytest

from agent_profiler import estimate, images
from agent_profiler.annotations import TraceFacts, context_dict, profile_args
from agent_profiler.attribution import ContextLog, Observation
from agent_profiler.model import Basis, Category, Harness, Session, SourceKind


def _obs(time: int) -> Observation:
    return Observation.request(time, f"r{time}", model="m", reported_tokens=None)


def test_an_evidence_item_names_its_method_everywhere_and_keeps_its_own_number() -> None:
    # GIVEN a 40-char prompt, then hidden thinking settled at 1,234 tokens by its response's
    # final usage, then a request
    log = ContextLog()
    log.add("p", Category.PROMPTS, "x" * 40, label="User prompt")
    log.observe(_obs(1))
    handle = log.add_evidence(
        "t",
        Category.ASSISTANT,
        0,
        method=estimate.OUTPUT_MINUS_VISIBLE,
        label="Thinking (signature only)",
        source_id="msg",
        source_kind=SourceKind.RESPONSE,
    )
    log.settle_evidence(handle, 1234, "thinking")
    log.observe(_obs(2))
    first, second = log.replay()
    # THEN the thinking adds exactly its own number (never scaled), labelled with its method
    (change,) = second.changes
    assert (change.id, change.tokens, change.delta_tokens) == ("t", 1234, 1234)
    assert change.method == "output-tokens-minus-visible"
    assert change.label == "Thinking (signature only) (estimate: output-tokens-minus-visible)"
    assert dict(second.categories)[Category.ASSISTANT] == 1234
    assert log.estimate_methods == ("output-tokens-minus-visible",)
    assert log.unmeasured({}) == ()
    # AND its `context` change carries the method, a text item's does not
    entry = context_dict(second, 0)["changes"][0]
    assert entry["method"] == "output-tokens-minus-visible"
    assert "method" not in context_dict(first, 0)["changes"][0]


def test_evidence_that_never_came_is_unmeasured_with_its_count() -> None:
    log = ContextLog()
    for n in range(3):
        handle = log.add_evidence(
            f"t{n}", Category.ASSISTANT, 0, method=estimate.OUTPUT_MINUS_VISIBLE, label="Thinking"
        )
        log.settle_evidence(handle, None if n else 50, "thinking-signature-only")
    log.observe(_obs(1))
    (snap,) = log.replay()
    assert dict(snap.categories) == {Category.ASSISTANT: 50}
    # two of three had no final usage: counted, not a silent zero, and not a method use
    assert log.unmeasured({}) == (("thinking-signature-only", 2),)
    assert log.estimate_methods == ("output-tokens-minus-visible",)


def test_settle_refuses_a_text_item() -> None:
    log = ContextLog()
    log.add("p", Category.PROMPTS, "text")
    with pytest.raises(TypeError):
        log.settle_evidence(log.observe(_obs(1)), 3, "x")


def test_profile_lists_the_methods_used_with_what_they_mean() -> None:
    session = Session(
        Harness.CLAUDE_CODE,
        "s",
        0,
        1,
        (),
        estimate_methods=(estimate.IMAGE_PIXELS, estimate.OUTPUT_MINUS_VISIBLE),
    )
    args = profile_args(session, TraceFacts(), 1, 0, False)
    assert list(args["estimate_methods"]) == ["image-pixels", "output-tokens-minus-visible"]
    assert "750" in args["estimate_methods"]["image-pixels"]
    plain = profile_args(Session(Harness.CLAUDE_CODE, "s", 0, 1, ()), TraceFacts(), 1, 0, False)
    assert "estimate_methods" not in plain


# --------------------------------------------------------------------------- images


def _png(width: int, height: int) -> bytes:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", len(header))
        + chunk
        + struct.pack(">I", zlib.crc32(chunk))
    )


def _jpeg(width: int, height: int, before_frame: bytes = b"") -> bytes:
    app0 = b"\xff\xe0" + struct.pack(">H", 16) + b"JFIF\x00" + b"\x00" * 9
    sof = b"\xff\xc2" + struct.pack(">HBHHB", 11, 8, height, width, 1) + b"\x01\x11\x00"
    comment = b"\xff\xfe" + struct.pack(">H", 202) + b"c" * 200
    return b"\xff\xd8" + app0 + comment + before_frame + sof


def _webp_lossy(width: int, height: int) -> bytes:
    """A lossy WebP's header (RFC 9649, simple format: a VP8 key frame): the frame tag, the start
    code, then 14 bits of width and of height, each under 2 bits of upscaling."""
    frame = b"\x9d\x01\x2a" + struct.pack("<HH", width | 0x4000, height | 0x8000)
    chunk = b"\x10\x02\x00" + frame + b"\x00" * 40
    riff = b"WEBPVP8 " + struct.pack("<I", len(chunk)) + chunk
    return b"RIFF" + struct.pack("<I", len(riff)) + riff


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (_png(1280, 720), (1280, 720)),
        (_jpeg(640, 480), (640, 480)),
        (b"GIF89a" + struct.pack("<HH", 31, 17) + b"\x00" * 8, (31, 17)),
        (
            b"RIFF\x00\x00\x00\x00WEBPVP8X"
            + b"\x00" * 8
            + (99).to_bytes(3, "little")
            + (49).to_bytes(3, "little"),
            (100, 50),
        ),
        (
            b"RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f"
            + ((199) | (99 << 14)).to_bytes(4, "little"),
            (200, 100),
        ),
        (  # the same lossless one with its image data after the header, as in a file
            b"RIFF\x00\x00\x00\x00WEBPVP8L\x00\x00\x00\x00\x2f"
            + ((199) | (99 << 14)).to_bytes(4, "little")
            + b"\x00" * 40,
            (200, 100),
        ),
        (_webp_lossy(320, 240), (320, 240)),
        # a restart marker and a fill byte (0xff) before the frame: neither has a length
        (_jpeg(640, 480, before_frame=b"\xff\xd0\xff"), (640, 480)),
        (_png(1280, 720)[:24], (1280, 720)),  # cut after its size: enough
        (b"not an image at all", None),
        (b"\xff\xd8\xff\xe0", None),  # a JPEG cut before its frame
    ],
)
def test_image_headers_give_the_pixel_size(data: bytes, size: tuple[int, int] | None) -> None:
    assert images.dimensions(data) == size
    assert images.base64_dimensions(base64.b64encode(data).decode()) == size


def test_an_image_cut_short_in_its_base64_still_gives_its_size() -> None:
    """A journal's image data cut at any length (not a whole number of base64 quads): the
    whole quads before the cut are read."""
    data = base64.b64encode(_jpeg(640, 480) + b"\x00" * 30).decode()
    for cut in (1, 2, 3):
        assert images.base64_dimensions(data[:-cut]) == (640, 480)
    assert images.base64_dimensions(base64.b64encode(_png(31, 17)).decode()[:35]) == (31, 17)


def test_anthropic_formula_scales_down_to_the_documented_limits() -> None:
    # 1000 × 1000 fits: 1,000,000 / 750 = 1,333.3 → 1,334 (the guide's own example)
    assert images.anthropic_image_tokens(1000, 1000) == 1334
    assert images.anthropic_image_tokens(200, 200) == 54  # the guide's ~54
    # a 3000 × 2000 screenshot: scaled to ≤ 1.15 MP first, so about 1,533, never 8,000
    big = images.anthropic_image_tokens(3000, 2000)
    assert 1500 <= big <= images.ANTHROPIC_MAX_PIXELS / 750 + 1
    # a very wide one: the long edge limit (1568) binds first
    assert images.anthropic_image_tokens(4000, 100) == pytest.approx(1568 * 39 / 750, abs=1)
    assert images.anthropic_image_tokens(0, 10) == 0


@pytest.mark.parametrize(("mode", "total"), [("on", 10 + 500), ("off", 10), ("only", 500)])
def test_calibration_probes_split_text_from_evidence(mode: str, total: int) -> None:
    """scripts/_corpus.py fits the table on text alone (`off`) and takes the evidence as a
    fixed part of the growth (`only`); an export counts both (`on`)."""
    from agent_profiler.estimate import CHARS4, use_estimator

    with use_estimator(dataclasses.replace(CHARS4, evidence=mode)):
        log = ContextLog()
    log.add("p", Category.PROMPTS, "x" * 40)
    log.add_evidence("i", Category.RESULTS, 500, method=estimate.IMAGE_PIXELS, label="Image")
    log.observe(_obs(1))
    (snap,) = log.replay()
    assert snap.estimated_tokens == total
    assert log.estimator.visible_tokens("x" * 40) == 10  # chars/4 in every mode


def test_a_visible_probe_counts_the_visible_text_into_the_hidden_item() -> None:
    """`calibrate.py --evidence-as-exported`: in a "visible" probe, text counts 0 and the
    visible output hidden thinking is measured against is minus the probe's count, so the
    hidden item (output − visible) grows by exactly the visible text the probe counts."""
    ones = {c: 1.0 for c in estimate.TextClass}
    probe = estimate.Estimator(Basis.CHARS, ones, 2.0, infer_head=False, evidence="visible")
    assert probe.text_tokens("x" * 40) == 0 and probe.chars_tokens(40) == 0
    assert probe.visible_tokens("x" * 40) == -42  # 40 characters at 1 per token + 2 per item
    assert probe.visible_tokens("") == 0
    none = estimate.Estimator(Basis.CHARS, evidence="visible")
    assert none.visible_tokens("x" * 40) == 0  # no ratios: the hidden item is the whole output
    on = dataclasses.replace(probe, evidence="on")
    assert on.visible_tokens("x" * 40) == on.text_tokens("x" * 40) == 42
