"""BLAKE2b, the stable hash of track uuids, flow ids and the shape of tool arguments.

Taken from CPython's built-in `_blake2` module: `import hashlib` first loads OpenSSL to
list its algorithms, about 11 M instructions (≈ 3 ms, 2% of the command's start-up), for
a function that is the same object either way."""

from __future__ import annotations

try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a CPython built without its BLAKE2 module
    from hashlib import blake2b

__all__ = ["blake2b"]
