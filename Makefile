# The two commands: `make run` serves the API locally, `make test` runs the suite.
# `make run-oidc` serves it with sign-in through a local OpenID provider (docs/auth.md).
# `make test-fast` is the inner loop; `make lint` is ruff and mypy, and ESLint and
# TypeScript's checker over the approvers' page (chalicelib/ui/*.js).
# DynamoDB: `make dynamodb-table`, `make run-dynamodb`, `make package`, `make scan` (docs/deploy.md).
# `make rehearse` runs the packaged stack as deployed, offline (docs/rehearsal.md).
# `make bench` runs the benchmarks (bench/) and writes their figures into BENCHMARKS.md.
# `make screenshots` writes the approvers' page's screenshots into docs/screenshots/.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# checkov (make scan) has a virtualenv of its own: see requirements-scan.txt.
SCAN_VENV := .venv-scan
PIP := $(BIN)/python -m pip install --disable-pip-version-check --progress-bar on
PORT ?= 8000
HOST ?= 127.0.0.1
MOTO_PORT ?= 5000
# Flags for scripts/local_server.py, which serves `make run` and `make run-dynamodb`
# (chalice local's stage handling; the deployed API's 404 for unknown paths; one
# access line per request). No reloading by default: chalice's reloader polls
# every file under the project (.venv included) and restarts the server, dropping
# requests in flight, whenever one changes. `--autoreload` turns it on; restart by
# hand otherwise.
CHALICE_LOCAL_FLAGS ?=
WORKFLOW_TABLE ?= approval-workflows
# Tests run on every core (pytest-xdist); the longest (fuzzing) start first, and
# each xdist_group (the packaged bundle's tests, the rehearsal) runs on one worker.
PYTEST_WORKERS ?= auto
XDIST := -n $(PYTEST_WORKERS) --dist loadgroup --no-loadscope-reorder

.PHONY: run run-oidc test test-fast lint format bench bench-instructions profile venv clean clean-data token \
	dynamodb-table run-dynamodb package scan rehearse browser screenshots

# Serving needs only Chalice and boto3; `make run-dynamodb` adds moto's DynamoDB
# server, and the test and benchmark tools come on top of both.
$(VENV)/.created:
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(VENV)
	@touch $@

$(VENV)/.serve: $(VENV)/.created requirements.txt requirements-serve.txt
	@echo "Installing what serving needs (requirements-serve.txt) into $(VENV) ..."
	$(PIP) -r requirements-serve.txt
	@touch $@

# moto's DynamoDB server for `make run-dynamodb`: what it needs, and no test tool.
$(VENV)/.moto: $(VENV)/.serve requirements-moto.txt
	@echo "Installing moto's DynamoDB server (requirements-moto.txt) into $(VENV) ..."
	$(PIP) -r requirements-moto.txt
	@touch $@

# The test OpenID provider for `make run-oidc` (the tests get it with requirements-dev.txt).
$(VENV)/.oidc: $(VENV)/.serve requirements-oidc.txt
	@echo "Installing the test OpenID provider (requirements-oidc.txt) into $(VENV) ..."
	$(PIP) -r requirements-oidc.txt
	@touch $@

$(VENV)/.dev: $(VENV)/.moto requirements-dev.txt requirements-oidc.txt
	@echo "Installing the test, lint and benchmark tools (requirements-dev.txt) into $(VENV) ..."
	$(PIP) -r requirements-dev.txt
	@touch $@

venv: $(VENV)/.dev

# The port is checked before anything starts; the server says so too if it is
# taken in between.
run: $(VENV)/.serve
	@bash scripts/port_free.sh $(HOST) $(PORT) PORT
	@$(BIN)/python scripts/local_server.py --host $(HOST) --port $(PORT) --stage dev \
		$(CHALICE_LOCAL_FLAGS)

# `make run` with sign-in (docs/auth.md#locally-make-run-oidc): an OpenID provider
# on 127.0.0.1:OIDC_PORT (scripts/oidc_provider.py) whose form signs in as any name
# typed, OIDC_USERS one click each with their groups, and the service signing in
# through it. Ctrl-C stops both.
OIDC_PORT ?= 9400
OIDC_USERS ?= ada=workflow-admins maria=finance finn=finance
run-oidc: $(VENV)/.oidc
	@bash scripts/port_free.sh $(HOST) $(PORT) PORT
	@bash scripts/port_free.sh 127.0.0.1 $(OIDC_PORT) OIDC_PORT
	@$(BIN)/python scripts/oidc_provider.py --port $(OIDC_PORT) --serve-port $(PORT) --host $(HOST) \
		$(foreach user,$(OIDC_USERS),--user $(user))

