"""Derived views of one session, computed from the model in one place: its label, its span,
its Context size series, its model runs and its largest additions (layout, summary, report).

Each fact has one definition here so that the trace, the summary table and the HTML report
cannot disagree about it; they format these values, they do not re-derive them.
"""

from __future__ import annotations

import bisect
import heapq
import re
from array import array
from collections.abc import Iterator, Sequence
from operator import attrgetter

from agent_profiler.model import (
    INHERITED_ENTRIES,
    INHERITED_REQUESTS,
    MID_CONVERSATION,
    UNREAD_CHILDREN,
    AnchorKind,
    Category,
    ContextChange,
    ContextSnapshot,
    Response,
    Session,
    ToolCall,
    frozen,
)
from agent_profiler.sorting import by_first

# Sort keys as attrgetters: one C call per item instead of a Python frame (long sessions
# sort thousands of responses and snapshots several times over).
_SNAPSHOT_TIME = attrgetter("time_ns")
_START = attrgetter("start_ns")
_END = attrgetter("end_ns")
_RESPONSE_ORDER = attrgetter("start_ns", "end_ns", "id")
_CALL_ORDER = attrgetter("start_ns", "call_id")
_START_AND_SIZE = attrgetter("start_ns", "end_ns", "id", "usage.prompt_tokens")
_START_AND_PROMPT = attrgetter("start_ns", "usage.prompt_tokens")  # a Context size sample


def basename(path: str) -> str:
    """The last component of a path written with / or \\ (journals come from any OS)."""
    return path.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def session_label(session: Session) -> str:
    """`<Harness> [subagent ]<session id>[ (<project folder>)]`: the capture's description,
    the process label and the report's heading."""
    project = basename(session.project) if session.project else ""
    role = "subagent " if session.parent_session else ""
    return f"{session.harness.label} {role}{session.session_id}" + (
        f" ({project})" if project else ""
    )


_UUID = re.compile(
    r"^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$", re.IGNORECASE
)


def short_id(session_id: str) -> str:
    """A session id short enough for a track name: its last `/` part (a Claude Code
    subagent's agent id), a UUID's first 8 hex digits, or its last 8 for a time-ordered
    UUID (version 7: its first digits are the time, shared by sessions started together);
    an id of up to 12 characters whole, a longer one's last 8. A copy's `#n` (loader's
    rename of a second file holding the id) is kept after the shortened id: `258c7280#2`,
    not the last 8 characters of the whole, which read as another session."""
    base, mark, copy = session_id.rpartition("#")
    if not (mark and base and copy.isdigit()):
        base, copy = session_id, ""
    tail = base.rsplit("/", 1)[-1] or base
    found = _UUID.match(tail)
    if found:
        short = tail[-8:] if found.group(1) == "7" else tail[:8]
    else:
        short = tail if len(tail) <= 12 else tail[-8:]
    return f"{short}#{copy}" if copy else short


def unread_children(session: Session) -> int:
    """How many subagents the session launched whose journals were not read with it
    (links.with_unread_children): their requests are in none of its numbers."""
    count = dict(session.facts).get(UNREAD_CHILDREN, 0)
    return count if isinstance(count, int) else 0


class Launchers:
    """A parent's tool calls indexed once for `launching_call`: by the child each names
    and by call id, each the last in start order with its place in that order. A parent of
    thousands of subagents is sorted once, not once per subagent (iter_layout keeps one
    per parent)."""

    __slots__ = ("by_child", "by_id")

    def __init__(self, parent: Session) -> None:
        self.by_child: dict[str, tuple[int, ToolCall]] = {}
        self.by_id: dict[str, tuple[int, ToolCall]] = {}
        for place, call in enumerate(by_first(parent.tool_calls, _START, _CALL_ORDER)):
            if call.child_session is not None:
                self.by_child[call.child_session] = (place, call)
            self.by_id[call.call_id] = (place, call)

    def of(self, session: Session) -> ToolCall | None:
        """The call that launched `session`: of the calls naming it as their child or
        holding its `parent_call_id`, the last in start order."""
        found = self.by_child.get(session.session_id)
        if session.parent_call_id is not None:
            named = self.by_id.get(session.parent_call_id)
            if named is not None and (found is None or named[0] > found[0]):
                found = named
        return found[1] if found is not None else None


