"""The consensus line (code_t5/decoding/consensus.py): the line search's lines, copy-line's and
copy-next's as evidence, the candidate that agrees most with it chosen; the model's consensus,
the same of the model's lines alone. Infer's use of both, on a trained model:
tests/test_memorisation.py."""

import collections
import math
import os
import random

import gin
import pytest

from code_t5 import metrics
from code_t5.decoding import consensus
from code_t5.decoding import copying

# The file's earlier line "total = compute(a, b)" is what copy-line offers at "total = ".
PREFIX = "import os\ntotal = compute(a, b)\nprint(total)\ntotal = "
COPIED = "compute(a, b)"


def test_copy_lines_line_is_the_one_the_fixture_means():
  assert copying.copy_similar_line(PREFIX) == COPIED


def test_the_line_that_agrees_with_the_others_wins_over_the_likeliest_alone():
  # The best line is alone; the next two agree with copy-line's and with each other, and
  # copy-line's line is the nearest to both.
  lines = ["0", "compute(a, c)", "compute(a, d)"]
  scores = [-1.0, -1.5, -1.6]
  line, confidence = consensus.consensus_line(PREFIX, lines, scores)
  assert line == COPIED
  # Without copy-line's line, and with the model's probabilities as they are (temperature 1),
  # the same two still outweigh the best line alone.
  alone, _ = consensus.consensus_line(PREFIX, lines, scores, copy_weight=0.0, temperature=1.0)
  assert alone == "compute(a, c)"
  # Its confidence is its expected similarity under the evidence's weights.
  weights = [math.exp(s / 2.0) for s in scores]
  evidence = [(l, 0.7 * w / sum(weights)) for l, w in zip(lines, weights)] + [(COPIED, 0.3)]
  assert confidence == pytest.approx(sum(w * metrics.line_similarity(other, line)
                                         for other, w in evidence))


def test_a_line_far_likelier_than_the_others_stays_at_a_low_temperature():
  lines, scores = ["0", "compute(a, c)", "compute(a, d)"], [-0.01, -6.0, -6.5]
  assert consensus.consensus_line(PREFIX, lines, scores, copy_weight=0.0,
                                  temperature=1.0)[0] == "0"
  # Flattened enough, the two that agree outweigh it.
  assert consensus.consensus_line(PREFIX, lines, scores, copy_weight=0.0,
                                  temperature=100.0)[0] == "compute(a, c)"


def test_copy_weight_one_is_copy_line_and_zero_ignores_it():
  lines, scores = ["x + 1", "x + 2"], [-0.5, -2.0]
  assert consensus.consensus_line(PREFIX, lines, scores, copy_weight=1.0,
                                  next_weight=0.0) == (COPIED, 1.0)
  assert consensus.consensus_line(PREFIX, lines, scores, copy_weight=0.0)[0] == "x + 1"


def test_lines_the_search_did_not_return_are_no_evidence():
  # -inf: under MIN_SCORE or unfinished. With no line at all, copy-line's is the suggestion.
  assert consensus.consensus_line(PREFIX, ["zzz"], [-math.inf]) == (COPIED, 1.0)
  assert consensus.consensus_line(PREFIX, [], []) == (COPIED, 1.0)
  # No earlier line longer than the typed one: copy-line has nothing, the model's lines alone.
  assert consensus.consensus_line("x = ", ["1", "2"], [-0.1, -3.0]) == ("1", pytest.approx(
      1.0 / (1.0 + math.exp(-2.9 / 2.0))))
  assert consensus.consensus_line("x = ", [], []) == ("", 0.0)


def test_what_followed_the_line_before_the_cursor_is_evidence_too():
  # "if other is None:" stood before, followed by "return NotImplemented"; the model's lines
  # disagree with it, copy-line's is the nearest line of the same indentation.
  prefix = ("    def __eq__(self, other):\n        if other is None:\n"
            "            return NotImplemented\n        if other is self:\n"
            "            return True\n        return self.x == other.x\n\n"
            "    def __lt__(self, other):\n        if other is None:\n            ")
  assert copying.copy_similar_line(prefix) == "return True"
  assert copying.copy_next_line(prefix) == "return NotImplemented"
  lines, scores = ["return False", "raise TypeError"], [-0.5, -1.5]
  assert consensus.consensus_line(prefix, lines, scores)[0] == "return NotImplemented"
  assert consensus.consensus_line(prefix, lines, scores, next_weight=0.0)[0] == "return False"


def test_what_followed_a_like_place_is_evidence_and_gin_restores_the_same_line_rule():
  # The lines before the cursor stand nowhere earlier; the place most like them (the first
  # test's def and its first line) was followed by its assert.
  prefix = ("def test_one():\n    got = parse('1')\n    assert got == 1\n\n"
            "def test_two():\n    got = parse('22')\n    ")
  lines, scores = ["return got", "print(got)"], [-0.5, -1.5]
  assert consensus.consensus_line(prefix, lines, scores)[0] == "assert got == 1"
  # consensus.gin's comment: the two bindings that give copy-next's rule before #60.
  with gin.unlock_config():
    gin.parse_config(["code_t5.copy_next_line.context_lines = 1",
                      "code_t5.copy_next_line.min_similarity = 1.0"])
  try:
    assert copying.copy_next_line(prefix) == ""
    assert consensus.consensus_line(prefix, lines, scores)[0] == "return got"
  finally:
    gin.clear_config()


