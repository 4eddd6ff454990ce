"""The dataset (issue 31): `collect` writes Parquet tables any engine reads, incrementally and
atomically, with nothing private in them; `fleet` answers the article's figures over them;
the receipts price the reported usage with the bundled price table."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.dataset import SCHEMA, TABLES
from agent_profiler.dataset.collect import collect, read_manifest
from agent_profiler.diagnostics import Diagnostics, shown_path
from agent_profiler.fleet import KEYS
from agent_profiler.loader import load
from agent_profiler.views import compactions_after
from shared_paths import CORPUS, SHARED_REASON, TESTS

duckdb = pytest.importorskip("duckdb")
genai_prices = pytest.importorskip("genai_prices")

HANDMADE = TESTS / "data" / "dataset" / "claude-cost-split.jsonl"
SESSION_ID = "0d5e7a7a-1111-4222-8333-444455556666"
# What the hand-made journal holds that no dataset may: its user, paths, tool results' text.
PRIVATE = ("alice", "secretproj/", "/home/", "TOP-SECRET", "SECRET-SEARCH", "SECRET-TODO")
runner = CliRunner()


def _journals(tmp_path: Path) -> Path:
    folder = tmp_path / "journals"
    folder.mkdir()
    shutil.copy(HANDMADE, folder / HANDMADE.name)
    return folder


def _table(dataset: Path, table: str) -> list[dict[str, Any]]:
    glob = str(dataset / "current" / table / "**" / "*.parquet")
    if not list((dataset / "current" / table).rglob("*.parquet")):
        return []  # a table without rows has no files (no compaction, say)
    connection = duckdb.connect()
    try:
        cursor = connection.execute(
            f"SELECT * FROM read_parquet('{glob}', hive_partitioning = true)"
        )
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        connection.close()


def _grow(journal: Path, uuid: str, parent: str, message_id: str, timestamp: str) -> None:
    """One more request at the end of a Claude Code journal: a copy of its last record."""
    record = orjson.loads(journal.read_text().splitlines()[-1])
    record["uuid"], record["parentUuid"] = uuid, parent
    record["message"]["id"], record["timestamp"] = message_id, timestamp
    with journal.open("a") as handle:
        handle.write(orjson.dumps(record).decode() + "\n")


def _fleet(dataset: Path, *options: str) -> dict[str, Any]:
    result = runner.invoke(app, ["fleet", str(dataset), "--json", *options])
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = orjson.loads(result.stdout)
    return data


def _strings(dataset: Path) -> list[str]:
    """Every text value of every table, and the manifest's bytes."""
    found = [(dataset / "current" / "manifest.json").read_text()]
    for table in TABLES:
        for row in _table(dataset, table):
            found += [value for value in row.values() if isinstance(value, str)]
    return found


def _assert_private(dataset: Path, extra: tuple[str, ...] = ()) -> None:
    strings = _strings(dataset)
    for marker in PRIVATE + extra:
        assert not [s for s in strings if marker in s], marker
    absolute = re.compile(r"(^|[\s\"'=(])(/home/|/Users/|/root/|[A-Za-z]:\\\\Users)")
    assert not [s for s in strings if absolute.search(s)]


# --------------------------------------------------------------------------- cost


def test_billed_receipt_equals_the_price_tables_own_calculator() -> None:
    # GIVEN a hand-made session whose cache writes are split into 5-minute and 1-hour parts
    from agent_profiler.cost import PriceTable, session_receipt

    (session,) = load([HANDMADE], Diagnostics()).sessions
    assert [r.usage.cache_write_1h_tokens for r in session.responses] == [600, 0, 0]
    table = PriceTable()
    # WHEN it is priced
    receipt = session_receipt(session, table).to_json(table)
    # THEN each request costs what genai-prices' own calculator says for its usage
    expected = sum(
        (
            genai_prices.calc_price(
                genai_prices.Usage(
                    input_tokens=r.usage.prompt_tokens,
                    cache_read_tokens=r.usage.cache_read_tokens,
                    cache_write_tokens=r.usage.cache_write_tokens,
                    cache_write_1h_tokens=r.usage.cache_write_1h_tokens,
                    output_tokens=r.usage.output_tokens,
                ),
                r.model,
            ).total_price
            for r in session.responses
        ),
        Decimal(0),
    )
    billed = receipt["billed"]
    assert billed["total_usd"] == pytest.approx(float(expected), abs=1e-6)
    # and the 1-hour writes are priced at the table's 1-hour price, not the 5-minute one
    prices = table.lookup("claude-sonnet-4-5", session.responses[0].start_ns)
    assert prices is not None
    hour, five = prices.prices["cache_write_1h"][0], prices.prices["cache_write_5m"][0]
    assert hour != five
    assert billed["cache_write_1h"] == {"tokens": 600, "usd": float(hour * 600 / 1_000_000)}
    assert billed["cache_write_5m"]["tokens"] == 400 + 200
    assert receipt["complete"] and receipt["unpriced_models"] == []
    assert receipt["prices"]["table"].startswith("genai-prices ")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", receipt["prices"]["date"])


def test_every_cache_hit_rereads_the_previous_request_and_writes_the_growth() -> None:
    from agent_profiler.cost import PriceTable, session_receipt

    (session,) = load([HANDMADE], Diagnostics()).sessions
    table = PriceTable()
    hit = session_receipt(session, table).to_json(table)["every_cache_hit"]
    prompts = [r.usage.prompt_tokens for r in session.responses]  # 1010, 1205, 1302
    assert hit["written_once"]["tokens"] == prompts[-1]  # it only grew: written once in all
    assert hit["re_read"]["tokens"] == prompts[0] + prompts[1]
    assert sum(hit["written_once_by_writer"].values()) == pytest.approx(
        hit["written_once"]["usd"], abs=1e-5
    )


def test_a_model_without_a_price_is_named_and_not_guessed(tmp_path: Path) -> None:
    journal = tmp_path / "unknown.jsonl"
    journal.write_text(HANDMADE.read_text().replace("claude-sonnet-4-5", "no-such-model-zz9"))
    result = runner.invoke(app, ["summary", str(journal), "--json", "--cost"])
    assert result.exit_code == 0, result.output
    (row,) = orjson.loads(result.stdout)
    cost = row["cost"]
    assert cost["unpriced_models"] == [{"model": "no-such-model-zz9", "requests": 3}]
    assert not cost["complete"]
    assert cost["billed"]["total_usd"] == 0
    text = runner.invoke(app, ["summary", str(journal), "--cost"]).stdout
    assert "no price for no-such-model-zz9 (3 requests)" in text


def test_summary_json_has_no_cost_unless_asked() -> None:
    plain = orjson.loads(runner.invoke(app, ["summary", str(HANDMADE), "--json"]).stdout)
    assert "cost" not in plain[0]
    priced = orjson.loads(runner.invoke(app, ["summary", str(HANDMADE), "--json", "--cost"]).stdout)
    assert set(priced[0]["cost"]) >= {"prices", "billed", "every_cache_hit", "unpriced_models"}