def launching_call(
    session: Session, parent: Session | None, launchers: Launchers | None = None
) -> ToolCall | None:
    """The parent's tool call that launched a subagent (its `child_session`, else the
    subagent's `parent_call_id`), the last of that id in start order; `launchers`, the
    parent's calls indexed already (`Launchers(parent)`), spares sorting them again."""
    if parent is None:
        return None
    return (launchers if launchers is not None else Launchers(parent)).of(session)


def session_title(
    session: Session, parent: Session | None = None, launchers: Launchers | None = None
) -> str:
    """The name a session's track group is shown by in ui.perfetto.dev, readable without a
    hover: `<Harness> <short id> · <project> · <model>`; a subagent's says whose it is and
    through which call: `Subagent <short id> of <parent's short id> via <tool> <…call id> ·
    <model>` (docs/traces.md, "Sessions in the track tree"). `launchers`: the parent's
    calls indexed (`Launchers(parent)`), for a caller titling many of its subagents."""
    model = main_model(session) or ""
    if session.parent_session is None:
        parts = [f"{session.harness.label} {short_id(session.session_id)}"]
        if session.project:
            parts.append(session.project)
    else:
        head = f"Subagent {short_id(session.session_id)}"
        role = session.child_role or ""
        if role and role != "subagent":
            head += f" ({role})"
        head += f" of {short_id(session.parent_session)}"
        call = launching_call(session, parent, launchers)
        if call is not None:
            head += f" via {call.name} …{call.call_id[-6:]}"
        elif session.parent_call_id:
            head += f" via …{session.parent_call_id[-6:]}"
        parts = [head]
        if session.project and parent is not None and parent.project != session.project:
            parts.append(session.project)
    if model:
        parts.append(model)
    return " · ".join(parts)


# The inferred head (attribution.INFERRED_HEAD_ID) is what the journal does not hold at the
# first request: in every harness, the system prompt and the tool schemas. Its counter keeps
# the contract's `Context: Unattributed` label; the summary and the report name it for
# what it is (issue 29). Measured again after a compaction, it also holds what the harness
# restored then and the journal does not show (Claude Code's re-read files and todos, the
# summary of a Codex 0.140 remote compaction): named so from then on.
INFERRED_HEAD_ID = "inferred:head"
HEAD_LABEL = "System prompt and tool schemas, inferred"
HEAD_AFTER_COMPACTION_LABEL = "System prompt, tools, restored context, inferred"
HEAD_SOURCE = "not in the journal: reported − estimated at the first request"
HEAD_HINT = "one /context run in the session makes it exact"


def starts_mid_conversation(session: Session) -> bool:
    """Whether the journal starts mid-conversation (a Claude Code transcript whose first
    record's parent is not in it): what its first request held and the journal does not,
    the inferred head, is the earlier conversation as well as the system prompt and tools."""
    return any(name == MID_CONVERSATION for name, _ in session.facts)


def mid_conversation_why(session: Session) -> str:
    """Why the journal is known to start mid-conversation, as its adapter said it ("its
    first record's parent is not in the journal"; a Codex rollout that continues another),
    or "" when it does not."""
    return next((str(why) for name, why in session.facts if name == MID_CONVERSATION), "")


def inherited_history(session: Session) -> tuple[int, int] | None:
    """A fork that begins with a copy of its source's history (Pi): how many entries it
    copied and how many of them were the source's requests, or None. They are the context
    it starts with; its own history (its calls, their usage and cost) starts after them."""
    facts = dict(session.facts)
    entries, requests = facts.get(INHERITED_ENTRIES), facts.get(INHERITED_REQUESTS)
    if isinstance(entries, int) and isinstance(requests, int):
        return entries, requests
    return None


