"""python -m code_t5.summaries --model_dir=DIR: what a run wrote, as a table (and a plot).

Reads the TensorBoard event files that mesh_transformer_main leaves in the model dir (train)
and in `<split>_eval/` (eval): the loss curve's ends, steps, the sequences and token positions
trained (from the run's operative_config.gin), and the latest eval metrics. `--plot` also
draws the training loss and every eval metric over steps into a PNG.
"""

import argparse
import io
import json
import os
import sys

from code_t5 import errors
from code_t5 import files
from code_t5 import gin_config
from code_t5 import progress

# Written by code_t5/progress.py every few steps; mesh-tf's own `loss` only every 100.
LOSS_TAGS = ("code_t5/loss", "loss")
# A train-and-eval run's record of its evals and its best checkpoint (code_t5/modes/train_eval.py).
TRAIN_EVAL_RECORD = "train_eval.json"


def train_eval_record(model_dir: str):
  """The record a train-and-eval run keeps in `model_dir`, or None (no eval recorded yet)."""
  path = os.path.join(model_dir, TRAIN_EVAL_RECORD)
  return json.loads(files.read_text(path)) if files.exists(path) else None


# The lengths an eval read, in its eval dir (written by `install`'s eval_model): a decoding can read a longer
# window than the training's (gin_configs/decoding_lengths.gin), and copy-window reads the same.
EVAL_LENGTHS = "sequence_length.json"
# And where its window could start (code_t5.window_stride), beside it.
EVAL_WINDOW_STRIDE = "window_stride.json"


def eval_dir(model_dir: str, split: str = "validation") -> str:
  """Where mesh-tf's eval_model writes an eval of `split` (its metrics' events, the inputs,
  targets and each step's predictions) when no eval_summary_dir or suffix is given."""
  return os.path.join(model_dir, f"{split}_eval")


def _eval_record(model_dir: str, split: str, name: str, default):
  """The JSON record `name` that the latest eval of `split` wrote beside its outputs, or
  `default` for an eval from before that record was kept."""
  path = os.path.join(eval_dir(model_dir, split), name)
  return json.loads(files.read_text(path)) if files.exists(path) else default


def eval_lengths(model_dir: str, split: str = "validation"):
  """utils.run.sequence_length of the latest full-line eval of `split` in `model_dir`, or None
  (an eval from before the record was kept)."""
  return _eval_record(model_dir, split, EVAL_LENGTHS, None)


def eval_window_stride(model_dir: str, split: str = "validation") -> int:
  """code_t5.window_stride of the latest full-line eval of `split` in `model_dir` (1, any line
  start, for an eval from before the record was kept)."""
  return _eval_record(model_dir, split, EVAL_WINDOW_STRIDE, 1)


def read_scalars(event_dir: str):
  """{tag: [(step, wall_time, value)]} from every event file directly in `event_dir`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  scalars = {}
  for path in files.glob(os.path.join(event_dir, "events.out.tfevents.*")):
    for event in _events(path):
      for value in event.summary.value:
        if value.HasField("simple_value"):
          number = value.simple_value
        elif value.HasField("tensor") and not value.tensor.string_val:
          number = float(tf.make_ndarray(value.tensor))
        else:
          continue
        scalars.setdefault(value.tag, []).append((event.step, event.wall_time, number))
  return scalars


def _events(path: str):
  """The events of one event file, up to a record cut short: a run killed while writing one
  leaves it at the file's end, and `--resume` goes on in a new file (TensorBoard reads such a
  file up to it too). Where that stops the reading, a progress line says so."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  read = 0
  try:
    for event in tf.compat.v1.train.summary_iterator(path):
      yield event
      read += 1
  except tf.errors.DataLossError as error:
    progress.say(f"{path}: read {read} events, then stopped: {error.message}")


def run_bindings(model_dir: str) -> dict:
  """{"arg": value} of `utils.run`'s literal bindings in the run's operative_config.gin ({} if
  the run wrote none)."""
  path = os.path.join(model_dir, "operative_config.gin")
  if not files.exists(path):
    return {}
  return {name.rsplit(".", 1)[1]: value for name, value in gin_config.literal_bindings(path).items()
          if name.rsplit(".", 1)[0] in ("run", "utils.run")}


def per_step(model_dir: str) -> dict:
  """What one training step reads: {"sequences", "token_positions"}, from the run's batch
  size and sequence lengths. Token positions are sequences x (inputs + targets length),
  padding included; a `tokens_per_batch` size is turned into sequences as mesh-tf does
  (divided by the longest feature's length)."""
  bindings = run_bindings(model_dir)
  batch, lengths = bindings.get("batch_size"), bindings.get("sequence_length")
  if not (isinstance(batch, tuple) and isinstance(lengths, dict) and lengths):
    return {}
  method, value = batch
  sequences = value if method == "sequences_per_batch" else value // max(lengths.values())
  return {"sequences": sequences, "token_positions": sequences * sum(lengths.values())}