def test_report_cost_adds_a_receipt_per_session(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = runner.invoke(app, ["report", str(HANDMADE), "-o", str(out), "--cost"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.count('class="receipt"') == 1
    assert "cache writes, 1 hour" in page and "Every cache hit" in page
    assert "genai-prices" in page


# --------------------------------------------------------------------------- collect


def test_collect_writes_hive_partitioned_tables_with_the_schema(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    result = runner.invoke(app, ["collect", str(_journals(tmp_path)), "--to", str(dataset)])
    assert result.exit_code == 0, result.output
    assert "1 new, 0 changed" in result.stdout
    sessions = _table(dataset, "sessions")
    assert [(s["session_id"], s["harness"], s["month"]) for s in sessions] == [
        (SESSION_ID, "claude-code", "2026-01")
    ]
    # partition folders any Parquet engine reads as columns
    (part,) = (dataset / "current" / "sessions").glob("harness=*/month=*")
    assert part.parts[-2:] == ("harness=claude-code", "month=2026-01")
    for table in ("sessions", "requests", "request_categories", "context_items", "tool_calls"):
        rows = _table(dataset, table)
        assert rows, table
        assert set(rows[0]) == {name for name, _ in SCHEMA[table]}, table
    requests = _table(dataset, "requests")
    assert sorted(r["cache_write_1h_tokens"] for r in requests) == [0, 0, 600]
    calls = {c["tool"]: c for c in _table(dataset, "tool_calls")}
    assert calls["mcp__docs__search"]["mcp_server"] == "docs"
    assert calls["Read"]["result_tokens"] > 0
    items = _table(dataset, "context_items")
    read = next(i for i in items if i["call_id"] == "toolu_read")
    # the Read's result stayed in context from request 2 to the last (3)
    assert (read["first_turn"], read["last_turn"], read["requests_resident"]) == (2, 3, 2)
    _assert_private(dataset)


def test_a_second_collect_reads_only_new_or_changed_journals(tmp_path: Path) -> None:
    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    first = collect([journals], dataset)
    assert (first.new, first.version) == (1, 1)
    again = collect([journals], dataset)
    assert (again.unchanged, again.groups_read, again.version) == (1, 0, None)
    # touched but the same bytes: not read
    journal = journals / HANDMADE.name
    os.utime(journal, ns=(1, 1))
    touched = collect([journals], dataset)
    assert (touched.unchanged, touched.version) == (1, None)
    # grown (a fourth request): read again, its old rows replaced, not added to
    _grow(journal, "a4", "a3", "msg_4", "2026-01-05T10:00:20.000Z")
    changed = collect([journals], dataset)
    assert (changed.changed, changed.groups_read, changed.version) == (1, 1, 2)
    assert [s["requests"] for s in _table(dataset, "sessions")] == [4]
    assert len(_table(dataset, "requests")) == 4
    # a new journal: read alone, the first one's files kept (hard links)
    other = journals / "other.jsonl"
    other.write_text(
        journal.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    )
    added = collect([journals], dataset)
    assert (added.new, added.unchanged, added.groups_read) == (1, 1, 1)
    assert len(_table(dataset, "sessions")) == 2

    def files_of(batch: int) -> dict[str, int]:
        """The current version's files of a collect's batch: each name and its inode."""
        found = (dataset / "versions").rglob(f"b{batch:06d}_*.parquet")
        return {str(p.relative_to(dataset / "versions").parts[1:]): p.stat().st_ino for p in found}

    kept = files_of(2)  # the grown journal's rows, written by the collect of version 2
    assert kept
    # the new journal grows in turn: its rows are rewritten, the other's are not
    _grow(other, "a5", "a4", "msg_5", "2026-01-05T10:00:30.000Z")
    regrown = collect([journals], dataset)
    assert (regrown.changed, regrown.unchanged, regrown.groups_read) == (1, 1, 1)
    assert sorted(s["requests"] for s in _table(dataset, "sessions")) == [4, 5]
    assert files_of(2) == kept  # the same files, hard-linked into the new version
    # the CLI says what it read
    said = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)]).stdout
    assert "nothing new or changed" in said and "2 unchanged (not read)" in said
    # -o names the same dataset, as export's and report's -o name their output
    short = runner.invoke(app, ["collect", str(journals), "-o", str(dataset)])
    assert short.exit_code == 0 and "2 unchanged (not read)" in short.stdout


def test_journals_gone_from_the_folder_stay_in_the_dataset(tmp_path: Path) -> None:
    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    other = HANDMADE.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    (empty / "x.jsonl").write_text(other)
    (journals / HANDMADE.name).rename(empty / "moved.jsonl")  # the same bytes elsewhere
    result = collect([empty], dataset)
    assert (result.missing, result.new, result.copies) == (1, 1, 1)
    # the archive keeps what it had; the moved journal is the session it holds, not a second
    assert len(_table(dataset, "sessions")) == 2


def test_an_interrupted_collect_leaves_the_dataset_as_it_was(tmp_path: Path) -> None:
    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    before = read_manifest(dataset)
    before_rows = _table(dataset, "requests")
    (journals / "other.jsonl").write_text(
        HANDMADE.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    )

    def interrupt() -> None:
        raise KeyboardInterrupt

    # WHEN a collect is interrupted after its rows were staged, before the tables exist
    with pytest.raises(KeyboardInterrupt):
        collect([journals], dataset, after_rows=interrupt)
    # THEN the current version is untouched and the fleet reads it as before
    assert read_manifest(dataset) == before
    assert _table(dataset, "requests") == before_rows
    assert _fleet(dataset)["sessions"]["count"] == 1
    # and the next collect removes the leftovers and does the work
    done = collect([journals], dataset)
    assert done.new == 1 and done.version == 2
    assert not list((dataset / "versions").glob(".building-*"))
    assert [p.name for p in (dataset / "versions").iterdir()] == ["000002"]


def test_collect_of_no_journal_is_one_line_and_exit_1(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text("this is not json\n")
    result = runner.invoke(app, ["collect", str(bad), "--to", str(tmp_path / "ds")])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert f"error: {bad.name}" in result.output


def test_fleet_of_a_folder_without_a_dataset_is_a_usage_error(tmp_path: Path) -> None:
    result = runner.invoke(app, ["fleet", str(tmp_path)])
    assert result.exit_code == 2
    assert "no dataset here" in result.output and "Traceback" not in result.output


# --------------------------------------------------------------------------- fleet


def test_fleet_json_keys_and_figures_on_the_handmade_session(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    data = _fleet(dataset)
    assert set(KEYS) <= set(data)
    assert {"sessions", "requests", "who_wrote", "context_by_turn", "compactions",
            "tool_results", "cost"} <= set(data)  # fmt: skip
    assert data["sessions"]["count"] == 1 and data["requests"]["count"] == 3
    assert data["context_by_turn"][0] == {
        "turn": 1,
        "p50": 1010,
        "p90": 1010,
        "sessions_alive": 1,
    }
    tools = {t["tool"]: t for t in data["tool_results"]["by_tool"]}
    assert set(tools) == {"Read", "mcp__docs__search", "Bash"}
    assert sum(t["share_chars"] for t in tools.values()) == pytest.approx(1, abs=1e-3)
    assert data["sources"]["mcp_servers"][0]["name"] == "docs"
    # weighed as every source is: its results' tokens × the requests they stayed for
    calls = {r["call_id"] for r in _table(dataset, "tool_calls") if r["mcp_server"] == "docs"}
    resident = [r for r in _table(dataset, "context_items") if r["call_id"] in calls]
    assert resident and data["sources"]["mcp_servers"][0]["token_requests"] == sum(
        r["tokens"] * r["requests_resident"] for r in resident
    )
    # the fleet's receipt over one session is that session's receipt
    summary = orjson.loads(
        runner.invoke(app, ["summary", str(HANDMADE), "--json", "--cost"]).stdout
    )
    assert data["cost"]["billed"]["total_usd"] == pytest.approx(
        summary[0]["cost"]["billed"]["total_usd"], abs=1e-6
    )
    assert data["cost"]["billed"]["cache_write_1h"]["tokens"] == 600
    # who wrote: the session has 3 requests, fewer than the 5 the mean asks for
    assert data["who_wrote"]["sessions"] == 0


def test_fleet_filters_split_and_html(tmp_path: Path) -> None:
    journals = _journals(tmp_path)
    later = HANDMADE.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    (journals / "later.jsonl").write_text(later.replace("2026-01-05T", "2026-03-05T"))
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    assert _fleet(dataset)["sessions"]["count"] == 2
    assert _fleet(dataset, "--harness", "codex")["sessions"]["count"] == 0
    assert _fleet(dataset, "--project", "secretproj")["sessions"]["count"] == 2
    assert _fleet(dataset, "--model", "claude-sonnet-4-5")["sessions"]["count"] == 2
    split = _fleet(dataset, "--split", "2026-02-01")["split"]
    assert (split["before"]["sessions"]["count"], split["after"]["sessions"]["count"]) == (1, 1)
    page = tmp_path / "fleet.html"
    result = runner.invoke(
        app, ["fleet", str(dataset), "--html", str(page), "--split", "2026-02-01"]
    )
    assert result.exit_code == 0, result.output
    html = page.read_text()
    assert html.count("<svg") >= 4 and "Who wrote the end-of-session context" in html
    assert "Before 2026-02-01" in html and "What the context cost" in html
    text = runner.invoke(app, ["fleet", str(dataset)]).stdout
    assert "context by turn" in text and "tool results by tool" in text


def test_collect_says_what_it_could_not_read_as_export_does(tmp_path: Path) -> None:
    """collect printed only the files it could not read: a record of a type no adapter
    knows, a bad line and a damaged .gz were left out of the dataset without a word, and
    the damaged .gz exited 0 (export and summary exit 1)."""
    import gzip

    journals = _journals(tmp_path)
    lines = HANDMADE.read_text().splitlines()
    odd = json.loads(lines[1])
    odd["type"] = "brand_new_record"
    (journals / "odd.jsonl").write_text(
        "\n".join(
            [lines[0].replace(SESSION_ID, "5e55"), json.dumps(odd).replace(SESSION_ID, "5e55")]
            + [line.replace(SESSION_ID, "5e55") for line in lines[2:]]
            + ["{not json"]
        )
        + "\n"
    )
    whole = gzip.compress(HANDMADE.read_text().replace(SESSION_ID, "c07").encode())
    (journals / "cut.jsonl.gz").write_bytes(whole[: len(whole) - 40])
    result = runner.invoke(app, ["collect", str(journals), "--to", str(tmp_path / "ds")])
    assert result.exit_code == 1, result.output
    assert "rows added: sessions 3," in result.stdout
    assert "not recognised (not read): claude:brand_new_record 1" in result.stderr
    # named as stderr names a journal (`shown_path`: here outside the current folder)
    assert "first claude:brand_new_record: odd.jsonl:2" in result.stderr
    assert "(bad-gzip: 1, not-json: 1)" in result.stderr
    assert "  cut.jsonl.gz: corrupt or truncated gzip stream" in result.stderr


def test_collect_to_a_file_and_fleet_of_an_empty_collect_say_so(tmp_path: Path) -> None:
    """`collect … --to notes.txt` said `notes.txt: File exists` (the OS's words, exit 1);
    `fleet` over a folder a collect had just made from no journals said `no dataset here
    (make one with collect …)`, what the user had just done."""
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    to_file = runner.invoke(app, ["collect", str(HANDMADE), "--to", str(notes)])
    assert to_file.exit_code == 2
    assert to_file.stderr == f"error: --to {notes} is a file: name a folder for the dataset\n"
    assert notes.read_text() == "mine\n"
    empty, dataset = tmp_path / "empty", tmp_path / "ds"
    empty.mkdir()
    # Nothing to collect into a new folder (no journal; a misspelt one): the folder is not
    # made, and collect says so, so fleet's "no dataset here" is no surprise.
    # A journal every group of which is refused when read (--harness codex of a Claude
    # Code journal) left a version of no session behind.
    for given in ([empty], [tmp_path / "nosuch.jsonl"], [HANDMADE, "--harness", "codex"]):
        made = runner.invoke(app, ["collect", *map(str, given), "--to", str(dataset)])
        assert made.exit_code == 1
        assert made.stdout.startswith(f"{dataset}: not made: no journal could be collected; ")
        assert not dataset.exists(), given
    # A folder that was there (made by the user) stays, and fleet says what it holds.
    dataset.mkdir()
    assert runner.invoke(app, ["collect", str(empty), "--to", str(dataset)]).exit_code == 1
    assert dataset.is_dir()
    fleet = runner.invoke(app, ["fleet", str(dataset)])
    assert fleet.exit_code == 2
    assert fleet.stderr == (
        f"error: {dataset}: a dataset with no sessions yet (the collect here read none, or was "
        "stopped)\n"
    )
    never = runner.invoke(app, ["fleet", str(empty)])
    assert "no dataset here (make one with `collect" in never.stderr
    a_file = runner.invoke(app, ["fleet", str(notes)])
    assert a_file.exit_code == 2
    assert (
        a_file.stderr == f"error: {notes} is a file, not a dataset (collect … --to DIR makes one)\n"
    )


def test_fleet_says_when_its_filters_match_nothing(tmp_path: Path) -> None:
    """`fleet DIR --harness claude` (a typo of claude-code) or a model no session used
    printed every figure as 0, as if the dataset were empty, without a word."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    typo = runner.invoke(app, ["fleet", str(dataset), "--harness", "claude"])
    assert typo.exit_code == 2
    assert typo.stderr.startswith("error: --harness 'claude' is not a harness (claude-code, ")
    other = runner.invoke(app, ["fleet", str(dataset), "--model", "gpt-9", "--json"])
    assert other.exit_code == 0
    assert other.stderr == f"note: no session in {dataset} matches --model gpt-9\n"
    assert orjson.loads(other.stdout)["sessions"]["count"] == 0
    assert runner.invoke(app, ["fleet", str(dataset)]).stderr == ""


def test_collect_refuses_a_pipe(tmp_path: Path) -> None:
    """`cat s.jsonl | collect - --to ds`, run twice, put the session in the dataset twice:
    a pipe is read from a temporary copy with a new path each run, and a dataset knows a
    journal by its path (the first copy 'collected before and not found now (kept)')."""
    dataset = tmp_path / "ds"
    result = runner.invoke(app, ["collect", "-", "--to", str(dataset)], input=HANDMADE.read_bytes())
    assert result.exit_code == 2
    assert result.stderr == (
        "error: collect reads files and folders, not a pipe (-): a dataset knows each "
        "journal by its path\n"
    )
    assert not dataset.exists()


def test_a_session_given_twice_is_collected_once_per_copy_whatever_the_jobs(
    tmp_path: Path,
) -> None:
    """The same session in two files (a journal and its first lines): the second is
    renamed `#2`, and with --jobs 2 the group was read twice — by a process that did not
    know the id was taken, then again by the parent — and the rows of both readings were
    kept: the dataset held the session three times, its requests and items twice, while
    collect said `rows added: sessions 2`."""
    journals = _journals(tmp_path)
    lines = HANDMADE.read_text().splitlines(keepends=True)
    (journals / "copy.jsonl").write_text("".join(lines[: len(lines) // 2]))
    tables = {}
    for jobs in ("1", "2"):
        dataset = tmp_path / f"ds{jobs}"
        result = runner.invoke(app, ["collect", str(journals), "--to", str(dataset), "-j", jobs])
        assert result.exit_code == 0, result.output
        assert "rows added: sessions 2," in result.stdout
        sessions = sorted(row["session_id"] for row in _table(dataset, "sessions"))
        assert sessions == [SESSION_ID, f"{SESSION_ID}#2"], jobs
        tables[jobs] = {
            table: sorted(map(repr, (sorted(r.items()) for r in _table(dataset, table))))
            for table in TABLES
        }
        assert _fleet(dataset)["sessions"]["count"] == 2
    assert tables["1"] == tables["2"]


def test_a_journal_of_the_same_bytes_is_hashed_once_then_known_by_its_size_and_mtime(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `.gz` compressed again (its size and mtime new, its journal the same) is hashed
    once, found unchanged, and its entry takes its new size and mtime: a later collect
    knows it by them and does not read it again (a journal is hashed only when its size or
    mtime moved)."""
    import gzip

    from agent_profiler.dataset import changes

    folder = tmp_path / "z"
    folder.mkdir()
    journal = folder / "a.jsonl.gz"
    journal.write_bytes(gzip.compress(HANDMADE.read_bytes(), compresslevel=9))
    dataset = tmp_path / "ds"
    collect([folder], dataset)
    journal.write_bytes(gzip.compress(HANDMADE.read_bytes(), compresslevel=1))
    other = folder / "other.jsonl"  # and a new journal: this collect writes a version
    other.write_text(
        HANDMADE.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    )
    hashed: list[Path] = []
    real = changes.content_hash
    monkeypatch.setattr(changes, "content_hash", lambda path: hashed.append(path) or real(path))
    again = collect([folder], dataset)
    assert (again.new, again.unchanged, again.version) == (1, 1, 2)
    assert journal in hashed
    hashed.clear()
    third = collect([folder], dataset)
    assert (third.unchanged, third.version, hashed) == (2, None, [])


def test_a_copy_of_a_journal_is_not_collected_twice(tmp_path: Path) -> None:
    """A file with the bytes of a journal collected (a backup folder beside the real one, a
    journal moved) held the session twice (`#2`), and fleet counted it twice: every figure
    and the cost. It is said and not collected, now and at the next collect."""
    journals = _journals(tmp_path)
    backup = tmp_path / "backup"
    backup.mkdir()
    shutil.copy(HANDMADE, backup / "same.jsonl")
    dataset = tmp_path / "ds"
    for run in range(2):
        given = [str(journals), str(backup)] if run == 0 else [str(backup)]
        said = runner.invoke(app, ["collect", *given, "--to", str(dataset)])
        assert said.exit_code == 0, said.output
        journals_said = "1 journal: 1 new" if run == 0 else "0 journals: 0 new"
        assert journals_said in said.stdout, said.stdout
        assert "1 file with the bytes of a journal collected (a copy), not collected again" in (
            said.stdout
        )
        assert [r["session_id"] for r in _table(dataset, "sessions")] == [SESSION_ID]
        assert _fleet(dataset)["sessions"]["count"] == 1
    # Once it differs (it grew), it is a journal of its own.
    with (backup / "same.jsonl").open("a") as handle:
        handle.write("\n")
    grown = collect([backup], dataset)
    assert (grown.new, grown.copies) == (1, 0)


def test_a_gzipped_copy_of_a_journal_is_a_copy(tmp_path: Path) -> None:
    """A `.jsonl.gz` beside its `.jsonl` (a compressed backup, the corpus and the test data
    holding the same rollout) was a second session: the copy check compared the files'
    bytes, and fleet counted the session and its cost twice."""
    import gzip

    journals = tmp_path / "j"
    journals.mkdir()
    shutil.copy(HANDMADE, journals / "a.jsonl")
    (journals / "b.jsonl.gz").write_bytes(gzip.compress(HANDMADE.read_bytes()))
    dataset = tmp_path / "ds"
    said = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)])
    assert said.exit_code == 0, said.output
    assert "1 file with the bytes of a journal collected (a copy)" in said.stdout, said.stdout
    assert [r["session_id"] for r in _table(dataset, "sessions")] == [SESSION_ID]
    # A damaged .gz is not a copy of anything: it is read (and reported as damaged).
    (journals / "c.jsonl.gz").write_bytes(gzip.compress(HANDMADE.read_bytes())[:-20])
    damaged = collect([journals], dataset)
    assert (damaged.copies, damaged.new) == (1, 1)  # b is still a copy; c is new


