"""Training throughput: the dev model as users train it, next to the learning bench's GPT peer.

Ours: models/causal_lm_dev.gin through t5's mesh_transformer_main on flcc_python_causal, as
`make smoke` and `scripts/bench_learning.py` train it (8 rows of 160 token positions a step).
The peer: scripts/gpt_peer.py's GPT of the same width, depth, heads and vocabulary, trained by
the learning bench's own `train_peer` on rows of the same size from the same train split
(PyTorch, a thread per core).

Each run trains --warmup + --steps steps, alone on the machine. Its rate is the median over
intervals of 10 steps after the warm-up (a checkpoint's save falls in one interval, which the
median leaves out); its wall rate, those steps over their wall time, saves included. Runs
alternate (ours, peer, ours, peer, ...: --repeats each), and each side's figure is the median
of its runs, printed with their min and max. Token positions a second are steps a second times
a step's rows x positions (both fill their rows: ours packs examples, the peer's windows are
whole).

--levers=NAME,...: ours with one setting changed (LEVERS; NAME+NAME, two), each run paired
with a run of the defaults just before it; the ratio per pair, and its median.
--profile: five traced steps of each after the warm-up (ours: code_t5.step_traces, with
--levers if given; the peer: torch.profiler), their ops' time a step summed by the part of the
model they belong to (PARTS), and the top ops.

  .venv/bin/python scripts/bench_throughput.py --repeats=2 --json=runs/bench/throughput.json
  .venv/bin/python scripts/bench_throughput.py --levers=onednn_off,one_hot_lookup --repeats=2
  .venv/bin/python scripts/bench_throughput.py --profile
"""

import argparse
import collections
import glob
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import DEV_TFDS, QUIET_TF, REPO, mesh_main_command, require_dataset

import bench_learning

MIXTURE = "flcc_python_causal"
PEER_TASK = "flcc_python_full_line"  # the peer reads its train split's files (bench_learning)
INTERVAL = 10  # steps between code_t5/loss summaries (code_t5.progress.summary_steps)
PROFILED = 5  # steps --profile traces on each side

# Ours with one change: (environment, gin params). TensorFlow reads its oneDNN switch, XLA's
# flags and its thread pools' sizes from the environment when imported or first used.
LEVERS = {
    "onednn_on": ({"TF_ENABLE_ONEDNN_OPTS": "1"}, []),
    "onednn_off": ({"TF_ENABLE_ONEDNN_OPTS": "0"}, []),  # TensorFlow's default on the slow class
    # mesh-tf's one-hot product for the embedding's lookup, not code_t5's gather (mesh/cpu.gin)
    "one_hot_lookup": ({}, ["get_vocab_embedding_cls.cls = @transformer.VocabEmbedding"]),
    # Clustering every op fails to compile (the packed rows' slices); fusible ops only.
    "xla": ({"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit "
                            "--tf_xla_ops_to_cluster=FUSIBLE"}, []),
    "inter_op_1": ({"TF_NUM_INTEROP_THREADS": "1"}, []),
    "intra_op_1": ({"TF_NUM_INTRAOP_THREADS": "1"}, []),
    # products as 2-D matmuls, a weight's gradient in column blocks (code_t5/products.py)
    "column_blocks": ({}, ["code_t5.products.column_block = 128"]),
    "bfloat16_activations": ({}, ["get_variable_dtype.activation_dtype = 'bfloat16'"]),
}

# Where a traced op's time goes, by the first part whose test its node name (or, for the
# embedding's lookup, its op or inputs) passes: mesh-tf names a graph's ops by the layer that
# made them, and the gradients and optimizer ops by their variable's.
LOOKUP_OPS = ("GatherV2", "UnsortedSegmentSum")
PARTS = [
    ("input pipeline", r"IteratorGetNext"),
    ("optimizer (Adafactor) and assignments", r"/adafactor|^assign"),
    ("embedding lookup", r"^transformer/(one_hot|gather)\b"),
    ("attention (with its position bias)", r"/SelfAttention/"),
    ("feed-forward", r"/DenseReluDense/"),
    ("layer norms and residuals", r"/block_\d+/|rms_norm"),
    ("logits, softmax and loss", r"^transformer/"),
    ("other", r""),
]