# The page's checkers, ESLint and TypeScript (package.json), as package-lock.json
# pins them, from the npm registry: Node.js 20.19+ and npm are needed.
NODE_BIN := node_modules/.bin
node_modules/.installed: package.json package-lock.json
	@command -v npm >/dev/null || { \
		echo "make lint checks the page with ESLint and TypeScript, from npm: install Node.js 20.19+ and npm" >&2; \
		exit 1; }
	@echo "Installing the page's checkers (package-lock.json) into node_modules ..."
	npm ci --no-audit --no-fund
	@touch $@

lint: $(VENV)/.dev node_modules/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(NODE_BIN)/eslint chalicelib/ui
	$(NODE_BIN)/tsc -p tsconfig.json

# Formats the code as `make lint` expects it.
format: $(VENV)/.dev
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The browser tests (tests/browser/) drive Debian's headless Chromium with Playwright
# (scripts/browser.py); `make browser` installs it if it is missing (root, apt-get).
CHROMIUM ?= /usr/lib/chromium/chromium-headless-shell

test: lint browser
	CHROMIUM=$(CHROMIUM) $(BIN)/python -m pytest -q $(XDIST) --durations=15

browser:
	@test -x $(CHROMIUM) || { \
		echo "Installing Debian's chromium-headless-shell for the browser tests (apt-get) ..."; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends chromium-headless-shell; } || { \
			echo "Could not install it: as root, apt-get install chromium-headless-shell;" \
				"or set CHROMIUM to a Chromium binary" >&2; exit 1; }; \
		test -x $(CHROMIUM) || { echo "No Chromium at $(CHROMIUM) after the install" >&2; exit 1; }; }

# Screenshots of the inbox, a run page and the delegations at 360 and 1280 px (README), and of
# an approver's email and a link's confirmation page (docs/notifications.md), on sample data.
screenshots: $(VENV)/.dev browser
	CHROMIUM=$(CHROMIUM) $(BIN)/python scripts/screenshots.py docs/screenshots
	CHROMIUM=$(CHROMIUM) $(BIN)/python scripts/notification_screenshots.py docs/screenshots

# The unit, contract and API tiers: no race storms, fuzzing or packaging. By
# folder, not by marker: a marker is only known once every tier is collected.
test-fast: $(VENV)/.dev
	$(BIN)/python -m pytest -q $(XDIST) tests/unit tests/contract tests/api

# A development token for WORKFLOW_AUTH=jwt with WORKFLOW_JWT_SECRET (docs/auth.md), for
# the USER named on make's command line: the environment's USER (the login name, which
# make sees as a variable too) is never taken for it; without one the script refuses.
GROUPS ?=
TOKEN_USER = $(if $(filter command line,$(origin USER)),$(USER))
token: $(VENV)/.serve
	@$(BIN)/python scripts/dev_token.py "$(TOKEN_USER)" "$(GROUPS)"

# Creates WORKFLOW_TABLE where boto3's environment points (AWS_ENDPOINT_URL_DYNAMODB,
# AWS_PROFILE, AWS_DEFAULT_REGION, ...); does nothing if it exists.
dynamodb-table: $(VENV)/.serve
	WORKFLOW_TABLE=$(WORKFLOW_TABLE) $(BIN)/python scripts/create_table.py

# The API on a throwaway moto DynamoDB (port MOTO_PORT); no AWS account needed.
# Both ports are checked before moto starts. moto refuses writes once it has
# used MOTO_MAX_MB of memory (docs/deploy.md).
MOTO_MAX_MB ?= 1024
run-dynamodb: $(VENV)/.moto
	@HOST=$(HOST) PORT=$(PORT) MOTO_PORT=$(MOTO_PORT) MOTO_MAX_MB=$(MOTO_MAX_MB) \
		WORKFLOW_TABLE=$(WORKFLOW_TABLE) BIN=$(BIN) CHALICE_LOCAL_FLAGS="$(CHALICE_LOCAL_FLAGS)" \
		bash scripts/run_dynamodb.sh

