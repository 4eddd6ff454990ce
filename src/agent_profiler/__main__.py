"""`python -m agent_profiler` is the same as the `agent-profiler` command."""

from agent_profiler.entry import console

if __name__ == "__main__":  # not when a worker process imports it (multiprocessing)
    console()
