"""FLCC tree -> plan -> TFDS dataset -> vocabulary, on the fixture tree."""

import json
import os
import shutil

import pytest
import tensorflow_datasets as tfds

from code_t5.data import builder
from code_t5.data import flcc
from code_t5.data import tree_writer
from code_t5.data import vocab as vocab_lib

from conftest import (FILES_PER_REPO, FIXTURE_RATIOS, ORDINARY_REPOS, PLANTED,
                      fixture_repositories, run_data_cli)

KEPT = len(ORDINARY_REPOS) * FILES_PER_REPO  # every ordinary file; each planted one is skipped
PLANTED_TOTAL = sum(len(files) for files in PLANTED.values())


def test_plan_counts_every_skip_reason_exactly(flcc_tree):
  plan = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS)
  report = plan.report()
  assert report["repos_processed"] == len(ORDINARY_REPOS) + 1
  assert report["files_processed"] == KEPT + PLANTED_TOTAL
  for reason, files in PLANTED.items():
    assert report[f"files_skipped: {reason}"] == len(files), reason
  assert report["files_skipped: missing"] == 0
  assert sum(s["files"] for s in report["splits"].values()) == KEPT


def test_every_split_has_repositories_and_none_crosses(flcc_tree):
  plan = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS)
  repos_by_split = {s: {f.repository for f, _ in plan.files[s]} for s in flcc.SPLITS}
  assert all(repos_by_split.values()), repos_by_split
  for a in flcc.SPLITS:
    for b in flcc.SPLITS:
      if a < b:
        assert not repos_by_split[a] & repos_by_split[b]


def test_plan_is_deterministic_and_keeps_real_paths(flcc_tree):
  first = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS)
  second = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS)
  assert first.files == second.files
  paths = {f.path for files in first.files.values() for f, _ in files}
  assert "src/module_0.py" in paths  # from paths.json, not the stored `<name>_<time>.py`


def test_holdout_prefixes_is_the_old_dev_set_recipe(flcc_tree):
  plan = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS, holdout_prefixes="ab")
  held_out = {r for r, s in plan.split_of_repository.items() if s != "train"}
  assert held_out == {"alice/alpha", "bob/beta"}


def test_lines_long_threshold_is_a_flag(flcc_tree):
  report = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS,
                           filters=flcc.Filters(max_line_length=5000)).report()
  assert report["files_skipped: lines long"] == 0


def test_listed_but_absent_file_is_counted_missing(tmp_path):
  tree_writer.write_flcc_tree(str(tmp_path), {"a/b": {"x.py": b"x = 1\n", "y.py": b"y = 2\n"}})
  stored = next(p for p in tmp_path.rglob("y_*.py"))
  stored.unlink()
  report = flcc.plan_build(str(tmp_path), "python", (1.0, 0.0, 0.0)).report()
  assert report["files_skipped: missing"] == 1
  assert report["splits"]["train"]["files"] == 1


def test_cli_names_missing_and_unreadable_files_and_counts_them(tmp_path):
  tree_writer.write_flcc_tree(str(tmp_path), {"a/b": {"x.py": b"x = 1\n", "y.py": b"y = 2\n",
                                                      "z.py": b"z = 3\n"}})
  missing = next(tmp_path.rglob("y_*.py"))
  missing.unlink()
  unreadable = next(tmp_path.rglob("z_*.py"))
  unreadable.unlink()
  unreadable.mkdir()  # root reads any file; a directory cannot be read as one
  proc = run_data_cli("build", f"--flcc_dir={tmp_path}", f"--data_dir={tmp_path}/tfds",
                      "--ratios=1,0,0")
  warnings = [l for l in proc.stderr.splitlines() if ": WARNING: " in l]
  assert len(warnings) == 2, proc.stderr
  assert f"lists {missing.name}, which is not in {missing.parent}" in warnings[0]
  assert f"{unreadable}: unreadable" in warnings[1]
  assert "files_skipped: missing     1" in proc.stdout
  assert "files_skipped: unreadable  1" in proc.stdout


@pytest.mark.parametrize("damage, message", [
    (lambda meta: os.remove(meta / "paths.json"), "paths.json: missing"),
    (lambda meta: (meta / "paths.json").write_text("{not json"), "paths.json: not valid JSON"),
    (lambda meta: (meta / "files.json").write_text("[1, 2]"), "files.json: expected an object"),
    (lambda meta: (meta / "METADATA").write_text("A\tx.py\n"), "METADATA: commit does not start"),
])
def test_malformed_metadata_names_the_file(tmp_path, damage, message):
  tree_writer.write_flcc_tree(str(tmp_path), {"a/b": {"x.py": b"x = 1\n"}})
  meta = next((tmp_path / "v3" / "repositories" / "a" / "b").iterdir())
  damage(meta)
  with pytest.raises(flcc.FlccFormatError, match=message) as error:
    flcc.plan_build(str(tmp_path), "python")
  assert str(meta) in str(error.value)


