"""Decoding the rest of the line from the code prefix: beam search, and greedy for a causal model.

mesh-tf's `Unitransformer.beam_search` raises NotImplementedError when `input_full_attention`
is on (our prefix LM), because it only decodes from position 0. Here the prefix is read once,
exactly as `Unitransformer.sample_autoregressive` reads it for greedy decoding
(`_PrefixReader`), and each step then writes sequence position `len(prefix) + i`, which
differs per example: `mtf.beam_search` grows the line search's hypotheses so, and
`greedy_decode` (the causal model's, models/causal.gin) its argmax line.

Use them through `utils.run.predict_fn` (gin_configs/beam_search.gin; models/causal.gin); they
serve the infer, eval and export_infer modes alike. Both heal the prefix's last pieces first
when `code_t5.token_healing.pieces` says so (`code_t5/decoding/healing.py`).

Both read the inputs through `served_inputs`: mesh-tf's export appends an EOS to every request
(`dataset.encode_all_features`), which is the prefix LM's delimiter but no part of what a
causal model reads (`code_t5.inputs_delimiter`).
"""

import math

import gin
import mesh_tensorflow as mtf
from mesh_tensorflow.transformer import transformer
import tensorflow.compat.v1 as tf

from code_t5 import gin_config
from code_t5 import preprocessors
from code_t5.decoding import consensus
from code_t5.decoding import copy_cache
from code_t5.decoding import healing
from code_t5.vocabulary import EOS_ID, NEWLINE_ID
from code_t5_session import lines as lines_lib


def served_inputs(inputs):
  """`inputs` as the model reads them: without EOS when it reads no delimiter (an EOS is never
  a token of the text itself, so the only one there is the one mesh-tf's export appends)."""
  if preprocessors.inputs_delimiter():
    return inputs
  return inputs * mtf.to_int32(mtf.not_equal(inputs, EOS_ID))


@gin.configurable(module="code_t5")
def token_healing(pieces=0):
  """How many of a prefix's last pieces decoding takes off and writes again, each step held to
  the text taken off (`code_t5/decoding/healing.py`): greedy decoding and the line search ask here. 0: none."""
  return pieces


def _healing_tables(vocab_dim):
  """The healing tables of the run's vocabulary (mesh-tf's get_vocabulary, bound by
  dataset.gin, or export.gin's serving Task)."""
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  from t5.models import mesh_transformer  # pylint: disable=g-import-not-at-top
  vocab = mtf_utils.targets_vocabulary(mesh_transformer.get_vocabulary())
  return healing.tables_of_model(vocab.sp_model, vocab_dim.size)


class _Healing:
  """Token healing on mtf tensors: the prefix's last pieces taken off (`typed`, [batch dims,
  heal]), the mask of the pieces that agree with them at each step, and the continuation with
  them cut off again. Each a healing.py function on every slice of the batch dimensions."""

  def __init__(self, model, inputs, pieces):
    self.tables = _healing_tables(model.output_vocab_dim)
    self.batch_dims = inputs.shape.dims[:-1]
    self.vocab_dim = model.output_vocab_dim
    typed_shape = mtf.Shape(self.batch_dims + [mtf.Dimension("heal", pieces)])
    self.inputs, self.typed = mtf.slicewise(
        lambda ids: healing.back_off(self.tables, ids, pieces, preprocessors.inputs_delimiter()),
        [inputs], output_shape=[inputs.shape, typed_shape], output_dtype=[tf.int32, tf.int32],
        splittable_dims=self.batch_dims)

  def broadcast(self, batch_dims):
    """The taken-off pieces for `batch_dims` (the beams of each prefix)."""
    self.typed = _beams_of(self.typed, batch_dims)
    self.batch_dims = batch_dims

  def mask(self, continuation, step):
    """[batch dims, vocab]: 0 where a piece may be written at `step`, -1e9 elsewhere.

    Each slice computes the whole vocabulary, in a dimension no layout splits; renamed to the
    model's, mtf lays it out as the logits are (split over `model` where the mesh has one)."""
    whole_vocab = mtf.Dimension("healing_vocab", self.vocab_dim.size)
    mask = mtf.slicewise(
        lambda typed, ids, i: healing.allowed_pieces(self.tables, typed, ids, i),
        [self.typed, continuation, step], output_shape=self.batch_dims + [whole_vocab],
        output_dtype=tf.float32, splittable_dims=self.batch_dims)
    return mtf.rename_dimension(mask, whole_vocab.name, self.vocab_dim.name)

  def cut(self, continuation):
    """`continuation` without the text it wrote again, in a length dimension of
    healing.tail_room more ids ("healed_length"): the tail of the piece that went past the
    typed text may take several."""
    length_dim = continuation.shape.dims[-1]
    healed_dim = mtf.Dimension("healed_length",
                               length_dim.size + healing.tail_room(self.tables))
    return mtf.slicewise(lambda typed, ids: healing.without_typed(self.tables, typed, ids),
                         [self.typed, continuation],
                         output_shape=continuation.shape.dims[:-1] + [healed_dim],
                         output_dtype=tf.int32, splittable_dims=self.batch_dims)


