"""FLCC data as git wrote it: METADATA from real `git log`, faults that skip one repository.

The trees here are made by git itself (`flcc_git.py`), with real code (the interpreter's
standard library) as content, so the reader meets the format the dataset was made with.
"""

import json
import os
import re

import pytest

from code_t5.data import flcc
from code_t5.data import tree_writer

import flcc_git
from conftest import run_data_cli

# The example of issue 15, byte for byte: git's output for two commits.
GIT_EXAMPLE = b"1795370505\n\nM\ta.py\nA\tb.py\n1795370505\n\nA\ta.py\n"


def _metadata_file(tmp_path, content: bytes):
  path = tmp_path / "METADATA"
  path.write_bytes(content)
  return str(path)


GIT_EXAMPLE_COMMITS = [(1795370505, [("M", "a.py"), ("A", "b.py")]), (1795370505, [("A", "a.py")])]


@pytest.mark.parametrize("content, commits", [
    (GIT_EXAMPLE, GIT_EXAMPLE_COMMITS),
    (GIT_EXAMPLE.replace(b"\n", b"\r\n"), GIT_EXAMPLE_COMMITS),  # CRLF
    (GIT_EXAMPLE.rstrip(b"\n"), GIT_EXAMPLE_COMMITS),  # no final newline
    (b"1795370505\n\nR087\told.py\tnew.py\nC100\ta.py\tcopy.py\nD\tgone.py\n",
     [(1795370505, [("R087", "old.py", "new.py"), ("C100", "a.py", "copy.py"), ("D", "gone.py")])]),
    (b"", []),  # a repository whose history touched no file of interest
])
def test_metadata_as_git_writes_it_is_read(tmp_path, content, commits):
  assert flcc.check_metadata(_metadata_file(tmp_path, content)) == commits


@pytest.mark.parametrize("content, message", [
    (b"A\tblob.py\n1795370505\n", r":1: commit does not start with a unix time: 'A\\tblob.py'"),
    (b"1795370505\n\nthis is not git\n", r":3: neither a unix time nor a git name-status line"),
    (b"1795370505\n\nA blob.py\n", r":3: neither"),  # a space, not git's tab
])
def test_metadata_that_git_did_not_write_names_the_line(tmp_path, content, message):
  path = _metadata_file(tmp_path, content)
  with pytest.raises(flcc.RepositoryError, match=re.escape(path) + message) as error:
    flcc.check_metadata(path)
  assert error.value.reason == flcc.BAD_METADATA


def test_metadata_of_a_real_history_is_read(tmp_path):
  """Adds, changes, a rename and a delete, played by git; its log is what the reader gets."""
  work = str(tmp_path / "work")
  flcc_git.play_history(work, [
      {"pkg/a.py": b"x = 1\n", "pkg/b.py": b"y = 2\n" * 20, "c.py": b"z = 3\n"},
      {"pkg/a.py": b"x = 10\n", "c.py": None},
      {"pkg/renamed.py": ("rename", "pkg/b.py")},
  ], first_time=1795370000)
  log = flcc_git.git(work, *flcc_git.GIT_LOG_METADATA)
  assert re.search(r"^R100\tpkg/b.py\tpkg/renamed.py$", log, re.M), log
  assert re.search(r"^D\tc.py$", log, re.M) and log.startswith("1795370120\n\n"), log
  assert flcc.check_metadata(_metadata_file(tmp_path, log.encode())) == [
      (1795370120, [("R100", "pkg/b.py", "pkg/renamed.py")]),
      (1795370060, [("D", "c.py"), ("M", "pkg/a.py")]),
      (1795370000, [("A", "c.py"), ("A", "pkg/a.py"), ("A", "pkg/b.py")])]


def test_tree_writer_writes_what_git_writes(tmp_path):
  """The dev tree's and the fixtures' METADATA equals git's log of the same single commit."""
  files = {"src/module_0.py": b"a = 1\n", "src/module_1.py": b"b = 2\n", "setup.py": b"c\n"}
  work = str(tmp_path / "work")
  flcc_git.play_history(work, [files], first_time=1700000000)
  assert tree_writer.git_log_of_one_commit(1700000000, files) == flcc_git.git(
      work, *flcc_git.GIT_LOG_METADATA)
  v3 = tree_writer.write_flcc_tree(str(tmp_path / "tree"), {"a/b": files})
  [meta_dir] = (os.path.join(dirpath) for dirpath, _, names in os.walk(v3)
                if "METADATA" in names)
  with open(os.path.join(meta_dir, "METADATA")) as f:
    assert f.read() == flcc_git.git(work, *flcc_git.GIT_LOG_METADATA)


# --- a tree of real code, made by git, with one malformed repository ----------------------

PROJECTS = 6  # named projects, plus two whose name was lost (dev/null/<uuid>)
LOST = ["3f1c2b9e-0d4a-4c5e-9b7f-1a2b3c4d5e6f", "8e7d6c5b-4a39-4281-b0c1-d2e3f4a5b6c7"]


