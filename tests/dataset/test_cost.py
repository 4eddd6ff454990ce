"""What a session's context cost (cost.py): each receipt's tokens and dollars, computed here
from a known price and a known usage by the module docstring's formulas (not copied from
the output), on a hand-made session and on a real Claude Code journal of the corpus; and
the price cache that spares a second `fleet` the price table's import."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from agent_profiler.cost import (
    ModelPrices,
    PriceTable,
    Receipt,
    request_tokens,
    session_receipt,
)
from agent_profiler.cost_text import render_receipt
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.loader import load
from agent_profiler.model import (
    AnchorKind,
    Basis,
    Category,
    ContextSnapshot,
    Coverage,
    Harness,
    Response,
    Session,
    Stage,
    Usage,
)
from shared_paths import CORPUS, SHARED_REASON, TESTS

MTOK = Decimal(1_000_000)
TIER = 200_000  # above this whole input, the tiered rates
# USD per million tokens: (base, the rate above TIER input tokens)
RATES = {
    "input": (Decimal("3"), Decimal("6")),
    "cache_read": (Decimal("0.30"), Decimal("0.60")),
    "cache_write_5m": (Decimal("3.75"), Decimal("7.50")),
    "cache_write_1h": (Decimal("6"), Decimal("12")),
    "output": (Decimal("15"), Decimal("22.50")),
}
PRICES = ModelPrices(
    "m-table-id",
    "prov",
    {c: (base, ((TIER, tiered),)) for c, (base, tiered) in RATES.items()},
)

# A price variant (genai-prices' `speed=fast` for Claude Opus) at twice each rate.
FAST = ModelPrices(
    "m-table-id",
    "prov",
    {c: (base * 2, ((TIER, tiered * 2),)) for c, (base, tiered) in RATES.items()},
)


class _Table:
    """A price table that knows one model ("m", and its dated name "m-0101")."""

    name = "test-prices 1.0"
    date = "2026-01-31"

    def lookup(
        self, model: str, when_ns: int, provider: str | None = None, context: str = ""
    ) -> ModelPrices | None:
        if model == "m" and context == "speed=fast":
            return FAST
        if model == "m":
            return PRICES
        if model == "m-0101":
            return ModelPrices("m-dated", "prov", PRICES.prices)
        return None


# (model, prompt, cache read, cache write, of it for 1 hour, output), in start order
REQUESTS = [
    ("m", 1_000, 0, 800, 300, 100),
    ("m", 1_500, 1_000, 400, 0, 50),
    ("m-0101", 600, 0, 0, 0, 20),  # smaller than the one before: a compaction
    ("m", 250_600, 600, 0, 0, 10),  # over the tier: every component at the tiered rate
    ("zz-unknown", 900, 0, 0, 0, 5),  # no price: named, left out
    ("", 700, 0, 0, 0, 5),
]


def _session() -> Session:
    responses = tuple(
        Response(
            f"r{i}",
            (i + 1) * 1_000_000_000,
            (i + 1) * 1_000_000_000 + 500,
            model,
            Usage(
                prompt,
                input_tokens=prompt - read - write,
                output_tokens=output,
                cache_read_tokens=read,
                cache_write_tokens=write,
                cache_write_1h_tokens=hour,
            ),
        )
        for i, (model, prompt, read, write, hour, output) in enumerate(REQUESTS)
    )
    # The end-of-session composition (the last request's): results 3/4, prompts 1/4.
    snapshots = tuple(
        ContextSnapshot(
            time_ns=t,
            anchor=AnchorKind.RESPONSE,
            anchor_id=f"r{t}",
            stage=Stage.REQUEST_INPUT,
            basis=Basis.CHARS,
            coverage=Coverage.PARTIAL,
            baseline=False,
            categories=categories,
        )
        for t, categories in (
            (2_000_000_000, ((Category.SYSTEM, 10),)),
            (4_000_000_000, ((Category.RESULTS, 300), (Category.PROMPTS, 100))),
        )
    )
    return Session(
        Harness.CLAUDE_CODE, "s", 0, 10**10, ("j.jsonl",), responses=responses, snapshots=snapshots
    )


def _rate(component: str, request_input: int) -> Decimal:
    base, tiered = RATES[component]
    return tiered if request_input > TIER else base


def _priced() -> list[tuple[int, dict[str, int], dict[str, int]]]:
    """(prompt, billed components, every-cache-hit lines) of each priced request, by the
    docstring: uncached input = prompt − reads − writes; a request re-reads the previous
    one's context and writes what it grew by, or all of it when it shrank."""
    rows = []
    previous = 0
    for model, prompt, read, write, hour, output in REQUESTS:
        written = prompt - previous if prompt >= previous else prompt
        previous = prompt
        if model not in ("m", "m-0101"):
            continue
        billed = {
            "input": prompt - read - write,
            "cache_read": read,
            "cache_write_5m": write - hour,
            "cache_write_1h": hour,
            "output": output,
        }
        hit = {"written_once": written, "re_read": prompt - written, "output": output}
        rows.append((prompt, billed, hit))
    return rows


