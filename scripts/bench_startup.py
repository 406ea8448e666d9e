"""Start-up: seconds from launch to the end of the first training step, and where they go.

Two measurements, each in a fresh process:
  * imports: `python -c` that imports, in the order mesh_transformer_main pulls them in,
    tensorflow, seqio, mesh_tensorflow, t5.models and code_t5, timing each on top of the ones
    before;
  * a model's training through mesh_transformer_main (3 steps): the dev model on `flcc_python`
    as `make smoke` trains it, or the tiny model of the tests on `flcc_python_full_line`
    (`--model=tiny`), with phases read from the timestamps of the log
    lines that mark them, and the first step's end from the training session's first `run`
    call (timed by a wrapper, see `child` below). A phase whose log line never comes (the
    graph and checkpoint 0, unless `code_t5.startup_writes` asks for them) takes 0 s.
Prints a table and writes JSON.

  .venv/bin/python scripts/bench_startup.py --model=tiny --json=bench_startup.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from benchlib import DEV_TFDS, QUIET_TF, REPO, mesh_main_command

# torch is not among them: code_t5's shim keeps `import t5.models` from importing it.
IMPORTS = ("tensorflow", "seqio", "mesh_tensorflow", "t5.models", "code_t5")
# (gin files, Mixture): the dev model as `make smoke` trains it, the tiny one as the tests do.
MODELS = {
    "dev": (["models/shared-prefix_lm_dev.gin"], "flcc_python"),
    "tiny": (["models/shared-prefix_lm.gin", "mesh/cpu.gin", "models/tiny.gin"],
             "flcc_python_full_line"),
}

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
# Written only when `code_t5.startup_writes` asks (code_t5/upstream/startup.py).
OPTIONAL = ("Saving checkpoints for 0", "Done writing checkpoint.")


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
  import runpy  # pylint: disable=g-import-not-at-top
  sys.argv = ["mesh_transformer_main"] + sys.argv[2:]
  # As `python -m`: code_t5 sees t5's entry point and installs what it installs there.
  runpy.run_module("t5.models.mesh_transformer_main", run_name="__main__", alter_sys=True)


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


def measure_training(data_dir, model, gin_params=()):
  model_dir = tempfile.mkdtemp(prefix="bench_startup_")
  gin_files, mixture = MODELS[model]
  cmd = mesh_main_command(model_dir, data_dir, gin_files,
                          [f"MIXTURE_NAME = '{mixture}'", "run.train_steps = 3", *gin_params],
                          program=[sys.executable, __file__, "--child"])
  launch = time.time()
  proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=QUIET_TF)
  if proc.returncode != 0:
    sys.exit(f"bench_startup: training failed:\n{proc.stderr[-3000:]}")
  times = first_times(proc.stderr)
  phases, previous = [], launch
  for name, marker in PHASES:
    if marker not in times:
      if marker in OPTIONAL:
        phases.append({"phase": name, "s": 0.0, "skipped": True})
        continue
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
    if "FIRST_STEP_DONE" in times:  # later checkpoints log the same lines
      break
  return times


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--model", choices=sorted(MODELS), default="dev")
  parser.add_argument("--gin_param", action="append", default=[],
                      help="more bindings, e.g. 'code_t5.startup_writes.graph = True'")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  imports = measure_imports()
  training = measure_training(args.data_dir, args.model, args.gin_param)
  print(f"launch to the end of the first training step ({args.model} model): "
        f"{training['launch_to_first_step_s']:.1f} s")
  for p in training["phases"]:
    print(f"  {p['s']:6.1f} s  {p['phase']}" + ("  (not written)" if p.get("skipped") else ""))
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
