"""Preprocessors for code: small pure functions over tf.data, all in the TF graph.

Positions are counted in UTF-8 characters (`unit="UTF8_CHAR"`), never bytes, so a cursor
never falls inside a multi-byte character and inputs + targets is always a piece of the file.
"""

import functools

import gin
import numpy as np
import seqio
import t5.data.preprocessors as t5_preprocessors
import tensorflow.compat.v2 as tf

from code_t5 import vocabulary
from code_t5.decoding import copy_cache
from code_t5.vocabulary import NEWLINE
from code_t5_session import retrieval


def _line_table(content):
  """Start, length (without "\\r"), and indentation of every line of `content`, in characters."""
  lines = tf.strings.split(content, NEWLINE)
  length = tf.strings.length(lines, unit="UTF8_CHAR")
  starts = tf.concat([[0], tf.cumsum(length + 1)[:-1]], axis=0)
  # CRLF files: the "\r" belongs to the line break, not to the code a user would type.
  ends_cr = tf.strings.regex_full_match(lines, "(?s).*\r")
  length -= tf.cast(ends_cr, tf.int32)
  unindented = tf.strings.regex_replace(lines, r"^[ \t]+", "")
  indent = (tf.strings.length(lines, unit="UTF8_CHAR")
            - tf.strings.length(unindented, unit="UTF8_CHAR"))
  return starts, length, tf.minimum(indent, length)


def full_line_cursors(content, seed, examples_per_file, start_of_line_rate=0.5):
  """Picks cursor positions (in characters) and the length of the rest of their line.

  Up to `examples_per_file` distinct non-blank lines are drawn; on each the cursor is either
  at the start of the code (after the indentation) or, with probability
  1 - `start_of_line_rate`, strictly inside it. `seed` is a [2] int tensor: the same seed
  always gives the same cursors.
  """
  starts, length, indent = _line_table(content)
  candidates = tf.where(length > indent)[:, 0]
  order = tf.argsort(tf.random.stateless_uniform(tf.shape(candidates), seed))
  chosen = tf.gather(candidates, order[:examples_per_file])
  start, end, code_start = (tf.gather(t, chosen) for t in (starts, length, indent))
  num = tf.shape(chosen)[0]
  draws = tf.random.stateless_uniform([2, num], seed + 1)
  # A mid-line cursor needs at least one character on each side of it within the code.
  inner = end - code_start - 1
  mid = code_start + 1 + tf.cast(
      draws[1] * tf.cast(tf.maximum(inner, 0), tf.float32), tf.int32)
  column = tf.where((draws[0] < start_of_line_rate) | (inner < 1), code_start,
                    tf.minimum(mid, end - 1))
  return start + column, end - column


FRESH_CURSORS = "fresh_cursors"
# The pass draws' own seed: with it, tf.data gives every run the same sequence of passes, each
# pass its own draws; the read's seed (the mark) then tells runs of other seeds apart.
_PASS_DRAWS_SEED = 30


# The step the training that reads next starts from (`training_reads_from`). Without it every
# launch on a model dir -- each segment of train_and_evaluate, each resume -- would meet the
# same sequence of passes, the first pass's cursors again and again.
_training_start_step = 0


def training_reads_from(step: int) -> None:
  """The training about to read starts at `step` (its checkpoint's): its passes' draws are
  its own, and the same whenever a training starts there again. The one input of these
  functions that the data pipeline cannot see: under the entry points, Estimator.train sets
  it before it reads (upstream/estimator.py); elsewhere it stays 0, the first pass's."""
  global _training_start_step
  _training_start_step = int(step or 0)


def training_start_step() -> int:
  """The step `training_reads_from` last set (0 until it is set)."""
  return _training_start_step


def mark_fresh_cursors(dataset, fresh, seed=None):
  """Tells `full_line_examples` and `lm_windows` to draw new cursors (cut points) in each file
  on every pass (`fresh`, a training read, whose shuffle `seed` and start step,
  `training_reads_from`, also seed the draws) or to keep each file's fixed ones. A mark, not
  a draw: seqio caches a small source in memory before it repeats it, so a draw made here
  would be made once. The mark is 0 for fixed cursors, else a seed."""
  mixed = int(seed or 0) + 7_919 * training_start_step()
  mark = (mixed % (2**31 - 2)) + 1 if fresh else 0
  return dataset.map(lambda example: {**example, FRESH_CURSORS: tf.constant(mark, tf.int32)})


