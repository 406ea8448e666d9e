"""Every `sh` block of README.md and GENTLE_INTRO.md runs, in order: the docs cannot rot.

The blocks run with bash in a scratch workspace that links the repository's .venv, Makefile,
lock and gin files, so what they write (data/, runs/, files they create) stays there. Where
a doc uses the real dataset or a full-length run, SUBSTITUTIONS says what runs instead, and
every substitution must still match its doc, so this table cannot rot either.
"""

import os
import re
import subprocess

import pytest

from conftest import FIXTURE_RATIOS, REPO_ROOT, TINY_VOCAB_SIZE

DOCS = ("README.md", "GENTLE_INTRO.md")
LINKED = (".venv", "Makefile", "pyproject.toml", "requirements", "gin_configs", "scripts")
RATIOS = "--ratios=" + ",".join(str(r) for r in FIXTURE_RATIOS)

# (doc, what it says, what the test runs): fixture data for the real dataset, fewer steps.
SUBSTITUTIONS = [
    ("README.md", "make smoke   #", "SMOKE_STEPS=20 SMOKE_EVAL_EXAMPLES=16 make smoke   #"),
    ("README.md", "run.train_steps = 1000", "run.train_steps = 2"),
    ("README.md", "make bench   #", "BENCH_PARTS=startup make bench   #"),
    ("GENTLE_INTRO.md", "FLCC_DIR=/path/to/flcc", "FLCC_DIR={flcc_tree}"),
    ("GENTLE_INTRO.md", "FLCC_ARCHIVE=/path/to/flcc-v3.tar.gz", "FLCC_ARCHIVE={archive}"),
    ("GENTLE_INTRO.md", "--data_dir=data/flcc/tfds --language=python\n",
     f"--data_dir=data/flcc/tfds --language=python {RATIOS}\n"),
    ("GENTLE_INTRO.md", "--vocab_size=32000", f"--vocab_size={TINY_VOCAB_SIZE}"),
    ("GENTLE_INTRO.md", "run.train_steps = 600", "run.train_steps = 20"),
    ("GENTLE_INTRO.md", "model.ckpt-600", "model.ckpt-20"),
    ("GENTLE_INTRO.md", "run.train_steps = 100", "run.train_steps = 5"),
    ("GENTLE_INTRO.md", "--gin_file=eval_full_line.gin",
     "--gin_file=eval_full_line.gin "
     "--gin_param=\"mesh_eval_dataset_fn.num_eval_examples = 16\""),
]
# Lines not run, and why.
NOT_RUN = {
    "make test": "CI runs it (.ci/run); run from here, the test suite would run itself",
}


def _blocks(doc):
  with open(os.path.join(REPO_ROOT, doc), encoding="utf-8") as f:
    text = f.read()
  return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def _runnable(doc, block, values):
  for where, old, new in SUBSTITUTIONS:
    if where == doc:
      block = block.replace(old, new.format(**values))
  lines = [line for line in block.splitlines()
           if not any(line.startswith(skipped) for skipped in NOT_RUN)]
  return "\n".join(lines) + "\n"


BLOCKS = [(doc, i) for doc in DOCS for i in range(len(_blocks(doc)))]


def test_every_substitution_and_skip_still_matches_its_doc():
  for doc, old, _ in SUBSTITUTIONS:
    assert any(old in block for block in _blocks(doc)), f"{doc} no longer says {old!r}"
  for line in NOT_RUN:
    assert any(line in block for doc in DOCS for block in _blocks(doc)), line
  with open(os.path.join(REPO_ROOT, ".ci", "run")) as f:
    assert "\nmake test\n" in f.read()  # the line skipped above is what CI runs


@pytest.fixture(scope="module")
def workspace(tmp_path_factory, flcc_tree, fixture_archive):
  root = tmp_path_factory.mktemp("docs")
  for name in LINKED:
    os.symlink(os.path.join(REPO_ROOT, name), root / name)
  return {"dir": str(root), "flcc_tree": flcc_tree, "archive": fixture_archive}


@pytest.mark.slow
@pytest.mark.parametrize("doc,index", BLOCKS, ids=[f"{d}-{i}" for d, i in BLOCKS])
def test_doc_block_runs(workspace, doc, index):
  script = _runnable(doc, _blocks(doc)[index], workspace)
  proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=workspace["dir"],
                        capture_output=True, text=True,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert proc.returncode == 0, (
      f"{doc} block {index} failed:\n{script}\n--- stdout\n{proc.stdout[-2000:]}"
      f"\n--- stderr\n{proc.stderr[-4000:]}")
