"""What a Codex rollout says about other agent threads: the messages between agents that
are this model's input (MultiAgentV2: a child's task, a message from its parent or a
peer), read into User prompts; and the links from a `spawn_agent` call to the thread it
started when no `collab_agent_spawn_end` is written any more (FORMATS.md §3.6).

Separate from `codex_items.py` (the `response_item` lines) and `codex_events.py` (the
`event_msg` lines), which call in here for the agent messages and spawn links they meet.

Format facts from openai/codex (`codex-rs/protocol`, `codex-rs/core`, mid/late 2026):
- `InterAgentCommunication {id?, author, recipient, other_recipients, content,
  encrypted_content?, trigger_turn}`; `to_model_input_item` makes it a
  `ResponseItem::AgentMessage {author, recipient, content}` whose content is one
  `input_text` part (the message as sent), or, when encrypted, a header part
  ("Message Type: NEW_TASK|MESSAGE / Task name / Sender / Payload:") and an
  `encrypted_content` part; `trigger_turn` (NEW_TASK) starts a turn: a spawned v2 child's
  assignment comes this way, not as a user message;
- one build persisted the communication itself (an `inter_agent_communication` line, no
  `response_item`); newer ones persist `inter_agent_communication_metadata {trigger_turn}`
  then the `response_item` `agent_message` (session inter_agent recording);
- an agent message is never model output (`is_model_generated_item` is false for it) and
  opens a user turn (`is_user_turn_boundary`): a rollback counts it;
- `spawn_agent`'s output is the JSON of its result: `{"agent_id": <thread id>, ...}` (v1)
  or `{"task_name": <agent path>, ...}` (v2), the path the child's
  `session_meta.source.subagent.thread_spawn.agent_path` names.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.adapters.common import preview
from agent_profiler.model import MID_CONVERSATION, Category, Prompt, SourceKind

if TYPE_CHECKING:
    from agent_profiler.adapters.codex_rollout import RolloutBuilder

# The header `to_model_input_item` puts before an encrypted message's payload.
_NEW_TASK = "Message Type: NEW_TASK"


def on_inter_agent(builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int) -> None:
    """An `inter_agent_communication` line: the message as the model sees it (its text, or
    the header of an encrypted one, whose payload is unmeasured)."""
    communication(builder, payload, ts, "item")


def as_communication(item: dict[str, Any]) -> dict[str, Any] | None:
    """The communication an assistant-role `message` item holds, when it is one: openai/
    codex `InterAgentCommunication::to_response_input_item` writes an agent's message as
    `{role: "assistant", content: [{type: "output_text", text: <the communication as
    JSON: author, recipient, other_recipients, content, trigger_turn>}]}`, and reads it
    back from history so (`from_message_content`). Such a message is input from another
    agent, not the model's output; None for any other message."""
    content = item.get("content")
    if not isinstance(content, list) or len(content) != 1 or not isinstance(content[0], dict):
        return None
    part = content[0]
    text = part.get("text")
    if part.get("type") != "output_text" or not isinstance(text, str):
        return None
    if not text.startswith("{") or '"author"' not in text or '"recipient"' not in text:
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("author"), str):
        return None
    if not isinstance(value.get("recipient"), str) or "content" not in value:
        return None
    return value


def communication(builder: RolloutBuilder, payload: dict[str, Any], ts: int, prefix: str) -> None:
    """An agent's message (`inter_agent_communication`, or an assistant-role message
    holding one, `as_communication`) as User prompts, a task when it triggers a turn."""
    author = _agent(payload.get("author"))
    task = payload.get("trigger_turn") is True
    if payload.get("encrypted_content"):
        kind = "NEW_TASK" if task else "MESSAGE"
        header = (
            f"Message Type: {kind}\nTask name: {_agent(payload.get('recipient'))}\n"
            f"Sender: {author}\nPayload:\n"
        )
        _message(builder, ts, prefix, author, task, [header], encrypted=1, shown="")
        return
    content = payload.get("content")
    text = content if isinstance(content, str) else ""
    _message(builder, ts, prefix, author, task, [text] if text else [], encrypted=0, shown=text)


def on_agent_message_item(
    builder: RolloutBuilder, item: dict[str, Any], ts: int, prefix: str
) -> None:
    """A `response_item` `agent_message`: an agent's message to this one, as recorded in
    the model's history. It is a task when its header says NEW_TASK or (plain text) when
    it is the first input of a subagent that has no prompt yet: the `trigger_turn` of a
    plain message is only in the metadata line before it, which is not read."""
    texts: list[str] = []
    encrypted = 0
    content = item.get("content")
    for part in content if isinstance(content, list) else ():
        if not isinstance(part, dict):
            continue
        if part.get("type") == "encrypted_content":
            encrypted += 1
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    if isinstance(content, str):
        texts.append(content)
    task = any(t.startswith(_NEW_TASK) for t in texts) or (
        builder.parent_session is not None and not builder.prompts and prefix == "item"
    )
    shown = "" if encrypted else "\n".join(texts)
    author = _agent(item.get("author"))
    _message(builder, ts, prefix, author, task, texts, encrypted=encrypted, shown=shown)


