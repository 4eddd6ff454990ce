"""Public names a package offers but imports only when first asked for (PEP 562): its
`__getattr__`, made from a table of each name's module. Used by `agent_profiler` and
`agent_profiler.report`, whose public names would otherwise import most of the package at
every start-up (initialising a package happens on any import of one of its modules)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def module_getattr(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """The `__getattr__` of `package`: a name in `homes` is imported from
    `<package>.<home>` and kept in the package's namespace (asked once); any other name is
    an AttributeError, as on any module."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
