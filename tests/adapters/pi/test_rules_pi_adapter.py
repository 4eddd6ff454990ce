"""The Pi adapter's reading rules beyond the categories (tests/adapters/pi/test_rules_pi.py): which
files are Pi sessions, the header, times, damaged entries and the facts a session reports.
Pinned on real v1 records of tests/data/journals/pi, edited where the corpus has no example (no
real v3 file, image, plain-string content or extension record is known: the docstring says so)."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from test_pi import read

from agent_profiler.adapters import pi, pi_records
from agent_profiler.diagnostics import Diagnostics, shown_path
from agent_profiler.estimate import TextClass, calibrated, use_estimator
from agent_profiler.model import AnchorKind, Category, Harness, Session, SourceKind
from rules_spy import by_id, excerpt, raw_lines, record, spy, write
from samples import PI_FORK, pi_fork_source
from shared_paths import TESTS

DATA = TESTS / "data" / "journals" / "pi"
LARGE = DATA / "pi-mono_large-session_v1.jsonl"
# The corpus fork's source, as the fork holds it (same line numbers): the fork itself
# (PI_FORK) made no request of its own, its copied entries are all its source's.
COMPACTING = pi_fork_source()
MS = 1_000_000


def _warnings(diagnostics: Diagnostics) -> list[str]:
    """Each warning as the user reads it: `path:line: message`, with the file's name only."""
    return [f"{Path(w.path).name}:{w.line}: {w.message}" for w in diagnostics.warnings]


def _header(**edits: Any) -> dict[str, Any]:
    """The real v1 header of the large session (line 1), fields set or (None) removed."""
    value = record(LARGE, 1)
    for key, new in edits.items():
        if new is None:
            value.pop(key, None)
        else:
            value[key] = new
    return value


def iso_ns(text: str) -> int:
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000) * MS


def _epoch_ms(iso_line: int) -> int:
    """The entry time of a LARGE line, in epoch ms (its ISO `timestamp`)."""
    return iso_ns(record(LARGE, iso_line)["timestamp"]) // MS


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    ("edits", "is_pi"),
    [
        ({}, True),  # the real v1 header: cwd, provider and modelId, no version
        ({"provider": None, "modelId": None}, True),  # cwd alone
        ({"cwd": None}, True),  # provider and modelId (an old v1 header)
        ({"cwd": None, "modelId": None}, False),  # a provider alone is not enough
        ({"cwd": None, "provider": None}, False),
        ({"cwd": None, "provider": None, "modelId": None, "version": 3}, True),
        ({"cwd": None, "provider": None, "modelId": None, "version": True}, False),
        ({"cwd": None, "provider": None, "modelId": None, "version": "3"}, False),
        ({"cwd": None, "provider": None, "modelId": None}, False),
        ({"payload": {}}, False),  # a Codex line
        ({"sessionId": "x"}, False),  # a Claude Code record
        ({"id": None}, False),
        ({"id": 7}, False),
        ({"type": "message"}, False),
        ({"type": "Session"}, False),
    ],
)
def test_a_pi_session_opens_with_its_own_header(edits: dict[str, Any], is_pi: bool) -> None:
    assert pi.detect([_header(**edits), record(LARGE, 2)]) is is_pi


def test_only_the_first_record_can_be_the_header() -> None:
    assert pi.detect([record(LARGE, 2), _header()]) is False
    assert pi.detect([["session"], _header()]) is False
    assert pi.detect([]) is False
    assert pi.detect([_header()]) is True


# --------------------------------------------------------------------------- times


def _request_start(tmp_path: Path, timestamp: object) -> tuple[int, Session]:
    """LARGE lines 1, 5, 6 with the message time of the request (line 6) replaced."""
    edited = record(LARGE, 6)
    if timestamp is None:
        del edited["message"]["timestamp"]
    else:
        edited["message"]["timestamp"] = timestamp
    (session, _, _) = read(write(tmp_path, [record(LARGE, 1), record(LARGE, 5), edited]))
    (response,) = session.responses
    return response.start_ns, session


def test_a_request_starts_when_its_message_was_created(tmp_path: Path) -> None:
    """Line 6 was created at 1763681630793 ms and appended at 23:33:54.572 (3.8 s later)."""
    start, session = _request_start(tmp_path, record(LARGE, 6)["message"]["timestamp"])
    assert start == 1763681630793 * MS
    assert (session.harness, session.sources) == (Harness.PI, (str(tmp_path / "edited.jsonl"),))
    assert session.models == ("claude-sonnet-4-5",)  # the header's model is not added again
    (response,) = session.responses
    assert response.end_ns == _epoch_ms(6) * MS
    # the v1 header is written after the first entries: the session starts at the first
    # message's own creation time (line 5, 1763681630791), before any ISO time
    assert session.start_ns == 1763681630791 * MS
    assert session.end_ns == _epoch_ms(6) * MS


@pytest.mark.parametrize(
    "damaged",
    [None, "1763681630793", True, 0, -5, 2**53],
    ids=["missing", "text", "bool", "zero", "negative", "too-large"],
)
def test_a_damaged_message_time_falls_back_to_the_entry_time(
    tmp_path: Path, damaged: object
) -> None:
    start, _ = _request_start(tmp_path, damaged)
    assert start == _epoch_ms(6) * MS


def test_a_message_time_after_its_entry_or_a_day_before_is_not_used(tmp_path: Path) -> None:
    appended = _epoch_ms(6)
    assert _request_start(tmp_path, appended + 1)[0] == appended * MS  # after: damage
    day = 24 * 3600 * 1000
    assert _request_start(tmp_path, appended - day)[0] == (appended - day) * MS  # at the limit
    assert _request_start(tmp_path, appended - day - 1)[0] == appended * MS
    assert _request_start(tmp_path, appended)[0] == appended * MS  # no lead at all
    start, _ = _request_start(tmp_path, float(appended - 1000))  # a float is fine
    assert start == (appended - 1000) * MS


# --------------------------------------------------------------------------- what enters


