# The two commands of the README:
#   make run   -- install and serve the embedded default on 127.0.0.1:8000
#   make test  -- install with dev extras and run the whole suite
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1:8000

.PHONY: run test install install-dev lint clean fuzz bench eval

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The install runs again only when pyproject.toml changed (a stamp in the
# virtualenv): the package is installed in editable mode, so a change of the
# code needs none.
install: $(VENV)/.installed
$(VENV)/.installed: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $@

install-dev: $(VENV)/.installed-dev
$(VENV)/.installed-dev: pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

run: install
	DEBUG=1 $(PY) manage.py migrate --noinput
	DEBUG=1 $(PY) manage.py demo
	DEBUG=1 $(PY) manage.py serve $(HOST)

test: install-dev
	$(PY) -m pytest $(PYTEST_ARGS)

# Schema-driven fuzzing of the embedded server (.ci/fuzz.sh; FUZZ_MAX_EXAMPLES, FUZZ_SEED).
fuzz: install
	VENV=$(VENV) PYTHON=$(PYTHON) bash .ci/fuzz.sh

lint: install-dev
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# Context endpoint latency against a trivial endpoint at SPEC §10 volumes, on the
# configured database (the embedded SQLite file by default), in-process and over
# HTTP; BENCH_ARGS replaces the options, e.g. BENCH_ARGS='--http --keep'.
BENCH_ARGS ?= --http
bench: install
	DEBUG=1 $(PY) manage.py migrate --noinput
	DEBUG=1 $(PY) manage.py bench_context $(BENCH_ARGS)

# The project's evaluations (SPEC §14): one line per evaluation, each a command that prints its
# table and exits non-zero below its goals. EVAL_ARGS goes to eval_corrections (e.g. --model).
eval: install
	$(PY) manage.py eval_corrections $(EVAL_ARGS)
	$(PY) manage.py eval_redaction

clean:
	rm -rf $(VENV) .venv-fuzz cache metrics db.sqlite3* test_db*.sqlite3* *.egg-info
