# The two commands of the README:
#   make smoke   dev dataset + vocabulary, train the dev model, evaluate it, print metrics
#   make test    the test suite (make test-all: also the soaks)
# Both create .venv from the lock first if it is missing, older than the lock, or made from
# another lock. Everything comes from the package registries (PyPI) alone.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
UV := $(VENV)/bin/uv
# requirements/gpu.lock on an NVIDIA GPU host (see README, "Other hosts").
LOCK ?= requirements/cpu.lock
UV_VERSION := 0.13.9
# torch, for the GPT peer and the throughput bench alone (`make torch`): PyPI's build.
TORCH_LOCK := requirements/torch.lock
# One stamp per lock, so that `make venv LOCK=...` re-syncs a venv made from another lock.
INSTALLED := $(VENV)/.installed-$(notdir $(LOCK))

# The editor's side alone (`make editor`): code_t5_session and its language server, no
# TensorFlow (GENTLE_INTRO.md, "In your editor"), from PyPI alone. With .venv's uv (`make venv`
# put it there) it installs in seconds; on a machine with no .venv, pip, which every venv has
# (no config file, no local wheel folder: as a user's).
EDITOR_VENV := .venv-editor
EDITOR_LOCK := requirements/editor.lock
EDITOR_PY := $(EDITOR_VENV)/bin/python
ifneq ($(wildcard $(UV)),)
EDITOR_PIP := $(UV) pip install --quiet --python $(EDITOR_PY) --compile-bytecode --no-config
else
EDITOR_PIP := PIP_CONFIG_FILE=/dev/null PIP_FIND_LINKS= $(EDITOR_PY) -m pip install --quiet --no-input
endif

.PHONY: venv torch editor smoke test test-all bench lock

venv: $(INSTALLED)

# The shim is copied into site-packages (not linked like code_t5/): a change to it reinstalls.
# --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set (as on this project's machines), no
# process writes .pyc files, and each one compiled TensorFlow, t5 and Beam from source again:
# importing the stack took 17.2 s, 7.7 s with the bytecode compiled once here (2-core Zen 1).
# uv sync removes what the lock does not list (torch too: `make torch` puts it back).
$(INSTALLED): $(LOCK) pyproject.toml _code_t5_mtf_shim.py code_t5_mtf_shim.pth
	@scripts/check_prerequisites $(PYTHON) $(VENV)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(UV) || $(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(UV) pip sync --python $(PY) --compile-bytecode $(LOCK)
	$(UV) pip install --python $(PY) --no-deps -e .
	$(PY) scripts/check_env.py
	rm -f $(VENV)/.installed-* $(VENV)/.torch
	touch $@

# --no-config: pyproject.toml's overrides, which leave torch out of the main lock, stay out of
# this one. --no-deps: the lock is the whole set (resolving again would trip on torch's
# setuptools>=77, which requirements/torch.overrides explains).
torch: $(VENV)/.torch
$(VENV)/.torch: $(TORCH_LOCK) $(INSTALLED)
	$(UV) pip install --no-config --python $(PY) --compile-bytecode --no-deps -r $(TORCH_LOCK)
	$(PY) -c "import torch; print('torch', torch.__version__)"
	touch $@

editor: $(EDITOR_VENV)/.installed
$(EDITOR_VENV)/.installed: $(EDITOR_LOCK) pyproject.toml
	test -x $(EDITOR_PY) || $(PYTHON) -m venv $(EDITOR_VENV)
	$(EDITOR_PIP) --no-deps -r $(EDITOR_LOCK)
	$(EDITOR_PIP) --no-deps -e .
	$(EDITOR_PY) -c "import sys, code_t5_session.lsp; assert 'tensorflow' not in sys.modules; print('editor: ok, no TensorFlow')"
	touch $@

smoke: venv
	scripts/smoke

# Two workers: most of the suite waits on one-threaded start-up (imports, graph building).
# Tests that build on each other share an xdist group and run on one worker, in order.
TEST_WORKERS ?= 2
PYTEST = $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup
test: venv
	$(PYTEST) $(PYTEST_ARGS)

# Also the soaks (more kills of each long job, the 32-slice mesh, README's base model as
# written); see README, "Tests".
test-all: venv
	$(PYTEST) -m "soak or not soak" $(PYTEST_ARGS)

# Throughput vs HF T5 (torch: `make torch` first), start-up, memory, learning vs baselines and
# serving (about 90 min, idle machine).
bench: venv
	scripts/bench

# Re-resolve the locks after changing pyproject.toml or requirements/torch.in.
UV_COMPILE = $(UV) pip compile --python-version 3.11 --python-platform x86_64-manylinux_2_28
lock: venv
	$(UV_COMPILE) pyproject.toml --extra dev -o requirements/cpu.lock
	$(UV_COMPILE) pyproject.toml --extra dev --extra gpu -o requirements/gpu.lock
	$(UV_COMPILE) --no-config requirements/torch.in -c requirements/cpu.lock \
	  --override requirements/torch.overrides -o requirements/torch.lock
	$(UV_COMPILE) --no-config requirements/editor.in -o requirements/editor.lock
