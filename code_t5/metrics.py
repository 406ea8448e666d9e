"""Full-line completion metrics, in seqio's form: fn(targets, predictions) -> {name: value}.

Values are percentages, as t5's own metrics report them. Predictions arrive already cut at
the first newline by the task's postprocessor.

Two definitions are reported side by side:

* ours (`exact_match`, `edit_similarity`, `prefix_coverage`): characters compared as typed,
  trailing whitespace left out (an editor strips it); edit similarity is 1 - Levenshtein
  distance / length of the longer string.
* CodeXGLUE's line-completion evaluator (`codexglue_exact_match`,
  `codexglue_edit_similarity`), for comparing with published numbers: exact match on
  whitespace-split tokens (`pred.split() == gt.split()`) and fuzzywuzzy's `fuzz.ratio`, an
  integer per example: 100 * (1 - insertions and deletions / total length), rounded. The same
  ratio comes from rapidfuzz, fuzzywuzzy's maintained successor. CodeXGLUE strips the
  prediction and its answers carry no surrounding whitespace; ours may start with a space
  (a cursor inside a line), so both sides are stripped.
"""

import os
from typing import Dict, Sequence

from rapidfuzz import fuzz

from code_t5_session.lines import line_similarity  # noqa: F401  (the one rule, shared)


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
  """1 - Levenshtein distance / length of the longer string."""
  return {"edit_similarity": _mean(line_similarity(t, p)
                                   for t, p in _pairs(targets, predictions))}


def prefix_coverage(targets, predictions) -> Dict[str, float]:
  """Share of the target that the prediction gets right before its first mistake.

  This is what a user keeps when accepting a suggestion up to where it goes wrong.
  """
  def coverage(t, p):
    return len(os.path.commonprefix([t, p])) / len(t) if t else float(not p)
  return {"prefix_coverage": _mean(coverage(t, p) for t, p in _pairs(targets, predictions))}


def codexglue_exact_match(targets, predictions) -> Dict[str, float]:
  """CodeXGLUE line completion: the same whitespace-separated tokens."""
  _pairs(targets, predictions)  # the same checks as ours
  return {"codexglue_exact_match": _mean(
      t.split() == p.split() for t, p in zip(targets, predictions))}


def codexglue_edit_similarity(targets, predictions) -> Dict[str, float]:
  """CodeXGLUE line completion: fuzzywuzzy's fuzz.ratio (an integer 0..100) per example,
  averaged; round() is fuzzywuzzy's own rounding."""
  _pairs(targets, predictions)
  ratios = [round(fuzz.ratio(p.strip(), t.strip())) for t, p in zip(targets, predictions)]
  return {"codexglue_edit_similarity": sum(ratios) / len(ratios) if ratios else 0.0}


FULL_LINE_METRICS = (exact_match, edit_similarity, prefix_coverage, codexglue_exact_match,
                     codexglue_edit_similarity)
# What they report, in that order: each function reports one value under its own name.
FULL_LINE_METRIC_NAMES = tuple(fn.__name__ for fn in FULL_LINE_METRICS)


CURSOR_CLASSES = ("line start", "between words", "inside a word")


def cursor_class(prefix: str, target: str) -> str:
  """Where the cursor of a full-line example stands: at the start of its line's code (only
  indentation typed), between words, or inside a word (an identifier, keyword or number:
  the characters before and after it are both word characters), where a sentencepiece model
  sees a token cut in two."""
  typed = prefix.rsplit("\n", 1)[-1]
  if not typed.strip():
    return CURSOR_CLASSES[0]
  def is_word(c):
    return c.isalnum() or c == "_"
  return CURSOR_CLASSES[2 if target and is_word(typed[-1]) and is_word(target[0]) else 1]


def by_cursor(prefixes: Sequence[str], targets: Sequence[str],
              predictions: Sequence[str]) -> Dict[str, Dict[str, float]]:
  """{cursor class: {"examples": n, exact_match, edit_similarity}} over the classes present."""
  classes = [cursor_class(p, t) for p, t in zip(prefixes, targets)]
  out = {}
  for name in CURSOR_CLASSES:
    chosen = [i for i, c in enumerate(classes) if c == name]
    if chosen:
      t, p = [targets[i] for i in chosen], [predictions[i] for i in chosen]
      out[name] = {"examples": len(chosen), **exact_match(t, p), **edit_similarity(t, p)}
  return out


def acceptance(targets: Sequence[str], predictions: Sequence[str], scores: Sequence[float],
               shown_shares=(100, 90, 80, 70, 60, 50, 40, 30, 20, 10)):
  """What a confidence threshold on the suggestion's score does, offline: for each share of
  the examples to show, the threshold (`min_score`) that shows that many (the best-scoring
  first), and the exact match and edit similarity of the suggestions shown, the stand-in for
  how many a user would accept. [{"min_score", "shown", exact_match, edit_similarity}]:
  `shown` is the share actually shown, in percent (ties at a threshold all show). A
  prediction with no score (-inf: none returned) is never shown."""
  pairs = _pairs(targets, predictions)
  if len(scores) != len(pairs):
    raise ValueError(f"{len(pairs)} predictions but {len(scores)} scores")
  best_first = sorted((s for s in scores if s != float("-inf")), reverse=True)
  rows = []
  for share in shown_shares:
    count = max(1, round(len(pairs) * share / 100))
    if count > len(best_first):
      continue
    min_score = best_first[count - 1]
    chosen = [i for i, s in enumerate(scores) if s >= min_score]
    t, p = [targets[i] for i in chosen], [predictions[i] for i in chosen]
    rows.append({"min_score": min_score, "shown": 100.0 * len(chosen) / len(pairs),
                 **exact_match(t, p), **edit_similarity(t, p)})
  return rows
