"""Decoding the rest of the line from the code prefix: beam search, and greedy for a causal model.

mesh-tf's `Unitransformer.beam_search` raises NotImplementedError when `input_full_attention`
is on (our prefix LM), because it only decodes from position 0. Here the prefix is read once,
exactly as `Unitransformer.sample_autoregressive` reads it for greedy decoding, and
`mtf.beam_search` then grows the continuation in its own length dimension: step i of the
search writes sequence position `len(prefix) + i`, which differs per example.

Use it through `utils.run.predict_fn` (gin_configs/beam_search.gin); it serves the infer,
eval and export_infer modes alike. `greedy_decode` is mesh-tf's own greedy decoding behind the
same hook (models/causal.gin sets it).

Both read the inputs through `served_inputs`: mesh-tf's export appends an EOS to every request
(`dataset.encode_all_features`), which is the prefix LM's delimiter but no part of what a
causal model reads (`code_t5.inputs_delimiter`).
"""

import math

import gin
import mesh_tensorflow as mtf
from mesh_tensorflow.transformer import transformer
import tensorflow.compat.v1 as tf

from code_t5 import preprocessors
from code_t5.vocabulary import EOS_ID, NEWLINE_ID


def served_inputs(inputs):
  """`inputs` as the model reads them: without EOS when it reads no delimiter (an EOS is never
  a token of the text itself, so the only one there is the one mesh-tf's export appends)."""
  if preprocessors.inputs_delimiter():
    return inputs
  return inputs * mtf.to_int32(mtf.not_equal(inputs, EOS_ID))


@gin.configurable(module="code_t5")
def greedy_decode(model, features, variable_dtype, stop_at_line_end=True):
  """`predict_fn` for utils.run: what mesh-tf's PREDICT mode does for a Unitransformer
  (sample_autoregressive, with the settings the mode file gives it) from `served_inputs`,
  for at most the targets' length in tokens: the longest rest of a line the full-line Task
  holds (mesh-tf would go on to the end of the row, past a short prefix).

  `stop_at_line_end`: the loop ends once every row of the batch has written a line end (a
  causal model trained on files ends a line so, not with EOS); else at EOS or the targets'
  length. The completion is the same either way -- everything reads the line up to its
  first line end or EOS -- and a short line costs a few steps instead of the targets' length
  (scripts/bench_serving.py)."""
  inputs = served_inputs(features["inputs"])
  targets_length = gin.query_parameter("utils.run.sequence_length")["targets"]
  inputs = mtf.pad(inputs, [0, targets_length], inputs.shape.dims[-1].name)
  return model.sample_autoregressive(inputs, variable_dtype=variable_dtype,
                                     max_steps=targets_length, remove_partial_sequences=True,
                                     stop_at_token=NEWLINE_ID if stop_at_line_end else EOS_ID)


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
# model_fn exports only those ids ("outputs"); `add_predictions` (upstream.py wraps mesh-tf's
# model_fn with it) exports these through the same lowering, into the Estimator's predictions
# and so into the SavedModel's signature.
_MORE_PREDICTIONS = {}


def predict_also(tensors, finish=None):
  """Asks for mtf tensors {name: [batch, ...]} among the predictions of the graph they are in.
  Ids ("top_k_outputs") are detokenized as "outputs" are; then `finish`, if given, maps the
  dict of TF tensors to the predictions."""
  graph = next(iter(tensors.values())).mesh.graph
  _MORE_PREDICTIONS[graph] = ({name: mtf.anonymize(t) for name, t in tensors.items()}, finish)


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


