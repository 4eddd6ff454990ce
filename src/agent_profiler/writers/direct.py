"""Slice arguments encoded straight from the model to bytes, for the builders whose slices
are most of an export: a response's arguments with its snapshot's `context` (about 40
annotation leaves per request, annotations.response_args and context_dict), a tool
call's (tool_args), and the `context` of a compaction and of a harness's /context report.

The generic path builds each slice's dict (annotations.py) and walks it (wire.py's
`entries`): on the Pi 5 MB bench journal that was 145 M instructions of dict building and
633 M of walking, for 2,203 requests, the largest part of the writer. Here the same keys
are picked from the model in the same order, and each item's bytes are kept once made:
an item whose value repeats (a stage, a category's change kind, a label, a small count)
is one lookup, and a count of any size is a prefix (tag, length, name, field) and its
varint.

The bytes are the generic path's by construction: every item is first encoded by the
generic encoder itself (`one`: `entries` of a one-item dict), and what is kept is that
item's bytes, or its bytes before a varint of the same length (the prefix every value of
that length shares). Items are made in the builder's key order, containers' names before
their contents, so texts are interned in the order the generic walk interns them. What
can drift is which keys are written: tests/writers/test_direct.py holds this module to the
generic path, byte for byte, on hand-made snapshots and on the corpus."""

from __future__ import annotations

from collections.abc import Callable, Container
from enum import Enum
from operator import attrgetter
from typing import Any

from agent_profiler.annotations import (
    REPEATED_CONTEXT_KEYS,
    TOOL_LABELS,
    compaction_args,
    context_command_args,
    response_args,
    tool_args,
)
from agent_profiler.model import (
    Compaction,
    ContextSnapshot,
    Response,
    Session,
    SourceKind,
    ToolCall,
)
from agent_profiler.targets import shown
from agent_profiler.views import AfterCompaction
from agent_profiler.writers.wire import MAX_INTERNED, varint

Item = Callable[[Any], bytes]
Entries = Callable[[dict[Any, Any], bytes], bytes]

# Tags of a TrackEvent's debug_annotations (4), a dict annotation's dict_entries (11) and
# an array annotation's array_values (12), each length-delimited.
_ANNOTATION, _DICT_ENTRY, _ARRAY_VALUE = b"\x22", b"\x5a", b"\x62"
_BYTE = [bytes((i,)) for i in range(128)]
_NO_CALLS: frozenset[str] = frozenset()
# Items kept by an open-ended value (a label, a target): at most this many per table, so
# a long session's memory stays flat (a table starts afresh when full).
MAX_KEPT = 4096
_repeated = attrgetter(*REPEATED_CONTEXT_KEYS)
_TOOL = SourceKind.TOOL


def _framed(tag: bytes, entry: bytes) -> bytes:
    size = len(entry)
    return tag + (_BYTE[size] if size < 0x80 else varint(size)) + entry


class Kept(dict[Any, bytes]):
    """Items of one key by their value (a label, a source kind), of values whose equal
    values encode the same (str and StrEnum members): a lookup in C, no call, when the
    item was made before; made the generic way (`make`) otherwise. A long session's
    labels are open-ended, so the table starts afresh when full."""

    def __init__(self, make: Item) -> None:
        super().__init__()
        self.make = make

    def __missing__(self, value: Any) -> bytes:
        if len(self) >= MAX_KEPT:
            self.clear()
        made = self[value] = self.make(value)
        return made