def test_a_copy_of_a_file_that_is_not_a_journal_is_as_unusable_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two new files with the same bytes, neither a journal: the second is set aside as a
    copy of the first, and when the first is refused the copy is too (Refuse.copies_refused):
    each is its own `error:` line, with its name and line, and both are counted as not
    usable, neither as a copy (a copy said as "not collected again" would hide that it can
    never be collected)."""
    monkeypatch.chdir(tmp_path)
    Path("j").mkdir()
    for name in ("a.jsonl", "b.jsonl"):
        Path("j", name).write_bytes(b"not json at all\nnor this\n")
    said = runner.invoke(app, ["collect", "j", "--to", "ds"])
    assert said.exit_code == 1, said.output
    assert said.stderr.splitlines() == [
        f"error: {Path('j', name)}:1: not a JSONL journal (first line is not JSON)"
        for name in ("a.jsonl", "b.jsonl")
    ]
    assert said.stdout == (
        "ds: not made: no journal could be collected; 0 journals: 0 new, 0 changed, "
        "0 unchanged (not read); 2 files not usable (said above), not collected\n"
    )


def test_fleet_counts_a_subagent_collected_without_its_parent(tmp_path: Path) -> None:
    """A child session collected without its parent (OpenCode's @explore export, alone)
    was in the dataset and in collect's count but in none of fleet's figures: not among
    the subagents, its requests and cost left out, without a word."""
    child = TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"
    dataset = tmp_path / "ds"
    result = runner.invoke(app, ["collect", str(child), "--to", str(dataset)])
    assert result.exit_code == 0, result.output
    (row,) = _table(dataset, "sessions")
    assert row["parent_session"] and row["requests"] > 0
    figures = _fleet(dataset)
    assert (figures["sessions"]["count"], figures["sessions"]["subagents"]) == (0, 1)
    assert figures["requests"]["with_subagents"] == row["requests"]
    assert figures["tool_results"]["calls"] == row["tool_calls"]
    # its own harness picks it, another does not
    assert _fleet(dataset, "--harness", "opencode")["sessions"]["subagents"] == 1
    assert _fleet(dataset, "--harness", "codex")["sessions"]["subagents"] == 0


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_collect_and_fleet_on_corpus_sessions(tmp_path: Path) -> None:
    dataset = tmp_path / "ds"
    folders = [CORPUS / h for h in ("claude-code", "codex", "pi", "gemini-cli", "muse")]
    result = runner.invoke(
        app, ["collect", *map(str, folders), "--to", str(dataset), "--jobs", "2"]
    )
    assert "Traceback" not in result.output
    sessions = _table(dataset, "sessions")
    assert {s["harness"] for s in sessions} >= {"claude-code", "codex", "pi"}
    data = _fleet(dataset)
    assert data["sessions"]["count"] > 10
    assert data["requests"]["count"] == sum(
        s["requests"] for s in sessions if s["parent_session"] is None
    )
    assert data["tool_results"]["by_tool"] and data["context_by_turn"][0]["turn"] == 1
    assert data["compactions"]["total"] == sum(
        s["compactions"] for s in sessions if s["parent_session"] is None
    )
    assert data["cost"]["billed"]["total_usd"] > 0
    # no user name or home path from the corpus's cwd fields reached the dataset
    _assert_private(dataset, extra=())
    # a second collect reads nothing
    again = runner.invoke(app, ["collect", *map(str, folders), "--to", str(dataset)])
    assert "nothing new or changed" in again.stdout


def test_export_and_summary_do_not_import_duckdb_or_the_price_table(tmp_path: Path) -> None:
    probe = (
        "import sys\n"
        "from agent_profiler.cli import main\n"
        "sys.argv = ['agent-profiler', *sys.argv[1:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.startswith(('duckdb', 'genai'))))\n"
    )
    for command in (
        ["export", str(HANDMADE), "-o", str(tmp_path / "t.pftrace")],
        ["summary", str(HANDMADE)],
        ["report", str(HANDMADE), "-o", str(tmp_path / "r.html")],
    ):
        run = subprocess.run(
            [sys.executable, "-c", probe, *command], capture_output=True, text=True, check=True
        )
        assert "LOADED []" in run.stdout, (command, run.stdout[-300:])


def test_a_new_subagent_file_is_read_with_its_known_session(tmp_path: Path) -> None:
    source = TESTS / "data" / "journals" / "claude-code"
    source = source / "spotter-2.1.39-subagents-compaction"
    main = "258c7280-ae70-4798-800f-63464d01a85d"
    journals = tmp_path / "project"
    journals.mkdir()
    shutil.copy(source / f"{main}.jsonl.gz", journals)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    assert [s["session_id"] for s in _table(dataset, "sessions")] == [main]
    # WHEN the session's subagent files appear later
    shutil.copytree(source / main, journals / main)
    again = collect([journals], dataset)
    # THEN its group is read again with them: the subagent is linked, the parent not doubled
    assert again.new == 2 and again.groups_read == 1
    sessions = {s["session_id"]: s for s in _table(dataset, "sessions")}
    assert sorted(sessions) == [main, f"{main}/a881341"]
    assert sessions[f"{main}/a881341"]["parent_session"] == main


def test_many_collects_merge_a_partitions_files_and_still_drop_stale_rows(
    tmp_path: Path,
) -> None:
    from agent_profiler.dataset.collect import MERGE_AT

    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    base = HANDMADE.read_text()
    collect([journals], dataset)
    for index in range(MERGE_AT + 1):  # one new session per collect: one file each
        session = f"99999999-1111-4222-8333-{index:012d}"
        (journals / f"s{index}.jsonl").write_text(base.replace(SESSION_ID, session))
        collect([journals], dataset)
    part = dataset / "current" / "sessions" / "harness=claude-code" / "month=2026-01"
    files = sorted(p.name for p in part.glob("*.parquet"))
    assert len(files) <= 2 and any("_m" in name for name in files)
    assert len(_table(dataset, "sessions")) == MERGE_AT + 2
    # a change to the first session (now inside the merged file) replaces its rows
    journal = journals / HANDMADE.name
    journal.write_text(base.replace("Done: the notes", "Done now: the notes"))
    changed = collect([journals], dataset)
    assert changed.changed == 1
    ids = [s["session_id"] for s in _table(dataset, "sessions")]
    assert len(ids) == len(set(ids)) == MERGE_AT + 2


def test_fleet_html_escapes_names_from_journals(tmp_path: Path) -> None:
    journals = tmp_path / "journals"
    journals.mkdir()
    hostile = HANDMADE.read_text().replace('"name":"Bash"', '"name":"<img src=x onerror=alert(1)>"')
    (journals / "h.jsonl").write_text(hostile)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    page = tmp_path / "f.html"
    assert runner.invoke(app, ["fleet", str(dataset), "--html", str(page)]).exit_code == 0
    html = page.read_text()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_fleet_counts_sessions_and_subagents_in_agreeing_words(tmp_path: Path) -> None:
    """fleet said `1 session(s) (+0 subagent)` in text and `subagent(s)` in HTML."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    text = runner.invoke(app, ["fleet", str(dataset)]).stdout
    assert text.startswith("fleet ds: 1 session (+0 subagents), 3 requests, ")
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "--html", str(page)]).exit_code == 0
    assert "<p>1 session and 0 subagents, 3 requests, " in page.read_text()


