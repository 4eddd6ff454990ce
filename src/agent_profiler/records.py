"""The package's record classes: slots dataclasses whose comparison, hashing and repr
are three functions shared by every class, not three compiled for each.

`dataclass` compiles each method it makes (`exec` of its source): four for a hashable
class, three for a plain one, about 1 ms a class. An export's start-up made 65 such
classes, and compiling their methods was a third of it. Here `dataclass` makes only
`__init__`; `__eq__`, `__hash__` and `__repr__` come from `by_value` and give what the
generated ones give: equal when the class is the same and the compared fields are, the
hash of the hashed fields' tuple, `Name(field=value, …)` (tests/test_records.py holds
them to `dataclass`'s own on the same classes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from operator import attrgetter
from reprlib import recursive_repr
from typing import Any, TypeVar, dataclass_transform

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def frozen(cls: type[T]) -> type[T]:
    """The model's classes, and every other record of the package: frozen to the type
    checker, plain slots dataclasses at run time.

    Nothing changes such an object once it is made, and `mypy --strict` (part of `make
    test`) rejects any assignment to a field of a class made with this decorator. At run
    time they are not `frozen=True`: a frozen dataclass's `__init__` sets each field
    through `object.__setattr__`, about six times the cost of a plain one, and making them
    (a snapshot and its changes, a response, its usage, a tool call per request) was a
    seventh of reading a Codex or Pi journal; its generated `__setattr__` and `__delattr__`
    cost start-up too. Hashable and compared by value, as a frozen dataclass is."""
    return by_value(dataclass(slots=True, eq=False, repr=False)(cls), hashable=True)


@dataclass_transform()
def record(cls: type[T]) -> type[T]:
    """A mutable record (a draft, a builder's state): `@dataclass(slots=True)`, compared
    by value and so not hashable."""
    return by_value(dataclass(slots=True, eq=False, repr=False)(cls), hashable=False)


@dataclass_transform()
def hashable_record(cls: type[T]) -> type[T]:
    """A mutable record that is also a set member or a key:
    `@dataclass(slots=True, unsafe_hash=True)`."""
    return by_value(dataclass(slots=True, eq=False, repr=False)(cls), hashable=True)


def by_value(cls: type[T], *, hashable: bool) -> type[T]:
    """`__eq__`, `__repr__` and `__hash__` (None unless `hashable`, as a dataclass with
    `eq` and without `unsafe_hash` has) for a dataclass made with `eq=False, repr=False`."""
    made = fields(cls)  # type: ignore[arg-type]
    compared = tuple(f.name for f in made if f.compare)
    hashed = tuple(f.name for f in made if (f.compare if f.hash is None else f.hash))
    kind: Any = cls
    kind._compared_ = staticmethod(field_values(compared))
    kind._shown_ = tuple(f.name for f in made if f.repr)
    kind.__eq__ = _eq
    kind.__repr__ = _repr
    if hashable:
        kind._hashed_ = staticmethod(field_values(hashed))
        kind.__hash__ = _hash
    else:
        kind.__hash__ = None
    return cls


def field_values(names: tuple[str, ...]) -> Callable[[object], tuple[object, ...]]:
    """The named attributes as a tuple (attrgetter gives a bare value for one name)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        one = attrgetter(names[0])
        return lambda value: (one(value),)
    return lambda value: ()


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        values = self._compared_
        return values(self) == values(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self._hashed_(self))


@recursive_repr()
def _repr(self: Any) -> str:
    shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._shown_)
    return f"{self.__class__.__qualname__}({shown})"