def lever(name):
  """(environment, gin params) of a lever's name, or of several joined by "+"."""
  env, params = {}, []
  for part in filter(None, name.split("+")):
    env.update(LEVERS[part][0])
    params += LEVERS[part][1]
  return env, params


def our_command(model_dir, data_dir, steps, gin_params=()):
  return mesh_main_command(
      model_dir, data_dir, [bench_learning.MODEL_GIN],
      [f"MIXTURE_NAME = '{MIXTURE}'", f"run.train_steps = {steps}",
       f"code_t5.progress.summary_steps = {INTERVAL}", *gin_params])


def interval_rates(times, warmup):
  """{step: wall time} -> (median steps/s over INTERVAL-step intervals after `warmup`, steps
  after `warmup` over their wall time)."""
  steps = sorted(s for s in times if s >= warmup)
  if len(steps) < 2:
    raise ValueError(f"fewer than two timed steps after the warm-up ({sorted(times)})")
  rates = [(b - a) / (times[b] - times[a]) for a, b in zip(steps, steps[1:])]
  return statistics.median(rates), (steps[-1] - steps[0]) / (times[steps[-1]] - times[steps[0]])


def loss_times(model_dir):
  """{step: wall time} of the code_t5/loss summaries in `model_dir`'s event files."""
  from code_t5 import progress, run_records  # pylint: disable=g-import-not-at-top
  return {step: wall for step, wall, _ in
          run_records.read_scalars(model_dir).get(progress.LOSS_TAG, [])}


def run_ours(data_dir, steps, warmup, env=None, gin_params=(), trace_every=0):
  """Ours for `warmup` + `steps` steps in a new model dir: its rates, and with `trace_every`,
  the timelines of every that many steps after the warm-up (code_t5.step_traces). The model
  dir is removed once read; a failed run's is kept, with its train.log."""
  model_dir = tempfile.mkdtemp(prefix="bench_throughput_")
  params = list(gin_params)
  if trace_every:
    params.append(f"code_t5.step_traces.every = {trace_every}")
  proc = subprocess.run(our_command(model_dir, data_dir, warmup + steps, params), cwd=REPO,
                        capture_output=True, text=True, env=dict(QUIET_TF, **(env or {})))
  if proc.returncode != 0:  # a lever TensorFlow cannot run: said, and the bench goes on
    with open(os.path.join(model_dir, "train.log"), "w") as f:
      f.write(proc.stderr)
    error = [line for line in proc.stderr.splitlines() if "code_t5: error" in line or
             "Error" in line][-1:] or proc.stderr.strip().splitlines()[-1:]
    print(f"bench_throughput: this training failed ({os.path.join(model_dir, 'train.log')}): "
          f"{error[0][:300] if error else proc.returncode}", file=sys.stderr, flush=True)
    return {"error": error[0][:300] if error else str(proc.returncode)}
  median, wall = interval_rates(loss_times(model_dir), warmup)
  result = {"steps_per_s": median, "wall_steps_per_s": wall}
  if trace_every:
    result["traces"] = []
    for path in glob.glob(os.path.join(model_dir, "timeline-*.json")):
      if int(re.search(r"timeline-(\d+)", path).group(1)) > warmup:
        with open(path) as f:
          result["traces"].append(json.load(f)["traceEvents"])
  shutil.rmtree(model_dir)  # its checkpoints: tens of MB a run
  return result