def test_cli_bad_input_is_one_line_and_nonzero(tmp_path):
  tree_writer.write_flcc_tree(str(tmp_path), {"a/b": {"x.py": b"x = 1\n"}})
  meta = next((tmp_path / "v3" / "repositories" / "a" / "b").iterdir())
  (meta / "paths.json").write_text("{oops")
  proc = run_data_cli("build", f"--flcc_dir={tmp_path}", f"--data_dir={tmp_path}/tfds",
                      check=False)
  assert proc.returncode == 1
  errors = [l for l in proc.stderr.splitlines() if "error" in l]
  assert errors == [f"code_t5.data build: error: {meta}/paths.json: not valid JSON "
                    "(Expecting property name enclosed in double quotes: line 1 column 2 "
                    "(char 1))"]
  assert "Traceback" not in proc.stderr
  assert not os.path.exists(f"{tmp_path}/tfds/flcc/python/1.0.0")


def test_cli_empty_selection_fails(tmp_path):
  tree_writer.write_flcc_tree(str(tmp_path), {"a/b": {"x.py": b""}})
  proc = run_data_cli("build", f"--flcc_dir={tmp_path}", f"--data_dir={tmp_path}/tfds",
                      check=False)
  assert proc.returncode == 1
  assert "no python files left to build from" in proc.stderr


def test_dataset_loads_with_tfds_and_matches_the_report(flcc_data_dir, flcc_tree):
  report_file = builder.report_path(flcc_data_dir, "python")
  with open(report_file) as f:
    report = json.load(f)
  expected = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS).report()
  for split in flcc.SPLITS:
    ds = tfds.load("flcc/python:1.0.0", split=split, data_dir=flcc_data_dir)
    examples = list(tfds.as_numpy(ds))
    assert len(examples) == report["splits"][split]["files"] == expected["splits"][split]["files"]
    assert sum(len(e["content"]) for e in examples) == report["splits"][split]["bytes"]
  originals = {c for files in fixture_repositories().values() for c in files.values()}
  example = examples[0]
  assert example["content"] in originals
  assert example["language"] == b"python" and example["extension"] == b".py"


def test_rebuild_reuses_the_finished_dataset(flcc_data_dir, flcc_tree):
  data_file_times = {p: os.path.getmtime(p) for p in _dataset_files(flcc_data_dir)}
  proc = run_data_cli("build", f"--flcc_dir={flcc_tree}", f"--data_dir={flcc_data_dir}")
  assert "files_processed" in proc.stdout
  assert {p: os.path.getmtime(p) for p in _dataset_files(flcc_data_dir)} == data_file_times


def _dataset_files(data_dir):
  version_dir = os.path.join(data_dir, "flcc", "python", "1.0.0")
  return sorted(os.path.join(version_dir, n) for n in os.listdir(version_dir))


def test_vocabulary_round_trips_every_fixture_file(flcc_data_dir):
  processor = vocab_lib.load_processor(vocab_lib.vocab_path(flcc_data_dir, "python"))
  assert (processor.pad_id(), processor.eos_id(), processor.unk_id(), processor.bos_id()) == (
      0, 1, 2, -1)
  assert processor.EncodeAsIds("\n") == [3] and processor.EncodeAsIds("\t") == [4]
  for files in fixture_repositories().values():
    for content in files.values():
      try:
        text = content.decode("utf-8")
      except UnicodeDecodeError:
        continue
      ids = processor.EncodeAsIds(text)
      assert processor.unk_id() not in ids
      assert processor.DecodeIds(ids) == text
  unseen = "λ = '日本語 ☃'\r\n\tπ = 3.14\n"
  assert processor.unk_id() not in processor.EncodeAsIds(unseen)
  assert processor.DecodeIds(processor.EncodeAsIds(unseen)) == unseen


def test_missing_or_corrupt_vocabulary_names_the_file(tmp_path):
  path = str(tmp_path / "spm.model")
  with pytest.raises(vocab_lib.VocabularyError, match="no vocabulary"):
    vocab_lib.load_processor(path)
  with open(path, "wb") as f:
    f.write(b"not a model")
  with pytest.raises(vocab_lib.VocabularyError, match=f"{path}: not a sentencepiece model"):
    vocab_lib.load_processor(path)


def test_interrupted_dev_tree_is_not_taken_as_complete(tmp_path):
  out = tmp_path / "flcc"
  partial = tmp_path / "flcc.incomplete"
  partial.mkdir()
  (partial / "junk").write_text("left by a killed run")
  v3 = tree_writer.write_dev_tree(str(out), max_files=5)
  assert not partial.exists()
  assert os.path.isdir(os.path.join(v3, "repositories"))
  shutil.rmtree(out)
