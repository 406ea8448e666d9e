"""Two reference completers for full-line completion: the bar a trained model must clear.

* `NgramCompleter`: a token n-gram model over the Task's own sentencepiece tokens, counted on
  the train split. It completes greedily, one token at a time, from the longest context seen
  in training (backing off to shorter ones), until it writes a newline or EOS.
* `copy_similar_line`: the rest of the earlier line of the same file whose start matches the
  most of what is already typed on the current line (the nearest such line on a tie).

(`copy_next_line`, the line that followed the earlier place most like the lines before the
cursor, is not scored as a baseline: the consensus line, code_t5/decoding/consensus.py, weighs
it.)

Both take the whole file before the cursor, as the full-line Task's `inputs_pretokenized`
holds it. `model_window` cuts that file down to what the model reads, so copy-line can also be
scored on exactly the model's information.

  python -m code_t5.baselines --model_dir=runs/smoke --data_dir=data/dev/tfds

scores them next to the model's latest full-line eval, on the same examples, with both metric
definitions (`code_t5/metrics.py`), and says how long the model trained; `make smoke` ends
with it and `scripts/bench_learning.py` uses the same functions.
"""

import argparse
import json
import os
import sys
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

NGRAM_ORDER = 4
BASELINES = ("4-gram", "copy-line", "copy-window")


class NgramCompleter:
  """Greedy token n-gram completion with backoff; counts live in sorted numpy arrays."""

  def __init__(self, order: int, vocab_size: int):
    if order < 1:
      raise ValueError(f"n-gram order must be at least 1, got {order}")
    if vocab_size ** order >= 2 ** 62:
      raise ValueError(f"{order}-grams over {vocab_size} tokens do not fit an int64 key")
    self.order = order
    self.vocab_size = vocab_size
    # For each context length k < order: sorted context keys and the most frequent next token.
    self._contexts: List[np.ndarray] = []
    self._best_next: List[np.ndarray] = []

  def _keys(self, tokens: np.ndarray, k: int) -> np.ndarray:
    """Context key of length k ending before each position of `tokens` (left-padded)."""
    key = np.zeros(len(tokens) - (self.order - 1), dtype=np.int64)
    for j in range(k):
      start = self.order - 1 - k + j
      key = key * self.vocab_size + tokens[start:start + len(key)]
    return key

  def fit(self, documents: Iterable[Sequence[int]]) -> "NgramCompleter":
    """Counts every n-gram of every document; each document starts from an empty context."""
    pad = np.zeros(self.order - 1, dtype=np.int64)  # id 0 is padding: never a real token
    padded = [np.concatenate([pad, np.asarray(d, dtype=np.int64)]) for d in documents]
    if not any(len(p) > len(pad) for p in padded):
      raise ValueError("no tokens to count n-grams on")
    for k in range(self.order):
      contexts = np.concatenate([self._keys(p, k) for p in padded])
      nexts = np.concatenate([p[self.order - 1:] for p in padded])
      pairs, counts = np.unique(contexts * self.vocab_size + nexts, return_counts=True)
      context, token = np.divmod(pairs, self.vocab_size)
      # Most frequent next token per context; the smallest id wins a tie.
      order = np.lexsort((token, -counts, context))
      first = np.r_[True, context[order][1:] != context[order][:-1]]
      self._contexts.append(context[order][first])
      self._best_next.append(token[order][first])
    return self

  def next_token(self, history: Sequence[int]) -> int:
    """Most frequent next token after the longest suffix of `history` seen in training."""
    if not self._contexts:
      raise RuntimeError("NgramCompleter: call fit() first")
    for k in range(min(self.order - 1, len(history)), -1, -1):
      key = 0
      for t in history[len(history) - k:]:
        key = key * self.vocab_size + t
      contexts = self._contexts[k]
      i = np.searchsorted(contexts, key)
      if i < len(contexts) and contexts[i] == key:
        return int(self._best_next[k][i])
    raise AssertionError("the empty context is always counted")

  def complete(self, prefix: Sequence[int], stop_ids: Sequence[int],
               max_tokens: int) -> List[int]:
    """Tokens after `prefix` up to (not including) the first of `stop_ids`."""
    history = [0] * (self.order - 1) + list(prefix)  # padded as in fit()
    out = []
    while len(out) < max_tokens:
      token = self.next_token(history[len(history) - (self.order - 1):])
      if token in stop_ids:
        break
      out.append(token)
      history.append(token)
    return out


