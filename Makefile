# Two commands for a fresh machine: `make demo` and `make test` (each creates .venv itself).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_JOURNAL := tests/data/journals/claude-code/entire-4b-7d5121b42a-0_v2.1.14_compact-boundary.jsonl

.PHONY: help demo test check lint types browser unit golden bench screenshots clean mutation

help:  ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-11s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)  ## Export a bundled Claude Code journal to sample_traces/ and say how to open it
	mkdir -p sample_traces
	$(BIN)/agent-profiler export $(DEMO_JOURNAL) -o sample_traces/claude-code-compaction.pftrace --force
	@echo "(the command lives in .venv/bin: .venv/bin/agent-profiler open sample_traces/claude-code-compaction.pftrace)"

test: lint types unit  ## Lint, type-check and run the whole test suite (installs nothing outside .venv)

check: $(STAMP)  ## Quick edit-test loop: ruff, then the tests not marked slow (stops at the first failure)
	$(BIN)/ruff check src tests scripts
	$(BIN)/pytest -q -x -m 'not slow'

lint: $(STAMP)  ## ruff lint and format check
	$(BIN)/ruff check src tests scripts
	$(BIN)/ruff format --check src tests scripts

types: $(STAMP)  ## mypy --strict on the package
	$(BIN)/mypy

browser:  ## apt-get Debian's chromium for the report's browser test (root only, best effort; not in `make test`)
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" -eq 0 ] && \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	   --no-install-recommends chromium fonts-liberation >/dev/null) ; } || \
	  echo "chromium not installed: the browser test of the report will be skipped"

# Each run's temporary folders in a root of their own, removed after it: pytest's shared
# /tmp/pytest-of-<user> is cleaned by every run, and one run listing it while another
# removed its old folders failed the first at exit (an unclosed directory listing).
unit: $(STAMP)  ## pytest
	@root=$$(mktemp -d); PYTEST_DEBUG_TEMPROOT=$$root $(BIN)/pytest -q; status=$$?; \
	  rm -rf "$$root"; exit $$status

golden: $(STAMP)  ## Rewrite tests/golden/ (decoded text, Chrome JSON; review the diff like code)
	$(BIN)/pytest -q tests/writers/test_golden.py tests/report/test_chart_gaps.py --update-golden

screenshots: $(STAMP)  ## Regenerate docs/img/: report and fleet pages in Chromium; the Perfetto UI ones with PERFETTO_UI=<folder with its shot.sh>
	bash scripts/screenshots.sh

# Not part of `make test`: slow (2–4 mutants a second on 2 cores). MODULE=src/…/x.py for one
# module, FRESH=1 to forget cached verdicts after the tests changed, SHOW=1 to print them only,
# TOGETHER=1 to run the modules in one mutmut run, SURVIVORS=1 to run only the survivors again,
# SAMPLE=N to run about N mutants of each module (the same ones every run).
mutation: $(STAMP)  ## mutmut on attribution, layout, annotations, views, writers, adapters, stream; score per module
	nice -n 10 $(BIN)/python scripts/mutation.py --max-children $(or $(JOBS),2) \
	  $(if $(FRESH),--fresh) $(if $(SHOW),--show) \
	  $(if $(TOGETHER),--together) $(if $(SURVIVORS),--survivors) \
	  $(if $(SAMPLE),--sample $(SAMPLE)) $(MODULE)

clean:  ## Remove the virtual environment and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache mutants

bench: $(STAMP)  ## Every row of the performance targets (BENCH_ARGS=--quick for a smoke test)
	$(BIN)/python scripts/bench.py $(BENCH_ARGS)
