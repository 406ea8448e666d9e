"""The statistics behind the learning bench's figures (scripts/bench_learning.py): per-example
scores, paired bootstrap leads, and two probes of copying, the copy probe (lines that stand
verbatim earlier in the model's window) and the induction probe (a call of random words, then
its start again). Pure functions over lists and arrays; the bench runs the models and prints.
"""

import random

import numpy as np

from code_t5 import metrics

# The induction probe: calls of random words, name(a1, ..., a7), 96 of them.
INDUCTION_PAIRS = 96
INDUCTION_ARGUMENTS = 7


def per_example(targets, predictions):
  """Exact match and edit similarity (0..100) of each example, for the bootstrap."""
  return {name: np.array([fn([t], [p])[name] for t, p in zip(targets, predictions)])
          for name, fn in (("exact_match", metrics.exact_match),
                           ("edit_similarity", metrics.edit_similarity))}


def bootstrap_lead(ours, theirs, seed=0, rounds=2000):
  """Mean of ours - theirs, with a paired bootstrap 95% interval."""
  diff = ours - theirs
  rng = np.random.default_rng(seed)
  means = diff[rng.integers(0, len(diff), (rounds, len(diff)))].mean(axis=1)
  return {"lead": float(diff.mean()), "ci95": [float(np.percentile(means, 2.5)),
                                               float(np.percentile(means, 97.5))]}


def copy_probe(windows, targets, completions):
  """Of the examples whose whole line (typed + target) stands verbatim on an earlier line of
  the model's window, how many, and the share of them each completer completes exactly."""
  probe = []
  for i, (window, target) in enumerate(zip(windows, targets)):
    *earlier, typed = window.split("\n")
    if target and typed + target in (line.rstrip("\r") for line in earlier):
      probe.append(i)
  return {"examples": len(probe),
          "exact": {name: (100.0 * sum(preds[i] == targets[i] for i in probe) / len(probe)
                           if probe else None) for name, preds in completions.items()}}


def induction_pairs(pieces, pairs=INDUCTION_PAIRS, arguments=INDUCTION_ARGUMENTS, seed=0):
  """[(copy, control)], each score mode's {"prefix", "completion"}: a call of random words,
  `name(a1, ..., a7)`, then a line that starts it again, `name(a1`, completed by the rest,
  `, a2, ..., a7)`. In `copy` the line before is that call, in `control` another call of
  random words. What the model gives the same completion in each tells how much it copies
  what it has just read (the work of induction heads, Olsson et al. 2022) on lines that no
  training file holds. The words: the vocabulary's whole-word pieces (`pieces`, a
  sentencepiece vocabulary's, "\u2581" marking a word's start) of 3 letters or more."""
  words = sorted({piece[1:].lower() for piece in pieces
                  if piece.startswith("\u2581") and piece[1:].isalpha() and len(piece) > 3})
  if len(words) < 2 * (arguments + 1):
    raise ValueError(f"the induction probe needs whole-word pieces: the vocabulary has "
                     f"{len(words)}")
  rng = random.Random(seed)

  def call():
    name, *args = (rng.choice(words) for _ in range(arguments + 1))
    return f"{name}({', '.join(args)})"
  probe = []
  for _ in range(pairs):
    copied, other = call(), call()
    start = copied[:copied.index(",")]
    completion = copied[len(start):]
    probe.append(({"prefix": f"{copied}\n{start}", "completion": completion},
                  {"prefix": f"{other}\n{start}", "completion": completion}))
  return probe


def induction_summary(scores, tokens):
  """{"copy", "control", "gain", "ci95"} of score mode's log P of the induction pairs, in
  their order (copy, control, copy, ...), and each pair's completion's tokens."""
  per_token = np.array(scores, dtype=np.float64).reshape(-1, 2) / np.array(tokens)[:, None]
  lead = bootstrap_lead(per_token[:, 0], per_token[:, 1])
  return {"copy": float(-per_token[:, 0].mean()), "control": float(-per_token[:, 1].mean()),
          "gain": lead["lead"], "ci95": lead["ci95"]}
