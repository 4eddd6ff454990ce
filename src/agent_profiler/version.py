"""The package's version, in a module of its own: the writers, the report and the command
line read it without importing the package's public surface (`agent_profiler/__init__`),
and the build reads it from here (pyproject.toml, `[tool.hatch.version]`)."""

__version__ = "0.1.0"
