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

## run the flagship scenario on the embedded local backend and write a recording
run: $(STAMP)
	$(VENV)/bin/hopsim run lander --out $(OUT)/lander.mcap

## the whole test suite
test: $(STAMP)
	$(PY) -m pytest -q

## benchmarks: print ratios against peers measured in the same run
bench: $(STAMP)
	$(PY) -m pip install --quiet -e '.[test,bench]'
	$(PY) bench/run_all.py

## regenerate the protobuf modules from hopsim/schemas/*.proto
schemas: $(STAMP)
	$(PY) hopsim/schemas/generate.py

check-schemas: $(STAMP)
	$(PY) hopsim/schemas/generate.py --check

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
