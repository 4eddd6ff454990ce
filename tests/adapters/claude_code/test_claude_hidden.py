"""Claude Code's hidden content (issue 28.1): signature-only and redacted thinking sized
from the response's final output_tokens minus its visible output, images from their pixels.
On the corpus's 2.1.16x journals (GPL-3.0: read from ../shared, skipped when absent) the
request after each such item grows by about what it was given; on hand-made journals, the
cases the corpus lacks (a streaming snapshot, a pasted image, a document)."""

from __future__ import annotations

import base64
import itertools
import json
import statistics
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from agent_profiler import estimate, images
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Category, ContextSnapshot, Session
from agent_profiler.report.data import estimation_words
from shared_paths import CORPUS, SHARED_REASON

TRANSCRIPTS = CORPUS / "claude-code" / "transcripts"
P179 = TRANSCRIPTS / "planetfall-39648afe5b-4_v2.1.179_queued-commands.jsonl"
P165 = TRANSCRIPTS / "planetfall-68d6759acfe5-1_v2.1.165_api-errors_images.jsonl.gz"
needs_corpus = pytest.mark.skipif(not P179.exists() or not P165.exists(), reason=SHARED_REASON)


def _one(path: Path) -> Session:
    result = load([path], Diagnostics())
    (session,) = [s for s in result.sessions if not s.parent_session]
    return session


def _requests(session: Session) -> list[ContextSnapshot]:
    return [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE and s.reported_tokens]


@needs_corpus
@pytest.mark.parametrize(("path", "blocks"), [(P179, 29), (P165, 42)])
def test_signature_only_thinking_stays_in_context_as_its_output_tokens(
    path: Path, blocks: int
) -> None:
    session = _one(path)
    responses = {r.id: r for r in session.responses}
    snaps = _requests(session)
    hidden_items = 0
    ratios = []
    for before, after in itertools.pairwise(snaps):
        hidden = [c for c in after.changes if c.method == estimate.OUTPUT_MINUS_VISIBLE]
        hidden_items += len(hidden)
        thinking = sum(c.delta_tokens for c in hidden)
        if thinking < 1000 or before.reported_tokens is None or after.reported_tokens is None:
            continue
        # the thinking is that response's output beyond its visible blocks …
        (owner,) = {c.source_id for c in hidden}
        assert thinking < responses[owner].usage.output_tokens
        assert all(c.label.endswith("(estimate: output-tokens-minus-visible)") for c in hidden)
        # … and the next request grew by it: reported growth − visible additions ≈ thinking
        visible = (after.estimated_tokens - before.estimated_tokens) - thinking
        ratios.append((after.reported_tokens - before.reported_tokens - visible) / thinking)
    assert hidden_items == blocks
    assert len(ratios) >= 6
    assert 0.9 <= statistics.median(ratios) <= 1.25, ratios
    assert "output-tokens-minus-visible" in session.estimate_methods
    assert not any("thinking" in kind for kind, _ in session.unmeasured)


@needs_corpus
def test_screenshots_are_sized_from_their_pixels_and_the_request_grows_by_that() -> None:
    session = _one(P165)
    snaps = _requests(session)
    output = {r.id: r.usage.output_tokens for r in session.responses}
    found = []
    for before, after in itertools.pairwise(snaps):
        for change in after.changes:
            if change.method != estimate.IMAGE_PIXELS:
                continue
            assert change.category is Category.RESULTS and change.source_id
            assert before.reported_tokens is not None and after.reported_tokens is not None
            # Each screenshot is the only thing its tool result holds: the growth is the
            # previous response's output (its tool call) plus the image.
            growth = after.reported_tokens - before.reported_tokens - output[before.anchor_id]
            found.append((change.tokens, growth))
    assert len(found) == 8
    assert all(abs(tokens - growth) <= 40 for tokens, growth in found), found
    assert "image-pixels" in session.estimate_methods
    assert "image" not in dict(session.unmeasured)
    # the HTML report says so in its estimation sentences
    (said,) = [w for w in estimation_words(session) if w.startswith("Sized from a number")]
    assert "image-pixels; output-tokens-minus-visible" in said


# --------------------------------------------------------------------------- hand-made

SESSION = "22222222-3333-4444-8555-666666666666"


def _record(kind: str, uuid: str, second: int, **extra: Any) -> dict[str, Any]:
    return {
        "sessionId": SESSION,
        "version": "2.1.63",
        "cwd": "/home/USER/demo",
        "isSidechain": False,
        "type": kind,
        "uuid": uuid,
        "timestamp": f"2026-01-01T10:00:{second:02d}.000Z",
        **extra,
    }


def _assistant(
    uuid: str, second: int, msg: str, content: list[Any], output: int, stop: str | None
) -> dict[str, Any]:
    usage = {
        "input_tokens": 3,
        "cache_creation_input_tokens": 1000 * second,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
    }
    message = {
        "model": "claude-sonnet-4-6",
        "id": msg,
        "role": "assistant",
        "content": content,
        "stop_reason": stop,
        "usage": usage,
    }
    return _record("assistant", uuid, second, message=message)


def _user(uuid: str, second: int, content: Any) -> dict[str, Any]:
    return _record("user", uuid, second, message={"role": "user", "content": content})


