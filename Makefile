# The two commands: `make run` serves the API locally, `make test` runs the suite.
# `make bench` runs the benchmarks (bench/) and writes their figures into BENCHMARKS.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1

.PHONY: run test bench profile venv clean

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

run: venv
	$(BIN)/chalice local --host $(HOST) --port $(PORT) --stage dev

test: venv
	$(BIN)/python -m pytest -q

bench: venv
	$(BIN)/python -m bench.run

# The call tree of the hot path (BACKEND=sqlite or dynamodb).
BACKEND ?= sqlite
profile: venv
	$(BIN)/python -m bench.profile_hot_path $(BACKEND)

clean:
	rm -rf $(VENV) .data
