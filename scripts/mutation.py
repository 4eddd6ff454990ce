"""`make mutation`: mutmut on the core modules, one module at a time, with a score per module.

    python scripts/mutation.py [--max-children N] [--fresh] [--show] [--together]
                               [--survivors] [--sample N] [MODULE ...]

MODULE is a path such as src/agent_profiler/attribution.py (default: attribution.py, each
writer, each adapter, the one pass's modules). Only that module's mutants are generated
and run (mutmut's `only_mutate` is narrowed in-process), so a run on one module does not pay
for the others.
Verdicts are cached in mutants/ by mutmut; `--fresh` forgets the module's verdicts first
(after the tests changed). Each module run first runs the whole suite once, to map tests to
the module's functions. The score is killed / (mutants − skipped); timeouts count as killed,
"no tests" as not killed. Each survivor is printed with its diff; `--show` prints the cached
scores and survivors without running anything.

`--together` runs the given modules in one mutmut run (one pass of the suite to map tests,
one clean run, then every mutant that has no verdict yet): cheaper than one run per module
when many are measured. `--survivors` runs again only the survivors of the given modules
(their other verdicts stand), after tests were added to kill them. `--sample N` runs about N
mutants of each module (one in K, chosen by a hash of the name, the same every run): on
two shared cores a run of all 15,000 mutants takes hours, and a sample's score is an
estimate of the module's (±sqrt(p(1-p)/n)), with the sample's survivors listed."""

from __future__ import annotations

