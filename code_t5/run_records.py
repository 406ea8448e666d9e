"""What a run leaves in its model dir, read back: its scalars (the TensorBoard event files of
training and of each `<split>_eval/`), the train-and-eval record, the lengths and window stride
an eval recorded, and the run's `utils.run` bindings (from its operative_config.gin).

The library half of `python -m code_t5.summaries`, apart so that what `import code_t5` loads
(train-and-eval, the eval's record) does not import that command: run as `python -m`, a module
already imported gets runpy's warning before its output.
"""

import json
import os

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