def run_peer(steps, warmup, rows, context, profiled_steps=0):
  """The peer for `warmup` + `steps` steps as the learning bench trains it: its rates, and with
  `profiled_steps`, torch.profiler's totals of that many steps' ops after the warm-up."""
  import torch  # pylint: disable=g-import-not-at-top
  times, profiler = {}, None
  if profiled_steps:
    profiler = torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=warmup, warmup=0, active=profiled_steps))
    profiler.start()

  def on_step(step, *unused):
    times[step] = time.perf_counter()
    if profiler:
      profiler.step()

  total = warmup + steps
  with tempfile.TemporaryDirectory(prefix="bench_throughput_peer_") as model_dir:
    bench_learning.train_peer(model_dir, total, rows, context, PEER_TASK,
                              bench_learning.peer_shape(), at_steps=range(1, total + 1),
                              on_step=on_step)
  at_intervals = {s: t for s, t in times.items() if s % INTERVAL == 0}
  median, wall = interval_rates(at_intervals, warmup)
  result = {"steps_per_s": median, "wall_steps_per_s": wall}
  if profiler:
    profiler.stop()
    result["ops"] = [{"name": e.key, "self_us": e.self_cpu_time_total, "count": e.count}
                     for e in profiler.key_averages()]
    result["profiled_steps"] = profiled_steps
  return result


def part_of(event):
  """PARTS' name for a traced op."""
  args = event["args"]
  inputs = [v for k, v in args.items() if k.startswith("input")]
  if args.get("op") in LOOKUP_OPS or any(v.startswith("transformer/one_hot/") for v in inputs):
    return "embedding lookup"
  return next(part for part, pattern in PARTS if re.search(pattern, args["name"]))


def our_profile(traces):
  """(a step's ms from its first op to its last, {part: ms}, {op type: ms}) of timelines'
  compute ops, means over the traced steps; an op's ms is its own wall time, so ops that ran
  side by side on two threads count twice."""
  parts, types, walls = collections.Counter(), collections.Counter(), []
  for trace in traces:
    ops = [e for e in trace if e.get("ph") == "X" and "name" in e.get("args", {})]
    for e in ops:
      parts[part_of(e)] += e["dur"] / 1000 / len(traces)
      types[e["args"].get("op", e["name"])] += e["dur"] / 1000 / len(traces)
    walls.append((max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)) / 1000)
  return statistics.mean(walls), parts, types


def print_profiles(ours, peer, top):
  wall, parts, types = our_profile(ours["traces"])
  print(f"\nours: {len(ours['traces'])} traced steps, {wall:.1f} ms from a step's first op to "
        f"its last; ops' time, {sum(parts.values()):.1f} ms a step over all threads, by part:")
  for part, ms in parts.most_common():
    print(f"  {part:<30} {ms:8.1f} ms")
  print("ours: top op types")
  for name, ms in types.most_common(top):
    print(f"  {name:<30} {ms:8.1f} ms")
  ops = sorted(peer["ops"], key=lambda o: -o["self_us"])
  steps = peer["profiled_steps"]
  print(f"\npeer: {steps} profiled steps, ops' self time "
        f"{sum(o['self_us'] for o in ops) / 1000 / steps:.1f} ms a step; top ops")
  for o in ops[:top]:
    print(f"  {o['name']:<45} {o['self_us'] / 1000 / steps:8.1f} ms  x{o['count'] / steps:g}")


