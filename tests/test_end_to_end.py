"""Train a tiny model through t5's mesh_transformer_main on the fixture, then decode with it.

The train command is the old guide's, word for word, plus gin params that shrink the model.
Eval, perplexity eval, finetuning and training from a seqio cache are run and checked by
`test_docs.py` (GENTLE_INTRO's commands, on the dev model); here: infer, beam search, score
and export on prefixes chosen to catch a wrong input window, the bitransformer, and
reproducible.gin's trainings.
"""

import glob
import json
import os
import re
import subprocess
import time

import numpy as np
import pytest

from code_t5 import progress
from code_t5 import run_records
from code_t5 import summaries
import mesh_main_runs
from conftest import (QUIET_TF, REPO_ROOT, TINY_MODEL, checkpoint_tensors, mesh_main_command,
                      mesh_main_runs_command, run_mesh_main, saved_model_completions)

# The tests share one trained model: one worker runs them all.
pytestmark = pytest.mark.xdist_group("end_to_end")

TRAIN_STEPS = 30
EARLIER_STEP = 20  # a checkpoint before the last (one every 10 steps), for score mode
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
def trained_model(flcc_data_dir, tmp_path_factory):
  """(model dir, the training's CompletedProcess)."""
  model_dir = str(tmp_path_factory.mktemp("model"))
  proc = _main(model_dir, flcc_data_dir, ["models/shared-prefix_lm.gin"], [
      "utils.run.mesh_shape = 'model:1,batch:1'",
      "utils.run.mesh_devices = ['cpu:0']",
      "run.keep_checkpoint_max = 8",
      "MIXTURE_NAME = 'flcc_python_full_line'",
      f"run.train_steps = {TRAIN_STEPS}",
  ] + TINY_MODEL + [
      # A high rate (0.1) so that 30 steps give completions that depend on the prefix, and a
      # fixed order of batches, so that the model, and what the tests below see of it, is the
      # same on every run.
      "learning_rate_schedule_noam.warmup_steps = 100", "mesh_train_dataset_fn.seed = 7",
      "utils.run.save_checkpoints_steps = 10", "utils.run.iterations_per_loop = 10",
      # A progress line at every step after the first (code_t5/progress.py).
      "code_t5.progress.seconds = 0.001",
  ])
  return model_dir, proc


@pytest.fixture(scope="module")
def trained_model_dir(trained_model):
  return trained_model[0]


GREEDY_8 = ["Unitransformer.sample_autoregressive.max_steps = 8"]
NEVER_END = ["Unitransformer.sample_autoregressive.never_end = True"]
BEAM_8 = ["code_t5.prefix_lm_beam_search.max_steps = 8"]
TOP_3 = BEAM_8 + ["TOP_K = 3"]  # beam_search.gin's: greedy's line, then 4 beams' by agreement
ALL_BY_PROBABILITY = BEAM_8 + ["TOP_K = 4", "code_t5.prefix_lm_beam_search.rank = 'probability'"]
BEAM_1_NEVER_END = BEAM_8 + ["code_t5.prefix_lm_beam_search.beam_size = 1",
                             "code_t5.prefix_lm_beam_search.never_end = True"]
# One step of 4 beams, ending nowhere: each prefix's 4 likeliest first pieces.
FIRST_PIECES = ["code_t5.prefix_lm_beam_search.max_steps = 1", "BEAM_SIZE = 4", "TOP_K = 4",
                "code_t5.prefix_lm_beam_search.never_end = True"]
# What score mode reads: two completions of each prefix, then one completion after TAIL and
# after LONG_LINE + TAIL, which must score alike (the long line is cut off).
SCORED = [(p, c) for p in PREFIXES for c in ("(x)", " = 1")] + [(TAIL, " x"),
                                                                  (LONG_LINE + TAIL, " x")]


