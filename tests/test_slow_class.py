"""scripts/as_slow_class: a command run as on the slow class, for CI's 30-minute budget measured
on a faster machine (CONTRIBUTING.md; BENCHMARKS.md, "The test suite's time")."""

import glob
import os
import subprocess

import pytest

from conftest import QUIET_TF, REPO_ROOT, TINY_MODEL, run_mesh_main

SCRIPT = os.path.join(REPO_ROOT, "scripts", "as_slow_class")


def test_the_command_runs_held_to_the_cpus_asked_with_onednn_off_and_at_avx2():
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
  # TensorFlow's oneDNN ops off, as a Zen 3's TensorFlow leaves them.
  assert "isa AVX2 opts 0" in proc.stdout
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


# TensorFlow 2.15 turns its oneDNN ops on by default on Linux where the CPU has the neural-network
# instructions (TF 2.9's release notes), off elsewhere: off on a Zen 3 (AVX2), on on the
# AVX-512 machines the suite was first written on.
ONEDNN_BY_DEFAULT_FLAGS = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8",
                           "amx_bf16")


def _onednn_on_by_default() -> bool:
  with open("/proc/cpuinfo") as f:
    flags = next(line for line in f if line.startswith("flags")).split(":", 1)[1].split()
  return any(flag in flags for flag in ONEDNN_BY_DEFAULT_FLAGS)


@pytest.mark.slow
def test_reproducible_gin_with_no_variable_set_follows_the_cpus_onednn_default(
    flcc_data_dir, tmp_path):
  """reproducible.gin with TF_ENABLE_ONEDNN_OPTS unset: on a CPU whose TensorFlow leaves oneDNN
  off (the slow class) it trains, on one that turns it on it stops in one line. With the
  variable set each way, tests/test_bad_input.py (on) and test_end_to_end (off) hold the rest."""
  model_dir = str(tmp_path / "model")
  env = {k: v for k, v in QUIET_TF.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
  proc = run_mesh_main(model_dir, flcc_data_dir,
                       ["models/shared-prefix_lm.gin", "mesh/cpu.gin", "reproducible.gin"],
                       TINY_MODEL + ["MIXTURE_NAME = 'flcc_python_full_line'",
                                     "run.train_steps = 2"], env=env)
  checkpoints = glob.glob(os.path.join(model_dir, "model.ckpt-2.index"))
  if _onednn_on_by_default():
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert "TensorFlow's oneDNN ops are on" in proc.stderr, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not checkpoints
  else:
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert checkpoints, os.listdir(model_dir)
