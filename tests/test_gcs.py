"""gs:// end to end, through TensorFlow's own GCS client against an emulator on loopback.

build -> vocab -> train the tiny model -> eval -> infer -> export, with the FLCC tree, the data
dir, the model dir, the prefixes, the completions and the SavedModel on gs://, each as the command line a user
types (the mesh_transformer_main runs share one process, tests/mesh_main_runs.py; the test of a
missing bucket launches every entry point itself). Against the same on local paths, the dataset's files and the vocabulary are the
same bytes and the trained weights the same numbers; infer's completions and the SavedModel's
are the same text; and nothing but our bucket was asked for. The emulator and
its /etc/hosts live in tests/gcs_emulator.py; every command runs in a mount namespace where the
GCS names are 127.0.0.1, checked before it starts.
"""

import glob
import json
import os
import subprocess
import time

import numpy as np
import pytest

from code_t5 import metrics
from code_t5.data import tree_writer
import gcs_emulator
import mesh_main_runs
from conftest import (FIXTURE_RATIOS, PYTHON, REPO_ROOT, TINY_MODEL, TINY_VOCAB_SIZE,
                      build_report, checkpoint_tensors, mesh_main_command,
                      mesh_main_runs_command, split_records)

# One emulator (it holds port 443) and one chain of runs: one worker.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("gcs")]

ROOT = f"gs://{gcs_emulator.BUCKET}"
TRAIN_STEPS = 3
PREFIXES = ["def f(x):\n    return", "class A:\n\tdef __init__(self):\n\t\tself.", "import "]
TINY_RUN = ["MIXTURE_NAME = 'flcc_python_full_line'"] + TINY_MODEL + [
    "Unitransformer.sample_autoregressive.max_steps = 8"]
# Both trainings see the same batches (seed 7) without dropout; the one on gs:// starts from the
# local one's initial weights (mesh-tf seeds no initializer, so two runs start apart).
TRAIN = [f"run.train_steps = {TRAIN_STEPS}", "mesh_train_dataset_fn.seed = 7",
         "dropout_rate = 0.0"]
INFER_OUTPUT = "completions"

# In one process, as a user's notebook would: the FLCC tree copied to gs:// (as `gsutil cp -r`
# would), built from there in process (its readers spawned: near-duplicates are judged) into a
# data dir on gs://, and again on Beam's DirectRunner with 2 worker processes, which read the
# tree from gs:// themselves, into a local one; vocab through the CLI's main(), and the prefixes
# file written to gs://.
DATA_CODE = """
import json, os, sys
import tensorflow as tf
from code_t5 import files
from code_t5.data.__main__ import main
local_tree, flcc_dir, data_dir, beam_dir, ratios, vocab_size, prefixes_file, prefixes = sys.argv[1:]
for dirpath, _, names in os.walk(local_tree):
  for name in names:
    path = os.path.join(dirpath, name)
    tf.io.gfile.makedirs(os.path.join(flcc_dir, os.path.relpath(dirpath, local_tree)))
    tf.io.gfile.copy(path, os.path.join(flcc_dir, os.path.relpath(path, local_tree)))
assert main(["build", "--flcc_dir=" + flcc_dir, "--data_dir=" + data_dir, "--ratios=" + ratios]) == 0
assert main(["build", "--flcc_dir=" + flcc_dir, "--data_dir=" + beam_dir, "--ratios=" + ratios,
             "--beam_runner=DirectRunner",
             "--beam_options=--direct_num_workers=2 --direct_running_mode=multi_processing"]) == 0
assert main(["vocab", "--data_dir=" + data_dir, "--vocab_size=" + vocab_size]) == 0
files.write_atomically(prefixes_file, "".join(json.dumps({"prefix": p}) + "\\n"
                                              for p in json.loads(prefixes)))
"""

