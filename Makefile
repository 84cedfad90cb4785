PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test test-fast demo bench docs lint install clean faults

# pytest-xdist: one worker per core; a test file stays on one worker (its module fixtures are
# built once); files handed out in the order tests/conftest.py gives them (file_order: the
# files with the most tests first, a file with a slow test counted 20 tests more)
XDIST := -n auto --dist loadfile --no-loadscope-reorder
# the suite starts a few hundred Python processes (the CLI, memory-capped children, a sweep's
# workers); with PYTHONDONTWRITEBYTECODE set in the environment each of them compiled every module
# it imports from source again (numba's cache is written into src/ either way)
PYTEST := env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# the package and what the tests need (pytest, hypothesis); optional extras' tests skip when absent
$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

test: $(STAMP)
	$(PYTEST) -q $(XDIST)

# the inner loop: the unit tests, without the slow ones, the end-to-end suite and the fault suite
test-fast: $(STAMP)
	$(PYTEST) -q $(XDIST) -m "not slow and not e2e and not faults"

demo: $(STAMP)
	$(BIN)/cmdp-rl reproduce --out results/paper

# every case of the fault-injection suite (with the tables extra: cut Parquet files are among the
# cases); its tally regenerates docs/reliability.md's table
faults: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[tables]"
	CMDP_RL_FAULTS=full CMDP_RL_FAULTS_REPORT=docs/reliability.json $(PYTEST) -q $(XDIST) tests/faults
	$(BIN)/python scripts/reliability_table.py docs/reliability.json

bench: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[bench]"
	$(BIN)/python -m benchmarks

# the API reference site from the docstrings (strict: a broken reference fails the build)
docs: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[docs]"
	$(BIN)/mkdocs build --strict --site-dir site

lint: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build site *.egg-info src/*.egg-info