class Items:
    """Makers of one key's items (framed with its tag), each keeping what it made: the
    generic encoder makes an item the first time (interning its name, and its text). Made
    of an EventEncoder's generic `entries` and its interning, which DirectArgs reads here."""

    def __init__(
        self,
        entries: Entries,
        head: Callable[[str], bytes],
        strings: dict[str, bytes],
        string_field: Callable[[str], bytes],
        unique: Container[str],
    ) -> None:
        self.entries = entries
        self.head = head  # a name's name_iid field, interned on first use
        self.strings = strings  # each interned text's string_value_iid field
        self.string_field = string_field  # … interned on first use
        self.unique = unique

    def one(self, tag: bytes, key: str, value: Any) -> bytes:
        """The generic path's bytes of one item."""
        return self.entries({key: value}, tag)

    def kept(self, tag: bytes, key: str, kind: type[Any]) -> Item:
        """Items whose value is of type `kind` (an enum, str, bool) kept by value: values
        that repeat (a source kind, a label, a flag). A value of another type goes the
        generic way each time (True == 1: a bool's table must not answer for an int)."""
        table: dict[Any, bytes] = {}
        one = self.one
        plain = issubclass(kind, Enum)  # the builders write an enum member's value

        def item(value: Any) -> bytes:
            if type(value) is not kind:
                return one(tag, key, value)
            made = table.get(value)
            if made is None:
                if len(table) >= MAX_KEPT:
                    table.clear()
                made = table[value] = one(tag, key, value.value if plain else value)
            return made

        return item

    def table(self, tag: bytes, key: str) -> Kept:
        """A `Kept` table of one key's str (or StrEnum) items."""
        one = self.one

        def make(value: Any) -> bytes:
            return one(tag, key, value.value if isinstance(value, Enum) else value)

        return Kept(make)

    def count(self, tag: bytes, key: str) -> Item:
        """An int's item: below 128 kept whole; otherwise the prefix the generic item of
        that varint length began with (tag, length, name, field: the same for every
        value of that length) and the value's varint, a negative int's ten bytes
        included. A bool, a str, an int beyond 2**28, the generic way.

        Token counts are most of a request's leaves (about 20 of 40), so the common
        lengths (two and three bytes) are tested and written inline: this runs in
        about half the bytecodes of a call to varint() and a table of prefixes."""
        small: list[bytes | None] = [None] * 128
        prefixes: dict[int, bytes] = {}  # varint length (10: negative) → prefix
        two = three = b""  # prefixes[2], prefixes[3] once known
        one = self.one

        def first(value: Any) -> bytes:
            """An item not written before in its form: the generic way, kept."""
            nonlocal two, three
            if type(value) is not int:
                return one(tag, key, value)
            if 0 <= value < 0x80:
                # One value of one byte the generic way; the others of one byte the same
                # prefix and their byte: a journal group's encoder starts afresh, and the
                # 50 rollouts of the bench each made up to 128 of every count the long way.
                prefix = prefixes.get(1)
                if prefix is None:
                    made = one(tag, key, value)
                    prefixes[1] = made[:-1]
                else:
                    made = prefix + _BYTE[value]
                small[value] = made
                return made
            # A negative's varint is ten bytes; varint() unrolls a small one (a removal's
            # delta_tokens), where its value + 2**64 took the loop.
            if 0 <= value < 0x10000000 or -(1 << 63) <= value < 0:
                field = varint(value)
            else:
                return one(tag, key, value)
            prefix = prefixes.get(len(field))
            if prefix is not None:
                return prefix + field
            made = one(tag, key, value)
            prefixes[len(field)] = made[: -len(field)]
            two, three = prefixes.get(2, b""), prefixes.get(3, b"")
            return made

        def item(value: Any) -> bytes:
            if type(value) is int:
                if value < 0x4000:
                    if value >= 0x80:
                        if two:  # the varint as wire.varint makes it
                            return two + (value + (value & 0x3F80) + 0x80).to_bytes(2, "little")
                    elif value >= 0:
                        made = small[value]
                        if made is not None:
                            return made
                elif value < 0x200000 and three:
                    return three + (
                        value + (value & 0x3F80) + 3 * (value & 0x1FC000) + 0x8080
                    ).to_bytes(3, "little")
            return first(value)

        return item

    def text(self, tag: bytes, key: str) -> Item:
        """A str's item, interned (string_value_iid) unless too long or under a unique
        key: a prefix per text length (tag, length, name, `string_value` field and the
        text's length) and the text; or the name and the interned text's field."""
        if key in self.unique:
            return self._inline(tag, key)
        one, string_field, strings, head = self.one, self.string_field, self.strings, self.head
        # The item's bytes before the text's field, by the field's length (2–11 bytes),
        # once the generic way has interned the name.
        framings: list[bytes] = []

        def item(value: Any) -> bytes:
            if framings and type(value) is str and len(value) <= MAX_INTERNED:
                field = strings.get(value) or string_field(value)
                return framings[len(field)] + field
            made = one(tag, key, value)
            name = head(key)
            framings[:] = [tag + _BYTE[len(name) + size] + name for size in range(12)]
            return made

        return item

    def _inline(self, tag: bytes, key: str) -> Item:
        prefixes: dict[int, bytes] = {}  # the text's length in bytes → prefix
        one = self.one

        def item(value: Any) -> bytes:
            if type(value) is not str:
                return one(tag, key, value)
            data = value.encode()
            prefix = prefixes.get(len(data))
            if prefix is None:
                made = one(tag, key, value)
                prefixes[len(data)] = made[: len(made) - len(data)]
                return made
            return prefix + data

        return item