def _message(
    builder: RolloutBuilder,
    ts: int,
    prefix: str,
    author: str,
    task: bool,
    texts: list[str],
    *,
    encrypted: int,
    shown: str,
) -> None:
    """The message's parts as User prompts items, labelled by its author (another agent,
    not the person at the keyboard); a task is also a prompt of the thread, from an
    agent, and starts its turn."""
    builder.turn_begins()
    label = f"Task from {author}" if task else f"Message from {author}"
    builder.item_index += 1
    chars = 0
    for index, text in enumerate(texts):
        chars += builder.add_text(
            f"{prefix}-agent:{builder.item_index}:{index}",
            Category.PROMPTS,
            text,
            label,
            source_kind=SourceKind.PROMPT,
        )
    if encrypted:
        builder.unmeasured["encrypted-agent-message"] += encrypted
    if prefix != "item":
        return  # an item of a compaction's replacement history: no new turn
    builder.trigger_ns = ts
    if task:
        prompt_id = f"turn-{len(builder.prompts) + 1}"
        redacted = any(builder.measure(t)[1] for t in texts)
        builder.prompts.append(
            Prompt(prompt_id, ts, ts, chars, "agent", "" if redacted else preview(shown))
        )
        builder.current_prompt = prompt_id
        builder.end_turn_reasoning()


def _agent(value: object) -> str:
    return value if isinstance(value, str) and value else "another agent"


# What a `rollout_reference` may show of what it names (the session's facts reach the
# summary, the report and the trace): a thread id of an id's form (a UUID, or our id
# characters with a digit, bounded) and a Codex rollout's file name; never a path.
_THREAD_ID = re.compile(r"(?=[^0-9]{0,63}[0-9])[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_ROLLOUT_NAME = re.compile(r"rollout-[A-Za-z0-9_-][A-Za-z0-9_.-]{0,120}\.jsonl(?:\.gz|\.zst)?")


def on_rollout_reference(
    builder: RolloutBuilder, payload: dict[str, Any], ts: int, line: int
) -> None:
    """`RolloutReferenceItem {rollout_path, thread_id?, segment_id?, max_depth,
    nth_user_message?, …}` (openai/codex `thread-store` segment rotation and paginated
    forks): this rollout continues the history of the one it names (all of it, or up to
    its `nth_user_message`-th user message) without copying it. That rollout is not
    followed: what the first request held of it is in the inferred head, so the session is
    marked as starting mid-conversation (its Unattributed holds the inherited turns as well
    as the system prompt and tool schemas), and the reference is a fact of the session."""
    path = payload.get("rollout_path")
    name = path.replace("\\", "/").rpartition("/")[2] if isinstance(path, str) else ""
    thread = payload.get("thread_id")
    same = isinstance(thread, str) and thread == builder.session_id
    upto = payload.get("nth_user_message")
    if same:
        said = "an earlier segment of this thread"
    elif isinstance(thread, str) and _THREAD_ID.fullmatch(thread):
        said = f"thread {thread}"
    else:  # none, or not an id's form (it could hold a path or a name): not shown
        said = "another thread"
    if _ROLLOUT_NAME.fullmatch(name):  # a Codex rollout's name; any other is not shown
        said += f" ({name})"
    if isinstance(upto, int) and not isinstance(upto, bool) and 0 <= upto < 2**31:
        said += f", up to its user message {upto}"
    builder.facts.append(("rollout_reference", said))
    if not any(key == MID_CONVERSATION for key, _ in builder.facts):
        builder.facts.append(
            (MID_CONVERSATION, f"its history continues {said}: a rollout_reference, not read")
        )


def spawn_output(builder: RolloutBuilder, call_id: str, output: object) -> None:
    """A `spawn_agent` call's output names the thread it started: its `agent_id` (v1: the
    child's thread id, linked now) or its `task_name` (v2: the child's agent path, linked
    when the child's rollout is read with this one, `codex.read_rollouts`). A thread linked
    by its `collab_agent_spawn_end` keeps that link."""
    if not isinstance(output, str) or not output.startswith("{") or call_id in builder.spawned:
        return
    try:
        result = orjson.loads(output)
    except orjson.JSONDecodeError:
        return
    if not isinstance(result, dict):
        return
    agent_id, path = result.get("agent_id"), result.get("task_name")
    if isinstance(agent_id, str) and agent_id:
        builder.spawned[call_id] = agent_id
    elif isinstance(path, str) and path:
        builder.spawn_paths[call_id] = path
