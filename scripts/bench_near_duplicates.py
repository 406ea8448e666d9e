"""The Beam build's near-duplicates against the in-process build's: the same answer, and memory.

Each tree is built by `python -m code_t5.data build` in a child process, in process and on
Beam's DirectRunner with 2 worker processes, once per --modes mode. For each pair it prints
whether the reports and each split's shas are the same, and for each build its wall time and
peak resident memory: of the build's own process, and of its largest other process (a Beam
worker), sampled every 0.1 s over the process tree with psutil.

  # the dev data's tree and any FLCC trees, both modes:
  .venv/bin/python scripts/bench_near_duplicates.py --flcc_dir=data/dev/flcc --modes=holdout,drop
  # generated trees of these many files (make_tree: the standard library's modules, each
  # file made another by its own tokens, a tenth of them near-duplicates of an earlier one):
  .venv/bin/python scripts/bench_near_duplicates.py --files=12500,50000,200000 --modes=holdout

A Beam build also prints the largest bucket, group and label its near-duplicate judgement held
(beam_near_duplicates.largest_state); the table gives them.
"""

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time

import psutil
import tensorflow as tf

from code_t5.data import builder  # pylint: disable=wrong-import-position
from code_t5.data import tree_writer  # pylint: disable=wrong-import-position

BEAM_FLAGS = "--direct_num_workers=2 --direct_running_mode=multi_processing"


def make_tree(root, num_files, files_per_repo=50, seed=0):
  """An FLCC tree of `num_files` files as a real corpus has them: each a module of the
  standard library with every 8th token made its own (so that copies of one module are not
  near-duplicates: a Jaccard near 0.3), and one in ten a near-duplicate of an earlier file (a
  line added), often in another repository and split."""
  rng = random.Random(seed)
  sources = [content for files in tree_writer.stdlib_repositories().values()
             for content in files.values() if 200 < len(content) < 20000]
  repos, made = {}, []
  for number in range(num_files):
    if made and rng.random() < 0.1:
      content = rng.choice(made) + f"\n# near-duplicate {number}\n".encode()
    else:
      tokens = sources[number % len(sources)].split(b" ")
      tokens[::8] = [token + b"_%d" % number for token in tokens[::8]]
      content = b" ".join(tokens)
      made.append(content)
      del made[:-1000]  # near-duplicates of recent files: a repository's neighbours
    repo = f"gen{number // files_per_repo // 100:03d}/repo{number // files_per_repo:05d}"
    repos.setdefault(repo, {})[f"pkg/module_{number}.py"] = content
  tree_writer.write_flcc_tree(root, repos)


def run_measured(argv):
  """Runs argv; returns (seconds, the peak RSS in MB of its own process, of the largest of its
  other processes: 0 when it had none, its output)."""
  start = time.perf_counter()
  proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
  root, peaks = psutil.Process(proc.pid), {}
  while proc.poll() is None:
    try:
      for process in [root] + root.children(recursive=True):
        try:
          rss = process.memory_info().rss
        except psutil.Error:
          continue
        peaks[process.pid] = max(peaks.get(process.pid, 0), rss)
    except psutil.Error:
      pass
    time.sleep(0.1)
  output = proc.stdout.read().decode("utf-8", "replace")
  if proc.returncode:
    sys.exit(f"bench_near_duplicates: {' '.join(argv)} failed:\n{output[-3000:]}")
  own = peaks.pop(proc.pid, 0)
  return (time.perf_counter() - start, own / 2 ** 20, max(peaks.values(), default=0) / 2 ** 20,
          output)


def split_shas(data_dir, language):
  """Each split's set of shas, read from the TFRecords TFDS wrote."""
  prepared = builder.finished_builder(data_dir, language)
  feature = {"sha": tf.io.FixedLenFeature([], tf.string)}
  shas = {}
  for path in tf.io.gfile.glob(os.path.join(prepared.data_dir, "flcc-*.tfrecord*")):
    split = os.path.basename(path).split("-")[1].split(".")[0]
    for record in tf.data.TFRecordDataset(path).batch(4096):
      parsed = tf.io.parse_example(record, feature)["sha"].numpy()
      shas.setdefault(split, set()).update(parsed.tolist())
  return shas