def test_each_component_is_billed_at_its_own_rate_and_tier() -> None:
    # GIVEN a session of known usage and a table of known list prices
    data = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    billed = data["billed"]
    # THEN each component's tokens and dollars are the rate of the request's tier times
    # its tokens, summed over the priced requests
    total = Decimal(0)
    for component in RATES:
        tokens = sum(b[component] for _, b, _ in _priced())
        usd = sum((_rate(component, p) * b[component] / MTOK for p, b, _ in _priced()), Decimal(0))
        total += usd
        assert billed[component] == {"tokens": tokens, "usd": pytest.approx(float(usd))}
    assert billed["input"]["tokens"] == 200 + 100 + 600 + 250_000
    assert billed["total_usd"] == pytest.approx(float(total))
    # and "written once" (input + cache writes) is split in the end composition's shares
    written = sum(
        (
            _rate(c, p) * b[c] / MTOK
            for p, b, _ in _priced()
            for c in ("input", "cache_write_5m", "cache_write_1h")
        ),
        Decimal(0),
    )
    assert billed["written_once_by_category"] == {
        "results": pytest.approx(float(written) * 0.75),
        "prompts": pytest.approx(float(written) * 0.25),
    }
    assert list(billed["written_once_by_category"]) == ["results", "prompts"]  # largest first
    assert billed["written_once_by_writer"] == {
        "tool results": pytest.approx(float(written) * 0.75),
        "the user": pytest.approx(float(written) * 0.25),
    }


def test_every_cache_hit_writes_growth_once_and_rereads_the_rest() -> None:
    data = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    hit = data["every_cache_hit"]
    # written once at the 5-minute write price, re-read at the cache-read price, output as
    # billed (at the output price: the same dollars as the billed receipt's output line)
    prices = {"written_once": "cache_write_5m", "re_read": "cache_read", "output": "output"}
    total = Decimal(0)
    for line, component in prices.items():
        tokens = sum(h[line] for _, _, h in _priced())
        usd = sum((_rate(component, p) * h[line] / MTOK for p, _, h in _priced()), Decimal(0))
        total += usd
        assert hit[line] == {"tokens": tokens, "usd": pytest.approx(float(usd))}
    assert hit["output"] == data["billed"]["output"]
    # 1,000 then +500, then the compaction writes its 600 anew, then +250,000
    assert hit["written_once"]["tokens"] == 1_000 + 500 + 600 + 250_000
    assert hit["re_read"]["tokens"] == 0 + 1_000 + 0 + 600
    assert hit["total_usd"] == pytest.approx(float(total))
    shares = hit["written_once_by_writer"]
    assert shares == {
        "tool results": pytest.approx(hit["written_once"]["usd"] * 0.75),
        "the user": pytest.approx(hit["written_once"]["usd"] * 0.25),
    }
    assert data["split_by"] == "end-of-session context composition (estimated shares)"