class _CopyCache:
  """The copy cache (code_t5/decoding/copy_cache.py) on mtf tensors: each step's logits, made the
  log-probabilities of the model mixed with what followed the line's last tokens earlier in
  the prefix `inputs` [batch dims, length]. Each slice computes the whole vocabulary, in a
  dimension no layout splits, as token healing's mask does."""

  def __init__(self, model, inputs, options, file_ids=None):
    self.vocab_dim = model.output_vocab_dim
    self.batch_dims = inputs.shape.dims[:-1]
    # The code alone: a prefix LM's delimiter is no part of it, and no run matches across it.
    inputs *= mtf.to_int32(mtf.not_equal(inputs, EOS_ID))
    if file_ids is not None:  # the file's ids before the window (and after the cursor's line)
      inputs = _joined(file_ids, inputs)
    self.inputs = inputs
    self.prefix_length = mtf.reduce_sum(mtf.to_int32(mtf.not_equal(self.inputs, 0)),
                                        reduced_dim=inputs.shape.dims[-1])
    self.options = options

  def broadcast(self, batch_dims):
    """The cache's source, joined once per prefix, for `batch_dims` (the beams of each)."""
    self.inputs = _beams_of(self.inputs, batch_dims)
    self.prefix_length = _beams_of(self.prefix_length, batch_dims)
    self.batch_dims = batch_dims

  def mixed(self, logits, continuation, step):
    whole_vocab = mtf.Dimension("cache_vocab", self.vocab_dim.size)

    def rows(t):
      return tf.reshape(t, [-1, t.shape[-1]])

    def slice_mixed(logits, inputs, prefix_length, continuation, step):
      mixed = copy_cache.cached_log_probs(rows(logits), rows(inputs),
                                          tf.reshape(prefix_length, [-1]), rows(continuation),
                                          step, self.options)
      return tf.reshape(mixed, tf.shape(logits))
    mixed = mtf.slicewise(
        slice_mixed,
        [mtf.rename_dimension(logits, self.vocab_dim.name, whole_vocab.name), self.inputs,
         self.prefix_length, continuation, step],
        output_shape=self.batch_dims + [whole_vocab], output_dtype=tf.float32,
        splittable_dims=self.batch_dims)
    return mtf.rename_dimension(mixed, whole_vocab.name, self.vocab_dim.name)


def _copy_cache(model, inputs, features):
  """The `_CopyCache` of `inputs` (and of the file's "cache" feature, where eval and infer
  give it) that `code_t5.copy_cache` asks for; None at weight 0."""
  options = copy_cache.copy_cache()
  if not options["weight"]:
    return None
  return _CopyCache(model, inputs, options, features.get(preprocessors.CACHE))


def _joined(first, then):
  """[batch dims, both lengths]: each row's ids of `first` (up to its padding), then those of
  `then`, then zeros. Mesh-tf imports every feature with a dimension "length" of its own
  size: the two are renamed apart."""
  first = mtf.rename_dimension(first, first.shape.dims[-1].name, "file_length")
  joined_dim = mtf.Dimension("cache_source", first.shape.dims[-1].size + then.shape.dims[-1].size)

  def join(first, then):  # static shapes throughout, as XLA (a TPU) compiles them
    rows = tf.reshape(first, [-1, first.shape[-1]]), tf.reshape(then, [-1, then.shape[-1]])
    lengths = [tf.reduce_sum(tf.cast(tf.not_equal(ids, 0), tf.int32), axis=1) for ids in rows]
    joined, _ = copy_cache.written_sequence(rows[0], lengths[0], rows[1], lengths[1])
    return tf.reshape(joined, tf.concat([tf.shape(then)[:-1], [joined_dim.size]], axis=0))
  batch_dims = then.shape.dims[:-1]
  return mtf.slicewise(join, [first, then], output_shape=batch_dims + [joined_dim],
                       output_dtype=tf.int32, splittable_dims=batch_dims)


