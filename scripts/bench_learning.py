"""Does the model learn? The dev model after a fixed CPU budget, against two baselines.

1. Trains the dev model (models/shared-prefix_lm_dev.gin, the `flcc_python` mixture) through
   mesh_transformer_main for --minutes of wall time from launch, then stops it; the last
   checkpoint (every 100 steps) is the model.
2. Full-line eval of that checkpoint (eval_full_line.gin, greedy) on the first --examples
   examples of the validation split: repositories that training never saw.
3. On exactly those examples, two baselines (code_t5/baselines.py):
     * a token 4-gram completer counted on the train split, with the same vocabulary;
     * "copy the earlier line of the same file that best matches what is typed", once from
       the whole file and once from only the lines the model reads (its input window).
4. Exact match, edit similarity and prefix coverage of each with the Task's own metric
   functions, the model's lead over each baseline with a paired bootstrap 95% interval, and
   every example with all completions in <model_dir>/learning_examples.jsonl.

Needs the dev dataset (`python -m code_t5.data dev`). Prints a table and writes JSON.

  .venv/bin/python scripts/bench_learning.py --minutes=30 --json=bench_learning.json
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

from benchlib import DEV_TFDS, QUIET_TF, REPO, gin_sequence_length, mesh_main_command
MODEL_GIN = "models/shared-prefix_lm_dev.gin"
TRAIN_MIXTURE = "flcc_python"
EVAL_TASK = "flcc_python_full_line"
NGRAM_ORDER = 4
METRIC_NAMES = ("exact_match", "edit_similarity", "prefix_coverage")


def last_checkpoint_step(model_dir):
  try:
    text = open(os.path.join(model_dir, "checkpoint")).read()
  except FileNotFoundError:
    return None
  match = re.search(r'^model_checkpoint_path: ".*-(\d+)"', text, re.M)
  return int(match.group(1)) if match else None


def train_for(model_dir, data_dir, minutes, gin_files, gin_params):
  """Trains until `minutes` of wall time have passed since launch; returns the last step."""
  if last_checkpoint_step(model_dir) is not None:
    sys.exit(f"bench_learning: {model_dir} already holds checkpoints; give an empty "
             "--model_dir, or --eval_only to score what is there")
  os.makedirs(model_dir, exist_ok=True)
  cmd = mesh_main_command(model_dir, data_dir, [MODEL_GIN, *gin_files],
                          [f"MIXTURE_NAME = '{TRAIN_MIXTURE}'", "run.train_steps = 10000000",
                           *gin_params])
  log_path = os.path.join(model_dir, "train.log")
  start = time.time()
  deadline = start + 60 * minutes
  with open(log_path, "w") as log:
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT, env=QUIET_TF)
    while proc.poll() is None and time.time() < deadline:
      time.sleep(min(60, max(deadline - time.time(), 0.1)))
      print(f"  {(time.time() - start) / 60:5.1f} of {minutes} min, last checkpoint at step "
            f"{last_checkpoint_step(model_dir)}", file=sys.stderr, flush=True)
    if proc.poll() is not None:
      sys.exit(f"bench_learning: training exited early (code {proc.returncode}); "
               f"see {log_path}")
    proc.send_signal(signal.SIGTERM)
    proc.wait()
  step = last_checkpoint_step(model_dir)
  if not step:
    sys.exit(f"bench_learning: no checkpoint after {minutes} min; see {log_path}")
  return step, time.time() - start


def trained_input_length(model_dir):
  """The run's inputs sequence length, from its operative_config.gin."""
  path = os.path.join(os.path.abspath(model_dir), "operative_config.gin")
  try:
    return gin_sequence_length(path)["inputs"]
  except (OSError, AttributeError):
    sys.exit(f"bench_learning: no utils.run.sequence_length in {path}")