def test_a_compactions_summarisation_request_is_billed() -> None:
    """The request a harness sends to summarise the conversation (OpenCode's summary
    message, Claude Code's compact call) is billed like any other, and was left out of
    every receipt (OpenCode: 98,608 input tokens of 495,139). In the every-cache-hit
    receipt its input is the conversation, re-read from the cache."""
    import dataclasses

    from agent_profiler.model import Compaction

    plain = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    summarise = Response(
        "c1",
        2_500_000_000,
        2_600_000_000,
        "m",
        Usage(
            1_400, input_tokens=100, output_tokens=70, cache_read_tokens=1_200,
            cache_write_tokens=100, cache_write_1h_tokens=40,
        ),
    )  # fmt: skip
    compaction = Compaction("k1", 2_500_000_000, 2_600_000_000, "compaction", request=summarise)
    unrecorded = Compaction("k2", 3_500_000_000, 3_600_000_000, "compaction")
    session = dataclasses.replace(_session(), compactions=(compaction, unrecorded))
    data = session_receipt(session, _Table()).to_json(_Table())  # type: ignore[arg-type]
    added = {"input": 100, "cache_read": 1_200, "cache_write_5m": 60, "cache_write_1h": 40}
    added["output"] = 70
    for component, tokens in added.items():
        line, before = data["billed"][component], plain["billed"][component]
        assert line["tokens"] == before["tokens"] + tokens, component
        usd = float(_rate(component, 1_400) * tokens / MTOK)
        assert line["usd"] == pytest.approx(before["usd"] + usd), component
    hit, hit_before = data["every_cache_hit"], plain["every_cache_hit"]
    assert hit["re_read"]["tokens"] == hit_before["re_read"]["tokens"] + 1_400
    assert hit["written_once"] == hit_before["written_once"]
    assert hit["output"]["tokens"] == hit_before["output"]["tokens"] + 70


def test_a_streaming_output_count_makes_the_output_a_lower_bound() -> None:
    """Claude Code's transcripts record streaming output counts (78 tokens for 40 Opus
    responses): the receipt said nothing, and `complete: true`. It says so now, in JSON and
    in text; an unpriced request's count does not set it (it is not in the totals)."""
    import dataclasses

    exact = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    assert exact["output_lower_bound"] is False
    assert "lower bound" not in render_receipt("s", exact)
    for index, expected in ((0, True), (4, False)):  # r0 is priced, r4 ("zz-unknown") is not
        responses = list(_session().responses)
        responses[index] = dataclasses.replace(responses[index], output_tokens_reliable=False)
        session = dataclasses.replace(_session(), responses=tuple(responses))
        data = session_receipt(session, _Table()).to_json(_Table())  # type: ignore[arg-type]
        assert data["output_lower_bound"] is expected, index
        assert data["billed"] == exact["billed"]  # the same figures, said to be a floor
        said = "model output is a lower bound for 1 request: the journal records streaming "
        assert (said in render_receipt("s", data)) is expected
        assert data.get("streaming_outputs") == (1 if expected else None)


def test_a_model_without_a_price_is_counted_by_name_not_priced() -> None:
    data = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    assert data["unpriced_models"] == [
        {"model": "(no model)", "requests": 1},
        {"model": "zz-unknown", "requests": 1},
    ]
    assert data["complete"] is False
    assert data["models"] == {"m": "prov/m-table-id", "m-0101": "prov/m-dated"}
    assert data["prices"] == {"table": "test-prices 1.0", "date": "2026-01-31", "currency": "USD"}
    # the unpriced requests' tokens are in no line
    assert data["billed"]["output"]["tokens"] == 100 + 50 + 20 + 10


def test_the_text_receipt_shows_each_line_and_both_totals() -> None:
    data = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    lines = render_receipt("s", data).splitlines()
    billed, hit = data["billed"], data["every_cache_hit"]
    assert lines[0] == "s: what the context cost (test-prices 1.0, 2026-01-31)"
    usd = f"${billed['input']['usd']:>10.4f}"
    assert f"    {'uncached input':<24}{250_900:>14,} tok  {usd}" in lines
    totals = [line for line in lines if line.lstrip().startswith("total")]
    assert totals == [
        f"    {'total':<42}  ${billed['total_usd']:>10.4f}",
        f"    {'total':<42}  ${hit['total_usd']:>10.4f}",
    ]
    assert billed["total_usd"] != hit["total_usd"]
    assert (
        "  no price for zz-unknown (1 request): its name matched no model of the table (nothing "
        "is guessed), left out of the totals"
    ) in lines
    assert lines[-1] == "  priced as: m → prov/m-table-id, m-0101 → prov/m-dated"


def test_an_empty_receipt_is_all_zero_and_complete() -> None:
    data = Receipt().to_json(_Table())  # type: ignore[arg-type]
    assert data["complete"] is True
    assert data["billed"]["total_usd"] == 0 and data["every_cache_hit"]["total_usd"] == 0
    assert data["billed"]["written_once_by_writer"] == {}
    assert "priced as" not in render_receipt("s", data)


# --------------------------------------------------------------------------- the table