class _PrefixReader:
  """A prefix read once, as mesh-tf's sample_autoregressive reads it (the prefix LM's prefix
  attends to itself in both directions), its key/value caches filled; then `logits` of each
  next position, one token at a time. `sequence` [batch dims, length]: the prefix, then zeros
  with room for the continuation."""

  def __init__(self, model, sequence, variable_dtype):
    self.model, self.variable_dtype = model, variable_dtype
    self.batch_dims = sequence.shape.dims[:-1]
    self.sequence_dim = sequence.shape.dims[-1]
    self.mesh = sequence.mesh
    self.prefix_length = mtf.reduce_sum(mtf.to_int32(mtf.not_equal(sequence, 0)),
                                        reduced_dim=self.sequence_dim)
    positions = mtf.range(self.mesh, self.sequence_dim, tf.int32)
    if model.input_full_attention:
      self.priority = positions * mtf.to_int32(mtf.greater(positions, self.prefix_length))
    else:
      self.priority = positions
    first_part = transformer.Context(
        model=model, mesh=self.mesh, batch_dims=self.batch_dims, length_dim=self.sequence_dim,
        variable_dtype=variable_dtype, mode="first_part", position=positions,
        position_is_default=True, new_states=[], initial_position=self.prefix_length,
        constant_states=[], write_priority=self.priority, read_priority=self.priority,
        inputs=sequence)
    with tf.variable_scope(model.name):
      model._call_internal(first_part, transformer.autoregressive_inputs(sequence))  # pylint: disable=protected-access
    self.constant_states = first_part.constant_states
    self.states = first_part.new_states
    # The input of the first step: the prefix's last token (its EOS, if delimited).
    self.last_token = mtf.gather(sequence, self.prefix_length - 1, self.sequence_dim)

  def broadcast(self, batch_dims):
    """The prefix, read once, for `batch_dims` (the beams of each prefix): its states and
    positions the same for each. (A causal model's priority is the positions alone, the same
    for every row: it stays so.)"""
    def each(value):
      if isinstance(value, mtf.Tensor) and self.batch_dims[0] in value.shape.dims:
        return _beams_of(value, batch_dims)
      return value
    self.states = [each(state) for state in self.states]
    self.constant_states = tf.nest.map_structure(each, self.constant_states)
    self.prefix_length, self.priority, self.last_token = (
        each(self.prefix_length), each(self.priority), each(self.last_token))
    self.batch_dims = batch_dims

  def logits(self, step, previous, states):
    """Float logits for position len(prefix) + step, whose input is `previous` (the token
    written at step - 1; ignored at step 0, where it is the prefix's last), and the new
    states."""
    token = previous * mtf.to_int32(mtf.greater(step, 0)) + self.last_token * mtf.to_int32(
        mtf.equal(step, 0))
    position = self.prefix_length + step
    incremental = transformer.Context(
        model=self.model, mesh=self.mesh, batch_dims=self.batch_dims,
        length_dim=self.sequence_dim, variable_dtype=self.variable_dtype, mode="incremental",
        position=position, states=states, new_states=[],
        constant_states=self.constant_states, write_priority=self.priority,
        read_priority=position, inputs=token)
    with tf.variable_scope(self.model.name, reuse=True):
      logits = self.model._call_internal(incremental, token)  # pylint: disable=protected-access
    return mtf.to_float(logits), incremental.new_states


