"""Lines from the file itself, and the consensus of several lines: the one rule for the eval's
and infer's consensus line (`code_t5/decoding/copying.py` and `consensus.py` configure it with
gin) and for an editor's `Session(consensus=True)`, which reads no TensorFlow.

  line_similarity     our edit similarity of two lines (code_t5.metrics reports its mean)
  copy_similar_line   copy-line: the rest of the earlier line that starts most like the
                      typed one (the baseline a model must beat)
  copy_next_line      copy-next: what followed the earlier place most like the lines before
                      the cursor (line-level induction)
  consensus_line      of a model's lines and those two copies, the one that agrees most with
                      all of them (minimum Bayes risk under edit similarity)
"""

import math
import os
from typing import Callable, Optional, Sequence, Tuple

import editdistance
import numpy as np

# The consensus's evidence: copy-line's share, copy-next's, and the temperature of the
# model's lines (docs/BENCHMARK_LOG.md, "The consensus line" and "Copy-next from the nearest like
# place", for how they were chosen).
COPY_WEIGHT = 0.3
NEXT_WEIGHT = 0.4
TEMPERATURE = 2.0
# Copy-next's place: the lines before the cursor it matches, how alike, how far back it reads.
CONTEXT_LINES = 2
MIN_SIMILARITY = 0.5
MAX_LINES = 4096
# Bounds on the copy rules' work a suggestion, whatever the file: a line is compared by its
# first MAX_LINE_CHARS characters (copy-next's with indentation left out; the consensus's
# candidates too), and copy-next computes at most MAX_COMPARISONS edit distances, nearest
# places first. An edit distance costs its two lengths' product: 4,096
# alike lines of 1,000 characters took 13 s a suggestion, of 4,000 186 s. The worst case now:
# docs/BENCHMARK_LOG.md, "Hostile input" (scripts/bench_hostile.py).
MAX_LINE_CHARS = 200
MAX_COMPARISONS = 4096


def line_similarity(target: str, prediction: str) -> float:
  """Our edit similarity of one line (0..1): 1 - Levenshtein distance / length of the longer
  line, trailing whitespace left out (an editor strips it)."""
  target, prediction = target.rstrip(), prediction.rstrip()
  longest = max(len(target), len(prediction))
  return 1.0 - editdistance.eval(target, prediction) / longest if longest else 1.0


def _similarity_bounds(length: int, other_lengths: np.ndarray) -> np.ndarray:
  """The most `line_similarity` can be for a stripped line of `length` and each stripped line
  of `other_lengths`."""
  longest = np.maximum(length, other_lengths)
  with np.errstate(invalid="ignore"):  # 0 / 0 where both are empty: similarity 1
    return np.where(longest > 0, 1.0 - np.abs(length - other_lengths) / longest, 1.0)


def copy_similar_line(prefix: str) -> str:
  """Rest of the earlier line that shares the longest start with the line being typed."""
  *earlier, typed = prefix.split("\n")
  best, best_common = None, -1
  beats = ""  # what a line must start with to share more than the best so far
  for line in reversed(earlier):  # nearest first, so it keeps a tie
    line = line.rstrip("\r")
    if len(line) <= len(typed) or not line.startswith(beats):
      continue
    common = len(os.path.commonprefix([line, typed]))
    best, best_common = line, common
    if common == len(typed):
      break  # all of the typed line: no line further back shares more
    beats = typed[:common + 1]
  return "" if best is None else best[len(typed):]


