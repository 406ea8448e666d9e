"""Benchmark of `python -m code_t5.data build`: files/s and MB/s, next to a plain read.

Generates an FLCC v3 tree of --files files (default 20000) from the running interpreter's
standard library (each copy made unique, so de-duplication keeps it), then in one run:
  1. reads every stored file once (the floor any build pays),
  2. builds flcc/python from it in this process, reading and filtering on each number of
     worker processes in --workers (default: 1),
  3. with --beam_workers=1,2, builds it again on Beam's DirectRunner with each number of
     worker processes (multi_processing mode; each worker imports TensorFlow once);
each build once per --near_duplicates mode (default: off, then holdout, the default of
`code_t5.data build`; the tree's copies of one module are near-duplicates of each other, as
vendored copies are). With --repos=N, also N git repositories (two commits of 20 modules each,
made by git) written as an FLCC tree (`build --repos_dir`'s read: git on each object store as
data), --repeat times. Prints a table and writes JSON (--json).

  .venv/bin/python scripts/bench_build.py --files=20000 --workers=1,2 --beam_workers=1,2 \
    --json=bench_build.json
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile
import time

from code_t5.data import builder
from code_t5.data import near_duplicates
from code_t5.data import repositories
from code_t5.data import tree_writer


def make_tree(root, num_files, files_per_repo=50):
  sources = [content for files in tree_writer.stdlib_repositories().values()
             for content in files.values() if 200 < len(content) < 20000]
  repos, count = {}, 0
  while count < num_files:
    content = sources[count % len(sources)]
    repo = f"bench{count // files_per_repo // 100:03d}/repo{count // files_per_repo:05d}"
    repos.setdefault(repo, {})[f"pkg/module_{count}.py"] = (
        content + f"\n# copy {count}\n".encode())
    count += 1
  tree_writer.write_flcc_tree(root, repos)


def make_repositories(root, count, files=20):
  """`count` git repositories of two commits each: `files` modules, then a fifth changed."""
  sources = [content for files_ in tree_writer.stdlib_repositories().values()
             for content in files_.values() if 200 < len(content) < 20000]
  env = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@b", GIT_COMMITTER_NAME="b",
             GIT_COMMITTER_EMAIL="b@b", GIT_AUTHOR_DATE="@1795370000 +0000",
             GIT_COMMITTER_DATE="@1795370000 +0000")
  for number in range(count):
    work = os.path.join(root, f"team{number // 20:02d}", f"repo{number:04d}")
    os.makedirs(work)
    git = lambda *args, work=work: subprocess.run(["git", *args], cwd=work, env=env, check=True,
                                                  capture_output=True)
    git("init", "-q", "-b", "main")
    for commit in range(2):
      for i in range(files):
        if commit == 0 or i % 5 == 0:
          with open(os.path.join(work, f"m{i}.py"), "wb") as f:
            f.write(sources[(number * files + i) % len(sources)] + f"\n# {commit}\n".encode())
      git("add", "-A")
      git("commit", "-q", "-m", str(commit))


def plain_read(root):
  files = total = 0
  for dirpath, _, filenames in os.walk(os.path.join(root, "v3", "languages")):
    for name in filenames:
      with open(os.path.join(dirpath, name), "rb") as f:
        total += len(f.read())
      files += 1
  return files, total


def timed(fn):
  start = time.perf_counter()
  result = fn()
  return result, time.perf_counter() - start


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--files", type=int, default=20000)
  parser.add_argument("--workers", default="",
                      help="comma-separated worker counts of the in-process build")
  parser.add_argument("--beam_workers", default="",
                      help="comma-separated worker counts: also time Beam's DirectRunner with each")
  parser.add_argument("--near_duplicates", default="off,holdout",
                      help="comma-separated modes: every build runs once with each")
  parser.add_argument("--repos", type=int, default=0,
                      help="also time writing the FLCC tree of this many git repositories")
  parser.add_argument("--repeat", type=int, default=3, help="runs of the --repos write")
  parser.add_argument("--json", default=None)
  parser.add_argument("--workdir", default=None, help="default: a temporary directory")
  args = parser.parse_args()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

  workdir = args.workdir or tempfile.mkdtemp(prefix="bench_build_")
  tree = os.path.join(workdir, "tree")
  shutil.rmtree(tree, ignore_errors=True)
  _, gen_seconds = timed(lambda: make_tree(tree, args.files))
  (files, total), read_seconds = timed(lambda: plain_read(tree))
  rows = [("plain read", files, total, read_seconds)]

  runs = [(f"in process, {workers} worker{'s' * (workers != 1)}", None, (), workers)
          for workers in map(int, filter(None, args.workers.split(",")))]
  runs = runs or [("in process", None, (), 1)]
  for workers in filter(None, args.beam_workers.split(",")):
    runs.append((f"Beam, {workers} worker{'s' * (workers != '1')}", "DirectRunner",
                 (f"--direct_num_workers={workers}", "--direct_running_mode=multi_processing"),
                 1))
  reports = {}
  for number, (name, runner, flags, workers) in enumerate(runs):
    for mode in args.near_duplicates.split(","):
      data_dir = os.path.join(workdir, f"tfds_{number}_{mode}")
      shutil.rmtree(data_dir, ignore_errors=True)
      options = builder.BuildOptions(near_duplicates=near_duplicates.Options(mode))
      report, seconds = timed(lambda: builder.build(
          tree, data_dir, "python", options, beam_runner=runner, beam_flags=flags,
          workers=workers))
      reports.setdefault(mode, []).append(
          {k: v for k, v in report.items() if k not in ("options", "fingerprint")})
      rows.append((f"build ({name}; near-duplicates {mode})", report["files_processed"], total,
                   seconds))
      shutil.rmtree(data_dir, ignore_errors=True)
  same = all(r == same_mode[0] for same_mode in reports.values() for r in same_mode)
  if args.repos:
    repos = os.path.join(workdir, "repos")
    shutil.rmtree(repos, ignore_errors=True)
    make_repositories(repos, args.repos)
    for run in range(args.repeat):
      out = os.path.join(workdir, f"repos_tree_{run}")
      manifest, seconds = timed(lambda out=out: repositories.write_tree(repos, out))
      stored = manifest["stored"]["files"]
      rows.append((f"--repos_dir tree of {args.repos} git repositories, run {run + 1}",
                   stored, sum(os.path.getsize(os.path.join(d, f))
                               for d, _, fs in os.walk(os.path.join(out, "v3", "languages"))
                               for f in fs), seconds))
      shutil.rmtree(out, ignore_errors=True)

  print(f"\ntree: {files} files, {total / 1e6:.1f} MB (generated in {gen_seconds:.1f} s); "
        f"the reports of builds of one mode {'agree' if same else 'DIFFER'}")
  for mode, mode_reports in reports.items():
    near = mode_reports[0]["near_duplicates"]
    if near["mode"] != near_duplicates.OFF:
      print(f"near-duplicates {mode}: "
            + "; ".join(near_duplicates.report_lines(near).values()))
  width = max(len(row[0]) for row in rows) + 2
  print(f"{'step':<{width}}{'files':>8}{'seconds':>10}{'files/s':>10}{'MB/s':>8}")
  results = []
  for name, n, size, seconds in rows:
    print(f"{name:<{width}}{n:>8}{seconds:>10.2f}{n / seconds:>10.0f}{size / 1e6 / seconds:>8.1f}")
    results.append({"step": name, "files": n, "bytes": size, "seconds": round(seconds, 3),
                    "files_per_s": round(n / seconds, 1),
                    "mb_per_s": round(size / 1e6 / seconds, 2)})
  if args.json:
    with open(args.json, "w") as f:
      json.dump({"cpus": os.cpu_count(), "reports_agree": same, "results": results}, f,
                indent=1)
  if not args.workdir:
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
  main()