@gin.configurable(module="code_t5")
def greedy_decode(model, features, variable_dtype, stop_at_line_end=True):
  """`predict_fn` for utils.run: greedy decoding (the argmax token at each step) of the rest
  of the line from `served_inputs`, for at most the targets' length in tokens: the longest
  rest of a line the full-line Task holds. With `token_healing`, the prefix's last pieces are
  written again first, held to their text, and cut off after. With `code_t5.copy_cache`, each
  step's distribution is the model's mixed with what followed the line's last tokens earlier
  in the prefix (code_t5/decoding/copy_cache.py), and with its file_tokens earlier in the
  file (the "cache" feature eval and infer give: `preprocessors.model_inputs`).

  `stop_at_line_end`: the loop ends once every row of the batch has written a line end (a
  causal model trained on files ends a line so, not with EOS); else at EOS or the targets'
  length. The completion is the same either way -- everything reads the line up to its
  first line end or EOS -- and a short line costs a few steps instead of the targets' length
  (scripts/bench_serving.py)."""
  inputs = served_inputs(features["inputs"])
  pieces = token_healing()
  healer = _Healing(model, inputs, pieces) if pieces else None
  if healer:
    inputs = healer.inputs
  steps = gin_config.run_parameter("sequence_length")["targets"] + pieces
  reader = _PrefixReader(model, mtf.pad(inputs, [0, steps], inputs.shape.dims[-1].name),
                         variable_dtype)
  cache = _copy_cache(model, inputs, features)
  continuation, _ = _greedy_line(model, reader, cache, healer, steps,
                                 NEWLINE_ID if stop_at_line_end else EOS_ID)
  return healer.cut(continuation) if healer else continuation


def _greedy_line(model, reader, cache, healer, steps, line_end, scored=False):
  """The argmax token at each step after the prefix `reader` read, for at most `steps` tokens
  or until every row has written `line_end` or EOS: ([batch dims, steps] ids, healed pieces
  and all; then zeros), and, if `scored`, each row's score as the line search scores a line
  ([batch dims]: the sum of log softmax(`line_end_logits`) of its tokens up to its line end),
  else None. `cache`, `healer`: a `_CopyCache`, a `_Healing` on the same rows, or None."""
  mesh = reader.mesh
  decode_dim = mtf.Dimension("decode_length", steps)
  vocab_dim = model.output_vocab_dim

  def ended_rows(continuation):
    return mtf.reduce_any(mtf.logical_or(mtf.equal(continuation, line_end),
                                         mtf.equal(continuation, EOS_ID)),
                          reduced_dim=decode_dim)

  def cond_fn(step, continuation, score, *states):
    del score, states
    return mtf.logical_and(mtf.less(step, steps),
                           mtf.logical_not(mtf.reduce_all(ended_rows(continuation))))

  def body_fn(step, continuation, score, *states):
    previous = mtf.gather(continuation, step - 1, decode_dim)
    logits, new_states = reader.logits(step, previous, states)
    if cache:
      logits = cache.mixed(logits, continuation, step)
    if healer:
      logits += healer.mask(continuation, step)
    token = mtf.argmax(logits, vocab_dim)
    if scored:  # the token's log-probability, the line's two ends one event (as the search's)
      log_probs = mtf.log_softmax(line_end_logits(logits, vocab_dim), vocab_dim)
      written = mtf.reduce_sum(log_probs * mtf.one_hot(line_end_targets(token), vocab_dim,
                                                       dtype=log_probs.dtype),
                               reduced_dim=vocab_dim)
      score += written * mtf.to_float(mtf.logical_not(ended_rows(continuation)))
    continuation += token * mtf.one_hot(step, decode_dim, dtype=tf.int32)
    return [step + 1, continuation, score] + new_states

  start = [mtf.constant(mesh, 0, dtype=tf.int32),
           mtf.zeros(mesh, reader.batch_dims + [decode_dim], tf.int32),
           mtf.zeros(mesh, reader.batch_dims, tf.float32)]
  _, continuation, score = mtf.while_loop(cond_fn, body_fn, start + reader.states)[:3]
  return continuation, (score if scored else None)


def line_end_logits(logits, vocab_dim):
  """`logits` with the line's two ends made one: the newline's logit becomes
  log(e^newline + e^EOS) and EOS's -1e9, so that the newline stands for "the line ends here",
  at a newline or at the end of the file, with the probability of both.

  A causal model trained on files ends a line with a newline and, on full-line examples, with
  EOS; the prefix LM with EOS. What completes the line is the same either way, so the line
  search ranks it once (two ends would be two hypotheses of the same text), and score mode
  (score.completion_scores) scores a completion's end by this same rule: the two agree."""
  mesh = logits.mesh

  def one_hot(token):
    return mtf.one_hot(mtf.constant(mesh, token, dtype=tf.int32), vocab_dim, dtype=logits.dtype)

  def logit_of(token):
    return mtf.reduce_sum(logits * one_hot(token), reduced_dim=vocab_dim)

  newline, eos = logit_of(NEWLINE_ID), logit_of(EOS_ID)
  larger = mtf.maximum(newline, eos)
  either = larger + mtf.log(mtf.exp(newline - larger) + mtf.exp(eos - larger))
  is_newline, is_eos = one_hot(NEWLINE_ID), one_hot(EOS_ID)
  return logits * (1.0 - is_newline - is_eos) + either * is_newline - 1e9 * is_eos


