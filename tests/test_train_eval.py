"""Train and evaluate in one run (gin_configs/train_and_eval.gin, code_t5/modes/train_eval.py): evals
at the expected steps with their metrics in TensorBoard, the best checkpoint kept out of
keep_checkpoint_max's rotation and usable as a model dir, the rate lowered and then the run
stopped on a planted plateau, and a run killed in the middle of an eval that the same command
finishes."""

import json
import os
import signal
import subprocess
import time

import pytest

from code_t5 import run_records
from code_t5.modes import train_eval
import mesh_main_runs
from conftest import (QUIET_TF, REPO_ROOT, TINY_MODEL, checkpoint_tensors, mesh_main_command,
                      mesh_main_runs_command)

pytestmark = pytest.mark.xdist_group("train_eval")

STEPS, EVERY = 30, 10
PLATEAU_STEPS = 40
PLATEAU_BEST = 10  # its first eval: with min_delta 1e9 no later one improves on it
CAUSAL = ["models/causal_lm_dev.gin", "mesh/cpu.gin"]
RUN = [
    "MIXTURE_NAME = 'flcc_python_causal'",
    f"run.train_steps = {STEPS}",
    "run.keep_checkpoint_max = 1",  # only the newest checkpoint stays in the model dir
    f"EVAL_EVERY = {EVERY}",
    "EVAL_EXAMPLES = 6",
] + TINY_MODEL + [
    # 0.1, so that 30 steps give completions with text, and edit similarity moves.
    "learning_rate_schedule_noam.warmup_steps = 100",
]


def _train_and_eval(model_dir, data_dir, params=()):
  return mesh_main_command(model_dir, data_dir, CAUSAL + ["train_and_eval.gin"],
                           RUN + list(params))


def _eval_of_best(model_dir, data_dir):
  """eval_full_line.gin on <model_dir>/best, the latest (only) checkpoint there."""
  return mesh_main_command(os.path.join(model_dir, "best"), data_dir,
                           CAUSAL + ["eval_full_line.gin"],
                           RUN + ["EVAL_EXAMPLES = 6", "CHECKPOINT_STEP = -1"])


def _export(model_dir, export_dir, data_dir, step=-1):
  return mesh_main_command(model_dir, data_dir, CAUSAL + ["export.gin"],
                           RUN + [f"EXPORT_PATH = '{export_dir}'", f"CHECKPOINT_STEP = {step}"])


def _kill_during_first_eval(command):
  """Starts `command`, kills it (-9) once its first eval has decoded, before it is recorded."""
  proc = subprocess.Popen(command, cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True,
                          env=QUIET_TF)
  seen = []
  for line in proc.stderr:
    seen.append(line)
    if line.startswith("code_t5: decoded "):
      proc.send_signal(signal.SIGKILL)
      break
  proc.wait()
  assert proc.returncode == -signal.SIGKILL, "".join(seen[-40:])


@pytest.fixture(scope="module")
def runs(flcc_data_dir, tmp_path_factory):
  """A train-and-eval run killed in its first eval, then, in one process: the same command
  again, a run whose metric can never improve enough (min_delta 1e9: a planted plateau) with
  LR_PATIENCE 1 and STOP_PATIENCE 2 (its checkpoints all kept), an eval of the first run's
  best/, and two exports of the plateau run: of its best/ and of its best step.
  {name: (model dir or export dir, what it printed)}."""
  model_dir = str(tmp_path_factory.mktemp("train_eval"))
  plateau_dir = str(tmp_path_factory.mktemp("plateau"))
  exports = tmp_path_factory.mktemp("exports")
  _kill_during_first_eval(_train_and_eval(model_dir, flcc_data_dir))
  assert train_eval.read_record(model_dir) is None  # killed before the first record
  commands = [_train_and_eval(model_dir, flcc_data_dir),
              _train_and_eval(plateau_dir, flcc_data_dir, [
                  f"run.train_steps = {PLATEAU_STEPS}", "LR_PATIENCE = 1", "STOP_PATIENCE = 2",
                  "code_t5.train_and_evaluate.min_delta = 1e9", "run.keep_checkpoint_max = 20"]),
              _eval_of_best(model_dir, flcc_data_dir),
              _export(os.path.join(plateau_dir, "best"), exports / "best", flcc_data_dir),
              _export(plateau_dir, exports / "step", flcc_data_dir, step=PLATEAU_BEST)]
  proc = subprocess.run(mesh_main_runs_command(commands), cwd=REPO_ROOT, capture_output=True,
                        text=True, env=QUIET_TF)
  assert proc.returncode == 0, proc.stderr[-4000:]
  outputs = [text for _, text in mesh_main_runs.split_output(proc.stderr, time.time())]
  return {"resumed": (model_dir, outputs[0]), "plateau": (plateau_dir, outputs[1]),
          "best": (os.path.join(model_dir, "best"), outputs[2]),
          "export best": (str(exports / "best"), outputs[3]),
          "export step": (str(exports / "step"), outputs[4])}


