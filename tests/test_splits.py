"""Splits that hold at any corpus size, and a missing split named at every entry point.

Trees are made by real git (`flcc_git.py`), with repositories of uneven sizes. The launch of
mesh_transformer_main on a missing split is test_reliability's
test_eval_on_an_empty_split_is_one_line.
"""

import collections
import json
import os
import re
import subprocess

import pytest

from code_t5.data import builder
from code_t5.data import flcc

from conftest import PYTHON, QUIET_TF, REPO_ROOT, TINY_MODEL, TINY_VOCAB_SIZE, run_data_cli
from flcc_git import write_git_repository

# Files per repository: a few large repositories and a tail of small ones, as real trees have.
SIZES = {
    3: [25, 3, 2],
    5: [21, 12, 4, 2, 1],
    11: [36, 22, 14, 9, 6, 4, 3, 2, 2, 1, 1],
    50: [1 + (7 * i) % 23 for i in range(50)],
}
RATIOS = (0.8, 0.1, 0.1)


def write_tree(root, sizes, language="python", tag=""):
  """An FLCC tree of len(sizes) repositories made by git, repository i with sizes[i] files."""
  v3 = os.path.join(root, "v3")
  ext = flcc.LANGUAGES[language][1][0]
  for i, size in enumerate(sizes):
    files = {f"pkg/m{j}{ext}": f"// {tag} repository {i} file {j}\nx_{i}_{j} = {i * j}\n".encode()
             for j in range(size)}
    write_git_repository(v3, f"author{i % 7}", f"{tag}repo{i}", [files],
                         os.path.join(root, "work", str(i)), language=language)
  return root


def shares(plan):
  total = sum(len(files) for files in plan.files.values())
  return {split: len(plan.files[split]) / total for split in flcc.SPLITS}


@pytest.mark.parametrize("num_repos", sorted(SIZES))
def test_small_trees_fill_every_split_near_its_ratio(tmp_path, num_repos):
  tree = write_tree(str(tmp_path), SIZES[num_repos])
  plan = flcc.plan_build(tree, "python", RATIOS)
  assert plan.split_method == flcc.BALANCED
  repos = {s: {f.repository for f, _ in plan.files[s]} for s in flcc.SPLITS}
  assert all(repos.values()), repos
  assert sum(map(len, repos.values())) == len(set().union(*repos.values())) == num_repos
  for split, ratio in zip(flcc.SPLITS, RATIOS):
    assert abs(shares(plan)[split] - ratio) <= ratio / 2, (split, shares(plan))
  assert plan.report()["warnings"] == []
  again = flcc.plan_build(tree, "python", RATIOS)
  assert again.split_of_repository == plan.split_of_repository


def test_large_trees_keep_the_hash_split(tmp_path, monkeypatch):
  """Where every split expects enough repositories, a repository's split is its hash split,
  as before: the threshold is lowered so that a tree of 50 counts as large."""
  tree = write_tree(str(tmp_path), SIZES[50])
  monkeypatch.setattr(flcc, "HASH_SPLITS_FROM_REPOSITORIES", 5)
  plan = flcc.plan_build(tree, "python", RATIOS)
  assert plan.split_method == flcc.HASH
  assert plan.split_of_repository == {
      name: flcc.split_for_repository(name, RATIOS) for name in plan.split_of_repository}
  monkeypatch.undo()
  assert flcc.plan_build(tree, "python", RATIOS).split_of_repository != plan.split_of_repository


def test_two_repositories_for_three_splits_warn_in_one_line(tmp_path):
  tree = write_tree(str(tmp_path / "tree"), [6, 2])
  proc = run_data_cli("build", f"--flcc_dir={tree}", f"--data_dir={tmp_path / 'tfds'}")
  # (TFDS' progress bars end in a carriage return, not a new line)
  assert re.findall(r"code_t5\.data build: warning: .*", proc.stderr) == [
      "code_t5.data build: warning: test split is empty (ratio 0.05; 2 repositories with kept "
      "files in all): add repositories, or leave it out with --ratios=0.9474,0.0526,0"
  ], proc.stderr
  report = json.loads(open(builder.report_path(str(tmp_path / "tfds"), "python")).read())
  assert [report["splits"][s]["repositories"] for s in flcc.SPLITS] == [1, 1, 0]


