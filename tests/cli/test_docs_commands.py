"""docs/commands.md matches the commands: every option of every command (and only those) is
listed under "Every option", and every key `summary --json` prints is named."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import click
import pytest
from typer.main import get_command
from typer.testing import CliRunner

from agent_profiler.cli import app
from samples import PI_FORK
from shared_paths import REPO, TESTS

DOC = (REPO / "docs" / "commands.md").read_text()
GROUP = get_command(app)
COMMANDS: dict[str, click.Command] = GROUP.commands  # type: ignore[attr-defined]
OPTION = re.compile(r"(?<![\w/-])--?[a-z][a-z-]*|(?<=/)--?[a-z][a-z-]*")
JOURNALS = TESTS / "data" / "journals" / "claude-code"


def options(command: click.Command) -> set[str]:
    # typer's options are not always click.Option instances: ask the parameter what it is
    opts = [p for p in command.params if p.param_type_name == "option"]
    names = {n for p in opts for n in (*p.opts, *p.secondary_opts)}
    return names - {"--help"}


def every_option_section() -> dict[str, str]:
    section = DOC.split("\n## Every option\n", 1)[1].split("\n## ", 1)[0]
    bullets = re.split(r"\n- ", "\n" + section)[1:]
    found = {}
    for bullet in bullets:
        head = re.match(r"`([a-z]+)`:", bullet)
        found[head.group(1) if head else ""] = bullet
    return found


def test_every_command_has_its_bullet() -> None:
    assert set(every_option_section()) == {*COMMANDS, ""}  # "" : before the command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_listed_under_its_command(name: str) -> None:
    listed = set(OPTION.findall(every_option_section()[name]))
    assert listed == options(COMMANDS[name])


def test_the_options_before_the_command_are_listed() -> None:
    listed = set(OPTION.findall(every_option_section()[""]))
    assert listed == options(GROUP)


def test_the_option_pattern_reads_pairs_and_skips_dates() -> None:
    text = "`-o/--output FILE`, `--cost/--no-cost`, `YYYY-MM-DD`, `chars/4|calibrated`"
    assert OPTION.findall(text) == ["-o", "--output", "--cost", "--no-cost"]


def keys(value: Any, out: set[str]) -> set[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            out.add(key)
            if key not in {"end_categories", "native_head", "cost"}:  # keyed by data, or
                keys(item, out)  # documented in dataset.md
    elif isinstance(value, list):
        for item in value:
            keys(item, out)
    return out


def test_every_summary_json_key_is_documented() -> None:
    journals = [
        JOURNALS / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl",  # REDACTED in it
        JOURNALS / "spotter-2.1.39-subagents-compaction",  # subagents: `parent`
        JOURNALS / "context-command" / "simonw-cct-pr51_v2.1.2_44baca89.jsonl",  # /context
        PI_FORK,  # a Pi fork: inherited_entries, inherited_requests
    ]
    result = CliRunner().invoke(
        app, ["summary", *map(str, journals), "--json", "--calls", "--cost"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    seen = keys(rows, set())
    conditionals = ("parent", "redacted_placeholders", "native_head", "cost", "per_call")
    for conditional in (*conditionals, "inherited_entries", "inherited_requests"):
        assert conditional in seen  # the inputs above still exercise it
    documented = set(re.findall(r"`([a-z_]+)`", DOC))
    assert sorted(seen - documented) == []


def test_discover_json_keys_are_documented(tmp_path: Path) -> None:
    projects = tmp_path / "projects" / "-work-app"
    projects.mkdir(parents=True)
    shutil.copy(JOURNALS / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl", projects)
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path), "HOME": str(tmp_path / "home")}
    result = CliRunner(env=env).invoke(app, ["discover", "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)
    assert row["harness"] == "claude-code"
    bullet = every_option_section()["discover"]
    assert sorted(k for k in row if f"`{k}`" not in bullet) == []


def test_a_bad_since_names_both_forms_the_help_offers() -> None:
    result = CliRunner().invoke(app, ["discover", "--since", "yesterday"])
    assert result.exit_code == 2
    assert "YYYY-MM-DD or an ISO time" in render_help("discover")
    assert "(use YYYY-MM-DD or an ISO time)" in result.stderr


def test_a_time_written_with_a_space_is_the_iso_time_it_means() -> None:
    """`--since "2026-01-05 10:00"` was refused as not a date; RFC 3339 allows the space."""
    from agent_profiler.options import moment, moment_ns

    assert moment_ns("2026-01-05 10:00") == moment_ns("2026-01-05T10:00") is not None
    assert moment_ns("2026-01-05 10:00") != moment_ns("2026-01-05")
    assert moment(" 2026-01-05 10:00:30Z ") == "2026-01-05 10:00:30Z"
    assert moment_ns("2026-01-05 soon") is None


def render_help(command: str) -> str:
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=200)
    return " ".join(result.output.split())


def test_the_estimate_error_is_given_from_one_request_after_the_first() -> None:
    """commands.md once said null "with fewer than two such requests"; one is enough."""
    journal = JOURNALS / "handmade" / "hidden.jsonl"  # two requests, both with a size
    result = CliRunner().invoke(app, ["summary", str(journal), "--json"])
    (row,) = json.loads(result.stdout)
    assert row["estimate_error_requests"] == 1
    assert row["estimate_error_median"] is not None
    assert "null when there is no such request" in " ".join(DOC.split())


def test_export_format_json_names_its_default_output_as_documented(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(JOURNALS / "handmade" / "hidden.jsonl", tmp_path)
    result = CliRunner().invoke(app, ["export", "hidden.jsonl", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hidden.json", "hidden.jsonl"]
    assert json.loads((tmp_path / "hidden.json").read_text())["traceEvents"]
    assert "with --format json ./<journal>.json, ./<journal>.trace.json for a .json journal" in (
        render_help("export")
    )
    assert "`<journal name>.pftrace` (`.json` with `--format json`;" in " ".join(DOC.split())
    # A `.json` journal (Gemini CLI, OpenCode) was its own default output: refused as "a
    # journal this reads", exit 2.
    shutil.copy(JOURNALS.parent / "opencode" / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json", ".")
    result = CliRunner().invoke(
        app, ["export", "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.json", "--format", "json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads((tmp_path / "ses_fd4c895f0ffe6gKgxHiEgiQCcd.export.trace.json").read_bytes())
    assert "`.trace.json` for a `.json` journal" in " ".join(DOC.split())