def _pass_draws():
  """Non-negative int32 draws, made again on every pass over the dataset (seqio repeats after
  the preprocessors that precede its cache placeholder, and after those that follow it), the
  same on every run: zip them with the examples."""
  return tf.data.Dataset.random(seed=_PASS_DRAWS_SEED, rerandomize_each_iteration=True).map(
      lambda draw: tf.cast(draw % (2**31 - 1), tf.int32))


def _fresh_draw(example, draw):
  """The draw that moves this file's cursors on this pass: 0 unless the read is marked fresh,
  else mixed with the read's seed."""
  mark = tf.cast(example.get(FRESH_CURSORS, tf.constant(0, tf.int32)), tf.int64)
  mixed = tf.cast((tf.cast(draw, tf.int64) + mark * 1_000_003) % (2**31 - 1), tf.int32)
  return tf.where(mark > 0, mixed, 0)


def full_line_examples(dataset, examples_per_file=8, start_of_line_rate=0.5, seed=0,
                       content_key="content", id_key="sha", after_cursor=False):
  """Each file -> examples {inputs: code before the cursor, targets: rest of the line}, and
  {context: the repository's lines for it} for a file with neighbours
  (`repository_neighbours`: `repository_contexts` makes them); with `after_cursor`, {after:
  the file after the cursor's line} (the copy cache's: `code_t5.copy_cache.after_cursor`).

  Cursors are a pure function of the file's id and `seed`, so every split -- validation and
  test in particular -- gives the same examples on every run; a file marked FRESH_CURSORS
  (`mark_fresh_cursors`) gets new ones on every pass instead. The inputs are the whole file
  before the cursor; `truncate_inputs_at_line` cuts them to length after tokenization.
  """
  def make_examples(example, draw):
    content = example[content_key]
    file_seed = tf.stack([
        tf.cast(tf.strings.to_hash_bucket_fast(example[id_key], 2**31 - 1), tf.int32),
        tf.constant(seed, tf.int32) + _fresh_draw(example, draw)])
    cursor, rest = full_line_cursors(content, file_seed, examples_per_file,
                                     start_of_line_rate)
    contents = tf.fill(tf.shape(cursor), content)
    examples = {
        "inputs": tf.strings.substr(contents, tf.zeros_like(cursor), cursor,
                                    unit="UTF8_CHAR"),
        "targets": tf.strings.substr(contents, cursor, rest, unit="UTF8_CHAR"),
    }
    if NEIGHBOUR_CONTENTS in example:
      examples[CONTEXT] = repository_contexts(examples["inputs"], example)
    if after_cursor:  # from the next line on (a last line without a newline: nothing)
      examples[AFTER] = tf.strings.regex_replace(
          tf.strings.substr(contents, cursor + rest, tf.strings.length(contents, "UTF8_CHAR"),
                            unit="UTF8_CHAR"), r"^[^\n]*\n?", "")
    return examples
  return tf.data.Dataset.zip((dataset, _pass_draws())).map(
      make_examples, num_parallel_calls=tf.data.AUTOTUNE).unbatch()


# Repository context (#60; gin_configs/repository_context.gin turns it on): each full-line
# example reads, before its file's own text, the lines of its repository's other files that
# best match the code before its cursor (code_t5_session/retrieval.py, the one rule).
NEIGHBOUR_PATHS, NEIGHBOUR_CONTENTS = "neighbour_paths", "neighbour_contents"
CONTEXT = "context"


@gin.configurable(module="code_t5")
def repository_context(enabled=False, max_tokens=64, max_neighbours=16, group_files=4096,
                       query_lines=10, window_lines=10, min_similarity=0.1,
                       file_chars=100_000):
  """Whether full-line examples read their repository's lines, and how many.

  max_tokens: the context's share of the inputs (at most half of them); the file's own text
    has the rest.
  max_neighbours: the other files of the repository searched, at most.
  group_files: files read together, among which a file's neighbours are found (the read's
    order kept, its memory bounded by a group): a split read in TFDS' order meets most of a
    small repository's files in a group of 4,096 files; of a corpus of many thousands of
    repositories, few.
  query_lines, window_lines, min_similarity, file_chars: retrieval.RepositoryIndex's.
  """
  return dict(enabled=enabled, max_tokens=max_tokens, max_neighbours=max_neighbours,
              group_files=group_files, query_lines=query_lines, window_lines=window_lines,
              min_similarity=min_similarity, file_chars=file_chars)