def summarize(model_dir: str, split: str = "validation") -> dict:
  train = read_scalars(model_dir)
  evals = read_scalars(eval_dir(model_dir, split))
  summary = {"model_dir": model_dir}
  loss = sorted(train.get("loss", []))
  if loss:
    # The run's end: code_t5/progress.py's loss reaches the last step, mesh-tf's may not.
    curve = sorted(next(train[tag] for tag in LOSS_TAGS if tag in train))
    summary["train"] = {"first_step": loss[0][0], "first_loss": round(loss[0][2], 4),
                        "last_step": max(curve[-1][0], loss[-1][0]),
                        "last_loss": round(curve[-1][2], 4),
                        "first_summary_wall_time": loss[0][1]}
    step = per_step(model_dir)
    if step:
      summary["train"].update({k: v * summary["train"]["last_step"] for k, v in step.items()})
  metrics = {}
  for tag, values in evals.items():
    if tag.startswith("eval/"):
      step, _, value = max(values)
      metrics[tag[len("eval/"):]] = {"step": step, "value": round(value, 3)}
  summary["eval"] = metrics
  record = train_eval_record(model_dir)
  if record and record.get("best"):
    summary["best"] = dict(record["best"], metric=record["metric"],
                           model_dir=os.path.join(model_dir, "best"))
  return summary


def plot(model_dir: str, path: str, split: str = "validation") -> None:
  """A PNG of the training loss (left) and each eval metric (right) over steps."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")  # no display: a file only
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  train = read_scalars(model_dir)
  evals = read_scalars(eval_dir(model_dir, split))
  figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
  for tag in LOSS_TAGS:
    if tag in train:
      steps, _, values = zip(*sorted(train[tag]))
      left.plot(steps, values, marker="." if len(steps) < 50 else None, label=tag)
      break
  left.set(title="training loss", xlabel="step", ylabel="loss")
  for tag, values in sorted(evals.items()):
    if tag.startswith("eval/"):
      steps, _, numbers = zip(*sorted(values))
      right.plot(steps, numbers, marker="o", label=tag[len("eval/"):])
  right.set(title=f"full-line metrics on {split}", xlabel="step", ylabel="percent")
  for axes in (left, right):
    axes.grid(alpha=0.3)
  if left.get_legend_handles_labels()[0]:
    left.legend(fontsize="small")
  if right.get_legend_handles_labels()[0]:
    # Below the axes: inside, it can hide a point (one eval step puts them all in a column).
    right.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
  figure.suptitle(model_dir)
  figure.tight_layout()
  png = io.BytesIO()
  figure.savefig(png, format="png", dpi=100, bbox_inches="tight")
  plt.close(figure)
  files.write_atomically(path, png.getvalue())


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(prog="python -m code_t5.summaries", description=__doc__)
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--split", default="validation")
  parser.add_argument("--json", help="also write the summary here")
  parser.add_argument("--plot", nargs="?", const="", default=None,
                      help="also draw loss and eval metrics over steps into this PNG "
                           "(default: MODEL_DIR/summary.png)")
  args = parser.parse_args(argv)
  return errors.run_command("code_t5.summaries", lambda: _print_summary(args))


def _print_summary(args) -> None:
  files.check_bucket(args.model_dir)  # a bucket refused is not "no such directory"
  if not files.isdir(args.model_dir):
    raise files.StorageError(f"{args.model_dir}: no such directory")
  summary = summarize(args.model_dir, args.split)
  if args.plot is not None:
    args.plot = args.plot or os.path.join(args.model_dir, "summary.png")
    plot(args.model_dir, args.plot, args.split)
  if "train" in summary:
    t = summary["train"]
    print(f"train  loss {t['first_loss']} at step {t['first_step']} -> "
          f"{t['last_loss']} at step {t['last_step']}")
    if "sequences" in t:
      print(f"train  {t['last_step']} steps: {t['sequences']:,} sequences, "
            f"{t['token_positions']:,} token positions (inputs + targets, padding included)")
  for name, m in sorted(summary["eval"].items()):
    print(f"eval   {name:<50} {m['value']:>8.3f}  (step {m['step']})")
  if not summary["eval"]:
    others = sorted(os.path.basename(path.rstrip("/"))[:-len("_eval")]
                    for path in files.glob(os.path.join(args.model_dir, "*_eval")))
    print(f"eval   no metrics in {os.path.join(args.model_dir, args.split + '_eval')}: no "
          f"full-line eval on {args.split} has run"
          + (f"; evals on {', '.join(others)} have (--split=...)" if others else ""))
  if "best" in summary:
    b = summary["best"]
    print(f"best   {b['metric']} {b['value']:.3f} at step {b['step']}: {b['model_dir']}")
  if args.json:
    files.write_atomically(args.json, json.dumps(summary, indent=1))
  if args.plot:
    print(f"plot   {args.plot}")


if __name__ == "__main__":
  sys.exit(main())
