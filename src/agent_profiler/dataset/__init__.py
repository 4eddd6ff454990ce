"""The dataset: Parquet tables of many sessions (`collect`), read by `fleet` or any engine.

Layout (docs/dataset.md): `DIR/current` → `DIR/versions/<n>/`, and in a version one folder
per table, Hive-partitioned by harness and the month a session started:
`sessions/harness=claude-code/month=2026-11/b000001_0.parquet`. A collect builds the next
version beside the current one (files of unchanged batches hard-linked, new ones written)
and then swaps `current` in one rename: an interrupted collect leaves the current version
as it was.

`SCHEMA` is the one list of every table's columns (name, DuckDB type): the collect's
reader, the fleet's empty tables and docs/dataset.md follow it.
"""

from __future__ import annotations

PARTITIONS = ("harness", "month")
_KEY = [
    ("group_id", "VARCHAR"),
    ("session_id", "VARCHAR"),
    ("harness", "VARCHAR"),
    ("month", "VARCHAR"),
]
# A request's usage as it is billed (cost.RequestTokens): in requests, summed in sessions,
# and a compaction's summarisation request's.
_BILLED = [
    ("input_tokens", "BIGINT"),
    ("cache_read_tokens", "BIGINT"),
    ("cache_write_5m_tokens", "BIGINT"),
    ("cache_write_1h_tokens", "BIGINT"),
    ("output_tokens", "BIGINT"),
]
SCHEMA: dict[str, list[tuple[str, str]]] = {
    "sessions": [
        *_KEY,
        ("parent_session", "VARCHAR"),
        ("project", "VARCHAR"),
        ("model", "VARCHAR"),
        ("provider", "VARCHAR"),
        ("harness_version", "VARCHAR"),
        ("start_ns", "BIGINT"),
        ("end_ns", "BIGINT"),
        ("requests", "INTEGER"),
        # Responses whose journal records no usage (every field 0): not priced.
        ("responses_without_usage", "INTEGER"),
        ("prompts", "INTEGER"),
        ("tool_calls", "INTEGER"),
        ("compactions", "INTEGER"),
        ("first_prompt_tokens", "BIGINT"),
        ("peak_prompt_tokens", "BIGINT"),
        ("final_prompt_tokens", "BIGINT"),
        ("window_tokens", "BIGINT"),
        ("peak_fill", "DOUBLE"),
        ("window_source", "VARCHAR"),
        *_BILLED,
        ("end_estimated_tokens", "BIGINT"),
        ("end_results_share", "DOUBLE"),
        ("estimate_basis", "VARCHAR"),
        ("clock", "VARCHAR"),
        ("incomplete", "BOOLEAN"),
        # What the harness recorded the whole session cost (Claude Code's `-p` runs' total).
        ("recorded_total_usd", "DOUBLE"),
    ],
    "requests": [
        *_KEY,
        ("turn", "INTEGER"),
        ("response_id", "VARCHAR"),
        ("model", "VARCHAR"),
        ("start_ns", "BIGINT"),
        ("duration_ns", "BIGINT"),
        ("prompt_tokens", "BIGINT"),
        *_BILLED,
        ("reasoning_tokens", "BIGINT"),
        ("output_tokens_reliable", "BOOLEAN"),  # false: a streaming count (a lower bound)
        ("price_context", "VARCHAR"),  # the journal's price variant (speed=fast), else NULL
        ("web_searches", "INTEGER"),  # server-side web searches, billed per search
        ("recorded_usd", "DOUBLE"),  # what the harness recorded it cost (Pi, OpenCode)
        ("hit_written_tokens", "BIGINT"),
        ("hit_reread_tokens", "BIGINT"),
        ("estimated_tokens", "BIGINT"),
        ("omitted_changes", "INTEGER"),
        ("is_error", "BOOLEAN"),
        ("stop_reason", "VARCHAR"),
    ],
    "request_categories": [
        *_KEY,
        ("turn", "INTEGER"),
        ("category", "VARCHAR"),
        ("tokens", "BIGINT"),
        ("is_last", "BOOLEAN"),
    ],
    "context_items": [
        *_KEY,
        ("item_id", "VARCHAR"),
        ("category", "VARCHAR"),
        ("label", "VARCHAR"),
        ("source_kind", "VARCHAR"),
        ("tool", "VARCHAR"),
        ("call_id", "VARCHAR"),
        ("tokens", "BIGINT"),
        ("chars", "BIGINT"),
        ("first_turn", "INTEGER"),
        ("last_turn", "INTEGER"),
        ("requests_resident", "INTEGER"),
        ("removed", "BOOLEAN"),
        ("end_known", "BOOLEAN"),
        ("baseline", "BOOLEAN"),
    ],
    "tool_calls": [
        *_KEY,
        ("call_id", "VARCHAR"),
        ("tool", "VARCHAR"),
        ("mcp_server", "VARCHAR"),
        ("turn", "INTEGER"),
        ("start_ns", "BIGINT"),
        ("duration_ns", "BIGINT"),
        ("is_error", "BOOLEAN"),
        ("incomplete", "BOOLEAN"),
        ("arg_bytes", "BIGINT"),
        ("result_chars", "BIGINT"),
        ("result_tokens", "BIGINT"),
        ("child_session", "VARCHAR"),
    ],
    "compactions": [
        *_KEY,
        ("compaction_id", "VARCHAR"),
        ("kind", "VARCHAR"),
        ("trigger", "VARCHAR"),
        ("start_ns", "BIGINT"),
        ("pre_tokens", "BIGINT"),
        ("post_tokens", "BIGINT"),
        ("post_tokens_source", "VARCHAR"),
        ("removed_items", "INTEGER"),
        ("after_turn", "INTEGER"),
        # The summarisation request, where the journal records it (else NULL): billed.
        ("model", "VARCHAR"),
        ("prompt_tokens", "BIGINT"),
        *_BILLED,
        ("recorded_usd", "DOUBLE"),
    ],
}
TABLES = tuple(SCHEMA)