def test_a_truncated_shell_command_names_its_full_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 1002 of the compacting session: `find .` cut at 51,199 characters, its full output
    saved to a file the model is told about. With no request after it, the final branch is
    what the session ends with."""
    message = record(COMPACTING, 1002)["message"]
    assert message["truncated"] is True
    added = spy(monkeypatch)
    session, _, _ = read(excerpt(tmp_path, COMPACTING, [1, 1002]))
    got = by_id(added)["line-2:bash"]
    tail = (
        "\n```\n\n[Output truncated. Full output: "
        "/var/folders/49/l4171l3n219_xwq30fmyzr8w0000gn/T/pi-bash-a4cd2460b5b4e0be.log]"
    )
    assert (
        pi_records.bash_execution_text(message) == "Ran `find .`\n```\n" + message["output"] + tail
    )
    assert (got.category, got.label, got.chars) == (
        Category.RESULTS,
        "User shell command (!)",
        len("Ran `find .`\n```\n") + 51_199 + len(tail),
    )
    assert (got.source_id, got.source_kind) == ("", SourceKind.NONE)
    (snapshot,) = session.snapshots
    assert dict(snapshot.categories)[Category.RESULTS] == got.tokens == -(-got.chars // 4)


@pytest.mark.parametrize(
    ("edits", "text"),
    [
        ({}, "Ran `ls`\n```\na\nb\n```"),
        ({"output": ""}, "Ran `ls`\n(no output)"),
        ({"output": None}, "Ran `ls`\n(no output)"),
        ({"command": None}, "Ran ``\n```\na\nb\n```"),
        ({"exitCode": 2}, "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 2"),
        ({"exitCode": -1}, "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code -1"),
        ({"exitCode": True}, "Ran `ls`\n```\na\nb\n```"),  # damage, not a code
        ({"exitCode": "2"}, "Ran `ls`\n```\na\nb\n```"),
        ({"cancelled": True, "exitCode": 130}, "Ran `ls`\n```\na\nb\n```\n\n(command cancelled)"),
        ({"truncated": True}, "Ran `ls`\n```\na\nb\n```"),  # no path to name
        ({"fullOutputPath": "/tmp/o.log"}, "Ran `ls`\n```\na\nb\n```"),  # not truncated
        (
            {"truncated": True, "fullOutputPath": "/tmp/o.log", "exitCode": 1},
            "Ran `ls`\n```\na\nb\n```\n\nCommand exited with code 1"
            "\n\n[Output truncated. Full output: /tmp/o.log]",
        ),
    ],
)
def test_a_shell_command_is_sent_as_pi_words_it(edits: dict[str, Any], text: str) -> None:
    """Pi's `bashExecutionToText` on line 640 of the compacting session (`ls`, exit 0),
    its output shortened to two lines and then edited: codes, cancel and truncation have no
    real example in the corpus."""
    message = record(COMPACTING, 640)["message"]
    message["output"] = "a\nb"
    for key, value in edits.items():
        if value is None:
            del message[key]
        else:
            message[key] = value
    assert pi_records.bash_execution_text(message) == text


def test_prompt_content_as_a_plain_string_or_with_images(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 5's prompt, edited: Pi's `UserMessage.content` may be a plain string, and a list
    may hold images (counted, not estimated) and blocks the reader does not know (skipped,
    the blocks after them still read). The corpus has neither."""
    text = record(LARGE, 5)["message"]["content"][0]["text"]
    plain = record(LARGE, 5)
    plain["message"]["content"] = text
    added = spy(monkeypatch)
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), plain, record(LARGE, 6)]))
    got = by_id(added)["line-2:0"]
    assert (got.category, got.chars, got.label) == (Category.PROMPTS, len(text), "User prompt")
    assert session.unmeasured == ()
    (prompt,) = session.prompts
    assert (prompt.id, prompt.chars, prompt.preview) == ("line-2", len(text), text[:200])
    assert prompt.start_ns == 1763681630791 * MS  # the message's own time
    mixed = record(LARGE, 5)
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    mixed["message"]["content"] = [
        image,
        "not a block",
        {"type": "text"},
        {"type": "text", "text": "look"},
        image,
        {"type": "text", "text": text},
    ]
    added.clear()
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), mixed, record(LARGE, 6)]))
    prompts = [a for a in added if a.id.startswith("line-2:")]
    assert [(a.id, a.chars) for a in prompts] == [("line-2:3", 4), ("line-2:5", len(text))]
    assert session.unmeasured == (("image", 2),)
    (prompt,) = session.prompts
    assert (prompt.chars, prompt.preview) == (4 + len(text), "look")


