"""Every `sh` block of README.md, CONTRIBUTING.md and GENTLE_INTRO.md runs, in order: the docs
cannot rot.

The blocks run with bash in a scratch workspace that links the repository's .venv, Makefile,
lock and gin files, so what they write (data/, runs/, files they create) stays there. Where
a doc uses the real dataset or a full-length run, SUBSTITUTIONS says what runs instead, and
every substitution must still match its doc, so this table cannot rot either.

A block that runs a mode is also checked for what it wrote (CHECKS): these runs are the
end-to-end tests of eval, perplexity eval, export, finetuning and training from a seqio
cache, so `test_end_to_end.py` does not launch them a second time. GENTLE_INTRO's commands
run with the tiny model's gin file after the dev model's (seconds per run instead of
minutes); README's run as written. GENTLE_INTRO has a workspace of its own, README and then
CONTRIBUTING share one; each workspace's blocks run in order on one test worker, the two
workspaces side by side.
"""

import ast
import glob
import importlib.util
import json
import os
import re
import subprocess

import numpy as np
import pytest

from code_t5 import metrics as metrics_lib
from code_t5 import run_records
from code_t5 import summaries
from conftest import FIXTURE_RATIOS, REPO_ROOT, TINY_VOCAB_SIZE
from test_pages import read_page, section, table_rows

DOCS = ("README.md", "CONTRIBUTING.md", "GENTLE_INTRO.md")
# CONTRIBUTING's worked examples read README's dev dataset: they run after README's blocks, in
# its workspace, on its worker.
WORKSPACE_OF = {"CONTRIBUTING.md": "README.md"}
LINKED = (".venv", "Makefile", "pyproject.toml", "requirements", "gin_configs", "scripts",
          "_code_t5_mtf_shim.py", "code_t5_mtf_shim.pth")  # the Makefile lists them
RATIOS = "--ratios=" + ",".join(str(r) for r in FIXTURE_RATIOS)
TRAIN_STEPS = 6  # GENTLE_INTRO's 600 steps: two of the tiny model's checkpoints (every 3)
FINETUNE_STEPS = 5
EVAL_EXAMPLES = 10  # not a multiple of the tiny model's batch of 4: the last batch is padded
EVAL_LENGTHS = {"inputs": 96, "targets": 16}
DEV_FILES = 150  # of the stdlib's, for the dev tree: enough for every split, and quick

