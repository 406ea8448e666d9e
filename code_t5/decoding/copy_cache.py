"""A copy cache for decoding: what followed the same tokens earlier in the code.

The dev model copies little from what it reads (BENCHMARKS.md, the copy probe), while copying
the best earlier line of the file (copy-line) is as good as its completions. A cache model
(Grave et al. 2017, "Improving neural language models with a continuous cache"; Hellendoorn &
Devanbu 2017 for code) adds that: at each step of the line (greedy's, and each beam's of the
line search), the tokens that followed the line's last `order` or more tokens (of the prefix
and what decoding has written) where they stood before in the prefix the model reads,
counted at the longest run that has any; the step's distribution is then

    (1 - weight) * p_model + weight * p_cache

where the cache has something, and p_model alone where it has not. Off unless
`code_t5.copy_cache.weight` is above 0 (models/causal.gin sets 0.5, by copy_cache.gin).

  cached_log_probs(...)    a step's log-probabilities with the cache mixed in (TF), of
    written_sequence(...)  the prefix, then what decoding has written of the line,
    next_token_counts(...) [rows, vocab]: what followed the longest matching run,
    mixed_log_probs(...)   the mixture above

Plain TF over [rows, ...]; `decoding` runs them on each slice of the mesh (mtf.slicewise over
the batch dimensions), as it runs token healing's; the bench's GPT peer on its rows
(scripts/gpt_peer.py).
"""

import gin
import tensorflow.compat.v1 as tf


@gin.configurable(module="code_t5")
def copy_cache(weight=0.0, order=2, max_order=8, file_tokens=0, after_cursor=False):
  """The cache's share of the step's distribution (0: no cache), and the shortest and longest
  context it matches, in tokens.

  file_tokens: what the cache reads besides the model's window, in eval and infer: up to this
    many tokens of the file before the window (the last, nearest the cursor), as a feature of
    its own ("cache", `preprocessors.file_cache`); 0: the window alone. The SavedModel reads
    the window alone (its request is one string); a session reads the whole file
    (`Session(copy_from="file")`).
  after_cursor: the file after the cursor's line too, as an editor holds it, in what
    file_tokens leaves (the task then differs: the text after the cursor is known).
  """
  if not 0.0 <= weight < 1.0:
    raise ValueError(f"code_t5.copy_cache.weight must be in [0, 1), got {weight}")
  if not 1 <= order <= max_order:
    raise ValueError(f"code_t5.copy_cache: need 1 <= order <= max_order, got {order}, "
                     f"{max_order}")
  if file_tokens < 0:
    raise ValueError(f"code_t5.copy_cache.file_tokens must be 0 or more, got {file_tokens}")
  if after_cursor and not file_tokens:
    raise ValueError("code_t5.copy_cache.after_cursor reads the file after the cursor's line "
                     "into the file's cache: set code_t5.copy_cache.file_tokens too")
  return dict(weight=weight, order=order, max_order=max_order, file_tokens=file_tokens,
              after_cursor=after_cursor)


def written_sequence(prefix, prefix_length, continuation, step):
  """[rows, length + steps]: each row's prefix (the first `prefix_length` ids of its row of
  `prefix` [rows, length]), then the first `step` ids (a scalar, or [rows]) of `continuation`
  [rows, steps], then zeros; and how many ids each row has written, [rows]. (Greedy decoding
  also joins the file's cache and the window with it: `search._joined`.)"""
  length, steps = tf.shape(prefix)[1], tf.shape(continuation)[1]
  positions = tf.range(length + steps)[None, :]
  in_prefix = positions < prefix_length[:, None]
  continued = tf.gather(continuation,
                        tf.clip_by_value(positions - prefix_length[:, None], 0, steps - 1),
                        batch_dims=1)
  sequence = tf.where_v2(in_prefix, tf.pad(prefix, [[0, 0], [0, steps]]), continued)
  written = prefix_length + step
  return sequence * tf.cast(positions < written[:, None], sequence.dtype), written


def next_token_counts(sequence, written, source_length, vocab_size, order, max_order):
  """For each row of `sequence` [rows, positions], of which the first `written` [rows] are
  written: how often each token among its first `source_length` [rows] (the prefix) followed
  the longest run of the row's last tokens (`order` to `max_order` of them) that stands
  before it too. [rows, vocab_size] float; a row where no run of `order` tokens does is all 0.

  Only the prefix's tokens are counted, not the line's own: counting what the line has written
  copies its own last tokens, and greedy then repeats them ("name, name, name, ..." in 139 of
  716 lines when it did)."""
  rows, positions = tf.shape(sequence)[0], tf.shape(sequence)[1]
  index = tf.range(positions)[None, :]
  last = written[:, None] - 1
  next_ids = tf.concat([sequence[:, 1:], tf.zeros_like(sequence[:, :1])], axis=1)
  # Where the next token is the prefix's.
  agree = index + 1 < source_length[:, None]
  longest = tf.zeros_like(agree)  # where the longest run with a match stands
  for k in range(max_order):
    mine = tf.gather(sequence, tf.maximum(last - k, 0), batch_dims=1)  # [rows, 1]
    theirs = tf.pad(sequence, [[0, 0], [k, 0]])[:, :positions]  # the token k before j
    # The k + 1 tokens ending at j are the k + 1 ending at `last`.
    agree &= (index - k >= 0) & (last - k >= 0) & tf.equal(theirs, mine)
    if k + 1 < order:
      continue
    # The longest run with a match wins: it replaces what a shorter one matched.
    longest = tf.where_v2(tf.reduce_any(agree, axis=1)[:, None], agree, longest)
  # One count of the tokens after the matches, at each decoding step (not one per run length).
  row_ids = tf.broadcast_to(tf.range(rows)[:, None], tf.shape(sequence))
  return tf.scatter_nd(tf.reshape(tf.stack([row_ids, next_ids], axis=-1), [-1, 2]),
                       tf.reshape(tf.cast(longest, tf.float32), [-1]),
                       tf.stack([rows, vocab_size]))


def mixed_log_probs(logits, counts, weight):
  """[rows, vocab]: log((1 - weight) * softmax(logits) + weight * counts / their sum) in the
  rows whose `counts` have any, the model's log-probabilities in the others."""
  log_model = tf.nn.log_softmax(logits, axis=-1)
  total = tf.reduce_sum(counts, axis=-1, keepdims=True)
  share = weight * tf.cast(total > 0, log_model.dtype)
  return tf.math.log((1.0 - share) * tf.exp(log_model)
                     + share * counts / tf.maximum(total, 1.0) + 1e-30)


def cached_log_probs(logits, prefix, prefix_length, continuation, step, options):
  """The step's log-probabilities with the cache mixed in: `logits` [rows, vocab] of the
  position after the prefix (`prefix` [rows, length], of which the first `prefix_length`
  [rows]) and the first `step` ids of `continuation` [rows, steps]; `options`, copy_cache()'s.
  Greedy decoding (`decoding.greedy_decode`) and the bench's peer both call it."""
  sequence, written = written_sequence(prefix, prefix_length, continuation, step)
  counts = next_token_counts(sequence, written, prefix_length, logits.shape[-1],
                             options["order"], options["max_order"])
  return mixed_log_probs(logits, counts, options["weight"])
