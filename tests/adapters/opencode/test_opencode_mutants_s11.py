"""OpenCode rules the eleventh session's mutation sample found untested
(`opencode_session.py`): hand-damaged copies of a real 1.3.7 export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_profiler.model import AnchorKind, Category, Session
from samples import read
from shared_paths import TESTS

EXPLORE = TESTS / "data" / "journals" / "opencode" / "ses_2bef25635ffe8EzID0I1Oeymal.export.json"


def _read(tmp_path: Path, doc: dict[str, Any], name: str) -> Session:
    path = tmp_path / name / f"{doc['info']['id']}.export.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc), encoding="utf-8")
    (session,), _ = read(path)
    return session


def _contexts(session: Session) -> list[dict[Category, float]]:
    return [dict(s.categories) for s in session.snapshots if s.anchor is AnchorKind.RESPONSE]


def test_an_answer_part_without_text_adds_nothing_to_the_context(tmp_path: Path) -> None:
    """The first answer's text part with its `text` field lost (a damaged or an empty
    streamed part): the requests after it hold the same context as when the part is not
    there at all, no answer text of any size (opencode_session's on_part__mutmut_40 made
    the missing text a 4-character answer)."""
    doc = json.loads(EXPLORE.read_text(encoding="utf-8"))
    answer = doc["messages"][1]["parts"]
    (index,) = [i for i, p in enumerate(answer) if p["type"] == "text"]
    without_text = json.loads(json.dumps(doc))
    del without_text["messages"][1]["parts"][index]["text"]
    without_part = json.loads(json.dumps(doc))
    del without_part["messages"][1]["parts"][index]

    damaged = _contexts(_read(tmp_path, without_text, "damaged"))
    absent = _contexts(_read(tmp_path, without_part, "absent"))
    assert len(damaged) == 3
    assert damaged == absent
    # the intact answer is in them: the comparison would see a text of any size
    assert _contexts(_read(tmp_path, doc, "intact"))[1:] != absent[1:]
