"""sys.excepthook under t5's and seqio's entry points: an uncaught error is one line,
`code_t5: error: <errors.one_line>`, and exit status 1; CODE_T5_TRACEBACK=1 for Python's own
report (errors.py says why and how)."""

import os
import sys

from code_t5 import errors


def _report(kind, error, traceback):
  if os.environ.get(errors.TRACEBACK_ENV) or not issubclass(kind, Exception):
    sys.__excepthook__(kind, error, traceback)
    return
  sys.stderr.flush()
  sys.stderr.write(f"code_t5: error: {errors.one_line(error)}\n"
                   f"  ({errors.TRACEBACK_ENV}=1 shows the traceback)\n")


def install() -> None:
  """Under an entry point (upstream.install decides)."""
  sys.excepthook = _report
