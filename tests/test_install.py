"""What `make venv` installs and when, read from make's own plan (`make -n`) and the locks."""

import re
import shutil
import subprocess

from conftest import REPO_ROOT


def _plan(*args):
  proc = subprocess.run([shutil.which("make"), "-n", "-C", REPO_ROOT, *args],
                        capture_output=True, text=True)
  assert proc.returncode == 0, proc.stderr
  return proc.stdout


def test_a_venv_made_from_one_lock_is_synced_again_for_another():
  assert "pip sync" not in _plan("venv")  # this checkout's venv, made from the CPU lock
  plan = _plan("venv", "LOCK=requirements/gpu.lock")
  assert "uv pip sync --python .venv/bin/python --compile-bytecode requirements/gpu.lock" in plan
  assert "scripts/check_prerequisites" in plan  # checked first, before anything is made


def _pins(lock):
  with open(f"{REPO_ROOT}/requirements/{lock}") as f:
    return dict(re.findall(r"^([A-Za-z0-9._-]+)==(\S+)", f.read(), re.M))


def test_the_main_locks_hold_no_torch_and_the_torch_lock_a_registry_build():
  # PyPI holds no `+cpu` build: a local version in a lock would not install from it.
  for lock in ("cpu.lock", "gpu.lock"):
    assert "torch" not in _pins(lock), lock
  torch = _pins("torch.lock")
  assert torch["torch"] == "2.13.0"
  assert not [f"{n}=={v}" for n, v in {**_pins("cpu.lock"), **torch}.items() if "+" in v]
  # torch's lock keeps every package the main lock shares with it at the main lock's pin.
  shared = set(torch) & set(_pins("cpu.lock"))
  assert shared and all(torch[n] == _pins("cpu.lock")[n] for n in shared)


def test_every_package_the_session_imports_is_named_in_pyproject():
  # An editor installs code_t5_session for NumPy, sentencepiece, onnxruntime and editdistance
  # alone (its docstring): each must be a dependency of its own, not one that t5 brings.
  import ast
  import glob
  import importlib.metadata
  import sys
  import tomllib
  with open(f"{REPO_ROOT}/pyproject.toml", "rb") as f:
    named = {re.split(r"[=<>\[; ]", d, maxsplit=1)[0].lower()
             for d in tomllib.load(f)["project"]["dependencies"]}
  imported = set()
  for path in glob.glob(f"{REPO_ROOT}/code_t5_session/*.py"):
    with open(path) as f:
      for node in ast.walk(ast.parse(f.read(), path)):
        if isinstance(node, ast.Import):
          imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and not node.level:
          imported.add(node.module.split(".")[0])
  third_party = imported - set(sys.stdlib_module_names) - {"code_t5_session"}
  distributions = importlib.metadata.packages_distributions()
  by_module = {m: distributions[m][0].lower() for m in third_party}
  # onnx: graph.py's, imported by the function the exporter calls, never by a session;
  # pygls and lsprotocol: the language server's (lsp.py), the `editor` extra's.
  assert set(by_module) == {"numpy", "sentencepiece", "onnxruntime", "editdistance", "onnx",
                            "pygls", "lsprotocol"}
  with open(f"{REPO_ROOT}/pyproject.toml", "rb") as f:
    named |= {re.split(r"[=<>\[; ]", d, maxsplit=1)[0].lower()
              for d in tomllib.load(f)["project"]["optional-dependencies"]["editor"]}
  assert {m: d for m, d in by_module.items() if d not in named and m != "lsprotocol"} == {}
  # The editor's venv (`make editor`) holds every one of them but the exporter's onnx.
  editor_lock = {name.lower() for name in _pins("editor.lock")}
  assert {d for m, d in by_module.items() if m != "onnx"} - editor_lock == set()