def check_no_repository_context(reader: str) -> None:
  """A ValueError when repository_context.gin is on for `reader`, which reads no context."""
  if repository_context()["enabled"]:
    raise ValueError(f"{reader} reads no repository context: leave "
                     "code_t5.repository_context.enabled = False, as score.gin and export.gin "
                     "set it (eval, infer and code_t5_session read the context)")


def repository_neighbours(dataset, group_files=4096, max_neighbours=16):
  """Each file, with the paths and contents of up to `max_neighbours` other files of its
  repository (NEIGHBOUR_PATHS, NEIGHBOUR_CONTENTS) among the `group_files` consecutive files
  of the read it is read with; in the read's order. Only files of the read -- of its split --
  are neighbours."""
  def with_neighbours(group):
    repository = group["repository"]
    size = tf.size(repository)
    same = tf.logical_and(tf.equal(repository[:, None], repository[None, :]),
                          tf.logical_not(tf.eye(size, dtype=tf.bool)))

    def one(i):
      found = tf.where(same[i])[:max_neighbours, 0]
      return {**{key: value[i] for key, value in group.items()},
              NEIGHBOUR_PATHS: tf.gather(group["path"], found),
              NEIGHBOUR_CONTENTS: tf.gather(group["content"], found)}
    return tf.data.Dataset.range(tf.cast(size, tf.int64)).map(one)
  return dataset.batch(group_files).flat_map(with_neighbours)


def repository_index(neighbours, language):
  """`retrieval.index_of` `neighbours`, (path, content) pairs, by the gin options
  (`repository_context`)."""
  return retrieval.index_of(neighbours, language, repository_context())


def context_of(index, prefix):
  """The repository context of the code before a cursor, `prefix`, from `index`
  (`repository_index`), by the gin options: what the Task and infer read
  (`retrieval.context_of`, as a Session does)."""
  return retrieval.context_of(index, prefix, repository_context())


def repository_contexts(prefixes, example):
  """The context (`context_of`) of each of `prefixes`, cursors of `example`'s file, from its
  neighbours; "" where none matches."""
  def retrieve(prefixes, paths, contents, language):
    index = repository_index(
        zip((p.decode("utf-8") for p in paths), (c.decode("utf-8") for c in contents)),
        language.decode("utf-8"))
    return np.array([context_of(index, prefix.decode("utf-8")).encode("utf-8")
                     for prefix in prefixes], dtype=object)
  contexts = tf.numpy_function(
      retrieve, [prefixes, example[NEIGHBOUR_PATHS], example[NEIGHBOUR_CONTENTS],
                 example["language"]], tf.string, stateful=False)
  return tf.ensure_shape(contexts, prefixes.shape)


def context_tokens(input_length):
  """The most tokens of repository context an input of `input_length` holds."""
  return retrieval.token_budget(repository_context()["max_tokens"], input_length)


