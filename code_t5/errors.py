"""A failed run ends in one line naming what is wrong; the traceback only when asked.

`python -m t5.models.mesh_transformer_main` and `python -m seqio.scripts.cache_tasks_main`
are not ours, but both import code_t5 (`--module_import=code_t5`) before they parse gin or
read data. Under those entry points only, importing code_t5 replaces the interpreter's
report of an uncaught exception: an unknown Task name, a gin typo, a missing vocabulary, an
empty split each print

  code_t5: error: <what went wrong>

and the process exits with status 1. Set CODE_T5_TRACEBACK=1 for Python's full report.
Importing code_t5 anywhere else (a notebook, a test) changes nothing. The replacement itself
is `upstream/excepthook.py`; this module holds the rule for the line.

code_t5's own commands (`python -m code_t5.data`, `code_t5.baselines`, `code_t5.summaries`)
report through `run_command`: the same one line, `<command>: error: <what went wrong>`.
"""

import os
import re
import sys

ENTRY_POINTS = ("t5.models.mesh_transformer_main", "seqio.scripts.cache_tasks_main")
TRACEBACK_ENV = "CODE_T5_TRACEBACK"
MAX_CHARS = 400
# TF's words when a checkpoint's variables do not fit the graph the gin files built.
_RESTORE_MISMATCH = "Restoring from checkpoint failed."
_SHAPES = re.compile(r"lhs shape= (\[[^\]]*\]) rhs shape= (\[[^\]]*\])")
_NOT_FOUND = re.compile(r"Key (\S+) not found in checkpoint")


def _restore_mismatch(text: str) -> str:
  """One line for TF's failed restore: which variable differs, and what to do."""
  shapes, missing = _SHAPES.search(text), _NOT_FOUND.search(text)
  if shapes:
    what = f"a variable is {shapes.group(2)} in the checkpoint and {shapes.group(1)} here"
  elif missing:
    what = f"{missing.group(1)} is not in the checkpoint"
  else:
    what = "its variables differ from the graph's"
  return (f"the checkpoint does not fit the model these gin files build ({what}): launch with "
          "the model's gin files as it was trained (its model dir's operative_config.gin)")


def one_line(error: BaseException) -> str:
  """The message's first line, plus where gin says it happened, bounded.

  gin appends context lines to errors it sees: "In call to configurable 'run' (<function
  ...>)", or "In bindings string line 3" / "In file ..., line 7" followed by the binding.
  """
  lines = [line.strip() for line in str(error).strip().splitlines()]
  if lines and lines[0].startswith(_RESTORE_MISMATCH):
    return f"{type(error).__name__}: {_restore_mismatch(str(error))}"
  if isinstance(error, SyntaxError) and error.text:  # gin's parser: name the binding
    where = error.filename or "--gin_param"
    return f"SyntaxError: {error.msg} ({where}: {error.text.strip()})"
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


def running_entry_point(names=ENTRY_POINTS) -> bool:
  """Whether this process was started as `python -m <one of names>`."""
  main = sys.modules.get("__main__")
  spec = getattr(main, "__spec__", None)
  return getattr(spec, "name", None) in names


def run_command(command: str, run, expected=(), verbose: bool = False) -> int:
  """Runs `run()` for one of code_t5's commands and returns its exit status.

  An error of a kind in `expected`, an OSError or an error of TF's file layer (a gs:// bucket
  missing or refused, from inside TFDS) is the input's fault: one line `<command>: error:
  <message>` and status 1. Anything else is a bug and keeps its traceback, as does every error
  with `verbose` or CODE_T5_TRACEBACK=1.
  """
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  try:
    run()
  except Exception as e:  # pylint: disable=broad-except
    if (verbose or os.environ.get(TRACEBACK_ENV)
        or not (isinstance(e, (OSError,) + tuple(expected)) or files.is_tensorflow_error(e))):
      raise
    sys.stderr.flush()
    sys.stderr.write(f"{command}: error: {files.first_line(e)}\n")
    return 1
  return 0