def _histories():
  """Real code in three commits per project: add, change and delete, then a rename."""
  stdlib = tree_writer.stdlib_repositories(max_files=420)
  files = sorted((path, content) for repo in stdlib.values() for path, content in repo.items())
  histories = []
  for number in range(PROJECTS + len(LOST)):
    mine = dict(files[number::PROJECTS + len(LOST)])
    paths = sorted(mine)
    histories.append([
        mine,
        {paths[0]: mine[paths[0]] + b"\n# changed\n", paths[1]: None},
        {"moved/" + os.path.basename(paths[2]): ("rename", paths[2])},
    ])
  return histories


@pytest.fixture(scope="module")
def git_tree(tmp_path_factory):
  """(flcc dir, metadata folders, the planted malformed paths.json)."""
  root = tmp_path_factory.mktemp("git_flcc")
  v3 = str(root / "v3")
  work = tmp_path_factory.mktemp("git_work")
  meta_dirs = []
  for number, commits in enumerate(_histories()):
    lost = LOST[number - PROJECTS] if number >= PROJECTS else None
    meta_dirs.append(flcc_git.write_git_repository(
        v3, f"author{number}", f"project{number}", commits, str(work / str(number)),
        lost_name_uuid=lost))
  bad = os.path.join(meta_dirs[2], "paths.json")
  with open(bad, "w") as f:
    f.write('{"truncated": ')
  return str(root), meta_dirs, bad


def _stored_files(meta_dir):
  """How many files FLCC stored for the repository of `meta_dir`."""
  v3, repository = meta_dir.split(os.sep + "repositories" + os.sep)
  return len(os.listdir(os.path.join(v3, "languages", "Python", ".py", repository)))


def test_a_git_made_tree_builds_and_its_bad_repository_is_named_once_and_counted(
    git_tree, tmp_path):
  flcc_dir, meta_dirs, bad = git_tree
  proc = run_data_cli("build", f"--flcc_dir={flcc_dir}", f"--data_dir={tmp_path / 'tfds'}",
                      "--language=Python", "--ratios=0.6,0.2,0.2")
  warnings = [line for line in proc.stderr.splitlines() if ": WARNING: " in line]
  assert len(warnings) == 1 and bad in warnings[0] and "not valid JSON" in warnings[0]
  with open(tmp_path / "tfds" / "flcc" / "python" / "1.0.0" / "flcc_report.json") as f:
    report = json.load(f)
  assert report["repositories_skipped: bad paths.json"] == 1
  assert sum(report[f"repositories_skipped: {r}"] for r in flcc.REPOSITORY_SKIP_REASONS) == 1
  assert report["repos_processed"] == len(meta_dirs) - 1
  # Every stored file of every other repository is accounted for: kept in a split or
  # skipped for a reason.
  stored = sum(_stored_files(m) for m in meta_dirs if m != os.path.dirname(bad))
  assert stored > 300
  assert report["files_processed"] == stored
  kept = sum(split["files"] for split in report["splits"].values())
  skipped = sum(report[f"files_skipped: {r}"] for r in flcc.SKIP_REASONS if r != flcc.MISSING)
  assert kept + skipped == stored and kept > 0


def test_projects_that_lost_their_name_are_repositories_of_their_own(git_tree):
  flcc_dir, _, _ = git_tree
  plan = flcc.plan_build(flcc_dir, "python", (0.6, 0.2, 0.2))
  lost = {r for r in plan.split_of_repository if r.startswith("dev/null/")}
  assert lost == {f"dev/null/{uuid}" for uuid in LOST}
  # ...and so are their files: each carries its own repository in the dataset.
  kept_in = {f.repository for files in plan.files.values() for f, _ in files}
  assert lost <= kept_in


def test_strict_stops_at_the_bad_repository(git_tree, tmp_path):
  flcc_dir, _, bad = git_tree
  proc = run_data_cli("build", f"--flcc_dir={flcc_dir}", f"--data_dir={tmp_path / 'tfds'}",
                      "--strict", check=False)
  assert proc.returncode == 1
  assert proc.stderr.strip().splitlines()[-1].startswith(
      f"code_t5.data build: error: {bad}: not valid JSON")
  assert not (tmp_path / "tfds" / "flcc" / "python" / "1.0.0").exists()


@pytest.mark.parametrize("spelling, language", [
    ("Python", "python"), ("PYTHON", "python"), ("C++", "cpp"), ("c#", "csharp"),
    ("JavaScript", "javascript"), ("javascript", "javascript"), ("Kotlin", "kotlin"),
])
def test_the_trees_own_language_names_are_accepted(spelling, language):
  assert flcc.canonical_language(spelling) == language


def test_an_unknown_language_is_one_line(tmp_path):
  proc = run_data_cli("build", f"--flcc_dir={tmp_path}", f"--data_dir={tmp_path}",
                      "--language=Cobol", check=False)
  assert proc.returncode == 2
  assert "unknown language 'Cobol'; known: cpp (C++), csharp (C#)" in proc.stderr
