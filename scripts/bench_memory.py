"""Peak memory of training, per model size: the table behind "does it fit on a GPU / a CPU?".

For each size, trains a few steps through mesh_transformer_main on the CPU mesh with the
size's gin files and records
  * parameters (from the checkpoint, optimizer slots excluded),
  * peak resident memory (RSS) of the training process,
  * checkpoint bytes on disk (weights + Adafactor's factored slots),
  * wall seconds of the whole run (start-up, graph building and the steps).
Needs the dev dataset (`python -m code_t5.data dev`). Prints a table and writes JSON.

  .venv/bin/python scripts/bench_memory.py --sizes=dev,base,large --json=bench_memory.json
"""

import argparse
import glob
import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

from benchlib import DEV_TFDS, QUIET_TF, REPO, mesh_main_command

# Each size as users run it: the dev model with its short context, the others at the code
# sequence lengths (512/128) and mesh-tf's default batch of 2048 tokens.
SIZES = {
    "dev": ["models/shared-prefix_lm_dev.gin"],
    "base": ["models/shared-prefix_lm.gin", "mesh/cpu.gin"],
    "large": ["models/shared-prefix_lm.gin", "models/sizes/large.gin", "mesh/cpu.gin"],
}


def train(size, data_dir, steps):
  """Runs one training job in a child process; returns its measurements."""
  model_dir = tempfile.mkdtemp(prefix=f"bench_memory_{size}_")
  cmd = mesh_main_command(model_dir, data_dir, SIZES[size],
                          ["MIXTURE_NAME = 'flcc_python_full_line'",
                           f"run.train_steps = {steps}",
                           f"utils.run.save_checkpoints_steps = {steps}",
                           "utils.run.iterations_per_loop = 1"])
  start = time.perf_counter()
  proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=QUIET_TF)
  wall = time.perf_counter() - start
  if proc.returncode != 0:
    sys.exit(f"bench_memory: {size} failed:\n{proc.stderr[-3000:]}")
  # ru_maxrss of RUSAGE_CHILDREN is the largest child so far; sizes run smallest first.
  peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  ckpt = tf.train.latest_checkpoint(model_dir)
  params = sum(math.prod(shape) for name, shape in tf.train.list_variables(ckpt)
               if not re.search(r"(_slot_|global_step)", name))
  ckpt_bytes = sum(os.path.getsize(p) for p in glob.glob(ckpt + ".*"))
  return {"size": size, "parameters": params, "peak_rss_gb": peak_kb / 2**20,
          "checkpoint_gb": ckpt_bytes / 2**30,
          "wall_s": wall, "steps": steps}


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--sizes", default="dev,base,large")
  parser.add_argument("--steps", type=int, default=4)
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  rows = []
  for size in args.sizes.split(","):
    if size not in SIZES:
      sys.exit(f"bench_memory: unknown size {size!r}; known: {', '.join(SIZES)}")
    print(f"training {size} for {args.steps} steps ...", file=sys.stderr, flush=True)
    rows.append(train(size, args.data_dir, args.steps))
  print(f"{'size':<6} {'params':>12} {'peak RSS GB':>12} {'ckpt GB':>8} {'wall s':>7}")
  for r in rows:
    print(f"{r['size']:<6} {r['parameters']:>12,} {r['peak_rss_gb']:>12.2f} "
          f"{r['checkpoint_gb']:>8.2f} {r['wall_s']:>7.0f}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=2)


if __name__ == "__main__":
  main()
