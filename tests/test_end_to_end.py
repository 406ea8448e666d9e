"""Train a tiny model through t5's mesh_transformer_main on the fixture, then evaluate it.

The train command is the old guide's, word for word, plus gin params that shrink the model.
"""

import glob
import json
import os
import subprocess

import pytest

from code_t5 import summaries
from conftest import (PYTHON, QUIET_TF, REPO_ROOT, TINY_MODEL, cache_tasks_command,
                      run_mesh_main)

TRAIN_STEPS = 30
# Not a multiple of the batch of 4: the last eval batch is padded (mesh-tf's
# "N padded outputs, M expected" check runs on it).
EVAL_EXAMPLES = 10
# One line far longer than the 64-token input window: a prefix that starts with it must be
# cut at the next line start, which leaves exactly TAIL (mesh-tf's own modes would keep the
# start of the long line instead).
LONG_LINE = "total = " + " + ".join(f"value_{i}" for i in range(200)) + "\n"
TAIL = "def f(x):\n    return"
PREFIXES = [TAIL, LONG_LINE + TAIL, "class A:\n\tdef __init__(self):\n\t\tself.", "import ",
            "for i in range("]


def _main(model_dir, data_dir, gin_files, gin_params, extra_flags=()):
  proc = run_mesh_main(model_dir, data_dir, gin_files, gin_params, extra_flags)
  assert proc.returncode == 0, proc.stderr[-4000:]
  return proc


@pytest.fixture(scope="module")
def trained_model_dir(flcc_data_dir, tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp("model"))
  _main(model_dir, flcc_data_dir, ["models/shared-prefix_lm.gin"], [
      "utils.run.mesh_shape = 'model:1,batch:1'",
      "utils.run.mesh_devices = ['cpu:0']",
      "run.keep_checkpoint_max = 8",
      "MIXTURE_NAME = 'flcc_python_full_line'",
      f"run.train_steps = {TRAIN_STEPS}",
  ] + TINY_MODEL + [
      # A high rate (0.1) so that 30 steps give completions that depend on the prefix.
      "learning_rate_schedule_noam.warmup_steps = 100",
      "utils.run.save_checkpoints_steps = 10", "utils.run.iterations_per_loop = 10",
  ])
  return model_dir


def _infer(model_dir, data_dir, tmp_path, name, gin_files=(), gin_params=()):
  """Completions of PREFIXES, one per prefix, through infer_full_line.gin (+ gin_files)."""
  input_file = tmp_path / "prefixes.jsonl"
  input_file.write_text("".join(json.dumps({"prefix": p}) + "\n" for p in PREFIXES))
  output = tmp_path / name
  _main(model_dir, data_dir,
        ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "infer_full_line.gin", *gin_files],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'",
                      f"code_t5.complete_lines_from_file.input_filename = '{input_file}'",
                      f"code_t5.complete_lines_from_file.output_filename = '{output}'",
                      *gin_params])
  assert not os.path.exists(f"{output}-{TRAIN_STEPS}.incomplete")
  with open(f"{output}-{TRAIN_STEPS}") as f:
    completions = f.read().split("\n")
  assert completions[-1] == "" and len(completions) == len(PREFIXES) + 1
  return completions[:-1]


GREEDY_8 = ["Unitransformer.sample_autoregressive.max_steps = 8"]


@pytest.fixture(scope="module")
def greedy_completions(trained_model_dir, flcc_data_dir, tmp_path_factory):
  return _infer(trained_model_dir, flcc_data_dir, tmp_path_factory.mktemp("greedy"),
                "greedy", gin_params=GREEDY_8)


@pytest.mark.slow
def test_training_writes_checkpoints_config_and_loss(trained_model_dir):
  assert os.path.exists(os.path.join(trained_model_dir, f"model.ckpt-{TRAIN_STEPS}.index"))
  with open(os.path.join(trained_model_dir, "operative_config.gin")) as f:
    config = f.read()
  assert "model_type = 'delimited_lm'" in config
  assert "input_full_attention = True" in config
  assert "loss_on_targets_only = True" in config
  assert "shared_embedding_and_softmax_weights = True" in config
  with open(os.path.join(trained_model_dir, "checkpoint")) as f:
    assert f.readline().strip() == f'model_checkpoint_path: "model.ckpt-{TRAIN_STEPS}"'
  # mesh-tf writes the loss summary at step 1 and then every 100 steps.
  train = summaries.summarize(trained_model_dir)["train"]
  assert train["first_step"] == 1
  assert 0 < train["first_loss"] < 20
  [(step, _, rate)] = summaries.read_scalars(trained_model_dir)["learning_rate"]
  assert step == 1 and rate == pytest.approx(0.1)  # rsqrt(max(step, warmup 100))


