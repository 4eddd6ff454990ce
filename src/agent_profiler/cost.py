"""What the context cost: a receipt per session (and totals over many), at list prices.

Prices come from `genai-prices` (pydantic/genai-prices, MIT), a table of providers'
list prices shipped inside the package and read offline: it is imported only when a
receipt is asked for (`summary --cost`, `report`, `fleet`), never at start-up. A model the
table does not know is said by name, with its requests; nothing is guessed for it.

Two receipts, both from the usage the journal reports:

- **billed**: each request priced as the provider bills it at list price: uncached input
  at the input price, cache reads at the cache-read price, cache writes at the 5-minute or
  the 1-hour write price (Claude Code records the split in
  `usage.cache_creation.ephemeral_{5m,1h}_input_tokens`), output at the output price.
  Tiered prices (over 200K input) are chosen by the request's whole input.
- **every cache hit** (the article's hypothetical): each request's context is taken to be
  the previous request's, read from the cache, plus what it grew by, written to the cache
  once (5-minute write price); a request smaller than the one before (a compaction, a
  rewritten prefix) writes its whole context anew. Output as billed. Not what was paid.

"Written once" is split by category (and by writer) in the shares of the session's
end-of-session context composition (an estimate: see `estimate.py`), as the article does.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from agent_profiler.model import AnchorKind, Category, Response, Session, frozen
from agent_profiler.records import record

PRICE_PACKAGE = "genai-prices"
_CACHE_FORMAT = 2  # what a cached model's prices hold (2: web searches too)
# Who wrote each category of the context (the article's four writers, and what none of
# them can be said to have written).
WRITER_OF = {
    Category.RESULTS: "tool results",
    Category.ASSISTANT: "the model",
    Category.SUMMARIES: "the model",
    Category.PROMPTS: "the user",
    Category.SYSTEM: "code + disk",
    Category.RULES: "code + disk",
    Category.SKILLS: "code + disk",
    Category.TOOLS: "code + disk",
    Category.ENVIRONMENT: "code + disk",
    Category.OVERHEAD: "code + disk",
    Category.MESSAGES: "unattributed",
    Category.UNATTRIBUTED: "unattributed",
}
WRITERS = ("tool results", "the model", "the user", "code + disk", "unattributed")
# The components a request's usage is split into, and the table's price key of each.
COMPONENTS = ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output")
_PRICE_KEYS = {
    "input": ("input_mtok",),
    "cache_read": ("cache_read_mtok", "input_mtok"),  # no cache price: billed as input
    "cache_write_5m": ("cache_write_5m_mtok", "cache_write_mtok", "input_mtok"),
    "cache_write_1h": ("cache_write_1h_mtok", "cache_write_mtok", "input_mtok"),
    "output": ("output_mtok",),
}
MTOK = 1_000_000
# Server-side web searches, priced per thousand (genai-prices' `web_searches_kcount`).
SEARCHES = "web_searches"
_SEARCH_PRICE = "web_searches_kcount"
_0 = Decimal(0)
_WRITTEN = ("input", "cache_write_5m", "cache_write_1h")  # billed as written once
UNSPLIT = ""  # Receipt.split's line of the sessions without a composition


class PricesUnavailable(Exception):
    """The price table package is not installed."""


@frozen
class RequestTokens:
    """One request's usage split into priced components (all ≥ 0)."""

    model: str
    time_ns: int
    input: int
    cache_read: int
    cache_write_5m: int
    cache_write_1h: int
    output: int
    # The every-cache-hit split of the same request's context.
    hit_written: int
    hit_reread: int
    # False: the journal's output count is a streaming count, often below what was billed
    # (Claude Code's transcripts): the receipt's output is a lower bound.
    output_exact: bool = True
    price_context: str = ""  # the request's price variant (Response.price_context)
    web_searches: int = 0  # server-side searches, billed per search (Response's)
    recorded_usd: float | None = None  # what the harness recorded it cost (Response's)

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_write_5m + self.cache_write_1h


