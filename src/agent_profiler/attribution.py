"""Context attribution shared by every harness: items, estimates, diffs, baselines.

An adapter walks its journal in order and tells a `ContextLog` what entered the
context (`add`), what left it (`remove`, `clear`), and where a composition was
observed (`observe`). Because a request's reported usage is often complete only
after its last record, the log is *replayed* once the journal has been read:
`replay()` turns it into `ContextSnapshot`s whose `changes` are the diff between
consecutive snapshots of the session (once: the log hands its entries over).

Rules that hold for every harness (SPEC §2–3):
- text estimates are characters / 4, rounded up per item, unless the export chose
  another estimator (`estimate.py`; the one shared function every adapter uses);
- the first snapshot and every model change are baselines: their changes are
  the whole item set, marked `baseline`, never counted as growth;
- the head a journal does not record (system prompt, tool schemas, ...) may be inferred as
  `reported − estimated` at the first request with a reported size, as an `unattributed` item
  labelled so, held constant until a compaction (which may drop history from before the journal),
  then measured again and labelled as holding what the harness restored too; nothing is scaled;
- a snapshot keeps at most 64 changes, largest |delta| first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import NewType, TypedDict, Unpack

from agent_profiler import estimate
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Nanoseconds,
    SourceKind,
    Stage,
    Tokens,
    shared,
)
from agent_profiler.records import frozen, hashable_record

MAX_CHANGES = 64
# Read once a request (Observation.request): as globals, not off their enum class (in
# CPython 3.11 that goes through EnumType's __getattr__ hook, ≈ 900 instructions).
_RESPONSE, _TRANSCRIPT_OBSERVED = AnchorKind.RESPONSE, Stage.TRANSCRIPT_OBSERVED
Categories = tuple[tuple[Category, Tokens], ...]
INFERRED_HEAD_ID = "inferred:head"
INFERRED_HEAD_LABEL, INFERRED_HEAD_AFTER_COMPACTION_LABEL = _LABELS = (
    "Inferred head: not in the journal (reported − estimated at the first request, "
    "measured again after a compaction)",
    "Inferred head after a compaction: not in the journal (reported − estimated again after "
    "it): system prompt, tool schemas and restored context",
)


# A journal scrubbed before publication (Entire checkpoints) replaces secret-looking strings
# with a bare `REDACTED`, so it holds less text than the model was sent. Sanitised markers
# that keep the length (`[REDACTED_TEXT len=N …]`) are measured by N and are not counted.
REDACTED_WORD = "REDACTED"
REDACTED_KIND = "redacted-placeholder"
_REDACTED_PLACEHOLDER = re.compile(r"(?<![A-Za-z0-9_\[])REDACTED(?![A-Za-z0-9_])")


def redacted_placeholders(text: str) -> int:
    """How many bare `REDACTED` placeholders `text` holds."""
    return len(_REDACTED_PLACEHOLDER.findall(text)) if REDACTED_WORD in text else 0


class Facts(TypedDict, total=False):
    """An observation's facts beyond its time, anchor and stage (see `Observation`)."""

    model: str | None
    reported_tokens: Tokens | None
    window_tokens: Tokens | None
    effective_window_tokens: Tokens | None
    native_categories: tuple[tuple[Category, Tokens], ...] | None
    basis: Basis | None
    coverage: Coverage | None
    item_stage: str | None


