"""The replay of a `ContextLog` (attribution.py): its entries, in journal order, become
`ContextSnapshot`s whose changes are the diff between consecutive snapshots, the first and
every model change a baseline, at most MAX_CHANGES each, largest |delta| first; the
inferred head measured at the first request with a reported size (SPEC §2–3).

Separate from attribution.py, which owns the log the adapters write: this reads it once,
when the journal has been read."""

from __future__ import annotations

from collections.abc import Iterable
from heapq import nsmallest

from agent_profiler.attribution import (
    _LABELS,
    INFERRED_HEAD_ID,
    MAX_CHANGES,
    Categories,
    Item,
    Observation,
    _Clear,
    _NativeHead,
    _Op,
    _Remove,
)
from agent_profiler.model import (
    Basis,
    Category,
    ChangeKind,
    ContextChange,
    ContextSnapshot,
    Coverage,
    Tokens,
)

# As globals: a class's attribute (`ChangeKind.ADDED`) is looked up the generic way each
# time in CPython 3.11, a global is cached (once per change of every request).
_ADDED, _REMOVED, _REPLACED = ChangeKind.ADDED, ChangeKind.REMOVED, ChangeKind.REPLACED


class Replayer:
    """Turns a log's entries into snapshots whose changes are the diff between
    consecutive ones (`ContextLog.replay`)."""

    def __init__(self, basis: Basis, coverage: Coverage, infer_head: bool) -> None:
        self.basis = basis
        self.coverage = coverage
        self.infer_head = infer_head
        self.items: dict[str, Item] = {}
        self.totals: dict[Category, int] = dict.fromkeys(Category, 0)
        # id → the item as of the previous snapshot (None: absent then), for ids touched since.
        self.pending: dict[str, Item | None] = {}
        self.head_done = self.compacted = False  # compacted: a _Clear replayed
        self.native_ids: set[str] = set()  # head items measured natively
        self.last_model: str | None = None
        self.snapshots: list[ContextSnapshot] = []
        self.pairs: dict[Category, tuple[Category, Tokens]] = {}  # each category's latest
        # The last baseline's kept entries and the ids touched since (None: given up, so
        # many touched that a scan of every item costs as much): what the next baseline
        # chooses from (_baseline_changes).
        self.top: list[_Entry] | None = None
        self.touched: set[str] = set()

    def run(self, ops: list[_Op]) -> list[ContextSnapshot]:
        """Replay `ops`, given last first: each is popped as it is replayed, so the log
        shrinks while the snapshots grow (a long session held both at once)."""
        items, totals, pending = self.items, self.totals, self.pending
        while ops:
            op = ops.pop()
            if type(op) is Item:  # most entries: `_put(op.id, op)`, inline
                item_id = op.id
                old = items.get(item_id)
                if item_id not in pending:
                    pending[item_id] = old
                if old is not None:
                    totals[old.category] -= old.tokens
                items[item_id] = op
                totals[op.category] += op.tokens
            elif type(op) is Observation:  # next most: one per request, not after 4 tests
                if not op.dropped:
                    self._observe(op)
            elif isinstance(op, Item):
                self._put(op.id, op)
            elif isinstance(op, _Remove):
                self._put(op.id, None)
            elif isinstance(op, _Clear):
                leaving = [
                    item_id
                    for item_id, item in self.items.items()
                    if item_id != INFERRED_HEAD_ID
                    and item_id not in self.native_ids
                    and item.category not in op.keep
                ]
                for item_id in leaving:  # `_put(item_id, None)`, inline: hundreds at once
                    old = items.pop(item_id)
                    pending.setdefault(item_id, old)
                    totals[old.category] -= old.tokens
                # A compaction drops what the head held (a resumed session's past): measure anew.
                self.head_done, self.compacted = bool(self.native_ids), True
            elif isinstance(op, _NativeHead):
                for item_id in [INFERRED_HEAD_ID, *self.native_ids]:
                    if item_id in self.items:
                        self._put(item_id, None)
                self.native_ids = {item.id for item in op.items}
                for item in op.items:
                    self._put(item.id, item)
                self.head_done = True  # measured, not inferred: never re-inferred
            elif not op.dropped:
                self._observe(op)
        return self.snapshots

    def _put(self, item_id: str, item: Item | None) -> None:
        old = self.items.get(item_id)
        if item_id not in self.pending:
            self.pending[item_id] = old
        if old is not None:
            self.totals[old.category] -= old.tokens
        if item is None:
            self.items.pop(item_id, None)
        else:
            self.items[item_id] = item
            self.totals[item.category] += item.tokens

    def _measure_head(self, reported: Tokens) -> None:
        self.head_done = True
        current = self.items.get(INFERRED_HEAD_ID)
        known = sum(self.totals.values()) - (current.tokens if current else 0)
        missing = reported - known
        if missing > 0:  # the second of _LABELS once measured after a compaction
            label = _LABELS[self.compacted]
            head = Item(INFERRED_HEAD_ID, Category.UNATTRIBUTED, 0, missing, label)
            self._put(INFERRED_HEAD_ID, head)
        elif current is not None:
            self._put(INFERRED_HEAD_ID, None)

    def _observe(self, obs: Observation) -> None:
        native = obs.native_categories is not None
        if self.infer_head and not self.head_done and obs.reported_tokens and not native:
            self._measure_head(obs.reported_tokens)
        baseline = (
            not self.snapshots
            or obs.force_baseline
            or (
                obs.model is not None
                and self.last_model is not None
                and obs.model != self.last_model
            )
        )
        if obs.model is not None:
            self.last_model = obs.model
        if baseline:
            found, count = self._baseline_changes()
        else:
            changes = self._diff_changes()
            found, count = first_changes(changes), len(changes)
            if self.top is not None:
                self.touched.update(self.pending)
                if len(self.touched) > len(self.items) // 2:
                    self.top, self.touched = None, set()
        self.pending.clear()
        kept = tuple(
            [
                ContextChange(
                    item_id,
                    item.category,
                    kind,
                    tokens,
                    delta,
                    item.chars or None,
                    item.label,
                    item.source_id,
                    item.source_kind,
                    item.method,
                )
                for _, item_id, item, kind, tokens, delta in found
            ]
        )
        if obs.native_categories is not None:
            categories = self._shared(obs.native_categories)
        else:
            categories = self._shared(self.totals.items())
        self.snapshots.append(
            ContextSnapshot(  # by position, in the model's field order: once per request
                obs.time_ns,  # time_ns
                obs.anchor,  # anchor
                obs.anchor_id,  # anchor_id
                obs.stage,  # stage
                obs.basis or self.basis,  # basis
                obs.coverage or self.coverage,  # coverage
                baseline,  # baseline
                categories,  # categories
                kept,  # changes
                count - len(kept),  # omitted_changes
                obs.reported_tokens,  # reported_tokens
                obs.window_tokens,  # window_tokens
                obs.effective_window_tokens,  # effective_window_tokens
                obs.compact_threshold_tokens,  # compact_threshold_tokens
                obs.model,  # model
                obs.item_stage,  # item_stage
            )
        )

    def _shared(self, totals: Iterable[tuple[Category, Tokens]]) -> Categories:
        """The categories present (tokens > 0), made of the (category, tokens) pairs held
        already where they are equal, and the previous snapshot's tuple itself when nothing
        moved: between two requests most totals do not move, and a long session's snapshots
        held one pair each otherwise (a sixth of a Pi model)."""
        pairs = self.pairs
        present = []
        for category, tokens in totals:
            if tokens > 0:
                pair = pairs.get(category)
                if pair is None or pair[1] != tokens:
                    pair = pairs[category] = (category, tokens)
                present.append(pair)
        categories = tuple(present)
        previous = self.snapshots[-1].categories if self.snapshots else None
        return previous if previous == categories else categories  # compared by identity first

    def _baseline_changes(self) -> tuple[list[_Found], int]:
        """The kept changes of a baseline, in order, and how many there are: one per item
        in context. A session that changes model at every request makes each a baseline,
        and a sort of every item each time made it O(requests × items · log items).

        Chosen from the last baseline's kept entries not touched since and the items
        touched since (O(those): a few when baselines follow one another), when that is
        enough: every other item was there then, unchanged, ordered after the last one it
        kept. Otherwise from every item: a heap of MAX_CHANGES, not a sort (O(items))."""
        items, top = self.items, self.top
        chosen = None
        if top is not None:
            touched = self.touched
            touched.update(self.pending)
            entries = [entry for entry in top if entry[1] not in touched]
            for item_id in touched:
                item = items.get(item_id)
                if item is not None:
                    entries.append((-abs(item.tokens), item_id, item))
            chosen = nsmallest(MAX_CHANGES, entries)
            # Items not among the entries exist only if the last baseline left some out
            # (so it kept MAX_CHANGES): each is ordered after the last one it kept.
            if len(entries) < len(items) and (
                len(chosen) < MAX_CHANGES or chosen[-1][:2] > top[-1][:2]
            ):
                chosen = None
        if chosen is None:
            chosen = nsmallest(
                MAX_CHANGES, ((-abs(item.tokens), item_id, item) for item_id, item in items.items())
            )
        self.top, self.touched = chosen, set()
        kind = ChangeKind.BASELINE
        return [
            (key, item_id, item, kind, item.tokens, item.tokens) for key, item_id, item in chosen
        ], len(items)

    def _diff_changes(self) -> list[_Found]:
        changes: list[_Found] = []
        items = self.items
        for item_id, old in self.pending.items():
            new = items.get(item_id)
            if old is None:
                if new is not None and new.tokens:
                    tokens = new.tokens
                    changes.append((-abs(tokens), item_id, new, _ADDED, tokens, tokens))
            elif new is None:
                if old.tokens:
                    changes.append((-abs(old.tokens), item_id, old, _REMOVED, 0, -old.tokens))
            elif (old.tokens or new.tokens) and (
                old.tokens != new.tokens or old.category != new.category
            ):
                delta = new.tokens - old.tokens
                changes.append((-abs(delta), item_id, new, _REPLACED, new.tokens, delta))
        return changes


# A change found between two snapshots, before it is kept: -|delta| and the id (its order,
# largest first: ids are unique, so no items are compared and the order is total), the
# item, kind, tokens, delta. The MAX_CHANGES smallest tuples are kept, sorted.
_Found = tuple[int, str, Item, ChangeKind, Tokens, int]
_Entry = tuple[int, str, Item]  # an item as a baseline orders it: -|tokens|, id, the item


def first_changes(found: list[_Found]) -> list[_Found]:
    """The MAX_CHANGES changes kept of those `found`, in order (a list of all sorted, cut):
    a few as a rule, sorted; after a compaction every item, chosen by a heap, not sorted."""
    if len(found) <= MAX_CHANGES:
        found.sort()
        return found
    return nsmallest(MAX_CHANGES, found)
