# The command surface of Terrace. `make dev` and `make test` work on a fresh machine.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := .build/stamps
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_RUNTIME_PACKAGE_CACHE_ROOT := $(CURDIR)/.build/jsii-cache

.PHONY: install dev dev-moto dev-fresh wheel test unit integration e2e e2e-clients infra-test fuzz conformance lint format typecheck synth docs bench proof proof-quick proof-bench arm64-rego-check clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Packages go in with uv (pinned here), which fetches them in parallel: the install a clean clone's `make test`
# starts with took minutes with pip, most of it waiting on one download at a time. Modules compile on first import.
UV_VERSION := 0.13.9
INSTALL := $(BIN)/uv pip install -q --python $(BIN)/python
$(BIN)/uv: | $(BIN)/python
	$(BIN)/pip install -q uv==$(UV_VERSION)

# What the embedded server and its runners need (`make dev`): the project without extras, then terraform and the
# null provider its runners and the provider mirror use. The null provider's build copies files into $HOME: give
# it a scratch HOME. The AWS adapters' pruned copy of botocore's endpoints file and their services' models without
# documentation (adapters/boto_session.py, not committed: derived from botocore) are written beside its module.
$(STAMP)/server: pyproject.toml tests/clients-requirements.txt layers/terrace/adapters/boto_session.py | $(BIN)/uv
	$(INSTALL) -e .
	$(BIN)/python -m terrace.adapters.boto_session
	mkdir -p .build/home
	HOME=$(CURDIR)/.build/home UV_CACHE_DIR=$${UV_CACHE_DIR:-$(HOME)/.cache/uv} $(INSTALL) -r tests/clients-requirements.txt
	mkdir -p $(STAMP) && touch $@

# Everything else: moto (`make dev-moto`, tests), the CDK (`make synth`), the test, browser and docs tools.
$(STAMP)/python: pyproject.toml $(STAMP)/server
	$(INSTALL) -e '.[local,test,infra,docs]'
	mkdir -p $(STAMP) && touch $@

$(STAMP)/node: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	mkdir -p $(STAMP) && touch $@

# `make dev`: the front end's pinned assets only (htmx; the CDK CLI is a devDependency), unless `make install`
# already put in everything for these package files.
$(STAMP)/assets: package.json package-lock.json
	@if [ -f $(STAMP)/node ] && [ -z "$$(find package.json package-lock.json -newer $(STAMP)/node)" ]; then \
		echo "node_modules: complete (make install)"; \
	else npm ci --omit=dev --no-audit --no-fund --loglevel=error; fi
	mkdir -p $(STAMP) && touch $@

# Browser tests drive Debian's chromium (Playwright cannot download browsers here). Installed when
# missing and we are root; anywhere else `make test` stops with a clear message.
/usr/bin/chromium:
	@if [ "$$(id -u)" = 0 ]; then apt-get install -y -q chromium || (apt-get update -q && apt-get install -y -q chromium); \
	else echo "make test needs /usr/bin/chromium for the browser tests: run 'apt-get install -y chromium' as root" >&2; exit 1; fi

install: $(STAMP)/python $(STAMP)/node

# The embedded server (SQLite + files in .terrace/data, kept across restarts); dev-fresh starts empty;
# dev-moto runs the AWS adapters against a fresh moto server instead (data lost at every stop). `dev` and
# `dev-fresh` install only the server's packages and the pinned front-end assets.
dev: $(STAMP)/server $(STAMP)/assets
	$(BIN)/terrace dev

dev-fresh: $(STAMP)/server $(STAMP)/assets
	$(BIN)/terrace dev --fresh

dev-moto: install
	$(BIN)/terrace dev --moto

# An installable wheel in dist/ (htmx copied in from node_modules): `pip install dist/terrace-*.whl`, then
# `terrace serve --data DIR` anywhere (terraform or tofu from PATH or TERRACE_TF_BINARY).
wheel: install
	mkdir -p layers/terrace/web/static/vendor
	cp node_modules/htmx.org/dist/htmx.min.js layers/terrace/web/static/vendor/
	rm -rf build dist
	$(BIN)/pip wheel -q --no-deps -w dist .

