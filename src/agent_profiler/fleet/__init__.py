"""`fleet DIR`: the article's figures over the sessions of a dataset (`collect`), by DuckDB.

Definitions (docs/dataset.md says them too):
- sessions are main sessions; subagents (with a subagent whose parent was not collected)
  are counted apart and enter only the tool results, the recurring sources and the cost
  (they are requests someone paid for);
- who wrote the end-of-session context: the mean, over sessions with at least
  `MIN_TURNS` requests, of each category's share of the last request's estimated context;
  writers group the categories (cost.WRITER_OF);
- context by turn: the median and p90 of the reported input of every session's n-th
  request, and how many sessions had an n-th request (compaction resets included);
- tool results by tool: characters as the journal holds them, tokens as estimated when
  each result entered the context;
- recurring sources: MCP servers (tool names `mcp__<server>__…`), skills and rule files
  (context items), tools; weighed by tokens × requests they stayed resident for;
- cost: cost.py's two receipts over every request, priced by model, day and price tier.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

from agent_profiler.cost import PriceTable, by_writer
from agent_profiler.dataset import SCHEMA, TABLES
from agent_profiler.dataset.integrity import FLEET_HINT, check, load_manifest
from agent_profiler.dataset.parquet import literal, readable
from agent_profiler.errors import DatasetError, UsageError
from agent_profiler.inputs import unopenable
from agent_profiler.model import Category, frozen

MIN_TURNS = 5
TURNS = (1, 2, 5, 10, 20, 50, 100, 200, 500)
TOP = 15
KEYS = (
    "sessions",
    "requests",
    "who_wrote",
    "context_by_turn",
    "peak_fill",
    "compactions",
    "tool_results",
    "sources",
    "cost",
)


@frozen
class Filters:
    """Which sessions a fleet is of: a harness, a project, a main model, and a window of
    start times (`since` and `before`, each a date or time as written: options.moment)."""

    harness: str | None = None
    project: str | None = None
    model: str | None = None
    since: str | None = None
    before: str | None = None

    def describe(self) -> dict[str, str]:
        return {k: v for k, v in (("harness", self.harness), ("project", self.project),
                                  ("model", self.model), ("since", self.since),
                                  ("before", self.before)) if v}  # fmt: skip

    def window(self) -> tuple[int | None, int | None]:
        """[since, before) in epoch ns, each None when not given."""
        from agent_profiler.options import moment_ns

        return (
            moment_ns(self.since) if self.since else None,
            moment_ns(self.before) if self.before else None,
        )


def open_dataset(directory: Path) -> Any:
    """A DuckDB connection with one view per table of the dataset's current version."""
    import duckdb

    root = directory / "current"
    readable(directory)  # a name DuckDB takes as a glob it cannot escape
    if reason := unopenable(directory):  # a name over 255 bytes, a folder without search rights
        raise DatasetError(f"{directory}: {reason}")
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} is a file, not a dataset (collect … --to DIR makes one)")
    manifest = load_manifest(directory, FLEET_HINT)  # a damaged one: named, exit 1
    if manifest is None:
        if (directory / "versions").is_dir():
            # A collect ran here and found no journal to read (or was killed before its
            # end: one stopped otherwise removes the folder it made): telling its user to
            # run collect (what they just did) was no help.
            raise UsageError(
                f"{directory}: a dataset with no sessions yet (the collect here read none, "
                "or was stopped)"
            )
        raise UsageError(
            f"{directory}: no dataset here (make one with `collect … --to {directory}`)"
        )
    check(directory, manifest, FLEET_HINT)  # a file cut short or deleted: its rows are not
    connection = duckdb.connect(":memory:")
    connection.execute("SET threads = 2")
    listed = manifest.get("parquet")
    for table in TABLES:
        # The version's own files, each named (the manifest's list; a dataset from before
        # it, its folder's), never a glob of its path: a folder named `ds?y` read another
        # dataset's files (review-bad finding 13).
        if isinstance(listed, dict):
            paths = [root / name for name in listed if name.startswith(f"{table}/")]
        else:
            paths = sorted((root / table).rglob("*.parquet"))
        if paths:
            files = "[" + ", ".join(literal(path) for path in paths) + "]"
            connection.execute(
                f"CREATE VIEW {table}_files AS SELECT * FROM read_parquet({files}, "
                "hive_partitioning = true, union_by_name = true)"
            )
            # A column added since the dataset was collected (sessions.peak_fill) is NULL in
            # its rows, not a query error.
            present = {row[0] for row in connection.execute(f"DESCRIBE {table}_files").fetchall()}
            added = "".join(
                f", CAST(NULL AS {kind}) AS {name}"
                for name, kind in SCHEMA[table]
                if name not in present
            )
            connection.execute(f"CREATE VIEW {table} AS SELECT *{added} FROM {table}_files")
        else:
            columns = ", ".join(f"CAST(NULL AS {kind}) AS {name}" for name, kind in SCHEMA[table])
            connection.execute(f"CREATE VIEW {table} AS SELECT {columns} WHERE false")
    return connection