def _copy_line_as_defined(prefix):
  """copy-line's definition, every earlier line scored (the library's scan stops early)."""
  *earlier, typed = prefix.split("\n")
  shares = [(len(os.path.commonprefix([line, typed])), -i, line)
            for i, line in enumerate(line.rstrip("\r") for line in reversed(earlier))
            if len(line) > len(typed)]
  return max(shares)[2][len(typed):] if shares else ""


def _copy_next_as_defined(prefix, context_lines, min_similarity, max_lines, at_depth):
  """copy-next's definition, every place's similarity computed and every following line
  moved to the cursor's depth (the library's scan leaves out places whose bound cannot win,
  and moves a line only for a place that can)."""
  *earlier, typed = prefix.split("\n")
  earlier = [""] * (context_lines - 1) + [line.rstrip("\r") for line in earlier[-max_lines:]]
  stripped = [line.strip() for line in earlier]
  place = stripped[-context_lines:]
  if len(earlier) < context_lines + 1 or not any(place):
    return ""
  move = copying.lines._at_depth  # pylint: disable=protected-access
  scored = []
  for i in range(context_lines - 1, len(earlier) - 1):
    similarities = [metrics.line_similarity(ours, theirs) for ours, theirs in
                    zip(place, stripped[i - context_lines + 1:i + 1])]
    line = earlier[i + 1]
    if at_depth:
      line = move(line, earlier[-context_lines:], earlier[i - context_lines + 1:i + 1],
                  similarities, min_similarity)
    if line is not None and len(line) > len(typed) and line.startswith(typed):
      scored.append((sum(similarities) / context_lines, i, line[len(typed):]))
  best = max(scored, default=None)  # the nearest (highest i) of equal similarities
  return best[2] if best and best[0] >= min_similarity else ""


@pytest.mark.parametrize("context_lines, min_similarity, max_lines, at_depth",
                         [(2, 0.5, 4096, True), (1, 1.0, 4096, True), (3, 0.0, 4096, True),
                          (2, 0.75, 6, True), (2, 0.5, 4096, False)])
def test_the_copies_are_their_definitions_on_random_files(context_lines, min_similarity,
                                                           max_lines, at_depth):
  # Few distinct lines, so that starts, places and ties repeat; CRLF and blank lines too.
  rng = random.Random(context_lines * 100 + max_lines)
  words = ["x = 1", "x = 2", "y", "return x", "if x:", "", "  ", "\tpass", "ab", "a b"]
  found = collections.Counter()
  for _ in range(1500):
    text = "\n".join(rng.choice(["", "    "]) + rng.choice(words) + rng.choice(["", "c", "\r"])
                     for _ in range(rng.randrange(1, 30)))
    prefix = text[:rng.randrange(len(text) + 1)]
    copied = _copy_line_as_defined(prefix)
    assert copying.lines.copy_similar_line(prefix) == copied, prefix
    following = _copy_next_as_defined(prefix, context_lines, min_similarity, max_lines,
                                      at_depth)
    assert copying.lines.copy_next_line(prefix, context_lines, min_similarity, max_lines,
                                        at_depth) == following, prefix
    *earlier, typed = prefix.split("\n")
    found.update(copy_line=bool(copied), copy_next=bool(following),
                 moved=bool(following) and typed + following not in
                 [line.rstrip("\r") for line in earlier])
  assert found["copy_line"] > 500 and found["copy_next"] > 20, found
  # Lines come at the cursor's depth that stand nowhere at it earlier, and only so.
  assert (found["moved"] > 2) == at_depth, found


def test_the_models_consensus_chooses_among_the_models_lines_only():
  # Where copy-line's and copy-next's lines would decide (above), the model's consensus
  # suggests one of the model's own lines: the one the others agree with, at its temperature.
  lines, scores = ["0", "compute(a, c)", "compute(a, d)"], [-1.0, -1.5, -1.6]
  line, confidence = consensus.model_consensus_line(PREFIX, lines, scores)
  assert consensus.consensus_line(PREFIX, lines, scores)[0] == COPIED
  assert line == "compute(a, c)"
  weights = [math.exp(s / 4.0) for s in scores]
  assert confidence == pytest.approx(sum(w / sum(weights) * metrics.line_similarity(other, line)
                                         for other, w in zip(lines, weights)))
  # Copy-line's line is one edit from each of three lines two edits apart: were it a
  # candidate, it would agree with them most. It is not suggested.
  spread = ["compute(a, c)", "compute(x, b)", "kompute(a, b)"]
  assert consensus.model_consensus_line(PREFIX, spread, [-1.0] * 3)[0] in spread
  # With no line of the model's there is nothing to suggest, whatever the file holds.
  assert consensus.model_consensus_line(PREFIX, ["zzz"], [-math.inf]) == ("", 0.0)


