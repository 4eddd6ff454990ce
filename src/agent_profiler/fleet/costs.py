"""The fleet's cost: both receipts over every picked request, priced per (model, day,
price tier), the written-once dollars split in each session's own composition, and the
bill split by harness, model and project (`figures`' `cost`)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agent_profiler.cost import COMPONENTS, SEARCHES, WRITER_OF, PriceTable, Receipt

from . import _ALL, TOP, _rows


def cost_figures(c: Any, table: PriceTable) -> dict[str, Any]:
    """Both receipts over every picked request (subagents' too) and every recorded
    summarisation request of a compaction (its input re-read in the every-cache-hit
    receipt: cost.compaction_tokens), priced per (model, day, price tier): a tiered price
    is chosen by each request's whole input."""
    columns = (
        "input_tokens",
        "cache_read_tokens",
        "cache_write_5m_tokens",
        "cache_write_1h_tokens",
        "output_tokens",
    )
    # Each request with its session's harness and project (for the bill by each: `_by`).
    of = "JOIN picked p USING (group_id, session_id) JOIN sessions s USING (group_id, session_id)"
    session = "s.harness, coalesce(s.project, '') AS project"
    billed = (
        f"(SELECT r.group_id, r.session_id, r.model, "
        f"coalesce(r.price_context, '') AS variant, r.start_ns, "
        f"r.prompt_tokens, {', '.join(f'r.{c}' for c in columns)}, r.hit_written_tokens, "
        f"r.hit_reread_tokens, coalesce(r.web_searches, 0) AS web_searches, {session}, "
        # a streaming output count (NULL: a dataset from before the column, not one)
        "(NOT coalesce(r.output_tokens_reliable, true))::INT AS streaming "
        f"FROM requests r {of} "
        f"UNION ALL SELECT k.group_id, k.session_id, k.model, '', k.start_ns, k.prompt_tokens, "
        f"{', '.join(f'k.{c}' for c in columns)}, 0, k.prompt_tokens, 0, {session}, 0 "
        f"FROM compactions k {of} WHERE k.prompt_tokens IS NOT NULL) AS billed"
    )
    days = _rows(
        c,
        f"SELECT DISTINCT coalesce(model, ''), variant, min(start_ns) FROM {billed} "
        "GROUP BY 1, 2, CAST(start_ns // 86400000000000 AS BIGINT)",
    )
    priced = {(m, v, ns // 86_400_000_000_000): table.lookup(m, ns, context=v) for m, v, ns in days}
    thresholds = sorted({t for p in priced.values() if p for t in p.thresholds()})
    bucket = " + ".join(f"(prompt_tokens > {t})::INT" for t in thresholds) or "0"
    summed = (*columns, "hit_written_tokens", "hit_reread_tokens", "web_searches", "streaming")
    rows = _rows(
        c,
        f"SELECT coalesce(model, ''), variant, CAST(start_ns // 86400000000000 AS BIGINT), "
        f"{bucket}, harness, project, group_id, session_id, count(*), "
        f"{', '.join(f'sum({col})' for col in summed)} FROM {billed} "
        "GROUP BY 1, 2, 3, 4, 5, 6, 7, 8",
    )
    receipt = Receipt(
        unmetered=int(
            _rows(c, f"SELECT coalesce(sum(responses_without_usage), 0) FROM sessions {_ALL}")[0][0]
        )
    )
    # What the harnesses recorded at their own prices, over every request that says
    (recorded, receipt.recorded_requests) = _rows(
        c,
        f"SELECT sum(recorded_usd), count(recorded_usd) FROM (SELECT recorded_usd FROM "
        f"requests {_ALL} UNION ALL SELECT recorded_usd FROM compactions {_ALL})",
    )[0]
    receipt.recorded_usd = Decimal(repr(recorded)) if recorded is not None else Decimal(0)
    (totals, receipt.recorded_totals) = _rows(
        c, f"SELECT sum(recorded_total_usd), count(recorded_total_usd) FROM sessions {_ALL}"
    )[0]
    receipt.recorded_totals_usd = Decimal(repr(totals)) if totals is not None else Decimal(0)
    by: dict[str, dict[str, list[Any]]] = {"harness": {}, "model": {}, "project": {}}
    written: dict[tuple[str, str], list[Decimal]] = {}  # each session's, billed and hit
    for (
        model,
        variant,
        day,
        tier,
        harness,
        project,
        group,
        session,
        count,
        *sums,
    ) in rows:
        prices = priced.get((model, variant, day))
        if prices is None:
            name = model or "(no model)"
            receipt.unpriced[name] = receipt.unpriced.get(name, 0) + count
            continue
        receipt.name_model(model, variant, prices)
        receipt.priced += count
        counts = dict(
            zip(
                (*COMPONENTS, "hit_written_once", "hit_re_read", SEARCHES, "streaming"),
                map(int, sums),
                strict=True,
            )
        )
        # streaming output counts among the priced requests (their output a lower bound)
        receipt.streaming_outputs += counts.pop("streaming")
        counts["hit_output"] = counts["output"]
        usd, billed_once, hit_once = receipt.add_counts(
            prices, thresholds[tier - 1] + 1 if tier else 0, counts
        )
        line = written.setdefault((group, session), [Decimal(0), Decimal(0)])
        line[0] += billed_once
        line[1] += hit_once
        said = f" ({variant})" if variant else ""
        for dimension, key in (
            ("harness", harness),
            ("model", f"{prices.provider}/{prices.model}{said}"),
            ("project", project or "(no project)"),
        ):
            tally = by[dimension].setdefault(key, [0, Decimal(0)])
            tally[0] += count
            tally[1] += usd
    shares = _end_shares(c)
    for key, (billed_once, hit_once) in sorted(written.items()):
        receipt.split_written(shares.get(key, {}), billed_once, hit_once)
    receipt.output_lower_bound = bool(receipt.streaming_outputs)
    data = receipt.to_json(table)
    data["split_by"] = "each session's own end-of-session context composition (estimated)"
    data["by"] = {dimension: _by(tallies) for dimension, tallies in by.items()}
    return data


def _by(tallies: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """The bill as billed split by one dimension (a harness, a model of the price table, a
    project): the priced requests and their USD, largest first, the `TOP` largest and the
    rest as one line; `share` is of the priced total (the unpriced are in none)."""
    total = sum((usd for _, usd in tallies.values()), Decimal(0))
    ranked = sorted(tallies.items(), key=lambda item: (-item[1][1], item[0]))
    # The rest as one line when it is more than one (one left over is named as itself).
    kept, rest = (ranked, []) if len(ranked) <= TOP + 1 else (ranked[:TOP], ranked[TOP:])
    if rest:
        others = f"{len(rest)} others"
        kept.append((others, [sum(t[0] for _, t in rest), sum(t[1] for _, t in rest)]))
    return [
        {
            "name": name,
            "requests": requests,
            "usd": float(round(usd, 6)),
            "share": float(usd / total) if total else 0.0,
        }
        for name, (requests, usd) in kept
    ]


def _end_shares(c: Any) -> dict[tuple[str, str], dict[str, float]]:
    """Each picked session's end-of-session composition: category → share of its last
    request's estimated context (cost.end_shares, from the dataset)."""
    shares: dict[tuple[str, str], dict[str, float]] = {}
    for group, session, category, share in _rows(
        c,
        f"""
        SELECT group_id, session_id, category,
               tokens / sum(tokens) OVER (PARTITION BY group_id, session_id)
        FROM request_categories rc {_ALL} AND rc.is_last AND tokens > 0""",
    ):
        if category in _CATEGORIES:
            shares.setdefault((group, session), {})[category] = float(share)
    return shares


_CATEGORIES = {c.value for c in WRITER_OF}