# Everything the runs wrote to gs:// copied to local dirs, the SavedModel served from gs://,
# and code_t5.summaries read from gs://.
PULL_CODE = """
import json, os, sys
import tensorflow as tf, tensorflow_text
from code_t5 import summaries
pairs, export_dir, model_dir, prefixes = json.loads(sys.argv[1]), *sys.argv[2:]
for remote, local in pairs:
  for dirpath, _, names in tf.io.gfile.walk(remote):
    for name in names:
      target = os.path.join(local, os.path.relpath(os.path.join(dirpath, name), remote))
      os.makedirs(os.path.dirname(target), exist_ok=True)
      tf.io.gfile.copy(os.path.join(dirpath, name), target, overwrite=True)
[saved_model] = [d for d in tf.io.gfile.listdir(export_dir) if d.strip("/").isdigit()]
serve = tf.saved_model.load(os.path.join(export_dir, saved_model)).signatures["serving_default"]
outputs = serve(inputs=tf.constant(json.loads(prefixes)))["outputs"].numpy().tolist()
print(json.dumps({"served": [o.decode("utf-8").split("\\n")[0] for o in outputs],
                  "summary": summaries.summarize(model_dir)}))
"""


@pytest.fixture(scope="module")
def gcs(tmp_path_factory):
  missing = gcs_emulator.missing_prerequisite()
  if missing:
    # A user's machine may lack them; CI's has both, and a skip there would hide the gs:// runs.
    if os.environ.get("CI") == "true":
      pytest.fail(f"{missing}, and CI must run these tests")
    pytest.skip(missing)
  with gcs_emulator.emulator(str(tmp_path_factory.mktemp("gcs"))) as emulator:
    yield emulator


def _run(cmd, env, what):
  start = time.time()
  proc = subprocess.run(cmd, cwd=REPO_ROOT, env=dict(env, TF_CPP_MIN_LOG_LEVEL="2"),
                        capture_output=True, text=True)
  assert proc.returncode == 0, f"{what} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
  print(f"{what}: {time.time() - start:.1f} s")
  return proc


def _modes(model_dir, data_dir, prefixes_file, export_dir, init_checkpoint):
  """(name, gin files, gin params) of train, eval, infer and export, as a user runs them."""
  base = ["models/shared-prefix_lm.gin", "mesh/cpu.gin"]
  return [
      ("train", base, TINY_RUN + TRAIN + [f"utils.run.init_checkpoint = '{init_checkpoint}'"]),
      ("eval", base + ["eval_full_line.gin"],
       TINY_RUN + ["EVAL_EXAMPLES = 6"]),
      ("infer", base + ["infer_full_line.gin"], TINY_RUN + [
          f"INPUT_FILE = '{prefixes_file}'",
          f"OUTPUT_FILE = "
          f"'{model_dir}/{INFER_OUTPUT}'"]),
      ("export", base + ["export.gin"], TINY_RUN + [f"EXPORT_PATH = '{export_dir}'"]),
  ]


def _checkpoint(model_dir):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  path = tf.train.latest_checkpoint(model_dir)
  assert path.endswith(f"-{TRAIN_STEPS}"), path
  # float64: numpy cannot compare bfloat16 (mesh-tf's slices) with allclose.
  return {name: np.asarray(value).astype(np.float64)
          for name, value in checkpoint_tensors(path).items()}


def _tfds_files(data_dir):
  """{relative path: bytes} of the dataset's shards and report (dataset_info.json records
  when and where it was written, so it is left out)."""
  version_dir = os.path.join(data_dir, "flcc", "python", "1.0.0")
  out = {}
  for path in sorted(glob.glob(os.path.join(version_dir, "*"))):
    if os.path.basename(path) != "dataset_info.json":
      with open(path, "rb") as f:
        out[os.path.relpath(path, version_dir)] = f.read()
  return out