# tests/proof runs at its quick sizes inside this pytest; proof-bench is the rest of proof-quick. One worker more than
# the cores: the e2e and browser files wait on terraform, runners and chromium a third of their time, which a third
# worker fills (2 cores: 553 s of pytest with 3 workers, 686 s with 2, the same suite in clean clones).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: install /usr/bin/chromium
	$(BIN)/pytest -q -n $(TEST_WORKERS) --longest-files-first --durations=15 -m "not client_repeat and not long"

# The same paths again with their other clients (OpenTofu where make test drives terraform 1.11): the tests marked
# client_repeat, left out of make test, whose clients make test covers on other paths.
e2e-clients: install
	$(BIN)/pytest -q -n auto -m client_repeat tests/e2e

unit: install
	$(BIN)/pytest -q tests/unit

integration: install
	$(BIN)/pytest -q tests/integration

e2e: install
	$(BIN)/pytest -q tests/e2e

# Schema fuzzing of /api/v2 and /state/v1 in full (make test runs a bounded pass of the same tests).
fuzz: install
	TERRACE_FUZZ_EXAMPLES=$${TERRACE_FUZZ_EXAMPLES:-300} TERRACE_FUZZ_FULL=1 $(BIN)/pytest -q tests/fuzz

# go-tfe's own integration suites (v1.41.0 and 0.11.1; ../shared/conformance) against a fresh local stack
# on a port of its own, stopped at the end; skipped with a message when that folder is absent.
# GOTFE_RUN=REGEX runs a subset; about 30 minutes in full.
CONFORMANCE ?= ../shared/conformance
conformance: install
	bash tests/conformance/run.sh $(CONFORMANCE)

infra-test: install /usr/bin/chromium
	$(BIN)/pytest -q tests/infra

lint: install
	$(BIN)/ruff check layers functions infra tests bench tools docs
	$(BIN)/ruff format --check layers functions infra tests bench tools docs

format: install
	$(BIN)/ruff format layers functions infra tests bench tools docs
	$(BIN)/ruff check --fix layers functions infra tests bench tools docs

typecheck: install
	$(BIN)/mypy

synth: install
	npx cdk synth --quiet

# The documentation site (mkdocs.yml, docs/) into .build/site; strict: a broken link or anchor, a page missing from
# the navigation or a hook's error fails it (not with --quiet: mkdocs then drops the warnings strict mode counts).
# `make test` builds it too (tests/unit/test_docs_site.py).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: install
	$(BIN)/python -m bench

# The proof under faults and load (tests/proof, docs/reliability.md). `proof`: every scenario at its full size on
# the embedded server and the AWS adapters (moto), about 30 minutes on 2 workers (the 30-minute soak beside the
# rest); figures in .build/proof/*.json, summed up at the end with each test's seed (a failure prints its replay
# command: TERRACE_PROOF_SEED=<seed> pytest <test>). `proof-quick` (about 3 minutes): the quick sizes (`make test`
# holds the short scenarios; those marked `long`, load, soak and killed runners, only run here), then the benchmarks that met TFC's per-token limit (30 requests per second, on) at their quick sizes, whose
# exit status counts. The whole `python -m bench --quick` takes over 10 minutes: `make bench` runs it.
PROOF_BENCH = TERRACE_BENCH_RATE_LIMIT_PER_S=30 $(BIN)/python -m bench --quick --only queue_throughput --only lock_contention
proof: install
	rm -rf .build/proof
	TERRACE_PROOF=full $(BIN)/pytest -q -n 2 --dist loadfile -m proof -p no:cacheprovider tests/proof; \
	status=$$?; $(BIN)/python tools/proof_figures.py; exit $$status

proof-quick: install
	$(BIN)/pytest -q -n 2 --dist loadfile -m proof tests/proof
	$(PROOF_BENCH)

proof-bench: install
	$(PROOF_BENCH)

# regopy on arm64 (the Lambda's) under qemu user emulation: Debian arm64 packages and regopy's aarch64 wheels,
# downloaded into .build/arm64-rego/; needs qemu-user-static. Not part of `make test`.
arm64-rego-check: install
	$(BIN)/python tools/arm64_rego_check.py

clean:
	rm -rf $(VENV) .build cdk.out node_modules .terrace
