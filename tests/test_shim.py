"""The shim: installed with the package, lazy, and effective (mesh-tf imports, t5 without torch)."""

import subprocess

import pytest

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
      "import _code_t5_mtf_shim as shim\n"
      "assert shim._FINDER.pending == {'t5.models'}, 'mesh-tf handled, t5.models awaited'\n")
  assert proc.returncode == 0, proc.stderr


def test_mesh_transformer_main_helpfull_lists_t5_flags():
  proc = subprocess.run(
      [PYTHON, "-m", "t5.models.mesh_transformer_main", "--module_import=code_t5",
       "--helpfull"], cwd=REPO_ROOT, capture_output=True, text=True)
  # absl exits with status 1 after printing help; an import failure would be a traceback.
  assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
  assert "--t5_tfds_data_dir" in proc.stdout and "--gin_location_prefix" in proc.stdout


def test_t5_models_imports_without_torch():
  """The main lock has no torch (`make torch` adds it): t5.models must import all the same."""
  proc = _python(
      "import sys, t5.models\n"
      "from t5.models import mesh_transformer, mtf_model\n"
      "assert 'torch' not in sys.modules and 'transformers' not in sys.modules\n"
      "assert not [f for f in sys.meta_path if type(f).__name__ == '_PatchBeforeMeshTensorflow']\n")
  assert proc.returncode == 0, proc.stderr[-3000:]


def test_t5_models_still_offers_the_hf_model_where_torch_is_installed():
  pytest.importorskip("torch", reason="t5's HfPyTorchModel needs torch: make torch")
  proc = _python(
      "import sys, t5.models\n"
      "assert 'torch' not in sys.modules\n"
      "from t5.models import HfPyTorchModel\n"
      "import t5.models.hf_model as real\n"
      "assert HfPyTorchModel is real.HfPyTorchModel is t5.models.HfPyTorchModel\n"
      "assert 'torch' in sys.modules\n"
      "try:\n"
      "  t5.models.NoSuchModel\n"
      "except AttributeError as e:\n"
      "  assert 'NoSuchModel' in str(e)\n"
      "else:\n"
      "  raise AssertionError('no AttributeError')\n")
  assert proc.returncode == 0, proc.stderr[-3000:]


LAUNCH = ["python", "-m", "t5.models.mesh_transformer_main", "--model_dir=m"]


@pytest.mark.parametrize("argv, environ, expected", [
    (LAUNCH + ["--module_import=code_t5", "--gin_file=models/causal_lm_dev.gin"], {}, "1"),
    (LAUNCH + ["--module_import", "code_t5"], {}, "1"),
    (LAUNCH + ["--module_import=code_t5", "--gin_file=reproducible.gin"], {}, "0"),
    (LAUNCH + ["--module_import=code_t5",
               "--gin_param=code_t5.reproducible.bit_identical = True"], {}, "0"),
    # The user's own choice stands; other programs are left alone.
    (LAUNCH + ["--module_import=code_t5"], {"TF_ENABLE_ONEDNN_OPTS": "0"}, "0"),
    (LAUNCH + ["--module_import=code_t5", "--gin_file=reproducible.gin"],
     {"TF_ENABLE_ONEDNN_OPTS": "1"}, "1"),
    (LAUNCH + ["--module_import=my_tasks"], {}, None),
    (["python", "-m", "pytest", "--module_import=code_t5"], {}, None),
])
def test_a_code_t5_launch_turns_onednn_on_unless_reproducible_or_set(argv, environ, expected):
  import _code_t5_mtf_shim as shim  # pylint: disable=g-import-not-at-top
  shim.choose_onednn(argv, environ)
  assert environ.get("TF_ENABLE_ONEDNN_OPTS") == expected
