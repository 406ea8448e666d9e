"""Smeared keys (code_t5/attention.py): decoding one token at a time computes what training's
graph does at once, and a packed row's segment reads nothing of the segment before it.

A tiny causal model with random weights, built and run in-process: its logits at every
position, all at once, against the same positions decoded as code_t5's decoding reads them
(the prefix once, then a token a step, each step's layer inputs kept as state).
"""

import functools

import mesh_tensorflow as mtf
from mesh_tensorflow.transformer import transformer, transformer_layers
import numpy as np
import tensorflow.compat.v1 as tf

from code_t5 import attention
from code_t5.decoding import _PrefixReader

VOCAB = 40
LENGTH = 12
PREFIX = 5
# Two rows: one sequence each (the prefix, then its continuation).
SEQUENCES = np.array([[5, 9, 17, 3, 22, 31, 8, 8, 14, 2, 27, 11],
                      [12, 4, 4, 30, 7, 19, 25, 6, 33, 10, 21, 16]], np.int32)


def _model():
  # The sublayers of mesh-tf's defaults.gin, which this test does not parse.
  stack = functools.partial(
      transformer.LayerStack, sublayers_initial=[transformer.sublayer_dropout],
      sublayers_per_layer=[transformer.sublayer_rms_norm, transformer.sublayer_call_layer,
                           transformer.sublayer_dropout, transformer.sublayer_residual],
      sublayers_final=[transformer.sublayer_rms_norm, transformer.sublayer_dropout])
  layers = [[attention.SmearedKeysSelfAttention, {"num_heads": 2, "key_value_size": 8, "relative_attention_type": "bias"}],
            [transformer_layers.DenseReluDense, {"hidden_size": 32}]]
  return transformer.Unitransformer(
      layer_stack=transformer.make_layer_stack(layers=layers, layer_stack_cls=stack,
                                               num_layers=2),
      d_model=16, input_vocab_size=VOCAB, output_vocab_size=VOCAB, autoregressive=True,
      max_length=LENGTH, positional_embedding=False, shared_embedding_and_softmax_weights=True,
      name="decoder")


def _run(build, shifts=()):
  """build(model, mesh, dims) -> {name: mtf.Tensor}; their values, of one random init, or a
  list of them: one for each of `shifts`, every key_shift set to it."""
  graph = tf.Graph()
  with graph.as_default():
    tf.set_random_seed(0)
    mtf_graph = mtf.Graph()
    mesh = mtf.Mesh(mtf_graph, "mesh")
    dims = (mtf.Dimension("batch", SEQUENCES.shape[0]), mtf.Dimension("length", LENGTH))
    outputs = build(_model(), mesh, dims)
    lowering = mtf.Lowering(mtf_graph, {mesh: mtf.placement_mesh_impl.PlacementMeshImpl(
        shape=[], layout={}, devices=[""])})
    fetches = {name: lowering.export_to_tf_tensor(tensor) for name, tensor in outputs.items()}
    with tf.Session(graph=graph) as session:
      session.run(tf.global_variables_initializer())
      session.run(lowering.copy_masters_to_slices())
      if not shifts:
        return session.run(fetches)
      variables = [v for v in tf.global_variables() if "key_shift" in v.name]
      assert len(variables) == 2, variables  # one a layer
      values = []
      for shift in shifts:
        session.run([v.assign(tf.fill(v.shape, shift)) for v in variables])
        session.run(lowering.copy_masters_to_slices())
        values.append(session.run(fetches))
      return values


def _all_at_once_and_decoded(model, mesh, dims):
  batch, length = dims
  sequences = mtf.import_tf_tensor(mesh, tf.constant(SEQUENCES), mtf.Shape([batch, length]))
  logits, _ = model.call_simple(inputs=transformer.autoregressive_inputs(sequences),
                                targets=sequences, compute_loss=False,
                                mode=tf.estimator.ModeKeys.EVAL)
  outputs = {"all at once": logits}
  prefix = sequences * mtf.to_int32(mtf.less(mtf.range(mesh, length, tf.int32), PREFIX))
  reader = _PrefixReader(model, prefix, mtf.VariableDType(tf.float32))
  states = reader.states
  for step in range(LENGTH - PREFIX):
    previous = mtf.gather(sequences, PREFIX + step - 1, length)
    step_logits, states = reader.logits(mtf.constant(mesh, step, dtype=tf.int32), previous,
                                        states)
    outputs[f"step {step}"] = step_logits
  return outputs


def test_decoding_a_token_at_a_time_gives_the_logits_of_all_positions_at_once():
  values = _run(_all_at_once_and_decoded)
  at_once = values["all at once"]
  for step in range(LENGTH - PREFIX):
    np.testing.assert_allclose(values[f"step {step}"], at_once[:, PREFIX + step], atol=1e-5,
                               err_msg=f"position {PREFIX + step}")


def _packed_and_alone(model, mesh, dims):
  """Row 0 packs SEQUENCES[0][:5] and SEQUENCES[1][:7]; row 1 holds the second alone."""
  batch, length = dims
  packed = np.stack([np.concatenate([SEQUENCES[0, :5], SEQUENCES[1, :7]]),
                     np.concatenate([SEQUENCES[1, :7], np.zeros(5, np.int32)])])
  segments = np.array([[1] * 5 + [2] * 7, [1] * 7 + [0] * 5], np.int32)
  positions = np.array([list(range(5)) + list(range(7)), list(range(7)) + [0] * 5], np.int32)
  shape = mtf.Shape([batch, length])
  as_tensor = lambda array: mtf.import_tf_tensor(mesh, tf.constant(array), shape)
  segment_ids = as_tensor(segments)
  logits, _ = model.call_simple(inputs=transformer.autoregressive_inputs(as_tensor(packed),
                                                                      segment_ids),
                                targets=as_tensor(packed), compute_loss=False,
                                mode=tf.estimator.ModeKeys.EVAL, sequence_id=segment_ids,
                                position=as_tensor(positions))
  return {"logits": logits}


def test_a_packed_segment_reads_nothing_of_the_segment_before_it():
  logits = _run(_packed_and_alone)["logits"]
  np.testing.assert_allclose(logits[0, 5:], logits[1, :7], atol=1e-5)


def test_the_keys_read_the_previous_position():
  """The same weights with the mix at 0 (every key its own position's) and at 1/2 give the
  same logits at the first position, which has nothing before it, and others after it."""
  own, mixed = (values["all at once"] for values in _run(_all_at_once_and_decoded, (0.0, 0.5)))
  np.testing.assert_allclose(own[:, 0], mixed[:, 0], atol=1e-6)
  assert np.abs(own[:, 1:] - mixed[:, 1:]).max() > 1e-3
