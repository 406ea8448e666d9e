"""Bad input at every entry point: one line that names what is wrong and what to do, a
non-zero exit, no traceback, and nothing left behind that looks complete.

`ROWS` is CONTRIBUTING.md's table "Bad input" (tests/test_docs.py holds the two to the same
rows): a new entry point, or a new way to get one wrong, adds a row to both. A bucket that is
missing or refused is the one row that needs the GCS emulator: tests/test_gcs.py runs it at
every entry point.

Each row of an entry point is its own process, forked from one that imported TensorFlow and
the rest of the third-party stack once (conftest.run_forked, tests/forked_runs.py): the
imports were most of each row's time. code_t5 is imported in the row's process, by the entry
point, as in a user's launch.
"""

import dataclasses
import glob
import os
import shutil
import subprocess
from typing import Callable

import pytest

from conftest import (PYTHON, QUIET_TF, REPO_ROOT, TINY_MODEL, mesh_main_command, run_data_cli,
                      run_forked, run_mesh_main)

PREFIX_LM = ["models/shared-prefix_lm.gin", "mesh/cpu.gin"]
CAUSAL_LM = ["models/causal_lm_dev.gin", "mesh/cpu.gin"]
TASK = "MIXTURE_NAME = 'flcc_python_full_line'"
TRAINED_STEPS = 3


@dataclasses.dataclass
class Case:
  """Where a row runs: the fixture's data and tree, a trained model, a fresh folder."""
  data_dir: str
  tree: str
  model_dir: str
  tmp: str

  def path(self, *parts):
    return os.path.join(self.tmp, *parts)

  def copy_model(self, name="model"):
    shutil.copytree(self.model_dir, self.path(name))
    return self.path(name)


@dataclasses.dataclass
class Row:
  """`run(case)` -> (exit code, stderr); the error line holds `says(case)`; `leaves(case)`
  are globs that must match nothing afterwards (what would look complete)."""
  name: str
  entry: str
  run: Callable
  says: Callable
  leaves: Callable = lambda case: []
  code: int = 1
  trained: bool = False  # needs the trained model (those rows share one xdist worker)


def _mesh_main(gin_files, gin_params, model_dir=None, data_dir=None, tf_env=None):
  """`tf_env`: variables TensorFlow reads when it is imported (TF_ENABLE_ONEDNN_OPTS): the row
  runs in a fresh process with them, since a forked one has the parent's TensorFlow."""
  def run(case):
    where = (model_dir(case) if model_dir else case.path("model"),
             data_dir(case) if data_dir else case.data_dir, gin_files,
             TINY_MODEL + list(gin_params))
    proc = (run_mesh_main(*where, env=dict(QUIET_TF, **tf_env)) if tf_env
            else run_forked(mesh_main_command(*where)))
    return proc.returncode, proc.stderr
  return run


def _data_cli(*args):
  def run(case):
    proc = run_data_cli(*[a.format(case=case) for a in args], check=False)
    return proc.returncode, proc.stderr
  return run


def _process(*argv):
  def run(case):
    proc = run_forked([PYTHON, *[a.format(case=case) for a in argv]])
    return proc.returncode, proc.stderr
  return run


def _script(path, *argv, **env):
  """A shell script of the checkout's, with `env` added to the environment."""
  def run(case):
    proc = subprocess.run([os.path.join(REPO_ROOT, path), *argv], capture_output=True,
                          text=True, env=dict(os.environ, **env))
    return proc.returncode, proc.stderr
  return run


def _checkpoints(case):
  return [case.path("model", "model.ckpt-*")]


def _predictions(case):
  return [case.path("model", "validation_eval", "*_predictions")]


def _without_vocabulary(case):
  data_dir = case.path("tfds")
  shutil.copytree(os.path.join(case.data_dir, "flcc"), os.path.join(data_dir, "flcc"))
  return data_dir


def _with_vocabulary_bytes(case):
  data_dir = _without_vocabulary(case)
  vocab = os.path.join(data_dir, "flcc_vocab", "python", "spm.model")
  os.makedirs(os.path.dirname(vocab))
  with open(vocab, "wb") as f:
    f.write(b"not a sentencepiece model")
  return data_dir


