"""Several `python -m t5.models.mesh_transformer_main ARGS` runs in one process.

    python tests/mesh_main_runs.py '[[ARGS of run 1], [ARGS of run 2], ...]'

Each run is what the module does for one command line: its flags parsed afresh, gin cleared,
t5's `main` called. Only the imports are shared (half a minute of a 2-core machine per
launch), and what importing code_t5 installs under t5's entry point is installed here too.
Before each run a line `=== mesh_main_runs: run N <time>` goes to stderr; `split_output`
cuts what the runs printed there at those lines, and `losses` reads the per-step training
losses mesh-tf prints there on CPU (`step, tf_loss[...]`).
"""

import json
import re
import sys
import time

MARKER = re.compile(r"^=== mesh_main_runs: run \d+ ([0-9.]+)\n", re.M)
LOSS = re.compile(r"step, tf_loss\[([-0-9.e]+)\]")


def split_output(stderr: str, end: float):
  """[(seconds, what the run printed)] per run, from the process's stderr and its end time."""
  parts = MARKER.split(stderr)
  starts = [float(t) for t in parts[1::2]] + [end]
  return [(b - a, text) for a, b, text in zip(starts, starts[1:], parts[2::2])]


def losses(text: str):
  """A training run's losses, step by step (the step mesh-tf prints beside each is read
  without ordering against the update, so it is not used)."""
  return [float(x) for x in LOSS.findall(text)]


# Two trainings from one checkpoint on the same batches (another mesh, another file system):
# the first step's loss is the same weights on the same batch, only the order of float sums
# differs. The next ones follow an Adafactor update, which turns last-bit differences into
# visibly different steps, as between two runs on one device: up to 1.5e-3 relative in a CI
# run on Zen 1.
FIRST_STEP_RTOL = 1e-5
LOSS_RTOL = 1e-2


def loss_differences(run, reference):
  """Relative differences of two runs' losses, step by step, checked against the bounds."""
  assert len(run) == len(reference), (run, reference)
  differences = [abs(a - b) / abs(b) for a, b in zip(run, reference)]
  assert differences[0] <= FIRST_STEP_RTOL and max(differences) <= LOSS_RTOL, (
      differences, run, reference)
  return differences


def main(runs):
  # pylint: disable=g-import-not-at-top
  from absl import flags
  import gin
  import tensorflow.compat.v1 as tf
  from t5.models import mesh_transformer_main

  from code_t5.upstream import estimator
  from code_t5.upstream import startup

  startup.install()  # what `import code_t5` does under t5's entry point
  estimator.install()
  tf.disable_v2_behavior()
  tf.logging.set_verbosity(tf.logging.INFO)
  for i, args in enumerate(runs):
    sys.argv = ["t5/models/mesh_transformer_main.py", *args]  # what main logs as the command
    flags.FLAGS.unparse_flags()
    flags.FLAGS(sys.argv)
    gin.clear_config()
    sys.stdout.flush()
    sys.stderr.write(f"=== mesh_main_runs: run {i} {time.time():.2f}\n")
    sys.stderr.flush()
    mesh_transformer_main.main([])


if __name__ == "__main__":
  main(json.loads(sys.argv[1]))
