"""Full-line completion metrics, in seqio's form: fn(targets, predictions) -> {name: value}.

Values are percentages, as t5's own metrics report them. Predictions arrive already cut at
the first newline by the task's postprocessor; trailing whitespace is not compared, since an
editor strips it.
"""

import os
from typing import Dict, Sequence

import editdistance


def _pairs(targets: Sequence[str], predictions: Sequence[str]):
  if not targets and not predictions:
    raise ValueError("no examples to score: the eval split is empty")
  if len(targets) != len(predictions):
    raise ValueError(f"{len(targets)} targets but {len(predictions)} predictions")
  return [(t.rstrip(), p.rstrip()) for t, p in zip(targets, predictions)]


def _mean(values) -> float:
  values = list(values)
  return 100.0 * sum(values) / len(values) if values else 0.0


def exact_match(targets, predictions) -> Dict[str, float]:
  return {"exact_match": _mean(t == p for t, p in _pairs(targets, predictions))}


def edit_similarity(targets, predictions) -> Dict[str, float]:
  """1 - Levenshtein distance / length of the longer string (CodeXGLUE line completion)."""
  def similarity(t, p):
    longest = max(len(t), len(p))
    return 1.0 - editdistance.eval(t, p) / longest if longest else 1.0
  return {"edit_similarity": _mean(similarity(t, p) for t, p in _pairs(targets, predictions))}


def prefix_coverage(targets, predictions) -> Dict[str, float]:
  """Share of the target that the prediction gets right before its first mistake.

  This is what a user keeps when accepting a suggestion up to where it goes wrong.
  """
  def coverage(t, p):
    return len(os.path.commonprefix([t, p])) / len(t) if t else float(not p)
  return {"prefix_coverage": _mean(coverage(t, p) for t, p in _pairs(targets, predictions))}


FULL_LINE_METRICS = (exact_match, edit_similarity, prefix_coverage)
