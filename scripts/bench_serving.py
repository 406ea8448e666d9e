"""How long a suggestion takes: an exported model asked as an editor asks it, one prefix a call.

For the latest checkpoint of --model_dir (a model of --gin_file, default the dev model):
1. Exports it (`export.gin`, one prefix a call: `utils.run.batch_size = ("sequences_per_batch",
   1)`; mesh-tf pads every call to the export's batch size) once per decoding, each a
   SavedModel under --export_root:
     greedy     the export's default decoding
     read       greedy to one token: reading the prefix and one step, the part of a call
                that does not depend on the completion's length
     beam<k>    the line search (`beam_search.gin`) with k beams, for each k of --beams: a
                beam search that ends at the line end and stops once no open beam can beat
                the best finished one
2. For each SavedModel and each --threads count, in a process of its own that holds only
   TensorFlow and tensorflow_text (as a serving client would, its intra- and inter-op threads
   set to that count): the seconds to load it, the first call (graph set-up) on its own, then
   one call per prefix: --calls prefixes of each length class of the window the export reads
   (decoding_lengths.gin),
     short   under a quarter of the window
     medium  a quarter of the window to all of it
     full    longer than the window (the export keeps its last lines that fit)
   taken from the validation split of the full-line Task (the eval's examples, in its order);
   the latency of each call (p50, p95, max), the characters it returned, and the process's
   peak RSS.
3. The size of each SavedModel on disk.

Prints a table and writes JSON (--json). The latency of a generated completion grows with its
length: `read` is the floor, and the line's length and the decoding do the rest.

  .venv/bin/python scripts/bench_serving.py --model_dir=runs/rows8 --json=runs/serving_dev.json
  .venv/bin/python scripts/bench_serving.py --model_dir=runs/tiny --gin_file=models/tiny.gin \\
      --saved_model=greedy=runs/tiny_export/1234 --threads=1 --calls=2   # the tests' mode
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchlib import (DEV_TFDS, QUIET_TF, REPO, launch_lengths, mesh_main_command,
                      require_checkpoint, require_dataset)

MODEL_GIN = "models/causal_lm_dev.gin"
MIXTURE = "flcc_python_causal"  # the export reads its vocabulary; the dev model's mixture
EVAL_TASK = "flcc_python_full_line"
CLASSES = ("short", "medium", "full")

# The serving client: TensorFlow and tensorflow_text only, one prefix a call.
CLIENT = r"""
import json, resource, sys, time
import tensorflow as tf
threads = int(sys.argv[2])
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(threads)
import tensorflow_text  # noqa: F401  (the SavedModel's sentencepiece ops)
start = time.perf_counter()
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
load_s = time.perf_counter() - start
prefixes = json.loads(sys.stdin.read())

def call(prefix):
  start = time.perf_counter()
  out = serve(inputs=tf.constant([prefix]))["outputs"].numpy()[0]
  return time.perf_counter() - start, out.decode("utf-8", "replace")

first_s, _ = call(prefixes[0][1])
calls = []
for length_class, prefix in prefixes:
  seconds, out = call(prefix)
  calls.append([length_class, seconds, len(out.split("\n")[0]), len(out)])
