# Sabot: make install | run | run-postgres | test | lint | bench
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install proto proto-ts promtool chromium ha-up ha-down ha-test bench-ha run run-postgres test test-serial test-long test-fast lint bench clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

proto: install
	$(BIN)/python -c "import setup; setup.generate()"

run: install
	mkdir -p var
	$(BIN)/python -m services.cli.server serve --dev --demo --listen 127.0.0.1:50051 --store sqlite:///var/sabot.db \
		--web 127.0.0.1:8080

# The same on the local PostgreSQL (trust auth): roles sabot_owner and sabot_server, the owner
# sets the store up (sabot store init), the server connects as the role that may only read and
# insert (docs/postgres.md).
PGHOST ?= 127.0.0.1
PGPORT ?= 5432
PGDB ?= sabot_run
run-postgres: install
	psql -h $(PGHOST) -p $(PGPORT) -U postgres -X -q -v ON_ERROR_STOP=1 -v db=$(PGDB) \
		-f ops/postgres/dev_roles.sql
	$(BIN)/python -m services.cli.server store init --server-role sabot_server \
		--store postgresql://sabot_owner@$(PGHOST):$(PGPORT)/$(PGDB)
	mkdir -p var
	$(BIN)/python -m services.cli.server serve --dev --demo --listen 127.0.0.1:50051 \
		--store postgresql://sabot_server@$(PGHOST):$(PGPORT)/$(PGDB)

# promtool (Prometheus's rule checker) unpacked from Debian's prometheus package into the venv:
# nothing installed system-wide, no service started. Best effort: where it cannot be had, the
# promtool test skips and tests/ops' structural check of the rules still runs.
# Kept in PROMTOOL_CACHE (var/ is gitignored) too: .ci/run removes the venv on every run, and the
# download (apt-get download, at worst apt-get update first) is done once, not on every run.
PROMTOOL_CACHE ?= var/tools/promtool
promtool: install
	@if [ -x $(BIN)/promtool ] || command -v promtool >/dev/null; then exit 0; fi; \
	if [ -x $(PROMTOOL_CACHE) ]; then cp $(PROMTOOL_CACHE) $(BIN)/promtool; \
	  echo "promtool: $(BIN)/promtool (from $(PROMTOOL_CACHE))"; exit 0; fi; \
	d=$$(mktemp -d); \
	if (cd $$d && { apt-get download prometheus || { apt-get update -qq && \
	      apt-get download prometheus; }; }) >/dev/null 2>&1 \
	   && dpkg-deb --fsys-tarfile $$d/prometheus_*.deb | tar -xO ./usr/bin/promtool > $$d/promtool \
	   && chmod +x $$d/promtool && $$d/promtool --version >/dev/null 2>&1; then \
	  mkdir -p $$(dirname $(PROMTOOL_CACHE)) && cp $$d/promtool $(PROMTOOL_CACHE); \
	  mv $$d/promtool $(BIN)/promtool; echo "promtool: $(BIN)/promtool"; \
	else echo "promtool: not available here (its test skips; the structural check runs)"; fi; \
	rm -rf $$d

# PostgreSQL high availability on this machine (ops/patroni/cluster.py, docs/operations.md):
# three PostgreSQL 15 nodes under Patroni with etcd, synchronous replication, HAProxy on
# 127.0.0.1:5480 to the primary. As root (the packages are installed when missing; PostgreSQL
# and Patroni run as postgres). ha-test brings a fresh cluster up, plays the three games and
# cash movements through sabot serve on it across a failover (SIGKILL), a switchover and the
# failover the configuration rules out (an asynchronous standby behind promoted), checks
# nothing acknowledged is lost or doubled, the checkpoints, the export VERIFIED, and takes the
# cluster down whatever happened (~3 min; not in `make test`: docs/operations.md says why).
# bench-ha: stakes per second through a server on the cluster beside a single PostgreSQL and
# the no-op floor (bench/ha.py), the cluster brought up and down likewise.
ha-up:
	python3 ops/patroni/cluster.py up
ha-down:
	python3 ops/patroni/cluster.py down
ha-test: install
	python3 ops/patroni/cluster.py down >/dev/null
	python3 ops/patroni/cluster.py up && $(BIN)/python ops/patroni/failover.py; \
	  rc=$$?; python3 ops/patroni/cluster.py down; exit $$rc
