"""Codex rules the eleventh session's mutation sample found untested (`codex_records.py`,
`codex_events.py`): hand-made rollouts in the shape of the 0.140 ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from test_codex_failures import PLAIN, _count, _line, _rollout

from rules_spy import record, sessions, write
from samples import read_single


def _command(second: int, call_id: str, output: str, exit_code: int) -> list[dict[str, Any]]:
    """A command's call, its output, then its exec_command_end with `exit_code`."""
    call = {"type": "function_call", "call_id": call_id, "name": "exec_command", "arguments": "{}"}
    end = {"type": "exec_command_end", "call_id": call_id, "exit_code": exit_code}
    return [
        _line(second, "response_item", call),
        _count(second, 1000 + second),
        _line(second, "response_item", {**call, "type": "function_call_output", "output": output}),
        _line(second + 1, "event_msg", end),
    ]


def test_an_output_that_starts_with_process_running_leaves_the_exit_to_the_poll(
    tmp_path: Path,
) -> None:
    """An output that is only "Process running with session ID N" (the rule reads the first
    400 characters, its first one included) came back while the command ran: its
    exec_command_end's exit 1 is the later poll's to report, not this call's failure; a
    command whose output says nothing of the kind fails by its end event
    (codex_records.still_running__mutmut_8 searched from the second character)."""
    path = _rollout(
        tmp_path,
        [
            *_command(2, "launch", "Process running with session ID 48230", 1),
            *_command(4, "plain", "rg: no match", 1),
            _count(6, 1100),
        ],
    )
    session, _ = read_single(path)
    failed = {call.call_id: call.is_error for call in session.tool_calls}
    assert failed == {"launch": False, "plain": True}


def test_an_opened_page_is_the_web_search_calls_argument(tmp_path: Path) -> None:
    """The 0.141 corpus rollout's web_search_end that opened a page: its `query` is the
    page's address and its action (`open_page`) has a url, no query. Line 196 of the test
    data's rollout edited so: the call's argument is the address, as its top-level `query`
    says (codex_events._on_web_search_end__mutmut_13 read only the action's, and the
    call had no argument)."""
    page = "https://github.com/anthropics/skills/blob/main/skills/skill-creator/SKILL.md"
    end = record(PLAIN, 196)
    end["payload"].update(query=page, action={"type": "open_page", "url": page})
    lines = [record(PLAIN, n) for n in (1, 6, 7)] + [end]
    (session,) = sessions(write(tmp_path, lines))
    (call,) = session.tool_calls
    assert (call.name, call.arg_keys, call.args_preview) == (
        "web_search",
        ("query",),
        (("query", page),),
    )