def figures(
    connection: Any,
    filters: Filters,
    prices: PriceTable | None,
    *,
    since_ns: int | None = None,
    until_ns: int | None = None,
) -> dict[str, Any]:
    """Every figure of the sessions that pass the filters and start in [since, until)
    (a --split side: within the filters' own window)."""
    earliest, latest = filters.window()
    if earliest is not None:
        since_ns = earliest if since_ns is None else max(since_ns, earliest)
    if latest is not None:
        until_ns = latest if until_ns is None else min(until_ns, latest)
    where = ["true"]
    args: list[Any] = []
    for column, value in (("harness", filters.harness), ("project", filters.project)):
        if value:
            where.append(f"{column} = ?")
            args.append(value)
    if filters.model:
        # One model by any of its names: `claude-opus-4-5` is also the dated
        # `claude-opus-4-5-20251101` Claude Code records, `claude-opus-4.6` OpenCode's
        # `claude-opus-4-6`, `anthropic/…` a provider's.
        where.append(f"{_MODEL_NAME.format('model')} = {_MODEL_NAME.format('?')}")
        args.append(filters.model)
    if since_ns is not None:
        where.append("start_ns >= ?")
        args.append(since_ns)
    if until_ns is not None:
        where.append("start_ns < ?")
        args.append(until_ns)
    # Subagents go with their main session (a subagent's subagent too): filtered by its
    # harness, project, model, date. A subagent whose parent is not in the dataset (a child
    # collected without it) is the root of its own tree, filtered by itself, and counted as
    # a subagent: it was left out of every figure, the cost included, without a word.
    connection.execute(
        "CREATE OR REPLACE TEMP TABLE picked AS "
        "WITH RECURSIVE tree(group_id, session_id, root) AS ("
        "SELECT s.group_id, s.session_id, s.session_id FROM sessions s "
        "WHERE s.parent_session IS NULL OR NOT EXISTS (SELECT 1 FROM sessions p "
        "WHERE p.group_id = s.group_id AND p.session_id = s.parent_session) "
        "UNION ALL SELECT c.group_id, c.session_id, t.root FROM sessions c JOIN tree t "
        "ON c.group_id = t.group_id AND c.parent_session = t.session_id "
        "AND c.parent_session <> c.session_id), "
        f"root AS (SELECT group_id, session_id FROM sessions WHERE {' AND '.join(where)}) "
        "SELECT s.group_id, s.session_id, s.parent_session IS NULL AS is_main FROM sessions s "
        "JOIN tree t USING (group_id, session_id) "
        "JOIN root r ON r.group_id = t.group_id AND r.session_id = t.root",
        args,
    )
    from .costs import cost_figures

    return {
        "sessions": _sessions(connection),
        "requests": _requests(connection),
        "who_wrote": _who_wrote(connection),
        "context_by_turn": _by_turn(connection),
        "peak_fill": _peak_fill(connection),
        "compactions": _compactions(connection),
        "tool_results": _tool_results(connection),
        "sources": _sources(connection),
        "cost": cost_figures(connection, prices) if prices is not None else None,
    }


def _rows(connection: Any, sql: str, args: list[Any] | None = None) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = connection.execute(sql, args or []).fetchall()
    return rows


