# hopsim: `make run` and `make test` each work alone on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= runs

.PHONY: run test bench schemas check-schemas clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

## run the flagship scenario (SPHERES leader-follower) on the embedded local backend, record it
run: $(STAMP)
	$(VENV)/bin/hopsim run leader_follower --out $(OUT)/leader_follower.mcap

## the whole test suite
test: $(STAMP)
	$(PY) -m pytest -q

BSK_VENV := .venv-bsk
BSK_STAMP := $(BSK_VENV)/.installed-stamp

# Basilisk's wheel pins an older protobuf than hopsim, so it gets an environment of its own
$(BSK_STAMP):
	$(PYTHON) -m venv $(BSK_VENV)
	$(BSK_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BSK_VENV)/bin/python -m pip install --quiet 'bsk==2.12.1' numpy
	touch $(BSK_STAMP)

## benchmarks: print ratios against peers measured in the same run, and update README.md
bench: $(STAMP) $(BSK_STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	HOPSIM_BSK_PYTHON=$(CURDIR)/$(BSK_VENV)/bin/python $(PY) bench/run_all.py

## regenerate the protobuf modules from hopsim/schemas/*.proto
schemas: $(STAMP)
	$(PY) hopsim/schemas/generate.py

check-schemas: $(STAMP)
	$(PY) hopsim/schemas/generate.py --check

clean:
	rm -rf $(VENV) $(BSK_VENV) $(OUT) .pytest_cache
