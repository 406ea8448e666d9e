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


@gin.configurable(module="code_t5")
def prefix_lm_beam_search(model, features, variable_dtype, beam_size=4, alpha=0.6,
                          max_steps=64, never_end=False):
  """`predict_fn` for utils.run: the best of `beam_size` continuations of each prefix.

  Args:
    model: the delimited_lm `Unitransformer` (input_full_attention on or off).
    features: {"inputs": [batch, length]}: the prefix's tokens (with the EOS that delimits
      them, if the model reads one), then zeros.
    variable_dtype: an mtf.VariableDType.
    beam_size: hypotheses kept per prefix.
    alpha: length penalty exponent, ((5 + length) / 6) ** alpha (GNMT); 0 compares total
      log-likelihoods.
    max_steps: longest continuation, in tokens; a hypothesis also ends at EOS.
    never_end: forbid EOS, so every hypothesis runs `max_steps` tokens (as
      sample_autoregressive's never_end; with beam_size=1 this is greedy decoding).

  Returns:
    [batch, continuation] int32 ids: the continuation only, EOS-terminated or cut.
  """
  if not isinstance(model, transformer.Unitransformer):
    raise ValueError("code_t5.prefix_lm_beam_search decodes the prefix LM (delimited_lm); "
                     "for the bitransformer set Bitransformer.decode.beam_size instead")
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
    if never_end:
      logits += mtf.one_hot(mtf.constant(mesh, EOS_ID, dtype=tf.int32), model.output_vocab_dim,
                            on_value=-1e9, off_value=0.0, dtype=logits.dtype)
    return mtf.to_float(logits), incremental.new_states

  beams, _ = mtf.beam_search.beam_search(
      logits_fn,
      mtf.zeros(mesh, [batch_dim, beam_dim, decode_dim], tf.int32),
      alpha,
      states=first_part.new_states,
      eos_id=EOS_ID,
      decode_length=mtf.constant(mesh, max_steps, dtype=tf.int32),
      use_tpu=True,  # as mesh-tf's own beam_search: fixed loop variables
      dtype=tf.float32,
      mesh_shape=model.mesh_shape,
      layout=model.layout)
  return mtf.gather(beams, mtf.constant(mesh, 0, dtype=tf.int32), beam_dim)
