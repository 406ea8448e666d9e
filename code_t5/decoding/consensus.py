"""The consensus line: of the line search's lines and two copies from the file, the one that
agrees most with all of them (minimum Bayes risk under edit similarity).

The line search (beam_search.gin) gives the k likeliest lines with their log-probabilities.
The file gives two more, which the model, reading a window of it (and, with the copy cache,
copying a few tokens at a time), often misses: copy-line (`copying.copy_similar_line`), the
rest of the earlier line that best matches what is typed, and copy-next
(`copying.copy_next_line`), the line that followed the earlier place most like the two lines
before the cursor. Each line is evidence of
what the user will type: copy-line's weighted by `copy_weight`, copy-next's by
`next_weight`, the model's lines sharing the rest by their probability (flattened by
`temperature`). The suggestion is the candidate whose expected edit similarity
(`metrics.line_similarity`) to that evidence is highest; that expectation is its confidence.

Why: the model's greedy line and copy-line's are each the better one on about half of the
examples (docs/BENCHMARK_LOG.md, "The consensus line", for what it gains).

The rule is `code_t5_session/lines.py: consensus_line`, which an editor's
`Session(consensus=True)` runs on its greedy line; here gin configures it.

  infer:  --gin_file=infer_full_line.gin --gin_file=consensus.gin
          (a JavaScript model's: consensus_javascript.gin; `gin_file`)
"""

import os
from typing import Sequence, Tuple

import gin

from code_t5.decoding import copying
from code_t5_session import lines


@gin.configurable(module="code_t5")
def consensus_line(prefix: str, completions: Sequence[str], scores: Sequence[float],
                   copy_weight: float = lines.COPY_WEIGHT,
                   next_weight: float = lines.NEXT_WEIGHT,
                   temperature: float = lines.TEMPERATURE) -> Tuple[str, float]:
  """(suggestion, its expected edit similarity 0..1) for the file's `prefix`, from the line
  search's `completions` and their `scores` (log-probabilities, best first; -inf: none).

  Args:
    prefix: the file up to the cursor, as infer and the full-line Task read it.
    completions: the line search's lines (TOP_K of them), best first.
    scores: their log-probabilities in nats; a line scored -inf is left out.
    copy_weight: the share of the evidence that copy-line's line carries
      (`copying.copy_similar_line`; left out where it has none: no earlier line is longer
      than the typed one).
    next_weight: the share that copy-next's line carries (`copying.copy_next_line`: what
      followed the earlier place most like the lines before the cursor; left out where it has
      none).
    temperature: the model's log-probabilities are divided by it before the softmax; above 1
      the less likely lines count for more. The model's lines share what the two leave.
  """
  return lines.consensus_line(prefix, completions, scores, copy_weight, next_weight,
                              temperature, next_line=copying.copy_next_line)


def gin_file(language: str) -> str:
  """The consensus line's gin file for a model of `language`: consensus_<language>.gin where
  gin_configs/ has one (the language's own weights, where Python's lost on its dev data:
  JavaScript's), else consensus.gin."""
  import code_t5  # pylint: disable=g-import-not-at-top  (the package imports this module)
  own = f"consensus_{language}.gin"
  return own if os.path.exists(os.path.join(code_t5.gin_configs_dir(), own)) else "consensus.gin"


# The model's consensus's temperature; the line search ranks its lines by the same agreement
# (search.ranked_by_agreement).
MODEL_CONSENSUS_TEMPERATURE = 4.0


@gin.configurable(module="code_t5")
def model_consensus_line(prefix: str, completions: Sequence[str], scores: Sequence[float],
                         temperature: float = MODEL_CONSENSUS_TEMPERATURE) -> Tuple[str, float]:
  """`consensus_line` of the model's lines alone: of the line search's `completions`, the one
  with the highest expected edit similarity to all of them, weighted by softmax(`scores` /
  `temperature`). Nothing is copied from the file: with no line of the model's, no
  suggestion.

  Why 4: on the validation split it scored 27.65 edit similarity at 4 against 26.77 at 2 and
  27.25 at 8 on the 12.8M model with a bias per layer, and 26.15 against 25.28 and 26.67 on
  the defaults' (docs/BENCHMARK_LOG.md, "The model's consensus"); at 1000 (all lines alike) 26.34.
  """
  return consensus_line(prefix, completions, scores, copy_weight=0.0, next_weight=0.0,
                        temperature=temperature)
