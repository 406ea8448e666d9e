"""Completing a line by copying from the code before the cursor, without a model: copy-line
(the rest of the earlier line that starts most like the one being typed) is the baseline a
model must beat; copy-next (what followed the earlier place most like the lines before the
cursor) is line-level induction. Both are evidence for the consensus line (consensus.py), and
`code_t5.baselines` scores copy-line beside a model."""

import os

import gin

from code_t5 import metrics


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


@gin.configurable(module="code_t5")
def copy_next_line(prefix: str, context_lines: int = 2, min_similarity: float = 0.5,
                   max_lines: int = 4096) -> str:
  """Rest of the line that followed the earlier place most like the place of the cursor:
  line-level induction, what a model that copies from its context would do (after `if other
  is None:`, what followed it before), and where the code repeats with changes (a second
  test after a first, `self.b = b` after `self.a = a`), the nearest analogue.

  The place is the `context_lines` lines before the cursor's line, blank ones included; an
  earlier place matches by the mean edit similarity (`metrics.line_similarity`, indentation
  left out) of its lines to them, at least `min_similarity` (1: only the same lines), the
  nearest winning a tie. Only a line that starts with what is typed and goes on is taken; ""
  where none does, or where the lines before the cursor are all blank. The last `max_lines`
  lines are read: the scan costs an edit distance a line and place.

  Why two lines and 0.5 (where before #60's analogues it was one line, the same): on the
  validation split this copy, else copy-line, scores 30.4 edit similarity against copy-line's
  24.7 (one line, the same: 27.8), most of it at the line's start, where most lines that
  repeat stand (BENCHMARKS.md, "Copy-next from the nearest like place")."""
  *earlier, typed = prefix.split("\n")
  # The file's start reads as blank lines, so that its first lines are a place too.
  earlier = [""] * (context_lines - 1) + [line.rstrip("\r") for line in earlier[-max_lines:]]
  if len(earlier) < context_lines + 1:
    return ""
  stripped = [line.strip() for line in earlier]  # places match with indentation left out
  place = stripped[-context_lines:]
  if not any(place):
    return ""
  best, best_similarity = "", -1.0
  # The place ending at earlier[i] is followed by earlier[i + 1]; nearest first.
  for i in range(len(earlier) - 2, context_lines - 2, -1):
    line = earlier[i + 1]
    if len(line) <= len(typed) or not line.startswith(typed):
      continue
    similarity = sum(metrics.line_similarity(ours, theirs) for ours, theirs in
                     zip(place, stripped[i - context_lines + 1:i + 1])) / context_lines
    if similarity > best_similarity:
      best, best_similarity = line[len(typed):], similarity
  return best if best_similarity >= min_similarity else ""
