"""Two reference completers for full-line completion: the bar a trained model must clear.

* `NgramCompleter`: a token n-gram model over the Task's own sentencepiece tokens, counted on
  the train split. It completes greedily, one token at a time, from the longest context seen
  in training (backing off to shorter ones), until it writes a newline or EOS.
* `copy_similar_line`: the rest of the earlier line of the same file whose start matches the
  most of what is already typed on the current line (the nearest such line on a tie).

Both take the whole file before the cursor, as the full-line Task's `inputs_pretokenized`
holds it; `scripts/bench_learning.py` scores them next to the model on the same examples.
`model_window` cuts that file down to what the model reads, so copy-line can also be scored
on exactly the model's information.
"""

import os
from typing import Iterable, List, Sequence

import numpy as np


class NgramCompleter:
  """Greedy token n-gram completion with backoff; counts live in sorted numpy arrays."""

  def __init__(self, order: int, vocab_size: int):
    if order < 1:
      raise ValueError(f"n-gram order must be at least 1, got {order}")
    if vocab_size ** order >= 2 ** 62:
      raise ValueError(f"{order}-grams over {vocab_size} tokens do not fit an int64 key")
    self.order = order
    self.vocab_size = vocab_size
    # For each context length k < order: sorted context keys and the most frequent next token.
    self._contexts: List[np.ndarray] = []
    self._best_next: List[np.ndarray] = []

  def _keys(self, tokens: np.ndarray, k: int) -> np.ndarray:
    """Context key of length k ending before each position of `tokens` (left-padded)."""
    key = np.zeros(len(tokens) - (self.order - 1), dtype=np.int64)
    for j in range(k):
      start = self.order - 1 - k + j
      key = key * self.vocab_size + tokens[start:start + len(key)]
    return key

  def fit(self, documents: Iterable[Sequence[int]]) -> "NgramCompleter":
    """Counts every n-gram of every document; each document starts from an empty context."""
    pad = np.zeros(self.order - 1, dtype=np.int64)  # id 0 is padding: never a real token
    padded = [np.concatenate([pad, np.asarray(d, dtype=np.int64)]) for d in documents]
    if not any(len(p) > len(pad) for p in padded):
      raise ValueError("no tokens to count n-grams on")
    for k in range(self.order):
      contexts = np.concatenate([self._keys(p, k) for p in padded])
      nexts = np.concatenate([p[self.order - 1:] for p in padded])
      pairs, counts = np.unique(contexts * self.vocab_size + nexts, return_counts=True)
      context, token = np.divmod(pairs, self.vocab_size)
      # Most frequent next token per context; the smallest id wins a tie.
      order = np.lexsort((token, -counts, context))
      first = np.r_[True, context[order][1:] != context[order][:-1]]
      self._contexts.append(context[order][first])
      self._best_next.append(token[order][first])
    return self

  def next_token(self, history: Sequence[int]) -> int:
    """Most frequent next token after the longest suffix of `history` seen in training."""
    if not self._contexts:
      raise RuntimeError("NgramCompleter: call fit() first")
    for k in range(min(self.order - 1, len(history)), -1, -1):
      key = 0
      for t in history[len(history) - k:]:
        key = key * self.vocab_size + t
      contexts = self._contexts[k]
      i = np.searchsorted(contexts, key)
      if i < len(contexts) and contexts[i] == key:
        return int(self._best_next[k][i])
    raise AssertionError("the empty context is always counted")

  def complete(self, prefix: Sequence[int], stop_ids: Sequence[int],
               max_tokens: int) -> List[int]:
    """Tokens after `prefix` up to (not including) the first of `stop_ids`."""
    history = [0] * (self.order - 1) + list(prefix)  # padded as in fit()
    out = []
    while len(out) < max_tokens:
      token = self.next_token(history[len(history) - (self.order - 1):])
      if token in stop_ids:
        break
      out.append(token)
      history.append(token)
    return out


def model_window(prefix: str, feature, input_length: int) -> str:
  """What the model reads of `prefix`, as text: the Task's "inputs" `feature` at
  `input_length`, cut exactly as `preprocessors.truncate_inputs_at_line` cuts it."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from code_t5 import preprocessors  # pylint: disable=g-import-not-at-top
  vocabulary = feature.vocabulary
  kept = preprocessors.left_truncate_at_line(
      tf.constant(vocabulary.encode(prefix), tf.int32),
      preprocessors.inputs_budget(input_length, feature), preprocessors.newline_id(vocabulary))
  return vocabulary.decode(kept.numpy().tolist())


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