@pytest.mark.slow
def test_evals_at_every_period_in_tensorboard_and_the_record(runs):
  model_dir, printed = runs["resumed"]
  record = train_eval.read_record(model_dir)
  assert [e["step"] for e in record["evals"]] == [10, 20, 30], record
  scalars = run_records.read_scalars(os.path.join(model_dir, "validation_eval"))
  tag = "eval/flcc_python_full_line/edit_similarity"
  for e in record["evals"]:
    assert e["value"] == pytest.approx(
        train_eval.metric_value(scalars, e["step"], "edit_similarity")), (e, scalars[tag])
  # The eval at 10 the kill cut short was done again: its metrics stand at step 10.
  assert 10 in {step for step, _, _ in scalars[tag]}
  assert any(value > 0 for _, _, value in scalars[tag]), scalars[tag]
  # One closing line for the rerun's whole training, 10 -> 30.
  closing = [l for l in printed.splitlines() if l.startswith("code_t5: trained steps")]
  assert len(closing) == 1 and closing[0].startswith("code_t5: trained steps 10 -> 30 "), closing
  assert "reached run.train_steps" in closing[0]


@pytest.mark.slow
def test_the_best_checkpoint_is_the_argmax_and_outlives_the_rotation(runs):
  model_dir, _ = runs["resumed"]
  record = train_eval.read_record(model_dir)
  values = [e["value"] for e in record["evals"]]
  best_step = record["evals"][values.index(max(values))]["step"]  # the first of equals
  assert record["best"] == {"step": best_step, "value": max(values)}
  best_dir = os.path.join(model_dir, "best")
  assert {f.split(".")[1] for f in os.listdir(best_dir) if f.startswith("model.ckpt-")} == {
      f"ckpt-{best_step}"}
  assert os.path.exists(os.path.join(best_dir, f"model.ckpt-{best_step}.index"))
  with open(os.path.join(best_dir, "checkpoint")) as f:
    assert f'model_checkpoint_path: "model.ckpt-{best_step}"' in f.read()
  kept = {f.split(".")[1] for f in os.listdir(model_dir) if f.startswith("model.ckpt-")}
  assert kept == {f"ckpt-{STEPS}"}  # keep_checkpoint_max = 1 rotated the others away
  # best/ is a model dir: its eval scores the best step with the metric the record holds.
  eval_dir, printed = runs["best"]
  scalars = run_records.read_scalars(os.path.join(eval_dir, "validation_eval"))
  assert train_eval.metric_value(scalars, best_step, "edit_similarity") == pytest.approx(
      max(values), abs=1e-6), printed[-2000:]


@pytest.mark.slow
def test_a_plateau_lowers_the_rate_then_stops_the_run(runs):
  model_dir, printed = runs["plateau"]
  record = train_eval.read_record(model_dir)
  assert [e["step"] for e in record["evals"]] == [10, 20, 30], record
  assert record["best"]["step"] == 10
  # One eval without improvement (20) halves the rate; one more after the drop (30) halves it
  # again, and makes two since the best: the stop.
  assert record["lr_drops"] == [{"step": 20, "lr_factor": 0.5}, {"step": 30, "lr_factor": 0.25}]
  closing = [l for l in printed.splitlines() if l.startswith("code_t5: trained steps")]
  assert len(closing) == 1 and closing[0].startswith("code_t5: trained steps 0 -> 30 "), closing
  assert "stopped early: 2 evals without an improvement" in closing[0]
  # TensorBoard's learning_rate: the shipped schedule (0.1 here, decaying linearly to 0 at
  # PLATEAU_STEPS; mesh-tf writes it at each segment's first step, computed at the step
  # before) times the factor in force when the segment began.
  rates = sorted(run_records.read_scalars(model_dir)["learning_rate"])
  assert [step for step, _, _ in rates] == [1, 11, 21], rates
  for step, _, rate in rates:
    factor = 0.5 if step > 20 else 1.0
    assert rate == pytest.approx(factor * 0.1 * (PLATEAU_STEPS - (step - 1)) / PLATEAU_STEPS,
                                 rel=1e-5), rates


