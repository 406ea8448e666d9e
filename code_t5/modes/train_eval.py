"""Train and evaluate in one run: a full-line eval every N steps, the best checkpoint kept apart,
the learning rate lowered when the metric stops improving, and an early stop.

`gin_configs/train_and_eval.gin`, composed after the model file of a training run, makes
mesh-tf's training step function (`utils.run.train_model_fn`) `train_and_evaluate`: it trains
to the next multiple of EVAL_EVERY steps (a checkpoint is saved there), decodes EVAL_EXAMPLES of
SPLIT greedily with the same Estimator and scores them with the Tasks' metrics, as
`eval_full_line.gin` does in a launch of its own (TensorBoard: `<model_dir>/<split>_eval/`) but
over the training's window (the Estimator's; eval_full_line.gin reads DECODING_LENGTHS),
then trains on, until `run.train_steps`, the time budget (`code_t5.train_budget`, counted over
the whole run) or the early stop.

The record of the run is `<model_dir>/train_eval.json` (written whole or not at all after
each eval): every eval's step and value of the chosen metric, and the best. The best
checkpoint is copied into `<model_dir>/best/` before the record names it, so that
`keep_checkpoint_max` never deletes it; that folder is a model dir of its own (its `checkpoint`
file names the copy), which eval, infer, score and export take as `--model_dir=<run>/best`.
A run killed anywhere and started again with the same command reads the record, puts `best/`
back in agreement with it, evaluates a saved checkpoint the record does not have yet, and
trains on.

On a plateau (`lr_patience` evals without an improvement since the best or the last drop) the
learning rate is multiplied by `lr_factor`, down to `lr_min_factor` of the schedule's: under
train_and_evaluate the run's schedule is wrapped by `plateau_learning_rate` (a gin finalize
hook, below), which multiplies it by the factor the record holds, so the lowered rate shows in
TensorBoard's `learning_rate` and outlives a restart. Without `lr_patience` the factor stays 1.

A sibling eval (`eval_full_line.gin` with `CHECKPOINT_STEP = None`, launched beside a training
run on the same model dir) evaluates each new checkpoint as it appears and keeps the same
record and best/ (`new_checkpoints`); it ends by itself once it has evaluated the step the
training ends at (run.train_steps of the training's operative_config.gin), or after
`code_t5.sibling_eval.idle_minutes` without a new checkpoint. One writer per record: a run
trained with train_and_eval.gin keeps its own. The sibling evaluates a copy of each checkpoint
(`<model_dir>/sibling_eval_reads/`), so that the training's rotation (keep_checkpoint_max) may
delete the original meanwhile; a checkpoint deleted before it could be copied is skipped, in
a line that counts them.

The metric (`code_t5.train_and_evaluate.metric`, default "edit_similarity") is a Task's
metric name; on a Mixture, the mean over its Tasks that report it (the full-line Tasks), or
one Task's with `code_t5.train_and_evaluate.task`.
"""

import json
import os
import time
from typing import Optional

import gin

from code_t5 import files
from code_t5 import gin_config
from code_t5 import progress
from code_t5 import run_records

BEST_DIR = "best"
PINNED_DIR = "sibling_eval_reads"  # the copy of the checkpoint a sibling eval is reading
RUN = ("", "mesh_tensorflow.transformer.utils.run")  # utils.run's key in gin's config

# The factor of the learning rate for the graph a training segment builds next (its schedule is
# read when the segment's graph is built); set from the record by train_and_evaluate.
_lr_factor = 1.0


@gin.configurable(module="code_t5")
def plateau_learning_rate(step, total_train_steps, schedule=gin.REQUIRED):
  """`schedule`'s rate (a function of step and total_train_steps, a list of factors as mesh-tf
  takes them, or a number) times the factor a plateau lowered it to."""
  from mesh_tensorflow.transformer import learning_rate_schedules  # pylint: disable=g-import-not-at-top
  if isinstance(schedule, (list, tuple)):
    rate = learning_rate_schedules.product_learning_rate(step, total_train_steps, schedule)
  elif callable(schedule):
    rate = schedule(step=step, total_train_steps=total_train_steps)
  else:
    rate = schedule
  return rate * _lr_factor