import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The layout package's modules (layout/), in a fixed order.
LAYOUT = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src/agent_profiler/layout").glob("*.py"))
DEFAULT = [
    "src/agent_profiler/attribution.py",
    # The writers: the format-neutral layout and slice arguments they encode, then the encoders.
    *LAYOUT,
    "src/agent_profiler/annotations.py",
    "src/agent_profiler/views.py",
    "src/agent_profiler/writers/chrome_json.py",
    "src/agent_profiler/writers/perfetto.py",
    "src/agent_profiler/writers/events.py",
    "src/agent_profiler/writers/wire.py",
    "src/agent_profiler/writers/chunks.py",
    "src/agent_profiler/writers/packets.py",
    "src/agent_profiler/writers/direct.py",
    "src/agent_profiler/writers/runs.py",
    "src/agent_profiler/writers/__init__.py",
    "src/agent_profiler/scan.py",
    "src/agent_profiler/leaving.py",
    # The one pass (stream/): Pi's default path, and Codex's and Claude Code's for one long
    # journal exported alone (its reading on a second core) or with the switch; measured
    # against the whole suite (its differential tests and its cases).
    *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src/agent_profiler/stream").glob("*.py")),
    "src/agent_profiler/adapters/common.py",
    "src/agent_profiler/adapters/drafts.py",
    "src/agent_profiler/adapters/__init__.py",
    "src/agent_profiler/adapters/claude_code.py",
    "src/agent_profiler/adapters/claude_compaction.py",
    "src/agent_profiler/adapters/claude_content.py",
    "src/agent_profiler/adapters/claude_response.py",
    "src/agent_profiler/adapters/claude_session.py",
    "src/agent_profiler/adapters/claude_stream.py",
    "src/agent_profiler/adapters/codex.py",
    "src/agent_profiler/adapters/codex_events.py",
    "src/agent_profiler/adapters/codex_records.py",
    "src/agent_profiler/adapters/codex_rollout.py",
    "src/agent_profiler/adapters/pi.py",
    "src/agent_profiler/adapters/pi_messages.py",
    "src/agent_profiler/adapters/pi_records.py",
    "src/agent_profiler/adapters/pi_tree.py",
    "src/agent_profiler/adapters/muse.py",
    "src/agent_profiler/adapters/muse_drafts.py",
    "src/agent_profiler/adapters/muse_journal.py",
    "src/agent_profiler/adapters/muse_lanes.py",
    "src/agent_profiler/adapters/muse_records.py",
    "src/agent_profiler/adapters/muse_runs.py",
    "src/agent_profiler/adapters/gemini_cli.py",
    "src/agent_profiler/adapters/gemini_recording.py",
    "src/agent_profiler/adapters/gemini_session.py",
    "src/agent_profiler/adapters/opencode.py",
    "src/agent_profiler/adapters/opencode_session.py",
    "src/agent_profiler/adapters/opencode_storage.py",
]
# The layout and the Perfetto encoder are reached by every test that exports anything, so a
# surviving mutant of theirs would run the whole suite (over a minute each). They are measured
# against the tests of traces instead, in a copy of the tree of their own (mutmut resets every
# verdict when the test selection changes): each harness's trace tests, the rule tests, the
# goldens, the contract, the two writers agreeing, privacy and accounting.
WRITER_MODULES = {
    *LAYOUT,
    "src/agent_profiler/annotations.py",
    "src/agent_profiler/writers/perfetto.py",
    "src/agent_profiler/writers/events.py",
    "src/agent_profiler/writers/wire.py",
    "src/agent_profiler/writers/chunks.py",
    "src/agent_profiler/writers/packets.py",
    "src/agent_profiler/writers/direct.py",
    "src/agent_profiler/writers/runs.py",
    "src/agent_profiler/writers/__init__.py",
}
WRITER_TESTS = [
    "tests/layout/test_trace.py",
    "tests/writers/test_golden.py",
    "tests/writers/test_writers_agree.py",
    "tests/writers/test_contract_reference.py",
    "tests/writers/test_chrome_json.py",
    # The byte encoders' own tests: each leaf, packet and argument builder against protobuf.
    "tests/writers/test_wire.py",
    "tests/writers/test_packets.py",
    "tests/writers/test_direct.py",
    "tests/writers/test_events.py",
    "tests/writers/test_runs.py",  # a long session in two runs, the helper process
    "tests/adapters/test_duplicate_sessions.py",
    "tests/adapters/claude_code/test_context_only.py",
    "tests/adapters/claude_code/test_context_native.py",
    "tests/adapters/test_zero_usage.py",
    "tests/adapters/claude_code/test_claude_code.py",
    "tests/adapters/codex/test_codex.py",
    "tests/adapters/pi/test_pi.py",
    "tests/adapters/muse/test_muse.py",
    "tests/adapters/gemini_cli/test_gemini_cli.py",
    "tests/adapters/opencode/test_opencode.py",
    "tests/hostile/test_accounting.py",
    "tests/hostile/test_privacy.py",
    "tests/reading/test_memory.py",
    # A calibrated export's capture and counters (what `profile (1)` says of its estimates).
    "tests/attribution/test_estimate.py",
    "tests/attribution/test_estimate_family.py",
]
KILLED = {1, 3, 36, 37, -24, 24, 152, -9, -11}  # failed, type check, timeouts
SKIPPED = {34}


def suite_of(module: str) -> str:
    return "writers" if module in WRITER_MODULES else ""


def root_of(suite: str) -> Path:
    """Where a suite's mutmut runs: the tree itself, or a copy of its files under .mutation/."""
    return ROOT / ".mutation" / suite if suite else ROOT