@pytest.mark.slow
def _saved_model_variables(export_dir):
  import glob  # pylint: disable=g-import-not-at-top
  [saved_model] = glob.glob(os.path.join(export_dir, "[0-9]*"))
  return checkpoint_tensors(os.path.join(saved_model, "variables", "variables"))


@pytest.mark.slow
def test_exporting_the_best_equals_exporting_its_step(runs):
  model_dir, _ = runs["plateau"]
  assert train_eval.read_record(model_dir)["best"]["step"] == PLATEAU_BEST
  best, step = (_saved_model_variables(runs[name][0]) for name in ("export best", "export step"))
  assert best.keys() == step.keys() and len(best) > 10, sorted(best)
  for name, value in best.items():
    assert (value == step[name]).all(), name
  # Another step's export differs: the comparison can tell checkpoints apart.
  latest = checkpoint_tensors(os.path.join(model_dir, f"model.ckpt-{PLATEAU_STEPS - 10}"))
  assert any(not (latest[name] == value).all() for name, value in best.items()
             if name in latest), "steps 10 and 30 look the same"


@pytest.mark.slow
def test_a_sibling_eval_follows_a_training_run_and_ends_by_itself(flcc_data_dir, tmp_path):
  """eval_full_line.gin with CHECKPOINT_STEP = None beside a training of the same model dir:
  it evaluates checkpoints as they come, keeps the record and best/, and ends once it has
  evaluated the training's last step. The training keeps one checkpoint (RUN): its next save
  deletes the one the sibling is restoring, which reads a copy of it."""
  model_dir = str(tmp_path / "model")
  run = RUN
  train = subprocess.Popen(mesh_main_command(model_dir, flcc_data_dir, CAUSAL, run),
                           cwd=REPO_ROOT, stderr=subprocess.PIPE, text=True, env=QUIET_TF)
  sibling = subprocess.run(
      mesh_main_command(model_dir, flcc_data_dir, CAUSAL + ["eval_full_line.gin"],
                        run + ["CHECKPOINT_STEP = None",
                               "code_t5.sibling_eval.idle_minutes = 5"]),
      cwd=REPO_ROOT, capture_output=True, text=True, env=QUIET_TF, timeout=900)
  _, train_err = train.communicate(timeout=900)
  assert train.returncode == 0, train_err[-3000:]
  assert sibling.returncode == 0, sibling.stderr[-3000:]
  assert "code_t5: eval: waiting for new checkpoints" in sibling.stderr
  record = train_eval.read_record(model_dir)
  steps = [e["step"] for e in record["evals"]]
  assert steps == sorted(set(steps)) and steps[-1] == STEPS, record
  values = [e["value"] for e in record["evals"]]
  assert record["best"]["value"] == max(values)
  assert os.path.exists(os.path.join(model_dir, "best",
                                     f"model.ckpt-{record['best']['step']}.index"))
  assert not os.path.exists(os.path.join(model_dir, train_eval.PINNED_DIR))


def test_a_record_of_another_metric_is_refused(tmp_path):
  (tmp_path / run_records.TRAIN_EVAL_RECORD).write_text(json.dumps(
      {"metric": "exact_match", "task": None, "split": "validation", "evals": [], "best": None}))
  with pytest.raises(ValueError, match="chose its best by exact_match"):
    train_eval.train_and_evaluate(
        type("Estimator", (), {"model_dir": str(tmp_path)})(), None, None, None, None, 10,
        None, eval_every_steps=5, eval_dataset_fn=None)


def test_metric_value_is_the_named_tasks_or_the_mean():
  scalars = {"eval/a_full_line/edit_similarity": [(10, 0.0, 20.0), (20, 0.0, 30.0)],
             "eval/b_full_line/edit_similarity": [(10, 0.0, 40.0)],
             "eval/a_full_line/exact_match": [(10, 0.0, 5.0)],
             "code_t5/loss": [(10, 0.0, 1.0)]}
  assert train_eval.metric_value(scalars, 10, "edit_similarity") == 30.0
  assert train_eval.metric_value(scalars, 10, "edit_similarity", "b_full_line") == 40.0
  assert train_eval.metric_value(scalars, 20, "edit_similarity") == 30.0
  assert train_eval.metric_value(scalars, 30, "edit_similarity") is None