def wrapped_schedule(config):
  """gin's finalize hook (upstream.install registers it): when a run trains through
  train_and_evaluate, its learning rate schedule is the one it set, through
  plateau_learning_rate (a factor of 1 until a plateau lowers it)."""
  def selector(reference):
    return getattr(getattr(reference, "configurable", None), "selector", None)
  run = config.get(RUN, {})
  schedule = run.get("learning_rate_schedule")
  if (selector(run.get("train_model_fn")) != "code_t5.train_and_evaluate" or schedule is None
      or selector(schedule) == "code_t5.plateau_learning_rate"):
    return None
  return {"utils.run.learning_rate_schedule": gin.config.ConfigurableReference(
      "code_t5.plateau_learning_rate", False),
          "code_t5.plateau_learning_rate.schedule": schedule}
read_record = run_records.train_eval_record


def record_path(model_dir: str) -> str:
  return os.path.join(model_dir, run_records.TRAIN_EVAL_RECORD)


def metric_value(scalars: dict, step: int, metric: str, task: Optional[str] = None):
  """The value of `metric` at `step` among an eval's scalars (run_records.read_scalars): the
  named Task's, or the mean over every Task that reports it; None if none does."""
  values = []
  for tag, points in scalars.items():
    parts = tag.split("/")
    if len(parts) == 3 and parts[0] == "eval" and parts[2] == metric and (
        task is None or parts[1] == task):
      at_step = [value for s, _, value in points if s == step]
      if at_step:
        values.append(at_step[-1])
  return sum(values) / len(values) if values else None


class CheckpointGone(FileNotFoundError):
  """A checkpoint's files are not (all) there: rotated away by keep_checkpoint_max."""


def _copy_checkpoint(source_dir: str, step: int, target_dir: str) -> None:
  """Copies model.ckpt-<step>.* of `source_dir` into `target_dir` (overwriting what a killed
  copy left); CheckpointGone if its index or data are missing or vanish while it copies."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  files.makedirs(target_dir)
  sources = files.glob(os.path.join(source_dir, f"model.ckpt-{step}.*"))
  names = [os.path.basename(source) for source in sources]
  if not (f"model.ckpt-{step}.index" in names
          and any(".data-" in name for name in names)):
    raise CheckpointGone(f"{source_dir}: no whole checkpoint {step} (its index and data)")
  for source in sources:
    with files.storage_errors(source):
      try:
        tf.io.gfile.copy(source, os.path.join(target_dir, os.path.basename(source)),
                         overwrite=True)
      except tf.errors.NotFoundError:
        raise CheckpointGone(f"{source}: removed while it was being copied") from None


def _copy_best(model_dir: str, step: int, source_dir: Optional[str] = None) -> None:
  """Copies checkpoint `step` of `source_dir` (default: the model dir) into best/."""
  _copy_checkpoint(source_dir or model_dir, step, os.path.join(model_dir, BEST_DIR))


def _agree_best_with(model_dir: str, record: dict) -> None:
  """best/'s checkpoint file names the record's best, and no other checkpoint's files stay."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  best = record.get("best")
  best_dir = os.path.join(model_dir, BEST_DIR)
  if not best:
    if files.isdir(best_dir):  # a first copy a kill cut short
      files.rmtree(best_dir)
    return
  name = f"model.ckpt-{best['step']}"
  tf.train.update_checkpoint_state(best_dir, name, all_model_checkpoint_paths=[name])
  for path in files.glob(os.path.join(best_dir, "model.ckpt-*")):
    if not os.path.basename(path).startswith(name + "."):
      with files.storage_errors(path):
        tf.io.gfile.remove(path)


