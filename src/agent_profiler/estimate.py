"""The one place where a journal item's text becomes an estimated token count.

Every adapter measures through `text_tokens` / `chars_tokens` (via
`ContextLog.add`), so one choice of estimator holds for a whole export:

- `chars/4` (the contract's default, SPEC §3): characters / 4, rounded up per item;
- `chars/calibrated-v3` (opt-in, our extension of the contract's basis list): the
  item's characters are split into content classes (prose, source code, JSON,
  CJK, other scripts, base64-like runs) and each class is divided by its own
  characters-per-token ratio from one fixed table shipped in the package
  (`calibration.json`, written by `scripts/calibrate.py` from the corpus's own
  request deltas), plus a per-item framing cost that belongs to the *harness* (how
  it serialises a message, a tool call, a result into the request: role markers,
  ids, JSON wrappers), then rounded up per item. The class ratios are those of the
  *tokenizer family* of the journal's model where the table has ratios of its own for
  it (Claude Opus 4.7 and later), the shared ones otherwise. Never scaled per session
  or request. (`-v2` was the same with one set of class ratios for every model, `-v1`
  also with one per-item cost shared by every harness.)

The estimator is chosen once per load (`use_estimator`), not per adapter, because a
basis must be consistent within a session for snapshot diffs to stay valid; the loader
specialises it to each journal group's harness (`Estimator.for_harness`) and to the
tokenizer family of the model that served most of the group's requests
(`Estimator.for_models`: the group is read once more when that changes its ratios), so
no adapter needs to know which table it is measured with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import field, replace
from enum import StrEnum
from functools import cache
from typing import Literal

import orjson

from agent_profiler.model import Basis, Session, Tokens, frozen

CALIBRATION_FILE = "calibration.json"


class TextClass(StrEnum):
    """Content classes with visibly different characters-per-token ratios."""

    PROSE = "prose"  # natural-language ASCII lines
    CODE = "code"  # ASCII lines dense in symbols, or indented
    JSON = "json"  # structured lines: `"key": value`, JSON documents
    CJK = "cjk"  # Han, kana, Hangul, full-width forms: about one token per character
    OTHER = "other"  # other non-ASCII characters (accents, Cyrillic, emoji, box drawing)
    OPAQUE = "opaque"  # base64-like runs and long hashes: few characters per token
    UNKNOWN = "unknown"  # only a length is known (a redaction marker, a byte count)


# A run this long of the base64/hex alphabet with both letters and digits is data, not words.
_OPAQUE = re.compile(r"[A-Za-z0-9+/_\-]{40,}={0,2}")
_HAS_DIGIT = re.compile(r"\d")
# Compiled on first use: its ranges make re build a 64K-entry character map, about 14 ms
# (a sixth of the command's start-up) that an export in the default chars/4 mode never needs.
_CJK_RANGES = "[\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef\U00020000-\U0002fa1f]"


@cache
def _cjk() -> re.Pattern[str]:
    return re.compile(_CJK_RANGES)


_NON_ASCII = re.compile(r"[^\x00-\x7f]")
# A run of one repeated non-ASCII character (a rule line: ─────, ═════): tokenizers merge
# such runs as they merge `-----`, so they are counted with their line, not as `other`
# (a Codex 0.141 session had 14,940 `─` and was over-estimated by 6,500 tokens).
_REPEATED_NON_ASCII = re.compile(r"([^\x00-\x7f])\1{3,}")
# ASCII punctuation only: accented or Cyrillic letters are letters, not symbols.
_SYMBOL = re.compile(r"[!-/:-@\[-`{-~]")
_NUMBERED = re.compile(r"\s*\d{1,6}(?:\t|→)")
_JSON_KEY = re.compile(r'"[^"\n]{1,80}"\s*:')
# Prose has a symbol now and then (punctuation); code and markup have many more.
_CODE_SYMBOL_SHARE = 0.08


def classify(text: str) -> dict[TextClass, int]:
    """Characters of `text` per content class (they add up to `len(text)`).

    Lines are the unit: a line is prose, code or JSON as a whole, because that is
    how mixed tool output (a prose sentence, then a file listing) comes."""
    counts: dict[TextClass, int] = {}
    opaque = 0
    if len(text) >= 40:

        def take(match: re.Match[str]) -> str:
            nonlocal opaque
            run = match.group()
            if _HAS_DIGIT.search(run) and not run.isdigit():
                opaque += len(run)
                return ""
            return run  # a long word or identifier without digits stays text

        text = _OPAQUE.sub(take, text)
    if opaque:
        counts[TextClass.OPAQUE] = opaque
    if not text.isascii():
        text = _REPEATED_NON_ASCII.sub(lambda m: "-" * len(m.group()), text)
    if not text.isascii():
        cjk = len(_cjk().findall(text))
        other = len(_NON_ASCII.findall(text)) - cjk
        if cjk:
            counts[TextClass.CJK] = cjk
        if other:
            counts[TextClass.OTHER] = other
    lines = text.split("\n")
    last = len(lines) - 1
    for index, line in enumerate(lines):
        size = len(line) + (index < last)  # with its newline
        if not line.isascii():
            size -= len(_NON_ASCII.findall(line))
        kind = _line_class(line)
        counts[kind] = counts.get(kind, 0) + size
    return {k: v for k, v in counts.items() if v > 0}


def _line_class(line: str) -> TextClass:
    stripped = line.strip()
    if not stripped:
        return TextClass.PROSE
    if _NUMBERED.match(line):
        # A file read with line numbers (`cat -n`, Claude Code's Read): a listing line,
        # source code even where it holds a comment in words.
        return TextClass.CODE
    if _JSON_KEY.search(stripped) or (stripped[0] in "{[" and '"' in stripped):
        return TextClass.JSON
    symbols = len(_SYMBOL.findall(stripped))
    if line.startswith(("  ", "\t")) or symbols > _CODE_SYMBOL_SHARE * len(stripped):
        return TextClass.CODE
    return TextClass.PROSE


@frozen
class Estimator:
    """How text becomes tokens. `ratios` (characters per token, per class) is None for
    the contract's flat characters / 4."""

    basis: Basis
    ratios: Mapping[TextClass, float] | None = None
    # Tokens every non-empty item costs beyond its text: the wrapper a request puts
    # around a message, a tool call or a result (role markers, ids, block framing).
    per_item: float = 0.0
    # Calibration probes measure the journal's items alone, without the inferred head.
    infer_head: bool = True
    # The per-item cost of each harness whose framing the table knows (harness → tokens
    # per item); a harness not named here costs `per_item`, the all-harness value.
    per_item_by_harness: Mapping[str, float] = field(default_factory=dict)
    # Items sized from evidence (ContextLog.add_evidence) for calibration probes: "on" (as
    # exported), "off" (they count 0: a probe measures text only), "only" (text counts 0;
    # the evidence is sized as with chars/4: the fixed offset the table must not explain),
    # "visible" (text counts 0; hidden content is the output *plus* the probe's count of
    # the visible output: `visible_tokens`, for `calibrate.py --evidence-as-exported`).
    evidence: Literal["on", "off", "only", "visible"] = "on"
    # Class ratios of each tokenizer family the table has its own for (`tokenizer_family`);
    # a family not named here is measured with `ratios`, the shared ones.
    ratios_by_family: Mapping[str, Mapping[TextClass, float]] = field(default_factory=dict)
    # The tokenizer family whose ratios are in use (`for_models`); None: the shared ratios.
    family: str | None = None

    @property
    def chars4(self) -> bool:
        """Text is measured as its characters / 4 (no class ratios, text counted), in
        `text_tokens` and `visible_tokens` alike."""
        return self.ratios is None and self.evidence in ("on", "off")

    def visible_tokens(self, text: str) -> Tokens:
        """The estimate of a response's visible output that hidden content is measured
        against (output_tokens − this): chars/4 when only the evidence is measured; minus
        the probe's count of the text (0 without ratios) in a "visible" probe, so that the
        hidden item grows by exactly the visible text the probe counts."""
        if self.evidence == "visible":
            return -self._count(text) if self.ratios is not None and text else 0
        return chars4(len(text)) if self.evidence == "only" else self.text_tokens(text)

    def _count(self, text: str) -> Tokens:
        ratios = self.ratios or {}
        return _ceil(sum(n / ratios[c] for c, n in classify(text).items()) + self.per_item)

    def for_harness(self, harness: str) -> Estimator:
        """This estimator as it measures one harness's journal: its per-item cost is
        that harness's (the loader calls this once per journal group)."""
        cost = self.per_item_by_harness.get(harness)
        return self if cost is None or cost == self.per_item else replace(self, per_item=cost)

    def for_models(self, models: Iterable[str]) -> Estimator:
        """This estimator as it measures a journal whose requests name `models` (one entry
        per request): the class ratios of the tokenizer family that served most of them,
        when the table has ratios of its own for it (the loader calls this once per journal
        group, after a first reading has told which models it names)."""
        if not self.ratios_by_family:
            return self
        chosen = majority_family(models)
        own = self.ratios_by_family.get(chosen) if chosen else None
        if own is None:
            return self if self.family is None else replace(self, ratios=self.shared, family=None)
        return self if self.family == chosen else replace(self, ratios=own, family=chosen)

    @property
    def shared(self) -> Mapping[TextClass, float] | None:
        """The shared class ratios (those of no family in particular)."""
        return self.ratios_by_family.get(SHARED_FAMILY, self.ratios) if self.family else self.ratios

    def text_tokens(self, text: str) -> Tokens:
        if self.evidence in ("only", "visible"):
            return 0
        if self.ratios is None:
            chars = len(text)  # `chars4`, inline: once per item of every journal
            return (chars + 3) // 4 if chars > 0 else 0
        if not text:
            return 0
        return self._count(text)

    def chars_tokens(self, chars: int) -> Tokens:
        """Tokens of `chars` characters whose text is not known (unknown class)."""
        if self.evidence in ("only", "visible"):
            return 0
        if self.ratios is None:
            return (chars + 3) // 4 if chars > 0 else 0  # `chars4`, inline: once per item
        if chars <= 0:
            return 0
        return _ceil(chars / self.ratios[TextClass.UNKNOWN] + self.per_item)