@pytest.fixture(scope="module")
def decoded(trained_model_dir, flcc_data_dir, tmp_path_factory):
  """Every way of decoding the trained model, in one process (tests/mesh_main_runs.py: the
  imports paid once): infer (greedy; greedy and beam search of width one with EOS forbidden;
  beam search; one step of 4 beams), score of SCORED, export. {name: (what it wrote, its
  stderr)}."""
  root = tmp_path_factory.mktemp("decoded")
  (root / "prefixes.jsonl").write_text("".join(json.dumps({"prefix": p}) + "\n"
                                              for p in PREFIXES))
  (root / "pairs.jsonl").write_text("".join(json.dumps({"prefix": p, "completion": c}) + "\n"
                                            for p, c in SCORED))
  model = ["models/shared-prefix_lm.gin", "mesh/cpu.gin"]
  common = TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'"]

  def infer(name, gin_files, params):
    return name, mesh_main_command(
        trained_model_dir, flcc_data_dir, model + ["infer_full_line.gin", *gin_files],
        common + [f"INPUT_FILE = '{root / 'prefixes.jsonl'}'",
                  f"OUTPUT_FILE = '{root / name.replace(' ', '_')}'", *params])
  runs = [
      infer("greedy", [], GREEDY_8),
      infer("greedy never ending", [], GREEDY_8 + NEVER_END),
      infer("beam 1 never ending", ["beam_search.gin"], BEAM_1_NEVER_END),
      infer("beam", ["beam_search.gin"], TOP_3),
      infer("beam by probability", ["beam_search.gin"], ALL_BY_PROBABILITY),
      infer("first pieces", ["beam_search.gin"], FIRST_PIECES),
      # Two checkpoints in one launch: a file for each (the learning bench's induction probe).
      ("scores", mesh_main_command(
          trained_model_dir, flcc_data_dir, model + ["score.gin"],
          common + [f"INPUT_FILE = '{root / 'pairs.jsonl'}'", f"OUTPUT_FILE = '{root / 'scores'}'",
                    f"CHECKPOINT_STEP = [{EARLIER_STEP}, {TRAIN_STEPS}]"])),
      ("export", mesh_main_command(trained_model_dir, flcc_data_dir, model + ["export.gin"],
                                   common + [f"EXPORT_PATH = '{root / 'export'}'"] + GREEDY_8)),
      ("export top 3", mesh_main_command(
          trained_model_dir, flcc_data_dir, model + ["export.gin", "beam_search.gin"],
          common + [f"EXPORT_PATH = '{root / 'export_top_3'}'"] + TOP_3)),
  ]
  proc = subprocess.run(mesh_main_runs_command([command for _, command in runs]),
                        cwd=REPO_ROOT, capture_output=True, text=True, env=QUIET_TF)
  assert proc.returncode == 0, proc.stderr[-4000:]
  printed = [text for _, text in mesh_main_runs.split_output(proc.stderr, time.time())]
  assert len(printed) == len(runs)
  results = {}
  for (name, _), stderr in zip(runs, printed):
    if name.startswith("export"):
      results[name] = (str(root / name.replace(" ", "_")), stderr)
      continue
    output = root / f"{name.replace(' ', '_')}-{TRAIN_STEPS}"
    assert not os.path.exists(f"{output}.incomplete")
    with open(output) as f:
      lines = f.read().split("\n")
    assert lines[-1] == "", name  # one line per record, each ended
    results[name] = ([float(x) for x in lines[:-1]] if name == "scores" else lines[:-1], stderr)
  results["scores earlier"] = (str(root / f"scores-{EARLIER_STEP}"), None)  # read by its test
  return results