def test_a_prompt_of_images_only_is_still_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 5 with its text replaced by one image (hand-edited): the user asked something,
    of 0 estimated characters; an empty prompt is no prompt at all."""
    edited = record(LARGE, 5)
    edited["message"]["content"] = [{"type": "image", "data": "iVBORw0KGgo="}]
    added = spy(monkeypatch)
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), edited, record(LARGE, 6)]))
    assert not [a for a in added if a.id.startswith("line-2:")]
    (prompt,) = session.prompts
    assert (prompt.id, prompt.chars, prompt.preview) == ("line-2", 0, "")
    assert session.unmeasured == (("image", 1),)
    assert session.responses[0].prompt_id == "line-2"
    edited["message"]["content"] = []
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), edited, record(LARGE, 6)]))
    assert session.prompts == () and session.responses[0].prompt_id is None


# --------------------------------------------------------------------------- the header


def _v3(records: list[dict[str, Any]], version: object = 3) -> list[dict[str, Any]]:
    """Real v1 records made v3 the way Pi migrates them (`migrateV1ToV2`): each entry gets an
    id and its predecessor as parent, the header a version and no v1 model fields."""
    header, *entries = (copy.deepcopy(r) for r in records)
    header = {k: v for k, v in header.items() if k not in ("provider", "modelId")}
    header["version"] = version
    parent = None
    for n, entry in enumerate(entries):
        entry["id"], entry["parentId"] = f"e{n}", parent
        parent = entry["id"]
    return [header, *entries]


def test_the_session_is_named_by_its_header(tmp_path: Path) -> None:
    session, _, diagnostics = read(excerpt(tmp_path, PI_FORK, [1, 359]))
    facts = dict(session.facts)
    # a fork names the file it came from, by its name only (the path holds a user name)
    assert facts["forked_from"] == (
        "2025-12-09T00-52-54-397Z_d97339c6-6c10-4827-846b-9ff1d9c3dc37.jsonl"
    )
    assert session.session_id == "ffae836b-9420-4060-ac13-7745215f90ff"
    assert (session.project, facts["thinking_level"]) == ("pi-mono", "off")
    assert facts["session_version"] == "1 (migrated in memory)"
    assert diagnostics.warning_total == 0
    # v3 calls the same link `parentSession`
    header = record(PI_FORK, 1)
    del header["branchedFrom"]
    header["parentSession"] = "/home/u/.pi/agent/sessions/--w--/2026-01-01_abc.jsonl"
    header["timestamp"] = "2025-12-08T23:00:00.000Z"  # forked before it: line 359 is its own
    session, _, _ = read(write(tmp_path, _v3([header, record(COMPACTING, 359)])))
    facts = dict(session.facts)
    assert facts["forked_from"] == "2026-01-01_abc.jsonl"
    assert facts["session_version"] == "3"
    assert "thinking_level" in facts and session.provider == "anthropic"


@pytest.mark.parametrize(
    ("version", "fact"),
    [
        (2, "2 (migrated in memory)"),
        (True, "1 (migrated in memory)"),
        ("3", "1 (migrated in memory)"),
    ],
)
def test_an_older_or_damaged_version_is_migrated(
    tmp_path: Path, version: object, fact: str
) -> None:
    session, _, diagnostics = read(
        write(tmp_path, _v3([record(LARGE, 1), record(LARGE, 5), record(LARGE, 6)], version))
    )
    assert dict(session.facts)["session_version"] == fact
    assert diagnostics.warning_total == 0
    assert [r.id for r in session.responses] == (["e1"] if version == 2 else ["line-3"])


def test_a_newer_version_is_read_as_v3_with_a_warning(tmp_path: Path) -> None:
    path = write(tmp_path, _v3([record(LARGE, 1), record(LARGE, 5), record(LARGE, 6)], 4))
    session, _, diagnostics = read(path)
    assert [(w.kind, w.line) for w in diagnostics.warnings] == [("unknown-version", 1)]
    assert _warnings(diagnostics) == [
        "edited.jsonl:1: session version 4 is newer than 3; read as v3"
    ]
    assert dict(session.facts)["session_version"] == "4"
    assert [r.id for r in session.responses] == ["e1"]  # ids read, not line numbers
    current = write(tmp_path, _v3([record(LARGE, 1), record(LARGE, 5), record(LARGE, 6)], 3))
    assert read(current)[2].warnings == []  # v3 itself is no newer version


def test_a_second_header_is_skipped(tmp_path: Path) -> None:
    """A header repeated in the middle of the file (hand-made: the real header again, another
    id and a fork link): the first one names the session."""
    other = record(LARGE, 1)
    other.update(id="99999999-0000-4000-8000-000000000000", branchedFrom="/x/other.jsonl")
    path = write(tmp_path, [record(LARGE, 1), record(LARGE, 5), other, record(LARGE, 6)])
    session, _, diagnostics = read(path)
    assert diagnostics.skipped["pi:repeated-header"] == 1
    assert session.session_id == "d703a1a9-1b7b-4fb1-b512-c9738b1fe617"
    assert "forked_from" not in dict(session.facts)
    assert diagnostics.warning_total == 0
    assert [r.id for r in session.responses] == ["line-4"]


def test_without_a_header_the_file_names_the_session(tmp_path: Path) -> None:
    path = excerpt(tmp_path, LARGE, [5, 6], name="2025-11-20_abc.jsonl")
    session, _, diagnostics = read(path)
    assert _warnings(diagnostics) == [
        "2025-11-20_abc.jsonl:1: no session header before the first entry; read as v1"
    ]
    assert session.session_id == "2025-11-20_abc"
    assert session.project is None and session.models == ("claude-sonnet-4-5",)
    assert [r.id for r in session.responses] == ["line-2"]
    assert dict(session.facts)["session_version"] == "1 (migrated in memory)"
    # an entry with an id says v3
    entries = _v3([record(LARGE, 1), record(LARGE, 5), record(LARGE, 6)])[1:]
    session, _, diagnostics = read(write(tmp_path, entries, name="v3.x.jsonl"))
    assert _warnings(diagnostics) == [
        "v3.x.jsonl:1: no session header before the first entry; read as v3"
    ]
    assert session.session_id == "v3" and [r.id for r in session.responses] == ["e1"]
    assert dict(session.facts)["session_version"] == "3"


def test_an_empty_file_is_no_session(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n\n")
    diagnostics = Diagnostics()
    assert pi.read_session(path, diagnostics).finish() is None
    assert pi.read_sessions([path, excerpt(tmp_path, LARGE, [1, 5, 6])], diagnostics)[
        0
    ].session_id == ("d703a1a9-1b7b-4fb1-b512-c9738b1fe617")
    assert len(pi.read_sessions([path], diagnostics)) == 0


def test_without_a_measured_request_the_header_model_and_final_branch_stand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 1–3 of the large session: a prompt and an aborted request without usage."""
    added = spy(monkeypatch)
    session, _, _ = read(excerpt(tmp_path, LARGE, [1, 2, 3]))
    assert session.responses == () and [r.id for r in session.failed_requests] == ["line-3"]
    assert (session.models, session.provider) == (("claude-sonnet-4-5",), "anthropic")
    (snapshot,) = session.snapshots
    assert snapshot.anchor is AnchorKind.SESSION and snapshot.model == "claude-sonnet-4-5"
    assert snapshot.time_ns == session.end_ns == _epoch_ms(1) * MS  # the header, written last
    assert [a.id for a in added] == ["line-2:0"]  # the aborted message is not replayed
    assert dict(snapshot.categories)[Category.PROMPTS] == 2  # "/mode"
    facts = dict(session.facts)
    assert facts["requests_without_usage"] == "1 (aborted: 1)"
    assert "requests_by_thinking_level" not in facts and "providers" not in facts