def api_errors(session: Session) -> int:
    """Failed API calls the harness retried (Claude Code's `api_error` markers), as summary
    and the report count them."""
    return sum(1 for marker in session.markers if marker.kind == "api_error")


def unattributed_is_head(session: Session) -> bool:
    """Whether the session's Unattributed category is its inferred head and nothing else
    (every Unattributed item any snapshot changed is the head), and the head is only the
    system prompt and tool schemas (not a journal that starts mid-conversation)."""
    if starts_mid_conversation(session):
        return False
    seen = False
    for snapshot in session.snapshots:
        for change in snapshot.changes:
            if change.category is Category.UNATTRIBUTED:
                if change.id != INFERRED_HEAD_ID:
                    return False
                seen = True
    return seen


def head_measured_after(session: Session) -> int | None:
    """The compaction (numbered from 1 in `session.compactions`, as the report numbers
    them) after which the inferred head was last measured again, or None when its size is
    still the first request's: Unattributed's size changed at a snapshot after it (the head
    changes only then; its own change may be past a snapshot's 64 kept)."""
    size, since = 0, None
    for snapshot in snapshots_in_time_order(session):
        if snapshot.anchor is AnchorKind.NATIVE:  # a /context report's own categories
            continue
        tokens = next((t for c, t in snapshot.categories if c is Category.UNATTRIBUTED), 0)
        if tokens and tokens != size:
            size, since = tokens, snapshot.time_ns
    if since is None:
        return None
    # A microcompaction only removes old tool results: the head is not measured after it.
    before = [
        number
        for number, c in enumerate(session.compactions, start=1)
        if c.kind != "microcompaction" and c.start_ns <= since
    ]
    return before[-1] if before else None


def head_label(after: int | None) -> str:
    """The inferred head's name: measured at the first request, or again after compaction
    `after` (head_measured_after)."""
    return HEAD_LABEL if after is None else HEAD_AFTER_COMPACTION_LABEL


def head_source(after: str = "") -> str:
    """Where the inferred head's size comes from, in words: the first request, and again
    after the compaction `after` names ("compaction 2", "a compaction"; "" for none)."""
    if not after:
        return HEAD_SOURCE
    return f"{HEAD_SOURCE} and again after {after}, so it also holds what the harness restored then"


def category_label(category: Category, head: str) -> str:
    """A category's name in the summary and the report: Unattributed is named for what it
    is when it is the inferred head (`head`: its name, head_label; "" when it is not)."""
    return head if head and category is Category.UNATTRIBUTED else category.label


def snapshots_in_time_order(session: Session) -> list[ContextSnapshot]:
    """The session's snapshots by time (stable: equal times keep the model's order), as the
    counters, the report's chart and its tables walk them."""
    return sorted(session.snapshots, key=_SNAPSHOT_TIME)


def session_span(session: Session) -> tuple[int, int]:
    """(start, end) covering everything the session holds: its own span, every response,
    tool call, prompt, compaction and snapshot (the capture spans this, so every counter's
    closing zero comes after its last sample)."""
    start, end = session.start_ns, session.end_ns
    # min and max over C iterators: a Python step per item was most of planning a session.
    for items in (session.responses, session.tool_calls, session.prompts, session.compactions):
        if items:
            start = min(start, min(map(_START, items)))
            end = max(end, max(map(_END, items)))
    if session.snapshots:
        times = list(map(_SNAPSHOT_TIME, session.snapshots))
        start = min(start, min(times))
        end = max(end, max(times))
    return start, end


def context_size_series(session: Session) -> list[tuple[int, int]]:
    """(time, tokens) of the `Context size` counter in time order: each response's
    reported prompt tokens at its start (responses by start, end, id), and a compaction's
    pre_tokens at its start and its size after (compactions_after) at its end, but not at
    a time where a response starts (its own size is the sample there). At equal times a
    compaction's pre comes before its post."""
    return list(iter_context_size(session))


