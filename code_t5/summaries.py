"""python -m code_t5.summaries --model_dir=DIR: what a run wrote, as a table.

Reads the TensorBoard event files that mesh_transformer_main leaves in the model dir (train)
and in `<split>_eval/` (eval): the loss curve's ends, steps, and the latest eval metrics.
"""

import argparse
import json
import os
import sys

from code_t5 import files


def read_scalars(event_dir: str):
  """{tag: [(step, wall_time, value)]} from every event file directly in `event_dir`."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  scalars = {}
  for path in files.glob(os.path.join(event_dir, "events.out.tfevents.*")):
    for event in tf.compat.v1.train.summary_iterator(path):
      for value in event.summary.value:
        if value.HasField("simple_value"):
          number = value.simple_value
        elif value.HasField("tensor") and not value.tensor.string_val:
          number = float(tf.make_ndarray(value.tensor))
        else:
          continue
        scalars.setdefault(value.tag, []).append((event.step, event.wall_time, number))
  return scalars


def summarize(model_dir: str, split: str = "validation") -> dict:
  train = read_scalars(model_dir)
  evals = read_scalars(os.path.join(model_dir, f"{split}_eval"))
  summary = {"model_dir": model_dir}
  loss = sorted(train.get("loss", []))
  if loss:
    summary["train"] = {"first_step": loss[0][0], "first_loss": round(loss[0][2], 4),
                        "last_step": loss[-1][0], "last_loss": round(loss[-1][2], 4),
                        "first_summary_wall_time": loss[0][1]}
  metrics = {}
  for tag, values in evals.items():
    if tag.startswith("eval/"):
      step, _, value = max(values)
      metrics[tag[len("eval/"):]] = {"step": step, "value": round(value, 3)}
  summary["eval"] = metrics
  return summary


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(prog="python -m code_t5.summaries", description=__doc__)
  parser.add_argument("--model_dir", required=True)
  parser.add_argument("--split", default="validation")
  parser.add_argument("--json", help="also write the summary here")
  args = parser.parse_args(argv)
  try:
    files.check_bucket(args.model_dir)  # a bucket refused is not "no such directory"
    if not files.isdir(args.model_dir):
      raise files.StorageError(f"{args.model_dir}: no such directory")
    summary = summarize(args.model_dir, args.split)
  except Exception as e:  # pylint: disable=broad-except
    if not isinstance(e, files.StorageError) and not files.is_tensorflow_error(e):
      raise
    print(f"code_t5.summaries: error: {files.first_line(e)}", file=sys.stderr)
    return 1
  if "train" in summary:
    t = summary["train"]
    print(f"train  loss {t['first_loss']} at step {t['first_step']} -> "
          f"{t['last_loss']} at step {t['last_step']}")
  for name, m in sorted(summary["eval"].items()):
    print(f"eval   {name:<50} {m['value']:>8.3f}  (step {m['step']})")
  if not summary["eval"]:
    print(f"eval   no metrics in {os.path.join(args.model_dir, args.split + '_eval')}")
  if args.json:
    files.write_atomically(args.json, json.dumps(summary, indent=1))
  return 0


if __name__ == "__main__":
  sys.exit(main())
