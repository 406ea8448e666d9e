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
from code_t5 import run_records


def summarize(model_dir: str, split: str = "validation") -> dict:
  """The run's training (loss curve's ends, steps, sequences and token positions), the latest
  eval metrics of `split` and train-and-eval's best checkpoint, as a dict."""
  train = run_records.read_scalars(model_dir)
  evals = run_records.read_scalars(run_records.eval_dir(model_dir, split))
  summary = {"model_dir": model_dir}
  loss = sorted(train.get("loss", []))
  if loss:
    # The run's end: code_t5/progress.py's loss reaches the last step, mesh-tf's may not.
    curve = sorted(next(train[tag] for tag in run_records.LOSS_TAGS if tag in train))
    summary["train"] = {"first_step": loss[0][0], "first_loss": round(loss[0][2], 4),
                        "last_step": max(curve[-1][0], loss[-1][0]),
                        "last_loss": round(curve[-1][2], 4),
                        "first_summary_wall_time": loss[0][1]}
    step = run_records.per_step(model_dir)
    if step:
      summary["train"].update({k: v * summary["train"]["last_step"] for k, v in step.items()})
  metrics = {}
  for tag, values in evals.items():
    if tag.startswith("eval/"):
      step, _, value = max(values)
      metrics[tag[len("eval/"):]] = {"step": step, "value": round(value, 3)}
  summary["eval"] = metrics
  record = run_records.train_eval_record(model_dir)
  if record and record.get("best"):
    summary["best"] = dict(record["best"], metric=record["metric"],
                           model_dir=os.path.join(model_dir, "best"))
  return summary


def plot(model_dir: str, path: str, split: str = "validation") -> None:
  """A PNG of the training loss (left) and each eval metric (right) over steps."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")  # no display: a file only
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  train = run_records.read_scalars(model_dir)
  evals = run_records.read_scalars(run_records.eval_dir(model_dir, split))
  figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
  for tag in run_records.LOSS_TAGS:
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