_MAIN = "JOIN picked p USING (group_id, session_id) WHERE p.is_main"
_ALL = "JOIN picked p USING (group_id, session_id) WHERE true"
# A session that made a model request: one with usage, or one whose journal records none
# (a -p run on another provider's model: its responses are requests all the same).
MADE_A_REQUEST = "(requests > 0 OR coalesce(responses_without_usage, 0) > 0)"
# A model's name without what varies between the names of one model: a provider's prefix,
# a date or version suffix (`-20251101`, `@20251101`, `-v1:0`), `.` for `-`, the case.
_NOT_THE_MODEL = (
    "^.*/",  # a provider's prefix: anthropic/…, converse/…
    # Bedrock's region and provider: us.anthropic.…, jp.anthropic.…, anthropic.…
    "^((us|eu|apac|jp|au|ca|us-gov|global)\\.)?(anthropic|meta|amazon|mistral|cohere|ai21"
    "|deepseek|openai|qwen|writer)\\.",
    "-v[0-9]+:[0-9]+$",  # Bedrock's version (-v1:0), by its colon: deepseek-v3 is a model
    "([-@][0-9]{{8}}|-[0-9]{{4}}-[0-9]{{2}}-[0-9]{{2}})$",  # a date: -20251101, @…, -2024-08-06
)


def _model_name(value: str) -> str:
    """SQL of `value`'s model name (a format string's `{}`: a column or `?`)."""
    sql = f"lower({value})"
    for pattern in _NOT_THE_MODEL:
        sql = f"regexp_replace({sql}, '{pattern}', '')"
    return f"replace({sql}, '.', '-')"


_MODEL_NAME = _model_name("{}")


def _sessions(c: Any) -> dict[str, Any]:
    # The dates are the journals' own: a session without times is dated by its file's
    # modification time (the day it was copied, say), said apart and not in the range.
    dated = "p.is_main AND clock IS DISTINCT FROM 'synthetic'"
    (main, subagents, first, last, projects, by_mtime, with_requests) = _rows(
        c,
        f"SELECT count(*) FILTER (p.is_main), count(*) FILTER (NOT p.is_main), "
        f"min(start_ns) FILTER ({dated}), max(start_ns) FILTER ({dated}), "
        f"count(DISTINCT project), count(*) FILTER (p.is_main AND clock = 'synthetic'), "
        f"count(*) FILTER (p.is_main AND {MADE_A_REQUEST}) "
        f"FROM sessions {_ALL}",
    )[0]
    harnesses = dict(
        _rows(c, f"SELECT harness, count(*) FROM sessions {_MAIN} GROUP BY 1 ORDER BY 2 DESC, 1")
    )
    models = dict(
        _rows(
            c,
            f"SELECT coalesce(model, '(none)'), count(*) FROM sessions {_MAIN} "
            f"GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {TOP}",
        )
    )
    # How their composition was estimated (chars/4, calibrated, a harness's native counts).
    bases = dict(
        _rows(
            c,
            f"SELECT estimate_basis, count(*) FROM sessions {_MAIN} AND estimate_basis IS NOT NULL "
            "GROUP BY 1 ORDER BY 2 DESC, 1",
        )
    )
    return {
        "count": main,
        # A journal of a session that made no request (a /context screen, a title, an
        # init-only run) is a session, but not one whose figures could show anything.
        "with_requests": with_requests,
        "subagents": subagents,
        "first_start": _day(first),
        "last_start": _day(last),
        # Sessions whose journal has no times (Claude Code stream-json without timestamps):
        # their start is the journal file's modification time less their own durations.
        "dated_by_file_mtime": by_mtime,
        "projects": projects,
        "by_harness": harnesses,
        "by_model": models,
        "estimate_bases": bases,
    }


def _day(ns: int | None) -> str | None:
    if ns is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(ns / 1e9, UTC).date().isoformat()


def _requests(c: Any) -> dict[str, Any]:
    # The median and p90 are of the sessions with a request: a journal of a session that
    # made none (a title, a snapshot, an init-only run) pulled the median to 2 on the corpus.
    count, median, p90 = _rows(
        c,
        "SELECT sum(requests), "
        "round(quantile_cont(requests, 0.5) FILTER (WHERE requests > 0), 2), "
        "round(quantile_cont(requests, 0.9) FILTER (WHERE requests > 0), 2) "
        f"FROM sessions {_MAIN}",
    )[0]
    with_sub = _rows(c, f"SELECT count(*) FROM requests {_ALL}")[0][0]
    return {
        "count": int(count or 0),
        "with_subagents": with_sub,
        "per_session_median": median,
        "per_session_p90": p90,
    }


