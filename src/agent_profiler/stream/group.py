"""A journal group through the one pass (pipeline.run_group asks `try_group` first when
the switch is on): decided up front from the options and the group, then by the pass,
whose bytes are handed on only once it has written the whole group. None: read the usual
way (nothing of this group was written)."""

from __future__ import annotations

from dataclasses import replace
from typing import IO, TYPE_CHECKING, cast

from agent_profiler.annotations import ContentMode, TraceHeader
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import EstimateChoice
from agent_profiler.model import Harness
from agent_profiler.spools import SpooledBytes
from agent_profiler.stream.log import NotHandled

if TYPE_CHECKING:
    from collections.abc import Callable

    from agent_profiler.pipeline import EncodeTrace, GroupOutcome, GroupTask


def handles(task: GroupTask, use: EncodeTrace) -> bool:
    """What the pass does: one Pi journal, Codex rollout or Claude Code transcript, read
    with the default options (a Codex or Claude Code group of more than one file holds
    subagents: the model path's; so is a Claude Code stream-json run, and a subagent file
    given alone)."""
    group, options, facts = task.group, task.options, use.facts
    return (
        group.harness in (Harness.PI, Harness.CODEX, Harness.CLAUDE_CODE)
        and len(group.paths) == 1
        and (
            group.harness is not Harness.CLAUDE_CODE
            or (group.main is not None and not group.variant)
        )
        and options.harness is None
        and options.estimate is EstimateChoice.CHARS4
        and not options.previews
        and not options.align
        and facts.content is ContentMode.NONE
        and not facts.redact
    )


def try_group(
    task: GroupTask,
    use: EncodeTrace,
    seen: dict[str, int] | None,
    out: IO[bytes] | None,
    on_progress: Callable[[str, int, int], None] | None = None,
) -> GroupOutcome[bytes] | None:
    """The group's outcome, as pipeline.run_group's, or None when the pass does not
    handle it (then nothing was written and `seen` is as it was)."""
    if not handles(task, use):
        return None
    from agent_profiler.stream.requests import SPOOL_AFTER

    diagnostics = Diagnostics(on_progress=on_progress)
    # The group's bytes until the pass is known to have written it whole: past
    # SPOOL_AFTER in a file with no name (a long session's trace is megabytes).
    buffer = SpooledBytes(SPOOL_AFTER)
    try:
        return _outcome(task, use, seen, out, diagnostics, buffer)
    finally:
        buffer.close()


def _outcome(
    task: GroupTask,
    use: EncodeTrace,
    seen: dict[str, int] | None,
    out: IO[bytes] | None,
    diagnostics: Diagnostics,
    buffer: SpooledBytes,
) -> GroupOutcome[bytes] | None:
    """`try_group`'s work, the group's bytes going into `buffer`."""
    from agent_profiler import estimate
    from agent_profiler.collector import fewer_collections, let_go
    from agent_profiler.links import parent_links, unread_links
    from agent_profiler.pipeline import GroupOutcome, SessionCounts
    from agent_profiler.views import session_span

    (path,) = task.group.paths
    measure = estimate.current().for_harness(task.group.harness.value)
    if task.group.harness is Harness.CODEX:  # (a Codex export does not import Pi's pass)
        from agent_profiler.stream.codex import export_codex as export
    elif task.group.harness is Harness.CLAUDE_CODE:
        from agent_profiler.stream.claude import export_claude as export
    else:
        from agent_profiler.stream.pi import export_pi as export
    try:
        with task.options.applied(), estimate.use_estimator(measure), fewer_collections():
            session = export(
                path,
                diagnostics,
                use.facts,
                task.index,
                cast(IO[bytes], buffer),
                use.compress,
                threaded=out is not None,  # (not in a folder's worker: chunks.PacketSink)
            )
    except NotHandled:
        let_go()
        return None
    except Exception:  # a bug of the pass, or a file it cannot read
        # The model path reads the group again: it says what is wrong with the file, or
        # loses the group with one line (loader.read_group), as without the pass. The
        # differential tests hold every journal they know to the pass (tests/stream).
        let_go()
        return None
    let_go()
    if diagnostics.failures or (seen is not None and session.session_id in seen):
        return None  # (a repeated id is renamed `#2` by the model path)
    if seen is not None:
        seen[session.session_id] = 1
    if out is not None:
        buffer.copy_to(out)
        value = b""
    else:
        value = buffer.getvalue()
    counts = SessionCounts.of([session])
    counts = replace(counts, header=TraceHeader.of([session]))
    return GroupOutcome(
        task.index,
        [],
        task.group.paths,
        (session.session_id,),
        parent_links([session]),
        counts,
        session_span(session)[0],
        diagnostics,
        value,
        unread_links([session]),  # (a Claude Code call names the subagent it launched)
    )