def build(tree, data_dir, language, mode, beam, extra):
  shutil.rmtree(data_dir, ignore_errors=True)
  argv = [sys.executable, "-m", "code_t5.data", "build", f"--flcc_dir={tree}",
          f"--data_dir={data_dir}", f"--language={language}", f"--near_duplicates={mode}",
          *extra]
  if beam:
    argv += ["--beam_runner=DirectRunner", f"--beam_options={BEAM_FLAGS}"]
  seconds, own, other, output = run_measured(argv)
  state = re.search(r"near-duplicates judged in the pipeline: (.*) \(what one", output)
  report = json.loads(tf.io.gfile.GFile(builder.report_path(data_dir, language)).read())
  for key in ("options", "fingerprint"):
    report.pop(key)
  return {"seconds": round(seconds, 1), "peak_mb": round(own), "largest_worker_mb": round(other),
          "largest_state": state.group(1) if state else "",
          "report": report, "shas": split_shas(data_dir, language)}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--flcc_dir", action="append", default=[], help="an FLCC tree (repeat)")
  parser.add_argument("--files", default="", help="comma-separated sizes of generated trees")
  parser.add_argument("--language", default="python")
  parser.add_argument("--modes", default="holdout,drop")
  parser.add_argument("--ratios", default=None, help="--ratios of the builds")
  parser.add_argument("--json", default=None)
  parser.add_argument("--workdir", default=None, help="default: a temporary directory")
  args = parser.parse_args()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  workdir = args.workdir or tempfile.mkdtemp(prefix="bench_near_")
  trees = [(tree, tree) for tree in args.flcc_dir]
  for files in filter(None, args.files.split(",")):
    tree = os.path.join(workdir, f"generated_{files}")
    if not os.path.isdir(os.path.join(tree, "v3")):
      print(f"generating a tree of {files} files in {tree} ...", flush=True)
      make_tree(tree, int(files))
    trees.append((f"generated, {int(files):,} files", tree))
  extra = [f"--ratios={args.ratios}"] if args.ratios else []

  rows, same_everywhere = [], True
  print(f"{'tree':<36}{'mode':<9}{'build':<12}{'files kept':>11}{'seconds':>9}"
        f"{'peak MB':>9}{'worker MB':>10}  same as in process")
  for name, tree in trees:
    for mode in args.modes.split(","):
      results = {}
      for beam in (False, True):
        label = "Beam" if beam else "in process"
        out = os.path.join(workdir, f"tfds_{len(rows)}")
        results[label] = result = build(tree, out, args.language, mode, beam, extra)
        shutil.rmtree(out, ignore_errors=True)
        kept = sum(len(s) for s in result["shas"].values())
        same = ""
        if beam:
          plain = results["in process"]
          same_report = result["report"] == plain["report"]
          same_files = result["shas"] == plain["shas"]
          same_everywhere &= same_report and same_files
          same = (f"report {'yes' if same_report else 'NO'}, "
                  f"files {'yes' if same_files else 'NO'}")
        print(f"{name[-35:]:<36}{mode:<9}{label:<12}{kept:>11,}{result['seconds']:>9.1f}"
              f"{result['peak_mb']:>9,}{result['largest_worker_mb']:>10,}  {same}"
              + (f"\n{'':<36}{result['largest_state']}" if result["largest_state"] else ""),
              flush=True)
        rows.append({"tree": name, "mode": mode, "build": label, "files_kept": kept,
                     **{k: result[k] for k in ("seconds", "peak_mb", "largest_worker_mb",
                                               "largest_state")},
                     "near_duplicates": result["report"].get("near_duplicates"),
                     **({"same_report": same_report, "same_files": same_files} if beam else {})})
  print(f"\nBeam and in process {'agree everywhere' if same_everywhere else 'DIFFER'}; "
        f"{psutil.cpu_count()} CPUs, {psutil.virtual_memory().total / 2 ** 30:.0f} GB")
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"cpus": psutil.cpu_count(), "agree": same_everywhere, "rows": rows}, f, indent=1)
  if not args.workdir:
    shutil.rmtree(workdir, ignore_errors=True)
  sys.exit(0 if same_everywhere else 1)


if __name__ == "__main__":
  main()