def _who_wrote(c: Any) -> dict[str, Any]:
    rows = _rows(
        c,
        f"""
        WITH last AS (
          SELECT rc.group_id, rc.session_id, rc.category, rc.tokens
          FROM request_categories rc {_MAIN} AND rc.is_last),
        measured AS (
          SELECT l.* FROM last l JOIN sessions s USING (group_id, session_id)
          WHERE s.requests >= {MIN_TURNS}),
        shares AS (
          SELECT group_id, session_id, category,
                 tokens / sum(tokens) OVER (PARTITION BY group_id, session_id) AS share
          FROM measured)
        SELECT category, sum(share), (SELECT count(DISTINCT (group_id, session_id)) FROM shares)
        FROM shares GROUP BY category""",
    )
    # The estimates the shares are of: each basis with the sessions measured by it.
    bases = dict(
        _rows(
            c,
            f"""
            SELECT s.estimate_basis, count(*) FROM sessions s {_MAIN}
              AND s.requests >= {MIN_TURNS} AND s.estimate_basis IS NOT NULL
              AND EXISTS (SELECT 1 FROM request_categories rc WHERE rc.is_last
                          AND rc.group_id = s.group_id AND rc.session_id = s.session_id)
            GROUP BY 1 ORDER BY 2 DESC, 1""",
        )
    )
    count = rows[0][2] if rows else 0
    by_category = {
        category: round(total / count, 4)
        for category, total, _ in sorted(rows, key=lambda r: -r[1])
        if count
    }
    return {
        "sessions": count,
        "min_turns": MIN_TURNS,
        "basis": "mean share of the last request's estimated context",
        "estimate_bases": bases,
        "by_writer": {k: round(v, 4) for k, v in by_writer(by_category).items()},
        "by_category": by_category,
    }


def _by_turn(c: Any) -> list[dict[str, Any]]:
    turns = ", ".join(str(t) for t in TURNS)
    rows = _rows(
        c,
        f"SELECT turn, quantile_cont(prompt_tokens, 0.5), quantile_cont(prompt_tokens, 0.9), "
        f"count(*) FROM requests r {_MAIN} AND r.turn IN ({turns}) GROUP BY turn ORDER BY turn",
    )
    return [
        {"turn": turn, "p50": round(p50), "p90": round(p90), "sessions_alive": alive}
        for turn, p50, p90, alive in rows
    ]


# The windows a session's fill can be measured against, in the order they are said: the
# journal's own, the harness's model table (Gemini CLI, Muse), a default (Claude Code's
# 200,000, which its journals never state).
WINDOW_SOURCES = ("journal", "model table", "assumed")


def _peak_fill(c: Any) -> dict[str, Any]:
    """How close sessions came to their window: each session's largest share of it (any
    request's reported input ÷ the window in use), by where the window came from, since an
    assumed one is a guess; sessions with requests but no window known (or collected before
    the dataset kept the fill) are counted apart, sessions without a request not at all."""
    rows = _rows(
        c,
        "SELECT window_source, count(*), quantile_cont(peak_fill, 0.5), "
        "quantile_cont(peak_fill, 0.9), count(*) FILTER (peak_fill >= 0.9), max(peak_fill) "
        f"FROM sessions {_MAIN} AND peak_fill IS NOT NULL GROUP BY 1",
    )
    found = {row[0]: row[1:] for row in rows}
    (unknown,) = _rows(
        c, f"SELECT count(*) FROM sessions {_MAIN} AND peak_fill IS NULL AND requests > 0"
    )[0]
    return {
        "by_window": [
            {
                "window": source,
                "sessions": n,
                "p50": round(p50, 4),
                "p90": round(p90, 4),
                "over_90": over,
                "max": round(top, 4),
            }
            for source in WINDOW_SOURCES
            if source in found
            for n, p50, p90, over, top in [found[source]]
        ],
        "unknown": unknown,
    }