def line_end_targets(ids):
  """`ids` with each EOS written as the newline: the token line_end_logits gives both ends."""
  return ids + (NEWLINE_ID - EOS_ID) * mtf.to_int32(mtf.equal(ids, EOS_ID))


# What a predict_fn gives PREDICT mode besides the ids it returns, per mtf graph: mesh-tf's
# model_fn exports only those ids ("outputs"); `upstream/model_fn.py` (which wraps mesh-tf's
# model_fn with it) exports these through the same lowering, into the Estimator's predictions
# and so into the SavedModel's signature.
_MORE_PREDICTIONS = {}


def predict_also(tensors, finish=None):
  """Asks for mtf tensors {name: [batch, ...]} among the predictions of the graph they are in.
  Ids ("top_k_outputs") are detokenized as "outputs" are; then `finish`, if given, maps the
  dict of TF tensors to the predictions."""
  graph = next(iter(tensors.values())).mesh.graph
  _MORE_PREDICTIONS[graph] = ({name: mtf.anonymize(t) for name, t in tensors.items()}, finish)


def forget_predictions_asked() -> None:
  """Before a model function builds its graph: nothing asked yet."""
  _MORE_PREDICTIONS.clear()


def predictions_asked():
  """({name: mtf tensor}, finish) that the graph just built asked for, or ({}, None)."""
  return _MORE_PREDICTIONS.popitem()[1] if _MORE_PREDICTIONS else ({}, None)


def distinct_lines(predictions):
  """{"top_k_outputs", "top_k_scores"} with each line kept once, at its best rank: hypotheses
  that differ in tokens only ("de" as one piece or as two) are one suggestion. A repeat
  becomes "" with score -inf, as a slot the search did not fill."""
  lines, scores = predictions["top_k_outputs"], predictions["top_k_scores"]
  if lines.dtype != tf.string:  # ids, on a TPU: the client detokenizes, and compares
    return predictions
  k = int(lines.shape[-1])
  earlier = tf.constant([[j < i for j in range(k)] for i in range(k)])  # [i, j]: j before i
  same = tf.equal(lines[:, :, None], lines[:, None, :])  # [batch, k, k]: line j == line i
  repeat = tf.reduce_any(same & earlier[None], axis=-1) & tf.math.is_finite(scores)
  return {"top_k_outputs": tf.where(repeat, tf.zeros_like(lines), lines),
          "top_k_scores": tf.where(repeat, tf.fill(tf.shape(scores), -math.inf), scores)}


# Python's str.rstrip() whitespace, in RE2: what `lines.line_similarity` leaves out of a line.
_TRAILING_SPACE = r"[\t\n\x{0b}\f\r\x{1c}-\x{1f}\x{85}\p{Z}]+$"