# Where a compaction's size after it comes from (`post_tokens_source`).
POST_FROM_HARNESS = "harness"  # the harness's own figure (Claude Code `postTokens`, …)
POST_FROM_NEXT_REQUEST = "next-request"  # the first reported request after it


@frozen
class AfterCompaction:
    """A compaction's size after it and where that number comes from."""

    tokens: int
    source: str  # POST_FROM_HARNESS or POST_FROM_NEXT_REQUEST
    request_start: int | None = None  # when the first request after it started


def compactions_after(session: Session) -> list[AfterCompaction | None]:
    """Each compaction's size after it (in `session.compactions` order): the harness's
    own figure where it records one, else the reported size of the first request that
    started at or after the compaction's end (None: neither). A figure equal to that
    request's size is said to be the request's (an adapter may have copied it there)."""
    if not session.compactions:  # most sessions: no need to sort the responses
        return []
    starts = by_first(session.responses, _START, _START_AND_SIZE)
    times = list(map(_START, starts))
    found: list[AfterCompaction | None] = []
    for compaction in session.compactions:
        index = bisect.bisect_left(times, compaction.end_ns)
        following = starts[index].usage.prompt_tokens if index < len(starts) else None
        start = times[index] if index < len(starts) else None
        if compaction.post_tokens is not None:
            same = following is not None and following == compaction.post_tokens
            source = POST_FROM_NEXT_REQUEST if same else POST_FROM_HARNESS
            found.append(AfterCompaction(compaction.post_tokens, source, start))
        elif following is not None:
            found.append(AfterCompaction(following, POST_FROM_NEXT_REQUEST, start))
        else:
            found.append(None)
    return found


def iter_context_size(session: Session) -> Iterator[tuple[int, int]]:
    """context_size_series made as it is read (the trace's counter is swept, not held):
    the responses' samples, in start order already, merged with the compactions' sorted
    ones. heapq.merge is stable, so this is the stable sort of the two lists joined."""
    responses = by_first(session.responses, _START, _RESPONSE_ORDER)
    compactions: list[tuple[int, int]] = []
    # One sample per time: where a request starts, its own reported size says the size (a
    # compaction's figure there, the harness's estimate of the size after, or the size
    # before it, would be the one drawn: the last of one time is kept). A Claude Code
    # request starts at the microcompaction written right before it.
    starts = {r.start_ns for r in responses} if session.compactions else set()
    for compaction, after in zip(session.compactions, compactions_after(session), strict=True):
        if compaction.pre_tokens is not None and compaction.start_ns not in starts:
            compactions.append((compaction.start_ns, compaction.pre_tokens))
        if after is not None and compaction.end_ns not in starts:
            compactions.append((compaction.end_ns, after.tokens))
    compactions.sort(key=_time)
    return heapq.merge(map(_START_AND_PROMPT, responses), compactions, key=_time)


def _time(sample: tuple[int, int]) -> int:
    return sample[0]


def model_runs(session: Session) -> list[tuple[int, str]]:
    """(start, model) of each run of responses with the same model, in start order: the
    first model first. The trace's run-configuration slices are these runs; the report's
    model changes are every run but the first."""
    runs: list[tuple[int, str]] = []
    for response in sorted(session.responses, key=_START):
        if response.model and (not runs or runs[-1][1] != response.model):
            runs.append((response.start_ns, response.model))
    return runs


def model_requests(session: Session) -> list[tuple[str, int, int | None]]:
    """(model, requests it served, its window) for every model of the session, in the
    order each first served a request. The window is the one the journal reported at that
    model's last request (None when the journal states none): a window follows the model
    in use, so a session that switched models never pairs one model with another's."""
    windows = request_windows(session)
    served: dict[str, list[int]] = {}
    window_of: dict[str, int | None] = {}
    for response in sorted(session.responses, key=_START):
        if not response.model:
            continue
        served.setdefault(response.model, []).append(1)
        window = windows.get(response.id)
        if window:
            window_of[response.model] = window
    return [(model, len(hits), window_of.get(model)) for model, hits in served.items()]