def add_predictions(model_fn_builder):
  """mesh-tf's `tpu_estimator_model_fn`, whose model functions add what the predict_fn asked
  for (`predict_also`) to a PREDICT spec's predictions."""
  def build(*args, **kwargs):
    model_fn = model_fn_builder(*args, **kwargs)
    vocabulary = kwargs["vocabulary"] if "vocabulary" in kwargs else args[2]
    use_tpu = kwargs["use_tpu"] if "use_tpu" in kwargs else args[4]

    def model_fn_adding_predictions(features, labels, mode, params=None, config=None):
      from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
      predict_batch_size = features.get("predict_batch_size")
      _MORE_PREDICTIONS.clear()
      spec = model_fn(features, labels, mode, params=params, config=config)
      asked, finish = _MORE_PREDICTIONS.popitem()[1] if _MORE_PREDICTIONS else ({}, None)
      if not asked:
        return spec
      [lowering] = [hook._lowering for hook in spec.prediction_hooks  # pylint: disable=protected-access
                    if isinstance(hook, mtf.MtfRestoreHook)]
      for name, tensor in asked.items():
        value = lowering.export_to_tf_tensor(tensor)
        if name == "top_k_outputs":
          value = mtf_utils.clean_decodes(value)
          targets_vocabulary = mtf_utils.targets_vocabulary(vocabulary)
          if not use_tpu and hasattr(targets_vocabulary, "decode_tf"):  # as "outputs" are
            value = targets_vocabulary.decode_tf(value)
            if isinstance(value, tf.RaggedTensor):  # [batch, k], of uniform rows
              value = value.to_tensor()
        if predict_batch_size is not None:
          value = value[:predict_batch_size]
        asked[name] = value
      spec.predictions.update(finish(asked) if finish else asked)
      # The SavedModel's signature: every prediction (TPUEstimator's export builds its default
      # signature before this function returns, from mesh-tf's two).
      return spec._replace(export_outputs={
          tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
              tf.estimator.export.PredictOutput(spec.predictions)})
    return model_fn_adding_predictions
  build.adds_predictions = True
  return build


def install() -> None:
  """mesh-tf's model functions add what a predict_fn asks for to PREDICT's outputs
  (upstream.install)."""
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  if not getattr(mtf_utils.tpu_estimator_model_fn, "adds_predictions", False):
    mtf_utils.tpu_estimator_model_fn = add_predictions(mtf_utils.tpu_estimator_model_fn)


