# Quick start:  make demo   (install into .venv and run the main demo)
#               make test   (install the test extras and run the whole test suite)
#               make install-deep   (PyTorch for the deep-model tests; CI does it first)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# the real data sets: $SHIFTLEARN_DATA if set, else ../shared/data beside the clone
SHIFTLEARN_DATA ?= $(abspath ../shared/data)
export SHIFTLEARN_DATA
PYTEST_ARGS ?=

.PHONY: venv install install-test install-deep demo test test-slow lint baselines docs clean

$(PY):
	$(PYTHON) -m venv $(VENV)

venv: $(PY)

# stamps: reinstall only when pyproject.toml changes
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -q -e .
	@touch $@

# docs: tests/house/test_docs_build.py builds the API reference with warnings as errors in make test
$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test,federated,dask,docs]'
	@touch $@ $(VENV)/.installed

# the deep extra (torch==2.13.0, pinned): on the project's machines pip takes the CPU build from
# the local disk (about 20 s in a fresh venv); elsewhere it is a download of the default build,
# so `make test` does not force it on a developer: without torch the deep-model tests are
# skipped and say why. CI (.ci/run) installs it before `make test`, so they run on every
# submission (35 tests, about 10 s on one core).
$(VENV)/.installed-deep: pyproject.toml | $(PY)
	$(PIP) install -q -e '.[deep]'
	@touch $@

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

install-deep: $(VENV)/.installed-deep

demo: install
	$(VENV)/bin/shiftlearn demo subspace

# ruff and the import layers (import-linter, [tool.importlinter] in pyproject.toml) first,
# pytest last: the output ends with pytest's summary line
test: install-test browser
	$(VENV)/bin/ruff check shiftlearn tests benchmarks
	$(VENV)/bin/lint-imports
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

# headless Chromium for the HTML-report tests (Debian's package), best effort: without root or
# network those tests are skipped and say why
.PHONY: browser
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	  && { timeout 300 apt-get install -y -q chromium >/dev/null 2>&1 || { timeout 300 apt-get \
	  update -q >/dev/null 2>&1 && timeout 300 apt-get install -y -q chromium >/dev/null 2>&1; }; } \
	  && echo "installed chromium for the HTML-report tests" \
	  || echo "chromium not available: the HTML-report browser tests will be skipped"; }

# paper-scale runs; "no tests collected" (exit 5) is not a failure here
test-slow: install-test
	$(PY) -m pytest -q -m slow $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "no slow tests"; exit 0; fi; exit $$rc

lint: install-test
	$(VENV)/bin/ruff check shiftlearn tests benchmarks
	$(VENV)/bin/lint-imports

baselines: install
	$(PY) benchmarks/datasets/datasets_raw_1nn.py

# the docs pages and the API reference (Sphinx + numpydoc + MyST, the docs extra) as HTML in
# docs/_build/html (ignored by git), warnings as errors as in CI (tests/house/test_docs_build.py).
# Every page is re-read (-E): an incremental build would not repeat the warnings of the pages
# it skips, so a second `make docs` would pass with the same faults.
SPHINXOPTS ?=
docs: install-test
	$(PY) -m sphinx -E -W --keep-going -q -b html $(SPHINXOPTS) docs docs/_build/html
	@echo "API reference and docs pages: docs/_build/html/index.html"

clean:
	rm -rf $(VENV) build dist *.egg-info docs/_build

# mutation testing of the core modules (mutmut, one worker; outside `make test`): each module
# group runs in its own snapshot of HEAD under .mutation/ in minutes; pick groups with
# MUTATION_GROUPS="kernels sca". Scores: tools/results/mutation.md (docs/testing.md)
MUTATION_GROUPS ?=
.PHONY: mutation
mutation: install-test
	$(PY) -c "import mutmut" 2>/dev/null || $(PIP) install -q -e '.[mutation]'
	$(PY) tools/mutation.py $(MUTATION_GROUPS)

# speed history (pytest-benchmark, the bench extra): benchmarks/test_speed_history.py times the
# fits the docs promise on one BLAS thread, saves each run in .benchmarks/ (ignored by git) and
# compares it with the previous one. BENCH_SRC=DIR times the library found in DIR (a git
# worktree of an older commit) with the same cases; BENCH_ARGS are passed to pytest, e.g.
# BENCH_ARGS="--benchmark-compare-fail=min:20%". See benchmarks/README.md.
BENCH_SRC ?= .
BENCH_ARGS ?=
.PHONY: bench
bench: install-test
	$(PY) -c "import pytest_benchmark" 2>/dev/null || $(PIP) install -q -e '.[bench]'
	cd $(BENCH_SRC) && OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 \
	  $(abspath $(PY)) -m pytest $(CURDIR)/benchmarks/speed -q -p no:cacheprovider \
	  --rootdir=$(CURDIR) --import-mode=importlib --benchmark-only --benchmark-storage=$(CURDIR)/.benchmarks \
	  --benchmark-autosave $$(ls $(CURDIR)/.benchmarks/*/*.json >/dev/null 2>&1 && \
	  echo --benchmark-compare) $(BENCH_ARGS)
