"""Claude Code: `claude -p --output-format stream-json` output, read into sessions.

Owns splitting a stream-json file into runs (one per `system/init`), subagent frames
(`parent_tool_use_id`) as child sessions, and the synthetic clock of undated files.
"""

from __future__ import annotations

import bisect
from dataclasses import field, replace
from pathlib import Path
from typing import Any

from agent_profiler.adapters.claude_code import api_error_facts, on_api_retry
from agent_profiler.adapters.claude_compaction import on_compact_boundary
from agent_profiler.adapters.claude_content import on_hook_context
from agent_profiler.adapters.claude_records import STREAM_TYPES
from agent_profiler.adapters.claude_session import SessionBuilder
from agent_profiler.adapters.common import (
    MS,
    Clock,
    clock_origin,
    recorded_usd,
    text_field,
    token_count,
)
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.jsonl import read_jsonl
from agent_profiler.model import Session, frozen
from agent_profiler.records import record


@record
class _Run:
    """One `claude -p` run inside a stream-json file."""

    builders: dict[str, SessionBuilder] = field(default_factory=dict)  # thread → builder
    owners: dict[str, str] = field(default_factory=dict)  # message id → its first thread
    has_init: bool = False
    has_result: bool = False
    # The run's cost as Claude Code records it (`result.total_cost_usd`, a running total:
    # the last result's), at its own prices: every call of the run, subagents' included.
    recorded_total_usd: float | None = None


def read_stream_json(path: Path, diagnostics: Diagnostics) -> list[Session]:
    """Read `claude -p --output-format stream-json` output: one session per
    `system/init`, subagent frames (`parent_tool_use_id`) as child sessions; a run's
    recorded cost on its main session."""
    source = str(path)
    runs: list[_Run] = []
    used_ids: set[str] = set()
    # Frames carry a timestamp only in newer builds, sometimes only some of them:
    # undated frames before the first dated one are placed just before it. Without any
    # timestamp the timeline is synthetic, spaced by the runs' own `result.duration_ms`.
    synthetic = _synthetic_timeline(path)
    origin = clock_origin((value for _, value in read_jsonl(path, Diagnostics())), path)
    if synthetic is not None:
        origin = max(0, origin - synthetic.total_ns)
    clock = Clock(
        source,
        diagnostics,
        expect_timestamps=False,
        origin_ns=origin,
        spacing=synthetic.step if synthetic is not None else None,
    )
    for line, value in read_jsonl(path, diagnostics):
        if not isinstance(value, dict):
            diagnostics.reject(source, line, "frame is not a JSON object")
            continue
        kind = text_field(value, "type")
        subtype = text_field(value, "subtype")
        session_id = text_field(value, "session_id")
        is_init = kind == "system" and subtype == "init"
        is_hook = kind == "system" and subtype in ("hook_started", "hook_response")
        # Several runs appended to one file: each `system/init` starts the next one, and
        # hook frames after a run's `result` already belong to the run that follows.
        if not runs or (is_init and runs[-1].has_init) or (is_hook and runs[-1].has_result):
            runs.append(_Run())
        run = runs[-1]
        run.has_init = run.has_init or is_init
        run.has_result = run.has_result or kind == "result"
        ts = clock.time(value, line)
        main = run.builders.get("")
        if main is None:
            main = SessionBuilder(
                _unique(session_id or f"run-{len(runs)}", used_ids), source, diagnostics
            )
            run.builders[""] = main
        elif session_id and main.session_id.startswith("run-"):
            used_ids.discard(main.session_id)
            main.session_id = _unique(session_id, used_ids)
        parent_call = value.get("parent_tool_use_id")
        key = parent_call if isinstance(parent_call, str) else ""
        message = value.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        if kind == "assistant" and isinstance(message_id, str):
            # One response per message id, on the thread of its first frame.
            key = run.owners.setdefault(message_id, key)
        builder = main
        if key:
            child = run.builders.get(key)
            if child is None:
                agent = value.get("agent_id")
                child = SessionBuilder(key, source, diagnostics)
                child.parent_call_id = key
                child.agent_id = agent if isinstance(agent, str) else None
                child.child_role = "subagent"
                # Its parent is known from here (its first prompt is the agent's, not the
                # user's); the final id is set once the run's own id is final, below.
                child.parent_session = main.session_id
                run.builders[key] = child
            elif child.agent_id is None and isinstance(agent := value.get("agent_id"), str):
                child.agent_id = agent  # a thread's first frame (a user one) may lack it
            builder = child
        builder.records += 1
        builder.touch(ts)
        builder.on_meta(value)
        if is_init:
            _on_init(builder, value)
        elif kind == "user":
            builder.on_user(value, ts, line)
        elif kind == "assistant":
            builder.on_assistant(value, ts, line, source)
        elif kind == "system" and subtype == "compact_boundary":
            on_compact_boundary(builder, value, ts)
        elif kind == "system" and subtype == "hook_response":
            on_hook_context(builder, value)
        elif kind == "system" and subtype == "api_retry":
            on_api_retry(builder, value, ts)
        elif kind == "result":
            _on_result(builder, value)
            total = recorded_usd(value, "total_cost_usd")
            if total is not None:
                run.recorded_total_usd = total
        else:
            name = f"{kind}/{subtype}" if kind == "system" else (kind or "untyped")
            if name in STREAM_TYPES:
                diagnostics.skip(f"claude-stream:{name}")
            else:
                diagnostics.not_recognised(f"claude-stream:{name}", source, line)
    sessions: list[Session] = []
    for run in runs:
        main = run.builders[""]
        for key, builder in run.builders.items():
            if not clock.seen_timestamp:
                # Said on the profile (`clock = synthetic`), in the summary and the report:
                # these times are made up from durations, not read from the journal.
                builder.facts.append(("clock", "synthetic"))
                builder.timing = (
                    "synthetic: no timestamps in the journal; each run's frames are spaced "
                    "evenly over its result.duration_ms (1 ms per frame without one), the "
                    "last run ending at the file's modification time"
                )
            if key:
                if builder.agent_id is None:  # the parent's result names it (`agentId`)
                    named = [a for a, call in main.agent_results.items() if call == key]
                    builder.agent_id = named[0] if named else None
                # Named once the run's own id is final (it may come after the first frame).
                builder.session_id = f"{main.session_id}/{builder.agent_id or key}"
                builder.parent_session = main.session_id
                tool = main.tools.get(key)
                if tool is not None:
                    tool.child_session = builder.session_id
                if main.window is not None and builder.window is None:
                    builder.window, builder.window_source = main.window, main.window_source
                main.cover(builder)
        # Finished once every child has named itself to the main session's calls.
        for key, builder in run.builders.items():
            api_error_facts(builder)
            session = builder.finish()
            if session is not None and not key and run.recorded_total_usd is not None:
                session = replace(session, recorded_total_usd=run.recorded_total_usd)
            if session is not None:
                sessions.append(session)
    return sessions


