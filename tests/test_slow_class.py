"""scripts/as_slow_class: a command run as on the slow class, for CI's 30-minute budget measured
on a faster machine (CONTRIBUTING.md; BENCHMARKS.md, "The test suite's time")."""

import os
import subprocess

import pytest

from conftest import REPO_ROOT

SCRIPT = os.path.join(REPO_ROOT, "scripts", "as_slow_class")


def test_the_command_runs_held_to_the_cpus_asked_with_onednn_at_avx2():
  # Another quota than the default's: a suite run under the stand-in keeps its own group's.
  proc = subprocess.run(
      [SCRIPT, "sh", "-c", 'cat /proc/self/cgroup; echo "isa $ONEDNN_MAX_CPU_ISA"'],
      capture_output=True, text=True, env=dict(os.environ, SLOW_CLASS_CPUS="0.75"))
  if proc.returncode == 2 and "no writable cgroup file system" in proc.stderr:
    pytest.skip(proc.stderr.strip())  # the script's own test of the machine: not root
  assert proc.returncode == 0, proc.stderr
  assert "isa AVX2" in proc.stdout
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