def test_every_empty_splits_line_gives_the_ratios_that_leave_out_all_of_them():
  """One repository fills train alone: the ratios given leave out validation and test both
  (each split's own fix alone was followed by the other's warning)."""
  counts = {"train": {"files": 9, "repositories": 1},
            "validation": {"files": 0, "repositories": 0}, "test": {"files": 0, "repositories": 0}}
  assert flcc.split_warnings(counts, (0.9, 0.05, 0.05)) == [
      f"{split} split is empty (ratio 0.05; 1 repository with kept files in all): add "
      "repositories, or leave them (validation, test) out with --ratios=1,0,0"
      for split in ("validation", "test")]
  counts["validation"] = {"files": 3, "repositories": 1}
  assert flcc.split_warnings(counts, (0.8, 0.1, 0.1)) == [
      "test split is empty (ratio 0.1; 2 repositories with kept files in all): add "
      "repositories, or leave it out with --ratios=0.8889,0.1111,0"]


def test_a_dataset_split_before_balancing_is_reused_when_large_and_refused_when_small(tmp_path):
  """Datasets built before splits were balanced recorded no split method: all were hash splits."""
  tree = write_tree(str(tmp_path / "tree"), SIZES[5])
  data_dir = str(tmp_path / "tfds")
  build = ("build", f"--flcc_dir={tree}", f"--data_dir={data_dir}", "--ratios=0.8,0.1,0.1")
  run_data_cli(*build)
  path = builder.report_path(data_dir, "python")
  report = json.loads(open(path).read())
  del report["fingerprint"]["split_method"]
  with open(path, "w") as f:
    json.dump(report, f)
  proc = run_data_cli(*build, check=False)
  assert proc.returncode == 1
  assert "split_method 'hash', now 'balanced'); --overwrite replaces it" in proc.stderr
  report["fingerprint"]["split_method"] = flcc.BALANCED  # as this code_t5 records it
  with open(path, "w") as f:
    json.dump(report, f)
  version_dir = os.path.dirname(path)
  written = {name: os.stat(os.path.join(version_dir, name)).st_mtime_ns
             for name in os.listdir(version_dir)}
  run_data_cli(*build)  # accepted now (check=True), and reused: nothing written again
  assert {name: os.stat(os.path.join(version_dir, name)).st_mtime_ns
          for name in os.listdir(version_dir)} == written


# --- a missing split at each entry point --------------------------------------------------

@pytest.fixture(scope="module")
def split_data(tmp_path_factory):
  """One data dir: python with every split, java with train only (--ratios=1,0,0), javascript
  with no train (--ratios=0,0.5,0.5); one vocabulary shared by python and java."""
  root = tmp_path_factory.mktemp("split_data")
  data_dir = str(root / "tfds")
  for language, sizes, ratios in (("python", SIZES[5], "0.8,0.1,0.1"),
                                  ("java", [4, 3, 2], "1,0,0"),
                                  ("javascript", [3, 2], "0,0.5,0.5")):
    tree = write_tree(str(root / language), sizes, language, tag=language)
    run_data_cli("build", f"--flcc_dir={tree}", f"--data_dir={data_dir}",
                 f"--language={language}", f"--ratios={ratios}")
  vocab = run_data_cli("vocab", f"--data_dir={data_dir}", "--languages=python,java",
                       f"--vocab_size={TINY_VOCAB_SIZE}")
  return data_dir, vocab.stdout


JAVA_NO_VALIDATION = ("flcc/java in {} has no validation split: it was built with "
                      "--ratios=1,0,0; rebuild it: python -m code_t5.data build "
                      "--flcc_dir=<the tree> --data_dir={} --language=java "
                      "--ratios=0.95,0.05,0 --overwrite")


@pytest.fixture
def data_dir_override(split_data):
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import tasks  # pylint: disable=g-import-not-at-top,unused-import
  seqio.set_tfds_data_dir_override(split_data[0])
  yield split_data[0]
  seqio.set_tfds_data_dir_override(None)


def test_the_shared_vocabulary_report_says_which_build_fills_the_split(split_data):
  data_dir, vocab_stdout = split_data
  [java] = [line for line in vocab_stdout.splitlines() if line.strip().startswith("java")]
  assert f"no validation split to measure on ({JAVA_NO_VALIDATION.format(data_dir, data_dir)})" in java
  [python] = [line for line in vocab_stdout.splitlines() if line.strip().startswith("python")]
  assert "characters per token on validation" in python