def _compactions(c: Any) -> dict[str, Any]:
    # Of the sessions that made a request: 27 of the corpus's 53 made none (a /context
    # screen, a title) and could not have compacted: "in 6 of 53" halved the rate.
    made = f"({MADE_A_REQUEST} OR compactions > 0)"
    total, sessions_with, sessions = _rows(
        c,
        f"SELECT sum(compactions), count(*) FILTER (compactions > 0), count(*) "
        f"FROM sessions {_MAIN} AND {made}",
    )[0]
    spread = _rows(
        c,
        f"SELECT least(compactions, 5), count(*) FROM sessions {_MAIN} AND {made} "
        "GROUP BY 1 ORDER BY 1",
    )
    kinds = dict(
        _rows(c, f"SELECT kind, count(*) FROM compactions {_MAIN} GROUP BY 1 ORDER BY 2 DESC, 1")
    )
    return {
        "total": int(total or 0),
        "sessions_with": sessions_with,
        "sessions": sessions,
        "per_session": {("5+" if n == 5 else str(n)): count for n, count in spread},
        "by_kind": kinds,
    }


def _tool_results(c: Any) -> dict[str, Any]:
    rows = _rows(
        c,
        f"SELECT tool, count(*), sum(result_chars), sum(coalesce(result_tokens, 0)), "
        f"count(DISTINCT (group_id, session_id)) FROM tool_calls {_ALL} GROUP BY tool",
    )
    chars = sum(r[2] or 0 for r in rows)
    tokens = sum(r[3] or 0 for r in rows)
    ranked = sorted(rows, key=lambda r: (-(r[2] or 0), r[0]))
    tools = [
        {
            "tool": tool,
            "calls": calls,
            "sessions": sessions,
            "chars": int(c_ or 0),
            "share_chars": round((c_ or 0) / chars, 4) if chars else None,
            "tokens": int(t or 0),
            "share_tokens": round((t or 0) / tokens, 4) if tokens else None,
        }
        for tool, calls, c_, t, sessions in ranked[:TOP]
    ]
    return {
        "calls": sum(r[1] for r in rows),
        "chars": int(chars),
        "tokens": int(tokens),
        "tokens_basis": "estimated when each result entered the context",
        "by_tool": tools,
        "other_tools": max(0, len(rows) - TOP),
    }


def _sources(c: Any) -> dict[str, Any]:
    weight = "sum(tokens * requests_resident)"

    def items(category: str) -> list[dict[str, Any]]:
        return [
            {"name": label, "sessions": n, "tokens_mean": round(mean), "token_requests": int(w)}
            for label, n, mean, w in _rows(
                c,
                f"SELECT coalesce(label, item_id), count(DISTINCT (group_id, session_id)), "
                f"avg(tokens), {weight} FROM context_items {_ALL} AND category = ? "
                f"GROUP BY 1 ORDER BY 4 DESC, 1 LIMIT {TOP}",
                [category],
            )
        ]

    # A server's weight is its calls' results as they stayed in the context (each result's
    # items joined to its call), as every other source's: its calls' result sizes alone
    # read as if comparable with the others and were not.
    servers = [
        {
            "name": name,
            "sessions": n,
            "calls": calls,
            "result_tokens": int(t or 0),
            "token_requests": int(w or 0),
        }
        for name, n, calls, t, w in _rows(
            c,
            "SELECT mcp_server, count(DISTINCT (group_id, session_id)), count(*), "
            "sum(result_tokens), sum(resident) FROM ("
            "  SELECT k.group_id, k.session_id, k.mcp_server, k.result_tokens, "
            "  (SELECT sum(i.tokens * i.requests_resident) FROM context_items i "
            "   WHERE i.group_id = k.group_id AND i.session_id = k.session_id "
            "   AND i.call_id = k.call_id) AS resident "
            "  FROM tool_calls k WHERE k.mcp_server IS NOT NULL"
            f") {_ALL} GROUP BY 1 ORDER BY 5 DESC NULLS LAST, 3 DESC, 1 LIMIT {TOP}",
        )
    ]
    tools = [
        {"name": name, "sessions": n, "token_requests": int(w or 0)}
        for name, n, w in _rows(
            c,
            f"SELECT tool, count(DISTINCT (group_id, session_id)), {weight} "
            f"FROM context_items {_ALL} AND tool IS NOT NULL "
            f"GROUP BY 1 ORDER BY 3 DESC, 1 LIMIT {TOP}",
        )
    ]
    return {
        "weight": "estimated tokens × requests resident (what re-reading it cost in input)",
        "mcp_servers": servers,
        "skills": items(Category.SKILLS.value),
        "rule_files": items(Category.RULES.value),
        "tools": tools,
    }


__all__ = ["KEYS", "Decimal", "Filters", "figures", "open_dataset"]