@frozen
class Observation:
    """A point where a composition was observed. Never changed once made: what only the
    end of a journal tells (a request's merged usage, the window, that it was no request)
    is settled in the log (`ContextLog.settle`), which then holds a corrected copy.

    Frozen to the type checker only (`records.frozen`), as the model's classes are: one is
    made per request of every harness, and a runtime-frozen dataclass's `__init__` set its
    15 fields through `object.__setattr__` (2-3% of reading a Pi or Codex journal)."""

    time_ns: Nanoseconds
    anchor: AnchorKind
    anchor_id: str
    stage: Stage
    model: str | None = None
    reported_tokens: Tokens | None = None
    window_tokens: Tokens | None = None
    effective_window_tokens: Tokens | None = None
    compact_threshold_tokens: Tokens | None = None
    dropped: bool = False  # the anchor turned out not to be a request: no snapshot
    # A composition the journal states itself (Muse request lanes, Claude's /context):
    # these become the snapshot's categories, while `changes` still come from the
    # transcript items (`item_stage` says so). No head is inferred for it.
    native_categories: tuple[tuple[Category, Tokens], ...] | None = None
    basis: Basis | None = None
    coverage: Coverage | None = None
    item_stage: str | None = None
    force_baseline: bool = False  # a new measurement (e.g. a native summary) starts here

    def __post_init__(self) -> None:
        # One object per model name, as in the model's responses (model.shared): each
        # record's copy is an object of its own, and every snapshot keeps it. Set only when
        # it is another object (an adapter may hand the shared one already): setting a
        # field through object.__setattr__ costs as much as the rest of __init__.
        model = self.model
        if model is not None and (one := shared(model)) is not model:
            object.__setattr__(self, "model", one)

    # The three points every adapter observes at, named once (anchor and stage go together).

    @classmethod
    def request(
        cls,
        time_ns: Nanoseconds,
        request_id: str,
        *,
        model: str | None = None,
        reported_tokens: Tokens | None = None,
        window_tokens: Tokens | None = None,
        effective_window_tokens: Tokens | None = None,
        compact_threshold_tokens: Tokens | None = None,
        dropped: bool = False,
        native_categories: tuple[tuple[Category, Tokens], ...] | None = None,
        basis: Basis | None = None,
        coverage: Coverage | None = None,
        item_stage: str | None = None,
        force_baseline: bool = False,
    ) -> Observation:
        """At a request's start, from the transcript items before it. (Every other field
        named and passed by position: one is made per request, and `**facts` built a dict
        of them twice.)"""
        return cls(
            time_ns,
            _RESPONSE,
            request_id,
            _TRANSCRIPT_OBSERVED,
            model,
            reported_tokens,
            window_tokens,
            effective_window_tokens,
            compact_threshold_tokens,
            dropped,
            native_categories,
            basis,
            coverage,
            item_stage,
            force_baseline,
        )

    @classmethod
    def after_compaction(
        cls, time_ns: Nanoseconds, compaction_id: str, **facts: Unpack[Facts]
    ) -> Observation:
        """Just after a compaction, from what it left in context."""
        return cls(time_ns, AnchorKind.COMPACTION, compaction_id, Stage.POST_COMPACTION, **facts)

    @classmethod
    def session_end(cls, time_ns: Nanoseconds, **facts: Unpack[Facts]) -> Observation:
        """No request to anchor a snapshot on: what the transcript holds at the end."""
        return cls(time_ns, AnchorKind.SESSION, "", Stage.TRANSCRIPT_OBSERVED, **facts)


# The log's other entries are never changed once made either, but are not `frozen`: a
# frozen dataclass's __init__ sets each field through object.__setattr__, five times the
# cost of a plain one, and an entry is made per item (`unsafe_hash`: hashable as before).


@hashable_record
class Item:
    """One item of context, measured: the log's entry for it entering (or replacing the
    item of its id). An adapter that keeps its items to put them in again (Pi's entries,
    which enter and leave as the branch moves) hands the same object to `enter` each
    time, so a long session holds one per item."""

    id: str
    category: Category
    chars: int
    tokens: Tokens
    label: str
    source_id: str = ""
    source_kind: SourceKind = SourceKind.NONE
    method: str = ""  # an item sized from evidence: how (estimate.EVIDENCE_METHODS)


@hashable_record
class _Remove:
    id: str


@hashable_record
class _Clear:
    keep: frozenset[Category]  # categories that stay (the inferred head always stays)


@hashable_record
class _NativeHead:
    items: tuple[Item, ...]


_Op = Item | _Remove | _Clear | _NativeHead | Observation


# Where an observation (or an item sized from evidence) stands in its log: the handle
# `ContextLog.settle` takes, its index. An int to the interpreter (`observe` returns one per
# request of every harness, most never settled: an object each cost as much as a field).
Logged = NewType("Logged", int)


class Settled(TypedDict, total=False):
    """The facts of an observation that may be settled after it was logged."""

    reported_tokens: Tokens | None
    window_tokens: Tokens | None
    dropped: bool