# dist/sam.json and dist/deployment.zip for CloudFormation, table included; offline.
package: $(VENV)/.serve
	$(BIN)/python scripts/package.py --stage prod --out dist

$(SCAN_VENV)/.created: requirements-scan.txt
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ is needed"'
	$(PYTHON) -m venv $(SCAN_VENV)
	@echo "Installing checkov (requirements-scan.txt) into $(SCAN_VENV) ..."
	$(SCAN_VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar on \
		-r requirements-scan.txt
	@touch $@

# The packaged template and the CloudFormation it expands to, as an operator
# scans them: cfn-lint, then checkov (.checkov.yaml), offline; the expansion
# twice, with the HTTP API (the default) and with the REST API (ApiType=rest),
# as checkov leaves out what the defaults' conditions leave out. Fails on any
# finding docs/deploy.md does not explain.
scan: package $(VENV)/.dev $(SCAN_VENV)/.created
	$(BIN)/python scripts/expand_template.py dist/sam.json dist/cloudformation.json
	$(BIN)/python scripts/expand_template.py --default ApiType=rest dist/sam.json \
		dist/cloudformation-rest.json
	$(BIN)/cfn-lint dist/sam.json dist/cloudformation.json dist/cloudformation-rest.json
	$(SCAN_VENV)/bin/checkov --config-file .checkov.yaml -f dist/sam.json -f dist/cloudformation.json \
		-f dist/cloudformation-rest.json

# The SDK as Lambda's runtime provides it, alone in a folder: the functions'
# path in the rehearsal is the package, this, and the standard library.
LAMBDA_RUNTIME := .lambda-runtime
$(LAMBDA_RUNTIME)/.created: requirements-lambda.txt $(VENV)/.created
	@echo "Installing Lambda's SDK (requirements-lambda.txt) into $(LAMBDA_RUNTIME) ..."
	rm -rf $(LAMBDA_RUNTIME)
	$(PIP) --no-deps --only-binary :all: --target $(LAMBDA_RUNTIME)/python -r requirements-lambda.txt
	@touch $@

# `make package`'s stack on a moto server that enforces IAM, each function from
# the package with its own role, driven by its triggers and compared with
# `make run`; then the mutation check (REHEARSAL_MUTATIONS=all: every action).
# The stack has the HTTP API, the template's default; REHEARSAL_API_TYPE=rest
# rehearses the REST API instead.
REHEARSAL_MUTATIONS ?= sample
rehearse: package $(VENV)/.dev $(LAMBDA_RUNTIME)/.created
	$(BIN)/python scripts/rehearse.py --runtime $(LAMBDA_RUNTIME)/python \
		--mutations $(REHEARSAL_MUTATIONS)

bench: $(VENV)/.dev
	$(BIN)/python -m bench.run

# The SQLite cold start counted in instructions (valgrind's callgrind), which do
# not move from run to run; TREES="../old ../other" counts other checkouts too.
TREES ?=
bench-instructions: $(VENV)/.dev
	@command -v valgrind >/dev/null || { \
		echo "Installing Debian's valgrind for the instruction counts (apt-get) ..."; \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends valgrind; } || { \
			echo "Could not install it: as root, apt-get install valgrind" >&2; exit 1; }; }
	$(BIN)/python -m bench.cold_start_instructions $(foreach tree,$(TREES),--tree $(tree))

# The call tree of the hot path (BACKEND=sqlite or dynamodb).
BACKEND ?= sqlite
profile: $(VENV)/.dev
	$(BIN)/python -m bench.profile_hot_path $(BACKEND)

# Removes the virtualenvs, node_modules and caches; keeps the local database (make clean-data).
clean:
	rm -rf $(VENV) $(SCAN_VENV) $(LAMBDA_RUNTIME) node_modules .mypy_cache .ruff_cache dist

# Removes the local database: every workflow and run that `make run` and `chalice
# local` stored where WORKFLOW_SQLITE_PATH names no file (this clone's, in your data
# directory: docs/configuration.md); and .data/ (moto's log, the database's old place).
clean-data:
	@path="$$($(PYTHON) -c 'from chalicelib.storage import default_sqlite_path as p; print(p())')" \
		&& echo "Removing $$path" && rm -f "$$path" "$$path-wal" "$$path-shm" \
		&& { rmdir "$$(dirname "$$path")" 2>/dev/null || true; }
	rm -rf .data