def copy_next_line(prefix: str, context_lines: int = CONTEXT_LINES,
                   min_similarity: float = MIN_SIMILARITY, max_lines: int = MAX_LINES,
                   at_depth: bool = True) -> str:
  """Rest of the line that followed the earlier place most like the place of the cursor:
  line-level induction, what a model that copies from its context would do (after `if other
  is None:`, what followed it before), and where the code repeats with changes (a second
  test after a first, `self.b = b` after `self.a = a`), the nearest analogue.

  The place is the `context_lines` lines before the cursor's line, blank ones included; an
  earlier place matches by the mean edit similarity (`line_similarity`, indentation left
  out) of its lines to them, at least `min_similarity` (1: only the same lines), the
  nearest winning a tie. With `at_depth`, the line that followed is moved to the cursor's
  depth: indented as much deeper or shallower than the place's last line not blank in
  either place as it was there, where those two lines are alike (at least `min_similarity`;
  a place whose line cannot go that far left is passed over); without, it is copied at its
  own depth. Only a line that starts with what is typed and goes on is taken; "" where none
  does, or where the lines before the cursor are all blank. The last `max_lines` lines are
  read: the scan costs an edit distance a line and place, each of at most MAX_LINE_CHARS
  characters, MAX_COMPARISONS of them at the most.

  Why two lines and 0.5 (where before #60's analogues it was one line, the same): on the
  validation split this copy, else copy-line, scores 30.4 edit similarity against copy-line's
  24.7 (one line, the same: 27.8), most of it at the line's start, where most lines that
  repeat stand (docs/BENCHMARK_LOG.md, "Copy-next from the nearest like place"). Why the depth:
  `else:` after a block copied from a place one level deeper came 4 spaces too far right
  (docs/BENCHMARK_LOG.md, "Copy-next at the cursor's depth")."""
  *earlier, typed = prefix.split("\n")
  # The file's start reads as blank lines, so that its first lines are a place too.
  earlier = [""] * (context_lines - 1) + [line.rstrip("\r") for line in earlier[-max_lines:]]
  if len(earlier) < context_lines + 1:
    return ""
  # Places match with indentation left out, by their lines' first MAX_LINE_CHARS characters.
  stripped = [line.strip()[:MAX_LINE_CHARS] for line in earlier]
  place = stripped[-context_lines:]
  if not any(place):
    return ""
  ours = earlier[-context_lines:]
  best, best_similarity = "", -1.0
  # An edit distance is at least the two lengths' difference, which bounds each line's
  # similarity from above. A place whose bounds cannot beat the best so far, or reach
  # min_similarity, cannot be the answer: its remaining distances are not computed (in a
  # long file, most of them). The bounds of every place come at once from the lengths;
  # bounds and similarities are summed in one order, so that a bound rounds at or above its
  # similarity.
  place_lengths = [len(line) for line in place]
  lengths = np.array([len(line) for line in stripped], dtype=np.float64)
  # A place for each line it can end at, earlier[i]: it starts at earlier[i - context_lines + 1].
  places = len(earlier) - context_lines
  line_bounds = [_similarity_bounds(mine, lengths[k:k + places])
                 for k, mine in enumerate(place_lengths)]
  place_bounds = (sum(line_bounds) / context_lines).tolist()
  line_bounds = [bounds.tolist() for bounds in line_bounds]

  def hopeless(mean):  # a place whose mean similarity, or its bound, is this cannot win
    return mean <= best_similarity or mean < min_similarity
  # With `at_depth`, what is typed after the indentation must start the line at whatever
  # depth it stood: the cheap test first; the move to our depth and the test of all that is
  # typed once the place's similarities are known, since they say whether it moves.
  typed_text = typed.lstrip(" \t") if at_depth else typed
  compared = 0
  # The place ending at earlier[i] is followed by earlier[i + 1]; nearest first.
  for i in range(len(earlier) - 2, context_lines - 2, -1):
    start = i - context_lines + 1
    if hopeless(place_bounds[start]):
      continue
    if compared >= MAX_COMPARISONS:
      break  # the places further back go unread
    line = earlier[i + 1]
    if not (line.lstrip(" \t") if at_depth else line).startswith(typed_text):
      continue
    theirs = stripped[start:i + 1]
    similarities = [bounds[start] for bounds in line_bounds]
    for k in range(context_lines):
      similarities[k] = line_similarity(place[k], theirs[k])
      compared += 1
      if hopeless(sum(similarities) / context_lines):
        break
    else:
      if at_depth:
        line = _at_depth(line, ours, earlier[start:i + 1], similarities, min_similarity)
      if line is None or len(line) <= len(typed) or not line.startswith(typed):
        continue
      best, best_similarity = line[len(typed):], sum(similarities) / context_lines
      if best_similarity == 1.0:
        break  # the same lines: no place further back is more alike
  return best if best_similarity >= min_similarity else ""


def _indentation(line: str) -> str:
  return line[:len(line) - len(line.lstrip(" \t"))]