def test_build_train_eval_infer_export_on_gs_equal_the_same_on_local_paths(
    gcs, flcc_tree, flcc_data_dir, tmp_path):
  data_dir, model_dir, export_dir = f"{ROOT}/data", f"{ROOT}/runs/tiny", f"{ROOT}/export"
  prefixes_file = f"{ROOT}/prefixes.jsonl"
  start = time.time()
  beam_dir = str(tmp_path / "beam")
  _run(gcs.command([PYTHON, "-c", DATA_CODE, flcc_tree, f"{ROOT}/flcc", data_dir, beam_dir,
                    ",".join(map(str, FIXTURE_RATIOS)), str(TINY_VOCAB_SIZE), prefixes_file,
                    json.dumps(PREFIXES)]), gcs.env,
       "the tree copied to gs://, built from there in process and on Beam; vocab on gs://")
  # The same training on local paths first, keeping its initial weights (model.ckpt-0), then
  # each mode on gs://; in one process (tests/mesh_main_runs.py), each as its command line.
  local_model = str(tmp_path / "local_model")
  commands = [mesh_main_command(local_model, flcc_data_dir, ["models/shared-prefix_lm.gin",
                                                             "mesh/cpu.gin"],
                                TINY_RUN + TRAIN + ["code_t5.startup_writes.checkpoint = True"])]
  commands += [mesh_main_command(model_dir, data_dir, gin_files, gin_params)
               for _, gin_files, gin_params in _modes(model_dir, data_dir, prefixes_file,
                                                      export_dir,
                                                      f"{local_model}/model.ckpt-0")]
  runs = _run(gcs.command(mesh_main_runs_command(commands)), gcs.env,
              "train on local paths, then train, eval, infer and export on gs://")
  outputs = mesh_main_runs.split_output(runs.stderr, time.time())
  print("seconds per run (local train, train, eval, infer, export): " +
        ", ".join(f"{seconds:.1f}" for seconds, _ in outputs))
  pulled = tmp_path / "pulled"
  pairs = [(data_dir, str(pulled / "data")), (model_dir, str(pulled / "model"))]
  proc = _run(gcs.command([PYTHON, "-c", PULL_CODE, json.dumps(pairs), export_dir, model_dir,
                           json.dumps(PREFIXES)]), gcs.env, "copy back, serve, summarize")
  result = json.loads(proc.stdout.strip().splitlines()[-1])
  print(f"gs:// chain: {time.time() - start:.1f} s, {len(gcs.requests)} requests")

  # Nothing but our bucket was asked for (TFDS' own bucket, gs://tfds-data, is not).
  assert not [r for r in gcs.requests if gcs_emulator.BUCKET not in r], gcs.requests[:20]


  # Data: the same shards, report and vocabulary, byte for byte; the Beam build from gs:// the
  # same report and examples.
  assert _tfds_files(str(pulled / "data")) == _tfds_files(flcc_data_dir)
  beam_options, beam_report = build_report(beam_dir)
  assert beam_options["beam"] and beam_report == build_report(flcc_data_dir)[1]
  assert split_records(beam_dir) == split_records(flcc_data_dir)
  vocab = os.path.join("flcc_vocab", "python", "spm.model")
  with open(pulled / "data" / vocab, "rb") as f, open(os.path.join(flcc_data_dir, vocab),
                                                        "rb") as g:
    assert f.read() == g.read()
  # Training: from the same weights on the same batches, the same losses step by step (within
  # mesh_main_runs.loss_differences' bounds); and
  # weights as close as two local runs from one start are. CPU float sums differ in their last
  # bits from run to run, and Adafactor's first updates are nearly the gradient's sign, so a
  # near-zero gradient can move a weight either way by the learning rate: measured between two
  # local runs on Zen 1, up to 3.2% of a large tensor beyond one bfloat16 step (mesh-tf stores
  # weights in bfloat16), none by more than 0.024; the bounds below leave 2.5 times that.
  local_losses, gs_losses = (mesh_main_runs.losses(text) for _, text in outputs[:2])
  assert len(local_losses) == TRAIN_STEPS
  mesh_main_runs.loss_differences(gs_losses, local_losses)
  on_gs, local = _checkpoint(str(pulled / "model")), _checkpoint(local_model)
  assert on_gs.keys() == local.keys()
  beyond_one_step = 0
  for name in local:
    beyond_one_step += np.sum(~np.isclose(on_gs[name], local[name], rtol=2**-7, atol=1e-6))
    assert np.abs(on_gs[name] - local[name]).max() <= 0.06, name
  assert beyond_one_step / sum(w.size for w in local.values()) <= 0.08
  # Decoding: infer's completions on gs://, and the SavedModel's served from gs://, agree
  # (on local paths, test_end_to_end.py checks the same; the weights are the same above).
  with open(pulled / "model" / f"{INFER_OUTPUT}-{TRAIN_STEPS}") as f:
    completions = f.read().split("\n")[:-1]
  assert result["served"] == completions and len(completions) == len(PREFIXES)
  # Eval wrote its metrics to gs://, and code_t5.summaries reads them there.
  assert set(result["summary"]["eval"]) == {
      f"flcc_python_full_line/{m}" for m in metrics.FULL_LINE_METRIC_NAMES}
  assert result["summary"]["train"]["first_step"] >= 1  # the loss, read from gs://