class DirectArgs:
    """The direct encoders of one EventEncoder (its interning, its generic `entries`):
    `by_builder` maps each annotations.py builder to the function that encodes the same
    arguments from the same inputs, as a TrackEvent's debug_annotations."""

    def __init__(self, items: Items) -> None:
        self.items = items
        self.head = items.head
        self.by_builder: dict[Callable[..., dict[str, Any]], Callable[..., bytes]] = {
            response_args: self.response,
            tool_args: self.tool,
            compaction_args: self.compaction,
            context_command_args: self.context_command,
        }
        # Items of each key where its slice kind writes it (top level or in `context`).
        top, entry = _ANNOTATION, _DICT_ENTRY
        # Runs of items that repeat, kept by what they are made of.
        self.response_openings: dict[tuple[str, str], bytes] = {}  # by model, provider
        self.tool_kind = b""
        self.tool_middles: dict[tuple[str, bool, type], bytes] = {}  # by name, is_error
        self.tool_keys: dict[tuple[str, ...], bytes] = {}
        self.tool_targets: dict[str, bytes] = {}  # target and target_kind, by the target
        self.context_openings: dict[tuple[Any, ...], bytes] = {}  # by stage, …, coverage
        self.top_counts = {
            key: items.count(top, key)
            for key in (
                "input_tokens",
                "output_tokens",
                "cache_read_tokens",
                "cache_write_tokens",
                "context_tokens",
                "reasoning_tokens",
                "context_window_tokens",
                "web_searches",
                "bytes",
                "result_chars",
            )
        }
        self.top_flags = {key: items.kept(top, key, bool) for key in ("is_error", "usage_known")}
        self.top_texts = {key: items.text(top, key) for key in ("response_id", "call_id", "target")}
        # a handful of values each: kept whole
        for key in ("stop_reason", "target_kind", "timing", "price_context"):
            self.top_texts[key] = items.kept(top, key, str)
        self.counts = {
            key: items.count(entry, key)
            for key in (
                "estimated_tokens",
                "reported_tokens",
                "omitted_changes",
                "sample_offset_ns",
                "tokens",
                "delta_tokens",
                "chars",
            )
        }
        # A category's item in `categories`, and its last value and bytes: the
        # categories a request did not add to (the system prompt, the tools) repeat.
        self.category_counts: dict[Any, list[Any]] = {}
        self.baseline = items.kept(entry, "baseline", bool)
        self.change_id = items.text(entry, "id")
        self.source_id = items.text(entry, "source_id")
        self.labels = items.table(entry, "label")
        self.source_kinds = items.table(entry, "source_kind")
        self.method = items.kept(entry, "method", str)
        self.kinds: dict[tuple[Any, Any], bytes] = {}  # (category, change kind) → items

    # ------------------------------------------------------------------ slice kinds

    def response(
        self,
        s: Session,
        response: Response,
        snapshot: ContextSnapshot | None,
        previous: ContextSnapshot | None = None,
        window: int | None = None,
        calls: Container[str] = _NO_CALLS,
    ) -> bytes:
        """annotations.response_args, encoded."""
        usage = response.usage
        provider = s.provider or "unknown"
        opening = self.response_openings.get((response.model, provider))
        if opening is None:
            one = self.items.one
            opening = self.response_openings[response.model, provider] = (
                one(_ANNOTATION, "kind", "assistant-message")
                + one(_ANNOTATION, "model", response.model)
                + one(_ANNOTATION, "provider", provider)
            )
        counts, flags, texts = self.top_counts, self.top_flags, self.top_texts
        parts = [
            opening,
            counts["input_tokens"](usage.input_tokens),
            counts["output_tokens"](usage.output_tokens),
            counts["cache_read_tokens"](usage.cache_read_tokens),
            counts["cache_write_tokens"](usage.cache_write_tokens),
        ]
        if response.usage_known:
            parts.append(counts["context_tokens"](usage.prompt_tokens))
        else:  # its place is where context_tokens would be
            parts.append(flags["usage_known"](False))
        if usage.reasoning_tokens:
            parts.append(counts["reasoning_tokens"](usage.reasoning_tokens))
        if response.price_context:
            parts.append(texts["price_context"](response.price_context))
        if response.web_searches:
            parts.append(counts["web_searches"](response.web_searches))
        if window is None:
            window = s.window_tokens
        if window:
            parts.append(counts["context_window_tokens"](window))
        if response.is_error:
            parts.append(flags["is_error"](True))
        if response.stop_reason:
            parts.append(texts["stop_reason"](response.stop_reason))
        parts.append(texts["response_id"](response.id))
        if snapshot is not None:
            parts.append(self.context(snapshot, response.start_ns, previous, calls))
        return b"".join(parts)

    def tool(self, call: ToolCall, previews: bool, targets: bool = True) -> bytes:
        """annotations.tool_args, encoded."""
        one = self.items.one
        kind = self.tool_kind
        if not kind:
            kind = self.tool_kind = one(_ANNOTATION, "kind", "tool-execution")
        texts = self.top_texts
        parts = [kind, texts["call_id"](call.call_id)]
        # The name and is_error, and the keys: a tool's calls mostly repeat them.
        # (its type too: True == 1, and the generic way writes a bool and an int apart)
        shape = (call.name, call.is_error, type(call.is_error))
        middle = self.tool_middles.get(shape)
        if middle is None:
            middle = self.tool_middles[shape] = one(_ANNOTATION, "name", call.name) + one(
                _ANNOTATION, "is_error", call.is_error
            )
        parts += (middle, self.top_counts["bytes"](call.arg_bytes))
        keys = self.tool_keys.get(call.arg_keys)
        if keys is None:  # made after `bytes`: its name comes first
            if len(self.tool_keys) >= MAX_KEPT:
                self.tool_keys.clear()
            keys = self.tool_keys[call.arg_keys] = one(_ANNOTATION, "keys", list(call.arg_keys))
        parts.append(keys)
        if targets and call.target:  # a file or a program: most calls repeat one
            target = self.tool_targets.get(call.target)
            if target is None:
                if len(self.tool_targets) >= MAX_KEPT:
                    self.tool_targets.clear()
                target_kind, value = shown(call.target)
                target = self.tool_targets[call.target] = (
                    texts["target"](value) + texts["target_kind"](target_kind) if value else b""
                )
            parts.append(target)
        if previews and call.args_preview:
            parts.append(one(_ANNOTATION, "args", dict(call.args_preview)))
        parts.append(self.top_counts["result_chars"](call.result_chars))
        if call.timing:
            parts.append(texts["timing"](call.timing))
        if call.incomplete:
            parts.append(one(_ANNOTATION, "incomplete", True))
        if call.child_session:
            parts.append(one(_ANNOTATION, "delegation", True))
            parts.append(one(_ANNOTATION, "child_session", call.child_session))
        if not call.by_model:
            parts.append(one(_ANNOTATION, "started_by", "harness"))
        return b"".join(parts)

    def compaction(
        self,
        compaction: Compaction,
        snapshot: ContextSnapshot | None,
        previous: ContextSnapshot | None = None,
        calls: Container[str] = _NO_CALLS,
        after: AfterCompaction | None = None,
    ) -> bytes:
        """annotations.compaction_args, encoded: its few keys the generic way, its
        `context` (hundreds of removals, at times) directly."""
        args = compaction_args(compaction, None, previous, calls, after)
        opening = self.items.entries(args, _ANNOTATION)
        if snapshot is None:
            return opening
        return opening + self.context(snapshot, compaction.start_ns, previous, calls)

    def context_command(
        self,
        snapshot: ContextSnapshot,
        previous: ContextSnapshot | None = None,
        calls: Container[str] = _NO_CALLS,
    ) -> bytes:
        """annotations.context_command_args, encoded."""
        args = context_command_args(snapshot, previous, calls)
        del args["context"]  # its last key
        opening = self.items.entries(args, _ANNOTATION)
        return opening + self.context(snapshot, snapshot.time_ns, previous, calls)

    # ------------------------------------------------------------------ `context`

    def context(
        self,
        snapshot: ContextSnapshot,
        slice_start: int,
        previous: ContextSnapshot | None,
        calls: Container[str],
    ) -> bytes:
        """The `context` annotation (annotations.context_dict), as a top-level item."""
        head = self.head
        name = head("context")  # before the names inside it, as the generic walk
        key = (snapshot.stage, snapshot.item_stage, snapshot.basis, snapshot.coverage)
        opening = self.context_openings.get(key)
        if opening is None:
            opening = self.context_openings[key] = self._context_opening(snapshot)
        counts = self.counts
        parts = [opening, self.baseline(snapshot.baseline)]  # made in order: names intern
        categories, estimated = self._categories(snapshot)
        parts.append(categories)
        parts.append(counts["estimated_tokens"](estimated))
        if snapshot.reported_tokens is not None:
            parts.append(counts["reported_tokens"](snapshot.reported_tokens))
        # Most requests repeat their previous snapshot's (REPEATED_CONTEXT_KEYS): one test.
        repeated = _repeated(snapshot)
        if previous is None or repeated != _repeated(previous):
            for name_, value in zip(REPEATED_CONTEXT_KEYS, repeated, strict=True):
                if value is not None and (previous is None or getattr(previous, name_) != value):
                    parts.append(self.items.one(_DICT_ENTRY, name_, value))
        parts.append(self._changes(snapshot, calls))
        if snapshot.omitted_changes:
            parts.append(counts["omitted_changes"](snapshot.omitted_changes))
        if snapshot.time_ns > slice_start:
            parts.append(counts["sample_offset_ns"](snapshot.time_ns - slice_start))
        return _framed(_ANNOTATION, name + b"".join(parts))

    def _context_opening(self, snapshot: ContextSnapshot) -> bytes:
        """version, stage, item_stage, basis, coverage: a handful of combinations."""
        one = self.items.one
        opening = one(_DICT_ENTRY, "version", 1) + one(_DICT_ENTRY, "stage", snapshot.stage.value)
        if snapshot.item_stage:
            opening += one(_DICT_ENTRY, "item_stage", snapshot.item_stage)
        return (
            opening
            + one(_DICT_ENTRY, "basis", snapshot.basis.value)
            + one(_DICT_ENTRY, "coverage", snapshot.coverage.value)
        )

    def _categories(self, snapshot: ContextSnapshot) -> tuple[bytes, int]:
        """`categories`, a dict of each present category's tokens (a snapshot names a
        category once: attribution.py makes them from a dict), and their sum (the
        snapshot's estimated_tokens, added here rather than in a second pass)."""
        name = self.head("categories")
        made = self.category_counts
        parts = [name]
        total = 0
        for category, tokens in snapshot.categories:
            kept = made.get(category)
            if kept is None:
                kept = made[category] = [self.items.count(_DICT_ENTRY, category.value), None, b""]
            if kept[1] != tokens or type(tokens) is not int:
                # (an int's: True == 1, but a bool is written as a bool)
                kept[2] = kept[0](tokens)
                kept[1] = tokens if type(tokens) is int else None
            parts.append(kept[2])
            total += tokens
        return _framed(_DICT_ENTRY, b"".join(parts)), total

    def _changes(self, snapshot: ContextSnapshot, calls: Container[str]) -> bytes:
        """`changes`: an array of one dict per change (context_dict)."""
        name = self.head("changes")
        parts = [name]
        counts, kinds = self.counts, self.kinds
        tokens, delta_tokens, chars = counts["tokens"], counts["delta_tokens"], counts["chars"]
        change_id, labels, source_id, source_kinds, method = (
            self.change_id,
            self.labels,
            self.source_id,
            self.source_kinds,
            self.method,
        )
        for change in snapshot.changes:
            made_id = change_id(change.id)  # made first: its name is interned first
            category = change.category
            kind = kinds.get((category, change.change))
            if kind is None:
                one = self.items.one
                kind = kinds[category, change.change] = one(
                    _DICT_ENTRY, "category", category.value
                ) + one(_DICT_ENTRY, "change", change.change.value)
            entry = [made_id, kind, tokens(change.tokens), delta_tokens(change.delta_tokens)]
            if change.chars is not None:
                entry.append(chars(change.chars))
            kind_of_source = change.source_kind
            linked = kind_of_source is _TOOL and change.source_id in calls
            label = change.label
            if label and not (linked and label == TOOL_LABELS.get(category)):
                entry.append(labels[label])
            if change.source_id:
                entry.append(source_id(change.source_id))
            if kind_of_source and not linked:
                entry.append(source_kinds[kind_of_source])
            if change.method:
                entry.append(method(change.method))
            body = b"".join(entry)
            size = len(body)
            parts += (_ARRAY_VALUE, _BYTE[size] if size < 0x80 else varint(size), body)
        return _framed(_DICT_ENTRY, b"".join(parts))
