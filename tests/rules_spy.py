"""Helpers for the category-rule tests (tests/test_rules_*.py): run an adapter on real corpus
records and see exactly which context items it added, with their category, size and estimate."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.attribution import ContextLog
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import Category, Harness, Session, SourceKind


@dataclass(frozen=True)
class Added:
    id: str
    category: Category
    chars: int
    tokens: int
    label: str
    source_id: str
    source_kind: SourceKind


def spy(monkeypatch: pytest.MonkeyPatch) -> list[Added]:
    """Every `ContextLog.add` from now on, in order, with the estimate it was given."""
    seen: list[Added] = []
    original = ContextLog.add

    def add(self: ContextLog, item_id: str, category: Category, size: int | str, **kw: Any) -> None:
        # Adapters hand over the item's text (or, when only a length is known, its characters).
        tokens = kw.get("tokens")
        chars = len(size) if isinstance(size, str) else size
        measured = (
            self.estimator.text_tokens(size)
            if isinstance(size, str)
            else self.estimator.chars_tokens(size)
        )
        seen.append(
            Added(
                item_id,
                category,
                chars,
                measured if tokens is None else tokens,
                kw.get("label", ""),
                kw.get("source_id", ""),
                kw.get("source_kind", SourceKind.NONE),
            )
        )
        original(self, item_id, category, size, **kw)

    monkeypatch.setattr(ContextLog, "add", add)
    return seen


def raw_lines(path: Path) -> list[str]:
    """The journal's lines as text (line N is index N-1)."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return str(handle.read()).split("\n")


def record(path: Path, line: int) -> dict[str, Any]:
    value = json.loads(raw_lines(path)[line - 1])
    assert isinstance(value, dict)
    return value


def excerpt(
    tmp_path: Path, path: Path, lines: list[int], name: str = "excerpt.jsonl", **edits: Any
) -> Path:
    """A journal made of some real lines of `path`, in order (edits: {line: record})."""
    out = tmp_path / name
    texts = []
    for n in lines:
        texts.append(json.dumps(edits[f"l{n}"]) if f"l{n}" in edits else raw_lines(path)[n - 1])
    out.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return out


def write(tmp_path: Path, records: list[dict[str, Any]], name: str = "edited.jsonl") -> Path:
    out = tmp_path / name
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return out


def sessions(*paths: Path, harness: Harness | None = None) -> list[Session]:
    result = load(list(paths), Diagnostics(), harness=harness)
    assert result.failures == [], result.failures
    return list(result.sessions)


def by_id(added: list[Added]) -> dict[str, Added]:
    return {a.id: a for a in added}