@pytest.mark.slow
def test_full_line_eval_writes_predictions_and_metrics(trained_model_dir, flcc_data_dir):
  _main(trained_model_dir, flcc_data_dir,
        ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "eval_full_line.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'",
                      f"mesh_eval_dataset_fn.num_eval_examples = {EVAL_EXAMPLES}",
                      "Unitransformer.sample_autoregressive.max_steps = 16"])
  eval_dir = os.path.join(trained_model_dir, "validation_eval")
  [predictions] = glob.glob(os.path.join(eval_dir, f"*_{TRAIN_STEPS}_predictions"))
  with open(predictions) as f:
    assert len(f.read().split("\n")) == EVAL_EXAMPLES + 1  # padding rows were dropped
  metrics = summaries.summarize(trained_model_dir)["eval"]
  assert set(metrics) == {f"flcc_python_full_line/{m}" for m in
                          ("exact_match", "edit_similarity", "prefix_coverage")}
  for m in metrics.values():
    assert m["step"] == TRAIN_STEPS and 0.0 <= m["value"] <= 100.0


@pytest.mark.slow
def test_bitransformer_trains_on_the_same_task(flcc_data_dir, tmp_path):
  model_dir = str(tmp_path / "bi")
  _main(model_dir, flcc_data_dir, ["models/bitransformer.gin", "mesh/cpu.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python'", "run.train_steps = 3"])
  assert os.path.exists(os.path.join(model_dir, "model.ckpt-3.index"))
  with open(os.path.join(model_dir, "operative_config.gin")) as f:
    assert "model_type = 'bitransformer'" in f.read()


@pytest.mark.slow
def test_seqio_cache_tasks_then_train_from_the_cache(flcc_data_dir, tmp_path):
  cache_dir = str(tmp_path / "cache")
  proc = subprocess.run(cache_tasks_command(flcc_data_dir, cache_dir), cwd=REPO_ROOT,
                        capture_output=True, text=True, env=QUIET_TF)
  assert proc.returncode == 0, proc.stderr[-4000:]
  task_cache = os.path.join(cache_dir, "flcc_python_full_line")
  assert os.path.exists(os.path.join(task_cache, "COMPLETED"))
  assert glob.glob(os.path.join(task_cache, "train.tfrecord-*"))

  model_dir = str(tmp_path / "model")
  proc = _main(model_dir, flcc_data_dir, ["models/shared-prefix_lm.gin", "mesh/cpu.gin"],
               TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'", "run.train_steps = 3",
                             "mesh_train_dataset_fn.use_cached = True"],
               extra_flags=[f"--additional_task_cache_dirs={cache_dir}"])
  assert f"'flcc_python_full_line' is cached at {task_cache}" in proc.stderr
  assert os.path.exists(os.path.join(model_dir, "model.ckpt-3.index"))


@pytest.mark.slow
def test_perplexity_eval_reports_per_task_loss(trained_model_dir, flcc_data_dir):
  _main(trained_model_dir, flcc_data_dir,
        ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "perplexity_eval.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python'", "utils.run.dataset_split = 'validation'",
                      "utils.run.eval_checkpoint_step = -1",
                      "utils.run.perplexity_eval_steps = 2"])
  for task in ("flcc_python_full_line", "flcc_python_prefix_lm"):
    [eval_dir] = glob.glob(os.path.join(trained_model_dir, f"eval_{task}_validation_*"))
    scalars = summaries.read_scalars(eval_dir)
    [(step, _, nlp)] = scalars["neg_log_perplexity"]
    assert step == TRAIN_STEPS and -20 < nlp < 0
    assert scalars["num_eval_tokens"][0][2] > 0


@pytest.mark.slow
def test_infer_completes_each_prefix_from_its_last_lines(greedy_completions):
  assert greedy_completions[1] == greedy_completions[0]  # LONG_LINE was cut off
  assert all("\n" not in c for c in greedy_completions)