def evaluate(model_dir, data_dir, examples, gin_files, gin_params):
  """Greedy full-line eval of the last checkpoint; returns (targets, predictions)."""
  cmd = mesh_main_command(model_dir, data_dir, [MODEL_GIN, *gin_files, "eval_full_line.gin"],
                          [f"MIXTURE_NAME = '{EVAL_TASK}'", *gin_params,
                           f"mesh_eval_dataset_fn.num_eval_examples = {examples}"])
  log_path = os.path.join(model_dir, "eval.log")
  with open(log_path, "w") as log:
    if subprocess.run(cmd, cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                      env=QUIET_TF).returncode:
      sys.exit(f"bench_learning: eval failed; see {log_path}")
  step = last_checkpoint_step(model_dir)
  out = os.path.join(model_dir, "validation_eval", EVAL_TASK)

  def lines(path):
    with open(path, encoding="utf-8") as f:
      return f.read().split("\n")[:-1]
  return lines(f"{out}_targets"), lines(f"{out}_{step}_predictions")


def eval_examples(num):
  """The Task's validation examples, in the order mesh-tf's eval reads them."""
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import tasks  # pylint: disable=g-import-not-at-top
  task = seqio.get_mixture_or_task(EVAL_TASK)
  lengths = {"inputs": 128, "targets": 32}  # only the *_pretokenized texts are used
  ds = task.get_dataset(lengths, split="validation", shuffle=False)
  if num > 0:
    ds = ds.take(num)
  del tasks
  return [(ex["inputs_pretokenized"].decode("utf-8"), ex["targets_pretokenized"].decode("utf-8"))
          for ex in ds.as_numpy_iterator()]


def fit_ngram(vocabulary, data_dir):
  """The 4-gram completer, counted on the train split's files."""
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from code_t5 import baselines, tasks  # pylint: disable=g-import-not-at-top
  builder = tfds.builder(f"flcc/python:{tasks.FLCC_VERSION}", data_dir=data_dir)
  files = [ex["content"].decode("utf-8")
           for ex in tfds.as_numpy(builder.as_dataset(split="train"))]
  documents = [vocabulary.encode(text) for text in files]
  ngram = baselines.NgramCompleter(NGRAM_ORDER, vocabulary.vocab_size).fit(documents)
  return ngram, len(files), sum(map(len, documents))


def score(targets, predictions):
  from code_t5 import metrics  # pylint: disable=g-import-not-at-top
  out = {}
  for fn in metrics.FULL_LINE_METRICS:
    out.update(fn(targets, predictions))
  return out


def per_example(targets, predictions):
  """Exact match and edit similarity (0..100) of each example, for the bootstrap."""
  from code_t5 import metrics  # pylint: disable=g-import-not-at-top
  return {name: np.array([fn([t], [p])[name] for t, p in zip(targets, predictions)])
          for name, fn in (("exact_match", metrics.exact_match),
                           ("edit_similarity", metrics.edit_similarity))}