def _at_depth(line: str, ours: Sequence[str], theirs: Sequence[str],
              similarities: Sequence[float], min_similarity: float) -> Optional[str]:
  """`line`, which followed the place `theirs`, moved to the depth of the place `ours`: as
  much deeper or shallower than our last line not blank in either place as it was than
  theirs, where those two lines are alike (`similarities` of the places' lines, at least
  `min_similarity`); our indentation kept as the base. None where it would go left of column
  0; the line as it is where the places have no such pair of lines, where the pair is not
  alike (their depths need not correspond), or where their indentations mix tabs and spaces
  differently."""
  for mine, other, similarity in zip(reversed(ours), reversed(theirs), reversed(similarities)):
    if mine.strip() and other.strip():
      break
  else:
    return line
  my_indent, their_indent = _indentation(mine), _indentation(other)
  if my_indent == their_indent or similarity < min_similarity:
    return line
  line_indent = _indentation(line)
  if line_indent.startswith(their_indent):  # as deep as their line or deeper
    return my_indent + line[len(their_indent):]
  if their_indent.startswith(line_indent):  # shallower: as many columns less than ours
    less = len(their_indent) - len(line_indent)
    if less > len(my_indent):
      return None
    return my_indent[:len(my_indent) - less] + line[len(line_indent):]
  return line


def consensus_line(prefix: str, completions: Sequence[str], scores: Sequence[float],
                   copy_weight: float = COPY_WEIGHT, next_weight: float = NEXT_WEIGHT,
                   temperature: float = TEMPERATURE,
                   next_line: Callable[[str], str] = copy_next_line) -> Tuple[str, float]:
  """(suggestion, its expected edit similarity 0..1) for the file's `prefix`, from a model's
  `completions` and their `scores` (log-probabilities, best first; -inf: none) and two copies
  from the file: copy-line's (`copy_similar_line`) weighted by `copy_weight`, copy-next's
  (`next_line`, `copy_next_line` as gin or the caller configures it) by `next_weight`. The
  model's lines share what the two leave, by their probability divided by `temperature`
  (above 1 the less likely lines count for more). The suggestion is the candidate whose
  expected `line_similarity` to that evidence is highest, the model's best first on a tie."""
  for name, weight in (("copy_weight", copy_weight), ("next_weight", next_weight)):
    if not 0.0 <= weight <= 1.0:
      raise ValueError(f"code_t5.consensus_line.{name} = {weight}: must be in [0, 1]")
  if copy_weight + next_weight > 1.0:
    raise ValueError(f"code_t5.consensus_line: copy_weight + next_weight = "
                     f"{copy_weight + next_weight}: must be at most 1")
  if temperature <= 0:
    raise ValueError(f"code_t5.consensus_line.temperature = {temperature}: must be above 0")
  if len(completions) != len(scores):
    raise ValueError(f"{len(completions)} completions but {len(scores)} scores")
  searched = [(line, score) for line, score in zip(completions, scores)
              if not math.isinf(score)]
  # A copy of weight 0 is neither evidence nor a candidate: copy_weight = next_weight = 0
  # chooses among the model's lines alone (code_t5's model_consensus_line).
  copied = [(line, weight) for line, weight in
            ((copy_similar_line(prefix), copy_weight), (next_line(prefix), next_weight))
            if line and weight > 0]
  evidence = {}  # line -> weight; a line found twice counts twice
  if searched:
    best = max(score for _, score in searched)
    unnormalised = [math.exp((score - best) / temperature) for _, score in searched]
    model_share = 1.0 - sum(weight for _, weight in copied)
    for (line, _), weight in zip(searched, unnormalised):
      evidence[line] = evidence.get(line, 0.0) + model_share * weight / sum(unnormalised)
  elif copied:  # no line of the model's: the copies are all the evidence
    total = sum(weight for _, weight in copied)
    copied = [(line, weight / total) for line, weight in copied]
  for line, weight in copied:
    evidence[line] = evidence.get(line, 0.0) + weight
  if not evidence:
    return "", 0.0
  # Candidates in order, the model's best first: the first of equal expectations wins.
  candidates = list(dict.fromkeys([line for line, _ in searched] +
                                  [line for line, _ in copied]))
  # Compared by their first MAX_LINE_CHARS characters, as copy-next compares (copy-line's
  # rest of a line can be any length).
  expected = [sum(weight * line_similarity(other[:MAX_LINE_CHARS], line[:MAX_LINE_CHARS])
                  for other, weight in evidence.items())
              for line in candidates]
  best_index = max(range(len(candidates)), key=lambda i: (expected[i], -i))
  return candidates[best_index], expected[best_index]
