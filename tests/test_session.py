"""code_t5_session's decoding rules (code_t5_session/decoding.py) held to code_t5's TensorFlow
rules they are written again from, on a real sentencepiece model and every cursor of small
Python files (test_healing's), and on random token rows (test_copy_cache's kind). The served
model itself -- its logits against mesh-tf's, its completions against infer's and the
SavedModel's, typed one character at a time -- is held on the memorisation test's trained
causal model (tests/test_memorisation.py), which the session needs trained to say anything."""

import numpy as np
import pytest
import tensorflow as tf

# test_healing's sentencepiece model and its healing tables (fixtures, used by name).
from test_healing import PIECES, ROW, cursors, processor, rows, tables  # noqa: F401
from conftest import synthetic_module
from code_t5 import preprocessors
from code_t5.decoding import copy_cache, healing
from code_t5.vocabulary import EOS_ID, NEWLINE_ID
from code_t5_session import decoding


@pytest.fixture(scope="module")
def prefixes():
  return [p for seed in (3, 20) for p, _ in cursors(synthetic_module(seed).decode())]


def test_the_window_is_the_tasks(processor):
  """The longest suffix that starts a line, or the plain last tokens without one, at every
  length of the files' token lists."""
  ids = processor.encode(synthetic_module(5).decode())
  long_line = [7] * 40  # a line longer than the window: the plain last tokens
  for tokens in (ids, long_line, ids[:60] + long_line):
    for length in (1, 2, 7, 16, 33, 64):
      for stride in {1, 4, length}:  # where the window may start (code_t5.window_stride)
        for end in range(0, len(tokens), 5):
          expected = preprocessors.left_truncate_at_line(
              tf.constant(tokens[:end], tf.int32), length, NEWLINE_ID, stride).numpy().tolist()
          assert decoding.window(tokens[:end], length, NEWLINE_ID, stride) == expected


def healing_pieces(processor, tables):
  """The session's healing pieces, as Session makes them."""
  return decoding.HealingPieces(tables.texts, decoding.after_indentation(
      processor, tables.texts, (NEWLINE_ID, EOS_ID)))


def test_back_off_takes_what_healing_takes(processor, tables, prefixes):
  ids = rows(processor, prefixes, ROW)
  kept, typed = (t.numpy() for t in healing.back_off(tables, tf.constant(ids), PIECES, False))
  pieces = healing_pieces(processor, tables)
  taken = set()
  for i, row in enumerate(ids):
    got_kept, got_typed = pieces.back_off([int(t) for t in row if t], PIECES, NEWLINE_ID)
    assert got_kept == [int(t) for t in kept[i] if t], prefixes[i]
    assert got_typed == [int(t) for t in typed[i] if t], prefixes[i]
    taken.add(len(got_typed))
  assert taken == set(range(PIECES + 1))


def test_the_allowed_pieces_are_healings_mask(processor, tables, prefixes):
  """At each step of writing the taken-off text again (the file's own pieces for it), the
  pieces allowed are exactly those healing's mask leaves at 0."""
  ids = rows(processor, prefixes, ROW)
  _, typed = healing.back_off(tables, tf.constant(ids), PIECES, False)
  typed = typed.numpy()
  pieces = healing_pieces(processor, tables)
  written = np.array([list(row) + [0] * 4 for row in typed])  # the same pieces written again
  checked = indentation_ends = 0
  for step in range(PIECES + 1):
    mask = healing.allowed_pieces(tables, tf.constant(typed), tf.constant(written),
                                  tf.constant(step)).numpy()
    for i, row in enumerate(typed):
      text = "".join(tables.texts[t] for t in row if t)
      done = pieces.written_length([int(t) for t in written[i, :step]])
      allowed = pieces.allowed_pieces(text, done)
      if not len(allowed):  # any piece
        assert done >= len(text) and (mask[i] == 0).all()
        continue
      np.testing.assert_array_equal(allowed, np.flatnonzero(mask[i] == 0))
      checked += 1
      indentation_ends += int(done == len(text))  # a taken-off indentation written again
  assert checked > 100 and indentation_ends > 10


@pytest.mark.parametrize("order,max_order", [(1, 1), (2, 8), (3, 4)])
def test_the_copy_caches_counts_and_mixture_are_the_decodings(order, max_order):
  rng = np.random.default_rng(order * 10 + max_order)
  vocab_size, steps = 4, 6  # few tokens, so that runs repeat
  matched = 0
  for _ in range(80):
    length = int(rng.integers(1, 40))
    prefix = rng.integers(1, vocab_size, length)
    step = int(rng.integers(0, steps))
    continuation = np.zeros(steps, np.int64)
    continuation[:step] = rng.integers(1, vocab_size, step)
    logits = rng.normal(size=vocab_size).astype(np.float32) * 3
    options = dict(weight=0.5, order=order, max_order=max_order)
    expected = copy_cache.cached_log_probs(
        tf.constant(logits[None]), tf.constant(prefix[None], tf.int32),
        tf.constant([length]), tf.constant(continuation[None], tf.int32), tf.constant(step),
        options).numpy()[0]
    counts = decoding.next_token_counts(list(prefix) + list(continuation[:step]), length,
                                        vocab_size, order, max_order)
    got = decoding.mixed_log_probs(logits, counts, 0.5)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    matched += int(counts.sum() > 0)
  assert matched > 20, "too few rows with a match to test"