def test_fleet_says_which_dates_are_file_modification_times(tmp_path: Path) -> None:
    """A stream-json journal without a timestamp (gh-aw, init-only) is dated by its file's
    modification time: fleet put those days among the journals' own without a word."""
    claude = TESTS / "data" / "journals" / "claude-code"
    journals = tmp_path / "journals"
    journals.mkdir()
    for name in (
        "trackgentic-mpa014m2_v2.1.143_bg-tasks-result.jsonl",  # dated 2026-05-17
        "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl",  # no times at all
    ):
        shutil.copy(claude / name, journals / name)
    undated = journals / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"
    os.utime(undated, ns=(1_800_000_000 * 10**9,) * 2)  # 2027-01-15
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    data = _fleet(dataset)
    sessions = data["sessions"]
    assert (sessions["count"], sessions["dated_by_file_mtime"]) == (2, 1)
    # the file's date is the day it was copied, not the session's: not among the dates
    assert (sessions["first_start"], sessions["last_start"]) == ("2026-05-17", "2026-05-17")
    text = runner.invoke(app, ["fleet", str(dataset)]).stdout
    assert (
        "2026-05-17 … 2026-05-17 (1 session without times in the journal, dated by its file's "
        "modification time: not in these dates)"
    ) in text.splitlines()[0]
    # a dataset of dated journals only says nothing of the kind
    (journals / undated.name).unlink()
    collect([journals], tmp_path / "dated")
    assert _fleet(tmp_path / "dated")["sessions"]["dated_by_file_mtime"] == 0
    assert "modification time" not in runner.invoke(app, ["fleet", str(tmp_path / "dated")]).stdout


def test_collect_says_which_files_of_a_folder_it_did_not_read(tmp_path: Path) -> None:
    """export notes the files of a folder that are not journals (a stream-json .txt among
    them, read only when named); collect left them out without a word."""
    journals = _journals(tmp_path)
    ghaw = TESTS / "data" / "journals" / "claude-code" / "gh-aw_sample_claude_log_new_format.txt"
    shutil.copy(ghaw, journals / ghaw.name)
    (journals / "notes.md").write_text("# my notes\n")  # documentation: not counted
    result = runner.invoke(app, ["collect", str(journals), "--to", str(tmp_path / "ds")])
    assert result.exit_code == 0, result.output
    assert (
        "note: 1 other file in the given folders is not *.jsonl, *.jsonl.gz or *.jsonl.zst and was "
        "not read (name a stream-json .txt or .log file directly)"
    ) in result.stderr.splitlines()
    assert "1 journal: 1 new" in result.stdout
    # named directly, the stream-json file is read
    named = runner.invoke(app, ["collect", str(journals / ghaw.name), "--to", str(tmp_path / "ds")])
    assert "1 journal: 1 new" in named.stdout and "note:" not in named.stderr


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_collect_and_fleet_of_the_corpus_read_as_a_team_lead_reads_them(tmp_path: Path) -> None:
    """The whole corpus, as a team lead's first try: counts in agreeing words (`session(s)`,
    `1 request(s)`, `1 session(s)`), weights in K or M (`40651.3K`), no absolute path."""
    dataset = tmp_path / "ds"
    collected = runner.invoke(app, ["collect", str(CORPUS), "--to", str(dataset)])
    assert collected.exit_code in (0, 1), collected.output
    fleet = runner.invoke(app, ["fleet", str(dataset)])
    assert fleet.exit_code == 0, fleet.output
    # the dataset's folder, as the user named it, is theirs to see
    said = (collected.stdout + fleet.stdout).replace(str(dataset), "DS")
    assert "(s)" not in said and "(es)" not in said
    assert not re.search(r"\b\d{4,}\.\dK\b", fleet.stdout), "thousands of K: say M"
    assert re.search(r"\b\d+\.\dM\)", fleet.stdout)  # the corpus's heaviest sources
    # the page's bars say the weights as the text does (not "2.02801M", "26.85k")
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "--html", str(page)]).exit_code == 0
    weights = re.findall(r"<title>[^<]*: ([\d.]+[kKM]?)</title>", page.read_text())
    assert weights and all(re.fullmatch(r"\d+(\.\d[KM])?", w) for w in weights), weights
    # one pair of brackets, not "(weight: tokens × requests resident (what …))"
    assert "\nlargest recurring sources, weighed by estimated tokens × requests resident (" in (
        fleet.stdout
    )
    assert not re.search(r"(^|[\s(])(/home/|/Users/|/root/|/work/|/tmp/)", said)
    # the subagents collect counts are the ones fleet sets apart
    sessions = _fleet(dataset)["sessions"]
    total = re.search(r"([\d,]+) sessions in the dataset", collected.stdout)
    assert total and int(total[1].replace(",", "")) == sessions["count"] + sessions["subagents"]


def test_fleet_html_does_not_overwrite_a_file_without_force(tmp_path: Path) -> None:
    """`fleet --html page.html` wrote over an existing page.html, where every other output
    asks for --force."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    page = tmp_path / "page.html"
    page.write_text("mine\n")
    refused = runner.invoke(app, ["fleet", str(dataset), "--html", str(page)])
    assert refused.exit_code == 2
    assert refused.stderr == f"error: {page} exists; pass --force to overwrite it\n"
    assert page.read_text() == "mine\n"
    forced = runner.invoke(app, ["fleet", str(dataset), "--html", str(page), "--force"])
    assert forced.exit_code == 0 and page.read_text().startswith("<!doctype html>")
    # a device is written in place, as elsewhere
    assert runner.invoke(app, ["fleet", str(dataset), "--html", "/dev/null"]).exit_code == 0


def test_every_fleet_json_key_is_documented(tmp_path: Path) -> None:
    """docs/dataset.md's "Stable keys" left out `tool_results.tokens_basis`,
    `tool_results.other_tools` and `sources.weight`."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    data = _fleet(dataset, "--split", "2026-01-01")
    docs = (TESTS.parent / "docs" / "dataset.md").read_text(encoding="utf-8")
    stable = docs[docs.index("Stable keys:") : docs.index("## What the context cost")]
    keys = {key for key in data} | {
        key for value in data.values() if isinstance(value, dict) for key in value
    }
    keys -= set(data["cost"])  # the receipt's keys: documented with the receipt, below
    assert sorted(k for k in keys if f"`{k}`" not in stable) == []