def test_the_price_cache_spares_the_table_and_keeps_the_day(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("genai_prices")
    cache = tmp_path / "prices-cache.json"
    # GIVEN a table that looked up a model on a day and at the epoch's first nanoseconds
    first = PriceTable(cache)
    when = 1_767_607_200_000_000_000  # 2026-01-05
    found = first.lookup("claude-sonnet-4-5", when)
    assert found is not None
    first.lookup("claude-sonnet-4-5", 1)
    first.save()
    stored = json.loads(cache.read_text())
    # THEN the cache holds each lookup under its day (1 ns after the epoch is 1970-01-01)
    assert set(stored["prices"]) == {"claude-sonnet-4-5|2026-01-05", "claude-sonnet-4-5|1970-01-01"}
    assert stored["table"] == first.name and stored["date"] == first.date

    # WHEN another table of the same version reads it, it never opens the price table
    def no_table(self: Any) -> Any:
        raise AssertionError("the cache should have answered")

    monkeypatch.setattr(PriceTable, "_table", no_table)
    second = PriceTable(cache)
    again = second.lookup("claude-sonnet-4-5", when)
    assert again is not None and again.to_json() == found.to_json()
    assert second.date == first.date
    # and a cache written by another version of the table is not believed
    cache.write_text(json.dumps({**stored, "table": "genai-prices 0.0.0"}))
    with pytest.raises(AssertionError, match="the cache should have answered"):
        PriceTable(cache).lookup("claude-sonnet-4-5", when)


def _corpus_journal() -> Path:
    path = (
        CORPUS
        / "claude-code"
        / "transcripts"
        / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
    )
    if not path.is_file():
        pytest.skip(SHARED_REASON)
    return path


def test_a_real_journal_is_billed_request_by_request_at_the_tables_prices() -> None:
    pytest.importorskip("genai_prices")
    # GIVEN a real Claude Code journal (with a compaction) and the bundled table
    (session, *_) = load([_corpus_journal()], Diagnostics()).sessions
    table = PriceTable()
    data = session_receipt(session, table).to_json(table)
    # THEN its billed total is, request by request, each component's list rate (the tier
    # chosen by the request's whole input) times its tokens
    expected = Decimal(0)
    for response in session.responses:
        prices = table.lookup(response.model, response.start_ns)
        assert prices is not None, response.model
        usage = response.usage
        prompt = usage.prompt_tokens
        hour = usage.cache_write_1h_tokens
        parts = {
            "input": prompt - usage.cache_read_tokens - usage.cache_write_tokens,
            "cache_read": usage.cache_read_tokens,
            "cache_write_5m": usage.cache_write_tokens - hour,
            "cache_write_1h": hour,
            "output": usage.output_tokens,
        }
        for component, tokens in parts.items():
            base, tiers = prices.prices[component]
            rate = next((p for start, p in reversed(tiers) if prompt > start), base)
            expected += rate * tokens / MTOK
    assert session.responses and expected > 0
    assert data["billed"]["total_usd"] == pytest.approx(float(expected), abs=1e-5)
    assert data["complete"]


def test_a_fast_mode_request_is_billed_at_its_variants_rates() -> None:
    """Claude Code's fast mode (`usage.speed: "fast"`) bills Opus at twice the rates; every
    request was priced at the standard ones (the corpus's 2.1.179 session: $4.08 for
    $8.17). A request's price variant is looked up with it and said on the receipt."""
    import dataclasses

    plain = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    responses = list(_session().responses)
    responses[0] = dataclasses.replace(responses[0], price_context="speed=fast")
    session = dataclasses.replace(_session(), responses=tuple(responses))
    data = session_receipt(session, _Table()).to_json(_Table())  # type: ignore[arg-type]
    first = request_tokens(_session())[0]
    for component in ("input", "cache_write_5m", "cache_write_1h", "output"):
        tokens = getattr(first, component)
        extra = float(_rate(component, first.prompt) * tokens / MTOK)  # paid twice now
        assert data["billed"][component]["usd"] == pytest.approx(
            plain["billed"][component]["usd"] + extra
        ), component
    assert data["billed"]["input"]["tokens"] == plain["billed"]["input"]["tokens"]
    assert data["models"]["m (speed=fast)"] == "prov/m-table-id (speed=fast)"
    assert data["models"]["m"] == "prov/m-table-id"
    assert "m (speed=fast) → prov/m-table-id (speed=fast)" in render_receipt("s", data)


CODEX_SEARCHES = (
    TESTS
    / "data"
    / "journals"
    / "codex"
    / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"
)


def test_web_searches_are_billed_per_search_as_the_price_table_says() -> None:
    """Codex's `web_search_call` items (3 in this 0.125 rollout, counted from the raw
    lines) are billed at gpt-5.5's $10 per thousand searches beside the tokens: the total
    is genai-prices' own calc_price of each request's usage with its searches (the receipt
    said `complete: true` without them)."""
    import genai_prices

    with gzip.open(CODEX_SEARCHES, "rt", encoding="utf-8") as journal:
        items = [json.loads(line).get("payload") or {} for line in journal]
    searches = sum(1 for p in items if p.get("type") == "web_search_call")
    assert searches == 3
    (session,) = load([CODEX_SEARCHES], Diagnostics()).sessions
    assert sum(r.web_searches for r in session.responses) == searches
    table = PriceTable()
    data = session_receipt(session, table).to_json(table)
    expected = sum(
        (
            genai_prices.calc_price(
                genai_prices.Usage(
                    input_tokens=r.usage.prompt_tokens,
                    cache_read_tokens=r.usage.cache_read_tokens,
                    output_tokens=r.usage.output_tokens,
                    web_searches=r.web_searches,
                ),
                r.model,
            ).total_price
            for r in session.responses
        ),
        Decimal(0),
    )
    assert data["billed"]["total_usd"] == pytest.approx(float(expected), abs=1e-6)
    per_search = table.lookup("gpt-5.5", session.start_ns)
    assert per_search is not None
    usd = float(per_search.prices["web_searches"][0] * searches / 1000)
    assert data["billed"]["web_searches"] == {"count": 3, "usd": usd} == {"count": 3, "usd": 0.03}
    hit = data["every_cache_hit"]
    assert hit["web_searches"] == data["billed"]["web_searches"]
    lines = sum(hit[line]["usd"] for line in ("written_once", "re_read", "output"))
    assert hit["total_usd"] == pytest.approx(lines + 0.03, abs=2e-6)  # searches as billed
    text = render_receipt("s", data)
    assert "\n  as billed, at list price, from the reported usage:\n" in text
    assert text.count("web searches                         3      $    0.0300") == 2


PI_JOURNAL = TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1.jsonl"
OPENCODE_JOURNAL = (
    TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
)


def test_what_the_harness_recorded_is_said_beside_the_list_price() -> None:
    """Pi and OpenCode record each request's cost at their own prices: the sum of Pi's
    `usage.cost.total` (counted from the raw lines) is the receipt's `recorded`; an
    OpenCode session on a subscription records 0 where the list price is $0.19."""
    lines = [json.loads(line) for line in PI_JOURNAL.read_text(encoding="utf-8").splitlines()]
    costs = [
        m["usage"]["cost"]["total"]
        for line in lines
        if (m := line.get("message") or {}).get("role") == "assistant"
        and isinstance((m.get("usage") or {}).get("cost"), dict)
        and (
            m["usage"].get("input", 0)
            + m["usage"].get("cacheRead", 0)
            + m["usage"].get("cacheWrite", 0)
        )
    ]
    (session,) = load([PI_JOURNAL], Diagnostics()).sessions
    table = PriceTable()
    pi = session_receipt(session, table).to_json(table)
    assert pi["recorded"]["requests"] == len(costs) == len(session.responses)
    assert pi["recorded"]["usd"] == pytest.approx(sum(costs), abs=1e-6)
    said = f"recorded by the harness: ${pi['recorded']['usd']:.4f} for {len(costs)} requests"
    assert said in render_receipt("s", pi)
    (opencode,) = load([OPENCODE_JOURNAL], Diagnostics()).sessions
    free = session_receipt(opencode, table).to_json(table)
    assert free["recorded"] == {"usd": 0.0, "requests": len(opencode.responses)}
    assert free["billed"]["total_usd"] > 0.1
    # A journal that records none says nothing of it.
    assert session_receipt(_session(), _Table()).to_json(_Table())["recorded"] is None  # type: ignore[arg-type]
    assert "recorded by the harness" not in render_receipt("s", _session_receipt_json())


def _session_receipt_json() -> dict[str, Any]:
    return session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.25, 0.25),
        (0, 0.0),
        ("0.25", None),
        (-1, None),
        (True, None),
        (float("nan"), None),
        (None, None),
    ],
)
def test_a_recorded_cost_is_a_finite_number_at_least_zero(
    value: object, expected: float | None
) -> None:
    from agent_profiler.adapters.common import recorded_usd

    assert recorded_usd({"cost": {"total": value}}, "cost", "total") == expected
    assert recorded_usd({"cost": value}, "cost", "total") is None