# --------------------------------------------------------------------------- extension messages


def test_an_extension_message_counts_its_images_with_the_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hand-edited (the corpus has no extension record): line 5's prompt with one image, then
    a `custom_message` entry without a `customType` holding two images and a text, then the
    request of line 6."""
    prompt = record(LARGE, 5)
    prompt["message"]["content"].append({"type": "image", "data": "iVBORw0KGgo="})
    image = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    injected = {
        "type": "custom_message",
        "timestamp": prompt["timestamp"],
        "content": [image, {"type": "text", "text": "branch: main"}, image],
        "display": False,
    }
    added = spy(monkeypatch)
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), prompt, injected, record(LARGE, 6)]))
    got = by_id(added)["line-3:1"]
    assert (got.category, got.label, got.chars) == (
        Category.ENVIRONMENT,
        "Extension message (?)",
        12,
    )
    assert session.unmeasured == (("image", 3),)
    assert [p.id for p in session.prompts] == ["line-2"]  # an extension message is no prompt


# --------------------------------------------------------------------------- damaged entries


def test_damaged_lines_and_entries_warn_with_their_line(tmp_path: Path) -> None:
    """Real records damaged by hand: a line that is not an object, a message entry without
    its message; each warns once, and the session reads on."""
    no_message = record(LARGE, 5)
    del no_message["message"]
    path = tmp_path / "damaged.jsonl"
    lines = [raw_lines(LARGE)[0], "[1, 2]", json.dumps(no_message), *raw_lines(LARGE)[4:6]]
    path.write_text("\n".join(lines) + "\n")
    session, _, diagnostics = read(path)
    assert _warnings(diagnostics) == [
        "damaged.jsonl:2: line is not a JSON object",
        "damaged.jsonl:3: message entry without a message",
    ]
    assert [r.id for r in session.responses] == ["line-5"]
    assert session.responses[0].prompt_id == "line-4"


def test_damaged_tree_links_in_v3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LARGE lines 1, 2, 5, 6, 17 made v3, then damaged by hand: an entry without an id is
    linked to the previous entry; a repeated id is read under its line's id with its own
    parent; a parent that is no earlier entry makes a root; a parent that is not a string
    is no parent."""
    header, first, prompt, answer, final = _v3([record(LARGE, n) for n in (1, 2, 5, 6, 17)])
    del prompt["id"]  # e1: linked to e0 (the first prompt)
    answer["parentId"] = "e1"  # names the id the prompt lost: no earlier entry
    final["id"] = "e0"  # repeats the first prompt's id
    final["parentId"] = 7
    path = write(tmp_path, [header, first, prompt, answer, final])
    added = spy(monkeypatch)
    session, builder, diagnostics = read(path)
    assert _warnings(diagnostics) == [
        "edited.jsonl:3: entry without an id; linked to the previous entry",
        "edited.jsonl:4: parentId 'e1' is not an earlier entry; read as a root",
        "edited.jsonl:5: entry id 'e0' repeats; this one is read as 'line-5'",
    ]
    assert diagnostics.warning_counts == {"bad-shape": 3}
    assert [(e.id, e.parent) for e in builder.entries.values()] == [
        ("e0", None),
        ("line-3", "e0"),
        ("e2", None),
        ("line-5", None),
    ]
    assert [r.id for r in session.responses] == ["e2", "line-5"]
    # the root e2 holds no prompt: its request's context is empty of prompts
    assert [r.prompt_id for r in session.responses] == [None, None]
    assert not [a for a in added if a.category is Category.PROMPTS]
    assert dict(session.facts)["entries_off_final_branch"] == 3


def test_a_repeated_id_keeps_its_own_parent(tmp_path: Path) -> None:
    """LARGE lines 1, 5, 6, 17 made v3; line 17 repeats line 6's id but names line 5 as its
    parent, which it is (hand-edited)."""
    header, prompt, answer, final = _v3([record(LARGE, n) for n in (1, 5, 6, 17)])
    final["id"], final["parentId"] = "e1", "e0"
    session, builder, diagnostics = read(write(tmp_path, [header, prompt, answer, final]))
    assert builder.entries["line-4"].parent == "e0"
    assert [r.prompt_id for r in session.responses] == ["e0", "e0"]
    assert dict(session.facts)["entries_off_final_branch"] == 1  # the first answer
    assert _warnings(diagnostics) == [
        "edited.jsonl:4: entry id 'e1' repeats; this one is read as 'line-4'"
    ]


# --------------------------------------------------------------------------- assistant messages


def test_thinking_the_model_cannot_read_is_counted_not_estimated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines 13–18 of the compacting session, the thinking of line 14 marked redacted and that
    of line 16 emptied to its signature (Pi keeps both shapes; the corpus has neither): no
    item for either, one count each. Thinking with neither text nor signature is nothing."""
    redacted = record(COMPACTING, 14)
    redacted["message"]["content"][0]["redacted"] = True
    encrypted = record(COMPACTING, 16)
    encrypted["message"]["content"][0]["thinking"] = ""
    lines = [record(COMPACTING, n) for n in (1, 13)] + [redacted, record(COMPACTING, 15)]
    lines += [encrypted] + [record(COMPACTING, n) for n in (17, 18)]
    added = spy(monkeypatch)
    session, _, _ = read(write(tmp_path, lines))
    ids = [a.id for a in added]
    assert "line-3:0" not in ids and "line-5:0" not in ids
    assert "line-3:1" in ids and "line-5:1" in ids  # the text and the call after them
    assert session.unmeasured == (("encrypted-reasoning", 1), ("redacted-thinking", 1))
    del encrypted["message"]["content"][0]["thinkingSignature"]
    lines[4] = encrypted
    added.clear()
    session, _, _ = read(write(tmp_path, lines))
    assert "line-5:0" not in [a.id for a in added]
    assert session.unmeasured == (("redacted-thinking", 1),)


def test_blocks_that_are_not_text_or_calls_are_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 6 of the large session with a string, a text block without text and a call
    without an id put before its real blocks (hand-edited damage): each is skipped, and
    the real text and three calls after them are still read."""
    edited = record(LARGE, 6)
    blocks = edited["message"]["content"]
    edited["message"]["content"] = [
        "junk",
        {"type": "text", "text": None},
        {"type": "toolCall", "name": "read", "arguments": {"path": "x"}},
        *blocks,
    ]
    added = spy(monkeypatch)
    session, _, _ = read(
        write(tmp_path, [record(LARGE, 1), record(LARGE, 5), edited, record(LARGE, 17)])
    )
    got = [(a.id, a.label) for a in added if a.id.startswith("line-3:")]
    (text,) = [a for a in added if a.id == "line-3:3"]
    # the text is the response's own: the Largest additions link it to its response slice
    assert (text.source_id, text.source_kind) == ("line-3", SourceKind.RESPONSE)
    assert got == [
        ("line-3:3", "Assistant text"),
        ("line-3:4", "Tool arguments"),
        ("line-3:5", "Tool arguments"),
        ("line-3:6", "Tool arguments"),
    ]
    assert [t.call_id for t in session.tool_calls] == [b["id"] for b in blocks[1:]]


