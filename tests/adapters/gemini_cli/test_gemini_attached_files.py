"""Files a Gemini CLI prompt attached with `@path` (atCommandProcessor): the block after the
typed text ("--- Content from referenced files ---" … "--- End of content ---") is
the files' text, counted as Tool results "Attached file" (as OpenCode's and Claude
Code's attached files are), not as what the user typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_profiler.model import Category
from rules_spy import by_id, sessions, spy
from shared_paths import CORPUS

SHARED = CORPUS / "gemini-cli"
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason=f"no shared corpus at {SHARED}")
HEADER = {"sessionId": "hand-made", "projectHash": "ab", "startTime": "2026-01-01T00:00:00Z"}


@needs_shared
def test_a_real_at_file_expansion_is_an_attached_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """myflix 0.29.5, user turns 4733a3c4 and 3cb6653f: the typed text, then `@../../etc/
    hosts` expanded in four parts (header, "Content from @…:", the file, footer)."""
    path = SHARED / "myflix-0.29.5/jules/chats/session-2026-02-25T07-36-c8af175c.json"
    messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
    seen = spy(monkeypatch)
    (session,) = sessions(path)
    added = by_id(seen)
    for message_id in (
        "4733a3c4-c30f-4ede-952c-32dc92f392a5",
        "3cb6653f-fbc1-4c9d-b994-ffc29b0404e0",
    ):
        content = next(m for m in messages if m["id"] == message_id)["content"]
        assert len(content) == 5 and content[1]["text"].endswith("referenced files ---")
        typed = added[f"{message_id}:0"]
        assert (typed.category, typed.label, typed.chars) == (
            Category.PROMPTS,
            "User prompt",
            len(content[0]["text"]),
        )
        for index in range(1, 5):
            item = added[f"{message_id}:{index}"]
            assert (item.category, item.label, item.chars) == (
                Category.RESULTS,
                "Attached file",
                len(content[index]["text"]),
            )
        prompt = next(p for p in session.prompts if p.id == message_id)
        assert prompt.chars == len(content[0]["text"])


def test_an_expansion_flattened_into_one_string_is_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """≤0.27 stores the prompt as one string: the typed text stays the prompt, the rest
    (from the block's header) is the attached file. A later part after the block's
    footer is typed again (hand-made)."""
    typed = "explain @a.py"
    block = (
        "\n--- Content from referenced files ---\nContent from @a.py:\nprint(1)\n"
        "\n--- End of content ---"
    )
    messages = [
        {"id": "u1", "timestamp": "2026-01-01T00:00:01Z", "type": "user", "content": typed + block},
        {
            "id": "u2",
            "timestamp": "2026-01-01T00:00:02Z",
            "type": "user",
            "content": [{"text": "see"}, {"text": block}, {"text": "thanks"}],
        },
    ]
    path = tmp_path / "session-2026-01-01T00-00-handmade.json"
    path.write_text(json.dumps({**HEADER, "messages": messages}), encoding="utf-8")
    seen = spy(monkeypatch)
    (session,) = sessions(path)
    added = by_id(seen)
    found = {k: (v.category, v.chars) for k, v in added.items()}
    assert found == {
        "u1:0": (Category.PROMPTS, len(typed)),
        "u1:0:file": (Category.RESULTS, len(block)),
        "u2:0": (Category.PROMPTS, 3),
        "u2:1": (Category.RESULTS, len(block)),
        "u2:2": (Category.PROMPTS, 6),
    }
    assert [(p.id, p.chars) for p in session.prompts] == [("u1", len(typed)), ("u2", 9)]
