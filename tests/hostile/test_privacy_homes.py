"""Home folders in every spelling a journal written on another system uses, and model ids
that are file paths (review-bad 11 and 19): neither may put a user name in a default output.

11: a session run in its home on WSL (`/mnt/c/Users/<u>`), FreeBSD (`/usr/home/<u>`),
Solaris (`/export/home/<u>`) or Windows' long-path form (`\\\\?\\C:\\Users\\<u>`) was named by
the user name (the cwd's last folder) in the trace, the report and the dataset.
19: a local model server names a model by its file (`/home/<u>/models/x.gguf`): the id was
printed whole in every output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_profiler.cli import app
from agent_profiler.privacy import input_name, model_name, private_path, project_name
from traceview import plain_bytes

LOCAL = Path(__file__).resolve().parents[1] / "data" / "journals"
JOURNAL = LOCAL / "claude-code" / "entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl"
CWD = "/Users/alex/workspace/cli"
MODEL = "claude-opus-4-5-20251101"
runner = CliRunner()

HOMES = [
    "/mnt/c/Users/zedwsl",  # WSL: a Windows home seen from Linux
    "/mnt/D/users/zedwsl",
    "/usr/home/zedbsd",  # FreeBSD
    "/export/home/zedsol",  # Solaris, illumos
    "\\\\?\\C:\\Users\\zedwin",  # Windows long-path form
    "//?/C:/Users/zedwin",
    "/home//zeddbl",  # a doubled separator: the same folder
    "/System/Volumes/Data/Users/zedmac",  # macOS firmlink
    "/cygdrive/c/Users/zedcyg",  # Cygwin
    "/c/Users/zedgit",  # MSYS, Git Bash
    "/var/root",  # macOS root
]


@pytest.mark.parametrize("home", HOMES)
def test_a_home_in_any_spelling_is_a_tilde(home: str) -> None:
    sep = "\\" if "\\" in home else "/"
    assert project_name(home) == "~"
    assert project_name(home + sep + "app") == "app"
    assert private_path(home + sep + "app" + sep + "x.py") == "~/app/x.py"
    assert private_path(home + sep + "app" + sep + "x.py", home + sep + "app") == "x.py"


@pytest.mark.parametrize(
    "name",
    [
        "-mnt-c-Users-zedwsl-proj",
        "-usr-home-zedbsd-proj",
        "-export-home-zedsol",
        "----C--Users-zedwin-proj",  # \\?\C:\Users\zedwin\proj, sanitized
        "-home--zeddbl-proj",
        "-System-Volumes-Data-Users-zedmac-x",
        "-cygdrive-c-Users-zedcyg",
        "-c-Users-zedgit-app",
    ],
)
def test_a_project_folder_of_any_home_spelling_is_hidden(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    assert input_name(name) == "…"


@pytest.mark.parametrize("name", ["-tmp-private", "-x.jsonl", "-srv-users-app"])
def test_other_dashed_names_are_kept(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    assert input_name(name) == name


def _outputs(journal: Path, tmp_path: Path) -> dict[str, bytes]:
    trace, chrome, page = tmp_path / "t.pftrace", tmp_path / "t.json", tmp_path / "t.html"
    for output in (trace, chrome, page):
        command = "report" if output is page else "export"
        done = runner.invoke(app, [command, str(journal), "-o", str(output), "--force"])
        assert done.exit_code == 0, done.stderr
    summary = runner.invoke(app, ["summary", str(journal), "--json", "--cost"])
    table = runner.invoke(app, ["summary", str(journal), "--cost"])
    return {
        "trace": plain_bytes(trace),
        "chrome": chrome.read_bytes(),
        "report": page.read_bytes(),
        "summary": summary.stdout.encode(),
        "table": (table.stdout + table.stderr).encode(),
    }


@pytest.mark.parametrize("home", ["/mnt/c/Users/zedwsl", "/usr/home/zedbsd", "/export/home/zedsol"])
def test_a_session_run_in_such_a_home_leaves_no_user_name(home: str, tmp_path: Path) -> None:
    # GIVEN a real Claude Code journal whose cwd is the user's home on WSL, FreeBSD, Solaris
    journal = tmp_path / "w.jsonl"
    journal.write_text(JOURNAL.read_text().replace(CWD, home))
    user = home.rsplit("/", 1)[-1].encode()
    # THEN no default output names the user (the project was `zedwsl`)
    for name, data in _outputs(journal, tmp_path).items():
        assert user not in data, name


@pytest.mark.parametrize(
    ("model", "shown"),
    [
        ("/home/zedsecret/models/qwen-coder.gguf", "~/models/qwen-coder.gguf"),
        ("/Users/zed/m/x.gguf", "~/m/x.gguf"),
        ("C:\\Users\\zed\\models\\x.gguf", "~/models/x.gguf"),
        ("/mnt/c/Users/zed/x.gguf", "~/x.gguf"),
        ("/srv/zed/models/x.gguf", "x.gguf"),  # outside a home: the file name
        ("D:\\zed\\x.gguf", "x.gguf"),
        ("~zed/models/x.gguf", "~/models/x.gguf"),
        ("~/models/x.gguf", "~/models/x.gguf"),
        ("llama.cpp:/home/zed/x.gguf", "llama.cpp:~/x.gguf"),  # inside a longer id
        ("claude-opus-4-5", "claude-opus-4-5"),
        ("openai/gpt-4o", "openai/gpt-4o"),
        ("hf.co/home/x", "hf.co/home/x"),
        ("models/gemini-2.5-pro", "models/gemini-2.5-pro"),
    ],
)
def test_a_model_id_that_is_a_path_is_shown_without_the_user(model: str, shown: str) -> None:
    assert model_name(model) == shown
    assert model_name(shown) == shown  # idempotent: the model may apply it twice


def test_a_model_id_that_is_a_path_leaves_no_user_name_in_any_output(tmp_path: Path) -> None:
    # GIVEN a journal whose model is a local server's file path under a home folder
    journal = tmp_path / "mdl.jsonl"
    journal.write_text(
        JOURNAL.read_text().replace(
            f'"model":"{MODEL}"', '"model":"/home/zedsecret/models/qwen-coder.gguf"'
        )
    )
    outputs = _outputs(journal, tmp_path)
    # THEN no output holds the user name; each shows the model without it
    for name, data in outputs.items():
        assert b"zedsecret" not in data, name
        assert b"~/models/qwen-coder.gguf" in data, name
    assert {s["model"] for s in json.loads(outputs["summary"])} == {"~/models/qwen-coder.gguf"}


def test_the_dataset_keeps_no_user_name_of_a_model_path(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    journal = tmp_path / "mdl.jsonl"
    journal.write_text(
        JOURNAL.read_text().replace(f'"model":"{MODEL}"', '"model":"/home/zedsecret/m/q.gguf"')
    )
    done = runner.invoke(app, ["collect", str(journal), "-o", str(tmp_path / "ds")])
    assert done.exit_code == 0, done.stderr
    connection = duckdb.connect()
    try:
        for table in ("sessions", "requests"):
            glob = str(tmp_path / "ds" / "current" / table / "**" / "*.parquet")
            models = connection.execute(
                f"SELECT DISTINCT model FROM read_parquet('{glob}', hive_partitioning = true)"
            ).fetchall()
            assert models == [("~/m/q.gguf",)], table
    finally:
        connection.close()
