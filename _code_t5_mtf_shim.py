"""Lets mesh-tensorflow 0.1.21 import under TensorFlow >= 2.14, and t5 start without PyTorch.

mesh_tensorflow/ops.py calls `tensorflow.python.framework.ops.register_tensor_conversion_function`,
which TF 2.14 moved to `tensor_conversion_registry` (tensorflow/mesh issues 392 and 396). t5's
`mesh_transformer_main` imports mesh_tensorflow before it reads `--module_import`, so a fix inside
`code_t5` would come too late. Instead `code_t5_mtf_shim.pth` (installed into site-packages with
the package) imports this module at interpreter start-up. It only puts a finder on `sys.meta_path`:
nothing is patched, and TensorFlow is not imported, until some code imports `mesh_tensorflow`.

The same finder makes one import of t5's lazy. `t5/models/__init__.py` ends with
`from t5.models.hf_model import HfPyTorchModel`, which imports torch and transformers (about
10 s of a 35 s start-up on a 2-core machine) into every mesh-tf run, which never uses them.
The finder runs that `__init__.py` from its own source with that line replaced by a module
`__getattr__` (PEP 562): `t5.models.HfPyTorchModel` and `from t5.models import HfPyTorchModel`
still give the real class, importing torch at that moment. If t5's file no longer has the line,
it runs unchanged. No bytecode of the changed source is written.

And it sets one variable for a code_t5 launch (`choose_onednn`): TensorFlow's oneDNN ops on,
which TensorFlow reads once, when its library loads, before `--module_import`.
"""

import importlib.abc
import importlib.machinery
import os
import sys

_MESH_TF = "mesh_tensorflow"
_T5_MODELS = "t5.models"
_EAGER_HF_IMPORT = "from t5.models.hf_model import HfPyTorchModel\n"
_LAZY_HF_IMPORT = '''
def __getattr__(name):  # code_t5's shim: torch and transformers load on first use
  if name == "HfPyTorchModel":
    from t5.models.hf_model import HfPyTorchModel  # pylint: disable=g-import-not-at-top
    return HfPyTorchModel
  raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
'''


def patch_tensorflow_ops():
  """Restores `ops.register_tensor_conversion_function` where TF no longer has it."""
  from tensorflow.python.framework import ops  # pylint: disable=g-import-not-at-top
  if not hasattr(ops, "register_tensor_conversion_function"):
    from tensorflow.python.framework import tensor_conversion_registry  # pylint: disable=g-import-not-at-top
    ops.register_tensor_conversion_function = (
        tensor_conversion_registry.register_tensor_conversion_function)


class _LazyHfLoader(importlib.abc.Loader):
  """Executes t5/models/__init__.py with the eager Hugging Face import made lazy."""

  def __init__(self, path):
    self.path = path

  def create_module(self, spec):
    return None  # the default module

  def exec_module(self, module):
    with open(self.path, encoding="utf-8") as f:
      source = f.read()
    source = source.replace(_EAGER_HF_IMPORT, _LAZY_HF_IMPORT)
    exec(compile(source, self.path, "exec"), module.__dict__)  # pylint: disable=exec-used


class _PatchBeforeMeshTensorflow(importlib.abc.MetaPathFinder):
  """Patches TF the first time `mesh_tensorflow` is looked up and loads `t5.models` lazily,
  then steps aside."""

  def __init__(self):
    self.pending = {_MESH_TF, _T5_MODELS}

  def find_spec(self, fullname, path=None, target=None):
    if fullname not in self.pending:
      return None
    self.pending.discard(fullname)
    if not self.pending:
      uninstall()
    if fullname == _MESH_TF:
      patch_tensorflow_ops()
      return None  # The regular finders import the module itself.
    spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
    if spec is not None and spec.origin and spec.origin.endswith("__init__.py"):
      spec.loader = _LazyHfLoader(spec.origin)
      spec.cached = None
    return spec


_FINDER = _PatchBeforeMeshTensorflow()
_ONEDNN = "TF_ENABLE_ONEDNN_OPTS"
_LAUNCH = "t5.models.mesh_transformer_main"


def _imports_code_t5(argv):
  for i, arg in enumerate(argv):
    if arg.startswith("--module_import="):
      return "code_t5" in arg.split("=", 1)[1].split(",")
    if arg == "--module_import" and i + 1 < len(argv):
      return "code_t5" in argv[i + 1].split(",")
  return False


def choose_onednn(argv, environ=os.environ):
  """TF_ENABLE_ONEDNN_OPTS for `argv`, where it is unset and `argv` launches t5's
  mesh_transformer_main with `--module_import=code_t5`: 1, or 0 where the command line names
  reproducible.gin or `bit_identical = True` (one thread and oneDNN off: the same bits each
  run). TensorFlow turns its oneDNN ops on by itself only on CPUs with AVX-512 VNNI or BF16; on
  the slow class (AVX2) they train the dev model faster too (docs/BENCHMARK_LOG.md, "Where a
  training step's time goes"). A reproducible.gin that another gin file includes is not seen
  here: that launch stops in one line asking for TF_ENABLE_ONEDNN_OPTS=0
  (code_t5/upstream/launch_checks.py)."""
  if _ONEDNN in environ or _LAUNCH not in argv or not _imports_code_t5(argv):
    return
  bit_identical = any(arg.endswith("reproducible.gin") or
                      "bit_identical = True" in arg or "bit_identical=True" in arg
                      for arg in argv)
  environ[_ONEDNN] = "0" if bit_identical else "1"


def install():
  _FINDER.pending -= set(sys.modules)  # imported already: too late to matter
  if _FINDER.pending and _FINDER not in sys.meta_path:
    sys.meta_path.insert(0, _FINDER)


def uninstall():
  if _FINDER in sys.meta_path:
    sys.meta_path.remove(_FINDER)


install()
choose_onednn(getattr(sys, "orig_argv", sys.argv))
