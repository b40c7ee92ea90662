# Two commands set up everything on a fresh machine:
#   make demo   - create .venv, install the crawler, crawl the bundled fixture site on loopback
#   make test   - create .venv, install dev tools, run ruff, mypy and the whole test suite
#   make test-fast - the edit-and-test loop: no slow, Redis or browser test (pytest -m)
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
STAMP   = $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
BENCH_STAMP = $(VENV)/.bench-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

SUDO    = $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test test-fast lint bench clean redis-server chromium

# Said on stderr, the commands and their output: `make demo`'s stdout holds the JSON Lines only.
$(STAMP): pyproject.toml
	@echo "installing the crawler into $(VENV) (first run only)" >&2
	@{ test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); } >&2
	@$(BIN)/python -m pip install --quiet --upgrade pip >&2
	@$(BIN)/python -m pip install --quiet -e '.[dev]' >&2
	@rm -f $(VENV)/.installed-*
	@touch $@

demo: $(STAMP)
	@$(BIN)/crawl --demo  # "@": stdout holds the JSON Lines only

lint: $(STAMP)
	$(BIN)/ruff check crawler tests bench
	$(BIN)/ruff format --check crawler tests bench
	$(BIN)/mypy

# The Redis tests start Debian's redis-server on a free loopback port: install it when missing.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq redis-server; }

# The rendering tests drive Debian's chromium through playwright (the dev extra): install it when
# missing (no `playwright install`: the crawler launches the system's Chromium).
chromium:
	@command -v chromium >/dev/null 2>&1 || test -x /usr/bin/chromium || { \
		$(SUDO) apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

# The suite runs in parallel (pytest-xdist): most tests wait on loopback servers, subprocesses
# or a browser, so more workers than cores keeps both cores busy (3: with 4, the tests that time a
# browser or a watchdog failed under the load). Each test's servers, ports and
# temporary directories are its own. The Redis Cluster tests share one worker (an xdist group:
# tests/conftest.py), so one cluster of 6 nodes runs at a time.
WORKERS ?= 3

test: lint redis-server chromium
	$(BIN)/pytest -q -n $(WORKERS) --dist loadgroup

test-fast: $(STAMP)
	$(BIN)/pytest -q -n 2 -m "not slow and not redis and not browser"

$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,bench]'
	rm -f $(VENV)/.bench-*
	touch $@

bench: $(BENCH_STAMP) redis-server chromium
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