def update_record(model_dir: str, record: dict, step: int, value: Optional[float],
                  min_delta: float, plateau=None, checkpoint_dir: Optional[str] = None) -> dict:
  """The record after an eval at `step`: the eval appended and, if it beats the best by more
  than `min_delta`, its checkpoint (in `checkpoint_dir`, default the model dir) copied to
  best/ (before the record is written, so that a record never names a best that is not
  there). `plateau`: (lr_patience, lr_factor, lr_min_factor), the learning rate's drop after
  lr_patience evals without improvement."""
  record = dict(record, evals=record["evals"] + [{"step": step, "value": value}])
  best = record.get("best")
  if value is not None and (best is None or value > best["value"] + min_delta):
    _copy_best(model_dir, step, checkpoint_dir)
    record["best"] = {"step": step, "value": value}
  if plateau and plateau[0] is not None:
    patience, factor, min_factor = plateau
    since = max([record["best"]["step"] if record.get("best") else 0]
                + [drop["step"] for drop in record.get("lr_drops", [])])
    lowered = max(record.get("lr_factor", 1.0) * factor, min_factor)
    if (sum(1 for e in record["evals"] if e["step"] > since) >= patience
        and lowered < record.get("lr_factor", 1.0)):
      record["lr_factor"] = lowered
      record["lr_drops"] = record.get("lr_drops", []) + [{"step": step, "lr_factor": lowered}]
  files.write_atomically(record_path(model_dir), json.dumps(record, indent=1))
  _agree_best_with(model_dir, record)
  return record


def _open_record(model_dir: str, metric: str, task: Optional[str], split: str) -> dict:
  """The run's record (a new one before its first eval), refused if it chose its best by
  another metric, Task or split; best/ put back in agreement with it (after a kill)."""
  record = read_record(model_dir) or {"metric": metric, "task": task, "split": split,
                                      "evals": [], "best": None}
  if (record["metric"], record["task"], record["split"]) != (metric, task, split):
    raise ValueError(f"{record_path(model_dir)}: this run chose its best by {record['metric']} "
                     f"of {record['task'] or 'every Task'} on {record['split']}; it cannot "
                     f"change to {metric} of {task or 'every Task'} on {split}")
  _agree_best_with(model_dir, record)
  return record


def _eval_line(step: int, metric: str, value: Optional[float], record: dict) -> str:
  best = record.get("best")
  return (f"eval at step {step}: {metric} {value if value is None else round(value, 3)}"
          + (f"; best {best['value']:.3f} at step {best['step']}" if best else ""))


def evals_without_improvement(record: dict) -> int:
  """Evals since the best one (0 when the last eval is the best)."""
  best = record.get("best")
  if not best:
    return len(record["evals"])
  return sum(1 for e in record["evals"] if e["step"] > best["step"])


@gin.configurable(module="code_t5", denylist=["estimator", "vocabulary", "sequence_length",
                                               "batch_size", "train_dataset_fn", "train_steps",
                                               "ensemble_inputs"])