def spread(values):
  return {"median": statistics.median(values), "min": min(values), "max": max(values),
          "runs": values}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--steps", type=int, default=200, help="timed steps a run")
  parser.add_argument("--warmup", type=int, default=30, help="steps before the timed ones")
  parser.add_argument("--repeats", type=int, default=1, help="runs of each side")
  parser.add_argument("--levers", default="", help=f"comma-separated, of {', '.join(LEVERS)}")
  parser.add_argument("--no_peer", action="store_true")
  parser.add_argument("--profile", action="store_true")
  parser.add_argument("--top", type=int, default=12, help="ops listed by --profile")
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  levers = [name for name in args.levers.split(",") if name]
  unknown = [part for name in levers for part in name.split("+") if part not in LEVERS]
  if unknown:
    parser.error(f"unknown lever {unknown[0]!r}; known: {', '.join(LEVERS)}")
  require_dataset("bench_throughput", args.data_dir, "python")
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  import code_t5  # pylint: disable=g-import-not-at-top,unused-import
  seqio.set_tfds_data_dir_override(args.data_dir)
  rows, context = bench_learning.positions_per_step(tempfile.mkdtemp(), bench_learning.MODEL_GIN)
  say = lambda text: print(f"bench_throughput: {text}", file=sys.stderr, flush=True)

  if args.profile:
    env, params = lever("+".join(levers))  # ours profiled with these levers
    say(f"ours{' with ' + ', '.join(levers) if levers else ''}: {PROFILED} steps traced after "
        f"{args.warmup} ...")
    ours = run_ours(args.data_dir, PROFILED * INTERVAL, args.warmup, env, params,
                    trace_every=INTERVAL)
    say(f"peer: {PROFILED} steps profiled after {args.warmup} ...")
    peer = run_peer(PROFILED + INTERVAL, args.warmup, rows, context, profiled_steps=PROFILED)
    print_profiles(ours, peer, args.top)
    if args.json:
      wall, parts, types = our_profile(ours["traces"])
      with open(args.json, "w") as f:
        json.dump({"ours": {"wall_ms": wall, "parts": parts, "op_types": types},
                   "peer": peer}, f, indent=1)
    return

  runs = collections.defaultdict(list)
  for i in range(args.repeats):
    say(f"run {i + 1}/{args.repeats}: ours (defaults), {args.warmup} + {args.steps} steps ...")
    runs["ours"].append(run_ours(args.data_dir, args.steps, args.warmup))
    if not args.no_peer:
      say(f"run {i + 1}/{args.repeats}: peer, {args.warmup} + {args.steps} steps ...")
      runs["peer"].append(run_peer(args.steps, args.warmup, rows, context))
    before = runs["ours"][-1]
    for k, name in enumerate(levers):
      if k:  # each lever beside a defaults' run of its own; the first, beside the repeat's
        say(f"run {i + 1}/{args.repeats}: ours (defaults), before {name} ...")
        before = run_ours(args.data_dir, args.steps, args.warmup)
      runs[f"pair:{name}"].append(before)
      say(f"run {i + 1}/{args.repeats}: ours, {name} ...")
      env, params = lever(name)
      runs[name].append(run_ours(args.data_dir, args.steps, args.warmup, env, params))

  positions = rows * context
  table = {}
  for who in ["ours", "peer", *levers]:
    if who in runs and any("error" in r for r in runs[who]):
      print(f"{who}: failed: {next(r['error'] for r in runs[who] if 'error' in r)}")
    elif who in runs:
      table[who] = {key: spread([r[key] for r in runs[who]])
                    for key in ("steps_per_s", "wall_steps_per_s")}
  for name in levers:
    if name not in table or any("error" in r for r in runs[f"pair:{name}"]):
      continue
    table[name]["vs_defaults"] = spread([r["steps_per_s"] / d["steps_per_s"] for r, d in
                                         zip(runs[name], runs[f"pair:{name}"])])
  print(f"\n{rows} rows x {context} positions a step, {args.steps} timed steps after "
        f"{args.warmup}, {args.repeats} run(s) each; median (min .. max)")
  print(f"{'who':<22} {'steps/s':>20} {'positions/s':>10} {'wall steps/s':>14} {'ratio':>18}")
  for who, row in table.items():
    s, w = row["steps_per_s"], row["wall_steps_per_s"]
    ratio = row.get("vs_defaults")
    if who == "ours" and "peer" in table:
      ratio = spread([o["steps_per_s"] / p["steps_per_s"]
                      for o, p in zip(runs["ours"], runs["peer"])])
      row["vs_peer"] = ratio
    print(f"{who:<22} {s['median']:>7.2f} ({s['min']:.2f} .. {s['max']:.2f}) "
          f"{s['median'] * positions:>10,.0f} {w['median']:>14.2f} " +
          (f"{ratio['median']:>6.2f} ({ratio['min']:.2f} .. {ratio['max']:.2f})" if ratio
           else ""))
  print("ratio: ours over the peer, each lever over the defaults' run beside it")
  if args.json:
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
      json.dump({"rows": rows, "context": context, "steps": args.steps, "warmup": args.warmup,
                 "table": table}, f, indent=1)


if __name__ == "__main__":
  main()