def chars4(chars: int) -> Tokens:
    """Characters / 4, rounded up (an estimate, not a tokenizer count)."""
    return (chars + 3) // 4 if chars > 0 else 0


def _ceil(value: float) -> Tokens:
    # A float sum of exact quarters can land a hair above an integer: do not round it up.
    return max(0, math.ceil(value - 1e-9))


CHARS4 = Estimator(Basis.CHARS)

# Tokenizer families (`tokenizer_family`). Anthropic's Claude Opus 4.7 came with an updated
# tokenizer ("1.0–1.35× more tokens depending on content", as its release is quoted), which the
# later models keep; the corpus's Claude Code 2.1.16x journals (claude-opus-4-8) read dense
# code at ≈ 2.1 characters per token, where the other harnesses' models read ≈ 3.
CLAUDE_47 = "claude-4.7+"
CLAUDE = "claude"
OPENAI = "openai"
GEMINI = "gemini"
OTHER_FAMILY = "other"
# The key of the shared ratios inside `Estimator.ratios_by_family` while a family's are in use.
SHARED_FAMILY = ""
FAMILY_NAMES = {
    CLAUDE_47: "Claude Opus 4.7 and later models (claude-opus-4-7, -4-8, claude-*-5, …): "
    "Anthropic's updated tokenizer",
    CLAUDE: "earlier Claude models (Claude 3 to Opus 4.6, Sonnet 4.6, Haiku 4.5)",
    OPENAI: "OpenAI models (gpt-*, o*, codex)",
    GEMINI: "Google Gemini models",
    OTHER_FAMILY: "any other model, or none named",
}
_CLAUDE_VERSION = re.compile(
    r"claude-(?:(\d+)(?:[-.](\d))?-[a-z]+|[a-z]+-(\d+)(?:[-.](\d{1,2})(?!\d))?)"
)


