"""Every shipped mesh shape trains and evals (and a split one infers) as one device does, on
one CPU; healed greedy decoding on a batch- and model-split mesh decodes as one device does.

mesh-tf's placement mesh puts each slice of a mesh on the device named for it and accepts one
device named many times: `mesh_devices = ['cpu:0'] * 8` is an 8-device mesh on one CPU, split,
all-reduced and summed as on 8 GPUs (what it cannot show is speed and memory; that needs the
hardware). The TPU files leave `mesh_devices` to None, which mesh-tf turns into the default
device for every slice, so without `--tpu` they run as shipped: their topology's shape
(`tpu_mesh_shape`) and mesh-tf's default layout rules (d_ff, heads and vocab split over
`model`, the batch over `batch`).

Every shape trains from the same checkpoint on the same batches (seed 7, no dropout; mesh-tf
seeds no initializer, so runs started from scratch differ from their first step), and evals
that checkpoint (the reference and a model- and batch-split mesh infer it too: INFER_SHAPES).
It comes from WARM_STEPS of one-device training, so that greedy decoding has something to
agree about. All runs share one process (tests/mesh_main_runs.py): each launch would
otherwise pay half a minute of imports. The largest mesh (SOAK_SHAPES) is left to
`make test-all`, which runs it from the same warm checkpoint in a second process.
"""

import json
import os
import re
import subprocess
import time

import pytest

from code_t5 import metrics as metrics_lib

import mesh_main_runs
from conftest import REPO_ROOT, TINY_MODEL, mesh_main_command, mesh_main_runs_command

# One process for every run: one worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("mesh_shapes")]

WARM_STEPS = 100  # 30 left greedy decoding empty or one token repeated
STEPS = 3  # compared, after the warm start
# The largest mesh has 32 slices: each holds one sequence of the batch.
BATCH = 32
# The last two repeat a call: the copy cache has a run to match (HEALED_GREEDY), in the window
# and, for the last, only before it (64 tokens: tiny.gin's), in the file's cache.
PREFIXES = ["def f(x):\n    return", "class A:\n\tdef __init__(self):\n\t\tself.", "import ",
            "    for i in range(", "total = add(first, second)\nresult = add(first",
            "total = add(first, second)\n" + "x = 1\n" * 40 + "result = add(first"]


def _devices(n):
  return f"utils.run.mesh_devices = {['cpu:0'] * n}"


# name: (mesh file, gin params after it). The first is the reference. One run per mesh, not
# per file: a file whose mesh one of these has already is left out (`model:1,batch:2` was one
# until #30, as gpu_8.gin's `model:1,batch:8` splits the batch the same way; tpu_v4_8.gin's
# mesh is tpu_v3_8.gin's `batch:8`, and gpu_1.gin's is cpu.gin's), and
# tests/test_gin_configs.py holds every shipped file to a mesh trained here.
SHAPES = {
    "cpu": ("mesh/cpu.gin", []),
    "model:2,batch:2": ("mesh/cpu.gin",
                        ["utils.run.mesh_shape = 'model:2,batch:2'", _devices(4)]),
    "gpu_8": ("mesh/gpu_8.gin", [_devices(8)]),
    "tpu_v3_8": ("mesh/tpu_v3_8.gin", []),
    "tpu_v3_8,model_parallelism:2": ("mesh/tpu_v3_8.gin",
                                     ["utils.tpu_mesh_shape.model_parallelism = 2"]),
    "tpu_v3_32": ("mesh/tpu_v3_32.gin", []),
}
# Run by `make test-all` only (pytest's `soak` mark), from the same warm checkpoint in a second
# process: tpu_v3_32's 32 slices split the batch as tpu_v3_8's 8 do, and its training and eval
# took 78 s of the test's 178 on a 2-core Xeon (a mesh-tf graph holds every slice's ops).
SOAK_SHAPES = ("tpu_v3_32",)
# Infer decodes as eval does (the same predict path under the same mesh); only how it reads
# its prefixes differs, and that does not depend on the shape. So infer runs on the reference
# and on one split mesh only: 6 fewer launches (about 2 minutes of CI on a slow machine). The
# split one is the mesh that splits the model and the vocabulary too, not the largest: infer
# on tpu_v3_32's 32 slices took 21 s of the test's 237 on a 2-core Xeon, model:2,batch:2's 2.
INFER_SHAPES = ("cpu", "model:2,batch:2")
# Greedy decoding with token healing (code_t5.greedy_decode, which decodes the prefix LM too):
# its mask is computed whole on every slice of the batch and laid out over `vocab` as the
# logits are, which `model:2` splits. The copy cache (code_t5.copy_cache) likewise: its counts
# are computed whole on every slice, and mixed with the step's logits gathered whole; it reads
# the file before the window too (file_cache.gin's "cache" feature, joined with the window on
# every slice). And the line search over them: its candidates are the exact top 2 x beams
# whether the vocabulary is split in two or not (code_t5.prefix_lm_beam_search), so it finds
# the same lines.
HEALED_SHAPES = ("cpu", "model:2,batch:2")
HEALED_AND_CACHED = ["code_t5.token_healing.pieces = 3", "code_t5.copy_cache.weight = 0.5",
                     "code_t5.copy_cache.file_tokens = 256"]