# (doc, what it says, what the test runs): fixture data for the real dataset, fewer steps.
SUBSTITUTIONS = [
    # Later blocks (the bench) reuse this dev tree, dataset and vocabulary.
    ("README.md", "make smoke   #",
     f"SMOKE_STEPS=3 SMOKE_EVAL_EXAMPLES=4 SMOKE_DEV_FILES={DEV_FILES} make smoke   #"),
    ("README.md", "run.train_steps = 1000", "run.train_steps = 1"),
    ("README.md", "make bench   #", "BENCH_PARTS=startup BENCH_STARTUP_MODEL=tiny make bench   #"),
    ("GENTLE_INTRO.md", "python -m code_t5.data dev\n",
     f"python -m code_t5.data dev --max_files={DEV_FILES}\n"),
    ("GENTLE_INTRO.md", "--gin_file=models/causal_lm_dev.gin",
     "--gin_file=models/causal_lm_dev.gin --gin_file=models/tiny.gin"),
    ("GENTLE_INTRO.md", "--gin_file=models/shared-prefix_lm_dev.gin",
     "--gin_file=models/shared-prefix_lm_dev.gin --gin_file=models/tiny.gin"),
    ("GENTLE_INTRO.md", "FLCC_DIR=/path/to/flcc", "FLCC_DIR={flcc_tree}"),
    ("GENTLE_INTRO.md", "FLCC_ARCHIVE=/path/to/flcc-v3.tar.gz", "FLCC_ARCHIVE={archive}"),
    # The archive build is the doc's other way to the dataset: the tree's build above made
    # data/flcc/tfds, and an archive's dataset is another (its sha is in the fingerprint).
    ("GENTLE_INTRO.md", '--archive="$FLCC_ARCHIVE" --data_dir=data/flcc/tfds --language=python\n',
     f'--archive="$FLCC_ARCHIVE" --data_dir=data/flcc_archive/tfds --language=python {RATIOS}\n'),
    ("GENTLE_INTRO.md", "--data_dir=data/flcc/tfds --language=python\n",
     f"--data_dir=data/flcc/tfds --language=python {RATIOS}\n"),
    ("GENTLE_INTRO.md", "--vocab_size=32000", f"--vocab_size={TINY_VOCAB_SIZE}"),
    ("GENTLE_INTRO.md", "dev --language=cpp\n", f"dev --language=cpp --max_files={DEV_FILES}\n"),
    ("GENTLE_INTRO.md", "--vocab_size=4096", f"--vocab_size={TINY_VOCAB_SIZE}"),
    ("GENTLE_INTRO.md", "run.train_steps = 600", f"run.train_steps = {TRAIN_STEPS}"),
    ("GENTLE_INTRO.md", "model.ckpt-600", f"model.ckpt-{TRAIN_STEPS}"),
    ("GENTLE_INTRO.md", "run.train_steps = 100", f"run.train_steps = {FINETUNE_STEPS}"),
    ("GENTLE_INTRO.md", "EVAL_EVERY = 200", "EVAL_EVERY = 3"),
    ("GENTLE_INTRO.md", "--gin_file=train_and_eval.gin",
     f"--gin_file=train_and_eval.gin --gin_param=\"EVAL_EXAMPLES = {EVAL_EXAMPLES}\""),
    # A decoding window past the training's (tiny.gin's 64 inputs), as the dev model's.
    ("GENTLE_INTRO.md", "--gin_file=eval_full_line.gin",
     "--gin_file=eval_full_line.gin "
     f"--gin_param=\"EVAL_EXAMPLES = {EVAL_EXAMPLES}\" "
     "--gin_param=\"DECODING_LENGTHS = {{'inputs': %d, 'targets': %d}}\"" % (
         EVAL_LENGTHS["inputs"], EVAL_LENGTHS["targets"])),  # braces doubled: str.format
]
# Blocks that CI runs with the tiny model, in a model dir of its own: README's base model
# (88M parameters; its first step alone took 43 s of a 2-core Zen 3, the block 110 s of CI's
# time). The soak tier (`make test-all`) also runs each as written, after its CI stand-in.
TINY_IN_CI = [
    ("README.md", "--model_dir=runs/base ", "--model_dir=runs/base_tiny "),
    ("README.md", "--gin_file=mesh/cpu.gin", "--gin_file=mesh/cpu.gin --gin_file=models/tiny.gin"),
]
# Lines not run, and why.
NOT_RUN = {
    "make test": "CI runs it (.ci/run); run from here, the test suite would run itself",
    "make editor": "CI makes .venv-editor before the tests (.ci/run); run here, it would install "
                   "from PyPI, and tests reach no network",
}


def _blocks(doc):
  with open(os.path.join(REPO_ROOT, doc), encoding="utf-8") as f:
    text = f.read()
  return re.findall(r"^```sh\n(.*?)^```$", text, flags=re.S | re.M)


def _runnable(doc, block, values, as_written=False):
  """The block as the test runs it: SUBSTITUTIONS made, NOT_RUN lines out, and TINY_IN_CI's
  stand-in unless `as_written`."""
  for where, old, new in SUBSTITUTIONS + ([] if as_written else TINY_IN_CI):
    if where == doc:
      block = block.replace(old, new.format(**values))
  lines = [line for line in block.splitlines()
           if not any(line.startswith(skipped) for skipped in NOT_RUN)]
  return "\n".join(lines) + "\n"


BLOCKS = [(doc, i) for doc in DOCS for i in range(len(_blocks(doc)))]


def _stand_ins_found(doc, block):
  """For each of the doc's TINY_IN_CI stand-ins, whether `block` says what it replaces."""
  return [old in block for where, old, _ in TINY_IN_CI if where == doc]


def test_every_substitution_and_skip_still_matches_its_doc():
  for doc, old, _ in SUBSTITUTIONS + TINY_IN_CI:
    assert any(old in block for block in _blocks(doc)), f"{doc} no longer says {old!r}"
  # Each stand-in changes its block whole: a block with only some of them would run the
  # model as written in a model dir of the tiny one's, or the reverse.
  for doc, i in BLOCKS:
    block = _blocks(doc)[i]
    found = _stand_ins_found(doc, block)
    assert all(found) or not any(found), (doc, i, found)
  for line in NOT_RUN:
    assert any(line in block for doc in DOCS for block in _blocks(doc)), line
  with open(os.path.join(REPO_ROOT, ".ci", "run")) as f:
    assert "\nmake test\n" in f.read()  # the line skipped above is what CI runs