def ranked_by_agreement(predictions, top_k, temperature=consensus.MODEL_CONSENSUS_TEMPERATURE,
                        first_kept=False):
  """{"top_k_outputs", "top_k_scores"} [batch, beams] (distinct lines, -inf for none) ->
  the `top_k` lines that agree most with all the search's lines, first to last, with their
  own log-probabilities, and "outputs", the first: the model's consensus
  (`consensus.model_consensus_line`, minimum Bayes risk under edit similarity), in the graph,
  so that eval, infer and an export suggest the same line. A line's agreement is its
  expected `lines.line_similarity` to every line found, each weighted by softmax(log P /
  `temperature`); equal ones keep the search's order; lines not found go last.

  `first_kept`: the first line (greedy's, rank = 'greedy_first') stays first where it is
  found, and counts among the lines the others agree with.

  Why: ranked by probability alone, the best line is a short one (a line that ends after a
  word outscores its longer rest) and trails greedy's (docs/BENCHMARK_LOG.md, "The line
  search ranked by agreement")."""
  lines, scores = predictions["top_k_outputs"], predictions["top_k_scores"]
  if lines.dtype != tf.string:  # ids, on a TPU: the client ranks
    return {"top_k_outputs": lines[:, :top_k], "top_k_scores": scores[:, :top_k]}
  k = int(lines.shape[-1])
  text = tf.strings.regex_replace(
      tf.strings.substr(lines, 0, lines_lib.MAX_LINE_CHARS, unit="UTF8_CHAR"),
      _TRAILING_SPACE, "")
  chars = tf.strings.unicode_split(text, "UTF-8", errors="replace")  # [batch, k, (chars)]
  first = tf.constant([i for i in range(k) for _ in range(k)])
  second = tf.constant([j for _ in range(k) for j in range(k)])
  distance = tf.edit_distance(tf.gather(chars, first, axis=1).to_sparse(),
                              tf.gather(chars, second, axis=1).to_sparse(), normalize=False)
  length = tf.cast(tf.strings.length(text, unit="UTF8_CHAR"), tf.float32)  # [batch, k]
  longest = tf.maximum(tf.gather(length, first, axis=1), tf.gather(length, second, axis=1))
  similarity = tf.where(longest > 0, 1.0 - distance / tf.maximum(longest, 1.0),
                        tf.ones_like(longest))
  similarity = tf.reshape(similarity, [-1, k, k])  # [batch, line, other]
  found = tf.math.is_finite(scores)
  best = tf.reduce_max(tf.where(found, scores, tf.fill(tf.shape(scores), -1e30)), axis=-1,
                       keepdims=True)
  weight = tf.where(found, tf.exp((scores - best) / temperature), tf.zeros_like(scores))
  weight /= tf.maximum(tf.reduce_sum(weight, axis=-1, keepdims=True), 1e-30)
  agreement = tf.reduce_sum(similarity * weight[:, None, :], axis=-1)
  if first_kept:  # similarities are at most 1
    agreement += tf.constant([2.0] + [0.0] * (k - 1))
  agreement = tf.where(found, agreement, tf.fill(tf.shape(agreement), -1.0))
  order = tf.argsort(agreement, axis=-1, direction="DESCENDING", stable=True)[:, :top_k]
  ranked = tf.gather(lines, order, batch_dims=1)
  return {"top_k_outputs": ranked, "top_k_scores": tf.gather(scores, order, batch_dims=1),
          "outputs": ranked[:, 0]}


# How the line search orders its lines (prefix_lm_beam_search's `rank`).
RANKS = ("probability", "agreement", "greedy_first")