def test_fleet_html_draws_compactions_per_session_as_counts(tmp_path: Path) -> None:
    """The Compactions plot drew the number of sessions as a share: 47 sessions without a
    compaction were "4700%", a bar 30,000 pixels wide."""
    journals = _journals(tmp_path)
    for n in range(2):  # three sessions, none compacted
        copy = HANDMADE.read_text().replace(SESSION_ID, f"0d5e7a7a-1111-4222-8333-44445555000{n}")
        (journals / f"copy{n}.jsonl").write_text(copy)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "--html", str(page)]).exit_code == 0
    html = page.read_text()
    plot = html[html.index("<h2>Compactions</h2>") :]
    plot = plot[: plot.index("</svg>")]
    assert "<title>0 per session: 3 sessions</title>" in plot and "300%" not in plot
    widths = [float(w) for w in re.findall(r'<rect [^>]*width="([\d.]+)"', plot)]
    assert widths and max(widths) <= 640


def test_fleet_of_the_current_folder_names_it(tmp_path: Path) -> None:
    """`fleet .` titled its page "fleet : 1 session" (the name of "." is "")."""
    dataset = tmp_path / "my-team"
    collect([_journals(tmp_path)], dataset)
    here = os.getcwd()
    os.chdir(dataset)
    try:
        text = runner.invoke(app, ["fleet", "."]).stdout
    finally:
        os.chdir(here)
    assert text.startswith("fleet my-team: 1 session (+0 subagents)")


def test_a_split_side_without_sessions_is_one_line(tmp_path: Path) -> None:
    """`fleet --split` on a date after every session printed the later side as a page of
    empty headings ("by harness: ", "tool  calls  chars  tokens", …)."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    text = runner.invoke(app, ["fleet", str(dataset), "--split", "2030-01-01"]).stdout
    before, after = text.split("\nbefore 2030-01-01: ")[1].split("\nfrom 2030-01-01")
    assert before.startswith("1 session (+0 subagents), 3 requests")
    assert after == ": no sessions\n"
    filtered = runner.invoke(app, ["fleet", str(dataset), "--model", "gpt-9"])
    assert filtered.stdout == "fleet ds (--model gpt-9): no sessions\n"


def test_fleet_says_the_subagents_requests_apart(tmp_path: Path) -> None:
    """ "2 sessions (+1 subagent), 152 requests": the subagent's 3 requests were not in the
    count, and nothing said so (the JSON has them as requests.with_subagents)."""
    spotter = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
    dataset = tmp_path / "ds"
    collect([spotter], dataset)
    data = _fleet(dataset)
    assert (data["requests"]["count"], data["requests"]["with_subagents"]) == (152, 155)
    text = runner.invoke(app, ["fleet", str(dataset)]).stdout
    assert text.startswith("fleet ds: 1 session (+1 subagent), 152 requests (+3 in subagents), ")
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "--html", str(page)]).exit_code == 0
    assert "<p>1 session and 1 subagent, 152 requests (+3 in subagents), " in page.read_text()


def test_a_dataset_holds_one_estimate(tmp_path: Path) -> None:
    """A dataset collected with --estimate calibrated, collected again with the default,
    said "nothing new or changed" (or added chars/4 rows beside calibrated ones): fleet's
    estimated shares then mixed two estimators without a word."""
    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    first = runner.invoke(
        app, ["collect", str(journals), "--to", str(dataset), "--estimate", "calibrated"]
    )
    assert first.exit_code == 0, first.output
    assert read_manifest(dataset)["estimate"] == "calibrated"
    later = HANDMADE.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    (journals / "later.jsonl").write_text(later)
    refused = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)])
    assert refused.exit_code == 2
    assert refused.stderr == (
        f"error: --to {dataset}: its sessions were estimated with --estimate calibrated, not "
        "chars/4; a dataset holds one estimate (pass --estimate calibrated, or collect into "
        "a new folder)\n"
    )
    assert read_manifest(dataset)["version"] == 1  # untouched
    same = ["collect", str(journals), "--to", str(dataset), "--estimate", "calibrated"]
    again = runner.invoke(app, same)
    assert again.exit_code == 0 and "1 new" in again.stdout
    bases = {row["estimate_basis"] for row in _table(dataset, "sessions")}
    assert bases == {"chars/calibrated-v3"}


def test_a_file_that_is_not_a_journal_is_named_at_every_collect(tmp_path: Path) -> None:
    """A trace given to collect was counted as "1 journal: 1 new" before it was refused,
    and kept in the manifest: the next collect called it "unchanged", exited 0 and never
    named it again."""
    journals = _journals(tmp_path)
    trace = journals / "mine.jsonl"  # a trace under a journal's name is still refused
    exported = runner.invoke(app, ["export", str(HANDMADE), "-o", str(tmp_path / "t.pftrace")])
    assert exported.exit_code == 0, exported.output
    shutil.copy(tmp_path / "t.pftrace", trace)
    dataset = tmp_path / "ds"
    for run in range(2):
        result = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)])
        assert result.exit_code == 1, (run, result.output)
        assert f"error: {trace.name}: a Perfetto trace" in result.stderr
        new = 1 if run == 0 else 0
        assert f"1 journal: {new} new, 0 changed, {1 - new} unchanged" in result.stdout, run
        assert "; 1 file not usable (said above), not collected;" in result.stdout
        assert "1 session" in result.stdout
    manifest = json.loads((dataset / "current" / "manifest.json").read_text())
    assert len(manifest["files"]) == 1
    # Alone, nothing is collected: a new folder is not made, one that was there gets no
    # version.
    alone = tmp_path / "alone"
    result = runner.invoke(app, ["collect", str(trace), "--to", str(alone)])
    assert result.exit_code == 1
    assert result.stdout.startswith(f"{alone}: not made: no journal could be collected; 0 ")
    assert "1 file not usable (said above), not collected" in result.stdout
    assert not alone.exists()
    alone.mkdir()
    for _ in range(2):
        result = runner.invoke(app, ["collect", str(trace), "--to", str(alone)])
        assert result.exit_code == 1
        assert result.stdout.startswith(f"{alone}: nothing collected; 0 journals: 0 new,")
    assert not list((alone / "versions").iterdir())
    # A journal that becomes unusable is named, and keeps the rows collected before (the
    # dataset is an archive: review-bad finding 20, tests/dataset/test_dataset_files.py).
    shutil.copy(tmp_path / "t.pftrace", journals / HANDMADE.name)
    result = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)])
    assert result.exit_code == 1
    assert "1 journal: 0 new, 0 changed, 0 unchanged" in result.stdout
    assert "1 file not usable" in result.stdout
    assert "1 session whose journal collected before is unusable or damaged now" in result.stdout
    assert result.stdout.endswith("; 1 session\n")


def test_each_parquet_file_keeps_a_sessions_rows_together_in_turn_order(tmp_path: Path) -> None:
    """Each partition's file is one copy of the staging rows in their order (no sort): a
    session's rows are one run, its requests in turn order, as the sort gave them."""
    result = runner.invoke(
        app, ["collect", str(TESTS / "data" / "journals"), "--to", str(tmp_path / "ds")]
    )
    assert "rows added" in result.stdout, result.output
    connection = duckdb.connect()
    checked = 0
    for table in TABLES:
        for path in sorted((tmp_path / "ds" / "current" / table).rglob("*.parquet")):
            cursor = connection.execute(
                f"SELECT * FROM read_parquet('{path}', hive_partitioning = false)"
            )
            names = [d[0] for d in cursor.description]
            assert "harness" not in names and "month" not in names  # in the path only
            rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
            runs = [key for key, _ in itertools.groupby(r["session_id"] for r in rows)]
            assert len(runs) == len(set(runs)), (table, path)
            if "turn" in names and table == "requests":
                for _, group in itertools.groupby(rows, key=lambda r: r["session_id"]):
                    turns = [r["turn"] for r in group]
                    assert turns == sorted(turns), (table, path)
            checked += len(rows)
    assert checked > 1000


@pytest.mark.slow
def test_a_batch_larger_than_duckdbs_memory_limit_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first collect of 300 long sessions (450 MB of journals, 150 MB of context_items
    rows) failed with DuckDB's out-of-memory error after every journal was read: the batch
    was sorted and written by its partitioned writer, in memory, within MEMORY_LIMIT. Each
    partition's file is now one streaming copy: 230 MB of rows, bounded."""
    from agent_profiler.dataset import collect as collecting

    staging, building = tmp_path / "staging", tmp_path / "building"
    folder = staging / "context_items" / "harness=pi" / "month=2026-01"
    folder.mkdir(parents=True)
    label = "Tool result read src/a/long/path/to/a/file/that/is/typical/of/a/repository/"
    with (folder / "1.jsonl").open("wb") as handle:
        for session in range(600):
            row = {
                "group_id": f"g{session}",
                "session_id": f"s{session:05d}",
                "harness": "pi",
                "month": "2026-01",
                "category": "tool_results",
                "source_kind": "tool",
                "tool": "read",
                "requests_resident": 5,
                "removed": False,
                "end_known": True,
                "baseline": False,
            }
            handle.write(
                b"\n".join(
                    b'{"_read":7,'
                    + orjson.dumps(
                        row
                        | {
                            "item_id": f"toolu_{session}_{i:06d}",
                            "label": f"{label}{i}",
                            "call_id": f"call_{i}",
                            "tokens": i,
                            "chars": 4 * i,
                            "first_turn": i,
                            "last_turn": i + 5,
                        }
                    )[1:]
                    for i in range(1000)
                )
                + b"\n"
            )
    assert (folder / "1.jsonl").stat().st_size > 200 * 1024 * 1024
    connection = duckdb.connect(":memory:")
    connection.execute(f"SET memory_limit = '{collecting.MEMORY_LIMIT}'")
    connection.execute("SET preserve_insertion_order = true")
    connection.execute(f"SET temp_directory = '{tmp_path / 'spill'}'")
    connection.execute("CREATE TEMP TABLE accepted (reading BIGINT)")
    connection.execute("INSERT INTO accepted VALUES (7)")
    collecting.write_table(connection, staging, building, "context_items", 3)
    written = building / "context_items" / "harness=pi" / "month=2026-01" / "b000003_0.parquet"
    count, sessions = connection.execute(
        f"SELECT count(*), count(DISTINCT session_id) FROM read_parquet('{written}')"
    ).fetchone()
    assert (count, sessions) == (600_000, 600)


