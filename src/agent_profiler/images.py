"""An image's pixel size, read from its own header, and the tokens a provider bills for it.

A journal that holds an image (base64 in a content block) holds its size: PNG, JPEG, GIF
and WebP say their width and height in their first bytes (JPEG: in its start-of-frame
segment). No image library: only the headers are read. The size becomes tokens by the
provider's documented formula (`anthropic_image_tokens`); an item sized so names the
method `estimate.IMAGE_PIXELS` (see `attribution.ContextLog.add_evidence`).
"""

from __future__ import annotations

import binascii
import math
import struct

from agent_profiler.model import Tokens

# Anthropic's vision guide (platform.claude.com/docs/en/build-with-claude/vision, "Evaluate
# image size" / "Calculate image costs"): "An image uses approximately width * height / 750
# tokens"; an image whose long edge is more than 1568 px, or of more than about 1,600 tokens
# (≈ 1.15 megapixels), is first scaled down, preserving its aspect ratio.
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_LONG_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 1_150_000

# Enough base64 for every header but a JPEG's (whose frame may follow large metadata).
_HEAD_CHARS = 64


def anthropic_image_tokens(width: int, height: int) -> Tokens:
    """Tokens of a `width` × `height` image sent to Claude: scaled down (aspect kept) to
    fit the long-edge and megapixel limits, then width × height / 750, rounded up."""
    if width <= 0 or height <= 0:
        return 0
    scale = min(
        1.0,
        ANTHROPIC_LONG_EDGE / max(width, height),
        math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)),
    )
    w, h = int(width * scale), int(height * scale)
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)


def base64_dimensions(data: str) -> tuple[int, int] | None:
    """(width, height) of a base64-encoded PNG, JPEG, GIF or WebP image, or None."""
    head = _decode(data[:_HEAD_CHARS])
    if head is None:
        return None
    size = dimensions(head)
    if size is None and head.startswith(b"\xff\xd8"):
        whole = _decode(data)
        size = dimensions(whole) if whole is not None else None
    return size


def _decode(data: str) -> bytes | None:
    data = data[: len(data) - len(data) % 4]
    try:
        return binascii.a2b_base64(data)  # base64.b64decode(data) without its import
    except (binascii.Error, ValueError):
        return None


def dimensions(data: bytes) -> tuple[int, int] | None:
    """(width, height) from an image's header bytes, or None when not known."""
    size: tuple[int, int] | None = None
    if data.startswith(b"\x89PNG\r\n\x1a\n") and data[12:16] == b"IHDR" and len(data) >= 24:
        size = struct.unpack(">II", data[16:24])
    elif data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        size = struct.unpack("<HH", data[6:10])
    elif data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        size = _webp(data)
    elif data.startswith(b"\xff\xd8"):
        size = _jpeg(data)
    if size is None or size[0] <= 0 or size[1] <= 0:
        return None
    return int(size[0]), int(size[1])


def _webp(data: bytes) -> tuple[int, int] | None:
    chunk = data[12:16]
    if chunk == b"VP8X" and len(data) >= 30:
        width = int.from_bytes(data[24:27], "little") + 1
        height = int.from_bytes(data[27:30], "little") + 1
        return width, height
    if chunk == b"VP8 " and len(data) >= 30:
        width, height = struct.unpack("<HH", data[26:30])
        return width & 0x3FFF, height & 0x3FFF
    if chunk == b"VP8L" and len(data) >= 25:
        bits = int.from_bytes(data[21:25], "little")
        return (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1
    return None


# JPEG start-of-frame markers (baseline, progressive, …): not DHT (C4), JPG (C8), DAC (CC).
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[int, int] | None:
    at = 2
    while at + 9 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:  # no length
            at += 2
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in _SOF:
            height, width = struct.unpack(">HH", data[at + 5 : at + 9])
            return width, height
        at += 2 + length
    return None
