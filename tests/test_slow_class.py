"""scripts/as_slow_class: a command run as on the slow class, for CI's 30-minute budget measured
on a faster machine (CONTRIBUTING.md; BENCHMARKS.md, "The test suite's time")."""

import glob
import json
import os
import subprocess

import pytest

from conftest import QUIET_TF, REPO_ROOT, TINY_MODEL, run_mesh_main

SCRIPT = os.path.join(REPO_ROOT, "scripts", "as_slow_class")


def test_the_command_runs_held_to_the_cpus_asked_with_onednn_at_avx2():
  # Another quota than the default's: a suite run under the stand-in keeps its own group's.
  proc = subprocess.run(
      [SCRIPT, "sh", "-c",
       'cat /proc/self/cgroup; echo "isa $ONEDNN_MAX_CPU_ISA opts $TF_ENABLE_ONEDNN_OPTS"'],
      capture_output=True, text=True,
      env={**{k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"},
           "SLOW_CLASS_CPUS": "0.75"})
  if proc.returncode == 2 and "no writable cgroup file system" in proc.stderr:
    pytest.skip(proc.stderr.strip())  # the script's own test of the machine: not root
  assert proc.returncode == 0, proc.stderr
  # oneDNN's kernels at AVX2; its switch left to code_t5's launches, as on a Zen 3.
  assert "isa AVX2 opts \n" in proc.stdout
  group = next(line.split(":", 2)[2] for line in proc.stdout.splitlines()
               if line.split(":")[1] in ("cpu", "") and "slow_class" in line)
  assert group == "/code_t5_slow_class_75000", proc.stdout
  v1 = f"/sys/fs/cgroup/cpu{group}"
  if os.path.isdir(v1):
    with open(f"{v1}/cpu.cfs_quota_us") as quota, open(f"{v1}/cpu.cfs_period_us") as period:
      assert (quota.read().strip(), period.read().strip()) == ("75000", "100000")
  else:
    with open(f"/sys/fs/cgroup{group}/cpu.max") as limit:
      assert limit.read().split() == ["75000", "100000"]


def traced_ops(model_dir):
  """The op types of the traced steps' timelines in `model_dir` (code_t5.step_traces)."""
  ops = set()
  for path in glob.glob(os.path.join(model_dir, "timeline-*.json")):
    with open(path) as f:
      ops |= {e["args"]["op"] for e in json.load(f)["traceEvents"] if "op" in e.get("args", {})}
  assert ops, os.listdir(model_dir)
  return ops


@pytest.mark.slow
@pytest.mark.parametrize("reproducible", [False, True], ids=["defaults", "reproducible.gin"])
def test_with_no_variable_set_onednn_is_on_unless_reproducible_gin_on_every_cpu(
    flcc_data_dir, tmp_path, reproducible):
  """TF_ENABLE_ONEDNN_OPTS unset: a code_t5 launch turns TensorFlow's oneDNN ops on, which
  TensorFlow itself does only on CPUs with AVX-512 VNNI or BF16, and off with reproducible.gin
  on its command line, which then trains on every CPU (_code_t5_mtf_shim.py, choose_onednn:
  TensorFlow reads the variable when it loads, before code_t5 is imported). A traced step shows which
  kernels ran, and that the embedding's ids were gathered (code_t5/embedding.py). With the
  variable set each way, tests/test_bad_input.py (on) and test_end_to_end (off) hold the rest."""
  model_dir = str(tmp_path / "model")
  env = {k: v for k, v in QUIET_TF.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
  proc = run_mesh_main(model_dir, flcc_data_dir,
                       ["models/shared-prefix_lm.gin", "mesh/cpu.gin"] +
                       (["reproducible.gin"] if reproducible else []),
                       TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'",
                                     "run.train_steps = 2", "code_t5.step_traces.every = 1"],
                       env=env)
  assert proc.returncode == 0, proc.stderr[-4000:]
  assert glob.glob(os.path.join(model_dir, "model.ckpt-2.index")), os.listdir(model_dir)
  ops = traced_ops(model_dir)
  onednn = sorted(op for op in ops if op.startswith("_Mkl"))
  if reproducible:
    assert not onednn
  else:
    assert "_MklEinsum" in onednn, sorted(ops)
  assert {"GatherV2", "UnsortedSegmentSum"} <= ops, sorted(ops)