def test_collect_shows_how_far_it_is_as_export_does(tmp_path: Path) -> None:
    """A collect of thousands of sessions said nothing until its last line."""
    from agent_profiler.dataset.collect import Progress

    journals = _journals(tmp_path)
    for name in ("b", "c"):
        (journals / f"{name}.jsonl").write_text(HANDMADE.read_text().replace(SESSION_ID, name))
    seen: list[tuple[int, int]] = []
    collect(
        [journals],
        tmp_path / "ds",
        progress=Progress(groups=lambda done, total, group: seen.append((done, total))),
    )
    assert seen == [(1, 3), (2, 3), (3, 3)]


def test_fleet_peak_fill_is_summarys_fill_by_where_the_window_came_from(tmp_path: Path) -> None:
    """How full the window got, per session as `summary` says it (the same rule:
    views.session_fill), pooled by the window's origin; a dataset collected before the
    column is read as unknown, not an error."""
    journals = TESTS / "data" / "journals"
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    data = _fleet(dataset)["peak_fill"]
    rows = orjson.loads(runner.invoke(app, ["summary", str(journals), "--json"]).stdout)
    tops = {r["session_id"] for r in _table(dataset, "sessions") if not r["parent_session"]}
    main = [r for r in rows if r["session"] in tops and r["calls"]]
    assert len(main) >= 19  # (the Pi fork, before-compaction, made no request of its own)
    expected: dict[str, list[float]] = {}
    for row in main:
        if row["peak_fill"] is not None:
            expected.setdefault(row["window_source"], []).append(row["peak_fill"])
    assert {r["window"]: r["sessions"] for r in data["by_window"]} == {
        k: len(v) for k, v in expected.items()
    }
    assert {"journal", "assumed", "model table"} <= set(expected)
    # A connection of its own, not duckdb's default one: a process forked after the default
    # connection started its threads (mutmut's fork server, after its run of the suite)
    # waits forever on the first query it makes on it.
    connection = duckdb.connect()
    for entry in data["by_window"]:
        fills = expected[entry["window"]]
        assert entry["max"] == pytest.approx(max(fills), abs=1e-4)
        assert entry["over_90"] == sum(f >= 0.9 for f in fills)
        p50 = connection.sql(
            f"SELECT quantile_cont(x, 0.5) FROM unnest({fills}::DOUBLE[]) t(x)"
        ).fetchall()[0]
        assert entry["p50"] == pytest.approx(p50[0], abs=1e-4)
    assert data["unknown"] == sum(1 for r in main if r["peak_fill"] is None)
    # Collected before the dataset kept the fill: the column is absent from its files.
    for path in (dataset / "current" / "sessions").rglob("*.parquet"):
        connection.sql(
            f"COPY (SELECT * EXCLUDE (peak_fill, window_source) FROM read_parquet('{path}', "
            f"hive_partitioning = false)) TO '{path}.old' (FORMAT parquet)"
        )
        os.replace(f"{path}.old", path)
    connection.close()
    # An older version's manifest did not list its files (their sizes differ now), nor say
    # which columns its tables have: the next collect reads every journal again, once,
    # and the fill is back.
    manifest_path = dataset / "current" / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    del manifest["columns"], manifest["parquet"]
    manifest_path.write_bytes(orjson.dumps(manifest))
    older = _fleet(dataset)["peak_fill"]
    assert older == {"by_window": [], "unknown": len(main)}
    said = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)])
    journals_held = len(manifest["files"])
    assert f"{journals_held:,} unchanged read again" in said.stdout, said.output
    assert "version 2" in said.stdout and "0 new, 0 changed, 0 unchanged" in said.stdout
    assert _fleet(dataset)["peak_fill"] == data
    again = collect([journals], dataset)
    assert (again.reread, again.unchanged, again.version) == (0, journals_held, None)


def test_result_tokens_are_what_the_tool_returned(tmp_path: Path) -> None:
    """`tool_calls.result_tokens` added up every item linked to the call: its arguments
    (Assistant history, the model's writing) with its result, so "Tool results by tool"
    weighed a Write by the file it wrote. A dataset made the old way is read again once."""
    dataset = tmp_path / "ds"
    journals = _journals(tmp_path)
    collect([journals], dataset)
    calls = {r["call_id"]: r for r in _table(dataset, "tool_calls")}
    items = _table(dataset, "context_items")
    returned: dict[str, int] = {}
    argued: set[str] = set()
    for item in items:
        if item["call_id"] in calls and item["category"] != "assistant":
            returned[item["call_id"]] = returned.get(item["call_id"], 0) + item["tokens"]
        elif item["call_id"] in calls:
            argued.add(item["call_id"])
    assert argued and returned  # the journal has calls with both
    for call_id, row in calls.items():
        assert row["result_tokens"] == returned.get(call_id), call_id
    # A manifest of the first revision: every journal is read again, once.
    manifest_path = dataset / "current" / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    assert manifest["rows"] == 2
    del manifest["rows"]
    manifest_path.write_bytes(orjson.dumps(manifest))
    again = collect([journals], dataset)
    assert (again.reread, again.version) == (len(manifest["files"]), 2)


def test_a_journal_not_given_to_the_collect_that_updates_the_columns_is_read_again_later(
    tmp_path: Path,
) -> None:
    """A dataset made the old way, then a collect given only other journals: it wrote the
    new columns into the manifest, and the journals it was not given kept their old rows
    for good ("nothing new or changed" afterwards, their new columns NULL)."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    shutil.copy(
        TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1_first-25-lines.jsonl", first
    )
    shutil.copy(
        TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json",
        second,
    )
    dataset = tmp_path / "ds"
    collect([first], dataset)
    manifest_path = dataset / "current" / "manifest.json"
    manifest = orjson.loads(manifest_path.read_bytes())
    del manifest["rows"]  # made the old way
    manifest_path.write_bytes(orjson.dumps(manifest))
    only_second = collect([second], dataset)
    assert (only_second.new, only_second.reread) == (1, 0)
    marked = orjson.loads((dataset / "current" / "manifest.json").read_bytes())["files"]
    assert [entry.get("stale") for entry in marked.values()].count(True) == 1
    both = collect([first, second], dataset)
    assert (both.reread, both.unchanged) == (1, 1)  # the first read again, once
    assert not any(
        e.get("stale")
        for e in orjson.loads((dataset / "current" / "manifest.json").read_bytes())[
            "files"
        ].values()
    )
    assert collect([first, second], dataset).version is None  # nothing more to read


def test_a_dataset_given_as_journals_points_to_fleet(tmp_path: Path) -> None:
    """`export ds`, `summary ds`, `report ds` walked the Parquet files: "no journal here"
    and a note of every file not read. The dataset is named as one, with the command."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    for command in (["export", "-o", str(tmp_path / "t.pftrace")], ["summary"], ["report"]):
        result = runner.invoke(app, [command[0], str(dataset), *command[1:]])
        assert result.exit_code == 1, result.output
        assert result.stderr.startswith(
            f"error: {dataset.name}: a dataset written by `collect`, not journals: read it with "
            f"`agent-profiler fleet {dataset}`\n"
        )
        assert "not read" not in result.stderr