@pytest.mark.parametrize("kwargs,message", [({"copy_weight": 1.5}, "copy_weight"),
                                            ({"next_weight": -0.1}, "next_weight"),
                                            ({"copy_weight": 0.6, "next_weight": 0.5},
                                             "at most 1"),
                                            ({"temperature": 0.0}, "temperature")])
def test_settings_out_of_range_are_refused(kwargs, message):
  with pytest.raises(ValueError, match=message):
    consensus.consensus_line(PREFIX, ["1"], [-1.0], **kwargs)


def test_lines_and_scores_must_pair():
  with pytest.raises(ValueError, match="2 completions but 1 scores"):
    consensus.consensus_line(PREFIX, ["1", "2"], [-1.0])


def _agreement_order(lines, scores, temperature=consensus.MODEL_CONSENSUS_TEMPERATURE):
  """The line search's ranking, in Python: each line's expected line_similarity to the lines
  found (weights softmax(score / temperature)), highest first, the search's order on a tie,
  the lines not found last."""
  from code_t5_session import lines as lines_lib  # pylint: disable=g-import-not-at-top
  found = [i for i, s in enumerate(scores) if not math.isinf(s)]
  best = max(scores[i] for i in found)
  weights = {i: math.exp((scores[i] - best) / temperature) for i in found}
  total = sum(weights.values())
  cut = lambda line: line[:lines_lib.MAX_LINE_CHARS]
  agreement = {i: sum(w / total * lines_lib.line_similarity(cut(lines[j]), cut(lines[i]))
                      for j, w in weights.items()) for i in found}
  return sorted(found, key=lambda i: (-agreement[i], i)) + [i for i in range(len(lines))
                                                            if i not in weights]


def test_the_line_search_ranks_its_lines_as_the_models_consensus_chooses():
  """search.ranked_by_agreement (TF, in the graph of eval, infer and an export) orders lines
  as the Python rule does, and its first is model_consensus_line's, on lines with trailing
  space, non-ASCII characters, empty lines, lines over MAX_LINE_CHARS and slots not found."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import search  # pylint: disable=g-import-not-at-top
  rng = random.Random(7)
  words = ["x", "self", "é", "→", "(a, b)", " ", "\t", "  ", "items", "😀", "\u00a0"]
  batch, k = 60, 8
  rows = []
  for _ in range(batch):
    stem = "".join(rng.choice(words) for _ in range(rng.randint(0, 5)))
    lines = list(dict.fromkeys(stem + "".join(rng.choice(words) for _ in range(rng.randint(0, 6)))
                               for _ in range(k * 3)))[:k]
    if rng.random() < 0.2:
      lines[0] = lines[0] + "y" * 230  # past MAX_LINE_CHARS
    lines += [""] * (k - len(lines))
    scores = sorted((rng.uniform(-12, 0) for _ in range(k)), reverse=True)
    scores = [s if i < len(set(lines)) - (lines.count("") > 1) and rng.random() > 0.15 or i == 0
              else -math.inf for i, s in enumerate(scores)]
    rows.append((lines, scores))
  ranked = search.ranked_by_agreement(
      {"top_k_outputs": tf.constant([[line.encode("utf-8") for line in lines]
                                     for lines, _ in rows]),
       "top_k_scores": tf.constant([scores for _, scores in rows], dtype=tf.float32)}, top_k=3)
  got_lines = [[line.decode("utf-8") for line in row] for row in ranked["top_k_outputs"].numpy()]
  got_scores = ranked["top_k_scores"].numpy().tolist()
  assert [line.decode("utf-8") for line in ranked["outputs"].numpy()] == [r[0] for r in got_lines]
  moved = 0
  for (lines, scores), got, got_score in zip(rows, got_lines, got_scores):
    order = _agreement_order(lines, scores)[:3]
    assert got == [lines[i] for i in order], (lines, scores)
    assert got_score == pytest.approx([scores[i] for i in order], abs=1e-5)
    assert got[0] == consensus.model_consensus_line("", lines, scores)[0]
    moved += order != sorted(order)
  assert moved > batch // 4  # the ranking is not the probability order the rows came in

  # Greedy's line first (rank = 'greedy_first'): kept first where it is found, though it agrees
  # with no other line; the others as the rule orders them. Not found, it goes last.
  lines = ["zzz qq", "self.items.append(x)", "self.items.append(y)", "self.items", "self"]
  for first_score in (-9.0, -math.inf):
    scores = [first_score, -1.0, -2.0, -0.5, -3.0]
    kept = search.ranked_by_agreement(
        {"top_k_outputs": tf.constant([[line.encode("utf-8") for line in lines]]),
         "top_k_scores": tf.constant([scores], dtype=tf.float32)}, top_k=3, first_kept=True)
    order = _agreement_order(lines, scores)
    if first_score == -9.0:
      assert order[0] != 0
      order = [0] + [i for i in order if i]
    assert [line.decode("utf-8") for line in kept["top_k_outputs"].numpy()[0]] == [
        lines[i] for i in order[:3]]
    assert kept["outputs"].numpy()[0].decode("utf-8") == lines[order[0]]
