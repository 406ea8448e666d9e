"""A CPU mesh's products as 2-D matmuls (code_t5/products.py): the same values as mesh-tf's
tf.einsum, for the equations mesh-tf writes for a dense layer, its gradients and the logits,
with a weight's gradient cut into column blocks; and mesh-tf's lowering takes that path only
where `code_t5.products.column_block` is bound above 0 (off by default)."""

import gin
import mesh_tensorflow as mtf
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from code_t5 import products

SIZES = {"a": 2, "b": 6, "c": 5, "d": 7, "e": 3}  # batch, length, d_model, d_ff / vocab, heads

EQUATIONS = [  # as mesh-tf's _einsum_equation writes them (letters by first appearance)
    "abc,cd->abd",    # a dense layer, x [batch, length, d_model] by w [d_model, d_ff]
    "abd,cd->abc",    # its input's gradient
    "abd,abc->cd",    # its weight's gradient: dy then x, the output (x's kept, dy's kept)
    "abc,abd->dc",    # the second layer's weight's gradient
    "abc,dc->abd",    # the logits against the embedding [vocab, d_model]
    "abc,abd->cd",    # the embedding's gradient from the logits
    "abc,cde->abde",  # an attention projection to [heads, d_kv]
    "abde,abc->cde",  # its weight's gradient
]


def operands(equation, rng):
  return [tf.constant(rng.normal(size=[SIZES[c] for c in letters]).astype(np.float32))
          for letters in equation.split("->")[0].split(",")]


def op_counts(fn):
  graph = tf.Graph()
  with graph.as_default():
    fn()
  types = [op.type for op in graph.get_operations()]
  return types.count("MatMul"), types.count("Transpose")


@pytest.mark.parametrize("column_block", [0, 2, 3, 16])
@pytest.mark.parametrize("equation", EQUATIONS)
def test_products_give_what_tf_einsum_gives(equation, column_block):
  rng = np.random.default_rng(0)
  a, b = operands(equation, rng)
  got = products.einsum(equation, a, b, column_block=column_block)
  np.testing.assert_allclose(got.numpy(), tf.einsum(equation, a, b).numpy(),
                             rtol=1e-5, atol=1e-5)


def test_a_weights_gradient_is_cut_into_blocks_of_its_longer_side_and_the_rest_is_one_matmul():
  rng = np.random.default_rng(0)
  cut = lambda equation, block: op_counts(
      lambda: products.einsum(equation, *operands(equation, rng), block))
  gradient = "abd,abc->cd"  # [5, 7] over 12 rows: 7 columns in blocks of 3, 3 and 1
  assert cut(gradient, 3) == (3, 0)
  assert cut(gradient, 0) == (1, 0)
  # [7, 5]: its 7 rows are the longer side, cut as columns of the transposed product.
  assert cut("abc,abd->dc", 3) == (3, 1)
  forward = "abc,cd->abd"  # not a weight's gradient: not cut
  assert cut(forward, 3) == (1, 0)
  assert cut("abd,cd->abc", 3) == (1, 0)  # nor its input's gradient


@pytest.mark.parametrize("equation", ["abcd,aecd->acbe",  # attention's scores: batch letters
                                      "abc,cd->abdc",     # the output's letters out of group
                                      "abc,ad->abcd"])    # nothing contracted
def test_other_equations_go_to_tf_einsum(equation):
  assert products.plan(equation) is None
  rng = np.random.default_rng(0)
  a, b = operands(equation, rng)
  np.testing.assert_allclose(products.einsum(equation, a, b, 2).numpy(),
                             tf.einsum(equation, a, b).numpy(), rtol=1e-5, atol=1e-5)


def dense_layer_and_gradients(column_block):
  """A dense layer and its gradients lowered on a 'model:2,batch:2' placement mesh, and the
  graph's op types; `column_block` bound as a run binds it."""
  rng = np.random.default_rng(0)
  x_value = rng.normal(size=[4, 6, 8]).astype(np.float32)
  w_value = rng.normal(size=[8, 10]).astype(np.float32)
  gin.clear_config()
  gin.bind_parameter("code_t5.products.column_block", column_block)
  graph = tf.Graph()
  try:
    with graph.as_default():
      mesh = mtf.Mesh(mtf.Graph(), "mesh")
      batch, length = mtf.Dimension("batch", 4), mtf.Dimension("length", 6)
      d_model, d_ff = mtf.Dimension("d_model", 8), mtf.Dimension("d_ff", 10)
      x = mtf.import_tf_tensor(mesh, tf.constant(x_value), [batch, length, d_model])
      w = mtf.import_tf_tensor(mesh, tf.constant(w_value), [d_model, d_ff])
      y = mtf.einsum([x, w], mtf.Shape([batch, length, d_ff]))
      loss = mtf.reduce_sum(y * y)
      gradients = mtf.gradients([loss], [x, w])
      shape = mtf.convert_to_shape("model:2,batch:2")
      mesh_impl = mtf.placement_mesh_impl.PlacementMeshImpl(
          shape, mtf.convert_to_layout_rules("d_ff:model,batch:batch"), [""] * shape.size)
      lowering = mtf.Lowering(mesh.graph, {mesh: mesh_impl})
      outputs = [lowering.export_to_tf_tensor(t) for t in [y] + gradients]
      with tf.Session(graph=graph) as session:
        values = session.run(outputs)
  finally:
    gin.clear_config()
  return values, {op.type for op in graph.get_operations()}


def test_the_cpu_meshs_lowering_takes_the_2d_path_only_where_gin_binds_it():
  blocked, blocked_ops = dense_layer_and_gradients(column_block=2)
  mesh_tf, mesh_tf_ops = dense_layer_and_gradients(column_block=0)
  assert "MatMul" in blocked_ops and "Einsum" not in blocked_ops, sorted(blocked_ops)
  assert "Einsum" in mesh_tf_ops and "MatMul" not in mesh_tf_ops, sorted(mesh_tf_ops)
  for got, want in zip(blocked, mesh_tf):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)


def test_a_negative_column_block_is_an_error():
  gin.clear_config()
  gin.bind_parameter("code_t5.products.column_block", -1)
  try:
    with pytest.raises(ValueError, match="column_block"):
      products.products()
  finally:
    gin.clear_config()