bench-ha: install
	python3 ops/patroni/cluster.py down >/dev/null
	python3 ops/patroni/cluster.py up && $(BIN)/python -m bench.ha; \
	  rc=$$?; python3 ops/patroni/cluster.py down; exit $$rc

# Debian's chromium for the web console's browser tests (tests/web drive it with Playwright,
# given as executable_path: Playwright's own browser download cannot be used). As root, where
# it is missing; elsewhere say how.
chromium:
	@if command -v chromium >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then (apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq chromium >/dev/null) && echo "chromium: $$(command -v chromium)"; \
	else echo "chromium: missing: sudo apt-get install chromium (tests/web need it)"; exit 1; fi

# The suite in two processes (pytest-xdist; the machine has 2 cores): every server listens on a
# free port, every PostgreSQL test makes its own database or schema (names carry the process
# id), so the two never share a store. TEST_WORKERS=0 runs it in one process; `make
# test-serial` too. The hypothesis example counts are each property's own (tests/conftest.py:
# profile "ci", the same counts in every mode).
# The temporary folders under a short base of their own (removed after a green run): xdist's
# default, /tmp/pytest-of-USER/pytest-N/popen-gwN/..., makes a ledger socket's path in a test's
# tmp_path longer than AF_UNIX's 107 bytes.
TEST_WORKERS ?= 2
PYTEST := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:cacheprovider

# The tests marked alone (tests/conftest.py ALONE: deadlines timed under load) first, in one
# process; then the rest in TEST_WORKERS processes. Both summaries are printed. The first run
# collects ALONE's files only (the whole suite's collection, about 10 s here, is done once).
test: install
	@base=$$(mktemp -d /tmp/st.XXXXXX) && \
	alone=$$($(BIN)/python -c 'from tests.conftest import ALONE; print(*ALONE)') && \
	$(PYTEST) -m alone --basetemp=$$base/alone $$alone && \
	$(PYTEST) -n $(TEST_WORKERS) -m "not alone" --durations=25 --basetemp=$$base/rest && \
	rm -rf $$base

# The quick loop while working: no test marked postgres (a store-parametrised test runs on
# SQLite only) and none timed under load, in TEST_WORKERS processes, stopping at the first
# failure. Not a substitute for `make test`.
test-fast: install
	@base=$$(mktemp -d /tmp/st.XXXXXX) && \
	$(PYTEST) -n $(TEST_WORKERS) -x -m "not postgres and not alone and not slow" \
		--basetemp=$$base && rm -rf $$base

test-serial: install
	$(PYTEST) -n 0

# By hand or at night: the properties that state no example count run 1000 examples.
test-long: install
	HYPOTHESIS_PROFILE=long $(MAKE) test

lint: install
	$(BIN)/ruff check domain services ops tests bench examples
	$(BIN)/mypy domain services ops/sabot_verify examples/python
	$(BIN)/buf lint
	$(MAKE) --no-print-directory proto-ts

# A second language's client, checked on every lint: TypeScript (buf.gen.yaml) generated from
# proto/ by protoc-gen-es and compiled by tsc with clients/ts/check.ts, which uses it. npm
# installs the pinned tools (clients/ts/package.json) once into TS_DIR (var/ is kept between CI
# runs); needs node and npm (Debian: nodejs, npm). About 40 s here, 10 s more on the first run.
TS_DIR ?= var/ts
proto-ts: install
	@command -v npm >/dev/null || { echo "proto-ts: npm not found (apt-get install nodejs npm)"; \
	  exit 1; }
	@mkdir -p $(TS_DIR) && cp clients/ts/tsconfig.json clients/ts/check.ts $(TS_DIR)/
	@if ! cmp -s clients/ts/package.json $(TS_DIR)/package.json \
	    || [ ! -x $(TS_DIR)/node_modules/.bin/tsc ]; then \
	  cp clients/ts/package.json $(TS_DIR)/ && \
	  (cd $(TS_DIR) && npm install --no-audit --no-fund --loglevel=error); fi
	@rm -rf $(TS_DIR)/gen
	$(BIN)/buf generate --template buf.gen.yaml
	$(TS_DIR)/node_modules/.bin/tsc -p $(TS_DIR)

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