def test_web_searches_of_a_model_without_a_search_price_make_the_receipt_incomplete() -> None:
    """The fake table gives "m" no search price: its searches are counted, priced at
    nothing, said, and the receipt is not complete (nothing is guessed)."""
    import dataclasses

    responses = list(_session().responses)
    responses[0] = dataclasses.replace(responses[0], web_searches=3)
    session = dataclasses.replace(_session(), responses=tuple(responses))
    data = session_receipt(session, _Table()).to_json(_Table())  # type: ignore[arg-type]
    assert data["billed"]["web_searches"] == {"count": 3, "usd": 0.0, "unpriced": 3}
    assert data["complete"] is False
    assert "no price for 3 web searches: the table gives their model none" in render_receipt(
        "s", data
    )
    plain = _session_receipt_json()
    assert plain["billed"]["web_searches"] == {"count": 0, "usd": 0.0}
    assert "web search" not in render_receipt("s", plain)


def test_a_model_the_table_prices_by_other_units_is_unpriced() -> None:
    """An embedding model (Cloudflare's bge) has an input price and no output price: not
    one this prices (None, named as unpriced), never an error."""
    assert PriceTable().lookup("@cf/baai/bge-base-en-v1.5", 1_764_800_000 * 10**9) is None


def test_a_session_without_a_composition_is_said_apart_in_the_split() -> None:
    """The fleet splits each session's written-once dollars in its own end shares; a
    session with none (no request left a composition) is not put in any category: its
    dollars are one line of their own, so the lines still add up to the total."""
    from agent_profiler.cost_text import render_receipt

    receipt = Receipt()
    counts = dict.fromkeys(("input", "cache_read", "cache_write_5m", "cache_write_1h", "output"), 0)
    counts |= {"input": 1_000_000, "hit_written_once": 2_000_000, "hit_re_read": 0}
    counts["hit_output"] = 0
    usd, billed_once, hit_once = receipt.add_counts(PRICES, 0, counts)
    assert (usd, billed_once, hit_once) == (Decimal(3), Decimal(3), Decimal("7.5"))
    receipt.split_written({"results": 0.75, "prompts": 0.25}, billed_once, hit_once)
    receipt.split_written({}, Decimal(1), Decimal(2))
    data = receipt.to_json(_Table())  # type: ignore[arg-type]
    assert data["billed"]["written_once_by_category"] == {"results": 2.25, "prompts": 0.75}
    assert data["billed"]["written_once_unsplit_usd"] == 1.0
    hit = data["every_cache_hit"]
    assert hit["written_once_by_writer"] == {"tool results": 5.625, "the user": 1.875}
    assert hit["written_once_unsplit_usd"] == 2.0
    (line,) = [x for x in render_receipt("s", data).splitlines() if "no composition" in x]
    words = "written once, no composition to split it $ 2.0000"
    assert line.split() == words.split()


def test_the_token_lines_say_they_are_the_priced_requests() -> None:
    """The token lines sum the priced requests only: a receipt with unpriced requests says
    how many of each, and its web searches line counts the priced ones (the others are a
    note: "11 searches, $0.04" priced 4)."""
    data = session_receipt(_session(), _Table()).to_json(_Table())  # type: ignore[arg-type]
    unpriced = sum(e["requests"] for e in data["unpriced_models"])
    assert unpriced and data["requests_priced"] == len(_session().responses) - unpriced
    text = render_receipt("s", data).splitlines()
    assert text[1] == (
        f"  as billed, at list price, from the reported usage of the {data['requests_priced']} "
        f"requests priced ({unpriced} not: below):"
    )
    searches = {"count": 11, "usd": 0.04, "unpriced": 7}
    with_searches = {**data, "billed": {**data["billed"], "web_searches": searches}}
    lines = [x for x in render_receipt("s", with_searches).splitlines() if "web searches" in x]
    assert lines[0].split() == ["web", "searches", "4", "$", "0.0400"]
    assert "no price for 7 web searches" in lines[-1]
