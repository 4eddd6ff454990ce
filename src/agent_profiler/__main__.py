"""`python -m agent_profiler` is the same as the `agent-profiler` command."""

from agent_profiler.entry import main

main()
