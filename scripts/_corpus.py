"""What `calibrate.py` and `fidelity.py` share: the corpus's inputs, reading them with a
chosen estimator, and the per-class character features of every request.

An *input* is what one `agent-profiler` run would be given for one real journal: a
file, or a folder whose files form one session tree (a Claude Code session and its
subagents). Leave-one-out leaves a whole input out, so a subagent never helps calibrate
the estimate of its own parent.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import statistics
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from agent_profiler.attribution import REDACTED_KIND
from agent_profiler.diagnostics import Diagnostics
from agent_profiler.estimate import (
    OTHER_FAMILY,
    Estimator,
    TextClass,
    majority_family,
    use_estimator,
)
from agent_profiler.loader import load
from agent_profiler.model import AnchorKind, Basis, ContextSnapshot, Session

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("AGENT_PROFILER_CORPUS", REPO.parent / "shared" / "corpus"))
# The harnesses the tool reads.
HARNESSES = ("claude-code", "codex", "pi", "muse", "gemini-cli", "opencode")
# Harnesses whose corpus keeps each source as one entry (a file, or a folder copied with its
# layout: a Gemini CLI `chats/` folder with its subagents, an OpenCode parent export beside
# its child's, a database): that entry is one input, so a subagent never helps calibrate the
# estimate of its own parent.
BY_ENTRY = ("gemini-cli", "opencode")
MIN_REQUESTS = 5  # the target holds for sessions with at least this many requests
# Snapshots whose categories the harness measured itself: no estimator is involved.
NATIVE = {Basis.NATIVE_BYTES, Basis.NATIVE_SUMMARY}


def corpus_inputs(corpus: Path = CORPUS) -> list[Path]:
    """Every journal of the corpus, as one input per session tree, in a fixed order."""
    inputs: list[Path] = []
    for harness in HARNESSES:
        root = corpus / harness
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            if path.name.endswith((".md",)) or path.is_dir():
                continue
            # A Claude Code session folder (session file + subagents/) is one input.
            tree = next(
                (p for p in path.parents if p.parent.name == "transcripts" and p.is_dir()), None
            )
            if harness in BY_ENTRY:
                tree = root / path.relative_to(root).parts[0]
            item = tree if tree is not None else path
            if item not in inputs:
                inputs.append(item)
    return inputs


@contextlib.contextmanager
def requests_as_made(path: Path) -> Iterator[Path]:
    """`path`, or, for a Pi fork, a copy without the header's `branchedFrom` or
    `parentSession`: its copy of its source's history is then read as requests again. The
    tool counts them as the source's (a fork's starting context); their reported sizes are
    real requests all the same, whose source the corpus does not hold, so calibration and
    fidelity keep them (the shipped table was fitted with them)."""
    if path.is_dir() or "/pi/" not in path.as_posix():
        yield path
        return
    data = path.read_bytes()
    text = (gzip.decompress(data) if path.name.endswith(".gz") else data).decode("utf-8")
    first, _, rest = text.partition("\n")
    header = json.loads(first)
    if not isinstance(header, dict) or not {"branchedFrom", "parentSession"} & header.keys():
        yield path
        return
    header.pop("branchedFrom", None)
    header.pop("parentSession", None)
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / path.name.removesuffix(".gz")
        copy.write_text(json.dumps(header) + "\n" + rest, encoding="utf-8")
        yield copy


def read(path: Path, estimator: Estimator) -> list[Session]:
    with use_estimator(estimator):
        result = load([path], Diagnostics())
    return result.sessions


def measured(session: Session) -> list[ContextSnapshot]:
    """Request snapshots with a reported size whose categories come from the estimator."""
    return [
        s
        for s in session.snapshots
        if s.anchor is AnchorKind.RESPONSE and s.reported_tokens and s.basis not in NATIVE
    ]


def errors(session: Session) -> list[float]:
    """|estimated − reported| / reported for the requests after the first (as `summary`)."""
    snaps = [
        s
        for s in session.snapshots
        if s.anchor is AnchorKind.RESPONSE and s.reported_tokens and s.categories
    ]
    return [
        abs(s.estimated_tokens - s.reported_tokens) / s.reported_tokens
        for s in snaps[1:]
        if s.reported_tokens
    ]


@dataclass(frozen=True, slots=True)
class Point:
    """One request after its segment's anchor: the growth of every class's characters
    since the anchor, and the growth of the reported input over the same span less that
    of the items sized from evidence (a fixed part the table does not explain)."""

    input: str
    session: str
    growth: tuple[float, ...]  # per TextClass, in TextClass order, then items
    reported_growth: float
    reported: float
    harness: str = ""  # whose framing the items have (the per-item cost is per harness)
    # The session's journal was scrubbed before publication: more bare `REDACTED`
    # placeholders than requests (`redacted_journal`). Its requests are not in the fit.
    redacted: bool = False
    # The tokenizer family of the model that served most of the input's requests: whose
    # class ratios measure it (`estimate.tokenizer_family`; the loader chooses them so).
    family: str = ""


def redacted_journal(session: Session, requests: int) -> bool:
    """A journal that holds much less than was sent: more `REDACTED` placeholders than it
    has requests (a stray placeholder in a path, as in entire-4b's two, does not count).
    Its reported growth includes text the journal lacks, so fitting it would teach the
    table to inflate every other session; it stays in the fidelity table, labelled."""
    return dict(session.unmeasured).get(REDACTED_KIND, 0) > requests


def probe(text_class: TextClass | None) -> Estimator:
    """Counts the characters of one class exactly (one 'token' per character), or with
    None the non-empty items (one 'token' each); never infers a head."""
    ratios = {c: (1.0 if c is text_class else float("inf")) for c in TextClass}
    per_item = 1.0 if text_class is None else 0.0
    return Estimator(Basis.CHARS, ratios, per_item, infer_head=False, evidence="off")


# Only the items sized from evidence (hidden thinking, images: ContextLog.add_evidence),
# text counting 0: their growth is a fixed part of the reported growth, not the table's.
EVIDENCE = Estimator(Basis.CHARS, infer_head=False, evidence="only")


FEATURES: tuple[TextClass | None, ...] = (*TextClass, None)


def visible_probe(text_class: TextClass | Literal["none"] | None) -> Estimator:
    """For `points(as_exported=True)`: only the items sized from evidence, text counting 0.
    With "none", hidden thinking is its response's whole output; with a class (or None, the
    items), the output *plus* that class's characters (or items) of the response's visible
    text (`Estimator.visible_tokens`). The difference is the visible text of the responses
    whose thinking is sized as output minus visible: in an export that text and the hidden
    item add up to the output whatever the table says of the text."""
    if text_class == "none":
        ratios = {c: math.inf for c in TextClass}
        return Estimator(Basis.CHARS, ratios, 0.0, infer_head=False, evidence="visible")
    return replace(probe(text_class), evidence="visible")


def points(path: Path, as_exported: bool = False) -> Iterator[Point]:
    """The calibration points of one input (sessions without estimator snapshots give none).

    `as_exported` (`calibrate.py --evidence-as-exported`, measured, not the shipped method):
    hidden thinking sized as output minus visible is a fixed part of the growth at its whole
    output, and the visible text of its response is taken out of the features, as an export
    with the fitted table counts it; by default that thinking is output − chars/4 of the
    visible text and the visible text is a feature.

    The anchor is where the inferred head is measured: the session's first request with a
    reported size, and again the first one after each compaction. Between an anchor and
    a later request the head is constant, so the reported growth is the growth of the
    journal's items: exactly what the table must explain."""
    with requests_as_made(path) as made:
        runs = [read(made, probe(c)) for c in FEATURES]
        evidence_runs = read(made, visible_probe("none") if as_exported else EVIDENCE)
        visible_runs = [read(made, visible_probe(c)) for c in FEATURES] if as_exported else []
    family = majority_family(r.model for s in runs[0] for r in s.responses) or OTHER_FAMILY
    for index, session in enumerate(runs[0]):
        snaps = measured(session)
        if not snaps:
            continue
        evidence = [s.estimated_tokens for s in measured(evidence_runs[index])]
        per_class = [[s.estimated_tokens for s in measured(run[index])] for run in runs]
        for k, visible in enumerate(visible_runs):
            per_class[k] = [
                n - (v.estimated_tokens - e)
                for n, v, e in zip(per_class[k], measured(visible[index]), evidence, strict=True)
            ]
        redacted = redacted_journal(session, len(snaps))
        cuts = sorted(c.start_ns for c in session.compactions)
        anchor = 0
        for t in range(1, len(snaps)):
            if any(snaps[t - 1].time_ns <= cut <= snaps[t].time_ns for cut in cuts):
                anchor = t
                continue
            growth = tuple(
                float(per_class[k][t] - per_class[k][anchor]) for k in range(len(FEATURES))
            )
            reported = float(snaps[t].reported_tokens or 0)
            fixed = evidence[t] - evidence[anchor]
            yield Point(
                path.name,
                session.session_id,
                growth,
                reported - float(snaps[anchor].reported_tokens or 0) - fixed,
                reported,
                session.harness.value,
                redacted,
                family,
            )


def inputs_per_harness(by_input: Mapping[Path, Sequence[Point]]) -> dict[str, int]:
    """How many inputs of each harness have calibration points."""
    counts: dict[str, set[str]] = {}
    for points in by_input.values():
        for p in points:
            counts.setdefault(p.harness, set()).add(p.input)
    return {h: len(counts[h]) for h in HARNESSES if h in counts}


def summary(values: Sequence[float]) -> tuple[float | None, float | None]:
    return (statistics.median(values), max(values)) if values else (None, None)