def main_model(session: Session) -> str | None:
    """The model that served most of the session's requests (the first to serve of
    equals, as `model_requests` orders them): the one summary, the report, the dataset
    and the trace's session name give; the session's first model when no request names
    one."""
    served: dict[str, int] = {}
    for response in sorted(session.responses, key=_START):
        if response.model:
            served[response.model] = served.get(response.model, 0) + 1
    return max(served, key=served.__getitem__) if served else session.model


def run_windows(session: Session, run_starts: Sequence[int]) -> list[int]:
    """The window at each model run's first request (`run_starts`: the runs' starts, in
    order, from `model_runs`): the one the journal reported there, since a session that
    switched models switched windows (Codex: 121,600 for gpt-5.3-codex-spark, then
    258,400); else the session's (0: none)."""
    window = session.window_tokens or 0
    reported = request_windows(session)
    if not reported:
        return [window] * len(run_starts)
    at: dict[int, int] = {}
    for response in sorted(session.responses, key=_START):
        at.setdefault(response.start_ns, reported.get(response.id, window))
    return [at.get(start, window) for start in run_starts]


def response_windows(session: Session, responses: Sequence[Response]) -> array[int]:
    """The window at each of `responses` (in the order given, with or without usage): the
    one the journal reported with that request (a model switch changes it: Codex), else
    the session's (0: none). The `Context window` counter's samples and the window each
    response slice states."""
    window = session.window_tokens or 0
    reported = request_windows(session)
    return array("q", [reported.get(r.id, window) for r in responses])


def request_windows(session: Session) -> dict[str, int]:
    """response id → the window the journal reported at that request (the model in use's):
    empty when the window is not the journal's."""
    if not session.window_from_journal:
        return {}
    return {
        s.anchor_id: s.window_tokens
        for s in session.snapshots
        if s.anchor is AnchorKind.RESPONSE and s.window_tokens
    }


WINDOW_GIVEN = "given"  # the window came from the command line (--window)


def window_origin(session: Session) -> str:
    """Where a session's window came from, for labels (asked only when it has one): read
    from the journal (`Session.window_from_journal`), taken from the harness's own per-model
    table (Gemini CLI's `tokenLimit()`, Muse's model list), or assumed (a default, or no
    source at all)."""
    if session.window_from_journal:
        return "journal"
    source = session.window_source
    if source and not source.startswith("assumed"):
        return "model table"
    return "assumed"


def fill_window(
    session: Session, given: int | None = None, model_window: int | None = None
) -> tuple[int | None, str | None]:
    """The window a session's fill is measured against, and where it came from (`given`,
    `journal`, `model table` or `assumed`; None: no window at all). The same window the
    trace's `Context window` counter and the report draw: a Claude Code session's assumed
    200,000 is used, and said to be assumed. `given` (--window) overrides; a window read
    from the journal is the one of the session's main model (`model_window`) when known."""
    if given:
        return given, WINDOW_GIVEN
    if not session.window_tokens:
        return None, None
    if session.window_from_journal:
        return model_window or session.window_tokens, "journal"
    return session.window_tokens, window_origin(session)


def session_fill(
    session: Session, given: int | None = None
) -> tuple[int | None, str | None, float | None]:
    """A session's window (`fill_window`, of its main model: the one that served most
    requests), where it came from, and its peak fill: the largest share of the window any
    request filled, each request against the window in use at it (a session that switched
    models is never measured against another model's window). The one rule `summary`, the
    report and the dataset use."""
    windows_of = {model: window for model, _, window in model_requests(session)}
    window, source = fill_window(session, given, windows_of.get(main_model(session) or ""))
    windows = {} if given else request_windows(session)
    fills = [
        r.usage.prompt_tokens / size
        for r in session.responses
        if (size := windows.get(r.id) or window)
    ]
    return window, source, round(max(fills), 4) if fills else None


