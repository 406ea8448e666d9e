"""A failed run ends in one line naming what is wrong; the traceback only when asked.

`python -m t5.models.mesh_transformer_main` and `python -m seqio.scripts.cache_tasks_main`
are not ours, but both import code_t5 (`--module_import=code_t5`) before they parse gin or
read data. Under those entry points only, importing code_t5 replaces the interpreter's
report of an uncaught exception: an unknown Task name, a gin typo, a missing vocabulary, an
empty split each print

  code_t5: error: <what went wrong>

and the process exits with status 1. Set CODE_T5_TRACEBACK=1 for Python's full report.
Importing code_t5 anywhere else (a notebook, a test) changes nothing.
"""

import os
import sys

ENTRY_POINTS = ("t5.models.mesh_transformer_main", "seqio.scripts.cache_tasks_main")
TRACEBACK_ENV = "CODE_T5_TRACEBACK"
MAX_CHARS = 400


def one_line(error: BaseException) -> str:
  """The message's first line, plus where gin says it happened, bounded.

  gin appends context lines to errors it sees: "In call to configurable 'run' (<function
  ...>)", or "In bindings string line 3" / "In file ..., line 7" followed by the binding.
  """
  lines = [line.strip() for line in str(error).strip().splitlines()]
  text = f"{type(error).__name__}: {lines[0]}" if lines and lines[0] else type(error).__name__
  for i, line in enumerate(lines[1:], 1):
    if line.startswith("In call to configurable"):
      text += " (" + line.split(" (<", 1)[0].replace("In call", "in call") + ")"
    elif line.startswith(("In bindings string", "In file")):
      binding = lines[i + 1] if i + 1 < len(lines) else ""
      text += f" ({line[0].lower()}{line[1:]}: {binding})" if binding else f" ({line})"
  if len(text) > MAX_CHARS:
    text = text[:MAX_CHARS] + " ..."
  return text


def _report(kind, error, traceback):
  if os.environ.get(TRACEBACK_ENV) or not issubclass(kind, Exception):
    sys.__excepthook__(kind, error, traceback)
    return
  sys.stderr.flush()
  sys.stderr.write(f"code_t5: error: {one_line(error)}\n"
                   f"  ({TRACEBACK_ENV}=1 shows the traceback)\n")


def running_entry_point(names=ENTRY_POINTS) -> bool:
  """Whether this process was started as `python -m <one of names>`."""
  main = sys.modules.get("__main__")
  spec = getattr(main, "__spec__", None)
  return getattr(spec, "name", None) in names


def install_if_entry_point() -> None:
  if running_entry_point():
    sys.excepthook = _report
