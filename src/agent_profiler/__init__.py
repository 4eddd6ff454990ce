"""agent-profiler: coding-agent journals → Perfetto traces of context-window composition."""

__version__ = "0.1.0"
