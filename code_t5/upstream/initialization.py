"""mesh_tensorflow.get_variable, wrapped: with `code_t5.initialization.stddev`, the weights of
the transformer start as a GPT's do (GPT-2's N(0, 0.02), the projections into the residual
stream smaller), where mesh-tf scales each by its fan-in (VarianceScalingInitializer, and
attention's own d^-0.5 normals). Off (None) by default.

Which variable is which is read from its name, as mesh-tf's transformer names them: the
embedding, attention's q/k/v and the feed-forward's `wi` take `stddev`; attention's `o` and
the feed-forward's `wo`, which add to the residual stream, `residual_stddev`. Norm scales and
the relative position biases keep mesh-tf's. With `stddev` set, mesh-tf's folding of
attention's 1/sqrt(d_kv) into q's initializer is wrong: set
`SelfAttention.fold_scaling_into_initializer = False` with it (launch refuses otherwise).
"""

import gin
import tensorflow.compat.v1 as tf

from code_t5.upstream import wrapping

_INPUT_PROJECTIONS = ("/q", "/k", "/v", "/wi/kernel", "/embedding")
_RESIDUAL_PROJECTIONS = ("/o", "/wo/kernel")
# get_variable(mesh, name, shape, dtype, master_dtype, slice_dtype, activation_dtype,
# initializer, ...): the initializer's place among the arguments after `shape`.
_INITIALIZER_AT = 4


@gin.configurable(module="code_t5")
def initialization(stddev=None, residual_stddev=None):
  """The normal's standard deviation of the transformer's weights (None: mesh-tf's
  initializers), and of the projections that add to the residual stream (None: `stddev`)."""
  if stddev is not None and stddev <= 0 or residual_stddev is not None and residual_stddev <= 0:
    raise ValueError(f"code_t5.initialization: standard deviations must be positive, got "
                     f"{stddev}, {residual_stddev}")
  if stddev is not None and _folds_scaling():
    raise ValueError("code_t5.initialization.stddev initializes q as the other projections: "
                     "add SelfAttention.fold_scaling_into_initializer = False, or attention's "
                     "1/sqrt(d_kv) is lost")
  return dict(stddev=stddev, residual_stddev=residual_stddev or stddev)


def _folds_scaling() -> bool:
  try:
    return bool(gin.query_parameter("SelfAttention.fold_scaling_into_initializer"))
  except ValueError:  # not bound: mesh-tf's default, True
    return True


def initializer_of(full_name: str, options: dict):
  """The initializer `options` (initialization()'s) give the variable `full_name`, or None
  where mesh-tf's stands."""
  if options["stddev"] is None:
    return None
  if full_name.endswith(_RESIDUAL_PROJECTIONS):
    return tf.random_normal_initializer(stddev=options["residual_stddev"])
  if full_name.endswith(_INPUT_PROJECTIONS):
    return tf.random_normal_initializer(stddev=options["stddev"])
  return None


def _initialized(get_variable):
  def get_variable_initialized(mesh, name, shape, *args, **kwargs):
    scope = tf.get_variable_scope().name
    chosen = initializer_of(f"{scope}/{name}" if scope else name, initialization())
    if chosen is not None:
      if len(args) > _INITIALIZER_AT:
        args = args[:_INITIALIZER_AT] + (chosen,) + args[_INITIALIZER_AT + 1:]
      else:
        kwargs["initializer"] = chosen
    return get_variable(mesh, name, shape, *args, **kwargs)
  return get_variable_initialized


def install() -> None:
  """In every process that imports code_t5 (upstream.install): every module mesh-tf's layers
  call get_variable through."""
  import mesh_tensorflow  # pylint: disable=g-import-not-at-top
  from mesh_tensorflow import ops, ops_with_redefined_builtins  # pylint: disable=g-import-not-at-top
  for owner in (mesh_tensorflow, ops, ops_with_redefined_builtins):
    wrapping.wrap_once(owner, "get_variable", _initialized)
