"""The model: plain data, frozen to the type checker (`frozen`), that every adapter
produces and every writer reads.

Adapters turn one harness's journal into `Session`s; writers turn sessions into
files. Nothing here knows about a journal format or an output format. Times are
absolute wall-clock (UNIX epoch) nanoseconds; token counts are integers.
Wire names (`tokens`, `source_id`, `baseline/added/replaced/removed`) follow
TRACE_CONTRACT §5 so that the writer never renames anything.
"""

from __future__ import annotations

import sys
from dataclasses import field, fields
from enum import StrEnum
from operator import attrgetter

from agent_profiler.privacy import model_name, project_name
from agent_profiler.records import frozen as frozen  # re-exported: the model's decorator
from agent_profiler.targets import safe_target

Nanoseconds = int
Tokens = int


class Harness(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    PI = "pi"
    MUSE = "muse"
    GEMINI_CLI = "gemini-cli"
    OPENCODE = "opencode"

    @property
    def category_prefix(self) -> str:
        """Slice category prefix that Agent Profiler's UI accepts (`claude.*`, ...).
        Harnesses it does not know get `agentprof.*`, its accepted fallback
        (TRACE_CONTRACT §3); their `harness` annotation still names them."""
        return {
            "claude-code": "claude",
            "gemini-cli": "agentprof",
            "opencode": "agentprof",
        }.get(self.value, self.value)

    @property
    def command(self) -> str:
        """The harness's executable name, used as the Perfetto process name."""
        return {"claude-code": "claude", "gemini-cli": "gemini"}.get(self.value, self.value)

    @property
    def label(self) -> str:
        return {
            "claude-code": "Claude Code",
            "codex": "Codex",
            "pi": "Pi",
            "muse": "Muse Code",
            "gemini-cli": "Gemini CLI",
            "opencode": "OpenCode",
        }[self.value]


class Category(StrEnum):
    """Exclusive context categories (SPEC §2), in the contract's fixed order."""

    SYSTEM = "system"
    RULES = "rules"
    SKILLS = "skills"
    TOOLS = "tools"
    ENVIRONMENT = "environment"
    PROMPTS = "prompts"
    ASSISTANT = "assistant"
    RESULTS = "results"
    SUMMARIES = "summaries"
    OVERHEAD = "overhead"
    MESSAGES = "messages"
    UNATTRIBUTED = "unattributed"

    @property
    def label(self) -> str:
        """The exact `Context: <Label>` counter label (TRACE_CONTRACT §6)."""
        return _CATEGORY_LABELS[self]


_CATEGORY_LABELS = {
    Category.SYSTEM: "System instructions",
    Category.RULES: "Rules and memory",
    Category.SKILLS: "Skills",
    Category.TOOLS: "Tool definitions",
    Category.ENVIRONMENT: "Environment",
    Category.PROMPTS: "User prompts",
    Category.ASSISTANT: "Assistant history",
    Category.RESULTS: "Tool results",
    Category.SUMMARIES: "Compaction summaries",
    Category.OVERHEAD: "Harness overhead",
    Category.MESSAGES: "Conversation",
    Category.UNATTRIBUTED: "Unattributed",
}


class Stage(StrEnum):
    REQUEST_INPUT = "request-input"
    CAPTURE_START = "capture-start"
    POST_COMPACTION = "post-compaction"
    TRANSCRIPT_OBSERVED = "transcript-observed"


class Basis(StrEnum):
    NATIVE_SUMMARY = "native-summary"
    NATIVE_BYTES = "native-bytes/4"
    CHARS = "chars/4"
    # Our extension of the contract's list (docs/traces.md): per-content-class ratios.
    CALIBRATED = "chars/calibrated-v3"


class Coverage(StrEnum):
    COMPLETE = "complete"
    PARTIAL = "partial"


class ChangeKind(StrEnum):
    BASELINE = "baseline"
    ADDED = "added"
    REPLACED = "replaced"
    REMOVED = "removed"


class SourceKind(StrEnum):
    TOOL = "tool"
    PROMPT = "prompt"
    RESPONSE = "response"
    NONE = ""


class AnchorKind(StrEnum):
    """Which operation slice a context snapshot is annotated on."""

    RESPONSE = "response"
    COMPACTION = "compaction"
    SESSION = "session"
    NATIVE = "native"  # a harness's own context report (Claude Code's /context)


# `object.__setattr__` as a global, for the __post_init__ of a response, a call, a snapshot:
# in CPython 3.11 an attribute of a class (`object`) is looked up the generic way each time.
_set = object.__setattr__


def shown_model(name: str) -> str:
    """A model id as kept: shared, and never a path with a user name in it (a local
    server's model is its file's path: `privacy.model_name`)."""
    return shared(model_name(name)) if type(name) is str else name


def shared(text: str) -> str:
    """One object for every copy of a value that repeats across a session (a model name,
    a stop reason, a tool name): a record's JSON gives each copy an object of its own, and
    a long session held hundreds of thousands of them."""
    return sys.intern(text) if type(text) is str else text


@frozen
class Usage:
    """Token usage of one model response as the journal reports it.

    `prompt_tokens` is the request's whole input with cached tokens counted
    once; each adapter computes it with its harness's formula (Claude: input +
    cache_creation + cache_read; Codex: input already includes cached).
    """

    prompt_tokens: Tokens
    input_tokens: Tokens = 0
    output_tokens: Tokens = 0
    cache_read_tokens: Tokens = 0
    cache_write_tokens: Tokens = 0
    reasoning_tokens: Tokens = 0
    # Of cache_write_tokens, those written for one hour (Claude Code's
    # usage.cache_creation.ephemeral_1h_input_tokens), priced higher than the 5-minute rest.
    cache_write_1h_tokens: Tokens = 0


@frozen
class Prompt:
    """A user turn (or a subagent's task prompt), from arrival to the end of its work."""

    id: str
    start_ns: Nanoseconds
    end_ns: Nanoseconds
    chars: int
    # "user"; in a subagent "agent" (its task, its parent's words) or "harness" (the
    # runtime's own words: Gemini CLI's "You have exceeded the maximum number of turns…")
    source: str = "user"
    preview: str = ""  # capped excerpt; writers include it only when asked


@frozen
class Response:
    """One model request/response (one message id), with its reported usage."""

    id: str
    start_ns: Nanoseconds
    end_ns: Nanoseconds
    model: str
    usage: Usage
    prompt_id: str | None = None
    is_error: bool = False
    stop_reason: str | None = None
    output_tokens_reliable: bool = True
    # False when the journal wrote 0 in every usage field (some backends do): the request
    # happened, but its size is unknown, and its zeros must not read as a size.
    usage_known: bool = True
    # The price variant the journal names for this request, as `key=value` (the price
    # table's price context: Claude Code's `usage.speed` "fast" is `speed=fast`, billed at
    # the fast-mode rates); "" for the standard prices.
    price_context: str = ""
    # Server-side web searches the request ran (billed per search, beside its tokens):
    # Claude Code's usage.server_tool_use.web_search_requests, Codex's web_search_call items.
    web_searches: int = 0
    # What the harness itself recorded this request cost, at its own prices (Pi's
    # usage.cost.total, OpenCode's step cost): 0 for a subscription or a free model. None:
    # the journal records none.
    recorded_usd: float | None = None

    def __post_init__(self) -> None:
        # Each record's copy of a value is an object of its own: one per value instead. Set
        # only when it is another object (an adapter may hand the shared one already):
        # object.__setattr__ costs about as much as the rest of __init__.
        model, stop_reason = self.model, self.stop_reason
        if (one := shown_model(model)) is not model:
            _set(self, "model", one)
        if stop_reason is not None and (one := shared(stop_reason)) is not stop_reason:
            _set(self, "stop_reason", one)


@frozen
class ToolCall:
    call_id: str
    name: str
    start_ns: Nanoseconds
    end_ns: Nanoseconds
    response_id: str | None = None
    prompt_id: str | None = None
    is_error: bool = False
    incomplete: bool = False  # no result was recorded
    arg_keys: tuple[str, ...] = ()
    arg_bytes: int = 0
    args_preview: tuple[tuple[str, str], ...] = ()
    args_digest: str = ""  # hash of the full arguments: equal digests = identical input
    # What the call acted on (targets.py): `path:<relative path or file name>`,
    # `program:<name>` or `host:<name>`; its Session makes a path safe (never absolute).
    target: str = ""
    result_chars: int = 0
    child_session: str | None = None  # a subagent this call launched
    timing: str = ""  # where start and end come from, when not the call and result records
    # False for work the harness started on its own (Muse reminder children): shown on
    # the timeline, but not a tool call the model made, so the summary does not count it.
    by_model: bool = True

    def __post_init__(self) -> None:
        name = self.name
        if (one := shared(name)) is not name:  # (as Response's: set only when another)
            _set(self, "name", one)


# A call's fields in their order, read at once: `_retargeted` copies a call by position.
_CALL_FIELDS = tuple(f.name for f in fields(ToolCall))
_call_values = attrgetter(*_CALL_FIELDS)
_TARGET = _CALL_FIELDS.index("target")


def _retargeted(call: ToolCall, target: str) -> ToolCall:
    """`call` with another target (`dataclasses.replace(call, target=target)`), made by
    position: replace reads the class's fields and calls it with keywords, ≈ 40,000
    instructions a call, once per call on a file of a Claude Code session (its targets
    are made safe when its Session is made)."""
    values = list(_call_values(call))
    values[_TARGET] = target
    return ToolCall(*values)


@frozen
class Compaction:
    id: str
    start_ns: Nanoseconds
    end_ns: Nanoseconds
    kind: str  # "compaction" (summarised) or "microcompaction" (old results cleared)
    trigger: str | None = None
    pre_tokens: Tokens | None = None
    post_tokens: Tokens | None = None
    removed_items: int = 0
    request: Response | None = None  # the summarisation request, when recorded
    timing: str = ""  # where start and end come from


@frozen
class ContextChange:
    id: str
    category: Category
    change: ChangeKind
    tokens: Tokens  # the item's current estimate (0 once removed)
    delta_tokens: int
    chars: int | None = None
    label: str = ""
    source_id: str = ""  # the tool call id, when a tool put the item there
    source_kind: SourceKind = SourceKind.NONE
    # How an item sized from evidence was measured (estimate.EVIDENCE_METHODS); "" for text.
    method: str = ""


@frozen
class ContextSnapshot:
    """One observed composition of a session's context (SPEC §2)."""

    time_ns: Nanoseconds
    anchor: AnchorKind
    anchor_id: str  # id of the response / compaction it belongs to ("" for the session)
    stage: Stage
    basis: Basis
    coverage: Coverage
    baseline: bool
    categories: tuple[tuple[Category, Tokens], ...]  # present categories only
    changes: tuple[ContextChange, ...] = ()
    omitted_changes: int = 0
    reported_tokens: Tokens | None = None
    window_tokens: Tokens | None = None
    effective_window_tokens: Tokens | None = None
    compact_threshold_tokens: Tokens | None = None
    model: str | None = None
    item_stage: str | None = None

    def __post_init__(self) -> None:
        model = self.model
        if model is not None and (one := shown_model(model)) is not model:  # (as Response's)
            _set(self, "model", one)

    @property
    def estimated_tokens(self) -> Tokens:
        return sum(tokens for _, tokens in self.categories)


# A labelled fact of a session (on `profile (1)`): a text, or a count as an int, so that the
# trace types it as an integer (uint_value, TRACE_CONTRACT §4), not as digits in a string.
Fact = tuple[str, str | int]
# The fact of a journal that starts mid-conversation (Claude Code: its first record's parent
# is not in it): its inferred head holds earlier turns too (views.starts_mid_conversation).
MID_CONVERSATION = "journal_starts_mid_conversation"
# The facts of a fork that begins with a copy of its source's history (Pi): how many entries
# it copied and how many of them were the source's requests; its own history starts after
# them (views.inherited_requests).
INHERITED_ENTRIES = "inherited_entries"
INHERITED_REQUESTS = "inherited_requests"
# The fact of a session that launched subagents whose journals were not read with it (their
# number; links.with_unread_children): TRACE_CONTRACT §3's `unavailable_child_sessions`.
UNREAD_CHILDREN = "unavailable_child_sessions"


@frozen
class Marker:
    """A point-in-time fact on the timeline: a configuration change (Pi's model and thinking
    level: the Configuration track) or an event (an API error the harness retried, a
    notice, a patch: the Events track)."""

    time_ns: Nanoseconds
    kind: str  # e.g. "model_change", "thinking_level_change", "api_error", "warning"
    value: str

    def __post_init__(self) -> None:
        if self.kind == "model_change":
            _set(self, "value", shown_model(self.value))


@frozen
class Session:
    harness: Harness
    session_id: str
    start_ns: Nanoseconds
    end_ns: Nanoseconds
    sources: tuple[str, ...]
    models: tuple[str, ...] = ()
    provider: str | None = None
    window_tokens: Tokens | None = None
    window_source: str | None = None  # "journal" or how it was inferred
    project: str | None = None  # the project's name, never its path (see __post_init__)
    harness_version: str | None = None
    parent_session: str | None = None
    parent_call_id: str | None = None
    agent_id: str | None = None
    child_role: str | None = None
    timing: str = "journal-timestamps"
    incomplete: bool = False
    prompts: tuple[Prompt, ...] = ()
    responses: tuple[Response, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    compactions: tuple[Compaction, ...] = ()
    snapshots: tuple[ContextSnapshot, ...] = ()
    unmeasured: tuple[tuple[str, int], ...] = ()  # what was seen but not estimated: kind → count
    # Methods of the items sized from evidence, not text (estimate.EVIDENCE_METHODS), sorted.
    estimate_methods: tuple[str, ...] = ()
    # Requests that failed before any usage was reported (aborted, provider error): drawn
    # as failed request spans, never as requests of size 0, and not counted as calls.
    failed_requests: tuple[Response, ...] = ()
    # Responses whose usage is all zero (a backend that writes 0 everywhere, e.g. GLM behind
    # Claude Code): real model requests, drawn as response spans with `usage_known = false`,
    # but not `calls` of the summary (peers skip them) and never a Context size.
    unmetered_responses: tuple[Response, ...] = ()
    markers: tuple[Marker, ...] = ()
    facts: tuple[Fact, ...] = field(default=())  # extra labelled facts
    # What the harness recorded the whole session cost at its own prices, where it records
    # one total rather than a cost per request (Claude Code's `result.total_cost_usd` of a
    # `-p` run: every call of the run, its subagents' and side models' included).
    recorded_total_usd: float | None = None
    # How far `export --align start` moved the session's times (0: its real times); its
    # real start is start_ns - shifted_ns.
    shifted_ns: int = 0

    def __post_init__(self) -> None:
        # Adapters hand over the journal's cwd; the model keeps only the project's name, so
        # no writer (present or future) can put a path with a user name in a default output.
        # Idempotent: `dataclasses.replace` runs it again on the name.
        if any(call.target.startswith("path:") for call in self.tool_calls):
            # Tool targets are read before the cwd is known: made safe here, with it.
            cwd = self.project
            object.__setattr__(
                self,
                "tool_calls",
                tuple(
                    call
                    if not call.target.startswith("path:")
                    or call.target == (safe := safe_target(call.target, cwd))
                    else _retargeted(call, safe)
                    for call in self.tool_calls
                ),
            )
        object.__setattr__(self, "project", project_name(self.project))
        if any("/" in m or "\\" in m for m in self.models if type(m) is str):
            object.__setattr__(self, "models", tuple(shown_model(m) for m in self.models))

    @property
    def model(self) -> str | None:
        return self.models[0] if self.models else None

    @property
    def window_from_journal(self) -> bool:
        """The window was read from the journal (a `/context` header counts), not assumed;
        a window without a source is not known to be the journal's."""
        return bool(self.window_tokens) and (self.window_source or "").startswith("journal")

    @property
    def clock(self) -> str:
        """`journal` (times read from the records) or `synthetic` (a journal without times,
        laid out from its own durations; the adapter says so in the `clock` fact)."""
        return "synthetic" if ("clock", "synthetic") in self.facts else "journal"

    @property
    def is_subagent(self) -> bool:
        # A subagent whose parent cannot be named (Gemini CLI: a file out of its parent's
        # folder, no call of a session read ran it) is one still.
        return self.parent_session is not None or self.child_role == "subagent"