def _with_empty_validation(case):
  data_dir = case.path("tfds")
  run_data_cli("build", f"--flcc_dir={case.tree}", f"--data_dir={data_dir}", "--ratios=1,0,0")
  shutil.copytree(os.path.join(case.data_dir, "flcc_vocab"),
                  os.path.join(data_dir, "flcc_vocab"))
  return data_dir


def _cut_short(case):
  """A copy of the trained model whose last data file lost its last 4 bytes."""
  model_dir = case.copy_model()
  [*_, last] = sorted(glob.glob(os.path.join(model_dir, f"model.ckpt-{TRAINED_STEPS}.data-*")))
  os.truncate(last, os.path.getsize(last) - 4)
  return model_dir


def _file(name, text):
  def make(case):
    path = case.path(name)
    with open(path, "w") as f:
      f.write(text)
    return path
  return make


PREFIXES = _file("prefixes.jsonl", '{"prefix": "def f(x):\\n    return"}\n')
NOT_JSON = _file("bad.jsonl", "def f(x):\n")
BAD_REPOSITORY = _file("repository.jsonl",
                       '{"prefix": "def f(x):\\n    return", "repository": ["util.py"]}\n')


def _infer(params, prepare=None):
  def run(case):
    extra = [p.format(case=case, file=prepare(case) if prepare else "") for p in params]
    return _mesh_main(PREFIX_LM + ["infer_full_line.gin"], [TASK, *extra],
                      model_dir=lambda c: c.model_dir)(case)
  return run


def _make_venv(python="python3.11", path_of=None):
  """`make venv` into a fresh venv folder of the case's (the checkout's own stays as it is);
  `path_of(case)`: the PATH it runs with."""
  def run(case):
    env = dict(os.environ, PATH=path_of(case)) if path_of else None
    proc = subprocess.run([shutil.which("make"), "-C", REPO_ROOT, "venv",
                           f"VENV={case.path('venv')}", f"PYTHON={python}"],
                          capture_output=True, text=True, env=env)
    return proc.returncode, proc.stderr
  return run


def _path_without_git(case):
  """A PATH of Python 3.11 and bash alone."""
  folder = case.path("bin")
  os.makedirs(folder)
  # The interpreter itself: a pyenv shim would need pyenv on the PATH.
  os.symlink(os.path.realpath(PYTHON), os.path.join(folder, "python3.11"))
  for tool in ("bash", "env"):
    os.symlink(shutil.which(tool), os.path.join(folder, tool))
  return folder


