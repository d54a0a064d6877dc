# Quick start:  make demo   (install into .venv and run the main demo)
#               make test   (install the test extras and run the whole test suite)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# the real data sets: $SHIFTLEARN_DATA if set, else ../shared/data beside the clone
SHIFTLEARN_DATA ?= $(abspath ../shared/data)
export SHIFTLEARN_DATA
PYTEST_ARGS ?=

.PHONY: venv install install-test demo test test-slow lint baselines clean

$(PY):
	$(PYTHON) -m venv $(VENV)

venv: $(PY)

# stamps: reinstall only when pyproject.toml changes
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PIP) install -q -e .
	@touch $@

$(VENV)/.installed-test: pyproject.toml | $(PY)
	$(PIP) install -q -e '.[test,federated,dask]'
	@touch $@ $(VENV)/.installed

install: $(VENV)/.installed

install-test: $(VENV)/.installed-test

demo: install
	$(VENV)/bin/shiftlearn demo subspace

# ruff first, pytest last: the output ends with pytest's summary line
test: install-test
	$(VENV)/bin/ruff check shiftlearn tests benchmarks
	OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

# paper-scale runs; "no tests collected" (exit 5) is not a failure here
test-slow: install-test
	$(PY) -m pytest -q -m slow $(PYTEST_ARGS); rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "no slow tests"; exit 0; fi; exit $$rc

lint: install-test
	$(VENV)/bin/ruff check shiftlearn tests benchmarks

baselines: install
	$(PY) benchmarks/datasets/datasets_raw_1nn.py

clean:
	rm -rf $(VENV) build dist *.egg-info

# mutation testing of the core modules (mutmut, one worker; outside `make test`): each module
# group runs in its own snapshot of HEAD under .mutation/ in minutes; pick groups with
# MUTATION_GROUPS="kernels sca". Scores: benchmarks/results/mutation.md (docs/testing.md)
MUTATION_GROUPS ?=
.PHONY: mutation
mutation: install-test
	$(PY) -c "import mutmut" 2>/dev/null || $(PIP) install -q -e '.[mutation]'
	$(PY) benchmarks/mutation.py $(MUTATION_GROUPS)
