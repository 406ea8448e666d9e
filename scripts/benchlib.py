"""What the benchmarks share: the repository root and mesh_transformer_main as users run it."""

import ast
import os
import re
import sys

# The checkout the script was started from, as typed: Python resolves symlinks in an imported
# module's __file__, and a workspace that links scripts/ in must keep its own data/ and runs/.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
DEV_TFDS = os.path.join(REPO, "data", "dev", "tfds")
QUIET_TF = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def gin_sequence_length(path):
  """`utils.run.sequence_length` set in a gin file: one under gin_configs/, e.g.
  sequence_lengths/dev.gin, or an absolute path, e.g. a run's operative_config.gin."""
  with open(os.path.join(REPO, "gin_configs", path)) as f:  # an absolute path stays as is
    text = f.read()
  return ast.literal_eval(re.search(r"sequence_length = (\{.*\})", text).group(1))


def mesh_main_command(model_dir, data_dir, gin_files, gin_params, main=None):
  """t5's mesh_transformer_main with code_t5 (run from REPO); `main` replaces the `-m` part."""
  cmd = main or [sys.executable, "-m", "t5.models.mesh_transformer_main"]
  cmd = cmd + ["--module_import=code_t5", f"--model_dir={model_dir}",
               f"--t5_tfds_data_dir={data_dir}", "--gin_location_prefix=gin_configs/"]
  cmd += [f"--gin_file={f}" for f in gin_files]
  return cmd + [f"--gin_param={p}" for p in gin_params]
