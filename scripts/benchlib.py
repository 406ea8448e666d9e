"""What the benchmarks (and the tests, through conftest) share: the repository root and
mesh_transformer_main as users run it."""

import os
import sys

# The checkout the script was started from, as typed: Python resolves symlinks in an imported
# module's __file__, and a workspace that links scripts/ in must keep its own data/ and runs/.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
DEV_TFDS = os.path.join(REPO, "data", "dev", "tfds")
QUIET_TF = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def gin_literals(path):
  """The literal bindings of a gin file under gin_configs/ (e.g. "sequence_lengths/dev.gin")
  and of the files it includes, as gin applies them (an include's first, the file's own
  over them): {"utils.run.sequence_length": {...}, "d_model": 256, ...}."""
  import code_t5  # pylint: disable=g-import-not-at-top
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  # The files the run reads: gin's search path, not REPO (a pytest's argv[0] is not a script).
  return _text_literals(files.read_text(os.path.join(code_t5.gin_configs_dir(), path)))


def params_literals(gin_params):
  """The literal bindings of --gin_param's, in order, an `include` among them as gin_literals
  reads the file."""
  literals = {}
  for param in gin_params:
    literals.update(_text_literals(param))
  return literals


def _text_literals(text):
  """gin_literals of gin text: its includes' first, its own bindings over them."""
  from code_t5 import gin_config  # pylint: disable=g-import-not-at-top
  literals = {}
  for included in gin_config.included_files_of(text):
    literals.update(gin_literals(included))
  return {**literals, **gin_config.literal_bindings_of(text)}


def launch_lengths(gin_files, gin_params=()):
  """utils.run.sequence_length of a launch with these --gin_file's, then --gin_param's, as gin
  resolves it: a mode file's decoding_lengths.gin binds it to DECODING_LENGTHS (gin_literals
  gives that binding, a macro's value, as None), a later binding replaces it."""
  literals = {k: v for f in gin_files for k, v in gin_literals(f).items()}
  literals.update(params_literals(gin_params))
  lengths = literals.get("utils.run.sequence_length")
  return literals.get("DECODING_LENGTHS") if lengths is None else lengths


def require_dataset(script, data_dir, language="python"):
  """Ends `script` in one line where flcc/<language> is not built in `data_dir`."""
  from code_t5.data import builder  # pylint: disable=g-import-not-at-top
  if builder.finished_builder(data_dir, language) is None:
    sys.exit(f"{script}: {builder.builder_dir(data_dir, language)}: not built: run "
             f"`python -m code_t5.data dev` for the dev data, or give --data_dir")


def require_checkpoint(script, model_dir):
  """The step of `model_dir`'s latest checkpoint; `script` ends in one line where it has none."""
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  step = files.latest_checkpoint_step(model_dir)
  if step is None:
    sys.exit(f"{script}: no checkpoint in {model_dir}: train one there first, or give the "
             "--model_dir that holds it")
  return step


def mesh_main_command(model_dir, data_dir, gin_files, gin_params, flags=(), program=None):
  """t5's mesh_transformer_main with code_t5, as a user types it in REPO; `program` replaces
  `python -m t5.models.mesh_transformer_main`."""
  cmd = list(program or [sys.executable, "-m", "t5.models.mesh_transformer_main"])
  cmd += [f"--model_dir={model_dir}", f"--t5_tfds_data_dir={data_dir}", "--module_import=code_t5",
          *flags]
  cmd += [f"--gin_file={f}" for f in gin_files]
  return cmd + [f"--gin_param={p}" for p in gin_params]