def _completions(decoded, name):
  """An infer run's completions, one per prefix, after its progress line counted them."""
  completions, stderr = decoded[name]
  assert len(completions) == len(PREFIXES)
  # code_t5/progress.py counts what the model decoded: the prefixes, not the batch's padding.
  counted = re.findall(r"^code_t5: decoded (\d+) examples in ", stderr, re.M)
  assert counted == [str(len(PREFIXES))], stderr[-2000:]
  return completions


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
  # By default nothing is written before the first step (code_t5/upstream/startup.py), and no meta
  # graph beside the checkpoints.
  assert not os.path.exists(os.path.join(trained_model_dir, "graph.pbtxt"))
  assert not glob.glob(os.path.join(trained_model_dir, "model.ckpt-0.*"))
  assert not glob.glob(os.path.join(trained_model_dir, "*.meta"))
  # mesh-tf writes the loss summary at step 1 and then every 100 steps.
  train = summaries.summarize(trained_model_dir)["train"]
  assert train["first_step"] == 1
  assert 0 < train["first_loss"] < 20
  [(step, _, rate)] = run_records.read_scalars(trained_model_dir)["learning_rate"]
  assert step == 1 and rate == pytest.approx(0.1)  # rsqrt(max(step, warmup 100))


PROGRESS_LINE = re.compile(r"^code_t5: train step (\d+)/30 \| loss ([0-9.]+) \| [0-9.]+ steps/s "
                           r"\| (\d+m)?\d+s left$", re.M)


@pytest.mark.slow
def test_training_shows_progress_and_ends_with_one_summary_line(trained_model):
  """code_t5/progress.py under t5's entry point: a line per progress interval with the step,
  the mean loss since the last line and the time left; the loss in TensorBoard every 10
  steps; one line at the end."""
  model_dir, proc = trained_model
  lines = PROGRESS_LINE.findall(proc.stderr)
  steps = [int(step) for step, _, _ in lines]
  assert len(steps) >= TRAIN_STEPS // 2 and steps == sorted(steps), proc.stderr[-3000:]
  # mesh-tf prints each step's loss on CPU; the hook's means are of the same values.
  losses = mesh_main_runs.losses(proc.stderr)
  assert len(losses) == TRAIN_STEPS
  written = {step: value for step, _, value in
             run_records.read_scalars(model_dir)[progress.LOSS_TAG]}
  assert sorted(written) == [10, 20, 30]
  for step, value in written.items():
    assert value == pytest.approx(np.mean(losses[step - 10:step]), rel=1e-5)
  [summary] = [line for line in proc.stderr.splitlines() if "code_t5: trained steps" in line]
  assert re.fullmatch(
      rf"code_t5: trained steps 0 -> {TRAIN_STEPS} in (\d+m)?\d+s \([0-9.]+ steps/s\), last loss "
      rf"{losses[-1]:.3f}; reached run.train_steps; checkpoint "
      rf"{re.escape(model_dir)}/model.ckpt-{TRAIN_STEPS}", summary), summary


@pytest.mark.slow
def test_a_time_budget_stops_training_and_saves_where_it_stopped(flcc_data_dir, tmp_path):
  model_dir = str(tmp_path / "budget")
  proc = _main(model_dir, flcc_data_dir, ["models/shared-prefix_lm.gin", "mesh/cpu.gin"],
               TINY_MODEL + ["MIXTURE_NAME = 'flcc_python'", "run.train_steps = 1000000",
                             "code_t5.train_budget.minutes = 0.1",
                             "code_t5.progress.seconds = 1"])
  # While it trains, the target is the step the budget will stop at, not run.train_steps.
  targets = re.findall(r"^code_t5: train step (\d+)/~(\d+) \(0.1-minute budget\) \| "
                       r"loss [0-9.]+ \| [0-9.]+ steps/s \| \d+s left$", proc.stderr, re.M)
  assert targets, proc.stderr[-3000:]
  assert "/1000000" not in proc.stderr
  [summary] = [line for line in proc.stderr.splitlines() if "code_t5: trained steps" in line]
  match = re.fullmatch(r"code_t5: trained steps 0 -> (\d+) in (\d+)s .*; stopped by the "
                       r"0.1-minute budget \(code_t5.train_budget.minutes\); checkpoint (\S+)",
                       summary)
  assert match, summary
  step, seconds, checkpoint = int(match.group(1)), int(match.group(2)), match.group(3)
  assert 1 <= step < 1000000 and 6 <= seconds < 60
  # The last line's estimate is near where it stopped (the step rate varies a little).
  assert step / 2 <= int(targets[-1][1]) <= 2 * step, (targets, step)
  assert checkpoint == f"{model_dir}/model.ckpt-{step}"
  assert os.path.exists(checkpoint + ".index")
  with open(os.path.join(model_dir, "checkpoint")) as f:
    assert f.readline().strip() == f'model_checkpoint_path: "model.ckpt-{step}"'