def request_tokens(session: Session) -> list[RequestTokens]:
    """Every metered response of the session, in start order, split into components."""
    rows: list[RequestTokens] = []
    previous = 0
    for response in sorted(session.responses, key=lambda r: (r.start_ns, r.end_ns, r.id)):
        prompt = response.usage.prompt_tokens
        written = prompt - previous if prompt >= previous else prompt
        rows.append(_split_usage(response, written))
        previous = prompt
    return rows


def compaction_tokens(session: Session) -> dict[str, RequestTokens]:
    """Each recorded summarisation request of the session's compactions (compaction id →
    its usage split), billed as any request: the conversation sent to be summarised, the
    summary written. In the every-cache-hit receipt its whole input is re-read from the
    cache (it is the conversation the requests before it wrote)."""
    return {
        c.id: _split_usage(c.request, 0)
        for c in session.compactions
        if c.request is not None
        and (c.request.usage.prompt_tokens or c.request.usage.output_tokens)
    }


def _split_usage(response: Response, written: int) -> RequestTokens:
    usage = response.usage
    prompt = usage.prompt_tokens
    read = min(usage.cache_read_tokens, prompt)
    write = min(usage.cache_write_tokens, prompt - read)
    hour = min(usage.cache_write_1h_tokens, write)
    return RequestTokens(
        model=response.model,
        time_ns=response.start_ns,
        input=prompt - read - write,
        cache_read=read,
        cache_write_5m=write - hour,
        cache_write_1h=hour,
        output=usage.output_tokens,
        hit_written=written,
        hit_reread=prompt - written,
        output_exact=response.output_tokens_reliable,
        price_context=response.price_context,
        web_searches=response.web_searches,
        recorded_usd=response.recorded_usd,
    )


def end_shares(session: Session) -> dict[str, float]:
    """category → share of the session's last request's estimated context (sums to 1)."""
    requests = [s for s in session.snapshots if s.anchor is AnchorKind.RESPONSE and s.categories]
    if not requests:
        return {}
    last = max(requests, key=lambda s: s.time_ns)
    total = sum(tokens for _, tokens in last.categories)
    return {c.value: t / total for c, t in last.categories if t} if total else {}


def by_writer(by_category: Mapping[str, float]) -> dict[str, float]:
    out = dict.fromkeys(WRITERS, 0.0)
    for category, value in by_category.items():
        out[WRITER_OF[Category(category)]] += value
    return {k: round(v, 6) for k, v in out.items() if v}


Price = tuple[Decimal, tuple[tuple[int, Decimal], ...]]  # base, (above input size, price)


@record
class ModelPrices:
    """One model's list prices (USD per million tokens, per component) at one date."""

    model: str  # the table's model id (the journal's name may be a dated variant)
    provider: str
    prices: dict[str, Price]  # component → its price (tiered by the request's input)

    def usd(self, component: str, tokens: int, request_input: int) -> Decimal:
        """The table's rule for a tiered price: the price of the highest tier whose start
        the request's whole input exceeds, else the base."""
        price = self.prices.get(component)
        if price is None or not tokens:
            return _0
        base, tiers = price
        rate = next((p for start, p in reversed(tiers) if request_input > start), base)
        return rate * tokens / MTOK

    def searches_usd(self, searches: int) -> Decimal:
        """`searches` server-side web searches at the table's price per thousand."""
        price = self.prices.get(SEARCHES)
        return price[0] * searches / 1000 if price is not None and searches else _0

    def thresholds(self) -> list[int]:
        """Input sizes above which a tiered price changes (empty when none is tiered)."""
        return sorted({start for _, tiers in self.prices.values() for start, _ in tiers})

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "provider": self.provider,
            "prices": {
                c: [str(base), [[start, str(p)] for start, p in tiers]]
                for c, (base, tiers) in self.prices.items()
            },
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ModelPrices:
        return cls(
            data["model"],
            data["provider"],
            {
                c: (Decimal(base), tuple((int(s), Decimal(p)) for s, p in tiers))
                for c, (base, tiers) in data["prices"].items()
            },
        )