def tokenizer_family(model: str | None) -> str:
    """The tokenizer family of a model id as a journal names it (`claude-opus-4-8`,
    `anthropic/claude-sonnet-4.6`, `converse/jp.anthropic.claude-haiku-4-5-…`, `gpt-5.5`)."""
    name = (model or "").lower()
    if "claude" in name:
        match = _CLAUDE_VERSION.search(name)
        if match is None:
            return CLAUDE
        major = match.group(1) or match.group(3)
        minor = match.group(2) or match.group(4) or "0"
        return CLAUDE_47 if (int(major), int(minor)) >= (4, 7) else CLAUDE
    last = name.rsplit("/", 1)[-1]
    if last.startswith(("gpt", "codex", "chatgpt")) or re.match(r"o\d", last):
        return OPENAI
    if "gemini" in last:
        return GEMINI
    return OTHER_FAMILY


# The session fact (profile (1): `estimate_tokenizer_family`) that says whose class ratios
# measured a session read with a table that has ratios per tokenizer family.
FAMILY_FACT = "estimate_tokenizer_family"


def family_fact(estimator: Estimator, models: Iterable[str]) -> str:
    """What `FAMILY_FACT` says of a journal measured by `estimator` whose requests name
    `models`: its family, and whether the table's ratios for it are its own or the shared."""
    family = majority_family(models) or OTHER_FAMILY
    if estimator.family is None:
        return f"{family}: {FAMILY_NAMES[family]} (the shared class ratios)"
    # (for_models sets only a family tokenizer_family names: each is in FAMILY_NAMES)
    used = f"{estimator.family}: {FAMILY_NAMES[estimator.family]}"
    if estimator.family == family:
        return f"{used} (its own class ratios)"
    # A subagent on another model than most of its journal group's requests: one family
    # measures the group (the loader's choice), and this says so.
    return (
        f"{used} (its own class ratios: the family of most of the journal group's "
        f"requests; this session's is {family})"
    )


