# The two commands of the README:
#   make smoke   dev dataset + vocabulary, train the dev model, evaluate it, print metrics
#   make test    the test suite
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

.PHONY: venv smoke test bench lock

venv: $(VENV)/.installed

$(VENV)/.installed: $(LOCK) pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	test -x $(VENV)/bin/uv || $(PY) -m pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip sync --python $(PY) $(UV_FIND_LINKS) $(LOCK)
	$(VENV)/bin/uv pip install --python $(PY) --no-deps -e .
	$(PY) scripts/check_env.py
	touch $@

smoke: venv
	scripts/smoke

test: venv
	$(PY) -m pytest $(PYTEST_ARGS)

# Throughput vs HF T5, start-up, memory, and learning vs baselines (about 75 min, idle machine).
bench: venv
	scripts/bench

# Re-resolve both locks after changing pyproject.toml.
UV_COMPILE = $(VENV)/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 $(UV_FIND_LINKS)
lock: venv
	$(UV_COMPILE) -o requirements/cpu.lock
	$(UV_COMPILE) --extra gpu -o requirements/gpu.lock