def test_a_call_without_a_name_is_a_tool_call_named_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line 19 of the large session (one `read` call), its name removed by hand, its result
    and the request after it (line 21)."""
    edited = record(LARGE, 19)
    call = edited["message"]["content"][0]
    del call["name"]
    added = spy(monkeypatch)
    session, _, _ = read(
        write(
            tmp_path,
            [record(LARGE, n) for n in (1, 18)] + [edited, record(LARGE, 20), record(LARGE, 21)],
        )
    )
    got = by_id(added)["line-3:0"]
    arguments = json.dumps(call["arguments"], separators=(",", ":"))
    assert (got.chars, got.source_id, got.source_kind) == (
        len("tool") + len(arguments),
        call["id"],
        SourceKind.TOOL,
    )
    tool = session.tool_calls[0]
    assert (tool.name, tool.call_id, tool.response_id) == ("tool", call["id"], "line-3")
    assert (tool.prompt_id, tool.arg_keys) == ("line-2", ("path",))


def test_usage_that_is_damaged_counts_as_zero(tmp_path: Path) -> None:
    """Line 6's usage damaged by hand: a negative or non-integer count is 0, and usage that is
    not an object makes the request one without a reported size. Its calls then belong to no
    measured response."""
    edited = record(LARGE, 6)
    edited["message"]["usage"].update(input=-3, cacheRead=True, cacheWrite="7", output=2.5)
    lines = [record(LARGE, 1), record(LARGE, 5), edited, record(LARGE, 17)]
    session, _, _ = read(write(tmp_path, lines))
    assert [r.id for r in session.failed_requests] == ["line-3"]
    assert [r.id for r in session.responses] == ["line-4"]
    assert {t.response_id for t in session.tool_calls} == {None}
    edited["message"]["usage"] = [3, 0, 0, 0]
    session, _, _ = read(write(tmp_path, lines))
    (failed,) = session.failed_requests
    assert failed.usage.prompt_tokens == 0 and failed.stop_reason == "toolUse"
    assert failed.is_error is False
    assert dict(session.facts)["requests_without_usage"] == "1 (toolUse: 1)"
    edited["message"]["usage"] = {"input": 3, "cacheRead": 4, "cacheWrite": 5, "output": 6}
    session, _, _ = read(write(tmp_path, lines))
    usage = session.responses[0].usage
    assert (usage.prompt_tokens, usage.input_tokens) == (12, 3)
    assert (usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens) == (4, 5, 6)
    # 10**15 tokens is damage (common.token_count's limit), one below is a count
    limit = 10**15
    edited["message"]["usage"] = {"input": 3, "cacheRead": limit, "cacheWrite": limit, "output": 6}
    session, _, _ = read(write(tmp_path, lines))
    usage = session.responses[0].usage
    assert (usage.prompt_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (3, 0, 0)
    edited["message"]["usage"].update(cacheRead=limit - 1, cacheWrite=limit - 1)
    session, _, _ = read(write(tmp_path, lines))
    usage = session.responses[0].usage
    assert (usage.cache_read_tokens, usage.cache_write_tokens) == (limit - 1, limit - 1)


def test_a_request_without_a_model_or_stop_reason(tmp_path: Path) -> None:
    """Line 6 without `model`, `provider` and `stopReason` (hand-edited): still a measured
    request, of no model; the session falls back on the header's model and provider."""
    edited = record(LARGE, 6)
    for key in ("model", "provider", "stopReason"):
        del edited["message"][key]
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), record(LARGE, 5), edited]))
    (response,) = session.responses
    assert (response.model, response.stop_reason, response.is_error) == ("", None, False)
    assert (session.models, session.provider) == (("claude-sonnet-4-5",), "anthropic")
    (snapshot,) = session.snapshots
    assert snapshot.model is None
    zero = record(LARGE, 3)
    del zero["message"]["stopReason"]
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), record(LARGE, 2), zero]))
    assert dict(session.facts)["requests_without_usage"] == "1 (none: 1)"
    assert session.failed_requests[0].is_error is False


def test_two_providers_are_both_named(tmp_path: Path) -> None:
    """Line 17 of the large session answered by another provider (hand-edited): the session's
    provider is the first one, the fact lists both in order."""
    edited = record(LARGE, 17)
    edited["message"]["provider"] = "openai"
    lines = [record(LARGE, n) for n in (1, 5, 6, 7, 8, 9)] + [edited]
    session, _, _ = read(write(tmp_path, lines))
    assert session.provider == "anthropic"
    assert dict(session.facts)["providers"] == "anthropic, openai"
    session, _, _ = read(write(tmp_path, [record(LARGE, n) for n in (1, 5, 6, 7, 8, 9, 17)]))
    assert session.provider == "anthropic" and "providers" not in dict(session.facts)


# --------------------------------------------------------------------------- tool results


