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
from typing import Callable, Sequence, Tuple

import editdistance

# The consensus's evidence: copy-line's share, copy-next's, and the temperature of the
# model's lines (BENCHMARKS.md, "The consensus line" and "Copy-next from the nearest like
# place", for how they were chosen).
COPY_WEIGHT = 0.3
NEXT_WEIGHT = 0.4
TEMPERATURE = 2.0
# Copy-next's place: the lines before the cursor it matches, how alike, how far back it reads.
CONTEXT_LINES = 2
MIN_SIMILARITY = 0.5
MAX_LINES = 4096


def line_similarity(target: str, prediction: str) -> float:
  """Our edit similarity of one line (0..1): 1 - Levenshtein distance / length of the longer
  line, trailing whitespace left out (an editor strips it)."""
  target, prediction = target.rstrip(), prediction.rstrip()
  longest = max(len(target), len(prediction))
  return 1.0 - editdistance.eval(target, prediction) / longest if longest else 1.0


def _similarity_bound(length: int, other_length: int) -> float:
  """The most `line_similarity` can be for stripped lines of these lengths."""
  longest = max(length, other_length)
  return 1.0 - abs(length - other_length) / longest if longest else 1.0


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
                   min_similarity: float = MIN_SIMILARITY, max_lines: int = MAX_LINES) -> str:
  """Rest of the line that followed the earlier place most like the place of the cursor:
  line-level induction, what a model that copies from its context would do (after `if other
  is None:`, what followed it before), and where the code repeats with changes (a second
  test after a first, `self.b = b` after `self.a = a`), the nearest analogue.

  The place is the `context_lines` lines before the cursor's line, blank ones included; an
  earlier place matches by the mean edit similarity (`line_similarity`, indentation left
  out) of its lines to them, at least `min_similarity` (1: only the same lines), the
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
  # An edit distance is at least the two lengths' difference, which bounds each line's
  # similarity from above. A place whose bounds cannot beat the best so far, or reach
  # min_similarity, cannot be the answer: its remaining distances are not computed (in a
  # long file, most of them). Bounds and similarities are summed in one order, so that a
  # bound rounds at or above its similarity.
  place_lengths = [len(line) for line in place]

  def hopeless(similarities):
    mean = sum(similarities) / context_lines
    return mean <= best_similarity or mean < min_similarity
  # The place ending at earlier[i] is followed by earlier[i + 1]; nearest first.
  for i in range(len(earlier) - 2, context_lines - 2, -1):
    line = earlier[i + 1]
    if len(line) <= len(typed) or not line.startswith(typed):
      continue
    theirs = stripped[i - context_lines + 1:i + 1]
    similarities = [_similarity_bound(mine, len(other))
                    for mine, other in zip(place_lengths, theirs)]
    if hopeless(similarities):
      continue
    for k in range(context_lines):
      similarities[k] = line_similarity(place[k], theirs[k])
      if hopeless(similarities):
        break
    else:
      best, best_similarity = line[len(typed):], sum(similarities) / context_lines
      if best_similarity == 1.0:
        break  # the same lines: no place further back is more alike
  return best if best_similarity >= min_similarity else ""


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
  expected = [sum(weight * line_similarity(other, line) for other, weight in evidence.items())
              for line in candidates]
  best_index = max(range(len(candidates)), key=lambda i: (expected[i], -i))
  return candidates[best_index], expected[best_index]
