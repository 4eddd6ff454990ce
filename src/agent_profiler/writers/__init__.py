"""Output writers, one module per format. The format is chosen from the output
file name (`.pftrace`, `.perfetto-trace`) unless given explicitly."""

from __future__ import annotations

from agent_profiler.writers.perfetto import ContentMode, PerfettoWriter, TraceFacts

__all__ = ["ContentMode", "PerfettoWriter", "TraceFacts"]