def test_a_failed_tool_result_is_an_error_call(tmp_path: Path) -> None:
    """Lines 39–41 of the large session: the `read` of line 39 fails at line 40."""
    assert record(LARGE, 40)["message"]["isError"] is True
    session, _, _ = read(excerpt(tmp_path, LARGE, [1, 34, 39, 40, 41]))
    (tool, *_) = session.tool_calls
    text = "".join(b["text"] for b in record(LARGE, 40)["message"]["content"])
    assert (tool.call_id, tool.is_error, tool.incomplete) == (
        "toolu_01XrQPnkjYXzpzFGYHBzU2vm",
        True,
        False,
    )
    assert tool.result_chars == len(text)
    # from the call's message (all of it in) to the result's own creation time
    assert (tool.start_ns, tool.end_ns) == (_epoch_ms(39) * MS, 1763683116857 * MS)
    ok = record(LARGE, 40)
    ok["message"]["isError"] = "yes"  # only `true` is an error
    session, _, _ = read(write(tmp_path, [record(LARGE, n) for n in (1, 34, 39)] + [ok]))
    assert session.tool_calls[0].is_error is False


def test_a_result_created_before_its_call_ends_with_the_call(tmp_path: Path) -> None:
    """Line 40's result dated (hand-edited) before its call's entry was written: the call
    lasts no time, rather than ending before it starts."""
    early = record(LARGE, 40)
    early["message"]["timestamp"] = _epoch_ms(39) - 500
    session, _, _ = read(write(tmp_path, [record(LARGE, n) for n in (1, 34, 39)] + [early]))
    (tool,) = session.tool_calls
    assert tool.start_ns == tool.end_ns == _epoch_ms(39) * MS


