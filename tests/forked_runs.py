"""Commands `python -m MODULE ARGS` and `python SCRIPT ARGS`, each a process forked from one
that imported the third-party stack once (TensorFlow, mesh-tf, t5, seqio, TFDS: 5-6 s of a
2-core Zen 5 per launch, twice that on the slow class).

    python tests/forked_runs.py      # then one JSON request a line on stdin:
    {"argv": ["-m", "t5.models.mesh_transformer_main", ...], "cwd": ..., "env": {...},
     "stdout": PATH, "stderr": PATH}

Each child is the command's own process as far as the command can tell: its working folder,
environment, argv, sys.path[0] and file descriptors 0-2 are the command's (stdin /dev/null,
stdout and stderr the request's files), the module or script runs as `__main__`, and what it
raises leaves the child as it leaves `python`: an uncaught exception through sys.excepthook
with exit code 1, SystemExit with its code. Nothing of code_t5 is imported before the fork,
so the entry point imports it as a user's launch does (`--module_import=code_t5`). What the
fork shares: modules the parent imported, in the order it imported them. The reply, a JSON
line on the parent's stdout: {"returncode": N}. tests/test_bad_input.py runs its rows so.
"""

import json
import os
import runpy
import sys

# What every entry point imports before it does anything (python -m t5.models.mesh_transformer_main
# --help imports all of these); not code_t5, nor the entry points themselves.
PRELOADED = ("tensorflow", "tensorflow.compat.v1", "mesh_tensorflow", "mesh_tensorflow.transformer",
             "gin", "gin.tf", "absl.app", "absl.flags", "seqio", "tensorflow_datasets", "t5.data",
             "t5.models", "t5.evaluation", "sentencepiece", "numpy")


def _child(request):
  """Becomes the command's process: never returns (the command's exit ends it)."""
  os.chdir(request["cwd"])
  os.environ.clear()
  os.environ.update(request["env"])
  stdin = os.open(os.devnull, os.O_RDONLY)
  stdout = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
  stderr = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
  for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
    os.dup2(fd, target)
    os.close(fd)
  # The parent's stdin object has requests read ahead in its buffer: a fresh one instead.
  sys.stdin = open(0, closefd=False)  # pylint: disable=consider-using-with
  argv = request["argv"]
  if argv[0] == "-m":
    sys.argv = ["-m", *argv[2:]]  # runpy puts the module's file first
    sys.path[0] = os.getcwd()  # as `python -m` does
    runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
  else:
    sys.argv = list(argv)
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python SCRIPT` does
    runpy.run_path(argv[0], run_name="__main__")
  sys.exit(0)


def main():
  replies = os.fdopen(os.dup(1), "w")
  os.dup2(2, 1)  # whatever the imports print stays off the replies
  for name in PRELOADED:
    __import__(name)
  for line in sys.stdin:
    request = json.loads(line)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
      _child(request)  # no try: what the command raises must leave the child as from python
    _, status = os.waitpid(pid, 0)
    replies.write(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n")
    replies.flush()


if __name__ == "__main__":
  main()
