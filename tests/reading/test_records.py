"""records.py's shared `__eq__`, `__hash__` and `__repr__` give what `dataclass` generates
for the same class: on hand-made classes with every field option, and on every record
object of real sessions of each harness, each compared with a twin made by `dataclass`."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from enum import Enum
from typing import Any

import pytest

from agent_profiler.records import frozen, hashable_record, record
from samples import CLAUDE_SMALL, CODEX_SMALL, GEMINI_DOCUMENT, OPENCODE_EXPORT, PI_LARGE, read


def twin(cls: type, *, hashable: bool) -> type:
    """The same fields (names, defaults, compare/hash/repr options) made by `dataclass`."""
    namespace: dict[str, Any] = {"__annotations__": {}, "__qualname__": cls.__qualname__}
    for f in dataclasses.fields(cls):
        namespace["__annotations__"][f.name] = f.type
        namespace[f.name] = dataclasses.field(
            default=f.default,
            default_factory=f.default_factory,
            compare=f.compare,
            hash=f.hash,
            repr=f.repr,
        )
    made = type(cls.__name__, (), namespace)
    return dataclasses.dataclass(slots=True, unsafe_hash=hashable)(made)


def as_twin(value: Any, kind: type) -> Any:
    copy = object.__new__(kind)
    for f in dataclasses.fields(kind):
        object.__setattr__(copy, f.name, getattr(value, f.name))
    return copy


def assert_same_as_dataclass(value: Any) -> None:
    cls = type(value)
    hashable = cls.__hash__ is not None
    kind = twin(cls, hashable=hashable)
    other = as_twin(value, kind)
    assert repr(value) == repr(other)
    if hashable:
        assert hash(value) == hash(other)
    # Equal to a field-for-field copy, unequal to another class with the same fields.
    copy = object.__new__(cls)
    for f in dataclasses.fields(cls):
        setattr(copy, f.name, getattr(value, f.name))
    assert value == copy
    assert (value != copy) is False
    assert value != other and other != value


# ------------------------------------------------------------------ hand-made classes


@frozen
class Empty:
    pass


@frozen
class One:
    a: int


@frozen
class Options:
    a: int
    b: str = "x"
    hidden: int = dataclasses.field(default=0, repr=False)
    ignored: int = dataclasses.field(default=0, compare=False)
    unhashed: int = dataclasses.field(default=0, hash=False)
    hashed_only: int = dataclasses.field(default=0, compare=False, hash=True)
    items: tuple[int, ...] = ()


@record
class Draft:
    a: int
    children: list[Any] = dataclasses.field(default_factory=list)


@hashable_record
class Keyed:
    a: int
    b: str = ""


class Outer:
    @frozen
    class Inner:
        a: int


CASES = [
    Outer.Inner(1),
    Empty(),
    One(3),
    One(-(2**70)),
    Options(1),
    Options(2, "y", hidden=5, ignored=6, unhashed=7, hashed_only=8, items=(1, 2)),
    Draft(1, [One(2), "three"]),
    Keyed(4, "k"),
]


@pytest.mark.parametrize("value", CASES, ids=lambda v: repr(v)[:40])
def test_a_hand_made_record_compares_hashes_and_prints_as_a_dataclass(value: Any) -> None:
    assert_same_as_dataclass(value)


def test_field_options_decide_what_is_compared_and_hashed() -> None:
    base = Options(1, hidden=2, ignored=3, unhashed=4, hashed_only=5)
    # compare=False: not compared; repr=False: compared, not shown
    assert base == dataclasses.replace(base, ignored=99)
    assert base != dataclasses.replace(base, hidden=99)
    assert "hidden" not in repr(base) and "ignored=3" in repr(base)
    # hash=False: compared, not hashed; compare=False, hash=True: hashed, not compared
    assert hash(base) == hash(dataclasses.replace(base, unhashed=99))
    assert base != dataclasses.replace(base, unhashed=99)
    assert hash(base) != hash(dataclasses.replace(base, hashed_only=99))
    assert base == dataclasses.replace(base, hashed_only=99)
    # one field's hash is the one-tuple's, as dataclass's
    assert hash(One(7)) == hash((7,)) and hash(Empty()) == hash(())


def test_a_record_is_unhashable_and_mutable_and_a_hashable_record_is_a_set_member() -> None:
    draft = Draft(1)
    with pytest.raises(TypeError, match="unhashable"):
        hash(draft)
    draft.a = 2
    assert draft == Draft(2)
    assert len({Keyed(1, "a"), Keyed(1, "a"), Keyed(2, "a")}) == 2
    assert One(1) != 1 and One(1).__eq__(1) is NotImplemented


def test_a_nested_record_prints_its_qualified_name() -> None:
    assert repr(Outer.Inner(1)) == "Outer.Inner(a=1)"


def test_a_record_that_holds_itself_prints_without_recursing() -> None:
    draft = Draft(1)
    draft.children.append(draft)
    assert repr(draft) == "Draft(a=1, children=[...])"


# ------------------------------------------------------------------ real sessions


def records_of(value: Any, seen: set[int]) -> Iterator[Any]:
    """Every record object reachable from `value` (a session), once each."""
    if id(value) in seen or isinstance(value, (str, bytes, int, float, Enum)) or value is None:
        return
    seen.add(id(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield value
        for f in dataclasses.fields(value):
            yield from records_of(getattr(value, f.name), seen)
    elif isinstance(value, (tuple, list, frozenset, set)):
        for item in value:
            yield from records_of(item, seen)
    elif isinstance(value, dict):
        for item in value.values():
            yield from records_of(item, seen)


@pytest.mark.parametrize(
    "journal", [CLAUDE_SMALL, CODEX_SMALL, PI_LARGE, GEMINI_DOCUMENT, OPENCODE_EXPORT]
)
def test_every_record_of_a_real_session_is_what_dataclass_would_make(journal: Any) -> None:
    sessions, _ = read(journal)
    found = list(records_of(sessions, set()))
    kinds = {type(value).__name__ for value in found}
    assert {"Session", "Response", "Usage", "ContextSnapshot"} <= kinds, kinds
    for value in found[:: max(1, len(found) // 400)]:  # a spread of up to ~400 objects
        assert_same_as_dataclass(value)