def _read_cache(cache: Path, name: str) -> tuple[dict[str, dict[str, Any] | None], str | None]:
    """The prices a price cache holds, and its table's date, for the table `name`: none
    (looked up afresh, the cache written again) when it is not JSON, not of this table, or
    not shaped as one writes it (a damaged cache is a cache: review-bad finding 22)."""
    try:
        stored = json.loads(cache.read_text())
    except (OSError, ValueError):
        return {}, None
    if not isinstance(stored, dict):
        return {}, None
    prices, date = stored.get("prices"), stored.get("date")
    if stored.get("table") != name or stored.get("format") != _CACHE_FORMAT:
        return {}, None
    if not isinstance(prices, dict) or not (date is None or isinstance(date, str)):
        return {}, None
    for entry in prices.values():
        if entry is None:
            continue
        try:  # each entry as `lookup` reads it
            ModelPrices.from_json(entry)
        except (TypeError, ValueError, KeyError, AttributeError, ArithmeticError):
            return {}, None
    return prices, date


class PriceTable:
    """The bundled genai-prices table, looked up by the journal's model name.

    `cache`: a JSON file keeping the prices looked up (per model and day) and the table's
    date, for this version of the package: a second `fleet` need not import the table
    (≈ 0.5 s with pydantic)."""

    def __init__(self, cache: Path | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            self.version = version(PRICE_PACKAGE)
        except PackageNotFoundError as error:
            raise PricesUnavailable(
                f"the price table ({PRICE_PACKAGE}) is not installed: pip install {PRICE_PACKAGE}"
            ) from error
        self._snapshot: Any = None
        self._cache_path = cache
        self._found: dict[str, dict[str, Any] | None] = {}
        self._date: str | None = None
        self._dirty = False
        # `fleet --split` prices its three sets of figures on three threads: one of them
        # loads the table, and each key is looked up once.
        self._lock = threading.RLock()
        if cache is not None:  # (missing, or not to be looked at: a name too long, none)
            self._found, self._date = _read_cache(cache, self.name)

    @property
    def name(self) -> str:
        return f"{PRICE_PACKAGE} {self.version}"

    def _table(self) -> Any:
        with self._lock:
            if self._snapshot is None:
                from genai_prices import data_snapshot

                self._snapshot = data_snapshot.get_snapshot()
            return self._snapshot

    @property
    def date(self) -> str:
        """The table's date: the newest date its maintainers wrote into it (a price
        change or a `checked` note) that is not in the future. The package states no
        single date; this is the most recent one it vouches for."""
        with self._lock:
            if self._date is None:
                today = datetime.now(UTC).date().isoformat()
                found = [d for d in _dates(self._table().providers) if d <= today]
                self._date = max(found, default="unknown")
                self._dirty = True
            return self._date

    def lookup(
        self, model: str, when_ns: int, provider: str | None = None, context: str = ""
    ) -> ModelPrices | None:
        """The model's prices on the request's day; `context` names a price variant
        (`speed=fast`: Response.price_context), its prices taken where the table has them."""
        day = datetime.fromtimestamp(when_ns / 1e9, UTC).date() if when_ns > 0 else dt.date.today()
        key = f"{model}|{day.isoformat()}" + (f"|{context}" if context else "")
        with self._lock:
            if key not in self._found:
                found = self._find(model, day, context)
                self._found[key] = found.to_json() if found else None
                self._dirty = True
            stored = self._found[key]
        return ModelPrices.from_json(stored) if stored else None

    def save(self) -> None:
        """Write the cache, when there is one and it learnt something (best effort)."""
        if self._cache_path is None or not self._dirty:
            return
        data = {
            "table": self.name,
            "format": _CACHE_FORMAT,
            "date": self.date,
            "prices": self._found,
        }
        from agent_profiler.errors import OutputError
        from agent_profiler.outputs import write_atomically

        payload = json.dumps(data).encode()
        # Whole or not at all, and nothing left beside it by a fleet killed while writing;
        # not fsynced (a cache: one lost in a crash is looked up again).
        with contextlib.suppress(OSError, OutputError):
            write_atomically(self._cache_path, lambda stream: stream.write(payload), durable=False)

    def _find(self, model: str, day: dt.date, context: str = "") -> ModelPrices | None:
        if not model:
            return None
        try:
            found_provider, info = self._table().find_provider_model(model, None, None, None)
        except LookupError:
            return None
        moment = datetime(day.year, day.month, day.day, 12, tzinfo=UTC)
        variant = dict(pair.split("=", 1) for pair in context.split(",")) if context else None
        listed = info.get_prices(moment, variant)
        prices: dict[str, Price] = {}
        for component, keys in _PRICE_KEYS.items():
            price = next((p for k in keys if (p := getattr(listed, k, None)) is not None), None)
            if isinstance(price, Decimal):
                prices[component] = (price, ())
            elif price is not None:  # the table's tiered price
                tiers = tuple((int(t.start), Decimal(t.price)) for t in price.tiers)
                prices[component] = (Decimal(price.base), tiers)
        if "input" not in prices or "output" not in prices:
            return None  # a model priced by other units (per request, per image)
        search = getattr(listed, _SEARCH_PRICE, None)
        if isinstance(search, Decimal):
            prices[SEARCHES] = (search, ())
        return ModelPrices(info.id, found_provider.id, prices)


def _dates(providers: Iterable[Any]) -> Iterable[str]:
    pattern = re.compile(r"\b(20\d\d-[01]\d-[0-3]\d)\b")
    for provider in providers:
        for text in (getattr(provider, "price_comments", None) or "",):
            yield from pattern.findall(text)
        for model in getattr(provider, "models", ()):
            yield from pattern.findall(getattr(model, "price_comments", None) or "")
            prices = model.prices if isinstance(model.prices, list) else []
            for conditional in prices:
                start = getattr(conditional.constraint, "start_date", None)
                if start is not None:
                    yield str(start)[:10]


@record
class Receipt:
    """USD and tokens per line of both receipts, for one session or many."""

    billed_usd: dict[str, Decimal] = field(default_factory=lambda: dict.fromkeys(COMPONENTS, _0))
    billed_tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COMPONENTS, 0))
    hit_usd: dict[str, Decimal] = field(
        default_factory=lambda: {"written_once": _0, "re_read": _0, "output": _0}
    )
    hit_tokens: dict[str, int] = field(
        default_factory=lambda: {"written_once": 0, "re_read": 0, "output": 0}
    )
    # Server-side web searches, as billed in both receipts (no cache changes them).
    searches: int = 0
    searches_usd: Decimal = _0
    searches_unpriced: int = 0  # of them, those of a model the table gives no search price
    # What the harness recorded the requests cost at its own prices (Pi, OpenCode), over
    # the requests whose journal records one, priced by the table or not.
    recorded_usd: Decimal = _0
    recorded_requests: int = 0
    # What the harness recorded whole sessions cost (Session.recorded_total_usd: Claude
    # Code's `-p` runs), over the sessions that record one.
    recorded_totals_usd: Decimal = _0
    recorded_totals: int = 0
    shares: dict[str, float] = field(default_factory=dict)  # end composition, for the split
    unpriced: dict[str, int] = field(default_factory=dict)  # model → requests not priced
    models: dict[str, str] = field(default_factory=dict)  # journal's model → table's id
    # Some priced request's output count is a streaming count: the output is at least this.
    output_lower_bound: bool = False
    streaming_outputs: int = 0  # how many priced requests' output is a streaming count
    priced: int = 0  # requests priced (the token lines are theirs)
    # Responses the journal records no usage for (every field 0): not priced, so the bill
    # lacks them (a backend that reports none, as a Claude Code `-p` run on another model).
    unmetered: int = 0
    # Written-once USD split session by session in each one's own end shares (a fleet):
    # category (or UNSPLIT: a session without a composition) → [billed, every cache hit].
    # None: the totals are split by `shares` (one session).
    split: dict[str, list[Decimal]] | None = None

    def add_request(self, row: RequestTokens, prices: ModelPrices | None) -> None:
        if row.recorded_usd is not None:
            self.recorded_usd += Decimal(repr(row.recorded_usd))
            self.recorded_requests += 1
        if prices is not None and not row.output_exact:
            self.output_lower_bound = True
            self.streaming_outputs += 1
        if prices is None:
            name = row.model or "(no model)"
            self.unpriced[name] = self.unpriced.get(name, 0) + 1
            return
        self.priced += 1
        self.name_model(row.model, row.price_context, prices)
        self.add_counts(prices, row.prompt, _counts(row))

    def name_model(self, model: str, context: str, prices: ModelPrices) -> None:
        """journal's model → the table's, a price variant said on both (`(speed=fast)`)."""
        said = f" ({context})" if context else ""
        self.models.setdefault(f"{model}{said}", f"{prices.provider}/{prices.model}{said}")

    def add_counts(
        self, prices: ModelPrices, request_input: int, counts: Mapping[str, int]
    ) -> tuple[Decimal, Decimal, Decimal]:
        """Priced token counts summed over requests whose input falls in one price tier
        (`request_input`: any input size of that tier). Returns what they add to the
        billed total, and their written-once USD, billed and with every cache hit."""
        added = written = _0
        for component in COMPONENTS:
            tokens = counts[component]
            self.billed_tokens[component] += tokens
            usd = prices.usd(component, tokens, request_input)
            self.billed_usd[component] += usd
            added += usd
            if component in _WRITTEN:
                written += usd
        hit_written = _0
        for line, component in (
            ("written_once", "cache_write_5m"),
            ("re_read", "cache_read"),
            ("output", "output"),
        ):
            tokens = counts[f"hit_{line}"]
            self.hit_tokens[line] += tokens
            usd = prices.usd(component, tokens, request_input)
            self.hit_usd[line] += usd
            if line == "written_once":
                hit_written = usd
        searches = counts.get(SEARCHES, 0)
        self.searches += searches
        searched = prices.searches_usd(searches)
        self.searches_usd += searched
        if searches and SEARCHES not in prices.prices:
            self.searches_unpriced += searches
        return added + searched, written, hit_written

    def split_written(self, shares: Mapping[str, float], billed: Decimal, hit: Decimal) -> None:
        """One session's written-once USD (billed, every cache hit) split in its own end
        shares, added to the fleet's (a session without a composition: UNSPLIT)."""
        split = self.split = self.split if self.split is not None else {}
        for category, share in shares.items() if shares else ((UNSPLIT, 1.0),):
            line = split.setdefault(category, [_0, _0])
            line[0] += billed * Decimal(share)
            line[1] += hit * Decimal(share)

    def _written(self, which: int, total: Decimal) -> tuple[dict[str, float], float]:
        """Written once by category (largest first), and the USD no composition splits."""
        if self.split is None:
            return _split(total, self.shares), 0.0 if self.shares else _usd(total)
        lines = {k: v[which] for k, v in self.split.items() if k != UNSPLIT}
        ranked = sorted(lines.items(), key=lambda kv: -kv[1])
        return {k: _usd(v) for k, v in ranked}, _usd(self.split.get(UNSPLIT, [_0, _0])[which])

    def to_json(self, table: PriceTable) -> dict[str, Any]:
        searches: dict[str, Any] = {"count": self.searches, "usd": _usd(self.searches_usd)}
        if self.searches_unpriced:  # left out of the totals, as an unpriced model is
            searches["unpriced"] = self.searches_unpriced
        billed_written = sum((self.billed_usd[c] for c in _WRITTEN), _0)
        billed_split, billed_unsplit = self._written(0, billed_written)
        hit_split, hit_unsplit = self._written(1, self.hit_usd["written_once"])
        return {
            "prices": {"table": table.name, "date": table.date, "currency": "USD"},
            "models": dict(sorted(self.models.items())),
            "unpriced_models": [
                {"model": m, "requests": n} for m, n in sorted(self.unpriced.items())
            ],
            "complete": not self.unpriced and not self.searches_unpriced and not self.unmetered,
            **({"responses_without_usage": self.unmetered} if self.unmetered else {}),
            "output_lower_bound": self.output_lower_bound,
            "requests_priced": self.priced,
            **({"streaming_outputs": self.streaming_outputs} if self.streaming_outputs else {}),
            "billed": {
                **{
                    c: {"tokens": self.billed_tokens[c], "usd": _usd(self.billed_usd[c])}
                    for c in COMPONENTS
                },
                "written_once_by_category": billed_split,
                "written_once_by_writer": by_writer(billed_split),
                **({"written_once_unsplit_usd": billed_unsplit} if billed_unsplit else {}),
                SEARCHES: searches,
                "total_usd": _usd(sum(self.billed_usd.values(), self.searches_usd)),
            },
            "every_cache_hit": {
                **{
                    line: {"tokens": self.hit_tokens[line], "usd": _usd(self.hit_usd[line])}
                    for line in self.hit_usd
                },
                "written_once_by_category": hit_split,
                "written_once_by_writer": by_writer(hit_split),
                **({"written_once_unsplit_usd": hit_unsplit} if hit_unsplit else {}),
                SEARCHES: searches,
                "total_usd": _usd(sum(self.hit_usd.values(), self.searches_usd)),
            },
            "split_by": "end-of-session context composition (estimated shares)",
            # What the harness recorded at its own prices (None: the journals record none).
            "recorded": {"usd": _usd(self.recorded_usd), "requests": self.recorded_requests}
            if self.recorded_requests
            else None,
            # What the harness recorded whole sessions cost (None: no session records one).
            "recorded_total": (
                {"usd": _usd(self.recorded_totals_usd), "sessions": self.recorded_totals}
                if self.recorded_totals
                else None
            ),
        }