def with_family_fact(session: Session, estimator: Estimator) -> Session:
    """`session` with `FAMILY_FACT` (the loader adds it to every session it measured with
    a table that has ratios per family)."""
    if session.snapshots and all(x.basis is not Basis.CALIBRATED for x in session.snapshots):
        return session
    fact = family_fact(estimator, (r.model for r in session.responses))
    return replace(session, facts=(*session.facts, (FAMILY_FACT, fact)))


def majority_family(models: Iterable[str]) -> str | None:
    """The tokenizer family of most of `models` (one per request); None without any."""
    counts: dict[str, int] = {}
    for model in models:
        family = tokenizer_family(model)
        counts[family] = counts.get(family, 0) + 1
    return max(counts, key=lambda f: (counts[f], f)) if counts else None


def _raw_table() -> dict[str, object]:
    # Imported here: importlib.resources is ≈ 9 ms of start-up, and only --estimate
    # calibrated reads the table.
    from importlib import resources

    raw = orjson.loads(resources.files("agent_profiler").joinpath(CALIBRATION_FILE).read_bytes())
    assert isinstance(raw, dict)
    return raw


def _ratios(raw: object) -> dict[TextClass, float]:
    assert isinstance(raw, dict)
    return {TextClass(k): float(v) for k, v in raw.items()}


def load_calibration() -> tuple[dict[TextClass, float], float, dict[str, float]]:
    """The shipped table: characters per token per class, tokens per item (the value for
    a harness the table does not name), and tokens per item per harness."""
    raw = _raw_table()
    # scripts/calibrate.py writes all these keys.
    by_harness = raw["per_item_tokens_by_harness"]
    assert isinstance(by_harness, dict)
    per_item = raw["per_item_tokens"]
    assert isinstance(per_item, int | float)
    costs = {str(k): float(v) for k, v in by_harness.items()}
    return _ratios(raw["chars_per_token"]), float(per_item), costs


def load_family_ratios() -> dict[str, dict[TextClass, float]]:
    """The shipped table's class ratios of each tokenizer family it has its own for."""
    by_family = _raw_table()["chars_per_token_by_family"]
    assert isinstance(by_family, dict)
    return {str(family): _ratios(ratios) for family, ratios in by_family.items()}


def calibrated(
    ratios: Mapping[TextClass, float] | None = None,
    per_item: float | None = None,
    per_item_by_harness: Mapping[str, float] | None = None,
    ratios_by_family: Mapping[str, Mapping[TextClass, float]] | None = None,
) -> Estimator:
    """The calibrated estimator: the shipped table, or (for calibration) a given one
    (without `ratios_by_family`, one with the shared ratios for every model)."""
    shipped, shipped_per_item, shipped_by_harness = (
        load_calibration() if ratios is None else ({}, 0.0, {})
    )
    table = dict(ratios) if ratios is not None else shipped
    families = dict(
        ratios_by_family
        if ratios_by_family is not None
        else (load_family_ratios() if ratios is None else {})
    )
    for name, checked in [("", table), *((f" ({f})", r) for f, r in families.items())]:
        missing = [c for c in TextClass if c not in checked]
        if missing:
            raise ValueError(f"calibration table{name} lacks {', '.join(missing)}")
    if families:
        families[SHARED_FAMILY] = table
    return Estimator(
        Basis.CALIBRATED,
        table,
        per_item if per_item is not None else shipped_per_item,
        per_item_by_harness=dict(
            per_item_by_harness if per_item_by_harness is not None else shipped_by_harness
        ),
        ratios_by_family=families,
    )


class EstimateChoice(StrEnum):
    """What `--estimate` accepts."""

    CHARS4 = "chars/4"
    CALIBRATED = "calibrated"


def named(name: str) -> Estimator:
    """The estimator a command line names (`--estimate`)."""
    choice = EstimateChoice(name)
    return CHARS4 if choice is EstimateChoice.CHARS4 else calibrated()


