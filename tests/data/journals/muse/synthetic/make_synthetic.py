"""Writes the SYNTHETIC Muse Code journals used by tests/adapters/muse/test_muse.py.

Run from this folder: python make_synthetic.py. Nothing here is Muse output: the
records follow the shapes documented in FORMATS-muse.md (§2 lines, §4 order of one
turn, §5 run events, §5.18 compaction, §6 children), and each file's first line is a
`{"_synthetic": …}` object saying so. The shapes marked "consumer code only" or
"OBS" there (multi-step lanes, `tool_result` lanes, tool calls and results,
`tool_batch.effect.*`, `subagent.control.*`, on-disk compaction) are guesses that no
real file has confirmed. Change this script, not the .jsonl files.

Trees written (under sessions/2026/10/05/):
- MAIN/session.jsonl: two runs, five requests with `model_input_trace_recorded` lanes,
  bash/read_file/subagent_spawn tool calls, two `retained_marker`s, one envelope of
  another stream, an approval review, and a compaction before the second run;
- MAIN/subagent/GOAL/session.jsonl: the goal-reminder child (one request with lanes);
- MAIN/subagent/NATIVE/session.jsonl: the native subagent (two requests, no lanes);
- MAIN/approval-review/REVIEW.jsonl: an approval reviewer's log (never read);
- OLD/session.jsonl: 1.1.1 shapes (no lanes, assistant message after model_completed).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
DAY = HERE / "sessions" / "2026" / "10" / "05"
MAIN = "01a20000-0000-7000-8000-00000000a001"
GOAL = "01a20000-0000-7000-8000-00000000c001"
MEMORY = "01a20000-0000-7000-8000-00000000c002"
NATIVE = "01a20000-0000-7000-8000-00000000c003"
OLD = "01a20000-0000-7000-8000-00000000b001"
MIRROR = "9f3c2a41d0e8b7c6"  # a hashed workflow-child stream mirrored into the parent log
REVIEW = "01a20000-0000-7000-8000-00000000d001"
MODEL = "muse-spark-1.3-contributor"
MARK = {
    "_synthetic": (
        "SYNTHETIC journal hand-made for agent-profiler's tests (tests/data/journals/muse/"
        "synthetic/make_synthetic.py) following FORMATS-muse.md; not written by Muse Code"
    )
}

BASE = "You are Muse Code, a synthetic test agent. Follow the workspace rules.\n" * 60
BLOCKS = [
    ("workspace_identity", "workspace_identity", 85, "Workspace root: /home/USER/demo\n" * 3),
    ("rules_file", "rules_file", 100, "# AGENTS.md\nAlways run the tests before you stop.\n" * 40),
    ("workflow_choice", "workflow_choice", 180, "Use the Workflow tool only for long jobs.\n" * 20),
    ("skills_catalog", "skills", 200, "- skill: pdf-reader — read PDF files\n" * 50),
    ("future_block", "future_source", 230, "A context block of a kind nobody has seen yet.\n" * 5),
    ("memory_snapshot", "memory_snapshot", 4294967295, "User prefers pytest -q.\n" * 8),
]


def utf8(text: str) -> int:
    return len(text.encode())


class Log:
    """One session.jsonl being written: envelopes with contiguous sequences."""

    def __init__(self, stream_id: str, t0_us: int, stream_kind: str = "session") -> None:
        self.stream_id = stream_id
        self.stream_kind = stream_kind
        self.t = t0_us
        self.sequence = 0
        self.run_sequence: dict[str, int] = {}
        self.lines: list[dict[str, Any]] = [MARK]
        self.ids = 0

    def uid(self) -> str:
        self.ids += 1
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.stream_id}/{self.ids}"))

    def tick(self, ms: float) -> int:
        self.t += int(ms * 1000)
        return self.t

    def envelope(
        self,
        payload_type: str,
        payload: dict[str, Any],
        *,
        ms: float = 5,
        stream_id: str | None = None,
        version: int = 1,
    ) -> dict[str, Any]:
        self.sequence += 1
        return {
            "schema_version": 1,
            "id": self.uid(),
            "stream": {"kind": self.stream_kind, "id": stream_id or self.stream_id},
            "sequence": self.sequence,
            "recorded_at": self.tick(ms),
            "record_type": "event",
            "durability": "durable",
            "causation_id": None,
            "payload_type": payload_type,
            "payload_schema_version": version,
            "payload": payload,
        }

    def add(self, payload_type: str, payload: dict[str, Any], **kw: Any) -> None:
        self.lines.append(self.envelope(payload_type, payload, **kw))

    def frame(self) -> None:
        children = [
            self.envelope(
                "runtime.session.permission_format_declared",
                {"schema_version": 1, "format": "profile_v1"},
            ),
            self.envelope(
                "runtime.session.permission_profile_committed",
                {"schema_version": 1, "permission_epoch": 1, "cause": "new_session_default"},
                ms=0,
            ),
        ]
        self.lines.append(
            {
                "retained_frame": "session_permission_transaction",
                "frame_schema_version": 1,
                "outer_log_ordinal": 1,
                "transaction_id": self.uid(),
                "children": [
                    {"child_index": i, "record_json": json.dumps(c, separators=(",", ":"))}
                    for i, c in enumerate(children)
                ],
                "content_sha256": "sha256:" + "0" * 64,
            }
        )

    def marker(self) -> None:
        self.sequence += 1
        self.lines.append(
            {
                "retained_marker": "omitted_live_only",
                "schema_version": 1,
                "stream": {"kind": "session", "id": self.stream_id},
                "position": {"id": self.uid(), "sequence": self.sequence},
                "omitted_record": {
                    "record_type": "status",
                    "durability": "ephemeral",
                    "payload_type": "runtime.session",
                    "payload_schema_version": 1,
                    "payload_kind": "task",
                    "omission_class": "task_tool_delta_v1",
                },
            }
        )

    def metadata(self, provider: str = "meta", semver: str = "1.4.2") -> None:
        record: dict[str, Any] = {
            "workspace_root": "/home/USER/demo",
            "provider_id": provider,
            "model_id": MODEL,
            "build": {"sha": "0000000000", "semver": semver},
        }
        self.add("runtime.session.metadata", {"kind": "metadata", "record": record})

    def run(self, run_id: str, event: dict[str, Any], ms: float = 5) -> str:
        n = self.run_sequence[run_id] = self.run_sequence.get(run_id, 0) + 1
        record_id = self.uid()
        self.add(
            "runtime.session",
            {
                "kind": "run",
                "run_id": run_id,
                "event": event,
                "source_run_record_id": record_id,
                "source_run_record_sequence": n,
            },
            ms=ms,
        )
        return record_id

    def task(self, run_id: str, task_id: str, event: dict[str, Any], ms: float = 5) -> None:
        self.add(
            "runtime.session",
            {"kind": "task", "run_id": run_id, "task_id": task_id, "event": event},
            ms=ms,
        )

    def configure_run(self, run_id: str, model: str = MODEL) -> None:
        self.add(
            "run.model.configured",
            {
                "kind": "run_model",
                "record": {
                    "command_id": run_id,
                    "run_stream": {"kind": "run", "id": run_id},
                    "provider_id": "meta",
                    "model_id": model,
                    "source": "startup",
                },
            },
        )

    def blocks(self, run_id: str, blocks: list[tuple[str, str, int, str]]) -> None:
        for block_id, source, order, text in blocks:
            self.run(
                run_id,
                {
                    "kind": "context_block_diagnostic",
                    "block_id": block_id,
                    "source": source,
                    "lifecycle": "session_start",
                    "action": "observed",
                    "reason": "context_source_catalog_known",
                    "message": f"context block `{block_id}` order={order}",
                    "text_bytes": utf8(text),
                    "max_bytes": 0,
                },
            )

    def request_configured(self, run_id: str, blocks: list[tuple[str, str, int, str]]) -> str:
        return self.run(
            run_id,
            {
                "kind": "model_request_configured",
                "base_instructions": BASE,
                "base_instructions_source": "provider_default",
                "instructions_option_key": "meta.instructions",
                "toolset": {
                    "source": "default",
                    "mode": "all",
                    "active_tools": ["bash", "read_file", "subagent_spawn"],
                },
                "run_context_messages": [
                    {
                        "id": block_id,
                        "role": "developer",
                        "source": source,
                        "lifecycle": "session_start",
                        "order": order,
                        "text": text,
                    }
                    for block_id, source, order, text in blocks
                ],
            },
        )

    def trace(self, run_id: str, step: int, request_id: str, lanes: list[tuple[str, ...]]) -> None:
        aggregates = [
            {
                "logical_lane": {"value": lane, "omitted_bytes": 0},
                "source": {"value": source, "omitted_bytes": 0},
                "provider_wire_destination": {"value": destination, "omitted_bytes": 0},
                "lane_count": 1,
                "byte_count": int(count),
            }
            for lane, source, destination, count in lanes
        ]
        total = sum(a["byte_count"] for a in aggregates)
        self.run(
            run_id,
            {
                "kind": "model_input_trace_recorded",
                "schema_version": 2,
                "scope": "full_request",
                "model_step": step,
                "request_record_id": request_id,
                "provider_family": "meta",
                "bounded": {
                    "external_history_present": False,
                    "total_lane_count": len(aggregates),
                    "total_lane_bytes": total,
                    "aggregates": aggregates,
                    "total_aggregate_group_count": len(aggregates),
                    "omitted_aggregate_group_count": 0,
                    "omitted_aggregate_lane_count": 0,
                    "omitted_aggregate_lane_bytes": 0,
                },
            },
        )

    def model_task(self, run_id: str, task_id: str) -> None:
        self.task(run_id, task_id, {"kind": "proposed", "task_kind": "model.meta.response"})
        self.task(run_id, task_id, {"kind": "started"})
        self.task(
            run_id,
            task_id,
            {"kind": "status", "message": "opening meta model stream attempt 1/10"},
        )

    def completed(
        self, run_id: str, usage: tuple[int, int, int], duration_ms: int, finish: str | None
    ) -> None:
        prompt, output, cached = usage
        self.run(
            run_id,
            {
                "kind": "goal_usage_attribution",
                "record": {
                    "usage_id": f"usage-{self.uid()}",
                    "usage_family": "provider",
                    "quantity": {
                        "unit": "tokens",
                        "reported": True,
                        "input_tokens": prompt,
                        "output_tokens": output,
                        "cached_tokens": cached,
                    },
                    "owner": {"owner_type": "main_root"},
                },
            },
        )
        event: dict[str, Any] = {
            "kind": "model_completed",
            "usage": {
                "input_tokens": prompt,
                "output_tokens": output,
                "cached_tokens": cached,
                "cache_write_tokens": 0,
                "cache_read_tokens": cached,
                "reasoning_tokens": 3,
            },
            "duration_ms": duration_ms,
            "model": MODEL,
        }
        if finish:
            event["finish_reason"] = finish
        self.run(run_id, event, ms=duration_ms - 40)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(
            "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in self.lines)
        )


def context_lane(blocks: list[tuple[str, str, int, str]]) -> int:
    """Σ block bytes joined by blank lines, plus 9 unexplained bytes (as in the real 1.4.2)."""
    return sum(utf8(text) for *_, text in blocks) + 2 * (len(blocks) - 1) + 9


def base_lanes(prompt: str) -> list[tuple[str, ...]]:
    return [
        ("system_base", "provider_default", "option:meta.instructions", str(utf8(BASE))),
        ("context", "run_context", "message.role:developer", str(context_lane(BLOCKS))),
        ("history", "current_user", "message.role:user", str(utf8(prompt) + 4)),
        ("tool_specs", "default", "request.tools", "0"),
        ("provider_options", "provider_request_options", "option:meta.model", "0"),
    ]


def call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"fc_{call_id}", "call_id": call_id, "name": name, "args": json.dumps(args)}


def main_session() -> tuple[Log, dict[str, int]]:
    log = Log(MAIN, 1_791_100_000_000_000)
    times: dict[str, int] = {}
    log.frame()
    log.metadata()
    run1 = "01a20000-0000-7000-8000-0000000e0001"
    log.configure_run(run1)
    prompt1 = "Fix the failing test in parser.py, then run the whole suite once."
    log.run(run1, {"kind": "started", "prompt": prompt1})
    log.blocks(run1, BLOCKS)
    request_record = log.request_configured(run1, BLOCKS)
    # a path-less memory reminder and the goal reminder (its log is subagent/GOAL)
    for task_id, agent, child, path in (
        ("01a20000-0000-7000-8000-0000000f0001", "memory-reminder", MEMORY, None),
        ("01a20000-0000-7000-8000-0000000f0002", "goal-reminder", GOAL, f"subagent/{GOAL}"),
    ):
        log.task(run1, task_id, {"kind": "proposed", "task_kind": f"reminder.agent.{agent}"})
        linked: dict[str, Any] = {
            "kind": "memory_reminder_child_session_linked",
            "parent_session_id": MAIN,
            "parent_run_id": run1,
            "task_id": task_id,
            "reminder_agent_id": agent,
            "generation_id": 1,
            "child_session_id": child,
        }
        if path:
            linked["child_session_log_path"] = f"{path}/session.jsonl"
        log.run(run1, linked)
        log.task(run1, task_id, {"kind": "started"})
        times[agent] = log.t

    history: list[tuple[str, ...]] = []  # lanes of earlier steps: assistant, tool results
    # step 0: commentary + bash
    log.trace(run1, 0, request_record, base_lanes(prompt1))
    log.model_task(run1, "task-model-0")
    log.run(run1, {"kind": "model_response_created", "response_id": "resp_s0"}, ms=900)
    log.run(
        run1,
        {
            "kind": "reasoning_committed",
            "message_id": log.uid(),
            "response_id": "resp_s0",
            "text": "",
            "encrypted_content": "Q" * 200,
        },
    )
    commentary = "I'll run the test suite first to see the failure."
    log.run(
        run1,
        {
            "kind": "assistant_message_committed",
            "message_id": "msg-s0",
            "response_id": "resp_s0",
            "text": commentary,
            "phase": "commentary",
        },
    )
    bash = call("call_bash_1", "bash", {"command": "pytest -q", "description": "Run the suite"})
    log.run(
        run1,
        {
            "kind": "assistant_tool_calls_committed",
            "message_id": "msg-s0-calls",
            "response_id": "resp_s0",
            "tool_calls": [bash],
        },
    )
    log.completed(run1, (9_000, 60, 0), 1_200, "tool_calls")
    log.task(run1, "task-model-0", {"kind": "completed"})
    # the approval reviewer looks at the bash call (its own log is approval-review/REVIEW)
    log.add(
        "runtime.session",
        {
            "kind": "approval",
            "run_id": run1,
            "event": {
                "kind": "automated_review_completed",
                "review_id": "review-1",
                "usage": {"input_tokens": 1_500, "output_tokens": 20},
            },
        },
        version=3,
    )
    log.add(
        "tool_batch.effect.started",
        {
            "kind": "tool_batch_effect",
            "run_id": run1,
            "record": {"call_id": "call_bash_1", "tool_name": "bash", "model_call_index": 0},
        },
    )
    log.marker()
    log.marker()
    log.add(
        "tool_batch.effect.terminal",
        {
            "kind": "tool_batch_effect",
            "run_id": run1,
            "record": {"call_id": "call_bash_1", "outcome": {"kind": "completed"}},
        },
        ms=2_500,
    )
    bash_result = json.dumps(
        {
            "chunk_id": "exec-1-1",
            "command": "pytest -q",
            "exit_code": 1,
            "terminal_status": "completed",
            "output": "F.\nE   assert parse('1') == 2\n" * 30 + "1 failed, 1 passed",
            "truncated": False,
        }
    )
    log.run(
        run1,
        {
            "kind": "tool_result_batch_committed",
            "batch_id": "msg-s0-calls",
            "results": [{"tool_call_index": 0, "tool_call_id": "call_bash_1", "text": bash_result}],
        },
    )
    history += [
        ("history", "history", "message.role:assistant", str(utf8(commentary))),
        ("history", "history", "message.role:assistant", str(utf8("bash" + bash["args"]))),
        ("tool_result", "tool_result", "message.role:tool", str(utf8(bash_result))),
    ]
    # a mirrored workflow-child stream: not this session's records
    log.add(
        "runtime.session",
        {
            "kind": "run",
            "run_id": "mirrored-run",
            "event": {"kind": "model_completed", "usage": {"input_tokens": 77_777}},
        },
        stream_id=MIRROR,
    )

    # step 1: read_file
    log.trace(run1, 1, request_record, base_lanes(prompt1) + history)
    log.model_task(run1, "task-model-1")
    log.run(run1, {"kind": "model_response_created", "response_id": "resp_s1"}, ms=700)
    read = call("call_read_1", "read_file", {"path": "parser.py"})
    log.run(
        run1,
        {
            "kind": "assistant_tool_calls_committed",
            "message_id": "msg-s1-calls",
            "response_id": "resp_s1",
            "tool_calls": [read],
        },
    )
    log.completed(run1, (9_000 + 600, 25, 8_900), 900, "tool_calls")
    source = "def parse(text):\n    return int(text) + 1  # the bug\n" * 40
    log.run(
        run1,
        {
            "kind": "tool_result_batch_committed",
            "batch_id": "msg-s1-calls",
            "results": [{"tool_call_index": 0, "tool_call_id": "call_read_1", "text": source}],
        },
        ms=300,
    )
    history += [
        ("history", "history", "message.role:assistant", str(utf8("read_file" + read["args"]))),
        ("tool_result", "tool_result", "message.role:tool", str(utf8(source))),
    ]

    # step 2: delegate to a native subagent
    log.trace(run1, 2, request_record, base_lanes(prompt1) + history)
    log.model_task(run1, "task-model-2")
    log.run(run1, {"kind": "model_response_created", "response_id": "resp_s2"}, ms=800)
    spawn = call(
        "call_spawn_1", "subagent_spawn", {"task": "Check parser.py for other off-by-one bugs"}
    )
    log.run(
        run1,
        {
            "kind": "assistant_tool_calls_committed",
            "message_id": "msg-s2-calls",
            "response_id": "resp_s2",
            "tool_calls": [spawn],
        },
    )
    log.completed(run1, (9_000 + 600 + 500, 40, 9_500), 1_000, "tool_calls")
    log.add(
        "subagent.control.start_attested",
        {
            "kind": "subagent_control",
            "record": {
                "subagent_session_id": NATIVE,
                "dispatched_via_tool_call_id": "call_spawn_1",
            },
        },
    )
    times["native"] = log.t
    spawn_result = "Subagent result: no other off-by-one bugs found in parser.py."
    log.run(
        run1,
        {
            "kind": "tool_result_batch_committed",
            "batch_id": "msg-s2-calls",
            "results": [
                {"tool_call_index": 0, "tool_call_id": "call_spawn_1", "text": spawn_result}
            ],
        },
        ms=6_000,
    )
    history += [
        (
            "history",
            "history",
            "message.role:assistant",
            str(utf8("subagent_spawn" + spawn["args"])),
        ),
        ("tool_result", "tool_result", "message.role:tool", str(utf8(spawn_result))),
    ]

    # step 3: the final answer
    log.trace(run1, 3, request_record, base_lanes(prompt1) + history)
    log.model_task(run1, "task-model-3")
    log.run(run1, {"kind": "model_response_created", "response_id": "resp_s3"}, ms=600)
    log.run(
        run1,
        {
            "kind": "assistant_message_committed",
            "message_id": "msg-s3",
            "response_id": "resp_s3",
            "text": "Fixed parse(): it no longer adds one. All tests pass.",
            "phase": "final_answer",
        },
    )
    log.completed(run1, (10_300, 30, 10_100), 700, None)
    for task_id in ("0001", "0002"):
        log.task(run1, f"01a20000-0000-7000-8000-0000000f{task_id}", {"kind": "completed"})
    log.run(
        run1,
        {
            "kind": "terminal",
            "terminal": "completed",
            "reason": None,
            "turn_duration_ms": 20_000,
        },
    )

    # run 2: compaction before the turn, then one request whose history restarts
    run2 = "01a20000-0000-7000-8000-0000000e0002"
    log.configure_run(run2)
    prompt2 = "Now summarise what changed."
    log.run(run2, {"kind": "started", "prompt": prompt2}, ms=30_000)
    summary = "## Primary Request And Intent\n- Fix parse() in parser.py.\n" * 12
    strategy = {"strategy_id": "summary-preserved-suffix/v1", "soft_threshold_tokens": 20_480}
    metrics = {"provider_calls": 1, "input_tokens": 7_000, "output_tokens": 900}
    log.run(
        run2,
        {
            "kind": "context_compaction_candidate",
            "candidate_id": "candidate-1",
            "trigger": "soft_threshold_async",
            "timing": "pre_turn",
            "status": "succeeded",
            "strategy": strategy,
            "diagnostics": [{"reason": "summary_call_metrics", "message": json.dumps(metrics)}],
        },
        ms=8_000,
    )
    log.run(
        run2,
        {
            "kind": "context_compaction_installed",
            "install_id": "install-1",
            "candidate_id": "candidate-1",
            "trigger": "soft_threshold_async",
            "timing": "pre_turn",
            "strategy_id": "summary-preserved-suffix/v1",
            "summarized_through": {"sequence": 0},
            "replacement": {"kind": "summary_text", "text": summary},
            "preserved_segment": {"head_sequence": 1, "tail_sequence": 2, "interval": "(1, 2]"},
            "budget_before": {
                "estimated_prompt_tokens": 30_359,
                "target_met": None,
                "estimate_source": "heuristic_estimate",
            },
            "budget_after": {
                "estimated_prompt_tokens": 22_869,
                "target_met": False,
                "estimate_source": "heuristic_estimate",
            },
            "summarizer_usage": {"input_tokens": 7_000, "output_tokens": 900, "duration_ms": 6_500},
        },
    )
    log.blocks(run2, BLOCKS)
    request_record2 = log.request_configured(run2, BLOCKS)
    lanes = base_lanes(prompt2)
    lanes.insert(
        2,
        (
            "history",
            "compaction_summary",
            "message.role:user",
            str(utf8("summary: " + summary)),
        ),
    )
    log.trace(run2, 0, request_record2, lanes)
    log.model_task(run2, "task-model-4")
    log.run(
        run2,
        {
            "kind": "assistant_message_committed",
            "message_id": "msg-s4",
            "response_id": "resp_s4",
            "text": "parse() no longer adds one; the suite passes.",
        },
        ms=1_000,
    )
    log.completed(run2, (9_200, 20, 0), 1_100, None)
    log.run(run2, {"kind": "terminal", "terminal": "completed", "reason": None})
    log.add(
        "session.end",
        {"kind": "session_end", "record": {"session_id": MAIN, "exit_reason": "clean"}},
    )
    return log, times


def goal_child(start_us: int) -> Log:
    log = Log(GOAL, start_us)
    log.frame()
    log.metadata()
    run = "01a20000-0000-7000-8000-0000000e0c01"
    log.configure_run(run)
    prompt = "Decide whether the main agent has met its goal. Reply with a reminder or none."
    log.run(run, {"kind": "started", "prompt": prompt})
    record = log.run(
        run,
        {
            "kind": "model_request_configured",
            "base_instructions": "You are the goal reminder.\n" * 20,
            "run_context_messages": [],
        },
    )
    log.trace(
        run,
        0,
        record,
        [
            (
                "system_base",
                "provider_default",
                "option:meta.instructions",
                str(utf8("You are the goal reminder.\n" * 20)),
            ),
            ("history", "current_user", "message.role:user", str(utf8(prompt) + 4)),
            ("tool_specs", "default", "request.tools", "0"),
        ],
    )
    log.model_task(run, "task-goal-model")
    log.run(
        run,
        {"kind": "assistant_message_committed", "message_id": "goal-msg", "text": "none"},
        ms=500,
    )
    log.completed(run, (1_400, 5, 0), 600, None)
    log.run(run, {"kind": "terminal", "terminal": "completed", "reason": None})
    return log


def native_child(start_us: int) -> Log:
    """A native subagent with 1.1.1-like shapes: no lanes, so chars/4 items."""
    log = Log(NATIVE, start_us)
    log.frame()
    log.metadata()
    run = "01a20000-0000-7000-8000-0000000e0d01"
    log.configure_run(run)
    log.run(run, {"kind": "started", "prompt": "Check parser.py for other off-by-one bugs"})
    log.run(
        run,
        {
            "kind": "model_request_configured",
            "base_instructions": "You are a Muse subagent.\n" * 30,
            "run_context_messages": [],
        },
    )
    log.model_task(run, "task-native-0")
    grep = call("call_grep_1", "bash", {"command": "grep -n '+ 1' parser.py"})
    log.run(
        run,
        {"kind": "assistant_tool_calls_committed", "message_id": "n-calls", "tool_calls": [grep]},
        ms=400,
    )
    log.completed(run, (4_000, 30, 0), 500, "tool_calls")
    log.run(
        run,
        {
            "kind": "tool_result_batch_committed",
            "batch_id": "n-calls",
            "results": [{"tool_call_id": "call_grep_1", "text": "2:    return int(text)\n" * 40}],
        },
        ms=300,
    )
    log.model_task(run, "task-native-1")
    log.run(
        run,
        {"kind": "assistant_message_committed", "message_id": "n-final", "text": "No bugs."},
        ms=400,
    )
    log.completed(run, (4_300, 10, 3_900), 450, None)
    log.run(run, {"kind": "terminal", "terminal": "completed", "reason": None})
    return log


def approval_review() -> Log:
    # approval-review logs run on a synthetic clock: 1780531500000000 + sequence − 1
    log = Log(REVIEW, 1_780_531_500_000_000, stream_kind="approval.review.runtime")
    run = "review-run"
    log.run(run, {"kind": "started", "prompt": "Review: bash pytest -q"}, ms=0.001)
    log.run(run, {"kind": "model_completed", "usage": {"input_tokens": 1_500}}, ms=0.001)
    return log


def old_session() -> Log:
    """1.1.1 shapes: no base_instructions, no lanes, model only in run.model.configured,
    no cache_* keys, `assistant_message_committed` after `model_completed`."""
    log = Log(OLD, 1_789_246_716_000_000)
    log.frame()
    log.metadata(semver="1.1.1")
    run = "01a20000-0000-7000-8000-0000000e0b01"
    log.configure_run(run, model="muse-spark-1.1")
    log.run(run, {"kind": "started", "prompt": "List the files, then say hello."})
    log.run(
        run,
        {
            "kind": "model_request_configured",
            "toolset": {"source": "default", "mode": "all", "active_tools": ["bash"]},
            "run_context_messages": [
                {
                    "id": "sandbox_policy",
                    "role": "developer",
                    "source": "sandbox_policy",
                    "lifecycle": "session_start",
                    "order": 95,
                    "text": "Sandbox: workspace-write.\n" * 10,
                }
            ],
        },
    )
    log.run(run, {"kind": "provider_request_options_configured", "provider_option_keys": []})
    log.run(run, {"kind": "model_response_created", "response_id": "resp-old-1"}, ms=200)
    ls = call("call_ls_1", "bash", {"command": "ls"})
    log.run(
        run,
        {"kind": "assistant_tool_calls_committed", "message_id": "o-calls", "tool_calls": [ls]},
    )
    log.run(
        run,
        {
            "kind": "model_completed",
            "usage": {"input_tokens": 6_000, "output_tokens": 12, "cached_tokens": 0},
            "duration_ms": 300,
        },
    )
    log.run(
        run,
        {
            "kind": "tool_result_batch_committed",
            "batch_id": "o-calls",
            "results": [{"tool_call_id": "call_ls_1", "text": "README.md\nparser.py\n" * 20}],
        },
        ms=100,
    )
    log.run(run, {"kind": "model_response_created", "response_id": "resp-old-2"}, ms=200)
    log.run(
        run,
        {
            "kind": "model_completed",
            "usage": {"input_tokens": 6_300, "output_tokens": 8, "cached_tokens": 5_900},
            "duration_ms": 250,
        },
    )
    log.run(
        run,
        {
            "kind": "assistant_message_committed",
            "message_id": "o-final",
            "response_id": "resp-old-2",
            "text": "Hello! Two files: README.md and parser.py.",
        },
    )
    log.run(run, {"kind": "terminal", "terminal": "completed", "reason": None})
    return log


def main() -> None:
    folder = DAY / MAIN
    log, times = main_session()
    log.write(folder / "session.jsonl")
    goal_child(times["goal-reminder"]).write(folder / "subagent" / GOAL / "session.jsonl")
    native_child(times["native"]).write(folder / "subagent" / NATIVE / "session.jsonl")
    approval_review().write(folder / "approval-review" / f"{REVIEW}.jsonl")
    old_session().write(DAY / OLD / "session.jsonl")


if __name__ == "__main__":
    main()