@pytest.mark.slow
def test_beam_search_of_width_one_without_eos_is_greedy(trained_model_dir, flcc_data_dir,
                                                        tmp_path):
  """With EOS forbidden, beam 1 keeps the argmax token at each step: greedy decoding."""
  greedy = _infer(trained_model_dir, flcc_data_dir, tmp_path, "greedy",
                  gin_params=GREEDY_8 + ["Unitransformer.sample_autoregressive.never_end = True"])
  beam = _infer(trained_model_dir, flcc_data_dir, tmp_path, "beam", ["beam_search.gin"], [
      "code_t5.prefix_lm_beam_search.beam_size = 1", "code_t5.prefix_lm_beam_search.max_steps = 8",
      "code_t5.prefix_lm_beam_search.never_end = True"])
  assert len(set(greedy)) > 2  # the completions depend on the prefix
  assert beam == greedy


def _score(model_dir, data_dir, tmp_path, pairs):
  input_file = tmp_path / "pairs.jsonl"
  input_file.write_text("".join(json.dumps({"prefix": p, "completion": c}) + "\n"
                                for p, c in pairs))
  output = tmp_path / "scores"
  _main(model_dir, data_dir, ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "score.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'",
                      f"code_t5.completions_dataset_fn.input_filename = '{input_file}'",
                      f"code_t5.score_completions.output_filename = '{output}'"])
  with open(f"{output}-{TRAIN_STEPS}") as f:
    return [float(line) for line in f.read().splitlines()]


@pytest.mark.slow
def test_beam_search_and_score_modes(trained_model_dir, flcc_data_dir, greedy_completions,
                                     tmp_path):
  beam = _infer(trained_model_dir, flcc_data_dir, tmp_path, "beam", ["beam_search.gin"],
                ["code_t5.prefix_lm_beam_search.max_steps = 8"])
  assert beam[1] == beam[0] and all("\n" not in c for c in beam)
  scores = _score(trained_model_dir, flcc_data_dir, tmp_path,
                  list(zip(PREFIXES, greedy_completions)) + list(zip(PREFIXES, beam)) +
                  [(TAIL, " x"), (LONG_LINE + TAIL, " x")])
  assert len(scores) == 2 * len(PREFIXES) + 2  # the padding rows of the last batch dropped
  assert all(-1000 < s < 0 for s in scores)
  assert scores[-1] == pytest.approx(scores[-2], abs=1e-4)  # scored from the same last lines
  assert scores[-1] != pytest.approx(scores[0], abs=1e-3)  # and the completion matters


@pytest.mark.slow
def test_finetune_loads_weights_and_restarts_the_step(trained_model_dir, flcc_data_dir,
                                                      tmp_path):
  import numpy as np  # pylint: disable=g-import-not-at-top
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  pretrained = os.path.join(trained_model_dir, f"model.ckpt-{TRAIN_STEPS}")
  model_dir = str(tmp_path / "finetuned")
  _main(model_dir, flcc_data_dir,
        ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "finetune.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'", "run.train_steps = 3",
                      f"utils.run.init_checkpoint = '{pretrained}'"])
  finetuned = os.path.join(model_dir, "model.ckpt-3")
  assert tf.train.load_variable(finetuned, "global_step") == 3
  before = tf.train.load_variable(pretrained, "transformer/embedding")
  after = tf.train.load_variable(finetuned, "transformer/embedding")
  assert np.linalg.norm(after - before) < 0.2 * np.linalg.norm(before)


@pytest.mark.slow
def test_export_then_complete_lines_from_the_saved_model(trained_model_dir, flcc_data_dir,
                                                        greedy_completions, tmp_path):
  export_dir = str(tmp_path / "export")
  _main(trained_model_dir, flcc_data_dir,
        ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "export.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'",
                      f"utils.run.export_path = '{export_dir}'"] + GREEDY_8)
  [saved_model] = glob.glob(os.path.join(export_dir, "[0-9]*"))
  client = (
      "import json, sys, tensorflow as tf, tensorflow_text\n"
      "serve = tf.saved_model.load(sys.argv[1]).signatures['serving_default']\n"
      "prefixes = json.loads(sys.stdin.read())\n"
      "out = []\n"
      "for i in range(0, len(prefixes), 4):  # at most the run's batch size per call\n"
      "  out += serve(inputs=tf.constant(prefixes[i:i + 4]))['outputs'].numpy().tolist()\n"
      "print(json.dumps([o.decode('utf-8').split('\\n')[0] for o in out]))\n")
  proc = subprocess.run([PYTHON, "-c", client, saved_model], input=json.dumps(PREFIXES),
                        capture_output=True, text=True,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  assert proc.returncode == 0, proc.stderr[-3000:]
  # The same prefixes, cut the same way, decoded the same way as infer mode.
  assert json.loads(proc.stdout.strip().splitlines()[-1]) == greedy_completions