ROWS = [
    # make venv: what it needs from the machine
    Row("make venv without Python 3.11", "make venv", _make_venv(python="python3.99"),
        lambda c: "make venv: python3.99 not found: install Python 3.11",
        lambda c: [c.path("venv")], code=2),
    Row("make venv without git", "make venv", _make_venv(path_of=_path_without_git),
        lambda c: "make venv: git not found: install it", lambda c: [c.path("venv")], code=2),
    # mesh_transformer_main: the gin config
    Row("MIXTURE_NAME unset", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, ["run.train_steps = 3"]),
        lambda c: "MIXTURE_NAME is not set: add --gin_param=\"MIXTURE_NAME = 'flcc_python'\"",
        _checkpoints),
    Row("MIXTURE_NAME unset, causal model", "mesh_transformer_main",
        _mesh_main(CAUSAL_LM, ["run.train_steps = 3"]),
        lambda c: "MIXTURE_NAME is not set: add --gin_param=\"MIXTURE_NAME = "
                  "'flcc_python_causal'\"", _checkpoints),
    Row("a step count that is no number", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.train_steps = 'ten'"]),
        lambda c: "run.train_steps = 'ten': a whole number of steps is expected", _checkpoints),
    Row("a mistyped parameter", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.trian_steps = 5"]),
        lambda c: "doesn't have a parameter named 'trian_steps'", _checkpoints),
    Row("a --gin_param gin cannot parse", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.train_steps = = 3"]),
        lambda c: "Unable to parse value. (--gin_param: run.train_steps = = 3)", _checkpoints),
    Row("a gin file that is not there", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["models/no_such.gin"], [TASK]),
        lambda c: "Unable to open file: models/no_such.gin", _checkpoints),
    Row("a bit-identical training with TensorFlow's oneDNN ops on", "mesh_transformer_main",
        # On explicitly: unset, a launch naming reproducible.gin turns them off
        # (tests/test_slow_class.py).
        _mesh_main(PREFIX_LM + ["reproducible.gin"], [TASK, "run.train_steps = 3"],
                   tf_env={"TF_ENABLE_ONEDNN_OPTS": "1"}),
        lambda c: "code_t5.reproducible.bit_identical = True (reproducible.gin): TensorFlow's "
                  "oneDNN ops are on, and they add floats in varying order; run with "
                  "TF_ENABLE_ONEDNN_OPTS=0 in the environment", _checkpoints),
    Row("an unknown Task", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, ["MIXTURE_NAME = 'flcc_pyhton_full_line'", "run.train_steps = 3"]),
        lambda c: "MIXTURE_NAME = 'flcc_pyhton_full_line' is no registered Task or Mixture: "
                  "did you mean 'flcc_python_full_line'", _checkpoints),
    Row("a language not built", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, ["MIXTURE_NAME = 'flcc_java_full_line'", "run.train_steps = 3"]),
        lambda c: f"{c.data_dir}/flcc/java: not built (Task flcc_java_full_line): run `python -m "
                  f"code_t5.data build --data_dir={c.data_dir} --language=java`", _checkpoints),
    Row("a data dir that is not there", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.train_steps = 3"],
                   data_dir=lambda c: c.path("no_such_dir")),
        lambda c: f"{c.path('no_such_dir')}: no such data dir (--t5_tfds_data_dir)",
        _checkpoints),
    Row("no vocabulary", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.train_steps = 3"], data_dir=_without_vocabulary),
        lambda c: f"{c.path('tfds')}/flcc_vocab/python/spm.model: no vocabulary (Task "
                  f"flcc_python_full_line): run `python -m code_t5.data vocab", _checkpoints),
    Row("a corrupt vocabulary", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.train_steps = 3"], data_dir=_with_vocabulary_bytes),
        lambda c: f"{c.path('tfds')}/flcc_vocab/python/spm.model: not a sentencepiece model",
        _checkpoints),
    Row("an empty split", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["eval_full_line.gin"], [TASK], data_dir=_with_empty_validation),
        lambda c: f"flcc/python in {c.path('tfds')} has no validation split: it was built with "
                  "--ratios=1,0,0; rebuild it", _predictions),
    Row("the causal LM's Task on the prefix LM", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, ["MIXTURE_NAME = 'flcc_python_lm'", "run.train_steps = 3"]),
        lambda c: "the causal-LM Task (flcc_<lang>_lm) trains a causal model: compose "
                  "models/causal.gin", _checkpoints),
    Row("finetune without init_checkpoint", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["finetune.gin"], [TASK, "run.train_steps = 3"]),
        lambda c: "utils.run.init_checkpoint is not set: add --gin_param=\"utils.run."
                  "init_checkpoint = '/path/to/model_dir/model.ckpt-N'\"", _checkpoints),
    # mesh_transformer_main: checkpoints
    Row("eval of a step that is not there", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["eval_full_line.gin"], [TASK, "CHECKPOINT_STEP = 99999"],
                   model_dir=lambda c: c.copy_model()),
        lambda c: f"no checkpoint at step 99999 in {c.path('model')}: steps {TRAINED_STEPS} "
                  "(CHECKPOINT_STEP = -1 takes the latest)", _predictions, trained=True),
    Row("eval of a model dir without checkpoints", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["eval_full_line.gin"], [TASK]),
        lambda c: f"no checkpoint in {c.path('model')}: train there first", _predictions),
    Row("eval of a checkpoint cut short", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["eval_full_line.gin"], [TASK], model_dir=_cut_short),
        lambda c: f"{c.path('model')}/model.ckpt-{TRAINED_STEPS}: cut short: its data files "
                  "hold", _predictions, trained=True),
    Row("training resumed from a checkpoint cut short", "mesh_transformer_main",
        _mesh_main(PREFIX_LM, [TASK, "run.train_steps = 6"], model_dir=_cut_short),
        lambda c: f"{c.path('model')}/model.ckpt-{TRAINED_STEPS}: cut short",
        lambda c: [c.path("model", "model.ckpt-6*")], trained=True),
    Row("eval of a checkpoint of another shape", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["eval_full_line.gin"], [TASK, "d_model = 64"],
                   model_dir=lambda c: c.copy_model()),
        lambda c: "the checkpoint does not fit the model these gin files build (a variable is",
        _predictions, trained=True),
    # mesh_transformer_main: infer, score, export files
    Row("infer without INPUT_FILE", "mesh_transformer_main",
        _infer(["OUTPUT_FILE = '{case.tmp}/out'"]),
        lambda c: "INPUT_FILE is not set: add --gin_param=\"INPUT_FILE = 'prefixes.jsonl'\"",
        lambda c: [c.path("out-*")], trained=True),
    Row("infer of a prefix file that is not there", "mesh_transformer_main",
        _infer(["INPUT_FILE = '{case.tmp}/none.jsonl'", "OUTPUT_FILE = '{case.tmp}/out'"]),
        lambda c: f"{c.path('none.jsonl')}; No such file or directory",
        lambda c: [c.path("out-*")], trained=True),
    Row("infer of a line that is not JSON", "mesh_transformer_main",
        _infer(["INPUT_FILE = '{file}'", "OUTPUT_FILE = '{case.tmp}/out'"], NOT_JSON),
        lambda c: f"{c.path('bad.jsonl')}:1: expected a JSON object {{\"prefix\": \"...\"}}",
        lambda c: [c.path("out-*")], trained=True),
    Row("infer of a record whose repository is not a list of files", "mesh_transformer_main",
        _infer(["INPUT_FILE = '{file}'", "OUTPUT_FILE = '{case.tmp}/out'",
                "code_t5.repository_context.enabled = True"], BAD_REPOSITORY),
        lambda c: f"{c.path('repository.jsonl')}:1: \"repository\" must be a list of "
                  "{\"path\": \"...\", \"content\": \"...\"}",
        lambda c: [c.path("out-*")], trained=True),
    Row("infer into a folder that cannot be made", "mesh_transformer_main",
        _infer(["INPUT_FILE = '{file}'", "OUTPUT_FILE = '/proc/no_such/out'"], PREFIXES),
        lambda c: f"/proc/no_such/out-{TRAINED_STEPS}: /proc/no_such", trained=True),
    Row("score of a line without its completion", "mesh_transformer_main",
        lambda case: _mesh_main(PREFIX_LM + ["score.gin"], [
            TASK, f"INPUT_FILE = '{PREFIXES(case)}'", f"OUTPUT_FILE = '{case.tmp}/scores'"],
            model_dir=lambda c: c.model_dir)(case),
        lambda c: f"{c.path('prefixes.jsonl')}:1: expected a JSON object {{\"prefix\": \"...\", "
                  "\"completion\": \"...\"}", lambda c: [c.path("scores-*")], trained=True),
    Row("export without EXPORT_PATH", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["export.gin"], [TASK], model_dir=lambda c: c.model_dir),
        lambda c: "EXPORT_PATH is not set: add --gin_param=\"EXPORT_PATH = '/path/to/export'\"",
        trained=True),
    Row("export to a path that cannot be made", "mesh_transformer_main",
        _mesh_main(PREFIX_LM + ["export.gin"], [TASK, "EXPORT_PATH = '/proc/no_such/export'"],
                   model_dir=lambda c: c.model_dir),
        lambda c: "NotFoundError: /proc/no_such; No such file or directory",
        lambda c: ["/proc/no_such"], trained=True),
    # python -m code_t5.data
    Row("build of a folder that is no FLCC tree", "code_t5.data",
        _data_cli("build", "--flcc_dir={case.tmp}", "--data_dir={case.tmp}/tfds"),
        lambda c: f"code_t5.data build: error: {c.tmp}/repositories: missing (not an FLCC v3 "
                  "tree)", lambda c: [c.path("tfds", "flcc", "python", "*", "*.json")]),
    Row("build of an unknown language", "code_t5.data",
        _data_cli("build", "--flcc_dir={case.tree}", "--data_dir={case.tmp}/tfds",
                  "--language=klingon"),
        lambda c: "argument --language: unknown language 'klingon'; known: cpp (C++)",
        lambda c: [c.path("tfds", "flcc")], code=2),
    Row("build of a language the tree lacks", "code_t5.data",
        _data_cli("build", "--flcc_dir={case.tree}", "--data_dir={case.tmp}/tfds",
                  "--language=java"),
        lambda c: f"{c.tree}: no java files left to build from",
        lambda c: [c.path("tfds", "flcc", "java", "*", "*.json")]),
    Row("ratios that do not sum to 1", "code_t5.data",
        _data_cli("build", "--flcc_dir={case.tree}", "--data_dir={case.tmp}/tfds",
                  "--ratios=0.5,0.6"),
        lambda c: "argument --ratios: need train,validation,test ratios summing to 1, got "
                  "'0.5,0.6'", lambda c: [c.path("tfds", "flcc")], code=2),
    Row("a near-duplicate threshold out of range", "code_t5.data",
        _data_cli("build", "--flcc_dir={case.tree}", "--data_dir={case.tmp}/tfds",
                  "--near_duplicate_threshold=1.5"),
        lambda c: "argument --near_duplicate_threshold: need a Jaccard similarity in (0, 1], "
                  "got '1.5'", lambda c: [c.path("tfds", "flcc")], code=2),
    Row("a folder of repositories that is not there", "code_t5.data",
        _data_cli("build", "--repos_dir={case.tmp}/no_such", "--data_dir={case.tmp}/tfds"),
        lambda c: f"code_t5.data build: error: {c.tmp}/no_such: no such directory",
        lambda c: [c.path("tfds", "flcc"), c.path("tfds", "downloads", "*", "v3")]),
    Row("repositories on gs://", "code_t5.data",
        _data_cli("build", "--repos_dir=gs://bucket/repos", "--data_dir={case.tmp}/tfds"),
        lambda c: "gs://bucket/repos: repositories are read from local checkouts (git runs on "
                  "them); clone or copy them here first", lambda c: [c.path("tfds", "flcc")]),
    Row("vocab of a data dir not built", "code_t5.data",
        _data_cli("vocab", "--data_dir={case.tmp}"),
        lambda c: f"code_t5.data vocab: error: {c.tmp}/flcc/python: dataset not built; run "
                  f"`python -m code_t5.data build --data_dir={c.tmp} --language=python` first",
        lambda c: [c.path("flcc_vocab", "*", "spm.model")]),
    Row("a dev tree on gs://", "code_t5.data",
        _data_cli("dev", "--root=gs://bucket/dev"),
        lambda c: "gs://bucket/dev: the dev tree is written and read on local disk; give a local "
                  "--root"),
    # the run readers and the benchmarks
    Row("a summary of a model dir that is not there", "code_t5.summaries",
        _process("-m", "code_t5.summaries", "--model_dir={case.tmp}/no_such_run"),
        lambda c: f"code_t5.summaries: error: {c.path('no_such_run')}: no such directory"),
    Row("baselines of a run never evaluated", "code_t5.baselines",
        _process("-m", "code_t5.baselines", "--model_dir={case.model_dir}",
                 "--data_dir={case.data_dir}"),
        lambda c: f"code_t5.baselines: error: {c.model_dir}/validation_eval/"
                  "flcc_python_full_line_<step>_predictions: no full-line eval",
        trained=True),
    Row("the serving bench without the dev data", "scripts/bench_serving.py",
        _process("scripts/bench_serving.py", "--model_dir={case.model_dir}",
                 "--data_dir={case.tmp}/no_data", "--gin_file=models/tiny.gin"),
        lambda c: f"bench_serving: {c.tmp}/no_data/flcc/python: not built: run `python -m "
                  "code_t5.data dev`", trained=True),
    Row("a session export of the prefix LM", "code_t5.session_export",
        _process("-m", "code_t5.session_export", "--model_dir={case.tmp}/model",
                 "--t5_tfds_data_dir={case.data_dir}", "--export_dir={case.tmp}/session",
                 "--gin_file=models/shared-prefix_lm.gin", "--gin_param=" + TINY_MODEL[0],
                 "--gin_param=" + TASK),
        lambda c: "code_t5.session_export: error: the session serves the causal model "
                  "(models/causal.gin, which reads no delimiter); these gin files configure "
                  "the prefix LM", lambda c: [c.path("session", "*")]),
    Row("a session export of a model dir without checkpoints", "code_t5.session_export",
        _process("-m", "code_t5.session_export", "--model_dir={case.tmp}/empty",
                 "--t5_tfds_data_dir={case.data_dir}", "--export_dir={case.tmp}/session",
                 "--gin_file=models/causal_lm_dev.gin", "--gin_param=" + TINY_MODEL[0],
                 "--gin_param=" + TASK),
        lambda c: f"code_t5.session_export: error: no checkpoint in {c.tmp}/empty: train "
                  "there first", lambda c: [c.path("session", "*")]),
    Row("the learning bench on a model dir without checkpoints", "scripts/bench_learning.py",
        _process("scripts/bench_learning.py", "--eval_only", "--model_dir={case.tmp}/empty",
                 "--data_dir={case.data_dir}", "--gin_file=models/tiny.gin"),
        lambda c: f"bench_learning: no checkpoint in {c.tmp}/empty: train one there first"),
    Row("a slow-class stand-in given a CPU count that is not a number", "scripts/as_slow_class",
        _script("scripts/as_slow_class", "true", SLOW_CLASS_CPUS="two"),
        lambda c: "as_slow_class: SLOW_CLASS_CPUS=two is not a positive number of CPUs",
        code=2),
]


