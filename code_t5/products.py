"""mesh-tf's products on CPU and GPU meshes as 2-D matmuls, a weight's gradient in blocks.

mesh-tf lowers every product (a dense layer, its two gradients, the logits) to one
`tf.einsum` per slice. With TensorFlow's oneDNN ops on (the launch's default on a CPU,
`_code_t5_mtf_shim.py`), a weight's gradient -- x^T dy, the contraction running over all of a
step's rows -- is the slow one: on the slow class's two cores oneDNN runs it well below the
rate of the forward product of the same multiply-adds, and cut into blocks of output columns
close to it again (docs/BENCHMARK_LOG.md, "A weight's gradient in column blocks").

`einsum(equation, a, b, column_block)` computes a two-operand product whose letters group
into (kept, contracted) on each side, as mesh-tf's dense products do, by reshapes and one
`tf.matmul` with transpose flags -- no transposes of the data -- and, with `column_block`,
a weight's gradient (both sides contract their leading axes) as `tf.matmul`s of at most that
many columns of its longer side each, concatenated (transposed at the end where that side is
its rows). Each output element is the same sum as before, over the same contraction; only
the order of its additions may differ. Any other equation (a batch letter, as attention's
scores have; letters out of group order) goes to `tf.einsum` unchanged.

Off by default (0: every product is mesh-tf's `tf.einsum`). A CPU run turns it on with
  --gin_param="code_t5.products.column_block = 128"
In a whole training step on the slow class its gain was within the machine's noise, so no mesh
file binds it (the same entry); `scripts/bench_throughput.py --levers=column_blocks` measures
it on another machine.
"""

import math

import gin
import tensorflow.compat.v1 as tf


@gin.configurable(module="code_t5")
def products(column_block: int = 0) -> int:
  """The CPU and GPU meshes' products: 0 (the default), mesh-tf's `tf.einsum`; N > 0,
  `einsum` below with a weight's gradient in blocks of at most N columns."""
  if column_block < 0:
    raise ValueError(f"code_t5.products.column_block must be 0 or more, not {column_block}")
  return column_block


def _grouped(letters, first, second):
  """Whether `letters` is `first` then `second` (True), `second` then `first` (False), else
  None; each group in its own order."""
  if letters == first + second:
    return True
  if letters == second + first:
    return False
  return None


def plan(equation):
  """(kept of a, contracted, kept of b, a's layout first, b's layout first, swap) for a
  two-operand equation that is one 2-D matmul, else None. Layout first: a is (kept,
  contracted), b is (contracted, kept); swap: the output is (b's kept, a's kept), so b and a
  trade places."""
  inputs, _, out = equation.partition("->")
  operands = inputs.split(",")
  if len(operands) != 2 or not out:
    return None
  a, b = operands
  if len(set(a)) != len(a) or len(set(b)) != len(b) or len(set(out)) != len(out):
    return None
  if set(a) & set(b) & set(out) or not set(out) <= set(a) | set(b):
    return None  # a batch letter (attention's scores), or a new one
  contracted = "".join(c for c in a if c in b)
  kept_a = "".join(c for c in a if c not in b)
  kept_b = "".join(c for c in b if c not in a)
  if not contracted or set(kept_a) | set(kept_b) != set(out):
    return None  # an outer product, or a letter summed inside one operand
  a_first = _grouped(a, kept_a, contracted)
  # b's contracted letters in a's order, so that both sides flatten them alike.
  b_first = _grouped(b, contracted, kept_b)
  in_order = _grouped(out, kept_a, kept_b)
  if a_first is None or b_first is None or in_order is None:
    return None
  return kept_a, contracted, kept_b, a_first, b_first, not in_order


def einsum(equation, a, b, column_block=0):
  """tf.einsum(equation, a, b), where `plan` allows, as reshapes and 2-D matmuls (above)."""
  layout = plan(equation)
  if layout is None:
    return tf.einsum(equation, a, b)
  kept_a, contracted, kept_b, a_first, b_first, swap = layout
  (a_letters, b_letters), out = equation.split("->")[0].split(","), equation.split("->")[1]
  size = dict(zip(a_letters + b_letters, a.shape.as_list() + b.shape.as_list()))
  if None in size.values():  # mesh-tf's slices have static shapes; anything else, as it was
    return tf.einsum(equation, a, b)
  rows, inner, columns = (math.prod(size[c] for c in letters)
                          for letters in (kept_a, contracted, kept_b))
  # The output's 2-D form is left @ right; each side with whether it is stored as the product
  # reads it (left as (kept, contracted), right as (contracted, kept)) or transposed.
  left = tf.reshape(a, [rows, inner] if a_first else [inner, rows]), a_first
  right = tf.reshape(b, [inner, columns] if b_first else [columns, inner]), b_first
  if swap:  # the output is b's kept then a's: (a b)^T = b^T a^T
    left, right = _swapped(left, right)
    rows, columns = columns, rows
  # A weight's gradient, x^T dy: both sides contract their leading axes, a step's rows.
  gradient = bool(column_block) and not left[1] and right[1]
  # Cut along its longer side: a gradient of more rows than columns is computed transposed.
  transposed = gradient and rows > columns
  if transposed:
    left, right = _swapped(left, right)
    rows, columns = columns, rows
  (x, x_plain), (y, y_plain) = left, right
  if gradient and columns > column_block:
    blocks = tf.split(y, _block_sizes(columns, column_block), axis=1 if y_plain else 0)
    product = tf.concat([tf.matmul(x, block, transpose_a=not x_plain, transpose_b=not y_plain)
                         for block in blocks], axis=1)
  else:
    product = tf.matmul(x, y, transpose_a=not x_plain, transpose_b=not y_plain)
  if transposed:
    product = tf.transpose(product)
  return tf.reshape(product, [size[c] for c in out])


def _swapped(left, right):
  """x @ y as (y^T) @ (x^T): the sides trade places, each read the other way."""
  (x, x_plain), (y, y_plain) = left, right
  return (y, not y_plain), (x, not x_plain)


def _block_sizes(columns, block):
  """`columns` as blocks of `block`, the last one shorter where it does not divide."""
  return [block] * (columns // block) + ([columns % block] if columns % block else [])