def _png(width: int, height: int) -> str:
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + header
    data = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + chunk
    return base64.b64encode(data + struct.pack(">I", zlib.crc32(chunk))).decode()


def _write(tmp_path: Path, records: list[dict[str, Any]]) -> Path:
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _items(session: Session) -> dict[str, Any]:
    return {c.id: c for s in session.snapshots for c in s.changes}


def test_final_usage_sizes_the_thinking_and_a_snapshot_leaves_it_unmeasured(
    tmp_path: Path,
) -> None:
    thinking = {"type": "thinking", "thinking": "", "signature": "c2lnbmF0dXJl"}
    text = {"type": "text", "text": "x" * 400}  # 100 tokens by chars/4
    path = _write(
        tmp_path,
        [
            _user("u1", 1, "go"),
            # final usage (stop_reason on the record): 900 output − 100 visible = 800
            _assistant("a1", 2, "msg_final", [thinking, text], 900, "end_turn"),
            _user("u2", 3, "again"),
            # redacted thinking, final usage, only the thinking: 300
            _assistant(
                "a2", 4, "msg_red", [{"type": "redacted_thinking", "data": "ZW5j"}], 300, "end_turn"
            ),
            _user("u3", 5, "more"),
            # a streaming snapshot (no stop_reason, as 2.1.14 writes): not measured
            _assistant("a3", 6, "msg_snap", [thinking, text], 8, None),
            _user("u4", 7, "last"),
            _assistant("a4", 8, "msg_last", [text], 25, "end_turn"),
        ],
    )
    session = _one(path)
    items = _items(session)
    assert items["a1:0"].tokens == 800
    assert items["a1:0"].method == "output-tokens-minus-visible"
    assert (
        items["a1:0"].label
        == "Thinking (not in the journal) (estimate: output-tokens-minus-visible)"
    )
    assert items["a2:0"].tokens == 300
    assert items["a2:0"].label.startswith("Redacted thinking")
    assert "a3:0" not in items  # 0 tokens: never a change
    assert dict(session.unmeasured) == {"thinking-not-in-journal": 1}
    assert session.estimate_methods == ("output-tokens-minus-visible",)


def test_pasted_images_are_prompts_sized_by_pixels_documents_stay_unmeasured(
    tmp_path: Path,
) -> None:
    """As Claude Code 2.1.63 writes a prompt with two pasted screenshots."""
    pasted = [
        {"type": "text", "text": "what is wrong here?"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": _png(1000, 1000)},
        },
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": _png(2880, 1800)},
        },
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "bm90IGFuIGltYWdl"},
        },
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0x"},
        },
    ]
    path = _write(
        tmp_path,
        [
            _user("u1", 1, "hello"),
            _assistant("a1", 2, "m1", [{"type": "text", "text": "hi"}], 1, "end_turn"),
            _user("u2", 3, pasted),
            _assistant("a2", 4, "m2", [{"type": "text", "text": "I see"}], 2, "end_turn"),
        ],
    )
    session = _one(path)
    items = _items(session)
    assert items["u2:1:image:0"].tokens == 1334  # 1000 × 1000 / 750
    assert items["u2:1:image:0"].category is Category.PROMPTS
    assert items["u2:1:image:0"].label == "Image 1000×1000 (estimate: image-pixels)"
    # 2880 × 1800 is scaled down to 1.15 MP first: ≈ 1,533, not 6,912
    assert items["u2:2:image:0"].tokens == images.anthropic_image_tokens(2880, 1800) < 1540
    assert dict(session.unmeasured) == {"document": 1, "image": 1}
    assert session.estimate_methods == ("image-pixels",)
    assert len(session.prompts) == 2


def test_attachments_and_images_of_the_wrong_shape_cost_nothing_but_themselves(
    tmp_path: Path,
) -> None:
    """Every known attachment type with fields of the wrong type, an attachment that is not
    an object, and image data that is no image: read without a traceback, nothing added
    from them, the session still there."""
    from agent_profiler.adapters.claude_records import ATTACHMENT_TYPES

    odd: list[Any] = [None, 42, ["x", 1], {"a": 1}]
    records: list[dict[str, Any]] = [_user("u1", 1, "go")]
    for n, kind in enumerate(sorted(ATTACHMENT_TYPES)):
        fields = dict.fromkeys(
            ("content", "prompt", "addedNames", "addedLines", "snippet", "skills", "filename"),
            odd[n % len(odd)],
        )
        records.append(
            _record("attachment", f"x{n}", 2, attachment={"type": kind, "commandMode": 7, **fields})
        )
    records.append(_record("attachment", "y", 2, attachment="not an object"))
    bad_image = {"type": "image", "source": {"type": "base64", "data": "/9j/" + "A" * 30}}
    records.append(_user("u2", 3, [{"type": "text", "text": "see"}, bad_image]))
    records.append(_assistant("a1", 4, "m1", [{"type": "text", "text": "ok"}], 2, "end_turn"))
    session = _one(_write(tmp_path, records))
    assert len(session.responses) == 1
    assert dict(session.unmeasured)["image"] == 1
    assert session.estimate_methods == ()
