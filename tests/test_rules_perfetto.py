"""The Perfetto writer's wire rules (writers/perfetto.py) and the choice of writer
(writers/__init__.py), pinned on the packets themselves: what the decoded goldens cannot
see (interning, which wire type a value takes, how counter samples share a packet, the
clock snapshot, the framing) is asserted on the raw protobuf of real exports."""

from __future__ import annotations

from pathlib import Path

import pytest

import agent_profiler.writers as writers
from agent_profiler.errors import UsageError
from agent_profiler.writers import writer_class
from agent_profiler.writers.chrome_json import ChromeJsonWriter
from agent_profiler.writers.perfetto import PerfettoWriter

# --------------------------------------------------------------------------- writers/__init__


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("trace.pftrace", PerfettoWriter),
        ("trace.perfetto-trace", PerfettoWriter),
        ("trace.pb", PerfettoWriter),
        ("trace.json", ChromeJsonWriter),
        ("TRACE.JSON", ChromeJsonWriter),  # the suffix's case does not matter
        ("Trace.PfTrace", PerfettoWriter),
        ("trace.txt", PerfettoWriter),  # a name that says nothing: Perfetto
    ],
)
def test_the_output_name_picks_the_writer(output: str, expected: type) -> None:
    assert writer_class(None, Path(output)) is expected


def test_without_a_name_or_format_the_writer_is_perfetto() -> None:
    assert writer_class(None, None) is PerfettoWriter


def test_the_format_option_wins_over_the_file_name() -> None:
    assert writer_class("json", Path("trace.pftrace")) is ChromeJsonWriter
    assert writer_class("perfetto", Path("trace.json")) is PerfettoWriter
    assert writer_class("json", None) is ChromeJsonWriter


def test_an_unknown_format_is_a_usage_error_listing_the_known_ones() -> None:
    with pytest.raises(UsageError) as raised:
        writer_class("svg", Path("trace.json"))
    assert str(raised.value) == "unknown format 'svg' (known: perfetto, json)"


def test_the_writers_module_names_its_writers_lazily() -> None:
    assert (PerfettoWriter, ChromeJsonWriter) == writers.WRITERS
    assert writers.PerfettoWriter is PerfettoWriter
    assert writers.ChromeJsonWriter is ChromeJsonWriter
    with pytest.raises(AttributeError) as raised:
        _ = writers.SvgWriter  # type: ignore[attr-defined]
    assert str(raised.value) == "module 'agent_profiler.writers' has no attribute 'SvgWriter'"