# How CONTRIBUTING.md's table writes a row's line: the case's folders by these names.
TABLE_CASE = Case(data_dir="DATA_DIR", tree="TREE", model_dir="MODEL_DIR", tmp="DIR")


def table_row(row) -> str:
  """A row of CONTRIBUTING.md's table "Bad input": | entry point | bad input | line (exit) |."""
  says = row.says(TABLE_CASE)
  ticks = "``" if "`" in says else "`"
  pad = " " if "`" in says else ""
  return f"| {row.entry} | {row.name} | {ticks}{pad}{says}{pad}{ticks} ({row.code}) |"


@pytest.fixture(scope="module")
def trained_model(flcc_data_dir, tmp_path_factory):
  model_dir = str(tmp_path_factory.mktemp("trained") / "model")
  proc = run_mesh_main(model_dir, flcc_data_dir, PREFIX_LM,
                       TINY_MODEL + [TASK, f"run.train_steps = {TRAINED_STEPS}"])
  assert proc.returncode == 0, proc.stderr[-3000:]
  return model_dir


def _check(row, case):
  code, stderr = row.run(case)
  expected = row.says(case)
  assert code == row.code, (code, stderr[-3000:])
  assert "Traceback (most recent call last)" not in stderr, stderr[-3000:]
  # Nothing before that line says the command ran oddly (`python -m code_t5.summaries` had
  # runpy's "found in sys.modules" warning first).
  assert "<frozen runpy>" not in stderr, stderr[-3000:]
  # "code_t5: error: ...", "python -m code_t5.data build: error: ...", "bench_serving: ...",
  # "make venv: ..."
  own = os.path.basename(row.entry).removesuffix(".py") + ":"
  lines = [line for line in stderr.splitlines()
           if expected in line and ("error: " in line or line.startswith(own))]
  assert len(lines) == 1, (expected, stderr[-3000:])
  left = [path for pattern in row.leaves(case) for path in glob.glob(pattern)]
  assert not left, left


def _params(trained):
  return [pytest.param(row, id=row.name) for row in ROWS if row.trained == trained]


@pytest.mark.slow
@pytest.mark.parametrize("row", _params(trained=False))
def test_bad_input_is_one_line_naming_it(row, flcc_tree, flcc_data_dir, tmp_path):
  _check(row, Case(flcc_data_dir, flcc_tree, str(tmp_path / "unused"), str(tmp_path)))


@pytest.mark.slow
@pytest.mark.xdist_group("bad_input_trained")
@pytest.mark.parametrize("row", _params(trained=True))
def test_bad_input_to_a_trained_model_is_one_line_naming_it(row, flcc_tree, flcc_data_dir,
                                                            trained_model, tmp_path):
  _check(row, Case(flcc_data_dir, flcc_tree, trained_model, str(tmp_path)))
