"""Self-attention whose keys also read the previous position: smeared keys.

Copying from the window (an induction head) takes two steps in a plain Transformer: one head
in an early layer writes "the token before me" into each position, and a head in a later layer
matches the current token against it and reads what followed. Olsson et al. (2022, "In-context
learning and induction heads") show that when each key is a learned mix of its own position
and the one before ("smeared keys"), one layer can do both and induction heads form earlier in
training. Here the mix is of the layer's input, per channel, before the key projection (as
RWKV's token shift): key_i = W_k (x_i + s * (x_{i-1} - x_i)), s learned per channel of d_model,
starting at 1/2. Queries and values are a plain SelfAttention's.

    --gin_param="transformer.make_layer_stack.layers = [@code_t5.SmearedKeysSelfAttention, @transformer_layers.DenseReluDense]"

Every SelfAttention setting (relative_attention_type, ...) applies as to SelfAttention. The
previous position is never another example's: in packed rows, a segment's first position mixes
in nothing. Decoding keeps the layer inputs it has read as one more state per layer, before the
keys and values mesh-tf keeps, so reading a prefix and then one token at a time gives the keys
of reading it all at once.
"""

import gin
import mesh_tensorflow as mtf
from mesh_tensorflow.transformer import transformer_layers
import tensorflow.compat.v1 as tf

# s starts here, not at 0: Adafactor scales a step by the parameter's size (at least 1e-3),
# so a mix that starts at 0 would move 1e-5 a step at the dev rate.
INITIAL_SHIFT = 0.5


@gin.configurable(module="code_t5")
class SmearedKeysSelfAttention(transformer_layers.SelfAttention):
  """transformer_layers.SelfAttention with smeared keys (the module's docstring)."""

  def make_params(self, context):
    params = super().make_params(context)
    compute_k = params.compute_k
    params.compute_k = lambda m: compute_k(self._smeared(context, m))
    return params

  def _smeared(self, context, m):
    """The keys' input: m mixed with the input of the position before, per channel.

    SelfAttention.call computes the keys before it reads or records its own states, so the
    state kept here comes first in this layer's states in every mode."""
    model_dim = m.shape.dims[-1]
    shift = mtf.get_variable(
        context.mesh, "key_shift", mtf.Shape([model_dim]),
        initializer=tf.constant_initializer(INITIAL_SHIFT), dtype=context.variable_dtype)
    memory_length = self.memory_length(context)
    if context.mode == "incremental":
      # m is the one position being decoded; the inputs read so far are the state.
      old_inputs, = context.get_states(1)
      here = mtf.one_hot(context.position, memory_length, dtype=context.activation_dtype)
      before = mtf.one_hot(context.position - 1, memory_length, dtype=context.activation_dtype)
      previous = mtf.reduce_sum(old_inputs * before, reduced_dim=memory_length)
      context.record_new_states([old_inputs * (1.0 - here) + m * here])
    else:
      previous = mtf.shift(m, 1, memory_length, wrap=False)
      if isinstance(context.sequence_id, mtf.Tensor):
        # Packed rows: a segment's first position has no previous position of its own.
        segment = self.rename_length_to_memory_length(context.sequence_id, context)
        same = mtf.equal(mtf.shift(segment, 1, memory_length, wrap=False), segment)
        previous *= mtf.cast(same, previous.dtype)
      if context.mode == "first_part":
        context.record_new_states([m])
    return m + shift * (previous - m)