def _counts(row: RequestTokens) -> dict[str, int]:
    return {
        "input": row.input,
        "cache_read": row.cache_read,
        "cache_write_5m": row.cache_write_5m,
        "cache_write_1h": row.cache_write_1h,
        "output": row.output,
        "hit_written_once": row.hit_written,
        "hit_re_read": row.hit_reread,
        "hit_output": row.output,
        SEARCHES: row.web_searches,
    }


def _usd(value: Decimal) -> float:
    return round(float(value), 6)


def _split(total: Decimal, shares: Mapping[str, float]) -> dict[str, float]:
    return {k: _usd(total * Decimal(v)) for k, v in sorted(shares.items(), key=lambda kv: -kv[1])}


def session_receipt(session: Session, table: PriceTable) -> Receipt:
    receipt = Receipt(shares=end_shares(session), unmetered=len(session.unmetered_responses))
    if session.recorded_total_usd is not None:
        receipt.recorded_totals_usd = Decimal(repr(session.recorded_total_usd))
        receipt.recorded_totals = 1
    for row in [*request_tokens(session), *compaction_tokens(session).values()]:
        prices = table.lookup(row.model, row.time_ns, session.provider, row.price_context)
        receipt.add_request(row, prices)
    return receipt


__all__ = [
    "COMPONENTS",
    "SEARCHES",
    "WRITERS",
    "WRITER_OF",
    "ModelPrices",
    "PriceTable",
    "PricesUnavailable",
    "Receipt",
    "RequestTokens",
    "by_writer",
    "compaction_tokens",
    "end_shares",
    "request_tokens",
    "session_receipt",
]