def read_as_the_run(model_dir: str, window_stride: int = 1) -> None:
  """Binds here what the run's model reads of a prefix (`code_t5.inputs_delimiter`, from its
  operative_config.gin; `code_t5.window_stride`, from its eval's record), so that
  `model_window` is its window."""
  import gin  # pylint: disable=g-import-not-at-top
  from code_t5 import files, gin_config  # pylint: disable=g-import-not-at-top
  path = os.path.join(model_dir, "operative_config.gin")
  eos = (gin_config.literal_bindings(path).get("code_t5.inputs_delimiter.eos", True)
         if files.exists(path) else True)
  with gin.unlock_config():
    gin.bind_parameter("code_t5.inputs_delimiter.eos", eos)
    gin.bind_parameter("code_t5.window_stride.tokens", window_stride)


def model_window(prefix: str, feature, input_length: int) -> str:
  """What the model reads of `prefix`, as text: `preprocessors.inputs_window` of the Task's
  "inputs" `feature` at `input_length`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from code_t5 import preprocessors  # pylint: disable=g-import-not-at-top
  from code_t5.vocabulary import newline_id  # pylint: disable=g-import-not-at-top
  vocabulary = feature.vocabulary
  kept = preprocessors.inputs_window(tf.constant(vocabulary.encode(prefix), tf.int32),
                                     input_length, newline_id(vocabulary))
  return vocabulary.decode(kept.numpy().tolist())


# --- the model against the baselines, on the examples of its latest full-line eval ---------

def eval_steps(model_dir: str, task: str, split: str = "validation") -> List[int]:
  """The checkpoint steps whose full-line eval of `task` is in `model_dir`, in order."""
  from code_t5 import files, run_records  # pylint: disable=g-import-not-at-top
  prefix = os.path.join(run_records.eval_dir(model_dir, split), task)
  return sorted(int(path[len(prefix) + 1:-len("_predictions")])
                for path in files.glob(f"{prefix}_*_predictions")
                if path[len(prefix) + 1:-len("_predictions")].isdigit())


def eval_outputs(model_dir: str, task: str, split: str = "validation", step=None):
  """(step, targets, predictions) of the eval of `task` in `model_dir` at `step` (default:
  the latest)."""
  from code_t5 import files, run_records  # pylint: disable=g-import-not-at-top
  prefix = os.path.join(run_records.eval_dir(model_dir, split), task)
  steps = eval_steps(model_dir, task, split)
  if not steps or (step is not None and step not in steps):
    raise FileNotFoundError(f"{prefix}_{step or '<step>'}_predictions: no full-line eval of "
                            f"{task} in {model_dir}; run eval_full_line.gin first")
  step = steps[-1] if step is None else step

  def lines(path):
    return files.read_text(path).split("\n")[:-1]
  return step, lines(f"{prefix}_targets"), lines(f"{prefix}_{step}_predictions")


def task_examples(task_name: str, split: str, num: int) -> List[Tuple[str, str]]:
  """The first `num` (prefix, target) texts of the Task's split, in the order mesh-tf's eval
  reads them."""
  import seqio  # pylint: disable=g-import-not-at-top
  task = seqio.get_mixture_or_task(task_name)
  lengths = {"inputs": 128, "targets": 32}  # only the *_pretokenized texts are used
  ds = task.get_dataset(lengths, split=split, shuffle=False).take(num)
  return [(ex["inputs_pretokenized"].decode("utf-8"), ex["targets_pretokenized"].decode("utf-8"))
          for ex in ds.as_numpy_iterator()]


def task_repositories(task_name: str, split: str, examples: Sequence[Tuple[str, str]],
                      context: dict) -> List[Tuple[List[Tuple[str, str]], str]]:
  """([(path, content)], language) of each of `examples` (task_examples' of the Task's split):
  the other files of its repository that the Task's eval searched for its context, by
  `context` (`code_t5.repository_context`'s options) -- its file's neighbours
  (`preprocessors.repository_neighbours`), in their order. Infer reads the same context from a
  record that carries them as its "repository". A ValueError where the Task's examples are
  not `examples`."""
  import seqio  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from code_t5 import preprocessors, tasks  # pylint: disable=g-import-not-at-top
  source = seqio.get_mixture_or_task(task_name).source.get_dataset(split=split, shuffle=False)
  files = preprocessors.repository_neighbours(source, context["group_files"],
                                              context["max_neighbours"])
  options = tasks.full_line_cursor_options()
  neighbour_keys = (preprocessors.NEIGHBOUR_PATHS, preprocessors.NEIGHBOUR_CONTENTS)

  def cursors(number, file):
    """The file's cursors, as the Task makes them (no neighbours: no retrieval here), each
    with the file's number. One pipeline for all files: a pipeline per file took 15 s for the
    716 validation examples on a 2-core Zen 4, this 1.1 s."""
    alone = {k: v for k, v in file.items() if k not in neighbour_keys}
    return preprocessors.full_line_examples(tf.data.Dataset.from_tensors(alone),
                                            **options).map(lambda example: (number, example))
  files_read = files.as_numpy_iterator()
  file_number, neighbours, language = -1, None, None
  found = []
  for number, example in files.enumerate().flat_map(cursors).as_numpy_iterator():
    if len(found) >= len(examples):
      break
    while file_number < number:  # the files read in the same order, to their neighbours
      file, file_number = next(files_read), file_number + 1
      neighbours = [(path.decode("utf-8"), content.decode("utf-8")) for path, content in
                    zip(*(file[key] for key in neighbour_keys))]
      language = file["language"].decode("utf-8")
    if (example["inputs"].decode("utf-8"),
        example["targets"].decode("utf-8")) != examples[len(found)]:
      raise ValueError(f"{task_name} {split}: example {len(found)} of the Task is not the one "
                       "its files' cursors give; its repository cannot be told")
    found.append((neighbours, language))
  if len(found) < len(examples):
    raise ValueError(f"{task_name} {split}: {len(examples)} examples, its files give "
                     f"{len(found)}")
  return found[:len(examples)]


def fit_ngram(task_name: str) -> Tuple[NgramCompleter, int, int]:
  """The 4-gram completer counted on the train split of the Task's source, with its
  vocabulary: (completer, files, tokens)."""
  import seqio  # pylint: disable=g-import-not-at-top
  task = seqio.get_mixture_or_task(task_name)
  vocabulary = task.output_features["targets"].vocabulary
  documents = [vocabulary.encode(ex["content"].decode("utf-8")) for ex in
               task.source.get_dataset(split="train", shuffle=False).as_numpy_iterator()]
  ngram = NgramCompleter(NGRAM_ORDER, vocabulary.vocab_size).fit(documents)
  return ngram, len(documents), sum(map(len, documents))


def baseline_predictions(task_name: str, prefixes: Sequence[str], input_length: int,
                         ngram: NgramCompleter) -> Dict[str, List[str]]:
  """Each baseline's completion of each prefix (copy-window: from the model's window)."""
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import copying  # pylint: disable=g-import-not-at-top
  from code_t5.vocabulary import newline_id  # pylint: disable=g-import-not-at-top
  features = seqio.get_mixture_or_task(task_name).output_features
  vocabulary = features["targets"].vocabulary
  stop_ids = (vocabulary.eos_id, newline_id(vocabulary))
  return {
      "4-gram": [vocabulary.decode(ngram.complete(vocabulary.encode(p), stop_ids, 64))
                 for p in prefixes],
      "copy-line": [copying.copy_similar_line(p) for p in prefixes],
      "copy-window": [
          copying.copy_similar_line(model_window(p, features["inputs"], input_length))
          for p in prefixes],
  }


def score(targets: Sequence[str], predictions: Sequence[str]) -> Dict[str, float]:
  """Every full-line metric, ours and CodeXGLUE's."""
  from code_t5 import metrics  # pylint: disable=g-import-not-at-top
  out = {}
  for fn in metrics.FULL_LINE_METRICS:
    out.update(fn(targets, predictions))
  return out


