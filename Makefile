# hopsim: `make run` and `make test` each work alone on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
RUN_STAMP  := $(VENV)/.run-stamp
TEST_STAMP := $(VENV)/.test-stamp
OUT    ?= runs
BSK_VENV  := .venv-bsk
BSK_STAMP := $(BSK_VENV)/.installed-stamp

.PHONY: run test test-long fuzz lint bench docs schemas check-schemas clean vendor-three

# Environments are made and filled by uv where it can be had, by venv and pip otherwise (INSTALLER=pip
# asks for pip), with pip's own configuration: tools/envs.py.
# $(call mkvenv,DIR) makes the environment DIR; $(call install,DIR,REQUIREMENTS[,bytecode]) installs into
# it, with bytecode compiled ahead if asked (uv leaves it to the first import, which is cheaper for one run)
INSTALLER ?= auto
UV_TOOLS  := .venv-tools
export INSTALLER UV_TOOLS
mkvenv  = $(PYTHON) tools/envs.py venv $(1)
install = $(if $(3),BYTECODE=1 )$(PYTHON) tools/envs.py install $(1) $(2)

$(PY):
	$(call mkvenv,$(VENV))

# running needs the package and its dependencies only; tests and benchmarks add their extras
$(RUN_STAMP): pyproject.toml | $(PY)
	$(call install,$(VENV),-e .)
	touch $(RUN_STAMP)

$(TEST_STAMP): pyproject.toml | $(PY)
	$(call install,$(VENV),-e '.[test]',bytecode)
	touch $(TEST_STAMP) $(RUN_STAMP)

## run the flagship scenario (SPHERES leader-follower) on the embedded local backend, record it
run: $(RUN_STAMP)
	$(VENV)/bin/hopsim run leader_follower --out $(OUT)/leader_follower.mcap --force

# the viewer's browser test drives Debian's chromium (Playwright cannot download a browser here)
CHROMIUM_STAMP := $(VENV)/.chromium-stamp
$(CHROMIUM_STAMP): | $(PY)
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the viewer's browser test (apt)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo -n ); \
	  $$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null 2>&1 && $$SUDO apt-get install -y -q chromium >/dev/null 2>&1; } || \
	  echo "could not install chromium: the browser test will say so"; }
	@command -v chromium >/dev/null 2>&1 && touch $(CHROMIUM_STAMP) || true

## lint (ruff's rules listed in pyproject.toml, and its formatting), then the whole test suite in two pytest
## processes side by side, the Ray tests in one of them (tests/run_suite.sh; Basilisk's environment
## is the peer that gravity is checked against)
test: $(TEST_STAMP) $(CHROMIUM_STAMP) $(BSK_STAMP)
	$(VENV)/bin/ruff check hopsim tests bench tools
	$(VENV)/bin/ruff format --check hopsim tests bench tools
	HOPSIM_BSK_PYTHON=$(CURDIR)/$(BSK_VENV)/bin/python bash tests/run_suite.sh $(PY)

## what cannot fit in make test's ten minutes: the tests marked long
test-long: $(TEST_STAMP) $(CHROMIUM_STAMP) $(BSK_STAMP)
	HOPSIM_BSK_PYTHON=$(CURDIR)/$(BSK_VENV)/bin/python $(PY) -m pytest -q --durations=10 -m long

## the recording reader's fuzz tests at length: damaged and crafted files, FUZZ_EXAMPLES of each
## (make test runs 50, the same ones every time; these are new ones every run)
FUZZ_EXAMPLES ?= 2000
fuzz: $(TEST_STAMP)
	HOPSIM_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) $(PY) -m pytest -q -p no:cacheprovider tests/test_hostile_recordings.py -k fuzz

lint: $(TEST_STAMP)
	$(VENV)/bin/ruff check hopsim tests bench tools
	$(VENV)/bin/ruff format --check hopsim tests bench tools


# Basilisk's wheel pins an older protobuf than hopsim, so it gets an environment of its own
$(BSK_STAMP):
	$(call mkvenv,$(BSK_VENV))
	$(call install,$(BSK_VENV),'bsk==2.12.1' numpy)
	touch $(BSK_STAMP)

## benchmarks: print ratios against peers measured in the same run, and update docs/performance.md
bench: $(TEST_STAMP) $(BSK_STAMP)
	$(call install,$(VENV),-e '.[test,bench]',bytecode)
	HOPSIM_BSK_PYTHON=$(CURDIR)/$(BSK_VENV)/bin/python $(PY) bench/run_all.py

## the documentation site (mkdocs-material, mkdocs.yml) into site/; --strict fails on a broken link or
## anchor and on a page missing from the navigation (tests/test_doc_links.py checks the same without mkdocs)
docs: $(PY)
	$(call install,$(VENV),-e '.[docs]')
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

## refresh the viewer's copy of three.js from the npm registry (see hopsim/view/static/vendor/three/README.md)
THREE_VERSION ?= 0.181.2
vendor-three:
	rm -rf /tmp/hopsim-three && mkdir -p /tmp/hopsim-three
	cd /tmp/hopsim-three && npm pack --silent three@$(THREE_VERSION) >/dev/null && tar xzf three-$(THREE_VERSION).tgz
	cp /tmp/hopsim-three/package/build/three.core.min.js /tmp/hopsim-three/package/build/three.module.min.js \
	   /tmp/hopsim-three/package/examples/jsm/controls/OrbitControls.js /tmp/hopsim-three/package/LICENSE \
	   hopsim/view/static/vendor/three/

## regenerate the protobuf modules from hopsim/schemas/*.proto
schemas: $(TEST_STAMP)
	$(PY) hopsim/schemas/generate.py

check-schemas: $(TEST_STAMP)
	$(PY) hopsim/schemas/generate.py --check

clean:
	rm -rf $(VENV) $(BSK_VENV) $(UV_TOOLS) $(OUT) .pytest_cache site
