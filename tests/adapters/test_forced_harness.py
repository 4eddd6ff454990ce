"""A forced wrong `--harness` (issue 15, point 5): when it makes nothing of a file, every command
says so by the file's name and exits 1, instead of writing an empty trace with exit 0. Records
an adapter does not recognise are reported as not recognised, never as skipped on purpose."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.diagnostics import shown_path
from samples import (
    CLAUDE_SMALL,
    CODEX_SMALL,
    GEMINI_DOCUMENT,
    GEMINI_JSONL,
    MUSE_SINGLE_TURN,
    OPENCODE_EXPLORE,
    PI_LARGE,
)

JOURNALS = {
    "claude-code": CLAUDE_SMALL,
    "codex": CODEX_SMALL,
    "pi": PI_LARGE,
    "muse": MUSE_SINGLE_TURN,
    "gemini-cli": GEMINI_DOCUMENT,
    "gemini-cli-jsonl": GEMINI_JSONL,
    "opencode": OPENCODE_EXPLORE,
}
# A Gemini CLI session is a JSON document (≤0.38) or a JSONL log (≥0.39): both are read as
# other harnesses, and other harnesses' journals are read as Gemini CLI and OpenCode.
HARNESSES = [name for name in JOURNALS if not name.endswith("-jsonl")]


def harness_of(label: str) -> str:
    return label.removesuffix("-jsonl")


WRONG = [
    (forced, actual) for forced in HARNESSES for actual in JOURNALS if forced != harness_of(actual)
]
runner = CliRunner()


def invoke(command: str, paths: list[Path], harness: str, tmp: Path) -> tuple[int, str, str]:
    args = [command, *map(str, paths), "--harness", harness]
    if command == "export":
        args += ["-o", str(tmp / "t.pftrace")]
    elif command == "report":
        args += ["-o", str(tmp / "t.html")]
    else:
        args.append("--json")
    result = runner.invoke(app, args)
    assert "Traceback" not in result.stderr
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("command", ["export", "summary", "report"])
@pytest.mark.parametrize(("forced", "actual"), WRONG, ids=[f"{f}-on-{a}" for f, a in WRONG])
def test_a_wrong_harness_is_an_error_naming_the_file(
    command: str, forced: str, actual: str, tmp_path: Path
) -> None:
    # GIVEN a real journal of one harness, read as another
    path = JOURNALS[actual]
    # WHEN any command is forced to the wrong harness
    code, _, stderr = invoke(command, [path], forced, tmp_path)
    # THEN exit 1 and one error line naming the file and what it looks like
    assert code == 1, stderr
    errors = [
        line for line in stderr.splitlines() if line.startswith(f"error: {shown_path(str(path))}: ")
    ]
    assert len(errors) == 1, stderr
    name = harness_of(actual)
    looks = f"looks like {'an' if name == 'opencode' else 'a'} {name} journal"
    assert f"reads as {forced}" in errors[0] and looks in errors[0]
    assert not (tmp_path / "t.pftrace").exists() and not (tmp_path / "t.html").exists()
    # the one line says it all: the wrong adapter's "not recognised" records are not listed
    assert "not recognised" not in stderr and f"first {forced}:" not in stderr


def test_the_right_file_beside_the_wrong_one_is_still_exported(tmp_path: Path) -> None:
    # GIVEN a Pi session and a Codex rollout, both read as Pi
    code, stdout, stderr = invoke("summary", [JOURNALS["pi"], JOURNALS["codex"]], "pi", tmp_path)
    # THEN the Codex file is an error, the Pi session is summarised, exit 1 at the end
    assert code == 1
    assert f"error: {shown_path(str(JOURNALS['codex']))}: nothing in it reads as pi" in stderr
    assert [row["harness"] for row in json.loads(stdout)] == ["pi"]


def test_records_of_an_unknown_type_are_not_called_skipped_on_purpose(tmp_path: Path) -> None:
    # GIVEN a real Claude Code transcript with a record of a type no build writes (yet)
    lines = JOURNALS["claude-code"].read_bytes().split(b"\n")
    lines.insert(1, b'{"type":"hologram","sessionId":"11111111-2222-4333-8444-555555555555"}')
    path = tmp_path / "future.jsonl"
    path.write_bytes(b"\n".join(lines))
    # WHEN exported
    result = runner.invoke(app, ["export", str(path), "-o", str(tmp_path / "t.pftrace")])
    # THEN it is listed as not recognised, and the on-purpose list does not name it
    assert result.exit_code == 0, result.stderr
    lines_out = result.stderr.splitlines()
    on_purpose = next(x for x in lines_out if x.startswith("skipped on purpose"))
    assert "hologram" not in on_purpose
    assert "not recognised (not read): claude:hologram 1" in result.stderr


def _not_recognised_line(path: Path, tmp: Path) -> tuple[str, str]:
    on_purpose, unknown, _ = _not_recognised_lines(path, tmp)
    return on_purpose, unknown


def _not_recognised_lines(path: Path, tmp: Path) -> tuple[str, str, list[str]]:
    """The on-purpose line, the not-recognised line and the `  first <kind>: <where>`
    lines after it (issue 28: where the first record of each unknown kind is)."""
    result = runner.invoke(app, ["export", str(path), "-o", str(tmp / "t.pftrace")])
    assert result.exit_code == 0, result.stderr
    lines_out = result.stderr.splitlines()
    on_purpose = next((x for x in lines_out if x.startswith("skipped on purpose")), "")
    unknown = next((x for x in lines_out if x.startswith("not recognised (not read)")), "")
    firsts = [x for x in lines_out if x.startswith("  first ")]
    return on_purpose, unknown, firsts


def test_gemini_records_of_an_unknown_type_are_not_recognised(tmp_path: Path) -> None:
    # GIVEN a real Gemini CLI log (≥0.39) with a message type and a line no build writes
    lines = JOURNALS["gemini-cli-jsonl"].read_bytes().split(b"\n")
    lines.insert(2, b'{"id":"h1","timestamp":"2026-04-24T23:16:30.000Z","type":"hologram"}')
    lines.insert(3, b'{"hologram":true}')
    lines.insert(
        4,
        b'{"id":"h2","timestamp":"2026-04-24T23:16:31.000Z","type":"user",'
        b'"content":[{"text":"hi"},{"hologramPart":{"a":1}}]}',
    )
    path = tmp_path / "session-future.jsonl"
    path.write_bytes(b"\n".join(lines))
    # WHEN exported
    on_purpose, unknown, firsts = _not_recognised_lines(path, tmp_path)
    # THEN all are listed as not recognised, none as skipped on purpose, each with the
    # line of its first record
    assert "hologram" not in on_purpose and "untyped" not in on_purpose
    assert "gemini-cli:hologram 1" in unknown and "gemini-cli:untyped 1" in unknown
    assert "gemini-cli:part/hologramPart 1" in unknown
    # (each named as stderr names a journal: `shown_path`, never absolute)
    assert f"  first gemini-cli:hologram: {path.name}:3" in firsts
    assert f"  first gemini-cli:untyped: {path.name}:4" in firsts
    assert f"  first gemini-cli:part/hologramPart: {path.name}:5" in firsts


def test_gemini_document_messages_of_an_unknown_type_are_not_recognised(
    tmp_path: Path,
) -> None:
    # GIVEN a real ≤0.38 session document with a message of an unknown type
    document = json.loads(JOURNALS["gemini-cli"].read_text())
    document["messages"].insert(1, {"id": "h1", "type": "hologram", "content": "?"})
    path = tmp_path / "session.json"
    path.write_text(json.dumps(document, indent=2))
    on_purpose, unknown, firsts = _not_recognised_lines(path, tmp_path)
    assert "hologram" not in on_purpose
    assert "gemini-cli:hologram 1" in unknown
    # a document has no lines per message: the file and the message's place in it
    assert firsts == [f"  first gemini-cli:hologram: {path.name} (messages[1])"]


def test_opencode_parts_and_messages_of_an_unknown_type_are_not_recognised(
    tmp_path: Path,
) -> None:
    # GIVEN a real OpenCode export with a part type and a message role no build writes
    export = json.loads(JOURNALS["opencode"].read_text())
    export["messages"][1]["parts"].append({"id": "prt_x", "type": "hologram"})
    export["messages"].append({"info": {"id": "msg_x", "role": "oracle"}, "parts": []})
    path = tmp_path / "ses_future.export.json"
    path.write_text(json.dumps(export))
    on_purpose, unknown, firsts = _not_recognised_lines(path, tmp_path)
    assert "hologram" not in on_purpose and "oracle" not in on_purpose
    assert "opencode:part/hologram 1" in unknown and "opencode:message/oracle 1" in unknown
    message = export["messages"][1]["info"]["id"]
    assert f"  first opencode:part/hologram: {path.name} (message {message})" in firsts
    assert f"  first opencode:message/oracle: {path.name} (message msg_x)" in firsts


@pytest.mark.parametrize(
    ("forced", "actual"),
    [("claude-code", "gemini-cli"), ("opencode", "gemini-cli-jsonl"), ("gemini-cli", "opencode")],
)
def test_open_with_a_wrong_harness_names_the_file(
    forced: str, actual: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_profiler import cli

    served: list[Path] = []
    monkeypatch.setattr(cli, "serve_once", lambda path, **_: served.append(path) or True)
    path = JOURNALS[actual]
    result = runner.invoke(app, ["open", str(path), "--harness", forced, "--no-browser"])
    assert result.exit_code == 1 and not served
    assert f"error: {shown_path(str(path))}: nothing in it reads as {forced}" in result.stderr