def compare(model_dir: str, task_name: str, split: str = "validation") -> dict:
  """The model's latest full-line eval of `task_name` and the baselines on its examples;
  copy-window reads the window the eval read (its record, run_records.eval_lengths: a decoding
  can read more than the run trained on), or for an eval from before that record the run's
  (its operative_config.gin)."""
  from code_t5 import run_records, tasks  # pylint: disable=g-import-not-at-top
  tasks.check_split(task_name, split)  # first: a split not built is why no eval ran
  step, targets, model = eval_outputs(model_dir, task_name, split)
  examples = task_examples(task_name, split, len(targets))
  if [t for _, t in examples] != targets:
    raise ValueError(f"{model_dir}: the eval's targets are not the first {len(targets)} "
                     f"examples of {task_name}'s {split} split (another data dir?)")
  lengths = (run_records.eval_lengths(model_dir, split)
             or run_records.run_bindings(model_dir).get("sequence_length") or {})
  if "inputs" not in lengths:
    raise ValueError(f"{model_dir}/operative_config.gin: no utils.run.sequence_length")
  input_length = lengths["inputs"]
  read_as_the_run(model_dir, run_records.eval_window_stride(model_dir, split))
  ngram, train_files, train_tokens = fit_ngram(task_name)
  completions = {"model": model, **baseline_predictions(
      task_name, [p for p, _ in examples], input_length, ngram)}
  return {"task": task_name, "split": split, "step": step, "examples": len(targets),
          "input_length": input_length,
          "ngram": {"order": NGRAM_ORDER, "train_files": train_files,
                    "train_tokens": train_tokens},
          "metrics": {name: score(targets, preds) for name, preds in completions.items()},
          "completions": completions, "targets": targets,
          "prefix_tails": [p[-200:] for p, _ in examples]}