HEALED_GREEDY = ["utils.run.predict_fn = @code_t5.greedy_decode"] + HEALED_AND_CACHED
HEALED_SEARCH = HEALED_AND_CACHED + ["BEAM_SIZE = 4", "TOP_K = 4"]
TINY_RUN = ["MIXTURE_NAME = 'flcc_python_full_line'"] + TINY_MODEL + [
    f"utils.run.batch_size = ('sequences_per_batch', {BATCH})", "mesh_train_dataset_fn.seed = 7",
    "dropout_rate = 0.0", "Unitransformer.sample_autoregressive.max_steps = 8"]


def _model_dir(root, shape):
  return root / re.sub(r"\W", "_", shape)


@pytest.fixture(scope="module")
def mesh_root(tmp_path_factory):
  root = tmp_path_factory.mktemp("mesh_shapes")
  (root / "prefixes.jsonl").write_text("".join(json.dumps({"prefix": p}) + "\n" for p in PREFIXES))
  return root


def _run_shapes(shapes, root, flcc_data_dir, warm_start):
  """{shape: {"losses", "predictions", "completions", "healed", "metrics"}} of `shapes`, all
  from one process; the warm start first, if `warm_start`."""
  prefixes = root / "prefixes.jsonl"
  warm, model = root / "warm", ["models/shared-prefix_lm.gin"]
  # Decoding reads the warm checkpoint itself: two trainings of the same steps differ in their
  # last bits (CPU float sums, Adafactor), and a tiny model's near-ties would flip with them.
  decode = [f"CHECKPOINT_STEP = {WARM_STEPS}"]

  def command(model_dir, gin_files, gin_params):
    return mesh_main_command(str(model_dir), flcc_data_dir, model + gin_files, gin_params)

  commands = [command(warm, ["mesh/cpu.gin"], TINY_RUN + [
      f"run.train_steps = {WARM_STEPS}", f"utils.run.save_checkpoints_steps = {WARM_STEPS}",
      f"utils.run.iterations_per_loop = {WARM_STEPS}"])] if warm_start else []
  for shape in shapes:
    mesh_file, mesh_params = SHAPES[shape]
    model_dir, params = _model_dir(root, shape), TINY_RUN + mesh_params
    commands += [  # train from the warm checkpoint; eval and infer it
        command(model_dir, [mesh_file], params + [
            f"utils.run.init_checkpoint = '{warm}/model.ckpt-{WARM_STEPS}'",
            f"run.train_steps = {WARM_STEPS + STEPS}"]),
        command(warm, [mesh_file, "eval_full_line.gin"], params + decode + [
            "EVAL_EXAMPLES = 16",
            f"utils.run.eval_summary_dir = '{model_dir}/eval'"]),
    ]
    if shape in INFER_SHAPES:
      commands.append(command(warm, [mesh_file, "infer_full_line.gin"], params + decode + [
          f"INPUT_FILE = '{prefixes}'", f"OUTPUT_FILE = '{model_dir}/completions'"]))
    if shape in HEALED_SHAPES:
      commands.append(command(warm, [mesh_file, "infer_full_line.gin"],
                              params + decode + HEALED_GREEDY + [
          f"INPUT_FILE = '{prefixes}'", f"OUTPUT_FILE = '{model_dir}/healed'"]))
      commands.append(command(warm, [mesh_file, "infer_full_line.gin", "beam_search.gin"],
                              params + decode + HEALED_SEARCH + [
          f"INPUT_FILE = '{prefixes}'", f"OUTPUT_FILE = '{model_dir}/searched'"]))
    # The same decoder without the cache: the cache must change something. (That healing
    # does is held in tests/test_memorisation.py, healed against plain cuts inside words.)
    if shape == "cpu":
      commands.append(command(warm, [mesh_file, "infer_full_line.gin"],
                              params + decode + HEALED_GREEDY + [
          "code_t5.copy_cache.weight = 0.0",
          f"INPUT_FILE = '{prefixes}'", f"OUTPUT_FILE = '{model_dir}/uncached'"]))
  proc = subprocess.run(mesh_main_runs_command(commands), cwd=REPO_ROOT, capture_output=True,
                        text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert proc.returncode == 0, proc.stderr[-5000:]
  outputs = mesh_main_runs.split_output(proc.stderr, time.time())
  assert len(outputs) == len(commands)
  if warm_start:
    print(f"warm start, {WARM_STEPS} steps: {outputs[0][0]:.1f} s")
    outputs = outputs[1:]
  results, outputs = {}, iter(outputs)
  for shape in shapes:
    (train_seconds, train), (eval_seconds, evaluation) = next(outputs), next(outputs)
    infer_seconds, completions = None, None
    model_dir = _model_dir(root, shape)
    if shape in INFER_SHAPES:
      infer_seconds, _ = next(outputs)
      with open(model_dir / f"completions-{WARM_STEPS}") as f:
        completions = f.read().split("\n")[:-1]
    healed = {}
    for name in (["healed", "searched"] if shape in HEALED_SHAPES else []) + (
        ["uncached"] if shape == "cpu" else []):
      next(outputs)
      with open(model_dir / f"{name}-{WARM_STEPS}") as f:
        healed[name] = f.read().split("\n")[:-1]
    print(f"{shape}: train {train_seconds:.1f} s, eval {eval_seconds:.1f} s, "
          f"infer {infer_seconds} s")
    with open(model_dir / "eval" / f"flcc_python_full_line_{WARM_STEPS}_predictions") as f:
      predictions = f.read()
    metrics = re.findall(r"eval/flcc_python_full_line/(\w+) at step \d+: ([0-9.]+)", evaluation)
    results[shape] = {"losses": mesh_main_runs.losses(train),
                      "predictions": predictions, "completions": completions,
                      "healed": healed, "metrics": dict(metrics)}
  return results


@pytest.fixture(scope="module")
def runs(flcc_data_dir, mesh_root):
  """The warm start, then every shape but the soak tier's."""
  return _run_shapes([s for s in SHAPES if s not in SOAK_SHAPES], mesh_root, flcc_data_dir,
                     warm_start=True)


@pytest.fixture(scope="module")
def soak_runs(flcc_data_dir, mesh_root, runs):  # pylint: disable=unused-argument (the warm start)
  return _run_shapes(SOAK_SHAPES, mesh_root, flcc_data_dir, warm_start=False)


def test_the_reference_run_decodes_something_to_agree_about(runs):
  reference = runs["cpu"]
  assert len(reference["losses"]) == STEPS  # from the warm checkpoint's step, not from 0
  # Greedy decoding that agrees on empty lines would prove little: the warm start decodes
  # lines of several kinds.
  lines = reference["predictions"].split("\n")
  assert len({line for line in lines if line.strip()}) >= 3, lines
  assert set(reference["metrics"]) == set(metrics_lib.FULL_LINE_METRIC_NAMES)


@pytest.mark.parametrize("shape", [
    pytest.param(name, marks=[pytest.mark.soak] if name in SOAK_SHAPES else [])
    for name in SHAPES if name != "cpu"])
def test_each_mesh_shape_trains_and_evals_as_one_device(request, runs, shape):
  reference = runs["cpu"]
  run = (request.getfixturevalue("soak_runs") if shape in SOAK_SHAPES else runs)[shape]
  assert len(run["losses"]) == STEPS, run["losses"]
  print(f"{shape}: losses {run['losses']} against {reference['losses']}")
  differences = mesh_main_runs.loss_differences(run["losses"], reference["losses"])
  print("relative differences " + ", ".join(f"{d:.1e}" for d in differences))
  # Greedy decoding: the same completions, in eval and in infer, so the same metrics.
  assert run["predictions"] == reference["predictions"]
  assert run["metrics"] == reference["metrics"]
  if shape in INFER_SHAPES:
    assert len(run["completions"]) == len(PREFIXES)
    assert run["completions"] == reference["completions"]


def test_healed_and_cached_greedy_decoding_on_a_split_mesh_is_one_devices(runs):
  reference, split = runs["cpu"]["healed"]["healed"], runs["model:2,batch:2"]["healed"]["healed"]
  assert len(reference) == len(PREFIXES) and any(reference)
  assert reference != runs["cpu"]["healed"]["uncached"]  # the cache changed the lines
  assert split == reference


def test_the_line_search_on_a_split_mesh_is_one_devices(runs):
  """The same lines, in the same order, with the same scores, where the model and its
  vocabulary are split in two (with healing and the copy cache); the first greedy's
  (beam_search.gin's), decoded beside the search on either mesh."""
  def searched(shape):
    return [json.loads(line) for line in runs[shape]["healed"]["searched"]]
  reference, split = searched("cpu"), searched("model:2,batch:2")
  assert len(reference) == len(PREFIXES)
  assert sum(len(found["completions"]) for found in reference) > len(PREFIXES)
  for found, found_split, greedy in zip(reference, split, runs["cpu"]["healed"]["healed"]):
    assert found["completions"][0] == greedy
    assert found_split["completions"] == found["completions"]
    assert found_split["scores"] == pytest.approx(found["scores"], abs=1e-4)