def sync(suite: str) -> None:
    """Bring the suite's copy of the tree up to date (every file git knows or would add)."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    target = root_of(suite)
    for name in (n.decode() for n in listed if n):
        source, copy = ROOT / name, target / name
        if not source.is_file():
            continue
        if not copy.exists() or copy.read_bytes() != source.read_bytes():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, copy)


def dotted(module: str) -> str:
    name = module.removeprefix("src/").removesuffix(".py").removesuffix("/__init__")
    return name.replace("/", ".")


def meta_path(module: str) -> Path:
    return root_of(suite_of(module)) / "mutants" / f"{module}.meta"


def forget(module: str) -> None:
    """Drop cached verdicts of `module` (the tests changed)."""
    path = meta_path(module)
    if path.exists():
        data = json.loads(path.read_text())
        data["exit_code_by_key"] = dict.fromkeys(data["exit_code_by_key"])
        path.write_text(json.dumps(data))


def run_one(modules: list[str], names: list[str], max_children: int) -> None:
    """In this process: mutmut `run` with only_mutate narrowed to `modules`, on the mutants
    `names` (patterns; none: every mutant of these modules without a verdict)."""
    import mutmut.configuration as configuration
    from mutmut.__main__ import cli

    config = configuration.config()
    config.only_mutate = modules
    if suite_of(modules[0]) == "writers":
        tests = [t for t in WRITER_TESTS if Path(t).exists()]
        # The rule tests (in the tests' folders since tests/ was split) and the layout's own.
        rules = {str(p) for p in Path("tests").rglob("test_rules_*.py")}
        rules |= {str(p) for p in Path("tests/layout").glob("test_*.py")}
        rules.discard("tests/layout/test_module_size.py")  # mutmut's copies are long
        config.pytest_add_cli_args_test_selection = tests + sorted(rules - set(tests))
    cli(["run", "--max-children", str(max_children), *names])


def score(module: str, sample: int = 0) -> tuple[int, int, int, list[str]]:
    """(killed, counted, not run yet, survivors) from mutmut's results for `module`
    (`sample`: of the mutants `sampled` draws only)."""
    data = json.loads(meta_path(module).read_text())
    codes: dict[str, int | None] = data["exit_code_by_key"]
    if sample:
        drawn = set(sampled(mutant_names(module), sample))
        codes = {k: v for k, v in codes.items() if k in drawn}
    counts = Counter(codes.values())
    killed = sum(n for code, n in counts.items() if code in KILLED)
    counted = sum(n for code, n in counts.items() if code is not None and code not in SKIPPED)
    survivors = sorted(k for k, code in codes.items() if code is not None and code not in KILLED)
    survivors = [k for k in survivors if codes[k] not in SKIPPED]
    return killed, counted, counts.get(None, 0), survivors


_MUTATED: dict[str, Any] = {}


def diff(module: str, name: str) -> list[str]:
    """The changed lines of a mutant, from mutmut's mutation of the module's source (done
    here again, so it does not matter which module mutants/ holds now)."""
    import libcst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function
    from mutmut.mutation.file_mutation import mutate_file_contents

    if module not in _MUTATED:
        source = (ROOT / module).read_text()
        _MUTATED[module] = libcst.parse_module(mutate_file_contents(module, source).code)
    tree = _MUTATED[module]
    before, after = (
        libcst.Module([f]).code.strip().splitlines()
        for f in (read_original_function(tree, name), read_mutant_function(tree, name))
    )
    shown = difflib.unified_diff(before, after, lineterm="")
    return [line for line in shown if line[:2] in ("- ", "+ ")]


def mutant_names(module: str) -> list[str]:
    """Every mutant mutmut makes of `module`, by its full name."""
    from mutmut.mutation.file_mutation import mutate_file_contents

    code = mutate_file_contents(module, (ROOT / module).read_text()).code
    found = sorted(set(re.findall(r"def (x\w+__mutmut_\d+)\(", code)))
    return [f"{dotted(module)}.{name}" for name in found]


def sampled(names: list[str], about: int) -> list[str]:
    """About `about` of a module's mutants: one in K = round(len / about), chosen by a hash
    of the name, so every run (before and after new tests) draws the same ones."""
    step = max(1, round(len(names) / about))
    return [n for n in names if zlib.crc32(n.encode()) % step == 0]


def refresh_data(root: Path) -> None:
    """The package's files that are not Python (the calibrated table) copied into mutants/
    again: mutmut copies them once, so a table refit since would stay stale there, and
    the tests that pin it would fail in mutmut's first run of the suite."""
    for source in (root / "src").rglob("*"):
        if not source.is_file() or source.suffix == ".py" or "__pycache__" in source.parts:
            continue
        copy = root / "mutants" / source.relative_to(root)
        if copy.parent.is_dir() and (not copy.exists() or copy.read_bytes() != source.read_bytes()):
            shutil.copyfile(source, copy)