BAD_BUCKETS = ["gs://no-such-bucket", f"gs://{gcs_emulator.FORBIDDEN_BUCKET}"]
# code_t5.data and code_t5.summaries report errors inside their main(), so one process runs
# both for each bucket; mesh_transformer_main's report is the entry point's (errors.py), so
# it is launched for each.
CLI_CODE = """
import contextlib, io, json, sys
from code_t5 import summaries
from code_t5.data.__main__ import main as data_main
flcc_dir, buckets = sys.argv[1], json.loads(sys.argv[2])
results = []
for bucket in buckets:
  for name, main, argv in [
      ("code_t5.data", data_main, ["build", "--flcc_dir=" + flcc_dir, "--data_dir=" + bucket + "/data"]),
      ("code_t5.data", data_main, ["build", "--flcc_dir=" + bucket + "/flcc",
                                   "--data_dir=" + flcc_dir + "/data"]),
      ("code_t5.summaries", summaries.main, ["--model_dir=" + bucket + "/run"])]:
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
      returncode = main(argv)
    results.append([name, bucket, returncode, stderr.getvalue()])
print(json.dumps(results))
"""


def test_a_bucket_missing_or_refused_is_one_line_at_every_entry_point(gcs, tmp_path):
  """No such bucket, or one that answers 403: each entry point ends with one line naming the
  gs:// path and exit 1, after TF's retries (1 here, CLIENT_ENV), never a traceback or a
  hang."""
  tree_writer.write_flcc_tree(str(tmp_path), {"a/b": {"x.py": b"x = 1\n"}})
  env = dict(gcs.env, TF_CPP_MIN_LOG_LEVEL="3")
  proc = subprocess.run(gcs.command([PYTHON, "-c", CLI_CODE, str(tmp_path),
                                     json.dumps(BAD_BUCKETS)]),
                        cwd=REPO_ROOT, capture_output=True, text=True, env=env, timeout=600)
  assert proc.returncode == 0, proc.stderr[-3000:]
  results = json.loads(proc.stdout.strip().splitlines()[-1])
  for bucket in BAD_BUCKETS:
    proc = subprocess.run(gcs.command(mesh_main_command(
        f"{bucket}/run", f"{bucket}/data", ["models/shared-prefix_lm.gin", "mesh/cpu.gin"],
        TINY_RUN + TRAIN)), cwd=REPO_ROOT, capture_output=True, text=True, env=env,
                          timeout=600)
    results.append(["mesh_transformer_main", bucket, proc.returncode, proc.stderr])
  assert len(results) == 4 * len(BAD_BUCKETS)
  for name, bucket, returncode, stderr in results:
    errors = [line for line in stderr.splitlines() if "error:" in line]
    assert returncode == 1 and len(errors) == 1, (name, bucket, stderr[-3000:])
    assert bucket in errors[0] and "Traceback" not in stderr, (name, errors[0])
    # The bucket is the problem, not the tree's layout.
    assert "FLCC" not in errors[0], errors[0]
    print(f"{name}: {errors[0]}")