@gin.configurable(module="code_t5")
def prefix_lm_beam_search(model, features, variable_dtype, beam_size=4, alpha=0.0,
                          max_steps=None, never_end=False, top_k=1, min_score=None,
                          rank="probability"):
  """`predict_fn` for utils.run: a beam search for the rest of each line, whose best
  completion is the output, and whose `top_k` best, with their scores, are the predictions
  "top_k_outputs" and "top_k_scores" (infer writes them; an export returns them).

  With `code_t5.copy_cache`, each beam's step reads greedy's copy cache (the window, and the
  file's "cache" feature where eval and infer give it) over its own line so far: the scores
  are then the mixed log-probabilities.

  A hypothesis ends where its line ends (a newline or EOS, one event: `line_end_logits`). The
  search ends when the best finished hypothesis of every prefix beats every open one (with
  alpha = 0 no open one can then overtake it), or after `max_steps` tokens: a short line costs
  a few steps. With beam_size = 1 the result is greedy's line, or a likelier one that ends
  sooner.

  Args:
    model: the delimited_lm `Unitransformer` (input_full_attention on or off).
    features: {"inputs": [batch, length]}: the prefix's tokens (with the EOS that delimits
      them, if the model reads one), then zeros.
    variable_dtype: an mtf.VariableDType.
    beam_size: hypotheses kept per prefix: each step keeps the likeliest of all their
      extensions, whichever beam and piece (no beam is held to its own best few).
    alpha: length penalty exponent, ((5 + length) / 6) ** alpha (GNMT). 0: a score is the
      completion's log-probability with its line end, what score.gin gives the same pair.
    max_steps: longest completion, in tokens (None: the targets' length, the longest rest of a
      line the full-line Task holds, as greedy_decode's); one still open then is returned as
      it stands.
    never_end: forbid EOS and end nowhere else, so every hypothesis runs `max_steps` tokens
      (as sample_autoregressive's never_end; with beam_size=1 this is its greedy decoding).
    top_k: completions returned per prefix (at most beam_size), best first; one the search
      did not finish before it stopped is "" with score -inf.
    min_score: a completion scoring less is "" with score -inf: no suggestion (None: all).
    rank: "probability": the lines best first by their scores; "agreement": of all
      `beam_size` lines, those that agree most with the rest first (`ranked_by_agreement`),
      the first the output; "greedy_first" (beam_search.gin's): greedy's line, decoded beside
      the search from the same reading of the prefix and scored as its lines are, first and
      the output, then the search's lines by agreement (with greedy's among them). On a TPU
      the lines leave the graph as ids and keep the probability order (greedy's first).

  Returns:
    [batch, continuation] int32 ids: the best completion, EOS-terminated or cut (by
    probability; greedy's with rank = "greedy_first"; with rank = "agreement" the
    predictions' "outputs" is the first ranked).
  """
  if rank not in RANKS:
    raise ValueError(f"code_t5.prefix_lm_beam_search.rank = {rank!r}: one of "
                     + ", ".join(map(repr, RANKS)))
  if not isinstance(model, transformer.Unitransformer):
    raise ValueError("code_t5.prefix_lm_beam_search decodes the prefix LM (delimited_lm); "
                     "for the bitransformer set Bitransformer.decode.beam_size instead")
  if not 1 <= top_k <= beam_size:
    raise ValueError(f"code_t5.prefix_lm_beam_search.top_k = {top_k}: must be between 1 and "
                     f"beam_size = {beam_size}")
  if max_steps is None:
    max_steps = gin_config.run_parameter("sequence_length")["targets"]
  inputs = served_inputs(features["inputs"])
  pieces = token_healing()
  healer = _Healing(model, inputs, pieces) if pieces else None
  if healer:
    inputs = healer.inputs
  max_steps += pieces
  batch_dim, length_dim = inputs.shape.dims
  mesh = inputs.mesh
  beam_dim = mtf.Dimension("beam", beam_size)
  decode_dim = mtf.Dimension("decode_length", max_steps)
  batch_dims = [batch_dim, beam_dim]
  cache = _copy_cache(model, inputs, features)  # greedy's, on each beam's own line
  # Room after the prefix for the continuation; the prefix read once, as greedy reads it.
  reader = _PrefixReader(model, mtf.pad(inputs, [0, max_steps], length_dim.name),
                         variable_dtype)
  with_greedy = rank == "greedy_first" and not never_end
  if with_greedy:  # greedy's line, on the prefix's rows, before they become beams
    greedy, greedy_score = _greedy_line(model, reader, cache, healer, max_steps, NEWLINE_ID,
                                        scored=True)
    greedy = line_end_as_eos(greedy)
    if healer:
      greedy = healer.cut(greedy)
  # The prefix's states, copy cache and healed pieces, the same for every beam.
  for part in (reader, cache, healer):
    if part:
      part.broadcast(batch_dims)

  def logits_fn(step, continuation, states):
    """Logits for sequence position len(prefix) + step, given the continuation so far."""
    logits, new_states = reader.logits(step, mtf.gather(continuation, step - 1, decode_dim),
                                       states)
    if cache:
      logits = cache.mixed(logits, continuation, step)
    if healer:
      logits += healer.mask(continuation, step)
    if never_end:  # as sample_autoregressive's: no EOS; a newline is a token like any other
      logits += mtf.one_hot(mtf.constant(mesh, EOS_ID, dtype=tf.int32),
                            model.output_vocab_dim, on_value=-1e9, off_value=0.0,
                            dtype=logits.dtype)
      return logits, new_states
    return line_end_logits(logits, model.output_vocab_dim), new_states

  mesh_shape = mtf.convert_to_shape(model.mesh_shape)
  processors = mesh_shape.size if mesh_shape else 1
  beams, scores = mtf.beam_search.beam_search(
      logits_fn,
      mtf.zeros(mesh, [batch_dim, beam_dim, decode_dim], tf.int32),
      alpha,
      states=reader.states,
      eos_id=EOS_ID if never_end else NEWLINE_ID,  # the line's end (line_end_logits)
      decode_length=mtf.constant(mesh, max_steps, dtype=tf.int32),
      use_tpu=True,  # as mesh-tf's own beam_search: fixed loop variables
      dtype=tf.float32,
      # Given a layout, mtf's beam_search grows each beam by only its `num_prefilter` likeliest
      # pieces in each part of the vocabulary as the mesh splits it (one part on every shipped
      # mesh), 2 unless told; None: 2 x beam_size, so that no hypothesis of the exact top
      # 2 x beam_size is lost (with 2, the first step, which grows one beam, kept 2 first
      # pieces for 8 beams). The layout also gathers the beams' states by one
      # [rows x beams]^2 matrix per processor, which pays on a TPU's matrix units and costs
      # `rows` times the [beams]^2 gather elsewhere: with one processor (CPU, one GPU) no
      # layout is given (docs/BENCHMARK_LOG.md, "The line search, exact and read once").
      num_prefilter=None,
      mesh_shape=model.mesh_shape if processors > 1 else None,
      layout=model.layout if processors > 1 else None)
  if not never_end:
    beams = line_end_as_eos(beams)
  if healer:
    beams = healer.cut(beams)
  # Slots the search never filled score mtf's -INF (-1e7); a completion under min_score joins
  # them: its ids become padding (the empty string), its score -inf.
  shown = mtf.greater(scores, -mtf.beam_search.INF / 2)
  if min_score is not None:
    shown = mtf.logical_and(shown, mtf.greater_equal(scores, float(min_score)))
  beams *= mtf.to_int32(shown)
  # The k best (mtf's beams come sorted by score), gathered while every score is finite: a
  # gather multiplies by a one-hot, and -inf * 0 is NaN. Ranked by agreement, all the lines:
  # the finish ranks them and keeps top_k.
  by_agreement = rank != "probability" and not never_end
  k_dim = mtf.Dimension("top_k", beam_size if by_agreement else top_k)
  best_first = mtf.range(mesh, k_dim, tf.int32)
  top_k_shown = mtf.gather(mtf.to_float(shown), best_first, beam_dim,
                           output_shape=[batch_dim, k_dim])
  top_k_scores = mtf.gather(scores, best_first, beam_dim, output_shape=[batch_dim, k_dim])
  top_k_outputs = mtf.gather(beams, best_first, beam_dim,
                             output_shape=[batch_dim, k_dim, beams.shape.dims[-1]])
  if with_greedy:  # greedy's line the first of them, shown as the search's are
    greedy_shown = mtf.to_float(mtf.greater_equal(
        greedy_score, float(min_score) if min_score is not None else -mtf.beam_search.INF))
    greedy *= mtf.to_int32(greedy_shown)  # under min_score: padding, as a beam's
    first_dim = mtf.Dimension(k_dim.name, 1)
    top_k_outputs = mtf.concat(
        [mtf.reshape(greedy, [batch_dim, first_dim, greedy.shape.dims[-1]]), top_k_outputs],
        k_dim.name)
    top_k_scores = mtf.concat([mtf.reshape(greedy_score, [batch_dim, first_dim]), top_k_scores],
                              k_dim.name)
    top_k_shown = mtf.concat([mtf.reshape(greedy_shown, [batch_dim, first_dim]), top_k_shown],
                             k_dim.name)
  finish = None
  if by_agreement:
    finish = lambda predictions: ranked_by_agreement(distinct_lines(predictions), top_k,
                                                     first_kept=with_greedy)
  elif not never_end:
    finish = distinct_lines
  predict_also(finish=finish, tensors={
      "top_k_outputs": top_k_outputs,
      # (mtf.where is arithmetic too: tf.where, slice by slice.)
      "top_k_scores": mtf.slicewise(
          lambda score, kept: tf.where(kept > 0.5, score, tf.fill(tf.shape(score), -math.inf)),
          [top_k_scores, top_k_shown], output_shape=top_k_scores.shape,
          output_dtype=tf.float32, splittable_dims=top_k_scores.shape.dims)})
  if with_greedy:
    return greedy
  return mtf.gather(beams, mtf.constant(mesh, 0, dtype=tf.int32), beam_dim)


def _beams_of(tensor, batch_dims):
  """A [batch, ...] `tensor` as [batch, beam, ...]: the same for every beam."""
  return mtf.broadcast(tensor,
                       batch_dims + [dim for dim in tensor.shape.dims if dim not in batch_dims])


def line_end_as_eos(ids):
  """The search's line end (the newline) written as EOS: each completion then ends as the
  full-line Task's targets do, and mesh-tf cuts it there (clean_decodes)."""
  return ids - (NEWLINE_ID - EOS_ID) * mtf.to_int32(mtf.equal(ids, NEWLINE_ID))