def table(report: dict) -> str:
  from code_t5 import metrics  # pylint: disable=g-import-not-at-top
  names = metrics.FULL_LINE_METRIC_NAMES
  head = {"exact_match": "exact", "edit_similarity": "edit sim", "prefix_coverage": "prefix cov",
          "codexglue_exact_match": "CXG exact", "codexglue_edit_similarity": "CXG edit sim"}
  width = max([12, *map(len, report["metrics"])])
  rows = [f"{'completer':<{width}}" + "".join(f"{head.get(n, n):>14}" for n in names)]
  for completer, values in report["metrics"].items():
    rows.append(f"{completer:<{width}}" + "".join(f"{values[n]:>14.2f}" for n in names))
  return "\n".join(rows)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(
      prog="python -m code_t5.baselines",
      description="The model's latest full-line eval next to two baselines on its examples.")
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--data_dir", required=True, help="the run's --t5_tfds_data_dir")
  parser.add_argument("--task", default="flcc_python_full_line")
  parser.add_argument("--split", default="validation")
  parser.add_argument("--json", help="also write the report, with every completion, here")
  args = parser.parse_args(argv)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import errors, tasks  # pylint: disable=g-import-not-at-top
  del tasks  # registers the Tasks
  seqio.set_tfds_data_dir_override(args.data_dir)
  from code_t5.data import flcc  # pylint: disable=g-import-not-at-top
  return errors.run_command("code_t5.baselines", lambda: _print_report(args),
                            expected=(ValueError, flcc.MissingSplitError))


def _print_report(args) -> None:
  from code_t5 import files, summaries  # pylint: disable=g-import-not-at-top
  report = compare(args.model_dir, args.task, args.split)
  trained = summaries.summarize(args.model_dir, args.split).get("train", {})
  if "token_positions" in trained:
    print(f"model: {args.model_dir}, {trained['last_step']} steps "
          f"({trained['sequences']:,} sequences, {trained['token_positions']:,} token positions)")
  print(f"{report['examples']} {args.split} examples of {args.task} (held-out repositories), "
        f"checkpoint {report['step']}; 4-gram counted on {report['ngram']['train_files']} "
        f"train files; copy-window reads the model's {report['input_length']}-token window")
  print(table(report))
  print("exact, edit sim, prefix cov: ours (code_t5/metrics.py); CXG: CodeXGLUE's "
        "line-completion evaluator (split() tokens, fuzz.ratio)")
  if args.json:
    files.write_atomically(args.json, json.dumps(report, indent=1))


if __name__ == "__main__":
  sys.exit(main())