def bootstrap_lead(ours, theirs, seed=0, rounds=2000):
  """Mean of ours - theirs, with a paired bootstrap 95% interval."""
  diff = ours - theirs
  rng = np.random.default_rng(seed)
  means = diff[rng.integers(0, len(diff), (rounds, len(diff)))].mean(axis=1)
  return {"lead": float(diff.mean()), "ci95": [float(np.percentile(means, 2.5)),
                                               float(np.percentile(means, 97.5))]}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--minutes", type=float, default=30.0, help="training budget, wall time")
  parser.add_argument("--examples", type=int, default=1024,
                      help="validation examples to score (-1: all)")
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--model_dir", default=os.path.join(REPO, "runs", "bench_learning"))
  parser.add_argument("--eval_only", action="store_true",
                      help="score the last checkpoint in --model_dir without training")
  parser.add_argument("--gin_file", action="append", default=[],
                      help=f"gin files after {MODEL_GIN}, for training and eval")
  parser.add_argument("--gin_param", action="append", default=[],
                      help="gin bindings for training and eval")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()

  if args.eval_only:
    step, train_wall = last_checkpoint_step(args.model_dir), None
    if step is None:
      sys.exit(f"bench_learning: no checkpoint in {args.model_dir}")
  else:
    print(f"training the dev model for {args.minutes} min into {args.model_dir} ...",
          file=sys.stderr, flush=True)
    step, train_wall = train_for(args.model_dir, args.data_dir, args.minutes, args.gin_file,
                                 args.gin_param)
  input_length = trained_input_length(args.model_dir)
  print(f"full-line eval of step {step} ...", file=sys.stderr, flush=True)
  targets, model_predictions = evaluate(args.model_dir, args.data_dir, args.examples,
                                        args.gin_file, args.gin_param)

  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import baselines, preprocessors  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(args.data_dir)
  examples = eval_examples(len(targets))
  if [t for _, t in examples] != targets:
    sys.exit("bench_learning: the Task's validation examples differ from mesh-tf's eval "
             "targets; the baselines would not score the same examples")
  features = seqio.get_mixture_or_task(EVAL_TASK).output_features
  vocabulary = features["targets"].vocabulary
  window = preprocessors.inputs_budget(input_length, features["inputs"])
  print("counting 4-grams on the train split ...", file=sys.stderr, flush=True)
  ngram, train_files, train_tokens = fit_ngram(vocabulary, args.data_dir)
  stop_ids = (vocabulary.eos_id, preprocessors.newline_id(vocabulary))
  ngram_predictions = [vocabulary.decode(ngram.complete(vocabulary.encode(prefix), stop_ids, 64))
                       for prefix, _ in examples]
  copy_predictions = [baselines.copy_similar_line(prefix) for prefix, _ in examples]
  window_copy_predictions = [
      baselines.copy_similar_line(baselines.model_window(prefix, features["inputs"], input_length))
      for prefix, _ in examples]

  completers = {"model": model_predictions, "4-gram": ngram_predictions,
                "copy-line": copy_predictions, "copy-window": window_copy_predictions}
  results = {name: score(targets, preds) for name, preds in completers.items()}
  per = {name: per_example(targets, preds) for name, preds in completers.items()}
  leads = {baseline: {metric: bootstrap_lead(per["model"][metric], per[baseline][metric])
                      for metric in ("exact_match", "edit_similarity")}
           for baseline in ("4-gram", "copy-line", "copy-window")}

  with open(os.path.join(args.model_dir, "learning_examples.jsonl"), "w") as f:
    for (prefix, target), *preds in zip(examples, *completers.values()):
      f.write(json.dumps({"prefix_tail": prefix[-200:], "target": target,
                          **dict(zip(completers, preds))}) + "\n")

  budget = f"after {args.minutes} min" if train_wall else "(--eval_only)"
  print(f"\ndev model {budget}: step {step}; "
        f"{len(targets)} validation examples (held-out repositories)")
  print(f"(copy-window: copy-line from only the model's {window}-token input window)")
  print(f"{'completer':<11} " + " ".join(f"{m:>16}" for m in METRIC_NAMES))
  for name, r in results.items():
    print(f"{name:<11} " + " ".join(f"{r[m]:>16.2f}" for m in METRIC_NAMES))
  for baseline, by_metric in leads.items():
    for metric, lead in by_metric.items():
      print(f"model - {baseline:<11} {metric:<15} {lead['lead']:+6.2f} points "
            f"(paired bootstrap 95% CI {lead['ci95'][0]:+.2f} .. {lead['ci95'][1]:+.2f})")
  report = {"budget_minutes": args.minutes if train_wall else None, "train_wall_s": train_wall,
            "checkpoint_step": step, "examples": len(targets), "split": "validation",
            "ngram": {"order": NGRAM_ORDER, "train_files": train_files,
                      "train_tokens": train_tokens},
            "copy_window_tokens": window,
            "metrics": results, "model_lead": leads}
  if args.json:
    with open(args.json, "w") as f:
      json.dump(report, f, indent=2)
  return report


if __name__ == "__main__":
  main()
