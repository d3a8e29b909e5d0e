# The two commands: `make run` serves the API locally, `make test` runs the suite.
# DynamoDB: `make dynamodb-table`, `make run-dynamodb`, `make package` (docs/deploy.md).
# `make bench` runs the benchmarks (bench/) and writes their figures into BENCHMARKS.md.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
MOTO_PORT ?= 5000
# chalice's autoreload polls every file under the project (.venv and the SQLite
# file in .data included) and restarts the server, dropping requests in flight,
# whenever one changes: every write would do. Restart by hand after a code change.
CHALICE_LOCAL_FLAGS ?= --no-autoreload
WORKFLOW_TABLE ?= approval-workflows

.PHONY: run test bench profile venv clean dynamodb-table run-dynamodb package

venv: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

run: venv
	$(BIN)/chalice local --host $(HOST) --port $(PORT) --stage dev $(CHALICE_LOCAL_FLAGS)

test: venv
	$(BIN)/python -m pytest -q

# Creates WORKFLOW_TABLE where boto3's environment points (AWS_ENDPOINT_URL_DYNAMODB,
# AWS_PROFILE, AWS_DEFAULT_REGION, ...); does nothing if it exists.
dynamodb-table: venv
	WORKFLOW_TABLE=$(WORKFLOW_TABLE) $(BIN)/python scripts/create_table.py

# The API on a throwaway moto DynamoDB (port MOTO_PORT); no AWS account needed.
run-dynamodb: venv
	HOST=$(HOST) PORT=$(PORT) MOTO_PORT=$(MOTO_PORT) WORKFLOW_TABLE=$(WORKFLOW_TABLE) \
		BIN=$(BIN) CHALICE_LOCAL_FLAGS="$(CHALICE_LOCAL_FLAGS)" bash scripts/run_dynamodb.sh

# dist/sam.json and dist/deployment.zip for CloudFormation, table included; offline.
package: venv
	$(BIN)/python scripts/package.py --stage prod --out dist

bench: venv
	$(BIN)/python -m bench.run

# The call tree of the hot path (BACKEND=sqlite or dynamodb).
BACKEND ?= sqlite
profile: venv
	$(BIN)/python -m bench.profile_hot_path $(BACKEND)

clean:
	rm -rf $(VENV) .data
