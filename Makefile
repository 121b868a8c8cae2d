# hopsim: `make run` and `make test` each work alone on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUN_STAMP  := $(VENV)/.run-stamp
TEST_STAMP := $(VENV)/.test-stamp
OUT    ?= runs

.PHONY: run test lint bench schemas check-schemas clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# running needs the package and its dependencies only; tests and benchmarks add their extras
$(RUN_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e .
	touch $(RUN_STAMP)

$(TEST_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(TEST_STAMP) $(RUN_STAMP)

## run the flagship scenario (SPHERES leader-follower) on the embedded local backend, record it
run: $(RUN_STAMP)
	$(VENV)/bin/hopsim run leader_follower --out $(OUT)/leader_follower.mcap

## lint (pyflakes and bugbear rules, see pyproject.toml), then the whole test suite
test: $(TEST_STAMP)
	$(VENV)/bin/ruff check hopsim tests bench
	$(PY) -m pytest -q

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check hopsim tests bench

BSK_VENV := .venv-bsk
BSK_STAMP := $(BSK_VENV)/.installed-stamp

# Basilisk's wheel pins an older protobuf than hopsim, so it gets an environment of its own
$(BSK_STAMP):
	$(PYTHON) -m venv $(BSK_VENV)
	$(BSK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BSK_VENV)/bin/python -m pip install --quiet 'bsk==2.12.1' numpy
	touch $(BSK_STAMP)

## benchmarks: print ratios against peers measured in the same run, and update README.md
bench: $(TEST_STAMP) $(BSK_STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	HOPSIM_BSK_PYTHON=$(CURDIR)/$(BSK_VENV)/bin/python $(PY) bench/run_all.py

## regenerate the protobuf modules from hopsim/schemas/*.proto
schemas: $(TEST_STAMP)
	$(PY) hopsim/schemas/generate.py

check-schemas: $(TEST_STAMP)
	$(PY) hopsim/schemas/generate.py --check

clean:
	rm -rf $(VENV) $(BSK_VENV) $(OUT) .pytest_cache