# --- what the blocks wrote ---------------------------------------------------------------

# `path/to/file.py: name` (or `Class.method`, or `name(args)`): a place the docs send a reader.
NAMED_PLACE = re.compile(r"`([\w/.]+\.py): ([A-Za-z_][\w.]*)")


def _source_file(path):
  """A doc's path: in this repository, else in the package of that name Python imports."""
  if os.path.exists(os.path.join(REPO_ROOT, path)):
    return os.path.join(REPO_ROOT, path)
  package = importlib.util.find_spec(path.split("/")[0])
  assert package and package.submodule_search_locations, f"{path}: no such package"
  return os.path.join(os.path.dirname(list(package.submodule_search_locations)[0]), path)


@pytest.mark.parametrize("doc", DOCS + ("docs/REFERENCE.md",))
def test_every_function_the_docs_name_exists_where_they_say(doc):
  with open(os.path.join(REPO_ROOT, doc)) as f:
    places = set(NAMED_PLACE.findall(f.read()))
  assert places or doc == "README.md", f"{doc} names no `file.py: function`: the pattern broke"
  missing = []
  for path, name in sorted(places):
    source = _source_file(path)
    if not os.path.exists(source):
      missing.append(f"{path} (no such file)")
      continue
    with open(source) as f:
      tree = ast.parse(f.read())
    scope = tree.body
    for part in name.split("."):
      found = [node for node in scope if isinstance(
          node, (ast.FunctionDef, ast.ClassDef)) and node.name == part]
      if not found:
        missing.append(f"{path}: {name}")
        break
      scope = found[0].body
  assert not missing, f"{doc} names what does not exist: {missing}"


def _layers():
  """CONTRIBUTING.md's layer table: module (as `code_t5/<path>`) -> layer."""
  rows = re.findall(r"^\| (\d) \| (.+) \|$", section(read_page("CONTRIBUTING.md"), "Layers"),
                    flags=re.M)
  return {f"code_t5/{name}.py": int(layer)
          for layer, names in rows for name in re.findall(r"`([\w/]+)`", names)}


def test_the_bad_input_table_is_the_tests_rows():
  """CONTRIBUTING.md's "Bad input" table lists tests/test_bad_input.py's rows, in order, each
  with the line its test expects."""
  import test_bad_input  # pylint: disable=g-import-not-at-top
  table = table_rows(section(read_page("CONTRIBUTING.md"), "Bad input"))
  assert table == [test_bad_input.table_row(row) for row in test_bad_input.ROWS]
  assert len(table) >= 25


def test_every_module_imports_only_from_lower_layers():
  layers = _layers()
  modules = sorted(glob.glob(os.path.join(REPO_ROOT, "code_t5", "**", "*.py"), recursive=True))
  names = {os.path.relpath(m, REPO_ROOT) for m in modules} - {"code_t5/data/__init__.py"}
  assert set(layers) == names, ("modules missing from the table, or no longer there",
                                names ^ set(layers))
  upward = []
  for path in sorted(names):
    with open(os.path.join(REPO_ROOT, path)) as f:
      tree = ast.parse(f.read())
    for node in ast.walk(tree):
      if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("code_t5"):
        for alias in node.names:
          imported = f"{node.module.replace('.', '/')}/{alias.name}.py"
          if imported not in layers:  # a package: its __init__
            imported = imported[:-len(".py")] + "/__init__.py"
          if imported in layers and layers[imported] >= layers[path]:
            upward.append(f"{path} (layer {layers[path]}) imports {imported} "
                          f"(layer {layers[imported]})")
  assert not upward, upward


def _lines(path):
  with open(path, encoding="utf-8") as f:
    text = f.read()
  assert text.endswith("\n"), path
  return text[:-1].split("\n")


def check_training(ws, proc):
  del proc
  model_dir = os.path.join(ws, "runs", "dev")
  assert os.path.exists(os.path.join(model_dir, f"model.ckpt-{TRAIN_STEPS}.index"))
  with open(os.path.join(model_dir, "operative_config.gin")) as f:
    config = f.read()
  # The dev model is the causal LM (models/causal_lm_dev.gin) on flcc_python_causal.
  assert "inputs_delimiter.eos = False" in config
  assert "Unitransformer.input_full_attention = False" in config
  assert "MIXTURE_NAME = 'flcc_python_causal'" in config
  # Nothing before the first step (code_t5.startup_writes): no graph, no checkpoint 0.
  assert not os.path.exists(os.path.join(model_dir, "graph.pbtxt"))
  assert not glob.glob(os.path.join(model_dir, "model.ckpt-0.*"))
  assert not glob.glob(os.path.join(model_dir, "*.meta"))


