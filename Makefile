# Sabot: make install | run | test | lint | bench
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install proto run test test-fast lint bench clean

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
	$(BIN)/python -m services.cli.server serve --dev --demo --listen 127.0.0.1:50051 --store sqlite:///var/sabot.db

test: install
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/pytest -q -p no:cacheprovider

lint: install
	$(BIN)/ruff check domain services ops tests bench
	$(BIN)/mypy domain services ops/sabot_verify
	$(BIN)/buf lint

bench: install
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .mypy_cache .ruff_cache .pytest_cache