def _save_checkpoints(model_dir, steps):
  """Real TensorFlow checkpoints model.ckpt-<step> of one variable whose value is the step."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  with tf.Graph().as_default():
    value = tf.Variable(0.0, name="value")
    step = tf.placeholder(tf.float32)
    assign = value.assign(step)
    saver = tf.train.Saver(max_to_keep=None)
    with tf.Session() as session:
      for s in steps:
        session.run(assign, {step: float(s)})
        saver.save(session, os.path.join(model_dir, "model.ckpt"), global_step=s,
                   write_meta_graph=False)  # as code_t5 trains (code_t5/upstream/startup.py)


def test_a_copy_of_the_best_killed_halfway_leaves_the_record_and_best_in_agreement(tmp_path):
  """A kill while a better checkpoint (20) was copied into best/, before the record named it:
  the rerun's reconciliation leaves best/ holding the record's best (10) whole and nothing of
  20; the eval at 20 done again then copies it whole and the record names it."""
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  model_dir = str(tmp_path)
  _save_checkpoints(model_dir, [10, 20])
  record = {"metric": "edit_similarity", "task": None, "split": "validation", "evals": [],
            "best": None}
  record = train_eval.update_record(model_dir, record, 10, 5.0, 0.0)
  best_dir = os.path.join(model_dir, "best")
  # The kill: the index of 20 copied, its data not yet, the record still naming 10.
  with open(os.path.join(model_dir, "model.ckpt-20.index"), "rb") as f, \
       open(os.path.join(best_dir, "model.ckpt-20.index"), "wb") as g:
    g.write(f.read())
  train_eval._agree_best_with(model_dir, train_eval.read_record(model_dir))  # pylint: disable=protected-access
  assert sorted(os.listdir(best_dir)) == ["checkpoint", "model.ckpt-10.data-00000-of-00001",
                                          "model.ckpt-10.index"]
  assert tf.train.load_variable(tf.train.latest_checkpoint(best_dir), "value") == 10.0
  record = train_eval.update_record(model_dir, train_eval.read_record(model_dir), 20, 7.0, 0.0)
  assert train_eval.read_record(model_dir)["best"] == {"step": 20, "value": 7.0} == record["best"]
  assert tf.train.load_variable(tf.train.latest_checkpoint(best_dir), "value") == 20.0
  assert not [f for f in os.listdir(best_dir) if "ckpt-10" in f]


def test_the_time_budget_counts_every_segment_of_a_run(tmp_path, capsys):
  """Under progress.one_run, two training segments share one budget (a clock that moves 10 s at
  each read, a 1-minute budget: the second segment stops after its first step, where a budget
  of its own would have let it run on) and the run ends with one closing line over both."""
  import gin  # pylint: disable=g-import-not-at-top
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  from code_t5 import progress  # pylint: disable=g-import-not-at-top
  ticks = iter(range(0, 10_000, 10))  # each step reads the clock twice

  def segment(max_steps):
    with tf.Graph().as_default():
      step = tf.train.get_or_create_global_step()
      loss = tf.constant(1.0)
      tf.add_to_collection(tf.GraphKeys.LOSSES, loss)
      train_op = tf.assign_add(step, 1)
      hooks = [progress.TrainProgressHook(str(tmp_path), max_steps, clock=lambda: next(ticks)),
               tf.train.StopAtStepHook(last_step=max_steps)]
      with tf.train.MonitoredTrainingSession(hooks=hooks, checkpoint_dir=str(tmp_path),
                                             save_checkpoint_steps=1) as session:
        while not session.should_stop():
          session.run(train_op)
      return tf.train.load_variable(str(tmp_path), "global_step")

  with gin.unlock_config():
    gin.bind_parameter("code_t5.train_budget.minutes", 1)
  try:
    with progress.one_run(10) as run:
      first = segment(2)
      second = segment(10)
  finally:
    gin.clear_config()
  assert (first, second) == (2, 3) and run.out_of_budget
  closing = [l for l in capsys.readouterr().err.splitlines()
             if l.startswith("code_t5: trained steps")]
  assert closing == [closing[0]] and closing[0].startswith("code_t5: trained steps 0 -> 3 in ")
  assert "stopped by the 1-minute budget" in closing[0]