def check_eval(ws, proc):
  model_dir = os.path.join(ws, "runs", "dev")
  [predictions] = glob.glob(os.path.join(model_dir, "validation_eval",
                                         f"*_{TRAIN_STEPS}_predictions"))
  assert len(_lines(predictions)) == EVAL_EXAMPLES  # the padding rows were dropped
  # ... and not counted as decoded (12 rows were: 3 batches of the tiny model's 4).
  decoded = re.findall(r"^code_t5: decoded (\d+) examples in ", proc.stderr, re.M)
  assert decoded == [str(EVAL_EXAMPLES)], proc.stderr[-2000:]
  metrics = summaries.summarize(model_dir)["eval"]
  assert set(metrics) == {f"flcc_python_full_line/{m}" for m in metrics_lib.FULL_LINE_METRIC_NAMES}
  for m in metrics.values():
    assert m["step"] == TRAIN_STEPS and 0.0 <= m["value"] <= 100.0
  assert "flcc_python_full_line/edit_similarity" in proc.stdout  # the summaries table
  assert os.path.getsize(os.path.join(model_dir, "summary.png")) > 1000  # --plot
  # code_t5.baselines: the model's row is the eval's own numbers; both baselines scored.
  rows = {line.split()[0]: [float(x) for x in line.split()[1:]]
          for line in proc.stdout.splitlines()
          if line.split() and line.split()[0] in ("model", "4-gram", "copy-line", "copy-window")}
  assert set(rows) == {"model", "4-gram", "copy-line", "copy-window"}, proc.stdout
  names = metrics_lib.FULL_LINE_METRIC_NAMES
  assert rows["model"] == [pytest.approx(metrics[f"flcc_python_full_line/{n}"]["value"], abs=0.01)
                           for n in names]
  assert f"{EVAL_EXAMPLES} validation examples of flcc_python_full_line" in proc.stdout
  # The eval recorded the window it read, and copy-window read that one, not the training's.
  assert run_records.eval_lengths(model_dir) == EVAL_LENGTHS
  # And where its window could start (tiny.gin's stride, 1), beside them.
  with open(os.path.join(run_records.eval_dir(model_dir), run_records.EVAL_WINDOW_STRIDE)) as f:
    assert json.load(f) == 1
  assert f"copy-window reads the model's {EVAL_LENGTHS['inputs']}-token window" in proc.stdout


def check_train_and_eval(ws, proc):
  """Evals at every EVAL_EVERY steps, the best of them copied to best/, the summaries' line."""
  model_dir = os.path.join(ws, "runs", "dev_eval")
  record = run_records.train_eval_record(model_dir)
  assert [e["step"] for e in record["evals"]] == [3, TRAIN_STEPS], record
  best = record["best"]
  assert best["value"] == max(e["value"] for e in record["evals"])
  assert os.path.exists(os.path.join(model_dir, "best", f"model.ckpt-{best['step']}.index"))
  assert (f"best   edit_similarity {best['value']:.3f} at step {best['step']}: "
          f"{model_dir.replace(ws + os.sep, '')}/best") in proc.stdout, proc.stdout


def check_perplexity(ws, proc):
  del proc
  for task in ("flcc_python_full_line", "flcc_python_lm"):
    [eval_dir] = glob.glob(os.path.join(ws, "runs", "dev", f"eval_{task}_validation_*"))
    scalars = run_records.read_scalars(eval_dir)
    # Without utils.run.eval_checkpoint_step every kept checkpoint is evaluated (the tiny
    # model keeps one every 3 steps); the latest is the run's.
    step, _, nlp = max(scalars["neg_log_perplexity"])
    assert step == TRAIN_STEPS and -20 < nlp < 0
    assert all(tokens > 0 for _, _, tokens in scalars["num_eval_tokens"])


def _completions(ws, name):
  lines = _lines(os.path.join(ws, "runs", "dev", f"{name}-{TRAIN_STEPS}"))
  assert len(lines) == 2  # one per prefix of prefixes.jsonl
  return lines