def test_a_result_without_its_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Line 40 without line 39 (its call), then with its `toolCallId` removed: the result still
    fills the context; it is noted, and names no tool when it has no id. The id-less one is
    hand-edited further: a second text block and two images, one more image in the prompt."""
    added = spy(monkeypatch)
    path = excerpt(tmp_path, LARGE, [1, 34, 40, 41])
    diagnostics = Diagnostics()
    session = pi.read_session(path, diagnostics).finish()
    assert session is not None and diagnostics.notes == {"pi:result-without-call": 1}
    got = by_id(added)["line-3:result"]
    assert (got.category, got.source_id, got.source_kind) == (
        Category.RESULTS,
        "toolu_01XrQPnkjYXzpzFGYHBzU2vm",
        SourceKind.TOOL,
    )
    assert [t.call_id for t in session.tool_calls] == [
        b["id"] for b in record(LARGE, 41)["message"]["content"]
    ]
    anonymous = record(LARGE, 40)
    del anonymous["message"]["toolCallId"]
    image = {"type": "image", "data": "iVBORw0KGgo="}
    text = anonymous["message"]["content"][0]["text"]
    anonymous["message"]["content"] += [image, {"type": "text", "text": "tail"}, image]
    prompt = record(LARGE, 34)
    prompt["message"]["content"].append(image)
    added.clear()
    lines = [record(LARGE, 1), prompt, anonymous, record(LARGE, 41)]
    session, _, diagnostics = read(write(tmp_path, lines))
    got = by_id(added)["line-3:result"]
    assert (got.source_id, got.source_kind) == ("", SourceKind.NONE)
    assert got.chars == len(text) + 4  # the text blocks, joined as they are
    assert diagnostics.notes == {"pi:result-without-call": 1}
    assert session.unmeasured == (("image", 3),)  # the prompt's and the result's


def test_a_call_still_open_when_the_conversation_moves_on(tmp_path: Path) -> None:
    """Line 6's three calls, two results (lines 7, 8), then the next prompt (line 18): the
    third call got no result; it ends when the next entry was written."""
    session, _, _ = read(excerpt(tmp_path, LARGE, [1, 5, 6, 7, 8, 18]))
    calls = {t.call_id: t for t in session.tool_calls}
    third = calls["toolu_016aKHTkjrTJcMds3wsEou2R"]
    assert (third.incomplete, third.end_ns) == (True, _epoch_ms(18) * MS)
    assert third.timing == "journal: call → next entry (no result)"
    assert [t.incomplete for t in session.tool_calls] == [False, False, True]
    assert session.incomplete is False


# --------------------------------------------------------------------------- compaction

SUMMARY_LINES = [1, 356, 357, 358, 359, 360]  # results, answers, then the compaction of line 360


def _compaction(tmp_path: Path, **edits: Any) -> tuple[Session, Diagnostics]:
    """Lines 356–360 of the compacting session; the compaction keeps from parsed entry 3
    (line 358) unless edited (a field set, or removed with None)."""
    value = record(COMPACTING, 360)
    value["firstKeptEntryIndex"] = 3
    for key, new in edits.items():
        if new is None:
            value.pop(key, None)
        else:
            value[key] = new
    lines = [record(COMPACTING, n) for n in SUMMARY_LINES[:-1]] + [value]
    session, _, diagnostics = read(write(tmp_path, lines, name="compaction.jsonl"))
    return session, diagnostics


def test_a_compaction_keeps_from_its_first_kept_entry(tmp_path: Path) -> None:
    session, diagnostics = _compaction(tmp_path)
    assert diagnostics.warning_total == 0
    (compaction,) = session.compactions
    assert (compaction.id, compaction.trigger, compaction.pre_tokens) == ("line-6", None, 175_004)
    # line 356's result and line 357's text and call left; 358 stayed, 359 came in
    assert compaction.removed_items == 3
    assert compaction.timing == "previous entry → compaction entry"
    assert (compaction.start_ns, compaction.end_ns) == (
        iso_ns(record(COMPACTING, 359)["timestamp"]),
        iso_ns(record(COMPACTING, 360)["timestamp"]),
    )
    snapshot = session.snapshots[-1]
    assert snapshot.anchor is AnchorKind.COMPACTION and snapshot.anchor_id == "line-6"
    removed = sorted(c.id for c in snapshot.changes if c.change.value == "removed")
    assert removed == ["line-2:result", "line-3:0", "line-3:1"]
    summary = len(record(COMPACTING, 360)["summary"]) + 107
    added = {c.id: c for c in snapshot.changes if c.change.value == "added"}
    assert sorted(added) == ["line-5:0", "line-6:summary"]
    assert added["line-6:summary"].chars == summary
    assert added["line-6:summary"].category is Category.SUMMARIES


def test_a_compaction_keeps_from_an_entry_id_in_v3(tmp_path: Path) -> None:
    """The same lines made v3: `firstKeptEntryId` names the entry (e2, line 358) and wins
    over an index."""
    lines = _v3([record(COMPACTING, n) for n in SUMMARY_LINES])
    lines[-1]["firstKeptEntryId"] = "e2"
    lines[-1]["firstKeptEntryIndex"] = 1
    session, _, diagnostics = read(write(tmp_path, lines))
    assert diagnostics.warning_total == 0
    assert session.compactions[0].removed_items == 3


@pytest.mark.parametrize("index", [99, 6, 0, -1])
def test_a_first_kept_index_that_names_no_entry_keeps_nothing(tmp_path: Path, index: int) -> None:
    """Index 0 is the header, 6 is one past the last line, 99 and -1 are outside the file."""
    session, diagnostics = _compaction(tmp_path, firstKeptEntryIndex=index)
    assert _warnings(diagnostics) == [
        f"compaction.jsonl:6: firstKeptEntryIndex {index} names no entry; nothing kept"
    ]
    assert session.compactions[0].removed_items == 4  # 356, 357 (two), 358


@pytest.mark.parametrize("index", [True, "3", None])
def test_a_first_kept_index_that_is_not_a_number_is_none(tmp_path: Path, index: object) -> None:
    session, diagnostics = _compaction(tmp_path, firstKeptEntryIndex=index)
    assert diagnostics.warning_total == 0
    assert session.compactions[0].removed_items == 4


def test_a_compaction_by_an_extension_and_without_a_size(tmp_path: Path) -> None:
    """Hand-edited: `fromHook` (a compaction an extension made), no `tokensBefore`, no
    summary (Pi still sends its wrapping)."""
    session, _ = _compaction(tmp_path, fromHook=True, tokensBefore=None, summary=None)
    (compaction,) = session.compactions
    assert (compaction.trigger, compaction.pre_tokens) == ("extension", None)
    summary = next(c for c in session.snapshots[-1].changes if c.id == "line-6:summary")
    assert summary.chars == 107
    session, _ = _compaction(tmp_path, fromHook="true", tokensBefore=0)
    assert (session.compactions[0].trigger, session.compactions[0].pre_tokens) == (None, None)


# --------------------------------------------------------------------------- changes and facts


def test_thinking_levels_are_marked_and_counted_per_request(tmp_path: Path) -> None:
    """Lines 1–14 of the compacting session: three requests at the header's level "off",
    four level changes within a second (minimal, low, medium, high), one request at "high"."""
    session, builder, _ = read(excerpt(tmp_path, COMPACTING, list(range(1, 15))))
    levels = [(m.time_ns, m.value) for m in session.markers if m.kind == "thinking_level_change"]
    assert levels == [
        (iso_ns(record(COMPACTING, n)["timestamp"]), level)
        for n, level in zip(range(9, 13), ["minimal", "low", "medium", "high"], strict=True)
    ]
    facts = dict(session.facts)
    assert facts["thinking_level"] == "off"
    assert facts["thinking_level_changes"] == 4
    assert facts["requests_by_thinking_level"] == "off: 3, high: 1"
    assert builder.entries["line-14"].thinking_level == "high"
    unset = record(COMPACTING, 12)
    del unset["thinkingLevel"]
    lines = [record(COMPACTING, n) for n in range(1, 12)]
    lines += [unset, record(COMPACTING, 13), record(COMPACTING, 14)]
    session, _, _ = read(write(tmp_path, lines))
    assert session.markers[-1].value == "?"
    assert dict(session.facts)["requests_by_thinking_level"] == "off: 3, ?: 1"


def test_without_a_header_level_a_request_is_at_an_unknown_level(tmp_path: Path) -> None:
    header = record(LARGE, 1)
    del header["thinkingLevel"]
    session, _, _ = read(write(tmp_path, [header, record(LARGE, 5), record(LARGE, 6)]))
    facts = dict(session.facts)
    assert facts["requests_by_thinking_level"] == "unknown: 1"
    assert "thinking_level" not in facts and "thinking_level_changes" not in facts


def test_model_changes_are_listed_up_to_ten(tmp_path: Path) -> None:
    """The five real `model_change` entries of the compacting session (lines 711–715), in a
    row, twice, then two more: the fact lists ten and counts the rest."""
    changes = [711, 712, 713, 714, 715]
    session, _, _ = read(excerpt(tmp_path, COMPACTING, [1, *changes, *changes, 711, 712]))
    names = [f"anthropic/{record(COMPACTING, n)['modelId']}" for n in changes]
    assert [m.value for m in session.markers] == names + names + names[:2]
    assert session.markers[0].time_ns == iso_ns(record(COMPACTING, 711)["timestamp"])
    assert session.markers[0].kind == "model_change"
    assert dict(session.facts)["model_changes"] == " → ".join(names + names) + " (+2 more)"
    session, _, _ = read(excerpt(tmp_path, COMPACTING, [1, *changes, *changes]))
    assert dict(session.facts)["model_changes"] == " → ".join(names + names)
    session, _, _ = read(excerpt(tmp_path, COMPACTING, [1, *changes, *changes, 711]))
    assert dict(session.facts)["model_changes"].endswith("anthropic/claude-opus-4-5 (+1 more)")


def test_a_model_change_without_provider_or_model(tmp_path: Path) -> None:
    """Line 4 of the large session (hand-edited): the marker names what is there."""
    bare = record(LARGE, 4)
    del bare["provider"]
    unnamed = record(LARGE, 4)
    del unnamed["modelId"]
    session, _, _ = read(write(tmp_path, [record(LARGE, 1), bare, unnamed]))
    assert [(m.kind, m.value) for m in session.markers] == [
        ("model_change", "claude-sonnet-4-5"),
        ("model_change", "anthropic/?"),
    ]
    assert dict(session.facts)["model_changes"] == "claude-sonnet-4-5 → anthropic/?"


def test_entries_the_reader_does_not_use(tmp_path: Path) -> None:
    """Hand-made entries around real lines: a label and a `custom` entry are understood and
    not sent; an unknown entry type and an unknown message role are counted apart; a session
    name is the latest one given."""
    stamp = record(LARGE, 5)["timestamp"]
    odd_role = record(LARGE, 5)
    odd_role["message"]["role"] = "narrator"
    lines = [
        record(LARGE, 1),
        {"type": "session_info", "timestamp": stamp, "name": "Theme port"},
        {"type": "label", "timestamp": stamp, "targetId": "x", "label": "start"},
        {"type": "custom", "timestamp": stamp, "customType": "ext", "data": {"a": 1}},
        {"type": "hologram", "timestamp": stamp},
        {"timestamp": stamp},
        odd_role,
        {"type": "session_info", "timestamp": stamp},
        {"type": "session_info", "timestamp": stamp, "name": 5},
        record(LARGE, 5),
        record(LARGE, 6),
    ]
    path = write(tmp_path, lines)
    session, _, diagnostics = read(path)
    # a role no Pi writes is not recognised, never skipped on purpose (issue 28)
    assert diagnostics.skipped == {"pi:label": 1, "pi:custom": 1}
    assert diagnostics.unrecognised == {"pi:hologram": 1, "pi:": 1, "pi:message/narrator": 1}
    assert diagnostics.unrecognised_at == {
        "pi:hologram": f"{shown_path(str(path))}:5",
        "pi:": f"{shown_path(str(path))}:6",
        "pi:message/narrator": f"{shown_path(str(path))}:7",
    }
    assert dict(session.facts)["session_name"] == "Theme port"
    assert diagnostics.warning_total == 0
    assert [p.id for p in session.prompts] == ["line-10"]
    assert [r.id for r in session.responses] == ["line-11"]


def test_requests_without_usage_are_counted_by_stop_reason(tmp_path: Path) -> None:
    """The aborted request of line 3 twice, and once more as a provider error (hand-edited):
    none of them has a size; the fact counts them by how they stopped, most first."""
    failed = record(LARGE, 3)
    failed["message"]["stopReason"] = "error"
    lines = [record(LARGE, 1), record(LARGE, 2), record(LARGE, 3), failed, record(LARGE, 3)]
    session, _, _ = read(write(tmp_path, lines))
    assert dict(session.facts)["requests_without_usage"] == "3 (aborted: 2, error: 1)"
    assert [(r.id, r.is_error) for r in session.failed_requests] == [
        ("line-3", True),
        ("line-4", True),
        ("line-5", True),
    ]
    assert session.responses == ()


def test_each_item_is_measured_from_its_text(tmp_path: Path) -> None:
    """Lines 1, 5–9, 17 of the large session read with a calibrated estimator (prose 4, code
    2, JSON 1 character per token; a bare length is worth nothing): every Pi item reaches the
    context with the estimate of its own text, not of its length."""
    ratios = {c: 1.0 for c in TextClass} | {
        TextClass.PROSE: 4.0,
        TextClass.CODE: 2.0,
        TextClass.JSON: 1.0,
        TextClass.UNKNOWN: float("inf"),
    }
    measure = calibrated(ratios, 0.0, {})
    with use_estimator(measure):
        session, _, _ = read(excerpt(tmp_path, LARGE, [1, 5, 6, 7, 8, 9, 17]))
    assert measure.chars_tokens(1_000) == 0
    prompt = record(LARGE, 5)["message"]["content"][0]["text"]
    results = [record(LARGE, n)["message"]["content"][0]["text"] for n in (7, 8, 9)]
    categories = dict(session.snapshots[-1].categories)
    assert categories[Category.PROMPTS] == measure.text_tokens(prompt) > 0
    assert categories[Category.RESULTS] == sum(measure.text_tokens(r) for r in results)


def test_a_compaction_with_nothing_before_it_lasts_no_time(tmp_path: Path) -> None:
    """Line 360 of the compacting session as the first entry of a v3 file (hand-made: a
    compaction with no previous entry to time it from) keeps nothing and ends where it
    starts."""
    header, compaction = _v3([record(COMPACTING, 1), record(COMPACTING, 360)])
    del compaction["firstKeptEntryIndex"]  # v3 names the kept entry by id: here none
    session, _, diagnostics = read(write(tmp_path, [header, compaction]))
    (got,) = session.compactions
    end = iso_ns(record(COMPACTING, 360)["timestamp"])
    assert (got.start_ns, got.end_ns, got.removed_items) == (end, end, 0)
    assert diagnostics.warning_total == 0


def test_a_result_after_another_entry_still_ends_its_call(tmp_path: Path) -> None:
    """Line 6's three calls and their results (lines 7–9), a `label` entry put between the
    calls and the results (hand-made; Pi appends labels at any time): each call still ends
    at its own result, not at the label, and a result that comes twice ends it once."""
    label = {"type": "label", "timestamp": record(LARGE, 7)["timestamp"], "label": "x"}
    lines = [record(LARGE, n) for n in (1, 5, 6)] + [label]
    lines += [record(LARGE, n) for n in (7, 8, 9, 9, 10)]
    session, _, diagnostics = read(write(tmp_path, lines))
    ends = [t.end_ns for t in session.tool_calls[:3]]
    assert ends == [n * MS for n in (1763681634574, 1763681634577, 1763681634589)]
    assert [t.incomplete for t in session.tool_calls[:3]] == [False, False, False]
    assert diagnostics.skipped["pi:label"] == 1


def test_without_a_header_index_0_is_the_first_entry(tmp_path: Path) -> None:
    """Lines 356–360 of the compacting session without their header, the compaction keeping
    from index 0 (hand-edited): with no header to count, index 0 is the first entry, so the
    compaction keeps everything."""
    value = record(COMPACTING, 360)
    value["firstKeptEntryIndex"] = 0
    lines = [record(COMPACTING, n) for n in SUMMARY_LINES[1:-1]] + [value]
    session, _, diagnostics = read(write(tmp_path, lines, name="headless.jsonl"))
    assert _warnings(diagnostics) == [
        "headless.jsonl:1: no session header before the first entry; read as v1"
    ]
    assert session.compactions[0].removed_items == 0