@gin.configurable(module="code_t5")
def prefix_lm_beam_search(model, features, variable_dtype, beam_size=4, alpha=0.0,
                          max_steps=None, never_end=False, top_k=1, min_score=None):
  """`predict_fn` for utils.run: a beam search for the rest of each line, whose best
  completion is the output, and whose `top_k` best, with their scores, are the predictions
  "top_k_outputs" and "top_k_scores" (infer writes them; an export returns them).

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
    beam_size: hypotheses kept per prefix.
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

  Returns:
    [batch, continuation] int32 ids: the best completion, EOS-terminated or cut.
  """
  if not isinstance(model, transformer.Unitransformer):
    raise ValueError("code_t5.prefix_lm_beam_search decodes the prefix LM (delimited_lm); "
                     "for the bitransformer set Bitransformer.decode.beam_size instead")
  if not 1 <= top_k <= beam_size:
    raise ValueError(f"code_t5.prefix_lm_beam_search.top_k = {top_k}: must be between 1 and "
                     f"beam_size = {beam_size}")
  if max_steps is None:
    max_steps = gin.query_parameter("utils.run.sequence_length")["targets"]
  inputs = served_inputs(features["inputs"])
  batch_dim, length_dim = inputs.shape.dims
  mesh = inputs.mesh
  beam_dim = mtf.Dimension("beam", beam_size)
  decode_dim = mtf.Dimension("decode_length", max_steps)
  batch_dims = [batch_dim, beam_dim]

  # Room after the prefix for the continuation, then one copy of the prefix per beam (the
  # prefix pass costs beam_size times greedy's; the search steps dominate for long lines).
  sequence = mtf.pad(inputs, [0, max_steps], length_dim.name)
  sequence_dim = sequence.shape.dims[-1]
  sequence = mtf.broadcast(sequence, [batch_dim, beam_dim, sequence_dim])
  prefix_length = mtf.reduce_sum(mtf.to_int32(mtf.not_equal(sequence, 0)),
                                 reduced_dim=sequence_dim)

  # Read the prefix in one pass, filling the key/value caches: the same priorities as
  # sample_autoregressive, so the prefix attends to itself in both directions.
  positions = mtf.range(mesh, sequence_dim, tf.int32)
  if model.input_full_attention:
    priority = positions * mtf.to_int32(mtf.greater(positions, prefix_length))
  else:
    priority = positions
  first_part = transformer.Context(
      model=model, mesh=mesh, batch_dims=batch_dims, length_dim=sequence_dim,
      variable_dtype=variable_dtype, mode="first_part", position=positions,
      position_is_default=True, new_states=[], initial_position=prefix_length,
      constant_states=[], write_priority=priority, read_priority=priority, inputs=sequence)
  with tf.variable_scope(model.name):
    model._call_internal(first_part, transformer.autoregressive_inputs(sequence))  # pylint: disable=protected-access
  last_prefix_token = mtf.gather(sequence, prefix_length - 1, sequence_dim)  # EOS, if delimited

  def logits_fn(step, continuation, states):
    """Logits for sequence position len(prefix) + step, given the continuation so far."""
    # At step 0 the one-hot of index -1 is all zeros: the input is the prefix's last token.
    previous = mtf.gather(continuation, step - 1, decode_dim)
    token = previous + last_prefix_token * mtf.to_int32(mtf.equal(step, 0))
    position = prefix_length + step
    incremental = transformer.Context(
        model=model, mesh=mesh, batch_dims=batch_dims, length_dim=sequence_dim,
        variable_dtype=variable_dtype, mode="incremental", position=position,
        states=states, new_states=[], constant_states=first_part.constant_states,
        write_priority=priority, read_priority=position, inputs=token)
    with tf.variable_scope(model.name, reuse=True):
      logits = model._call_internal(incremental, token)  # pylint: disable=protected-access
    logits = mtf.to_float(logits)
    if never_end:  # as sample_autoregressive's: no EOS; a newline is a token like any other
      logits += mtf.one_hot(mtf.constant(mesh, EOS_ID, dtype=tf.int32),
                            model.output_vocab_dim, on_value=-1e9, off_value=0.0,
                            dtype=logits.dtype)
      return logits, incremental.new_states
    return line_end_logits(logits, model.output_vocab_dim), incremental.new_states

  beams, scores = mtf.beam_search.beam_search(
      logits_fn,
      mtf.zeros(mesh, [batch_dim, beam_dim, decode_dim], tf.int32),
      alpha,
      states=first_part.new_states,
      eos_id=EOS_ID if never_end else NEWLINE_ID,  # the line's end (line_end_logits)
      decode_length=mtf.constant(mesh, max_steps, dtype=tf.int32),
      use_tpu=True,  # as mesh-tf's own beam_search: fixed loop variables
      dtype=tf.float32,
      mesh_shape=model.mesh_shape,
      layout=model.layout)
  if not never_end:
    beams = line_end_as_eos(beams)
  # Slots the search never filled score mtf's -INF (-1e7); a completion under min_score joins
  # them: its ids become padding (the empty string), its score -inf.
  shown = mtf.greater(scores, -mtf.beam_search.INF / 2)
  if min_score is not None:
    shown = mtf.logical_and(shown, mtf.greater_equal(scores, float(min_score)))
  beams *= mtf.to_int32(shown)
  # The k best (mtf's beams come sorted by score), gathered while every score is finite: a
  # gather multiplies by a one-hot, and -inf * 0 is NaN.
  k_dim = mtf.Dimension("top_k", top_k)
  best_first = mtf.range(mesh, k_dim, tf.int32)
  top_k_shown = mtf.gather(mtf.to_float(shown), best_first, beam_dim,
                           output_shape=[batch_dim, k_dim])
  top_k_scores = mtf.gather(scores, best_first, beam_dim, output_shape=[batch_dim, k_dim])
  predict_also(finish=distinct_lines if not never_end else None, tensors={
      "top_k_outputs": mtf.gather(beams, best_first, beam_dim,
                                  output_shape=[batch_dim, k_dim, decode_dim]),
      # (mtf.where is arithmetic too: tf.where, slice by slice.)
      "top_k_scores": mtf.slicewise(
          lambda score, kept: tf.where(kept > 0.5, score, tf.fill(tf.shape(score), -math.inf)),
          [top_k_scores, top_k_shown], output_shape=top_k_scores.shape,
          output_dtype=tf.float32, splittable_dims=top_k_scores.shape.dims)})
  return mtf.gather(beams, mtf.constant(mesh, 0, dtype=tf.int32), beam_dim)


def line_end_as_eos(ids):
  """The search's line end (the newline) written as EOS: each completion then ends as the
  full-line Task's targets do, and mesh-tf cuts it there (clean_decodes)."""
  return ids - (NEWLINE_ID - EOS_ID) * mtf.to_int32(mtf.equal(ids, NEWLINE_ID))