@pytest.mark.slow
def test_bitransformer_trains_and_startup_writes_come_back_when_asked(flcc_data_dir,
                                                                      tmp_path):
  model_dir = str(tmp_path / "bi")
  _main(model_dir, flcc_data_dir, ["models/bitransformer.gin", "mesh/cpu.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python'", "run.train_steps = 3",
                      "code_t5.startup_writes.graph = True",
                      "code_t5.startup_writes.checkpoint = True"])
  assert os.path.exists(os.path.join(model_dir, "model.ckpt-3.index"))
  with open(os.path.join(model_dir, "operative_config.gin")) as f:
    config = f.read()
  assert "model_type = 'bitransformer'" in config
  assert "startup_writes.graph = True" in config  # gin writes the short name
  # TensorFlow's own behaviour: the graph, checkpoint 0, a meta graph beside each checkpoint.
  assert os.path.exists(os.path.join(model_dir, "graph.pbtxt"))
  for step in (0, 3):
    assert os.path.exists(os.path.join(model_dir, f"model.ckpt-{step}.index"))
    assert os.path.exists(os.path.join(model_dir, f"model.ckpt-{step}.meta"))


@pytest.mark.slow
def test_infer_completes_each_prefix_from_its_last_lines(decoded):
  greedy = _completions(decoded, "greedy")
  assert greedy[1] == greedy[0]  # LONG_LINE was cut off: the same last lines, the same line
  assert all("\n" not in c for c in greedy)
  # Not a comparison of nothing: with EOS forbidden a completion has text unless the model's
  # first token ends the line; the two prefixes agree there too.
  never_ending = _completions(decoded, "greedy never ending")
  assert never_ending[1] == never_ending[0] and any(never_ending)


@pytest.mark.slow
def test_beam_search_of_width_one_without_eos_is_greedy(decoded):
  """With EOS forbidden, beam 1 keeps the argmax token at each step: greedy decoding. How many
  completions differ from each other depends on how the 30 steps of the tiny model went (one
  to four distinct here: CPU training is not bit-identical from run to run), so that is not
  asserted; that some has text is."""
  greedy = _completions(decoded, "greedy never ending")
  assert any(greedy)
  assert [completions[0] for completions, _ in _top_k(decoded, "beam 1 never ending")] == greedy


@pytest.mark.slow
def test_the_line_search_grows_every_beam(decoded):
  """A search of 4 beams for one piece gives 4 lines, each with its score, the likeliest
  greedy's first piece. (mesh-tf's beam search, given a layout, grows each beam by only its
  2 likeliest pieces unless told otherwise: its first step, which grows one beam, kept 2.)"""
  greedy = _completions(decoded, "greedy never ending")
  for (completions, scores), line in zip(_top_k(decoded, "first pieces"), greedy):
    assert len(completions) == 4 and all(-1000 < s <= 0 for s in scores), (completions, scores)
    assert scores == sorted(scores, reverse=True)
    assert line.startswith(completions[0]), (line, completions)


def _top_k(decoded, name):
  """A line search's (completions, scores) per prefix, as infer wrote them."""
  return [(found["completions"], found["scores"])
          for found in map(json.loads, _completions(decoded, name))]


