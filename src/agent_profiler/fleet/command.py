"""The bodies of `collect` and `fleet` (cli.py registers them): what they print and the
exit code. DuckDB and the price table are imported here, by these commands only."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from agent_profiler.console import counted, human_size, tell
from agent_profiler.errors import UsageError
from agent_profiler.options import ReadOptions

if TYPE_CHECKING:
    from agent_profiler.cost import PriceTable

    from . import Filters

Echo = Callable[..., None]
PRICES_CACHE = "prices-cache.json"  # in the dataset's folder: see cost.PriceTable


def run_collect(
    journals: list[Path],
    target: Path,
    *,
    options: ReadOptions,
    echo: Echo,
    force: bool = False,
) -> int:
    from agent_profiler.dataset.collect import Progress, collect
    from agent_profiler.inputs import dead_link
    from agent_profiler.loader import STDIN, is_stream, reads

    piped = [str(p) for p in journals if str(p) == STDIN or is_stream(p)]
    if piped:
        # A dataset knows each journal by its path; a pipe's copy had a new one each run,
        # so the same session piped twice was collected twice.
        raise UsageError(
            f"collect reads files and folders, not a pipe ({', '.join(piped)}): a dataset "
            "knows each journal by its path"
        )

    dead = dead_link(target)
    if dead:  # resolving a loop below raised RuntimeError
        raise UsageError(f"--to {target}: {dead}")
    if reads(journals, target) or any(
        target.resolve().is_relative_to(p.resolve()) for p in journals if p.is_dir()
    ):
        raise UsageError(f"--to {target}: the dataset must not be inside the journals it reads")
    from agent_profiler.console import byte_progress, group_progress

    result = collect(
        journals,
        target,
        options=options,
        force=force,
        notice=lambda line: echo(line, err=True),
        progress=Progress(group_progress(journals), byte_progress()),
    )
    # What could not be used, as export and summary say it: failures, warnings by kind
    # (a damaged .gz, bad lines) and the records not recognised (it said only failures).
    from agent_profiler.console import tell_reading
    from agent_profiler.loader import LoadResult

    tell_reading(
        LoadResult(
            failures=result.failures, ignored=result.ignored, ignored_logs=result.ignored_logs
        ),
        result.diagnostics,
    )
    again = [
        f"{result.regrouped:,} of them read again with the new journals they belong with: "
        "a subagent's parent, a parent's subagent"
    ] if result.regrouped else []  # fmt: skip
    if result.beside is not None and result.beside.read_again:
        # (a journal a plan found beside those given that changed, or was not read)
        again.append(f"{result.beside.read_again:,} of them read again: {result.beside.said()}")
    seen = (
        f"{counted(result.journals, 'journal')}: {result.new:,} new, {result.changed:,} changed, "
        f"{result.unchanged:,} unchanged ({'; '.join(again) or 'not read'})"
    )
    if result.reread:
        seen += (
            f"; {result.reread:,} unchanged read again (the dataset's tables were written "
            "by another version, with other columns or figures)"
        )
    if result.copies:
        seen += (
            f"; {counted(result.copies, 'file')} with the bytes of a journal collected "
            "(a copy), not collected again"
        )
    if result.refused:
        seen += f"; {counted(result.refused, 'file')} not usable (said above), not collected"
    # The journals of a session whose reading failed on another (its file gone since the
    # plan), not read: not said apart.
    withheld = counted(result.withheld, "journal")
    if result.withheld and result.refused:
        seen += f", nor {withheld} read with {'it' if result.refused == 1 else 'them'}"
    elif result.withheld:
        seen += f"; {withheld} read with one that could not be read (said above), not collected"
    if result.kept:
        seen += (
            f"; {counted(result.kept, 'session')} whose journal collected before is unusable "
            "or damaged now (said above): its rows collected before are kept"
        )
    if result.missing:
        seen += f"; {result.missing:,} collected before and not found now (kept)"
    if result.version is None and not target.exists():
        echo(f"{target}: not made: no journal could be collected; {seen}")
    elif result.version is None:
        nothing = "nothing collected" if result.refused else "nothing new or changed"
        echo(f"{target}: {nothing}; {seen}; {counted(result.sessions_total, 'session')}")
    else:
        rows = ", ".join(f"{name} {count:,}" for name, count in result.rows.items())
        echo(
            f"{target}: version {result.version}; {seen}; read "
            f"{counted(result.groups_read, 'journal group')} in "
            f"{counted(result.jobs, 'process', 'processes')}; rows added: {rows}; "
            f"{counted(result.sessions_total, 'session')} in the dataset"
        )
    return 1 if result.failures or result.diagnostics.damaged else 0


def run_fleet(
    directory: Path,
    *,
    as_json: bool,
    html: Path | None,
    split: str | None,
    filters: tuple[str | None, ...],
    cost: bool,
    echo: Echo,
    write: Callable[[Path, str], int],
) -> int:
    from agent_profiler.cost import PriceTable
    from agent_profiler.model import Harness
    from agent_profiler.options import moment_ns
    from agent_profiler.outputs import is_stdout

    from . import Filters, open_dataset
    from .render import render_html, render_text

    chosen = Filters(*filters)
    harness = chosen.harness
    known = [h.value for h in Harness]
    if harness is not None and harness not in known:
        # It matched no session, silently: every figure 0, as if the dataset were empty.
        raise UsageError(f"--harness {harness!r} is not a harness ({', '.join(known)})")
    html_to_stdout = html is not None and is_stdout(html)
    if html is not None and not html_to_stdout and _inside(html, directory):
        # `--force` is "overwrite my old page", never "overwrite the dataset": the page
        # went over its manifest or a table (review-bad finding 6).
        raise UsageError(
            f"--html {html} is inside the dataset this reads ({directory}): write the page "
            "somewhere else"
        )
    if html_to_stdout and as_json:
        raise UsageError(
            "--json and --html - (-o -) would both write to stdout: give the page a file"
        )
    since_ns, before_ns = chosen.window()
    if since_ns is not None and before_ns is not None and since_ns >= before_ns:
        raise UsageError(
            f"--since {chosen.since} is not before --before {chosen.before}: no session "
            "could start in between"
        )
    split_ns = moment_ns(split) if split else None
    prices = PriceTable(directory / PRICES_CACHE) if cost else None
    import duckdb

    try:
        connection = open_dataset(directory)
        try:
            data, sides = _figures(connection, chosen, prices, split_ns)
            split_data: dict[str, Any] | None = None if sides is None else {"date": split, **sides}
        finally:
            connection.close()
    except duckdb.Error as error:
        # A file damaged in a way its size does not show (a dataset from before the
        # manifest listed its files, a flipped byte): named, not DuckDB's SQL excerpt.
        from agent_profiler.dataset.integrity import FLEET_HINT, explain

        problem = explain(directory, error, FLEET_HINT)
        if problem is None:
            raise
        raise problem from error
    if prices is not None:
        prices.save()
    data["filters"] = chosen.describe()
    given = ", ".join(f"--{k} {v}" for k, v in data["filters"].items())
    if given and not data["sessions"]["count"] + data["sessions"]["subagents"]:
        echo(f"note: no session in {directory} matches {given}", err=True)
    if split_data is not None:
        data["split"] = split_data
    # The folder's name (`fleet .` named it "": "fleet : 53 sessions"); never its path.
    # The filters beside it: a page of one harness's or one month's sessions says so.
    name = (directory.name or directory.resolve().name) + (f" ({given})" if given else "")
    if html is not None:
        size = write(html, render_html(data, f"Agent Profiler fleet: {name}", split_data))
        if html_to_stdout:
            echo(f"wrote stdout ({human_size(size)})", err=True)
        else:
            # The page is in place: a stdout that cannot take this line is no failure.
            tell(f"wrote {html} ({human_size(size)}); open it in any browser", err=as_json)
    if as_json:
        echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode())
    elif html is None:
        echo(render_text(data, f"fleet {name}"))
        if split_data is not None:
            # "from": the second half holds the sessions started on the date itself
            for side, said in (("before", "before"), ("after", "from")):
                echo("\n" + render_text(split_data[side], f"{said} {split}"))
    return 0


def _figures(
    connection: Any, chosen: Filters, prices: PriceTable | None, split_ns: int | None
) -> tuple[dict[str, Any], dict[str, dict[str, Any]] | None]:
    """The figures of the sessions `chosen`, and with a split those of each side of it.
    The three sets run at once, each on a cursor of its own (its own `picked` table):
    DuckDB lets the interpreter go while a query runs, and each set is about 25 small
    queries (5,000 sessions: 1.00-1.09 s for `fleet --split` one after the other, 0.80-0.90
    s at once; the same figures)."""
    from concurrent.futures import ThreadPoolExecutor

    from . import figures

    if split_ns is None:
        return figures(connection, chosen, prices), None
    windows: list[dict[str, int]] = [{}, {"until_ns": split_ns}, {"since_ns": split_ns}]
    cursors = [connection.cursor() for _ in windows]
    try:
        with ThreadPoolExecutor(len(windows)) as pool:
            made = [
                pool.submit(figures, cursor, chosen, prices, **window)
                for cursor, window in zip(cursors, windows, strict=True)
            ]
            data, before, after = (each.result() for each in made)
    finally:
        for cursor in cursors:
            cursor.close()
    return data, {"before": before, "after": after}


def _inside(output: Path, directory: Path) -> bool:
    """Whether the file `output` (there or not) lies in the dataset folder `directory`,
    through any link (`DS/current/…` is `DS/versions/<n>/…`)."""
    try:
        folder = directory.resolve()
        place = output.parent.resolve() / output.name
        if os.path.lexists(place):
            place = place.resolve()
    except (OSError, RuntimeError):  # a link loop: check_target names it
        return False
    return place.is_relative_to(folder)