def test_a_journal_is_known_by_its_path_with_its_folder_resolved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest's key: a relative path, an absolute one and one through a symlinked
    folder are the same journal; the same file name in another folder is another."""
    from agent_profiler.dataset.collect import file_key

    journals = _journals(tmp_path)
    (tmp_path / "link").symlink_to(journals, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    name = HANDMADE.name
    key = file_key(journals / name)
    cache: dict[str, str] = {}
    assert file_key(Path("journals") / name, cache) == key
    assert cache == {"journals": str(journals.resolve())}  # one resolve per folder
    assert file_key(Path("link") / name, cache) == key
    assert file_key(Path(name)) != key  # ./claude-cost-split.jsonl
    assert file_key(journals / "other.jsonl") != key
    # A collect by one spelling, then by another: nothing new.
    dataset = tmp_path / "ds"
    assert collect([Path("journals")], dataset).new == 1
    again = collect([tmp_path / "link"], dataset)
    assert (again.journals, again.new, again.unchanged, again.version) == (1, 0, 1, None)
    # The same file name in another folder is another journal.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / name).write_text(
        HANDMADE.read_text().replace(SESSION_ID, "99999999-1111-4222-8333-444455556666")
    )
    both = collect([journals, elsewhere], dataset)
    assert (both.journals, both.new, both.unchanged) == (2, 1, 1)
    assert len(_table(dataset, "sessions")) == 2


def test_a_new_subagent_of_a_session_in_a_plain_jsonl_is_read_with_it(tmp_path: Path) -> None:
    """As test_a_new_subagent_file_is_read_with_its_known_session, the main journal not
    compressed: its group is found by the name without `.jsonl`."""
    import gzip

    source = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
    main = "258c7280-ae70-4798-800f-63464d01a85d"
    journals = tmp_path / "project"
    journals.mkdir()
    (journals / f"{main}.jsonl").write_bytes(
        gzip.decompress((source / f"{main}.jsonl.gz").read_bytes())
    )
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    (group,) = read_manifest(dataset)["groups"].values()
    assert group["stem"] == main and len(group["files"]) == 1
    shutil.copytree(source / main, journals / main)
    again = collect([journals], dataset)
    assert again.new == 2 and again.groups_read == 1
    (group,) = read_manifest(dataset)["groups"].values()
    assert len(group["files"]) == 3  # the main journal and its two agent files
    sessions = {s["session_id"]: s for s in _table(dataset, "sessions")}
    assert sorted(sessions) == [main, f"{main}/a881341"]
    assert sessions[f"{main}/a881341"]["parent_session"] == main


def test_a_dataset_of_another_format_is_refused(tmp_path: Path) -> None:
    from agent_profiler.errors import OutputError

    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    manifest = dataset / "current" / "manifest.json"
    manifest.write_bytes(orjson.dumps(orjson.loads(manifest.read_bytes()) | {"format": 2}))
    with pytest.raises(OutputError) as refused:
        collect([journals], dataset)
    said = "a dataset of another format; collect into a new folder"
    assert str(refused.value) == f"{shown_path(str(dataset))}: {said}"  # as inputs are shown
    result = runner.invoke(app, ["collect", str(journals), "--to", str(dataset)])
    assert result.exit_code != 0 and "a dataset of another format" in result.output


def test_one_collect_at_a_time_and_a_folder_that_cannot_be_made_is_said(tmp_path: Path) -> None:
    import fcntl

    from agent_profiler.errors import OutputError

    journals = _journals(tmp_path)
    dataset = tmp_path / "ds"
    dataset.mkdir()
    with (dataset / ".lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # another collect, writing
        with pytest.raises(OutputError) as busy:
            collect([journals], dataset)
    shown = shown_path(str(dataset))  # as an input's path is shown
    assert str(busy.value) == f"{shown}: another collect is writing this dataset"
    assert not (dataset / "current").exists()
    assert collect([journals], dataset).version == 1  # the lock released, it goes ahead
    under_a_file = tmp_path / "ds" / "current" / "manifest.json" / "ds"
    with pytest.raises(OutputError) as refused:
        collect([journals], under_a_file)
    assert str(refused.value) == f"{shown_path(str(under_a_file))}: Not a directory"


def test_a_changed_subagent_file_reads_its_whole_group_again(tmp_path: Path) -> None:
    """A session's group is read again whole when one of its subagent files changes: its
    old rows are replaced, not kept beside a subagent read on its own."""
    source = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
    main = "258c7280-ae70-4798-800f-63464d01a85d"
    journals = tmp_path / "project"
    shutil.copytree(source, journals)
    dataset = tmp_path / "ds"
    first = collect([journals], dataset)
    assert (first.new, first.groups_read) == (3, 1)
    (agent,) = (journals / main / "subagents").glob("agent-a881341.jsonl")
    with agent.open("a") as handle:
        handle.write("\n")  # new bytes, the same records
    again = collect([journals], dataset)
    assert (again.changed, again.unchanged, again.groups_read) == (1, 2, 1)
    (group,) = read_manifest(dataset)["groups"].values()
    assert len(group["files"]) == 3
    sessions = sorted(s["session_id"] for s in _table(dataset, "sessions"))
    assert sessions == [main, f"{main}/a881341"]
    requests = _table(dataset, "requests")
    assert len(requests) == len({(r["session_id"], r["turn"]) for r in requests})


def test_fleet_bars_keep_their_values_and_names_readable() -> None:
    """The longest bar's value was drawn past the drawing's right edge ("8" of "8.1M",
    "5" of "5 sessions"), and a long name was cut mid-word with nothing to say so."""
    from agent_profiler.fleet.render import _hbar

    long_name = "Loaded context (GEMINI.md, extensions and more)"
    for items, unit in (
        ([("supabase_right_aim_ops", 12_345_678_901.0), (long_name, 5.0)], None),
        ([("0 per session", 12_345.0), ("1 per session", 6.0)], "session"),
    ):
        svg = _hbar(items, {}, absolute=True, unit=unit)
        width = int(re.search(r'<svg width="(\d+)"', svg)[1])  # type: ignore[index]
        values = re.findall(r'<text x="([\d.]+)" y="\d+">([^<]+)</text>', svg)
        assert len(values) == 2, svg
        for x, text in values:
            # 12 px system-ui: no character is wider than 8 px.
            assert float(x) + 8 * len(text) <= width, (x, text, width)
    svg = _hbar([(long_name, 0.5)], {})
    assert f"<title>{long_name}</title>Loaded context (GEMINI.md, extens…</text>" in svg
    assert ">supabase_right_aim_ops<" in _hbar([("supabase_right_aim_ops", 1.0)], {})
    # Thousands, millions and billions, each a number one can read at a glance.
    drawn = _hbar([("a", 2_339_200_000.0), ("b", 745_300_000.0), ("c", 999_949.0)], {}, True)
    assert re.findall(r">[\d.]+[KMB]<", drawn) == [">2.3B<", ">745.3M<", ">999.9K<"]


def test_fleet_turn_columns_keep_the_median_clear_of_the_p90_tick() -> None:
    """A median's value was drawn across its p90 tick when the two were close (turn 20,
    73.6K over a tick 2 px above the bar), and above the drawing for the tallest column."""
    from agent_profiler.fleet.render import _columns

    rows = [
        {"turn": 1, "p50": 10_000, "p90": 40_000, "sessions_alive": 9},
        {"turn": 20, "p50": 73_600, "p90": 75_000, "sessions_alive": 7},
        {"turn": 100, "p50": 133_500, "p90": 133_500, "sessions_alive": 4},
    ]
    svg = _columns(rows)
    ticks = [float(y) for y in re.findall(r'<line [^>]*y1="([\d.]+)"', svg)]
    bars = [float(y) for y in re.findall(r'<rect x="\d+" y="([\d.]+)"', svg)]
    labels = [float(y) for y in re.findall(r'<text x="\d+" y="([\d.]+)">[\d.]+K<', svg)]
    assert len(ticks) == len(bars) == len(labels) == 3, svg
    assert labels[0] == bars[0] - 4  # far from its tick: the value on its bar
    for tick, label in zip(ticks[1:], labels[1:], strict=True):
        assert label <= tick - 4  # close: the value above the tick, not across it
    assert min(labels) >= 12  # the tallest column's value inside the drawing (12 px text)


def test_fleet_text_names_what_its_columns_and_sources_are(tmp_path: Path) -> None:
    """The tool table's columns were headed "chars" and "tokens" over shares (31.9%), and
    "tools:" among the recurring sources read like the Tool definitions category, where it
    weighs the calls' arguments and results."""
    dataset = tmp_path / "ds"
    collect([_journals(tmp_path)], dataset)
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    header = next(line for line in text.splitlines() if line.startswith("  tool "))
    assert header.split() == ["tool", "calls", "%", "chars", "%", "tokens"], header
    row = text.splitlines()[text.splitlines().index(header) + 1]
    assert row.split()[-1].endswith("%") and row.split()[-2].endswith("%"), row
    assert "\n  tool calls (arguments and results): " in text, text


def test_compactions_carry_their_size_after_and_their_billed_request(tmp_path: Path) -> None:
    """The compactions table left `post_tokens` NULL where summary gives the next
    request's size, and the summarisation request's usage was nowhere: fleet's cost left
    it out (Claude Code's compact call here: 169,248 input tokens)."""
    spotter = TESTS / "data" / "journals" / "claude-code" / "spotter-2.1.39-subagents-compaction"
    dataset = tmp_path / "ds"
    collect([spotter], dataset)
    main = next(s for s in load([spotter], Diagnostics()).sessions if s.compactions)
    (row,) = _table(dataset, "compactions")
    (after,) = compactions_after(main)
    assert after is not None
    assert (row["post_tokens"], row["post_tokens_source"]) == (after.tokens, after.source)
    request = main.compactions[0].request
    assert request is not None and row["model"] == request.model
    assert row["prompt_tokens"] == request.usage.prompt_tokens == 169_248
    assert row["output_tokens"] == request.usage.output_tokens
    parts = ("input_tokens", "cache_read_tokens", "cache_write_5m_tokens", "cache_write_1h_tokens")
    assert sum(row[p] for p in parts) == row["prompt_tokens"]
    # fleet bills every request and the compaction's, as summary's receipt does
    billed = _fleet(dataset)["cost"]["billed"]
    requests = _table(dataset, "requests")
    for component in ("input", "cache_read", "cache_write_5m", "cache_write_1h", "output"):
        column = f"{component}_tokens"
        expected = sum(r[column] for r in requests) + row[column]
        assert billed[component]["tokens"] == expected, component
    # Claude Code transcripts: streaming output counts, a lower bound (said, as summary does)
    figures = _fleet(dataset)
    assert figures["cost"]["output_lower_bound"] is True
    split = "each session's own end-of-session context composition (estimated)"
    assert figures["cost"]["split_by"] == split
    shares = list(figures["who_wrote"]["by_category"].values())
    assert len(shares) > 3 and shares == sorted(shares, reverse=True)  # largest first
    codex = tmp_path / "codex"
    collect([TESTS / "data" / "journals" / "codex"], codex)
    assert _fleet(codex)["cost"]["output_lower_bound"] is False
    summary = runner.invoke(app, ["summary", str(spotter), "--cost", "--json"])
    assert all(s["cost"]["output_lower_bound"] for s in orjson.loads(summary.stdout))
    receipts = [s["cost"]["billed"] for s in orjson.loads(summary.stdout)]
    for component in ("input", "cache_read", "output"):
        assert billed[component]["tokens"] == sum(r[component]["tokens"] for r in receipts)


