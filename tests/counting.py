"""Values that count the comparisons made with them: the scaling tests count work as the
input doubles (we write no timed tests)."""

from __future__ import annotations


class CountedNs(int):
    """A time (ns) that counts the comparisons made with it, in `CountedNs.compared`."""

    compared = 0

    def __eq__(self, other: object) -> bool:
        CountedNs.compared += 1
        return int.__eq__(self, other)  # type: ignore[no-any-return]

    def __lt__(self, other: int) -> bool:
        CountedNs.compared += 1
        return int.__lt__(self, other)

    def __le__(self, other: int) -> bool:
        CountedNs.compared += 1
        return int.__le__(self, other)

    def __gt__(self, other: int) -> bool:
        CountedNs.compared += 1
        return int.__gt__(self, other)

    def __ge__(self, other: int) -> bool:
        CountedNs.compared += 1
        return int.__ge__(self, other)

    __hash__ = int.__hash__
