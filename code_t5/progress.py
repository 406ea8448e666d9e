"""Progress of long runs: a line while training or decoding, a time budget, a line at the end.

mesh-tf's Estimator logs thousands of lines and none of them says how far a run is. Under
`mesh_transformer_main` importing code_t5 wraps the Estimator's `train` and `predict`
(upstream/estimator.py: `TrainProgressHook` joins every training, `predicted` reads every
prediction), so every run prints, on stderr:

  code_t5: train step 120/600 | loss 3.214 | 2.91 steps/s | 2m45s left
  code_t5: train step 69/~75 (4-minute budget) | loss 0.514 | 0.31 steps/s | 16s left
  code_t5: trained steps 0 -> 600 in 3m26s (2.91 steps/s), last loss 2.310; reached run.train_steps; checkpoint runs/dev/model.ckpt-600
  code_t5: decoded 64 examples (3.1/s)
  code_t5: decoded 256 examples in 1m22s (3.1/s)

The loss is the mean over the steps since the previous line. Training also writes it to
TensorBoard every `summary_steps` steps (`code_t5/loss`, beside mesh-tf's own `loss`, which
it writes every 100 steps): that is the curve `python -m code_t5.summaries --plot` draws.

  --gin_param="code_t5.progress.seconds = 30"       # a line every 30 s (default 15)
  --gin_param="code_t5.train_budget.minutes = 5"    # stop training after 5 min of steps

A budget stops training at the first step past it, saves that step's checkpoint and says
so; the same command run again trains for another budget from there. Start-up (graph
building, restoring) is not counted: the budget is time spent stepping. A run trained in
segments (modes/train_eval.py: training, an eval, training again) is one run under `one_run`: its
lines count to run.train_steps, its budget adds up every segment's steps, and one closing
line ends it.
"""

import contextlib
import sys
import time
from typing import Optional

import gin
import tensorflow.compat.v1 as tf


LOSS_TAG = "code_t5/loss"


@gin.configurable(module="code_t5")
def progress(seconds: float = 15.0, summary_steps: int = 10):
  """(seconds between progress lines, steps between `code_t5/loss` summaries)."""
  return seconds, summary_steps


@gin.configurable(module="code_t5")
def train_budget(minutes: Optional[float] = None) -> Optional[float]:
  """Wall time of training steps after which a run stops (None: run.train_steps decides)."""
  return minutes


def duration(seconds: float) -> str:
  seconds = int(round(seconds))
  if seconds < 60:
    return f"{seconds}s"
  if seconds < 3600:
    return f"{seconds // 60}m{seconds % 60:02d}s"
  return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def say(text: str) -> None:
  sys.stderr.write(f"code_t5: {text}\n")
  sys.stderr.flush()


class Run:
  """What the progress lines and the budget count over: one Estimator.train call, or under
  `one_run` every call of a run trained in segments (modes/train_eval.py)."""

  def __init__(self, train_steps: Optional[int]):
    self.train_steps = train_steps
    self.budget_minutes = train_budget()
    self.first_step = None
    self.step = None
    self.seconds = 0.0  # spent stepping by the segments that ended
    self.last_loss = None
    self.out_of_budget = False
    self.why = None  # the closing line's reason, if not the budget's or train_steps'
    self.model_dir = None

  def close(self, rate: float) -> None:
    if self.first_step is None:
      return  # nothing trained
    if self.why:
      why = self.why
    elif self.out_of_budget:
      why = (f"stopped by the {self.budget_minutes:g}-minute budget "
             "(code_t5.train_budget.minutes)")
    elif self.train_steps and self.step >= self.train_steps:
      why = "reached run.train_steps"
    else:
      why = "stopped"
    loss = f", last loss {self.last_loss:.3f}" if self.last_loss is not None else ""
    say(f"trained steps {self.first_step} -> {self.step} in {duration(self.seconds)} "
        f"({rate:.2f} steps/s){loss}; {why}; checkpoint "
        f"{self.model_dir.rstrip('/')}/model.ckpt-{self.step}")


_run: Optional[Run] = None  # set by one_run


@contextlib.contextmanager
def one_run(train_steps: Optional[int]):
  """Every Estimator.train in the block is one run to `train_steps`: progress lines count to
  it, the time budget counts the steps of all of them, and one closing line ends the block."""
  global _run
  run = _run = Run(train_steps)
  try:
    yield run
  finally:
    _run = None
    trained = (run.step or 0) - (run.first_step or 0)
    run.close(trained / run.seconds if run.seconds > 0 else 0.0)


