"""Helpers for the category-rule tests (tests/test_rules_*.py): run an adapter on real corpus
records and see exactly which context items it added, with their category, size and estimate."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.attribution import ContextLog, Item
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
    """Every item entering a `ContextLog` from now on, in order, with its estimate: what
    `add` measured, or what an adapter measured before and hands over to `enter` (Pi)."""
    seen: list[Added] = []
    original, original_add = ContextLog.enter, ContextLog.add

    def note(item: Item) -> None:
        seen.append(
            Added(
                item.id,
                item.category,
                item.chars,
                item.tokens,
                item.label,
                item.source_id,
                item.source_kind,
            )
        )

    def enter(self: ContextLog, item: Item) -> None:
        note(item)
        original(self, item)

    def add(self: ContextLog, *args: Any, **kwargs: Any) -> None:
        original_add(self, *args, **kwargs)  # (`enter` inline: the item it logged last)
        note(self._ops[-1])  # type: ignore[arg-type]

    monkeypatch.setattr(ContextLog, "enter", enter)
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
