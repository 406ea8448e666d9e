"""code_t5/decoding/copy_cache.py: what followed the same tokens earlier, against a plain reference."""

import numpy as np
import pytest
import tensorflow as tf

from code_t5.decoding import copy_cache


def _reference_counts(row, source_length, order, max_order, vocab_size):
  """What followed, among the row's first `source_length` tokens, the longest run of its last
  tokens (order .. max_order long) that stands there too, counted by hand."""
  last = len(row) - 1
  for k in range(min(max_order, len(row)), order - 1, -1):
    run = row[last - k + 1:]
    nexts = [row[j + 1] for j in range(k - 1, source_length - 1) if row[j - k + 1:j + 1] == run]
    if nexts:
      return np.bincount(nexts, minlength=vocab_size).astype(np.float32)
  return np.zeros(vocab_size, np.float32)


def test_the_sequence_is_the_prefix_then_what_was_written():
  prefix = tf.constant([[5, 6, 7, 0], [3, 4, 0, 0]])
  continuation = tf.constant([[8, 9, 1], [2, 0, 0]])
  sequence, written = copy_cache.written_sequence(prefix, tf.constant([3, 2]), continuation,
                                                  tf.constant(2))
  assert sequence.numpy().tolist() == [[5, 6, 7, 8, 9, 0, 0], [3, 4, 2, 0, 0, 0, 0]]
  assert written.numpy().tolist() == [5, 4]
  # A count per row (the file's cache joined with the window: search._joined).
  sequence, written = copy_cache.written_sequence(prefix, tf.constant([3, 2]), continuation,
                                                  tf.constant([3, 1]))
  assert sequence.numpy().tolist() == [[5, 6, 7, 8, 9, 1, 0], [3, 4, 2, 0, 0, 0, 0]]
  assert written.numpy().tolist() == [6, 3]


@pytest.mark.parametrize("order,max_order", [(1, 1), (2, 8), (3, 4)])
def test_counts_are_what_followed_the_longest_earlier_run(order, max_order):
  rng = np.random.default_rng(order * 10 + max_order)
  vocab_size, rows, width = 4, 64, 24
  # Few tokens, so that runs repeat; rows of every length, zeros after what is written.
  lengths = rng.integers(1, width + 1, rows)
  lengths[rows // 4:] = rng.integers(12, width + 1, rows - rows // 4)  # long enough to repeat
  ids = rng.integers(1, vocab_size, (rows, width))
  ids[np.arange(width)[None, :] >= lengths[:, None]] = 0
  # The prefix: all that is written, or all but the last few tokens (what decoding wrote).
  sources = np.maximum(lengths - rng.integers(0, 4, rows), 1)
  counts = copy_cache.next_token_counts(
      tf.constant(ids, tf.int32), tf.constant(lengths, tf.int32),
      tf.constant(sources, tf.int32), vocab_size, order, max_order).numpy()
  expected = [_reference_counts(list(ids[r, :lengths[r]]), sources[r], order, max_order,
                                vocab_size) for r in range(rows)]
  np.testing.assert_array_equal(counts, np.stack(expected))
  assert (counts.sum(axis=1) > 0).sum() > rows / 4, "too few rows with a match to test"


def test_a_run_shorter_than_the_order_counts_nothing():
  # "7" stands earlier, but "9 7" does not: order 2 finds nothing, order 1 the 8 after 7.
  ids, four = tf.constant([[7, 8, 9, 7]]), tf.constant([4])
  assert copy_cache.next_token_counts(ids, four, four, 10, 2, 4).numpy().sum() == 0
  assert copy_cache.next_token_counts(ids, four, four, 10, 1, 4).numpy()[0, 8] == 1


def test_only_the_prefixs_tokens_are_counted():
  """What the line wrote is matched against, never counted: "4 5 4 5" written after the
  prefix "4 5 6" counts the 6 after the prefix's "4 5", not the 4 after the line's."""
  ids = tf.constant([[4, 5, 6, 4, 5, 4, 5]])
  counts = copy_cache.next_token_counts(ids, tf.constant([7]), tf.constant([3]), 10, 2, 8)
  assert counts.numpy()[0].tolist() == [0, 0, 0, 0, 0, 0, 1, 0, 0, 0]


def test_options_out_of_range_are_refused():
  with pytest.raises(ValueError, match="weight"):
    copy_cache.copy_cache(weight=1.0)
  with pytest.raises(ValueError, match="order"):
    copy_cache.copy_cache(weight=0.5, order=3, max_order=2)