def test_training_and_eval_stop_in_one_line_when_no_task_has_the_split(data_dir_override):
  from code_t5 import tasks  # pylint: disable=g-import-not-at-top
  lengths = {"inputs": 32, "targets": 32}
  with pytest.raises(flcc.MissingSplitError) as error:
    tasks.eval_dataset_fn("flcc_java_full_line_shared", lengths, "validation")
  # (gin adds "In call to configurable ..." on a line of its own; one_line() keeps the first)
  assert str(error.value).splitlines()[0] == JAVA_NO_VALIDATION.format(data_dir_override,
                                                                       data_dir_override)
  with pytest.raises(flcc.MissingSplitError, match=r"flcc/javascript in .* has no train split: "
                     r"it was built with --ratios=0,0.5,0.5; .* --ratios=0.05,0.475,0.475 "):
    tasks.train_dataset_fn("flcc_javascript", lengths, None)
  with pytest.raises(flcc.MissingSplitError, match="flcc/java .* no test split"):
    tasks.FlccSource("java").get_dataset("test")


def test_a_multilingual_eval_evaluates_the_languages_with_the_split_and_names_the_others(
    data_dir_override, capsys):
  from code_t5 import tasks  # pylint: disable=g-import-not-at-top
  name = tasks.multilingual_mixture(languages=["python", "java"])
  datasets = tasks.eval_dataset_fn(name, {"inputs": 32, "targets": 32}, "validation")
  assert sorted(d.name for d in datasets) == ["flcc_python_full_line_shared",
                                              "flcc_python_prefix_lm_shared"]
  lines = capsys.readouterr().err.splitlines()
  reason = JAVA_NO_VALIDATION.format(data_dir_override, data_dir_override)
  assert sorted(lines) == [f"code_t5: flcc_multilingual: flcc_java_{objective}_shared left out "
                           f"of validation: {reason}" for objective in ("full_line", "prefix_lm")]
  assert len(tasks.eval_dataset_fn(name, {"inputs": 32, "targets": 32}, "train")) == 4


def test_perplexity_eval_reads_the_data_through_the_split_check():
  """code_t5's perplexity_eval.gin shadows t5's, whose eval_dataset_fn skips silently."""
  import gin  # pylint: disable=g-import-not-at-top
  from code_t5 import tasks  # pylint: disable=g-import-not-at-top
  gin.clear_config()
  try:
    gin.parse_config_files_and_bindings(
        ["models/shared-prefix_lm_dev.gin", "perplexity_eval.gin"],
        TINY_MODEL + ["MIXTURE_NAME = 'flcc_python'"], skip_unknown=True)
    assert gin.query_parameter("utils.run.mode") == "perplexity_eval"
    assert gin.query_parameter("utils.run.eval_dataset_fn").scoped_configurable_fn.__wrapped__ \
        is tasks.eval_dataset_fn.__wrapped__
  finally:
    gin.clear_config()


def test_baselines_and_summaries_name_the_missing_split(split_data, tmp_path, capsys):
  from code_t5 import baselines, summaries  # pylint: disable=g-import-not-at-top
  data_dir = split_data[0]
  (tmp_path / "test_eval").mkdir()
  assert baselines.main([f"--model_dir={tmp_path}", f"--data_dir={data_dir}",
                         "--task=flcc_java_full_line_shared"]) == 1
  assert capsys.readouterr().err == (
      f"code_t5.baselines: error: {JAVA_NO_VALIDATION.format(data_dir, data_dir)}\n")
  assert summaries.main([f"--model_dir={tmp_path}"]) == 0
  assert capsys.readouterr().out.strip() == (
      f"eval   no metrics in {tmp_path}/validation_eval: no full-line eval on validation has "
      f"run; evals on test have (--split=...)")


def test_split_shares_script_prints_before_and_after(tmp_path):
  """scripts/split_shares.py: the numbers the note on splits gives, for any tree."""
  tree = write_tree(str(tmp_path), SIZES[11])
  proc = subprocess.run([PYTHON, "scripts/split_shares.py", f"--flcc_dir={tree}",
                         "--ratios=0.8,0.1,0.1"], cwd=REPO_ROOT, capture_output=True, text=True,
                        env=QUIET_TF, check=True)
  rows = {tuple(line.split()[:2]): line.split()[2:] for line in proc.stdout.splitlines()[2:]}
  after = collections.Counter()
  for split in flcc.SPLITS:
    files, repos = int(rows[("balanced", split)][0]), int(rows[("balanced", split)][2])
    assert files and repos, proc.stdout
    after["files"] += files
    after["repos"] += repos
  assert after == {"files": sum(SIZES[11]), "repos": 11}
