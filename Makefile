# Quick start:  make demo   (install into .venv and run the main demo)
#               make test   (install the test extras and run the whole test suite)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
SHIFTLEARN_DATA ?= $(abspath ../shared/data)
export SHIFTLEARN_DATA

.PHONY: venv install install-test demo test test-slow lint bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)

install: $(PY)
	$(PIP) install -q -e .

install-test: $(PY)
	$(PIP) install -q -e '.[test]'

demo: install
	$(VENV)/bin/shiftlearn demo

test: install-test
	$(VENV)/bin/ruff check shiftlearn tests benchmarks
	$(PY) -m pytest -n 2 -q

test-slow: install-test
	$(PY) -m pytest -q -m slow

lint: install-test
	$(VENV)/bin/ruff check shiftlearn tests benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info
