# The two commands of the README:
#   make smoke   dev dataset + vocabulary, train the dev model, evaluate it, print metrics
#   make test    the test suite (make test-all: also the soaks)
# Both create .venv from the lock first if it is missing or older than the lock.

PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# requirements/gpu.lock on an NVIDIA GPU host (see README, "Other hosts").
LOCK ?= requirements/cpu.lock
UV_VERSION := 0.13.9
# The machines keep a CPU build of torch here; pip finds it through its own config, uv needs it named.
FIND_LINKS ?= /opt/wheels
UV_FIND_LINKS := $(if $(wildcard $(FIND_LINKS)),--find-links $(FIND_LINKS),)

.PHONY: venv smoke test test-all bench lock

venv: $(VENV)/.installed

# The shim is copied into site-packages (not linked like code_t5/): a change to it reinstalls.
# --compile-bytecode: where PYTHONDONTWRITEBYTECODE is set (as on this project's machines), no
# process writes .pyc files, and each one compiled TensorFlow, t5 and Beam from source again:
# importing the stack took 17.2 s, 7.7 s with the bytecode compiled once here (2-core Zen 1).
$(VENV)/.installed: $(LOCK) pyproject.toml _code_t5_mtf_shim.py code_t5_mtf_shim.pth
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(VENV)/bin/uv || $(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip sync --python $(PY) --compile-bytecode $(UV_FIND_LINKS) $(LOCK)
	$(VENV)/bin/uv pip install --python $(PY) --no-deps -e .
	$(PY) scripts/check_env.py
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

# Throughput vs HF T5, start-up, memory, and learning vs baselines (about 75 min, idle machine).
bench: venv
	scripts/bench

# Re-resolve both locks after changing pyproject.toml.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 $(UV_FIND_LINKS)
lock: venv
	$(UV_COMPILE) -o requirements/cpu.lock
	$(UV_COMPILE) --extra gpu -o requirements/gpu.lock