class TrainProgressHook(tf.train.SessionRunHook):
  """Prints progress, writes the loss to TensorBoard, and stops at the time budget."""

  def __init__(self, model_dir: str, max_steps: Optional[int], clock=time.monotonic):
    self._model_dir = model_dir
    self._clock = clock
    self._seconds, self._summary_steps = progress()
    # Within one_run, the run's; else this call is the run.
    self._own_run = _run is None
    self._run = Run(max_steps) if self._own_run else _run
    self._run.model_dir = model_dir
    self._max_steps = self._run.train_steps
    self._budget_minutes = self._run.budget_minutes

  def begin(self):
    self._global_step = tf.train.get_global_step()
    # The Estimator puts the model function's loss here before it creates the session.
    losses = tf.get_collection(tf.GraphKeys.LOSSES)
    self._loss = losses[-1] if losses else None
    self._writer = tf.summary.FileWriterCache.get(self._model_dir)

  def after_create_session(self, session, coord):
    del coord
    self._first_step = self._step = int(session.run(self._global_step))
    if self._run.first_step is None:
      self._run.first_step = self._first_step
    self._start = self._last_line = self._clock()
    self._line_losses, self._summary_losses = [], []
    self._rate_origin = None  # (time, step) at the end of the first step: it builds kernels

  def before_run(self, run_context):
    del run_context
    return tf.train.SessionRunArgs(self._loss) if self._loss is not None else None

  def _spent(self, now):
    """Seconds of stepping in this run: earlier segments' and this one's."""
    return self._run.seconds + now - self._start

  def after_run(self, run_context, run_values):
    # One session.run is one step here; on a TPU, iterations_per_loop steps: read the step.
    step = self._step + 1
    if self._seconds and (self._clock() - self._last_line >= self._seconds):
      step = int(run_context.session.run(self._global_step))
    self._step = step
    if run_values.results is not None:
      loss = float(run_values.results)
      self._run.last_loss = loss
      self._line_losses.append(loss)
      self._summary_losses.append(loss)
      if self._summary_steps and step % self._summary_steps == 0:
        self._write_loss(step)
    now = self._clock()
    if self._rate_origin is None:
      self._rate_origin = (now, step)
    budget = self._budget_minutes
    if budget is not None and self._spent(now) >= 60 * budget:
      self._run.out_of_budget = True
      run_context.request_stop()
    elif self._seconds and now - self._last_line >= self._seconds:
      self._last_line = now
      say(self._line(now))
      self._line_losses = []

  def _write_loss(self, step):
    mean = sum(self._summary_losses) / len(self._summary_losses)
    self._summary_losses = []
    self._writer.add_summary(tf.Summary(value=[tf.Summary.Value(tag=LOSS_TAG,
                                                                simple_value=mean)]), step)

  def _rate(self, now):
    """Steps per second after the first step (which is slow: it builds the kernels)."""
    origin_time, origin_step = self._rate_origin or (self._start, self._first_step)
    if self._step == origin_step:  # one step so far: count it
      origin_time, origin_step = self._start, self._first_step
    elapsed = now - origin_time
    return (self._step - origin_step) / elapsed if elapsed > 0 else 0.0

  def _line(self, now):
    rate = self._rate(now)
    target = f"/{self._max_steps}" if self._max_steps else ""
    left = []
    if self._max_steps and rate > 0:
      left.append((self._max_steps - self._step) / rate)
    if self._budget_minutes is not None:
      budget_left = max(60 * self._budget_minutes - self._spent(now), 0)
      left.append(budget_left)
      # Under a budget that ends first, the target is where it will stop, not train_steps.
      budget_step = self._step + int(budget_left * rate)
      if rate > 0 and (not self._max_steps or budget_step < self._max_steps):
        target = f"/~{budget_step} ({self._budget_minutes:g}-minute budget)"
    parts = [f"train step {self._step}{target}"]
    if self._line_losses:
      parts.append(f"loss {sum(self._line_losses) / len(self._line_losses):.3f}")
    parts.append(f"{rate:.2f} steps/s")
    if left:
      parts.append(f"{duration(max(min(left), 0))} left")
    return " | ".join(parts)

  def end(self, session):
    self._step = self._run.step = int(session.run(self._global_step))
    if self._summary_losses:
      self._write_loss(self._step)
    self._writer.flush()
    now = self._clock()
    self._run.seconds += now - self._start
    if self._own_run:
      self._run.close(self._rate(now))


def predicted(results):
  """Estimator.predict's `results`, passed on, with progress lines counting what was decoded
  (eval, infer) or scored (score mode)."""
  seconds, _ = progress()
  start = last = time.monotonic()
  count, padding, verb = 0, 0, "decoded"
  for result in results:
    if count == 0 and isinstance(result, dict) and "scores" in result:
      verb = "scored"
    # mesh-tf pads the last batch with empty rows: examples end where the padding begins.
    padding = padding + 1 if _is_padding(result) else 0
    count += 1
    yield result
    now = time.monotonic()
    if seconds and now - last >= seconds:
      last = now
      say(f"{verb} {count} examples ({count / (now - start):.1f}/s)")
  count -= padding
  elapsed = time.monotonic() - start
  rate = f" ({count / elapsed:.1f}/s)" if elapsed > 0 else ""
  say(f"{verb} {count} examples in {duration(elapsed)}{rate}")


def _is_padding(result) -> bool:
  """A row of the zeros mesh-tf pads a last batch with: its inputs empty (b"" once the graph
  detokenized them, else all ids 0). A result without inputs counts as an example."""
  inputs = result.get("inputs") if isinstance(result, dict) else None
  if inputs is None:
    return False
  if isinstance(inputs, bytes):
    return not inputs
  return not any(int(i) for i in getattr(inputs, "flat", [inputs]))