def left_truncate_at_line(tokens, max_length, newline_id, stride=1):
  """The longest suffix of `tokens` of at most `max_length` that starts a line.

  Falls back to the plain last `max_length` tokens when that window holds no line start
  (a single line longer than the window). With `stride`, the cut is made only at a multiple
  of `stride` tokens from the start (then at the first line start after it): the window then
  holds `max_length - stride` to `max_length` tokens, and keeps its start while the text
  after it grows by up to `stride` tokens (`window_stride`).
  """
  excess = tf.maximum(tf.size(tokens) - max_length, 0)
  excess = tf.minimum((excess + stride - 1) // stride * stride, tf.size(tokens))
  is_line_start = tf.concat([[True], tf.equal(tokens[:-1], newline_id)], axis=0)
  first_in_window = tf.where(is_line_start[excess:])[:1, 0]
  offset = tf.cast(tf.reduce_sum(first_in_window), tf.int32)  # 0 when there is none
  return tokens[excess + offset:]


@gin.configurable(module="code_t5")
def window_stride(tokens=1):
  """How far apart, in tokens from the start of the file, a decoding's window may start
  (`left_truncate_at_line`'s `stride`; decoding_lengths.gin binds it to WINDOW_STRIDE).

  Why: with a stride of 1 the window of a long file moves to a later line about once per line
  typed, and a served session (code_t5_session) must then read the whole window again, since
  the keys and values of every token after the window's start change with it. With 128, it
  moves once per 128 tokens typed, and the dev model's window (544 tokens,
  models/causal_lm_dev.gin) holds 416 to 544 (docs/BENCHMARK_LOG.md, "A window that moves once per
  128 tokens"). Training keeps 1 (only a decoding's files include decoding_lengths.gin): a
  stride would only shorten its full-line examples.
  """
  return tokens


@gin.configurable(module="code_t5")
def inputs_delimiter(eos=True):
  """Whether an EOS ends the code the model reads, before what it is to predict.

  True for the prefix LM (models/shared-prefix_lm.gin): mesh-tf's delimited_lm finds the
  inputs, for full attention and for a loss on the targets only, by counting EOS. False for a
  causal LM (models/causal.gin), which reads a file as plain text: the rest of a line
  follows the code before the cursor as it does in the file, and every position it trains on
  is one it meets when it completes. Decided once, here; every reader of a prefix asks.
  """
  return eos


def inputs_window(prefix_ids, input_length, newline_id):
  """What the model reads of a prefix: its ids cut to leave room for the delimiter.

  The one place the rule lives: the inputs hold `input_length` less the EOS that ends them
  (`inputs_delimiter`), and are cut on the left at a line start (`left_truncate_at_line`).
  The Tasks (`truncate_inputs_at_line`, `lm_windows`), infer and score (`prefix_inputs`), the
  export's serving vocabulary and the baselines' `model_window` all call it, so training and
  serving read the same window.
  """
  return left_truncate_at_line(prefix_ids, input_length - int(inputs_delimiter()), newline_id,
                               window_stride())


def delimited(window):
  """`window` and the EOS after it, when the model reads one (`inputs_delimiter`)."""
  if not inputs_delimiter():
    return window
  return tf.concat([window, tf.constant([vocabulary.EOS_ID], window.dtype)], axis=0)


def padded(ids, length):
  """`ids`, then zeros to `length`: a static shape, for the Estimator's input_fn."""
  return tf.reshape(tf.pad(ids, [[0, length - tf.size(ids)]]), [length])


def with_eos_padded(ids, length):
  """`ids` + EOS, then zeros to `length`."""
  return padded(tf.concat([ids, [vocabulary.EOS_ID]], axis=0), length)


def prefix_inputs(prefix_ids, input_length, newline_id):
  """The model's "inputs" for a prefix outside the Task (infer, score): window, delimiter,
  zeros."""
  return padded(model_inputs(prefix_ids, input_length, newline_id)["inputs"], input_length)


# The copy cache's source besides the model's window (#60; code_t5.copy_cache.file_tokens): the
# file's ids before the window, and with after_cursor those after the cursor's line, as a
# feature of its own. Eval and infer give it to greedy decoding (search._CopyCache); mesh-tf
# imports it at sequence_length["cache"] (upstream/model_fn.py). Not an output feature: a
# Mixture drops it, so training never reads it.
CACHE, AFTER = "cache", "after"


def file_cache(before_ids, after_ids, length):
  """The cache feature, `length` ids: the file's last ids before the model's window
  (`before_ids`: nearest the cursor first kept), and before them, in the room they leave, the
  first ids after the cursor's line (`after_ids`, or None), the order a session reads them in
  (Session.complete: the cache's runs must end where the window starts); then zeros."""
  before = before_ids[tf.maximum(tf.size(before_ids) - length, 0):]
  if after_ids is not None:
    before = tf.concat([after_ids[:length - tf.size(before)], before], axis=0)
  return padded(before, length)


def model_inputs(prefix_ids, input_length, newline_id, context_ids=None, cache_tokens=0,
                 after_ids=None):
  """{"inputs": what the model reads of a prefix (its ids), delimited, not padded}; with
  `cache_tokens` (`code_t5.copy_cache.file_tokens`), {"cache": the prefix's ids before what the
  model reads, and `after_ids` where given (`file_cache`)}.

  The inputs are the prefix's window (`inputs_window`); with `context_ids` (a repository
  context), the context's last lines that fit `context_tokens`, then the window in what is
  left. The context's ids are encoded apart from the prefix's: it ends a line, so their
  pieces meet at a line break as they would in one text. The full-line Task
  (`truncate_inputs_at_line`) and infer (`infer.prefixes_dataset`) both call this."""
  if context_ids is None:
    context = tf.zeros([0], prefix_ids.dtype)
  else:
    context = left_truncate_at_line(context_ids, context_tokens(input_length), newline_id)
  window = inputs_window(prefix_ids, input_length - tf.size(context), newline_id)
  features = {"inputs": delimited(tf.concat([context, window], axis=0))}
  if cache_tokens:
    features[CACHE] = file_cache(prefix_ids[:tf.size(prefix_ids) - tf.size(window)],
                                 after_ids, cache_tokens)
  return features


def _check_inputs_feature(output_features):
  if output_features["inputs"].add_eos:
    raise ValueError("the inputs' EOS is the delimiter's (code_t5.inputs_delimiter): their "
                     "feature must have add_eos=False")


def truncate_inputs_at_line(dataset, sequence_length, output_features):
  """Cuts "inputs" to what the model reads (`model_inputs`: the window, after the repository
  context of an example that has one, and the delimiter; with `code_t5.copy_cache.file_tokens`
  the ids cut off become the "cache"). Must follow tokenization;
  `append_eos_after_trim`, next, ends the targets."""
  _check_inputs_feature(output_features)
  line_break = vocabulary.newline_id(output_features["inputs"].vocabulary)
  input_length = sequence_length["inputs"]
  vocab = output_features["inputs"].vocabulary
  cache_tokens = copy_cache.copy_cache()["file_tokens"]

  @seqio.map_over_dataset
  def truncate(example):
    example = dict(example)
    context = vocab.encode_tf(example.pop(CONTEXT)) if CONTEXT in example else None
    after = vocab.encode_tf(example.pop(AFTER)) if AFTER in example else None
    example.update(model_inputs(example["inputs"], input_length, line_break, context,
                                cache_tokens, after))
    return example
  return truncate(dataset)


def prefix_lm(dataset, sequence_length, output_features):
  """t5's prefix_lm (chunks of the inputs' length, each split at random into a prefix and its
  continuation) with room left for the delimiter, which it then adds. Must follow
  tokenization; `append_eos_after_trim`, next, ends the targets."""
  _check_inputs_feature(output_features)
  room = {**sequence_length, "inputs": sequence_length["inputs"] - int(inputs_delimiter())}
  dataset = t5_preprocessors.prefix_lm(dataset, room, output_features)
  return dataset.map(lambda example: {**example, "inputs": delimited(example["inputs"])},
                     num_parallel_calls=tf.data.AUTOTUNE)


def lm_windows(dataset, sequence_length, output_features):
  """Each tokenized file (its "targets", EOS at its end) -> its tokens cut into consecutive
  windows of the row's length less one, each split into {inputs: its start, targets: the
  rest}: a causal LM over whole files, every position trained. Must follow tokenization and
  EOS.

  Less one: t5's train input (mesh_train_dataset_fn) packs rows with mesh-tf's
  `ensure_eos` on the targets, which turns the last token of a row that the targets fill into
  EOS. A window of the row's full length would train an EOS at the end of every row, where
  the file goes on; one position short, the row ends in padding and every EOS is a file's.

  A training read (marked FRESH_CURSORS) shifts the cut points by a draw made again on every
  pass, so each pass meets new windows; every other read cuts at 0. A window shorter than the
  row (a file's first or last) keeps at least one token on each side. Only for a causal model:
  the prefix LM's delimited_lm counts EOS to find inputs, and these windows hold none between
  an example's inputs and targets.
  """
  _check_inputs_feature(output_features)
  if inputs_delimiter():
    raise ValueError("the causal-LM Task (flcc_<lang>_lm) trains a causal model: compose "
                     "models/causal.gin (code_t5.inputs_delimiter.eos = False)")
  inputs_length = sequence_length["inputs"]
  targets_length = sequence_length["targets"] - 1  # see above: the row's last stays padding
  window = inputs_length + targets_length

  def windows(example, draw):
    ids = example["targets"]
    size = tf.size(ids)
    grid = tf.range(-(_fresh_draw(example, draw) % window), size, window)
    starts, ends = tf.maximum(grid, 0), tf.minimum(grid + window, size)
    keep = ends - starts >= 2
    starts, ends = tf.boolean_mask(starts, keep), tf.boolean_mask(ends, keep)
    cuts = tf.clip_by_value(ends - targets_length, starts + 1, starts + inputs_length)
    pieces = tf.data.Dataset.from_tensor_slices((starts, cuts, ends))
    return pieces.map(lambda start, cut, end: {"inputs": ids[start:cut],
                                               "targets": ids[cut:end]})
  return tf.data.Dataset.zip((dataset, _pass_draws())).flat_map(windows)


def cut_at_newline(text, example=None, is_target=False):
  """Postprocessor: a completion ends at the first line break."""
  del example, is_target
  return text.split(NEWLINE, 1)[0].rstrip("\r")


# {"targets": the file, and the read's FRESH_CURSORS mark}: FlccSource marks every read.
content_to_targets = functools.partial(
    seqio.preprocessors.rekey, key_map={"targets": "content", FRESH_CURSORS: FRESH_CURSORS})