@pytest.mark.slow
def test_the_line_search_returns_its_best_lines_with_their_scores(decoded):
  """Up to 3 lines per prefix, each once, none with a line end in it, with their scores; the
  same prefix (after the cut) gives the same lines. Ranked by probability, the likeliest
  first. beam_search.gin's: greedy's line first (what infer's greedy decoding wrote), scored
  as the search scores the same line where it found it too (for 0 to 5 prefixes, as the 30
  steps went); then the search's lines with
  greedy's, in the order the model's consensus rule gives them (tests/test_consensus.py
  holds the graph's rule to it)."""
  from test_consensus import _agreement_order  # pylint: disable=g-import-not-at-top
  found, every = _top_k(decoded, "beam"), _top_k(decoded, "beam by probability")
  greedy = _completions(decoded, "greedy")
  reordered = scored_alike = 0
  for (completions, scores), (lines, line_scores), greedy_line in zip(found, every, greedy):
    assert 1 <= len(completions) == len(scores) <= 3
    assert all(-1000 < s <= 0 for s in scores)
    assert not any("\n" in c for c in completions)
    assert len(set(completions)) == len(completions)  # one line, one hypothesis
    assert line_scores == sorted(line_scores, reverse=True)
    assert completions[0] == greedy_line, (completions, greedy_line)
    if greedy_line in lines:
      assert scores[0] == pytest.approx(line_scores[lines.index(greedy_line)], abs=1e-4)
      scored_alike += 1
    with_greedy = [greedy_line] + [line for line in lines if line != greedy_line]
    with_scores = scores[:1] + [s for line, s in zip(lines, line_scores) if line != greedy_line]
    order = [i for i in _agreement_order(with_greedy, with_scores) if i][:2]
    assert completions[1:] == [with_greedy[i] for i in order], (completions, lines, line_scores)
    assert scores[1:] == pytest.approx([with_scores[i] for i in order], abs=1e-4)
    reordered += order != sorted(order)
  assert found[1] == found[0]
  print(f"{reordered} of {len(found)} prefixes' lines ranked otherwise than by probability; "
        f"greedy's among the search's for {scored_alike}")


@pytest.mark.slow
def test_the_exported_line_search_returns_what_infer_wrote(decoded):
  """The SavedModel's signature: top_k_outputs and top_k_scores, [prefixes, 3]; each prefix's
  best line and its score as infer's. (The lines after the best are those the search finished
  before it stopped, and it stops for a whole call: another batch, maybe other lines.)"""
  export_dir, _ = decoded["export top 3"]
  served = saved_model_completions(export_dir, PREFIXES, 4, top_k=True)
  for (completions, scores), (outputs, served_scores) in zip(_top_k(decoded, "beam"), served):
    assert len(outputs) == len(served_scores) == 3
    assert (outputs[0], served_scores[0]) == (completions[0], pytest.approx(scores[0], abs=1e-4))
    kept = [o for o, s in zip(outputs, served_scores) if s != float("-inf")]
    assert len(set(kept)) == len(kept)


@pytest.mark.slow
def test_score_mode(decoded):
  scores, _ = decoded["scores"]
  assert len(scores) == len(SCORED)  # the padding rows of the last batch dropped
  assert all(-1000 < s < 0 for s in scores)
  assert scores[-1] == pytest.approx(scores[-2], abs=1e-4)  # scored from the same last lines
  assert scores[-1] != pytest.approx(scores[0], abs=1e-3)  # and the completion matters
  # The same pairs at the earlier checkpoint, from the same launch: scored by those weights.
  earlier_path, _ = decoded["scores earlier"]
  with open(earlier_path) as f:
    earlier = [float(x) for x in f.read().split()]
  assert len(earlier) == len(SCORED) and all(-1000 < s < 0 for s in earlier)
  assert max(abs(a - b) for a, b in zip(earlier, scores)) > 1e-3


