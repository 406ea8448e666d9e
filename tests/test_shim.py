"""The mesh-tensorflow shim: installed with the package, lazy, and effective."""

import subprocess

from conftest import PYTHON, REPO_ROOT


def _python(code):
  return subprocess.run([PYTHON, "-c", code], cwd="/", capture_output=True, text=True)


def test_interpreter_start_loads_the_finder_but_not_tensorflow():
  proc = _python(
      "import sys\n"
      "assert 'tensorflow' not in sys.modules, 'the shim imported TF'\n"
      "names = [type(f).__name__ for f in sys.meta_path]\n"
      "assert '_PatchBeforeMeshTensorflow' in names, names\n")
  assert proc.returncode == 0, proc.stderr


def test_mesh_tensorflow_imports_with_the_patch_applied():
  proc = _python(
      "import sys, mesh_tensorflow\n"
      "from tensorflow.python.framework import ops, tensor_conversion_registry as r\n"
      "assert ops.register_tensor_conversion_function is r.register_tensor_conversion_function\n"
      "names = [type(f).__name__ for f in sys.meta_path]\n"
      "assert '_PatchBeforeMeshTensorflow' not in names, 'finder should step aside'\n")
  assert proc.returncode == 0, proc.stderr


def test_mesh_transformer_main_helpfull_lists_t5_flags():
  proc = subprocess.run(
      [PYTHON, "-m", "t5.models.mesh_transformer_main", "--module_import=code_t5",
       "--helpfull"], cwd=REPO_ROOT, capture_output=True, text=True)
  # absl exits with status 1 after printing help; an import failure would be a traceback.
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
  assert "--t5_tfds_data_dir" in proc.stdout and "--gin_location_prefix" in proc.stdout
