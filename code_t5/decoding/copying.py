"""Completing a line by copying from the code before the cursor, without a model: copy-line
(the rest of the earlier line that starts most like the one being typed) is the baseline a
model must beat; copy-next (what followed the last occurrence of the line before the cursor)
is line-level induction. Both are evidence for the consensus line (consensus.py), and
`code_t5.baselines` scores copy-line beside a model."""

import os


def copy_similar_line(prefix: str) -> str:
  """Rest of the earlier line that shares the longest start with the line being typed."""
  *earlier, typed = prefix.split("\n")
  best, best_common = None, -1
  for line in reversed(earlier):  # nearest first, so it keeps a tie
    line = line.rstrip("\r")
    if len(line) <= len(typed):
      continue
    common = len(os.path.commonprefix([line, typed]))
    if common > best_common:
      best, best_common = line, common
  return "" if best is None else best[len(typed):]


def copy_next_line(prefix: str) -> str:
  """Rest of the line that followed the nearest earlier occurrence of the line before the
  cursor, where that line starts with what is typed ("" where there is none): the line-level
  induction a model that copies from its context would do (after `return NotImplemented`,
  what followed it before)."""
  *earlier, typed = prefix.split("\n")
  if len(earlier) < 2 or not earlier[-1].strip():
    return ""
  before = earlier[-1].rstrip("\r")
  for i in range(len(earlier) - 2, -1, -1):
    if earlier[i].rstrip("\r") == before:
      line = earlier[i + 1].rstrip("\r")
      if line.startswith(typed) and len(line) > len(typed):
        return line[len(typed):]
  return ""