def prepare(module: str, fresh: bool) -> None:
    refresh_data(root_of(suite_of(module)))
    mutated = root_of(suite_of(module)) / "mutants" / module
    if mutated.exists() and "mutmut" not in mutated.read_text():
        # A run on another module left this one as a plain copy: mutmut would take it as
        # up to date and find no mutants in it.
        mutated.unlink()
    # mutmut keeps which tests reach which function only for the modules mutated when it
    # collected them: collect again for this one (a run of the suite).
    (root_of(suite_of(module)) / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    if fresh:
        forget(module)


def main(argv: list[str]) -> int:
    max_children, fresh, show, together, again, sample = 2, False, False, False, False, 0
    modules: list[str] = []
    names: list[str] = []
    args = iter(argv)
    for arg in args:
        if arg == "--max-children":
            max_children = int(next(args))
        elif arg == "--fresh":
            fresh = True
        elif arg == "--show":
            show = True
        elif arg == "--together":
            together = True
        elif arg == "--survivors":
            again = True
        elif arg == "--run":
            modules = next(args).split(",")
        elif arg == "--names":
            names = Path(next(args)).read_text().split()
        elif arg == "--sample":
            sample = int(next(args))
        else:
            modules.append(arg)
    if "--run" in argv:
        run_one(modules, [n for n in names if n], max_children)
        return 0
    modules = modules or DEFAULT
    command = [sys.executable, str(Path(__file__).resolve()), "--max-children", str(max_children)]
    if together or again:  # one run per suite
        suites = {suite_of(m) for m in modules}
        batches = [[m for m in modules if suite_of(m) == s] for s in sorted(suites)]
    else:
        batches = [[module] for module in modules]
    env = dict(os.environ)
    # pytest's temporary folders, its own: pytest removes all but the newest few under
    # $TMPDIR/pytest-of-<user>, and another pytest run on the machine (a `make test`)
    # could take a mutant's tmp_path away mid-test, which would count as a kill.
    private = ROOT / ".mutation" / "tmp"
    private.mkdir(parents=True, exist_ok=True)
    env["TMPDIR"] = str(private)
    shared = ROOT.parent / "shared"
    if shared.is_dir():  # the copies under .mutation/ are not beside it
        env.setdefault("AGENT_PROFILER_SHARED", str(shared))
    for batch in batches if not show else []:
        suite = suite_of(batch[0])
        if suite:
            sync(suite)
        for module in batch:
            prepare(module, fresh)
        if again:
            chosen = [n for m in batch if meta_path(m).exists() for n in score(m)[3]]
        elif sample:
            chosen = [n for m in batch for n in sampled(mutant_names(m), sample)]
        else:
            chosen = [] if together else [f"{dotted(batch[0])}.*"]
        if again and sample:
            chosen = [n for m in batch for n in sampled(mutant_names(m), sample) if n in chosen]
        if (again or sample) and not chosen:
            continue
        listed = root_of(suite) / "mutants" / "chosen.txt"
        listed.parent.mkdir(parents=True, exist_ok=True)
        listed.write_text("\n".join(chosen))
        run = ["--run", ",".join(batch), "--names", str(listed)]
        subprocess.run([*command, *run], cwd=root_of(suite), env=env, check=False)
    rows = []
    for module in modules:
        if not meta_path(module).exists():
            rows.append(f"{module}: no mutants (or mutmut failed)")
            continue
        killed, counted, pending, survivors = score(module, sample)
        if not counted:
            rows.append(f"{module}: not run ({pending} mutants)")
            continue
        rate = killed / counted
        rows.append(
            f"{module}: {100 * rate:.1f}% ({killed}/{counted} killed"
            + (f", {pending} not run" if pending else "")
            + (f"; a sample: ±{100 * (rate * (1 - rate) / counted) ** 0.5:.1f}%" if sample else "")
            + ")"
        )
        for name in survivors:
            rows.append(f"    survived: {name}")
            rows.extend(f"        {line}" for line in diff(module, name))
    print("\nmutation score per module")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
