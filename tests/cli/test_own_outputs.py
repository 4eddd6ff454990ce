"""Our own outputs given back (issue 29): a Perfetto trace, a Chrome JSON trace or an HTML
report handed to `export`, `summary` or `report` is named for what it is in one line,
with how to open it — not `x.pftrace:2: not a JSONL journal` or "try --harness"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.own import own_output
from samples import CLAUDE_SMALL

runner = CliRunner()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("outputs")
    made = {
        "perfetto": folder / "t.pftrace",
        "json": folder / "t.json",
        "html": folder / "t.html",
    }
    for kind, path in made.items():
        command = "report" if kind == "html" else "export"
        result = runner.invoke(app, [command, str(CLAUDE_SMALL), "-o", str(path)])
        assert result.exit_code == 0, result.output
    return made


WHAT = {
    "perfetto": "a Perfetto trace written by agent-profiler, not a journal: open it with "
    "`agent-profiler open {path}`",
    "json": "a Chrome JSON trace written by agent-profiler, not a journal: open it with "
    "`agent-profiler open {path}`",
    "html": "an HTML report written by agent-profiler, not a journal: open it in a web browser",
}


@pytest.mark.parametrize("kind", sorted(WHAT))
@pytest.mark.parametrize("command", ["export", "summary", "report"])
def test_each_command_names_our_output_in_one_line(
    outputs: dict[str, Path], kind: str, command: str, tmp_path: Path
) -> None:
    path = outputs[kind]
    args = [command, str(path)] + (["-o", str(tmp_path / "out")] if command != "summary" else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 1
    lines = [line for line in result.stderr.splitlines() if path.name in line]
    assert len(lines) == 1, result.stderr
    assert lines[0] == f"error: {path.name}: " + WHAT[kind].format(path=path) + (
        " (or drag it into https://ui.perfetto.dev)" if kind != "html" else ""
    )
    assert "JSONL" not in result.stderr and "--harness" not in result.stderr


def test_a_journal_that_starts_with_a_blank_line_is_still_a_journal(tmp_path: Path) -> None:
    journal = tmp_path / "j.jsonl"
    journal.write_bytes(b"\n" + CLAUDE_SMALL.read_bytes())
    assert own_output(journal) is None
    assert own_output(CLAUDE_SMALL) is None
    result = runner.invoke(app, ["summary", str(journal)])
    assert result.exit_code == 0, result.output


def test_an_html_page_without_a_doctype_is_named_for_what_it_is(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_text("<HTML><body>a page saved from a browser</body></HTML>\n")
    result = runner.invoke(app, ["summary", str(page)])
    assert result.exit_code == 1
    assert f"error: {page.name}: an HTML page, not a journal: open it in a web browser" in (
        result.stderr
    )


def test_a_json_trace_with_its_keys_sorted_is_a_trace_and_a_journal_naming_the_key_is_not(
    tmp_path: Path,
) -> None:
    """`jq -S .` puts `traceEvents` after `metadata`: `open` read such a trace as a journal
    and refused it with "open it with `agent-profiler open sorted.json`", the command just
    run. A journal whose record holds the word (in a string, or as a nested key) is still
    a journal."""
    from agent_profiler.own import is_trace, own_output

    document = {
        "traceEvents": [{"ph": "i", "ts": 0, "pid": 1, "tid": 1, "name": "x"}],
        "metadata": {"exporter": "agent-profiler"},
        "displayTimeUnit": "ms",
    }
    for name, text in (
        ("sorted.json", json.dumps(document, sort_keys=True)),
        ("sorted-pretty.json", json.dumps(document, sort_keys=True, indent=2)),
        ("compact.json", json.dumps(document)),
    ):
        path = tmp_path / name
        path.write_text(text)
        assert is_trace(path) and own_output(path), name
    journal = tmp_path / "j.jsonl"
    records = [
        {"type": "user", "message": {"content": 'look at "traceEvents":[ in trace.json'}},
        {"type": "tool", "result": {"traceEvents": [], "note": "a nested key"}},
    ]
    for record in records:
        journal.write_text(json.dumps(record) + "\n" + json.dumps(records[0]) + "\n")
        assert not is_trace(journal) and own_output(journal) is None