def test_a_fast_mode_request_is_priced_at_its_variant_in_fleet_as_in_summary(
    tmp_path: Path,
) -> None:
    """A request's price variant (Claude Code's fast mode) is a column of `requests`, and
    fleet prices each (model, variant, day) as summary's receipt does: the same total."""
    journal = (
        TESTS
        / "data"
        / "journals"
        / "claude-code"
        / ("entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl")
    )
    lines = journal.read_text(encoding="utf-8").splitlines()
    fast = []
    for line in lines:
        value = json.loads(line)
        message = value.get("message")
        assistant = value.get("type") == "assistant" and isinstance(message, dict)
        if assistant and str(message.get("id")) < "msg_01M":  # about half of the responses
            message["usage"]["speed"] = "fast"
        fast.append(json.dumps(value))
    edited = tmp_path / "j" / journal.name
    edited.parent.mkdir()
    edited.write_text("\n".join(fast) + "\n", encoding="utf-8")
    dataset = tmp_path / "ds"
    collect([edited.parent], dataset)
    variants = {r["price_context"] for r in _table(dataset, "requests")}
    assert variants == {"speed=fast", None}
    cost = _fleet(dataset)["cost"]
    summary = runner.invoke(app, ["summary", str(edited), "--cost", "--json"])
    (row,) = orjson.loads(summary.stdout)
    assert cost["billed"]["total_usd"] == pytest.approx(row["cost"]["billed"]["total_usd"])
    assert cost["models"] == row["cost"]["models"]
    assert any(model.endswith("(speed=fast)") for model in cost["models"])


def test_web_searches_are_a_column_and_fleet_bills_them_as_summary_does(tmp_path: Path) -> None:
    journal = (
        TESTS
        / "data"
        / "journals"
        / "codex"
        / ("rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz")
    )
    folder = tmp_path / "j"
    folder.mkdir()
    shutil.copy(journal, folder)
    dataset = tmp_path / "ds"
    collect([folder], dataset)
    assert sum(r["web_searches"] for r in _table(dataset, "requests")) == 3
    cost = _fleet(dataset)["cost"]
    summary = runner.invoke(app, ["summary", str(journal), "--cost", "--json"])
    (row,) = orjson.loads(summary.stdout)
    assert cost["billed"]["web_searches"] == row["cost"]["billed"]["web_searches"]
    assert cost["billed"]["web_searches"]["count"] == 3
    assert cost["billed"]["total_usd"] == pytest.approx(row["cost"]["billed"]["total_usd"])


def test_fleet_sums_what_the_harnesses_recorded_as_summary_does(tmp_path: Path) -> None:
    folder = tmp_path / "j"
    folder.mkdir()
    for journal in (
        TESTS / "data" / "journals" / "pi" / "pi-mono_large-session_v1.jsonl",
        TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json",
    ):
        shutil.copy(journal, folder)
    dataset = tmp_path / "ds"
    collect([folder], dataset)
    summary = runner.invoke(app, ["summary", str(folder), "--cost", "--json"])
    receipts = [row["cost"]["recorded"] for row in orjson.loads(summary.stdout)]
    recorded = _fleet(dataset)["cost"]["recorded"]
    assert recorded["requests"] == sum(r["requests"] for r in receipts) > 0
    assert recorded["usd"] == pytest.approx(sum(r["usd"] for r in receipts), abs=1e-6)
    assert recorded["usd"] > 0 and 0.0 in [r["usd"] for r in receipts]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=SHARED_REASON)
def test_a_sessions_model_is_the_one_that_served_most(tmp_path: Path) -> None:
    """`sessions.model` was the first model, and `fleet --model` ("main model") picked the
    Codex session that switched to gpt-5.3-codex-spark for 9 of its 132 requests."""
    journal = (
        CORPUS / "codex" / "agentv-0.140-0.141" / "agentv-3c162d1d8a-1_v0.141.0_model-switch.jsonl"
    )
    dataset = tmp_path / "ds"
    collect([journal], dataset)
    (row,) = _table(dataset, "sessions")
    served: dict[str, int] = {}
    for request in _table(dataset, "requests"):
        served[request["model"]] = served.get(request["model"], 0) + 1
    assert len(served) == 2 and row["model"] == max(served, key=served.__getitem__)
    assert _fleet(dataset, "--model", row["model"])["sessions"]["count"] == 1
    other = next(m for m in served if m != row["model"])
    assert _fleet(dataset, "--model", other)["sessions"]["count"] == 0
    summary = orjson.loads(runner.invoke(app, ["summary", str(journal), "--json"]).stdout)
    assert summary[0]["model"] == row["model"]
    # The trace names the session by the same model, and the report by the trace's short id
    from agent_profiler.report.text import short_id as report_id
    from agent_profiler.views import session_title, short_id

    (session,) = load([journal], Diagnostics()).sessions
    from agent_profiler.annotations import TraceFacts, profile_args

    capture = profile_args(session, TraceFacts(), 1, session.start_ns, False)
    assert capture["model"] == row["model"] and set(capture["models"]) == set(served)
    title = session_title(session)
    assert title.endswith(f" · {row['model']}") and short_id(session.session_id) in title
    assert report_id(session.session_id) == "…" + short_id(session.session_id)


def test_fleet_text_says_none_under_an_empty_heading(tmp_path: Path) -> None:
    """A dataset of a session without requests printed "by category: " with nothing after
    it, a turn table's header without rows and headings with nothing under them; the HTML
    page said "(none)"."""
    journal = TESTS / "data" / "journals" / "claude-code"
    journal = journal / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl"
    dataset = tmp_path / "ds"
    collect([journal], dataset)
    text = runner.invoke(app, ["fleet", str(dataset), "--no-cost"]).stdout
    blocks = text.rstrip("\n").split("\n\n")[1:]  # each heading with what is under it
    assert len(blocks) == 6, text
    for block in blocks:
        heading, *under = block.splitlines()
        assert under or heading.startswith("compactions:"), block
        assert all(line.strip() for line in under) and "by category: \n" not in text
    assert text.count("\n  (none)") == 5, text


def test_requests_per_session_are_of_sessions_that_made_one(tmp_path: Path) -> None:
    """The corpus's median was 2 requests per session: 27 of its sessions made none (a
    title, an init-only run). The quantiles are of the sessions that made a request, and
    rounded (p90 was 146.60000000000002)."""
    journals = tmp_path / "j"
    journals.mkdir()
    data = TESTS / "data" / "journals" / "claude-code"
    shutil.copy(data / "trackgentic-mp9r3tbb_v2.1.143_init-only-no-result.jsonl", journals)
    shutil.copy(HANDMADE, journals)
    dataset = tmp_path / "ds"
    collect([journals], dataset)
    counts = sorted(r["requests"] for r in _table(dataset, "sessions"))
    assert counts[0] == 0 and counts[1] > 0, counts
    requests = _fleet(dataset)["requests"]
    assert requests["per_session_median"] == requests["per_session_p90"] == counts[1]
    assert requests["count"] == counts[1]


def test_a_skills_listing_is_one_source_across_harnesses(tmp_path: Path) -> None:
    """Claude Code's "Skill listing", Codex's "Skills listing" and Muse's "Skills
    catalog" were three rows of fleet's recurring sources for one kind of item."""
    dataset = tmp_path / "ds"
    collect([TESTS / "data" / "journals"], dataset)
    harnesses = {
        r["harness"] for r in _table(dataset, "context_items") if r["label"] == "Skills listing"
    }
    assert harnesses == {"claude-code", "codex", "muse"}
    names = [e["name"] for e in _fleet(dataset, "--no-cost")["sources"]["skills"]]
    assert "Skills listing" in names
    assert not any(n.startswith(("Skill listing", "Skills catalog")) for n in names), names


def test_fleet_page_draws_each_figure_with_its_names_and_colours(tmp_path: Path) -> None:
    """What fleet --html draws, read back from the page: each writer and category in its
    own colour (the report's pattern for a category), the tool table's headings, a heading
    per kind of recurring source, the receipt named as the fleet's, and the turn columns'
    p90 ticks over their bars (mutants of fleet/render.py showed none of this was held)."""
    from agent_profiler.cost import WRITER_OF
    from agent_profiler.fleet.render import WRITER_COLOURS, _columns, _share, _subagent_requests

    dataset = tmp_path / "ds"
    collect([TESTS / "data" / "journals"], dataset)
    page = tmp_path / "fleet.html"
    assert runner.invoke(app, ["fleet", str(dataset), "-o", str(page)]).exit_code == 0
    html = page.read_text()
    who = html[html.index("Who wrote the end-of-session context") : html.index("Context by turn")]
    drawn = re.findall(r'fill="([^"]+)"><title>([a-z +]+): ', who)
    assert {writer for _, writer in drawn} == set(WRITER_OF.values()), drawn
    assert all(colour == WRITER_COLOURS[writer] for colour, writer in drawn), drawn
    assert 'fill="url(#cat-results)"><title>Tool results: ' in who
    header = "<tr><th>tool</th><th>calls</th><th>sessions</th><th>chars</th>"
    assert header + "<th>share of chars</th><th>tokens</th><th>share of tokens</th></tr>" in html
    sources = html[html.index("Largest recurring sources") : html.index("What the context cost")]
    assert re.findall(r"<h4>([^<]+)</h4>", sources) == [
        "MCP servers",
        "Skills",
        "Rule files",
        "Tool calls (arguments and results)",
    ]
    assert "<pre>the fleet: what the context cost (" in html
    # Each p90 tick spans its bar, left to right.
    svg = _columns([{"turn": 1, "p50": 5, "p90": 9, "sessions_alive": 2}])
    bar = re.search(r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"', svg)
    tick = re.search(r'<line x1="([\d.]+)" x2="([\d.]+)"', svg)
    assert bar and tick
    assert (float(tick[1]), float(tick[2])) == (float(bar[1]), float(bar[1]) + float(bar[2]))
    assert (_share(None), _share(0.25)) == ("-", "25.0%")
    assert _subagent_requests({"count": 3, "with_subagents": 4}) == " (+1 in subagents)"
    assert _subagent_requests({"count": 3, "with_subagents": 3}) == ""
