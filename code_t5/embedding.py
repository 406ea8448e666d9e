"""The vocabulary's embedding on CPU and GPU meshes: ids looked up by a gather.

mesh-tf's VocabEmbedding looks ids up as a product, einsum(one_hot(ids), weights): rows x
vocabulary x d_model multiply-adds, and as many again for the weights' gradient. On a TPU
slice that splits the vocabulary across cores it is the lookup that shards; on one CPU it
is the step's largest product after the logits' (the dev model: 2 x 2.7 of its ~40 GFLOP a
step) for what a gather does by copying rows. `GatheredVocabEmbedding` looks ids up with
tf.gather and gives the weights' gradient as a segment sum over the ids: the same rows, the
same variables and checkpoints, the logits unchanged (they stay mesh-tf's product with the
same weights). Where a CPU or GPU mesh splits the vocabulary ('model:2,...'), each device
gathers the ids of its part and the parts are summed, as the product's lowering sums them.
The CPU and GPU mesh files bind it:
  get_vocab_embedding_cls.cls = @code_t5.GatheredVocabEmbedding
The TPU ones keep mesh-tf's product, which a TPU runs well.
"""

import gin
import mesh_tensorflow as mtf
from mesh_tensorflow import placement_mesh_impl
from mesh_tensorflow.transformer import transformer
import tensorflow.compat.v1 as tf


def _vocab_split(mesh_impl, weights):
  """The mesh axis that splits the weights' vocabulary, or None; a SIMD mesh (a TPU's) of
  more than one core is not supported."""
  if mesh_impl.size > 1 and not isinstance(mesh_impl, placement_mesh_impl.PlacementMeshImpl):
    raise ValueError("code_t5.GatheredVocabEmbedding runs on CPU and GPU meshes; bind "
                     "get_vocab_embedding_cls.cls = @transformer.VocabEmbedding on this one")
  axis = mesh_impl.tensor_layout(weights.shape).tensor_axis_to_mesh_axis[0]
  return axis if axis is not None and mesh_impl.shape[axis].size > 1 else None


def _local_ids(mesh_impl, weights_shape, ids, pnum):
  """(ids - this slice's first vocabulary id, whether each falls in this slice)."""
  first = mesh_impl.slice_begin(weights_shape, pnum)[0]
  size = mesh_impl.slice_shape(weights_shape)[0]
  local = ids - first
  return local, (local >= 0) & (local < size)


class _Gather(mtf.Operation):
  """weights [vocab, d...] at int ids [...] -> [..., d...]. Where the mesh splits the
  vocabulary, each slice gathers the ids that fall in its part (zeros for the rest) and the
  slices along that axis are summed, as the product's lowering sums them."""

  def __init__(self, weights, ids, name="gather"):
    super().__init__([weights, ids], name=name)
    shape = mtf.Shape(ids.shape.dims + weights.shape.dims[1:])
    self._outputs = [mtf.Tensor(self, shape, weights.dtype)]

  def gradient(self, grad_ys):
    weights, ids = self.inputs
    return [_SegmentSum(grad_ys[0], ids, weights.shape).outputs[0], None]

  def lower(self, lowering):
    mesh_impl = lowering.mesh_impl(self)
    weights, ids = self.inputs
    split = _vocab_split(mesh_impl, weights)

    def gather(pnum, w, i):
      if split is None:
        return tf.gather(w, i)
      local, inside = _local_ids(mesh_impl, weights.shape, i, pnum)
      rows = tf.gather(w, tf.where(inside, local, tf.zeros_like(local)))
      return rows * tf.expand_dims(tf.cast(inside, rows.dtype), -1)

    rows = mesh_impl.slicewise(gather, mesh_impl.laid_out_pnum(), lowering.tensors[weights],
                               lowering.tensors[ids])
    if split is not None:
      rows = mesh_impl.allreduce(rows, [split], "SUM")
    lowering.set_tensor_lowering(self.outputs[0], rows)


class _SegmentSum(mtf.Operation):
  """The gather's gradient: each id's rows of `grad` summed into its row of the weights, then
  over the mesh axes that split the ids but not the weights (the batch's)."""

  def __init__(self, grad, ids, weights_shape):
    super().__init__([grad, ids], name="gather_gradient")
    self._outputs = [mtf.Tensor(self, weights_shape, grad.dtype)]

  def lower(self, lowering):
    mesh_impl = lowering.mesh_impl(self)
    grad, ids = self.inputs
    weights_shape = self.outputs[0].shape
    split = _vocab_split(mesh_impl, self.outputs[0])
    rows = mesh_impl.slice_shape(weights_shape)[0]

    def segment_sum(pnum, g, i):
      if split is not None:
        local, inside = _local_ids(mesh_impl, weights_shape, i, pnum)
        i = tf.where(inside, local, -tf.ones_like(local))  # a negative id is left out
      return tf.math.unsorted_segment_sum(g, i, rows)

    summed = mesh_impl.slicewise(segment_sum, mesh_impl.laid_out_pnum(),
                                 lowering.tensors[grad], lowering.tensors[ids])
    own = set(mesh_impl.tensor_layout(weights_shape).tensor_axis_to_mesh_axis)
    batch = [axis for axis in mesh_impl.tensor_layout(ids.shape).tensor_axis_to_mesh_axis
             if axis is not None and axis not in own and mesh_impl.shape[axis].size > 1]
    if batch:
      summed = mesh_impl.allreduce(summed, batch, "SUM")
    lowering.set_tensor_lowering(self.outputs[0], summed)


@gin.configurable(module="code_t5")
class GatheredVocabEmbedding(transformer.VocabEmbedding):
  """mesh-tf's VocabEmbedding, its lookup a gather (module docstring)."""

  def ids_to_embedding(self, ids, context):
    weights = self._embedding_weights
    if weights.shape.dims[0] != self._vocab_dim:  # an ensemble's leading dimension
      return super().ids_to_embedding(ids, context)
    ret = _Gather(weights, ids).outputs[0]
    if self._scale_variable_like_classifier_weights:
      ret *= self._output_dim.size ** 0.5
    return ret