class ContextLog:
    """What entered and left one session's context, in journal order."""

    def __init__(self) -> None:
        self._ops: list[_Op] = []
        self._replayed = False
        self._present: dict[str, Category] = {}
        # Chosen once per log, so every item of a session is measured the same way.
        self.estimator = estimate.current()
        # Its text measured as chars/4 (no class ratios, text counted): `add` does it inline.
        self.chars4 = self.estimator.chars4
        # Bare `REDACTED` placeholders in the items' text: text that was sent but replaced
        # before the journal was published, which no estimator can see (`unmeasured`).
        self.redacted_placeholders = 0
        # Items sized from evidence, per method (only those with a size), and the ones whose
        # evidence did not come (kind → count, reported as `unmeasured`).
        self._methods: dict[str, int] = {}
        self._unmeasured: dict[str, int] = {}

    def add(
        self,
        item_id: str,
        category: Category,
        size: int | str,
        *,
        label: str = "",
        source_id: str = "",
        source_kind: SourceKind = SourceKind.NONE,
        tokens: Tokens | None = None,
    ) -> None:
        """Add an item, or replace it if the id is already in context. `size` is the
        item's text (preferred: the estimator can look at what it is) or, when only a
        length is known (a redaction marker), its characters."""
        if isinstance(size, str):
            chars = len(size)
            if tokens is not None:
                measured = tokens
            elif self.chars4:  # the estimator's text_tokens, inline: once per item
                measured = (chars + 3) // 4 if chars > 0 else 0
            else:
                measured = self.estimator.text_tokens(size)
            if REDACTED_WORD in size:  # (redacted_placeholders' own test, without its call)
                self.redacted_placeholders += redacted_placeholders(size)
        else:
            chars = size
            measured = self.estimator.chars_tokens(size) if tokens is None else tokens
        # `enter`, inline: once per item of every journal
        self._ops.append(Item(item_id, category, chars, measured, label, source_id, source_kind))
        self._present[item_id] = category

    def add_evidence(
        self,
        item_id: str,
        category: Category,
        tokens: Tokens,
        *,
        method: str,
        label: str,
        source_id: str = "",
        source_kind: SourceKind = SourceKind.NONE,
    ) -> Logged:
        """Add an item whose size is not its text's estimate but a number the journal
        reports for this item (hidden thinking from its response's output tokens, an image
        from its pixels): `method` names how (estimate.EVIDENCE_METHODS). The item's label
        and its `context` change say the method, and `profile (1)` lists the methods used.
        When the number comes later (a response's usage is final only at its last record),
        add it with 0 and settle it (`settle_evidence`) with the handle returned."""
        self.enter(
            Item(
                item_id,
                category,
                0,
                self._evidence(tokens),
                estimate.evidence_label(label, method),
                source_id,
                source_kind,
                method,
            )
        )
        self._methods[method] = self._methods.get(method, 0) + 1
        return Logged(len(self._ops) - 1)

    def settle_evidence(
        self, logged: Logged, tokens: Tokens | None, unmeasured: str = "hidden-content"
    ) -> None:
        """The size of an item added by `add_evidence`, known now; None: the journal did not
        give it after all (a streaming snapshot, not the final usage): the item stays at 0,
        without a method, and is counted under `unmeasured` as `unmeasured` (its kind)."""
        item = self._ops[logged]
        if not isinstance(item, Item) or not item.method:
            raise TypeError(f"log entry {logged} is not an item sized from evidence")
        if tokens is not None:
            self._ops[logged] = Item(
                item.id,
                item.category,
                item.chars,
                self._evidence(tokens),
                item.label,
                item.source_id,
                item.source_kind,
                item.method,
            )
            return
        self._methods[item.method] -= 1
        self._unmeasured[unmeasured] = self._unmeasured.get(unmeasured, 0) + 1
        bare = item.label.removesuffix(estimate.evidence_label("", item.method))
        self._ops[logged] = replace(item, tokens=0, method="", label=f"{bare} (unmeasured)")

    def _evidence(self, tokens: Tokens) -> Tokens:
        # A calibration probe that measures text alone counts evidence as 0 (estimate.py).
        return 0 if self.estimator.evidence == "off" else max(0, tokens)

    @property
    def estimate_methods(self) -> tuple[str, ...]:
        """The methods of the items sized from evidence (for `Session.estimate_methods`)."""
        return tuple(sorted(m for m, n in self._methods.items() if n > 0))

    def enter(self, item: Item) -> None:
        """Add an item measured before (see `Item`), or replace the item of its id."""
        self._ops.append(item)
        self._present[item.id] = item.category

    def remove(self, item_id: str) -> bool:
        """Remove an item; returns False (and records nothing) if it is not in context."""
        if item_id not in self._present:
            return False
        del self._present[item_id]
        self._ops.append(_Remove(item_id))
        return True

    def clear(self, keep: frozenset[Category] = frozenset()) -> int:
        """A compaction: every item leaves the context except those of the `keep`
        categories and the inferred head. Returns how many items left."""
        leaving = [i for i, category in self._present.items() if category not in keep]
        for item_id in leaving:
            del self._present[item_id]
        self._ops.append(_Clear(keep))
        return len(leaving)

    def unmeasured(self, seen: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
        """The session's `unmeasured` (kind → count): what the adapter saw but did not
        estimate, and the redaction placeholders met in the items' text."""
        counts = {k: v for k, v in seen.items() if v}
        for kind, count in self._unmeasured.items():
            counts[kind] = counts.get(kind, 0) + count
        if self.redacted_placeholders:
            counts[REDACTED_KIND] = counts.get(REDACTED_KIND, 0) + self.redacted_placeholders
        return tuple(sorted(counts.items()))

    def __contains__(self, item_id: str) -> bool:
        return item_id in self._present

    def native_head(self, items: list[tuple[str, Category, Tokens, str]]) -> None:
        """The head measured natively (Claude Code's `/context`): these items replace the
        inferred head from here on, and no head is inferred any more."""
        self._ops.append(
            _NativeHead(
                tuple(
                    Item(item_id, category, 0, tokens, label)
                    for item_id, category, tokens, label in items
                )
            )
        )

    def observe(self, observation: Observation) -> Logged:
        self._ops.append(observation)
        return Logged(len(self._ops) - 1)

    def settle(self, logged: Logged, **facts: Unpack[Settled]) -> Observation:
        """Settle what was not known when an observation was logged (its request's usage
        is merged over several records; the window is known at the end; the anchor was
        no request after all): the log's entry becomes a copy with `facts`."""
        observation = self._ops[logged]
        if not isinstance(observation, Observation):
            raise TypeError(f"log entry {logged} is not an observation")
        settled = _settled(observation, facts)
        self._ops[logged] = settled
        return settled

    def observation(self, logged: Logged) -> Observation:
        """The observation as the log holds it now."""
        observation = self._ops[logged]
        if not isinstance(observation, Observation):
            raise TypeError(f"log entry {logged} is not an observation")
        return observation

    def replay(
        self,
        *,
        basis: Basis | None = None,
        coverage: Coverage = Coverage.PARTIAL,
        infer_head: bool = True,
    ) -> list[ContextSnapshot]:
        """`basis` defaults to the estimator's (chars/4 unless the export chose another)."""
        if self._replayed:
            raise RuntimeError("a ContextLog is replayed once: its entries went to the replay")
        self._replayed = True
        ops, self._ops = self._ops, []
        ops.reverse()
        # Imported here: the replay reads this module's entries (attribution_replay.py).
        from agent_profiler.attribution_replay import Replayer

        return Replayer(
            basis or self.estimator.basis, coverage, infer_head and self.estimator.infer_head
        ).run(ops)


def _settled(observation: Observation, facts: Settled) -> Observation:
    """`dataclasses.replace(observation, **facts)` spelled out: once per request of every
    session, and `replace` looks up every field by name (a test pins the two equal)."""
    o = observation
    return Observation(
        o.time_ns,
        o.anchor,
        o.anchor_id,
        o.stage,
        o.model,
        facts.get("reported_tokens", o.reported_tokens),
        facts.get("window_tokens", o.window_tokens),
        o.effective_window_tokens,
        o.compact_threshold_tokens,
        facts.get("dropped", o.dropped),
        o.native_categories,
        o.basis,
        o.coverage,
        o.item_stage,
        o.force_baseline,
    )
