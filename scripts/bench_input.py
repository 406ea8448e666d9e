"""Does input or compute bound training? Input pipeline rate next to training's consumption.

For each task on the dev dataset (run `python -m code_t5.data dev` first), measures
  * input: packed rows/s, examples/s and non-padding tokens/s of exactly the dataset that
    mesh_transformer_main trains on (t5's mesh_train_dataset_fn, packing on), and
  * training: rows/s the dev model consumes, from `global_step/sec` of a short training run
    through mesh_transformer_main (--train_steps steps, first loop skipped as warm-up).
Prints a table and writes JSON.

  .venv/bin/python scripts/bench_input.py --json=bench_input.json
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile
import time

from benchlib import DEV_TFDS, QUIET_TF, REPO, gin_literals, mesh_main_command
TASKS = ("flcc_python_full_line", "flcc_python_prefix_lm", "flcc_python")


def dev_run_settings():
  """Sequence lengths and rows per batch of models/shared-prefix_lm_dev.gin."""
  bindings = gin_literals("sequence_lengths/dev.gin")
  method, rows = bindings["utils.run.batch_size"]
  assert method == "sequences_per_batch", method
  return bindings["utils.run.sequence_length"], rows


def measure_input(task, lengths, seconds):
  from t5.models import mesh_transformer  # pylint: disable=g-import-not-at-top
  ds = mesh_transformer.mesh_train_dataset_fn(task, lengths, seed=0)
  it = ds.as_numpy_iterator()
  next(it)  # build the pipeline outside the clock
  rows = examples = tokens = 0
  start = time.perf_counter()
  while time.perf_counter() - start < seconds:
    row = next(it)
    rows += 1
    tokens += int((row["targets"] != 0).sum() + (row["inputs"] != 0).sum())
    examples += int(row["targets_segmentation"].max())
  elapsed = time.perf_counter() - start
  return {"rows_per_s": rows / elapsed, "examples_per_s": examples / elapsed,
          "tokens_per_s": tokens / elapsed}


def measure_training(task, data_dir, steps):
  model_dir = tempfile.mkdtemp(prefix="bench_input_model_")
  proc = subprocess.run(
      mesh_main_command(model_dir, data_dir, ["models/shared-prefix_lm_dev.gin"],
                        [f"MIXTURE_NAME = '{task}'", f"run.train_steps = {steps}",
                         "utils.run.save_checkpoints_steps = 100000"]),
      cwd=REPO, capture_output=True, text=True, env=QUIET_TF)
  if proc.returncode != 0:
    raise SystemExit(f"training {task} failed:\n{proc.stderr[-3000:]}")
  rates = [float(x) for x in re.findall(r"global_step/sec: ([0-9.]+)", proc.stderr)]
  return statistics.median(rates[1:] or rates)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--seconds", type=float, default=20.0, help="per input measurement")
  parser.add_argument("--train_steps", type=int, default=60)
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  import code_t5  # pylint: disable=g-import-not-at-top,unused-import
  seqio.set_tfds_data_dir_override(args.data_dir)
  lengths, rows_per_step = dev_run_settings()

  results = []
  for task in TASKS:
    pipeline = measure_input(task, lengths, args.seconds)
    steps_per_s = measure_training(task, args.data_dir, args.train_steps)
    train_rows = steps_per_s * rows_per_step
    results.append({"task": task, "input": pipeline, "train_steps_per_s": steps_per_s,
                    "train_rows_per_s": train_rows,
                    "bound": "input" if pipeline["rows_per_s"] < train_rows else "compute"})

  print(f"\ndev model, sequence lengths {lengths}, {rows_per_step} packed rows per step, "
        f"{os.cpu_count()} CPUs")
  print(f"{'task':<24}{'input rows/s':>13}{'examples/s':>12}{'tokens/s':>10}"
        f"{'train rows/s':>14}{'bound by':>10}")
  for r in results:
    p = r["input"]
    print(f"{r['task']:<24}{p['rows_per_s']:>13.1f}{p['examples_per_s']:>12.1f}"
          f"{p['tokens_per_s']:>10.0f}{r['train_rows_per_s']:>14.1f}{r['bound']:>10}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"sequence_length": lengths, "rows_per_step": rows_per_step,
                 "results": results}, f, indent=1)


if __name__ == "__main__":
  main()