_current: ContextVar[Estimator] = ContextVar("estimator", default=CHARS4)


def current() -> Estimator:
    return _current.get()


@contextmanager
def use_estimator(estimator: Estimator) -> Iterator[Estimator]:
    """Every journal read inside this block is measured with `estimator`."""
    token = _current.set(estimator)
    try:
        yield estimator
    finally:
        _current.reset(token)


def text_tokens(text: str) -> Tokens:
    """The estimated tokens of one journal item's text, with the current estimator."""
    return _current.get().text_tokens(text)


def chars_tokens(chars: int) -> Tokens:
    return _current.get().chars_tokens(chars)


def tool_call_text(name: str, arguments: object) -> str:
    """What a tool call puts in the context, for sizing: its name and its arguments as
    compact JSON (a string argument as it is). Characters, not UTF-8 bytes: the
    contract's unit is characters, and a byte count would make the same call weigh
    more in one harness than in another."""
    if isinstance(arguments, str):
        return name + arguments
    if arguments is None:
        return name
    try:
        return name + orjson.dumps(arguments).decode()
    except TypeError:  # nesting beyond orjson's limit (as `common.json_text` does)
        return name + repr(arguments)


# Items whose size is not estimated from their text but comes from a number the journal
# reports for that item (its "evidence"): the method's name → what it means. Each such item
# names its method in its label and in its `context` change (`method`), and `profile (1)`
# lists the methods a session used (`estimate_methods`). Not scaling: the number is the
# item's own (ContextLog.add_evidence).
OUTPUT_MINUS_VISIBLE = "output-tokens-minus-visible"
IMAGE_PIXELS = "image-pixels"
REASONING_OUTPUT_TOKENS = "reasoning-output-tokens"
EVIDENCE_METHODS = {
    REASONING_OUTPUT_TOKENS: (
        "encrypted reasoning (Codex): the request's reported reasoning_output_tokens, in the "
        "context from the next request until the next user prompt"
    ),
    OUTPUT_MINUS_VISIBLE: (
        "hidden thinking (signature only or redacted): the response's final reported "
        "output_tokens minus the estimate of its visible output (text, tool-call arguments)"
    ),
    IMAGE_PIXELS: (
        "an image: width × height / 750 after resizing to the provider's long-edge and "
        "megapixel limits (Anthropic's documented formula), from the pixel size the journal holds"
    ),
}


@cache
def evidence_label(label: str, method: str) -> str:
    """The label of an item sized from evidence: it names its method. One string for
    each (a handful): a long session has one such item per request, and a label made
    for each was a string of its own to hold and to hand to a reading helper (11,008 of
    them pickled whole on the 50 MB Codex rollout, where a shared one is sent once a
    batch)."""
    return f"{label} (estimate: {method})"


# What the trace says about its estimates, per basis (the profile slice, counters).
CHARS4_NOTE = "estimate: characters / 4 per journal item, rounded up; not a tokenizer count"
CALIBRATED_NOTE = (
    "estimate: characters per content class (prose, code, JSON, CJK, other scripts, "
    "base64-like runs) ÷ that class's calibrated characters per token, plus the harness's "
    "per-item framing cost (chars/calibrated-v3), rounded up per journal item; not a "
    "tokenizer count"
)
CHARS4_ESTIMATION = (
    "context categories: characters / 4 per journal item, rounded up (not tokenizer "
    "counts); the head the journal lacks is one inferred item (reported − estimated at "
    "the first request, measured again after a compaction); reported sizes are never "
    "scaled"
)
CALIBRATED_ESTIMATION = (
    "context categories: basis chars/calibrated-v3, characters per content class ÷ a fixed "
    "per-class characters-per-token table shipped with agent-profiler (per tokenizer family "
    "of the model where it has one), plus a fixed per-item "
    "framing cost per harness (fitted on public sessions' request deltas; not tokenizer "
    "counts), rounded up per journal item; the head "
    "the journal lacks is one inferred item measured with the same estimator (reported − "
    "estimated at the first request, measured again after a compaction); never scaled per "
    "session or request"
)


def calibrated_estimation(family: str | None) -> str:
    """CALIBRATED_ESTIMATION, naming whose class ratios measured the session (its
    `FAMILY_FACT`) where the table has ratios per tokenizer family."""
    if not family:
        return CALIBRATED_ESTIMATION
    return CALIBRATED_ESTIMATION + f"; class ratios of tokenizer family {family}"


def is_calibrated(bases: Iterable[Basis]) -> bool:
    return Basis.CALIBRATED in set(bases)