print(json.dumps({"load_s": load_s, "first_s": first_s, "calls": calls,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def decodings(beams):
  """{name: (gin files after export.gin, gin params)} for greedy, read and each beam size."""
  out = {"greedy": ([], []), "read": ([], [])}  # read: its targets length set in export()
  for k in beams:
    out[f"beam{k}"] = (["beam_search.gin"], [f"code_t5.prefix_lm_beam_search.beam_size = {k}"])
  return out


def export(model_dir, data_dir, gin_files, gin_params, export_root, name, extra_files,
           extra_params, lengths):
  """Exports the latest checkpoint with one decoding; returns the SavedModel's path."""
  export_dir = os.path.join(export_root, name)
  params = [*gin_params, f"EXPORT_PATH = '{export_dir}'",
            "utils.run.batch_size = ('sequences_per_batch', 1)", *extra_params]
  if name == "read":
    params.append(f"utils.run.sequence_length = {{'inputs': {lengths['inputs']}, "
                  "'targets': 1}")
  cmd = mesh_main_command(model_dir, data_dir, [*gin_files, "export.gin", *extra_files],
                          params)
  start = time.perf_counter()
  proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=QUIET_TF)
  if proc.returncode != 0:
    sys.exit(f"bench_serving: the {name} export failed:\n{proc.stderr[-3000:]}")
  saved = sorted(d for d in os.listdir(export_dir) if d.isdigit())
  print(f"exported {name} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
  return os.path.join(export_dir, saved[-1])


def prefixes_by_length(data_dir, input_length, calls):
  """[(length class, prefix)]: the first `calls` prefixes of each class among the full-line
  Task's validation examples, by how many tokens of the model's window they fill."""
  import seqio  # pylint: disable=g-import-not-at-top
  import code_t5  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from code_t5 import baselines  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(data_dir)
  vocabulary = seqio.get_mixture_or_task(EVAL_TASK).output_features["inputs"].vocabulary
  chosen = {c: [] for c in CLASSES}
  for prefix, _ in baselines.task_examples(EVAL_TASK, "validation", 4096):
    tokens = len(vocabulary.encode(prefix))
    length_class = ("short" if tokens < input_length / 4 else
                    "medium" if tokens <= input_length else "full")
    if len(chosen[length_class]) < calls:
      chosen[length_class].append(prefix)
    if all(len(v) >= calls for v in chosen.values()):
      break
  missing = [c for c in CLASSES if not chosen[c]]
  if missing:
    print(f"bench_serving: no validation prefix of class {', '.join(missing)}", file=sys.stderr)
  return [(c, p) for c in CLASSES for p in chosen[c]]


def serve(saved_model, threads, prefixes):
  """The client's measurements of one SavedModel at one thread count."""
  proc = subprocess.run([sys.executable, "-c", CLIENT, saved_model, str(threads)],
                        input=json.dumps(prefixes), capture_output=True, text=True,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if proc.returncode != 0:
    sys.exit(f"bench_serving: serving {saved_model} failed:\n{proc.stderr[-3000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def summary(measured, saved_model):
  """Latency percentiles in ms, overall and per length class, and the rest."""
  def stats(seconds):
    ms = np.array(seconds) * 1000
    return ({"calls": len(ms), "p50_ms": float(np.percentile(ms, 50)),
             "p95_ms": float(np.percentile(ms, 95)), "max_ms": float(ms.max())}
            if len(ms) else {"calls": 0})
  calls = measured["calls"]
  disk = sum(os.path.getsize(os.path.join(root, f))
             for root, _, names in os.walk(saved_model) for f in names)
  return {
      **stats([s for _, s, _, _ in calls]),
      "by_length": {c: stats([s for k, s, _, _ in calls if k == c]) for c in CLASSES},
      "mean_line_chars": float(np.mean([n for _, _, n, _ in calls])) if calls else 0.0,
      "mean_output_chars": float(np.mean([n for _, _, _, n in calls])) if calls else 0.0,
      "first_call_ms": measured["first_s"] * 1000, "load_s": measured["load_s"],
      "peak_rss_mb": measured["peak_rss_mb"], "disk_mb": disk / 2**20,
  }


def table(results):
  rows = ["| decoding | threads | p50 ms | p95 ms | max ms | p50 short / medium / full | "
          "first call ms | load s | chars of the line / out | peak RSS MB | disk MB |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
  for r in results:
    by = " / ".join(f"{r['by_length'][c].get('p50_ms', float('nan')):.0f}" for c in CLASSES)
    rows.append(f"| {r['decoding']} | {r['threads']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | "
                f"{r['max_ms']:.0f} | {by} | {r['first_call_ms']:.0f} | {r['load_s']:.1f} | "
                f"{r['mean_line_chars']:.0f} / {r['mean_output_chars']:.0f} | {r['peak_rss_mb']:.0f} | {r['disk_mb']:.1f} |")
  return "\n".join(rows)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
  parser.add_argument("--model_dir", required=True, help="holds the checkpoint to export")
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--model_gin", default=MODEL_GIN)
  parser.add_argument("--gin_file", action="append", default=[],
                      help="after --model_gin, as the model was trained (models/tiny.gin)")
  parser.add_argument("--gin_param", action="append", default=[])
  parser.add_argument("--beams", default="1,3,5",
                      help="beam sizes, comma-separated; empty: greedy and read only")
  parser.add_argument("--threads", default="1,2")
  parser.add_argument("--calls", type=int, default=20, help="prefixes of each length class")
  parser.add_argument("--export_root", default=None,
                      help="where the SavedModels go (default: a new temporary folder)")
  parser.add_argument("--mixture", default=MIXTURE,
                      help="the model's MIXTURE_NAME (its vocabulary is the export's)")
  parser.add_argument("--saved_model", action="append", default=[],
                      help="NAME=PATH of a SavedModel export mode wrote: measured as it is, "
                           "with no exports of its own (give the --gin_file's it was "
                           "exported with: they give the window its prefixes are classed by)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args(argv)
  beams = [int(k) for k in args.beams.split(",") if k.strip()]
  threads = [int(t) for t in args.threads.split(",") if t.strip()]
  gin_files = [args.model_gin, *args.gin_file]
  # The window the exports read (decoding_lengths.gin), as export.gin gives it after the files.
  lengths = launch_lengths([*gin_files, "export.gin"], args.gin_param)
  if not lengths:
    sys.exit(f"bench_serving: {' '.join(gin_files)} and export.gin set no DECODING_LENGTHS "
             "(sequence_lengths/*.gin set it): give the model's gin files")
  export_root = args.export_root or tempfile.mkdtemp(prefix="bench_serving_")
  if args.saved_model:
    export_root = None
  require_dataset("bench_serving", args.data_dir)
  if not args.saved_model:
    require_checkpoint("bench_serving", args.model_dir)
  prefixes = prefixes_by_length(args.data_dir, lengths["inputs"], args.calls)
  if args.saved_model:
    saved_models = dict(item.split("=", 1) for item in args.saved_model)
  else:
    saved_models = {name: export(args.model_dir, args.data_dir, gin_files,
                                 [*args.gin_param, f"MIXTURE_NAME = '{args.mixture}'"],
                                 export_root, name, extra_files, extra_params, lengths)
                    for name, (extra_files, extra_params) in decodings(beams).items()}
  results = []
  for name, saved_model in saved_models.items():
    for count in threads:
      measured = serve(saved_model, count, prefixes)
      results.append({"decoding": name, "threads": count, **summary(measured, saved_model)})
      print(f"{name}, {count} thread(s): p50 {results[-1]['p50_ms']:.0f} ms", file=sys.stderr)
  report = {"model_dir": args.model_dir, "gin_files": gin_files, "gin_params": args.gin_param,
            "sequence_length": lengths, "prefixes": {c: sum(1 for k, _ in prefixes if k == c)
                                                     for c in CLASSES},
            "export_root": export_root, "results": results}
  print(table(results))
  if args.json:
    with open(args.json, "w") as f:
      json.dump(report, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main())