def tools_by_call_id(session: Session) -> dict[str, ToolCall]:
    """call id → its tool call. Calls are taken in (start, call id) order, so when a damaged
    journal repeats a call id the latest call wins, as it does for the trace's tool slices."""
    return {call.call_id: call for call in by_first(session.tool_calls, _START, _CALL_ORDER)}


@frozen
class Addition:
    """One non-baseline snapshot change that grew the context."""

    change: ContextChange
    snapshot: ContextSnapshot
    tool: ToolCall | None  # the tool call whose call id is change.source_id, if there is one


def largest_additions(session: Session) -> list[Addition]:
    """Every change of a non-baseline snapshot with a positive delta, largest first; ties by
    snapshot time, then item id. One order for all readers: the summary's largest addition
    of a request is the first of these at its snapshot, the report lists them all, and the
    trace's Largest additions instants are the first ten that a tool call caused (an
    instant exists to carry a flow arrow from its tool call; see layout/counters.py).

    The inferred head is never an addition: after a compaction it is measured again
    (reported − estimated at the next request), a re-fit of the estimate, not an item that
    entered the context, and no one (no tool, no prompt) put it there."""
    tools = tools_by_call_id(session)
    found = [
        Addition(change, snapshot, tools.get(change.source_id))
        for snapshot in session.snapshots
        if not snapshot.baseline
        for change in snapshot.changes
        if change.delta_tokens > 0 and change.id != INFERRED_HEAD_ID
    ]
    found.sort(key=_addition_order)
    return found


def largest_tool_additions(session: Session, limit: int) -> list[Addition]:
    """The first `limit` of largest_additions that a tool call caused (the trace's
    Largest additions instants), without making an Addition of every change: a long
    session has one per result it read."""
    if limit <= 0:
        return []
    tools = tools_by_call_id(session)
    # Ranked by (largest_additions' order, place in the walk) as plain tuples, and an
    # Addition made only of the `limit` kept: a key function per change was most of it.
    # A change smaller than the `limit` largest met so far (`bar`, a heap of their
    # deltas) ranks after all of them: passed over before a tuple is made of it.
    bar: list[int] = []
    caused: list[tuple[int, int, str, int, ContextChange, ContextSnapshot]] = []
    for snapshot in session.snapshots:
        if snapshot.baseline:
            continue
        for change in snapshot.changes:
            delta = change.delta_tokens
            if delta <= 0 or (len(bar) == limit and delta < bar[0]):
                continue
            if change.source_id not in tools or change.id == INFERRED_HEAD_ID:
                continue
            caused.append((-delta, snapshot.time_ns, change.id, len(caused), change, snapshot))
            if len(bar) < limit:
                heapq.heappush(bar, delta)
            elif delta > bar[0]:
                heapq.heapreplace(bar, delta)
    return [  # = sorted(…)[:limit], stable: the place in the walk breaks every tie
        Addition(change, snapshot, tools[change.source_id])
        for *_, change, snapshot in heapq.nsmallest(limit, caused)
    ]


def _addition_order(addition: Addition) -> tuple[int, int, str]:
    return -addition.change.delta_tokens, addition.snapshot.time_ns, addition.change.id


__all__ = [
    "HEAD_AFTER_COMPACTION_LABEL",
    "HEAD_HINT",
    "HEAD_LABEL",
    "HEAD_SOURCE",
    "INFERRED_HEAD_ID",
    "POST_FROM_HARNESS",
    "POST_FROM_NEXT_REQUEST",
    "WINDOW_GIVEN",
    "Addition",
    "AfterCompaction",
    "Launchers",
    "basename",
    "category_label",
    "compactions_after",
    "context_size_series",
    "fill_window",
    "head_label",
    "head_measured_after",
    "head_source",
    "iter_context_size",
    "largest_additions",
    "largest_tool_additions",
    "launching_call",
    "model_requests",
    "model_runs",
    "request_windows",
    "run_windows",
    "session_label",
    "session_span",
    "session_title",
    "short_id",
    "tools_by_call_id",
    "unattributed_is_head",
    "window_origin",
]