def _draft_by_search(sequence, length, stop_ids, min_match, max_match):
  """decoding.draft's rule by brute force: the longest run first, the latest of that length."""
  last = len(sequence) - 1
  for k in range(min(max_match, last), min_match - 1, -1):
    for end in range(last - 1, k - 2, -1):
      if sequence[end - k + 1:end + 1] == sequence[last - k + 1:]:
        guess = sequence[end + 1:end + 1 + length]
        cut = [i for i, t in enumerate(guess) if t in stop_ids]
        return guess[:cut[0]] if cut else guess
  return []


def test_a_draft_is_what_followed_the_longest_latest_earlier_run():
  """Prompt lookup: the longest earlier run of the last tokens wins over a later, shorter
  one; the latest of the longest; cut at the line end; nothing without a run long enough."""
  sequence = [1, 2, 3, 4, 10, 9, 3, 4, 11, 12, 1, 2, 3, 4]
  assert decoding.draft(sequence, 3, (), min_match=1) == [10, 9, 3]  # "1 2 3 4" at 0
  assert decoding.draft(sequence, 3, (), min_match=1, max_match=2) == [11, 12, 1]  # "3 4" at 6
  assert decoding.draft(sequence, 8, (12,), min_match=1, max_match=2) == [11]
  assert decoding.draft(sequence, 0, (), min_match=1) == []
  assert decoding.draft(sequence, 3, (), min_match=5) == []
  assert decoding.draft([5, 6, 7], 3, ()) == []
  rng = np.random.default_rng(7)
  guessed = 0
  for _ in range(300):
    row = rng.integers(1, 5, int(rng.integers(1, 30))).tolist()
    length, min_match, max_match = int(rng.integers(1, 9)), int(rng.integers(1, 4)), 6
    got = decoding.draft(row, length, (4,), min_match=min_match, max_match=max_match)
    assert got == _draft_by_search(row, length, (4,), min_match, max_match), row
    guessed += bool(got)
  assert guessed > 100, "too few rows with a draft to test"


@pytest.mark.parametrize("layers, heads, positions, d_kv, states", [
    (4, 4, 580, 64, 8),  # the dev model's export: 4.5 MB a state, the most kept
    (12, 12, 548, 64, 1),  # the base model's: 40 MB, one (its process held under 500 MB)
    (2, 2, 100, 16, 8)])
def test_a_model_keeps_the_windows_states_that_fit_the_budget(layers, heads, positions, d_kv,
                                                               states):
  from code_t5_session import model  # pylint: disable=g-import-not-at-top
  assert model.states_for(layers, heads, positions, d_kv) == states
  one_state = 2 * layers * heads * positions * d_kv * 4
  assert states == model.STATES or (states + 1) * one_state > model.STATES_BYTES
  assert states == 1 or states * one_state <= model.STATES_BYTES


@pytest.mark.parametrize("layers, heads, positions, chunk", [
    (4, 4, 580, 128),  # the dev model's export (models/causal_lm_dev.gin, 544 + 32 read)
    (12, 12, 548, 64),  # the base model's
    (48, 32, 4096, 1)])
def test_a_call_reads_fewer_tokens_where_their_attention_scores_would_pass_the_budget(
    layers, heads, positions, chunk):
  from code_t5_session import model  # pylint: disable=g-import-not-at-top
  assert model.read_chunk(layers, heads, positions) == chunk
  if chunk > 1:
    assert layers * heads * chunk * positions * 4 <= model.SCORES_BYTES


def test_ids_past_the_vocabulary_decode_as_seqios_decode_them(processor, tmp_path):
  """The model's embedding is padded past the vocabulary's pieces (to a multiple of 128), and
  an undertrained model can choose a padding row: infer and the SavedModel read it as UNK
  (seqio's SentencePieceVocabulary.decode), and so does a session, where sentencepiece alone
  raises (a CI run with TensorFlow's oneDNN ops on trained such a model)."""
  import seqio  # pylint: disable=g-import-not-at-top
  path = tmp_path / "spm.model"
  path.write_bytes(processor.serialized_model_proto())
  vocabulary = seqio.SentencePieceVocabulary(str(path))
  size = processor.get_piece_size()
  ids = processor.encode("def f(x):\n    return x") + [size, size + 7] + processor.encode(" y")
  with pytest.raises(IndexError):
    processor.decode(ids)
  assert decoding.decoded(processor, ids) == vocabulary.decode(ids)
  assert decoding.decoded(processor, ids[:3]) == processor.decode(ids[:3])
