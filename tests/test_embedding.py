"""The embedding's gather (code_t5/embedding.py) gives what mesh-tf's one-hot product gives: the
rows and the weights' gradient, on one device and on meshes that split the batch, the
vocabulary or both (mesh-tf's placement mesh, one CPU named once per slice)."""

import numpy as np
import pytest
import mesh_tensorflow as mtf
import tensorflow.compat.v1 as tf

from code_t5 import embedding

VOCAB, D_MODEL, BATCH, LENGTH = 8, 4, 4, 6


def rows_and_gradient(lookup, mesh_shape, weights_value, ids_value, upstream_value):
  """(rows, d loss / d weights) of `lookup(weights, ids)` on a placement mesh of `mesh_shape`,
  where the loss is sum(rows * upstream)."""
  graph = tf.Graph()
  with graph.as_default():
    mtf_graph = mtf.Graph()
    mesh = mtf.Mesh(mtf_graph, "mesh")
    vocab, d_model = mtf.Dimension("vocab", VOCAB), mtf.Dimension("d_model", D_MODEL)
    batch, length = mtf.Dimension("batch", BATCH), mtf.Dimension("length", LENGTH)
    weights = mtf.import_tf_tensor(mesh, tf.constant(weights_value), [vocab, d_model])
    ids = mtf.import_tf_tensor(mesh, tf.constant(ids_value), [batch, length])
    upstream = mtf.import_tf_tensor(mesh, tf.constant(upstream_value), [batch, length, d_model])
    rows = lookup(weights, ids, vocab)
    loss = mtf.reduce_sum(rows * upstream)
    [gradient] = mtf.gradients([loss], [weights])
    mesh_impl = mtf.placement_mesh_impl.PlacementMeshImpl(
        mtf.convert_to_shape(mesh_shape),
        mtf.convert_to_layout_rules("vocab:model,batch:batch"),
        [""] * mtf.convert_to_shape(mesh_shape).size)
    lowering = mtf.Lowering(mtf_graph, {mesh: mesh_impl})
    outputs = [lowering.export_to_tf_tensor(t) for t in (rows, gradient)]
    with tf.Session(graph=graph) as session:
      return session.run(outputs)


def gathered(weights, ids, vocab):
  del vocab
  return embedding._Gather(weights, ids).outputs[0]  # pylint: disable=protected-access


@pytest.mark.parametrize("mesh_shape", ["model:1,batch:1", "model:1,batch:2", "model:2,batch:1",
                                        "model:2,batch:2", "model:4,batch:2"])
def test_the_gather_gives_the_one_hot_products_rows_and_gradient(mesh_shape):
  rng = np.random.default_rng(0)
  weights = rng.normal(size=[VOCAB, D_MODEL]).astype(np.float32)
  # Every id of the vocabulary, some repeated (their gradients add up), 0 and VOCAB - 1.
  ids = np.concatenate([np.arange(VOCAB), rng.integers(0, VOCAB, BATCH * LENGTH - VOCAB)])
  ids = ids.reshape(BATCH, LENGTH).astype(np.int32)
  upstream = rng.normal(size=[BATCH, LENGTH, D_MODEL]).astype(np.float32)

  rows, gradient = rows_and_gradient(gathered, mesh_shape, weights, ids, upstream)
  product_rows, product_gradient = rows_and_gradient(mtf.gather, mesh_shape, weights, ids,
                                                     upstream)
  np.testing.assert_array_equal(rows, weights[ids])
  np.testing.assert_array_equal(rows, product_rows)
  expected = np.zeros_like(weights)
  np.add.at(expected, ids.reshape(-1), upstream.reshape(-1, D_MODEL))
  np.testing.assert_allclose(gradient, expected, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(gradient, product_gradient, rtol=1e-5, atol=1e-6)
