"""Lets mesh-tensorflow 0.1.21 import under TensorFlow >= 2.14.

mesh_tensorflow/ops.py calls `tensorflow.python.framework.ops.register_tensor_conversion_function`,
which TF 2.14 moved to `tensor_conversion_registry` (tensorflow/mesh issues 392 and 396). t5's
`mesh_transformer_main` imports mesh_tensorflow before it reads `--module_import`, so a fix inside
`code_t5` would come too late. Instead `code_t5_mtf_shim.pth` (installed into site-packages with
the package) imports this module at interpreter start-up. It only puts a finder on `sys.meta_path`:
nothing is patched, and TensorFlow is not imported, until some code imports `mesh_tensorflow`.
"""

import importlib.abc
import sys

_WATCHED = "mesh_tensorflow"


def patch_tensorflow_ops():
  """Restores `ops.register_tensor_conversion_function` where TF no longer has it."""
  from tensorflow.python.framework import ops  # pylint: disable=g-import-not-at-top
  if not hasattr(ops, "register_tensor_conversion_function"):
    from tensorflow.python.framework import tensor_conversion_registry  # pylint: disable=g-import-not-at-top
    ops.register_tensor_conversion_function = (
        tensor_conversion_registry.register_tensor_conversion_function)


class _PatchBeforeMeshTensorflow(importlib.abc.MetaPathFinder):
  """Patches TF the first time `mesh_tensorflow` is looked up, then steps aside."""

  def find_spec(self, fullname, path=None, target=None):
    del path, target
    if fullname == _WATCHED:
      uninstall()
      patch_tensorflow_ops()
    return None  # The regular finders import the module itself.


_FINDER = _PatchBeforeMeshTensorflow()


def install():
  if _WATCHED in sys.modules:
    return  # Too late to matter, and mesh_tensorflow imported fine, so nothing to do.
  if _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)


def uninstall():
  if _FINDER in sys.meta_path:
    sys.meta_path.remove(_FINDER)


install()