def train_and_evaluate(estimator, vocabulary, sequence_length, batch_size, train_dataset_fn,
                       train_steps, ensemble_inputs, *, eval_every_steps=gin.REQUIRED,
                       eval_dataset_fn=gin.REQUIRED, split="validation",
                       metric="edit_similarity", task=None, min_delta=0.0,
                       stop_patience=None, lr_patience=None, lr_factor=0.5,
                       lr_min_factor=0.01, **train_kwargs):
  """mesh-tf's `train_model` in segments of `eval_every_steps`, each followed by a full-line
  eval of its last checkpoint (see the module doc). `stop_patience`: stop after that many
  evals without an improvement of more than `min_delta` (None: never); `lr_patience`: multiply
  the learning rate by `lr_factor` after that many (None: never), not below `lr_min_factor`."""
  # pylint: disable=g-import-not-at-top
  from mesh_tensorflow.transformer import utils as mtf_utils
  global _lr_factor
  model_dir = estimator.model_dir
  record = _open_record(model_dir, metric, task, split)
  eval_dir = run_records.eval_dir(model_dir, split)

  def evaluate(step):
    nonlocal record
    progress.say(f"eval of step {step} on {split} ...")
    mtf_utils.eval_model(estimator, vocabulary, sequence_length, batch_size, split, model_dir,
                         eval_dataset_fn, None, step)
    value = metric_value(run_records.read_scalars(eval_dir), step, metric, task)
    drops = len(record.get("lr_drops", []))
    record = update_record(model_dir, record, step, value, min_delta,
                           (lr_patience, lr_factor, lr_min_factor))
    progress.say(_eval_line(step, metric, value, record)
                 + (f"; learning rate lowered to {record['lr_factor']:g} of the schedule's"
                    if len(record.get("lr_drops", [])) > drops else ""))

  with progress.one_run(train_steps) as run:
    step = files.latest_checkpoint_step(model_dir) or 0
    while True:
      if step and step not in [e["step"] for e in record["evals"]]:
        evaluate(step)  # each segment's last checkpoint, or one a killed run did not evaluate
      if stop_patience is not None and evals_without_improvement(record) >= stop_patience:
        run.why = (f"stopped early: {stop_patience} evals without an improvement of "
                   f"{metric} over {record['best']['value']:.3f} (step {record['best']['step']})"
                   if record.get("best") else f"stopped early: no {metric} in {stop_patience} evals")
        break
      if step >= train_steps or run.out_of_budget:
        break
      target = min(train_steps, (step // eval_every_steps + 1) * eval_every_steps)
      _lr_factor = record.get("lr_factor", 1.0)
      mtf_utils.train_model(estimator, vocabulary, sequence_length, batch_size,
                            train_dataset_fn, target, ensemble_inputs, **train_kwargs)
      step = files.latest_checkpoint_step(model_dir) or 0


@gin.configurable(module="code_t5")
def sibling_eval(idle_minutes=60.0, metric="edit_similarity", task=None, min_delta=0.0):
  """How an eval launched with CHECKPOINT_STEP = None waits and keeps its record."""
  return idle_minutes, metric, task, min_delta


def new_checkpoints(model_dir: str, skip_until: int = 0, poll_seconds: float = 5.0):
  """Each new checkpoint of `model_dir` as it appears, for mesh-tf's eval loop, which has written
  a checkpoint's metrics when it asks for the next: the record and best/ are updated then. Ends
  after the training's last step (its run.train_steps) or `idle_minutes` without a new one."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  idle_minutes, metric, task, min_delta = sibling_eval()
  split = gin_config.run_parameter("dataset_split", "train")  # utils.run's default
  record = _open_record(model_dir, metric, task, split)
  evaluated = {e["step"] for e in record["evals"]}
  last_new = time.monotonic()

  def last_step():
    return run_records.run_bindings(model_dir).get("train_steps")

  def finished():
    final = last_step()
    if final is not None and final in evaluated:
      return True
    if time.monotonic() - last_new >= 60 * idle_minutes:
      progress.say(f"eval: no new checkpoint in {model_dir} for {idle_minutes:g} minutes; done")
      return True
    return False

  if finished():
    return
  progress.say(f"eval: waiting for new checkpoints in {model_dir} (until step {last_step()} "
               f"of its training, or {idle_minutes:g} idle minutes)")
  pinned = os.path.join(model_dir, PINNED_DIR)
  rotated = 0
  for path in tf.train.checkpoints_iterator(model_dir, timeout=poll_seconds,
                                            timeout_fn=finished):
    step = files.checkpoint_step(path)
    if step <= skip_until or step in evaluated:
      continue
    last_new = time.monotonic()
    # The eval reads a copy: the training's next saves may delete the original
    # (keep_checkpoint_max) while the eval restores it, or before best/ copies it.
    if files.isdir(pinned):
      files.rmtree(pinned)
    try:
      _copy_checkpoint(model_dir, step, pinned)
    except CheckpointGone as e:
      rotated += 1
      progress.say(f"eval: checkpoint {step} skipped, deleted by the training's "
                   f"keep_checkpoint_max before it could be copied ({rotated} so far): {e}")
      continue
    yield os.path.join(pinned, os.path.basename(path))
    value = metric_value(run_records.read_scalars(run_records.eval_dir(model_dir, split)),
                         step, metric, task)
    record = update_record(model_dir, record, step, value, min_delta, checkpoint_dir=pinned)
    files.rmtree(pinned)
    evaluated.add(step)
    last_new = time.monotonic()  # the idle clock starts after the eval, not at the checkpoint
    progress.say(_eval_line(step, metric, value, record))
    if last_step() is not None and step >= last_step():
      return