def _check_decoded(ws, proc, name):
  """The block's `cat` printed the completions file, written whole (no .incomplete left),
  after a progress line that counted the two prefixes decoded (not the batch's padding)."""
  completions = _completions(ws, name)
  assert proc.stdout.endswith("".join(c + "\n" for c in completions)), proc.stdout[-500:]
  assert not glob.glob(os.path.join(ws, "runs", "dev", f"{name}-*.incomplete"))
  decoded = re.findall(r"^code_t5: decoded (\d+) examples in ", proc.stderr, re.M)
  assert decoded == ["2"], proc.stderr[-2000:]


def check_infer(ws, proc):
  _check_decoded(ws, proc, "completions")


def check_beam(ws, proc):
  """The line search's JSON per prefix: at most TOP_K = 3 lines, each once, none under
  MIN_SCORE, none with a line end in it; greedy's (the infer block's line) first, or not
  there: the tiny model's greedy line can repeat a word to the targets' length and score under
  MIN_SCORE (-44 and -68 in one CI run, where the search's own lines scored -12 to -26)."""
  _check_decoded(ws, proc, "beam_completions")
  greedy = _completions(ws, "completions")
  for line, greedy_line in zip(_completions(ws, "beam_completions"), greedy):
    found = json.loads(line)
    completions, scores = found["completions"], found["scores"]
    assert len(completions) == len(scores) <= 3, found
    assert greedy_line not in completions[1:], (found, greedy_line)
    assert len(set(completions)) == len(completions) and all(s >= -20.0 for s in scores), found
    assert not any("\n" in c for c in completions), found


def check_score(ws, proc):
  del proc
  scores = [float(x) for x in _lines(os.path.join(ws, "runs", "dev", f"scores-{TRAIN_STEPS}"))]
  assert len(scores) == 2 and all(-1000 < x < 0 for x in scores) and scores[0] != scores[1]


def check_export(ws, proc):
  """The SavedModel completes the Stack prefix as infer mode did (prefixes.jsonl, line 2)."""
  printed = proc.stdout.strip().splitlines()[-1]
  prefix_tail, completion = (ast.literal_eval(x) for x in printed.split(" -> "))
  assert prefix_tail == "self):\n        self."  # the doc prints the last 20 characters
  assert completion == _completions(ws, "completions")[1]


def check_session(ws, proc):
  """The session export is whole, and the editor's loop printed a line per keystroke, the
  first having read the prefix."""
  export = os.path.join(ws, "runs", "dev", "session")
  assert {"session.json", "model.onnx", "model.int8.onnx", "spm.model"} <= set(os.listdir(export))
  printed = proc.stdout.strip().splitlines()[-len(SESSION_KEYS):]
  assert len(printed) == len(SESSION_KEYS), proc.stdout[-2000:]
  assert all(line.endswith(" tokens of the prefix read") for line in printed), printed
  assert int(printed[0].rsplit(", ", 1)[1].split()[0]) > 0


SESSION_KEYS = "class Stack:\n    def push(self, item):\n        self."


def check_finetune(ws, proc):
  del proc
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  pretrained = os.path.join(ws, "runs", "dev", f"model.ckpt-{TRAIN_STEPS}")
  finetuned = os.path.join(ws, "runs", "dev_finetuned", f"model.ckpt-{FINETUNE_STEPS}")
  assert tf.train.load_variable(finetuned, "global_step") == FINETUNE_STEPS  # counted from 0
  before = tf.train.load_variable(pretrained, "transformer/embedding")
  after = tf.train.load_variable(finetuned, "transformer/embedding")
  assert 0 < np.linalg.norm(after - before) < 0.2 * np.linalg.norm(before)  # loaded, then moved


def check_cache(ws, proc):
  task_cache = os.path.join(ws, "data", "dev", "cache", "flcc_python_full_line")
  assert os.path.exists(os.path.join(task_cache, "COMPLETED"))
  assert glob.glob(os.path.join(task_cache, "train.tfrecord-*"))
  # The block passes the cache dir as a relative path, and seqio logs it as given.
  assert ("'flcc_python_full_line' is cached at data/dev/cache/flcc_python_full_line"
          in proc.stderr)
  assert os.path.exists(os.path.join(ws, "runs", "dev_cached",
                                     f"model.ckpt-{TRAIN_STEPS}.index"))


def _multilingual_operative_config(ws):
  with open(os.path.join(ws, "runs", "multilingual", "operative_config.gin")) as f:
    return f.read()


