"""Start-up: seconds from launch to the end of the first training step, and where they go.

Two measurements, each in a fresh process:
  * imports: `python -c` that imports, in the order mesh_transformer_main pulls them in,
    tensorflow, torch (t5.models imports it), seqio, mesh_tensorflow, t5.models and code_t5,
    timing each on top of the ones before;
  * the dev model's training through mesh_transformer_main (3 steps), with phases read from
    the timestamps of the log lines that mark them, and the first step's end from the
    training session's first `run` call (timed by a wrapper, see `child` below).
Prints a table and writes JSON.

  .venv/bin/python scripts/bench_startup.py --json=bench_startup.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchlib import DEV_TFDS, QUIET_TF, REPO, mesh_main_command

IMPORTS = ("tensorflow", "torch", "seqio", "mesh_tensorflow", "t5.models", "code_t5")

# (phase name, log message that ends it), in order; each phase starts where the previous ends.
PHASES = [
    ("python, imports, flags and gin files", "model_type="),
    ("Estimator set-up", "Load dataset info from"),
    ("input pipeline: seqio Tasks, TFDS reader, in-memory cache", "Calling model_fn."),
    ("graph: mesh-tf model, lowering, optimizer", "Done calling model_fn."),
    ("Estimator hooks, savers and summary ops", "Graph was finalized."),
    ("session and variable initialisation", "Done with copy master to slices."),
    # CheckpointSaverHook.after_create_session writes the graph twice before it saves.
    ("graph.pbtxt and the graph in the event file", "Saving checkpoints for 0"),
    ("checkpoint 0: weights and model.ckpt-0.meta", "Done writing checkpoint."),
    ("first training step", "FIRST_STEP_DONE"),
]


def child():
  """Runs mesh_transformer_main in this process and logs when the first step ends."""
  import logging  # pylint: disable=g-import-not-at-top
  from tensorflow.python.training import monitored_session  # pylint: disable=g-import-not-at-top
  original_run = monitored_session.MonitoredSession.run
  calls = []

  def timed_run(self, *args, **kwargs):
    out = original_run(self, *args, **kwargs)
    calls.append(time.time())
    if len(calls) == 1:
      logging.getLogger("tensorflow").info("FIRST_STEP_DONE")
    return out
  monitored_session.MonitoredSession.run = timed_run
  from t5.models import mesh_transformer_main  # pylint: disable=g-import-not-at-top
  sys.argv = ["mesh_transformer_main"] + sys.argv[2:]
  mesh_transformer_main.console_entry_point()


def measure_imports():
  code = ("import time, json; t = time.time(); out = {}\n"
          f"for name in {IMPORTS!r}:\n"
          "  __import__(name); now = time.time(); out[name] = now - t; t = now\n"
          "print(json.dumps(out))")
  start = time.time()
  proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                        text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"), check=True)
  wall = time.time() - start
  steps = json.loads(proc.stdout.strip().splitlines()[-1])
  return {"wall_s": wall, "interpreter_s": wall - sum(steps.values()), "imports_s": steps}


def measure_training(data_dir):
  model_dir = tempfile.mkdtemp(prefix="bench_startup_")
  cmd = mesh_main_command(model_dir, data_dir, ["models/shared-prefix_lm_dev.gin"],
                          ["MIXTURE_NAME = 'flcc_python'", "run.train_steps = 3"],
                          main=[sys.executable, __file__, "--child"])
  launch = time.time()
  proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=QUIET_TF)
  if proc.returncode != 0:
    sys.exit(f"bench_startup: training failed:\n{proc.stderr[-3000:]}")
  times = first_times(proc.stderr)
  phases, previous = [], launch
  for name, marker in PHASES:
    if marker not in times:
      sys.exit(f"bench_startup: no log line {marker!r}; mesh-tf's logging changed?")
    phases.append({"phase": name, "s": times[marker] - previous})
    previous = times[marker]
  return {"launch_to_first_step_s": previous - launch, "phases": phases}


def first_times(log):
  """Wall time of the first absl log line containing each marker."""
  import datetime  # pylint: disable=g-import-not-at-top
  year = datetime.date.today().year
  times = {}
  for line in log.splitlines():
    # absl format: I1122 07:36:15.557138 <thread> file.py:50] message
    if len(line) < 22 or line[0] not in "IWE" or not line[1:5].isdigit():
      continue
    for _, marker in PHASES:
      if marker not in times and marker in line:
        stamp = datetime.datetime.strptime(f"{year}{line[1:21]}", "%Y%m%d %H:%M:%S.%f")
        times[marker] = stamp.timestamp()
  return times


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  imports = measure_imports()
  training = measure_training(args.data_dir)
  print(f"launch to the end of the first training step (dev model): "
        f"{training['launch_to_first_step_s']:.1f} s")
  for p in training["phases"]:
    print(f"  {p['s']:6.1f} s  {p['phase']}")
  print(f"imports alone, in a fresh process ({imports['wall_s']:.1f} s with the interpreter):")
  for name, seconds in imports["imports_s"].items():
    print(f"  {seconds:6.1f} s  import {name}")
  report = {"imports": imports, "training": training}
  if args.json:
    with open(args.json, "w") as f:
      json.dump(report, f, indent=2)
  return report


if __name__ == "__main__":
  if len(sys.argv) > 1 and sys.argv[1] == "--child":
    child()
  else:
    main()