@frozen
class _SyntheticTimeline:
    """Steps for a stream-json file without a single timestamp: each run (from one
    `system/init` to the next) spreads its frames evenly over its `result.duration_ms`,
    the only clock such a journal has. Per-turn timings are not written in stream-json."""

    starts: tuple[int, ...]  # first line of each run
    steps: tuple[int, ...]  # ns between two frames of that run
    total_ns: int  # the whole synthetic timeline

    def step(self, line: int) -> int:
        index = bisect.bisect_right(self.starts, line) - 1
        return self.steps[max(index, 0)] if self.steps else MS


def _synthetic_timeline(path: Path) -> _SyntheticTimeline | None:
    runs: list[list[int]] = []  # per run: [first line, frames, duration ms]
    for line, value in read_jsonl(path, Diagnostics()):
        if not isinstance(value, dict):
            continue
        if value.get("timestamp") is not None:
            return None  # a real clock, however partial, is used instead
        is_init = value.get("type") == "system" and value.get("subtype") == "init"
        if not runs or (is_init and runs[-1][3]):  # as read_stream_json splits runs
            runs.append([line, 0, 0, 0])
        run = runs[-1]
        run[1] += 1
        run[3] = run[3] or int(is_init)
        if value.get("type") == "result":
            run[2] = token_count(value.get("duration_ms"))
    if not runs:
        return None
    steps = tuple(
        max(MS, duration * MS // max(frames - 1, 1)) if duration else MS
        for _, frames, duration, _ in runs
    )
    total = sum(
        step * max(frames - 1, 0) for step, (_, frames, _, _) in zip(steps, runs, strict=True)
    )
    return _SyntheticTimeline(tuple(r[0] for r in runs), steps, total)


def _unique(session_id: str, used: set[str]) -> str:
    """Two runs of one file may share a session id (a resumed run): the second is `#2`."""
    candidate, count = session_id, 1
    while candidate in used:
        count += 1
        candidate = f"{session_id}#{count}"
    used.add(candidate)
    return candidate


def _on_init(builder: SessionBuilder, frame: dict[str, Any]) -> None:
    model = frame.get("model")
    if isinstance(model, str) and model not in builder.models:
        builder.models.append(model)
    for key in ("tools", "skills", "agents", "slash_commands"):
        values = frame.get(key)
        if isinstance(values, list):
            builder.facts.append((f"init_{key}", len(values)))
    servers = frame.get("mcp_servers")
    if isinstance(servers, list):
        names = [s.get("name") for s in servers if isinstance(s, dict)]
        builder.facts.append(("init_mcp_servers", ",".join(n for n in names if isinstance(n, str))))
    plugins = frame.get("plugins")
    if isinstance(plugins, list):
        builder.facts.append(("init_plugins", len(plugins)))


def _on_result(builder: SessionBuilder, frame: dict[str, Any]) -> None:
    usage = frame.get("modelUsage")
    if isinstance(usage, dict):
        main_model = builder.models[0] if builder.models else None
        windows = {
            m: token_count(u.get("contextWindow")) for m, u in usage.items() if isinstance(u, dict)
        }
        window = windows.get(main_model or "") or max(windows.values(), default=0)
        if window:
            builder.window, builder.window_source = window, "journal"
    if isinstance(text_field(frame, "subtype"), str):
        builder.facts.append(("result", frame["subtype"]))