def check_multilingual(ws, proc):
  """GENTLE_INTRO: trained on both dev languages, then each one's full-line metrics."""
  model_dir = os.path.join(ws, "runs", "multilingual")
  assert os.path.exists(os.path.join(model_dir, f"model.ckpt-{TRAIN_STEPS}.index"))
  assert "multilingual_mixture" in _multilingual_operative_config(ws)
  metrics = summaries.summarize(model_dir)["eval"]
  assert set(metrics) == {f"flcc_{language}_full_line_shared/{m}"
                          for language in ("python", "cpp")
                          for m in metrics_lib.FULL_LINE_METRIC_NAMES}
  for m in metrics.values():
    assert m["step"] == TRAIN_STEPS and 0.0 <= m["value"] <= 100.0
  for language in ("python", "cpp"):  # the summaries table, one row per language
    assert f"flcc_{language}_full_line_shared/edit_similarity" in proc.stdout
  assert "characters per token on validation; its own vocabulary" in proc.stdout
  with open(os.path.join(ws, "data", "dev", "tfds", "flcc_vocab", "shared",
                         "sampling.json")) as f:
    assert sorted(json.load(f)["languages"]) == ["cpp", "python"]


# (doc, text that picks its one block, check of what that block wrote)
CHECKS = [
    ("GENTLE_INTRO.md", "--model_dir=runs/dev \\\n", check_training),
    ("GENTLE_INTRO.md", "--gin_file=eval_full_line.gin \\\n  --gin_param=\"MIXTURE_NAME = 'flcc_python_full_line'\"",
     check_eval),
    ("GENTLE_INTRO.md", "--gin_file=train_and_eval.gin", check_train_and_eval),
    ("GENTLE_INTRO.md", "--gin_file=perplexity_eval.gin", check_perplexity),
    ("GENTLE_INTRO.md", "OUTPUT_FILE = 'runs/dev/completions'", check_infer),
    ("GENTLE_INTRO.md", "--gin_file=beam_search.gin", check_beam),
    ("GENTLE_INTRO.md", "--gin_file=score.gin", check_score),
    ("GENTLE_INTRO.md", "--gin_file=export.gin", check_export),
    ("GENTLE_INTRO.md", "--gin_file=finetune.gin", check_finetune),
    ("GENTLE_INTRO.md", "python -m code_t5.session_export", check_session),
    ("GENTLE_INTRO.md", "cache_tasks_main", check_cache),
    ("GENTLE_INTRO.md", "--model_dir=runs/multilingual", check_multilingual),
]


def _checks_of(doc, block):
  return [check for where, marker, check in CHECKS if where == doc and marker in block]


def test_every_check_picks_exactly_one_block():
  for doc, marker, check in CHECKS:
    assert sum(marker in block for block in _blocks(doc)) == 1, (doc, check.__name__)


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory, flcc_tree, fixture_archive):
  """One scratch workspace per doc, made when its first block runs."""
  made = {}

  def workspace(doc):
    doc = WORKSPACE_OF.get(doc, doc)
    if doc not in made:
      root = tmp_path_factory.mktemp("docs_" + doc.split(".")[0].lower())
      for name in LINKED:
        os.symlink(os.path.join(REPO_ROOT, name), root / name)
      made[doc] = {"dir": str(root), "flcc_tree": flcc_tree, "archive": fixture_archive}
    return made[doc]
  return workspace


@pytest.mark.slow
@pytest.mark.parametrize("doc,index,as_written", [
    # A doc's blocks build on each other: one worker runs them, in order.
    pytest.param(doc, index, as_written,
                 id=f"{doc}-{index}" + ("-as written" if as_written else ""),
                 marks=[pytest.mark.xdist_group(f"docs:{WORKSPACE_OF.get(doc, doc)}")]
                 + ([pytest.mark.soak] if as_written else []))
    for doc, index in BLOCKS
    for as_written in ([False, True] if any(_stand_ins_found(doc, _blocks(doc)[index]))
                       else [False])])
def test_doc_block_runs(workspaces, doc, index, as_written):
  workspace = workspaces(doc)
  block = _blocks(doc)[index]
  script = _runnable(doc, block, workspace, as_written)
  proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=workspace["dir"],
                        capture_output=True, text=True,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
  assert proc.returncode == 0, (
      f"{doc} block {index} failed:\n{script}\n--- stdout\n{proc.stdout[-2000:]}"
      f"\n--- stderr\n{proc.stderr[-4000:]}")
  for check in _checks_of(doc, block):
    check(workspace["dir"], proc)