@pytest.mark.slow
def test_export_then_complete_lines_from_the_saved_model(decoded):
  export_dir, _ = decoded["export"]
  # The same prefixes, cut the same way, decoded the same way as infer mode.
  assert saved_model_completions(export_dir, PREFIXES, 4) == _completions(decoded, "greedy")


@pytest.mark.slow
def test_the_serving_bench_measures_the_export(decoded, trained_model_dir, flcc_data_dir,
                                               tmp_path):
  """scripts/bench_serving.py on the exported tiny model (its own exports left out): a
  latency per call for each length class it found, the first call apart, and the table."""
  import sys  # pylint: disable=g-import-not-at-top
  export_dir, _ = decoded["export"]
  [saved_model] = glob.glob(os.path.join(export_dir, "[0-9]*"))
  out = tmp_path / "serving.json"
  proc = subprocess.run(
      [sys.executable, os.path.join(REPO_ROOT, "scripts", "bench_serving.py"),
       f"--model_dir={trained_model_dir}", f"--data_dir={flcc_data_dir}",
       "--gin_file=models/tiny.gin",
       f"--saved_model=greedy={saved_model}", "--threads=1", "--calls=2", f"--json={out}"],
      cwd=REPO_ROOT, capture_output=True, text=True, env=QUIET_TF)
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(out.read_text())
  # The window the export read, by which the prefixes are classed: tiny.gin's.
  assert report["sequence_length"] == {"inputs": 64, "targets": 16}
  [result] = report["results"]
  assert (result["decoding"], result["threads"]) == ("greedy", 1)
  found = {c: n for c, n in report["prefixes"].items() if n}
  assert found and all(n <= 2 for n in found.values()), report["prefixes"]
  assert result["calls"] == sum(found.values())
  for length_class, stats in result["by_length"].items():
    assert stats["calls"] == report["prefixes"][length_class]
    if stats["calls"]:
      assert 0 < stats["p50_ms"] <= stats["max_ms"] <= result["max_ms"]
  assert result["first_call_ms"] > 0 and result["peak_rss_mb"] > 100 and result["disk_mb"] > 0
  assert "| greedy | 1 |" in proc.stdout


def _weights(model_dir, step):
  return {name: value for name, value in checkpoint_tensors(
      os.path.join(model_dir, f"model.ckpt-{step}")).items() if not name.startswith("global_step")}


@pytest.mark.slow
def test_reproducible_gin_trains_the_same_weights_every_run(flcc_data_dir, tmp_path):
  """reproducible.gin, with TensorFlow's oneDNN ops off as it asks: two trainings of one SEED
  (in one process, as two users' runs would not be: what the first leaves behind must not move
  the second) end in the same weights, to the last bit; another SEED ends elsewhere. Without
  its graph seed mesh-tf draws its initializers unseeded; without its dropout seeds each
  process salts them; on all threads the same start and batches drift apart (this test fails
  with `bit_identical = False`)."""
  steps = 8
  def training(name, seed):
    return mesh_main_command(str(tmp_path / name), flcc_data_dir,
                             ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "reproducible.gin"],
                             TINY_MODEL + [
        "MIXTURE_NAME = 'flcc_python_full_line'", f"run.train_steps = {steps}",
        f"utils.run.save_checkpoints_steps = {steps}", f"SEED = {seed}"])
  proc = subprocess.run(mesh_main_runs_command([training("a", 3), training("b", 3),
                                                training("c", 4)]),
                        cwd=REPO_ROOT, capture_output=True, text=True,
                        env=dict(QUIET_TF, TF_ENABLE_ONEDNN_OPTS="0"))
  assert proc.returncode == 0, proc.stderr[-4000:]
  first, again, other = (_weights(str(tmp_path / name), steps) for name in "abc")
  assert first.keys() == again.keys() == other.keys() and first
  assert all(np.array_equal(first[name], again[name]) for name in first), [
      name for name in first if not np.array_equal(first[name], again[name])]
  assert not any(np.array_equal(first[name], other[name]) for name in first
                 if first[name].size > 1)
