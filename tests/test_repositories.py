"""A folder of one's own repositories in (`--repos_dir`), and near-duplicates handled.

The folder is made by git in the test: repositories with a real history of real code (the
interpreter's standard library), two of which share a file under another header (the planted
near-duplicate pair), a broken `.git`, a repository with no commit, a plain folder, a folder
of no code and a loose file. What the tree stores is checked against what git itself says.
"""

import collections
import filecmp
import glob
import json
import os
import sysconfig

import numpy as np
import pytest
import tensorflow_datasets as tfds

from code_t5 import vocabulary
from code_t5.data import builder
from code_t5.data import flcc
from code_t5.data import near_duplicates
from code_t5.data import repositories

import flcc_git
from conftest import reported, run_data_cli

STDLIB = sysconfig.get_paths()["stdlib"]


def _stdlib(name: str) -> bytes:
  with open(os.path.join(STDLIB, name), "rb") as f:
    return f.read()


TEXTWRAP = _stdlib("textwrap.py")
# The planted pair: team/alpha's textwrap.py and team/beta's vendored copy, another header.
VENDORED_TEXTWRAP = b"# Vendored from CPython 3.11 by Team Beta; do not change here.\n" + TEXTWRAP
# Other repositories, a few real modules each, so that splits have repositories to go round.
OTHERS = {"gamma": ["ast.py", "bisect.py"], "delta": ["csv.py", "heapq.py"],
          "epsilon": ["fnmatch.py", "getopt.py"], "zeta": ["shlex.py", "string.py"]}
PLAIN_MTIME = 1795000000


def _make_repositories(root: str) -> None:
  flcc_git.play_history(os.path.join(root, "team", "alpha"), [
      {"textwrap.py": TEXTWRAP, "lib/glob.py": _stdlib("glob.py"),
       "lib/cmd.py": _stdlib("cmd.py"), "README.md": b"alpha\n"},
      {"lib/cmd.py": _stdlib("cmd.py") + b"\n# changed\n",
       "util/glob.py": ("rename", "lib/glob.py")},
  ], first_time=1795370000)
  flcc_git.play_history(os.path.join(root, "team", "beta"), [
      {"vendor/textwrap.py": VENDORED_TEXTWRAP, "colors.py": _stdlib("colorsys.py")},
  ], first_time=1795380000)
  for number, (name, modules) in enumerate(sorted(OTHERS.items())):
    flcc_git.play_history(os.path.join(root, name), [
        {module: _stdlib(module) for module in modules}], first_time=1795390000 + 1000 * number)
  broken = os.path.join(root, "broken")
  os.makedirs(os.path.join(broken, ".git"))
  with open(os.path.join(broken, ".git", "HEAD"), "w") as f:
    f.write("not a ref\n")
  with open(os.path.join(broken, "abc.py"), "wb") as f:
    f.write(_stdlib("abc.py"))
  flcc_git.git(root, "init", "-q", "-b", "main", "no_commits")
  with open(os.path.join(root, "no_commits", "x.py"), "w") as f:
    f.write("x = 1\n")
  for path, module in (("plain/keyword.py", "keyword.py"), ("plain/sub/token.py", "token.py")):
    full = os.path.join(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
      f.write(_stdlib(module))
    os.utime(full, (PLAIN_MTIME, PLAIN_MTIME))
  # A vendored submodule's gitfile deep inside does not make the folder a folder of repositories.
  os.makedirs(os.path.join(root, "plain", "vendor", "lib"))
  with open(os.path.join(root, "plain", "vendor", "lib", ".git"), "w") as f:
    f.write("gitdir: ../../../.git/modules/lib\n")
  with open(os.path.join(root, "plain", "vendor", "lib", "stat.py"), "wb") as f:
    f.write(_stdlib("stat.py"))
  os.utime(os.path.join(root, "plain", "vendor", "lib", "stat.py"), (PLAIN_MTIME, PLAIN_MTIME))
  os.symlink("keyword.py", os.path.join(root, "plain", "alias.py"))  # not stored, counted
  os.makedirs(os.path.join(root, "plain", ".venv"))  # hidden: left out
  with open(os.path.join(root, "plain", ".venv", "site.py"), "w") as f:
    f.write("hidden = True\n")
  os.makedirs(os.path.join(root, "docs"))
  with open(os.path.join(root, "docs", "notes.md"), "w") as f:
    f.write("no code here\n")
  with open(os.path.join(root, "loose.py"), "w") as f:
    f.write("loose = True\n")


@pytest.fixture(scope="module")
def repos_dir(tmp_path_factory):
  root = str(tmp_path_factory.mktemp("repos"))
  _make_repositories(root)
  return root


@pytest.fixture(scope="module")
def repos_tree(repos_dir, tmp_path_factory):
  out = str(tmp_path_factory.mktemp("repos_tree") / "tree")
  return out, repositories.write_tree(repos_dir, out)


def _stored(tree, author, repo):
  """{real path: (unix time in the stored name, content)} and the init hash of a repository."""
  meta_root = os.path.join(tree, "v3", "repositories", author, repo)
  (init_hash,) = os.listdir(meta_root)
  with open(os.path.join(meta_root, init_hash, "paths.json")) as f:
    paths = json.load(f)
  stored_dir = os.path.join(tree, "v3", "languages", "Python", ".py", author, repo, init_hash)
  result = {}
  for name, path in paths.items():
    with open(os.path.join(stored_dir, name), "rb") as f:
      result[path] = (int(name.rsplit("_", 1)[1][:-3]), f.read())
  with open(os.path.join(meta_root, init_hash, "METADATA")) as f:
    return result, init_hash, f.read()


def test_each_git_repository_is_stored_as_git_tells_it(repos_dir, repos_tree):
  tree, _ = repos_tree
  for author, repo, work in [("team", "alpha", "team/alpha"), ("team", "beta", "team/beta"),
                             ("local", "gamma", "gamma")]:
    work = os.path.join(repos_dir, work)
    stored, init_hash, metadata = _stored(tree, author, repo)
    assert metadata == flcc_git.git(work, *flcc_git.GIT_LOG_METADATA)
    assert init_hash == flcc_git.git(work, "rev-list", "--max-parents=0", "HEAD").strip()
    head_files = [p for p in flcc_git.git(work, "ls-files", "-z").split("\0") if p.endswith(".py")]
    assert sorted(stored) == sorted(head_files)
    for path, (time, content) in stored.items():
      assert time == int(flcc_git.git(work, "log", "-1", "--pretty=%ct", "--", path))
      assert content == open(os.path.join(work, path), "rb").read()
  alpha, _, _ = _stored(tree, "team", "alpha")
  assert alpha["lib/cmd.py"][0] == 1795370060 and alpha["util/glob.py"][0] == 1795370060
  assert alpha["textwrap.py"][0] == 1795370000


def test_a_plain_folder_is_one_repository_of_its_files_at_their_times(repos_tree):
  tree, _ = repos_tree
  stored, _, metadata = _stored(tree, "local", "plain")
  assert sorted(stored) == ["keyword.py", "sub/token.py", "vendor/lib/stat.py"]  # not .venv/
  assert {time for time, _ in stored.values()} == {PLAIN_MTIME}
  assert flcc.parse_metadata(metadata, "METADATA") == [
      (PLAIN_MTIME, [("A", "keyword.py"), ("A", "sub/token.py"), ("A", "vendor/lib/stat.py")])]


def test_what_a_repository_cannot_give_is_named_once_skipped_and_counted(repos_dir, tmp_path,
                                                                         caplog):
  manifest = repositories.write_tree(repos_dir, str(tmp_path / "tree"))
  assert manifest["skipped"] == {
      repositories.GIT_FAILED: ["broken"], repositories.NO_COMMITS: ["no_commits"],
      repositories.NO_SOURCE_FILES: ["docs"], repositories.UNREADABLE_FOLDER: [],
      repositories.REACHES_OUTSIDE: [], repositories.STORED_ALREADY: []}
  assert manifest["stored"] == {"git repositories": 2 + len(OTHERS), "folders": 1,
                                "files": 5 + 2 * len(OTHERS) + 3}
  assert manifest["outside_any_repository"] == 1
  assert manifest["files_left_out"] == {repositories.LINKS: 1, repositories.SUBMODULES: 0,
                                        repositories.UNREADABLE_FILES: 0,
                                        repositories.TOO_LARGE: 0}  # plain/alias.py
  warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
  for name in ("broken", "no_commits", "docs", "loose.py"):
    assert sum(os.path.join(repos_dir, name) in w for w in warnings) == 1, (name, warnings)
  assert any("broken: " in w and ": not a git repository" in w for w in warnings)


def test_a_bare_repository_is_stored_as_its_checkout(tmp_path):
  """What `git clone --bare` and `--mirror` write (and git servers keep: `team/service.git`)
  has no work tree: the same HEAD, history and names as the checkout it was cloned from."""
  work = str(tmp_path / "work" / "service")
  flcc_git.play_history(work, [
      {"a.py": _stdlib("bisect.py"), "lib/b.py": _stdlib("heapq.py")},
      {"lib/b.py": _stdlib("heapq.py") + b"\n# changed\n", "c.py": ("rename", "a.py")},
  ], first_time=1795370000)
  # A link to a source file and a submodule: not stored, counted.
  os.symlink("c.py", os.path.join(work, "link.py"))
  flcc_git.git(work, "update-index", "--add", "--cacheinfo",
               f"160000,{flcc_git.git(work, 'rev-parse', 'HEAD').strip()},vendor/lib")
  flcc_git.git(work, "add", "link.py")
  flcc_git.git(work, "commit", "-q", "-m", "link and submodule", date=1795370200)
  repos = tmp_path / "repos"
  flcc_git.git(str(tmp_path), "clone", "-q", "--bare", work, str(repos / "team" / "service.git"))
  flcc_git.git(str(tmp_path), "clone", "-q", "--mirror", work, str(repos / "mirrored.git"))
  flcc_git.git(str(tmp_path), "init", "-q", "--bare", str(repos / "team" / "empty.git"))
  manifest = repositories.write_tree(str(repos), str(tmp_path / "tree"))
  assert manifest["stored"]["git repositories"] == 2 and manifest["stored"]["folders"] == 0
  assert manifest["skipped"][repositories.NO_COMMITS] == ["team/empty.git"]
  assert manifest["files_left_out"] == {repositories.LINKS: 2, repositories.SUBMODULES: 2,
                                        repositories.UNREADABLE_FILES: 0,
                                        repositories.TOO_LARGE: 0}  # of the two clones
  assert repositories.summary(manifest).endswith(
      "; left out of the stored repositories: symbolic links 2, submodules 2")
  head_files = [line.split("\t")[1] for line in flcc_git.git(work, "ls-files", "-s").splitlines()
                if line.startswith("100644 ") and line.endswith(".py")]  # regular files only
  for author, repo in (("team", "service"), ("local", "mirrored")):
    stored, init_hash, metadata = _stored(str(tmp_path / "tree"), author, repo)
    assert metadata == flcc_git.git(work, *flcc_git.GIT_LOG_METADATA)
    assert init_hash == flcc_git.git(work, "rev-list", "--max-parents=0", "HEAD").strip()
    assert sorted(stored) == sorted(head_files) == ["c.py", "lib/b.py"]
    for path, (time, content) in stored.items():
      assert time == int(flcc_git.git(work, "log", "-1", "--pretty=%ct", "--", path))
      assert content == open(os.path.join(work, path), "rb").read()


def test_a_checkout_beside_its_bare_clone_is_stored_once_and_the_copy_counted(tmp_path,
                                                                              caplog):
  """`team/service` and `team/service.git`, cloned from it before its last commit: one name and
  one first commit, so one place in the tree. The first in DIR's order is stored whole (its
  paths.json lists every file written), the other named, skipped and counted."""
  repos = tmp_path / "repos"
  work = str(repos / "team" / "service")
  flcc_git.play_history(work, [{"a.py": _stdlib("bisect.py")}], first_time=1795370000)
  flcc_git.git(str(tmp_path), "clone", "-q", "--bare", work, str(repos / "team" / "service.git"))
  with open(os.path.join(work, "b.py"), "wb") as f:
    f.write(_stdlib("heapq.py"))
  flcc_git.git(work, "add", "b.py")
  flcc_git.git(work, "commit", "-q", "-m", "b", date=1795370100)
  manifest = repositories.write_tree(str(repos), str(tmp_path / "tree"))
  assert manifest["skipped"][repositories.STORED_ALREADY] == ["team/service.git"]
  assert manifest["stored"] == {"git repositories": 1, "folders": 0, "files": 2}
  stored, _, _ = _stored(str(tmp_path / "tree"), "team", "service")
  assert sorted(stored) == ["a.py", "b.py"]
  assert sorted(os.path.basename(path) for path in glob.glob(
      str(tmp_path / "tree" / "v3" / "languages" / "**" / "*.py"), recursive=True,
      include_hidden=True) if os.path.isfile(path)) == ["a_1795370000.py", "b_1795370100.py"]
  warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
  assert any(w.startswith(f"{repos / 'team' / 'service.git'}: a copy of team/service, which is "
                          "stored") for w in warnings), warnings


def test_a_repository_git_fails_on_partway_is_skipped_and_leaves_nothing(tmp_path, monkeypatch):
  """Contents are read and written a few files at a time (BLOBS_PER_CALL); where git fails on a
  later file (its object corrupt), what was written of that repository is removed and it is
  skipped and counted, the others stored. An object that is not there at all is found before
  any file is read (ls-tree's sizes), and its repository skipped alike."""
  repos = tmp_path / "repos"
  modules = OTHERS["gamma"] + ["glob.py"]
  for name in ("damaged", "lost"):
    flcc_git.play_history(str(repos / name), [{module: _stdlib(module) for module in modules}],
                          first_time=1795370000)
  flcc_git.play_history(str(repos / "whole"), [{"cmd.py": _stdlib("cmd.py")}],
                        first_time=1795370000)
  last = flcc_git.git(str(repos / "damaged"), "rev-parse", "HEAD:glob.py").strip()  # ls-tree's last
  for name in ("damaged", "lost"):
    loose = os.path.join(repos, name, ".git", "objects", last[:2], last[2:])
    if name == "lost":
      os.remove(loose)
    else:  # its header still reads (ls-tree -l gives its size), its content not
      os.chmod(loose, 0o644)
      os.truncate(loose, os.path.getsize(loose) // 2)
  monkeypatch.setattr(repositories, "BLOBS_PER_CALL", 1)
  tree = tmp_path / "tree"
  manifest = repositories.write_tree(str(repos), str(tree))
  assert manifest["skipped"][repositories.GIT_FAILED] == ["damaged", "lost"]
  assert manifest["stored"] == {"git repositories": 1, "folders": 0, "files": 1}
  # (include_hidden: the stored files lie under languages/Python/.py/)
  for name in ("damaged", "lost"):
    assert not glob.glob(str(tree / "v3" / "**" / name), recursive=True, include_hidden=True)
  assert [os.path.basename(path) for path in glob.glob(
      str(tree / "v3" / "languages" / "**" / "*.py"), recursive=True, include_hidden=True)
          if os.path.isfile(path)] == ["cmd_1795370000.py"]


def test_a_call_reads_a_bounded_number_of_files_and_bytes(tmp_path, monkeypatch):
  """git cat-file reads at most BLOBS_PER_CALL files a call, and no more than BYTES_PER_CALL
  bytes but where one file alone has more (ls-tree's sizes): a monorepo's generated bundles
  are not held all at once. The files stored are the same."""
  monkeypatch.setattr(repositories, "BLOBS_PER_CALL", 3)
  monkeypatch.setattr(repositories, "BYTES_PER_CALL", 10)
  entries = [(oid, f"{oid}.py", size) for oid, size in
             [("a", 4), ("b", 4), ("c", 4), ("d", 30), ("e", 1), ("f", 1), ("g", 1), ("h", 1)]]
  assert [[oid for oid, _, _ in run] for run in repositories._calls(entries)] == [
      ["a", "b"], ["c"], ["d"], ["e", "f", "g"], ["h"]]
  repos = tmp_path / "repos"
  modules = ["bisect.py", "heapq.py", "getopt.py"]
  flcc_git.play_history(str(repos / "service"), [{name: _stdlib(name) for name in modules}],
                        first_time=1795370000)
  whole = repositories.write_tree(str(repos), str(tmp_path / "whole"))
  calls = []
  git = repositories._git
  monkeypatch.setattr(repositories, "_git", lambda repo, store, *args, **kw: (
      calls.append(args[0]), git(repo, store, *args, **kw))[1])
  monkeypatch.setattr(repositories, "BYTES_PER_CALL", 1)  # a call a file
  apart = repositories.write_tree(str(repos), str(tmp_path / "apart"))
  assert calls.count("cat-file") == len(modules)
  assert apart["stored"] == whole["stored"] == {"git repositories": 1, "folders": 0, "files": 3}
  assert filecmp.dircmp(tmp_path / "whole", tmp_path / "apart").diff_files == []
  assert sorted(os.path.relpath(p, tmp_path / "apart") for p in glob.glob(
      str(tmp_path / "apart" / "**"), recursive=True, include_hidden=True)) == sorted(
      os.path.relpath(p, tmp_path / "whole") for p in glob.glob(
          str(tmp_path / "whole" / "**"), recursive=True, include_hidden=True))


def test_a_folders_files_are_read_as_they_are_written_and_a_vanished_one_is_counted(tmp_path):
  """A folder repository's contents are read as its files are written, not all first (a folder
  can hold gigabytes); a file gone between the listing and its reading (a build beside an
  editor) is named, counted as unreadable and left out, the rest stored."""
  folder = tmp_path / "repos" / "plain"
  folder.mkdir(parents=True)
  for name in ("bisect.py", "heapq.py", "getopt.py"):
    (folder / name).write_bytes(_stdlib(name))
  found, _ = repositories.find(str(tmp_path / "repos"))
  left_out = collections.Counter()
  _, metadata, stored = repositories.read_folder(found[0], left_out)
  assert "A\theapq.py" in metadata
  os.remove(folder / "heapq.py")
  (folder / "getopt.py").write_bytes(b"x = 1\n")  # read now, not when listed
  assert [(path, content) for path, content, _ in stored] == [
      ("bisect.py", _stdlib("bisect.py")), ("getopt.py", b"x = 1\n")]
  assert left_out == {repositories.UNREADABLE_FILES: 1}


def test_a_rerun_reuses_the_tree_and_a_new_commit_is_a_changed_input(tmp_path):
  repo = str(tmp_path / "repos" / "service")
  flcc_git.play_history(repo, [{"a.py": _stdlib("bisect.py")}, {"b.py": _stdlib("heapq.py")}],
                        first_time=1795370000)
  flcc_git.play_history(str(tmp_path / "repos" / "tools"), [{"c.py": _stdlib("getopt.py")}],
                        first_time=1795370000)
  args = ["build", f"--repos_dir={tmp_path / 'repos'}", f"--data_dir={tmp_path / 'tfds'}",
          "--ratios=1,0,0"]
  first = run_data_cli(*args)
  assert "wrote the FLCC tree of" in first.stdout
  assert "2 git repositories and 0 folders, 3 source files" in first.stdout
  again = run_data_cli(*args)
  assert "reused the FLCC tree of" in again.stdout and "Generating" not in again.stderr
  with open(os.path.join(repo, "b.py"), "ab") as f:
    f.write(b"\n# a new line\n")
  flcc_git.git(repo, "commit", "-q", "-am", "more", date=1795379999)
  changed = run_data_cli(*args, check=False)
  assert changed.returncode == 1
  assert "wrote the FLCC tree of" in changed.stdout
  assert changed.stderr.strip().endswith(
      "built from other inputs (the repositories changed: their HEAD commits or files); "
      "--overwrite replaces it")


def _texts(data_dir):
  return {split: [e["content"] for e in tfds.as_numpy(tfds.load(
      "flcc/python:1.0.0", split=split, data_dir=data_dir))] for split in flcc.SPLITS}


def _plan_of(tree, ratios, mode=near_duplicates.HOLDOUT):
  return flcc.plan_build(tree, "python", ratios, near=near_duplicates.Options(mode))


def _contents(plan):
  return {split: [flcc.read_text(source).encode("utf-8") for source, _ in plan.files[split]]
          for split in flcc.SPLITS}


# Shares that put the planted pair in different splits and in the same one.
RATIOS = [(0.34, 0.33, 0.33), (0.3, 0.35, 0.35), (0.4, 0.25, 0.35), (0.4, 0.35, 0.25),
          (0.4, 0.4, 0.2), (0.6, 0.2, 0.2), (0.8, 0.1, 0.1), (0.4, 0.6, 0.0)]


def test_no_held_out_file_keeps_a_near_duplicate_in_train_at_any_ratios(repos_tree):
  tree, _ = repos_tree
  apart = 0
  for ratios in RATIOS:
    plan = _plan_of(tree, ratios)
    contents = _contents(plan)
    for split in ("validation", "test"):
      for held_out in contents[split]:
        assert all(near_duplicates.exact_jaccard(held_out, trained) < 0.85
                   for trained in contents["train"]), (ratios, split)
    splits = {split for name, split in plan.split_of_repository.items()
              if name.startswith(("team/alpha/", "team/beta/"))}
    report = plan.report()["near_duplicates"]
    if "train" in splits and len(splits) == 2:  # the pair apart: the held-out copy goes
      apart += 1
      held_out = (splits - {"train"}).pop()
      assert report["removed"][held_out] == 1 and report["contaminated_before"][held_out] == 1
      assert TEXTWRAP in contents["train"] or VENDORED_TEXTWRAP in contents["train"]
      assert not {TEXTWRAP, VENDORED_TEXTWRAP} & set(contents[held_out])
    else:
      assert sum(report["removed"].values()) == 0
    assert report["contamination_after"] == {"validation": 0.0, "test": 0.0}
  assert apart >= 2  # the ratios did put the pair apart


def test_the_planted_pair_is_found_and_drop_keeps_one_of_it_in_train(repos_tree):
  tree, _ = repos_tree
  assert near_duplicates.exact_jaccard(TEXTWRAP, VENDORED_TEXTWRAP) > 0.95
  everything_trains = (1.0, 0.0, 0.0)
  kept = _contents(_plan_of(tree, everything_trains))["train"]
  assert TEXTWRAP in kept and VENDORED_TEXTWRAP in kept  # holdout leaves train as it is
  dropped = _plan_of(tree, everything_trains, near_duplicates.DROP)
  report = dropped.report()
  assert report["near_duplicates"]["clusters"] == 1
  assert report["near_duplicates"]["files_in_clusters"]["train"] == 2
  assert report["files_skipped: near-duplicate"] == 1
  kept = _contents(dropped)["train"]
  # The first in build order stays: team/alpha sorts before team/beta.
  assert TEXTWRAP in kept and VENDORED_TEXTWRAP not in kept
  off = _plan_of(tree, everything_trains, near_duplicates.OFF).report()
  assert off["near_duplicates"] == {"mode": "off"} and off["files_skipped: near-duplicate"] == 0


def test_a_build_from_repos_dir_has_no_eval_example_with_a_twin_in_training(
    repos_dir, repos_tree, tmp_path):
  ratios = (0.4, 0.25, 0.35)  # team/alpha tests, team/beta trains
  data_dir = str(tmp_path / "tfds")
  proc = run_data_cli("build", f"--repos_dir={repos_dir}", f"--data_dir={data_dir}",
                      "--ratios=" + ",".join(map(str, ratios)))
  assert reported(proc.stdout, "near_duplicates_removed") == "train 0, validation 0, test 1"
  report = builder.built_report(data_dir, "python")
  checked = report["near_duplicates"]["checked"]["test"]
  test_share = reported(proc.stdout, "contamination").split("; test ")[1]
  assert test_share == f"{100 / checked:.1f}% (1 of {checked}) before, 0.0% after"
  texts = _texts(data_dir)
  assert len(texts["test"]) == report["splits"]["test"]["files"] == checked - 1
  for held_out in texts["validation"] + texts["test"]:
    assert max(near_duplicates.exact_jaccard(held_out, t) for t in texts["train"]) < 0.85


def test_dev_makes_a_dev_dataset_of_ones_own_repositories(repos_dir, tmp_path):
  proc = run_data_cli("dev", f"--repos_dir={repos_dir}", f"--root={tmp_path / 'dev'}",
                      "--vocab_size=600")
  assert f"wrote the FLCC tree of {repos_dir} in {tmp_path / 'dev' / 'flcc'}" in proc.stdout
  report = builder.built_report(str(tmp_path / "dev" / "tfds"), "python")
  assert report["repos_processed"] == 2 + len(OTHERS) + 1
  vocab = vocabulary.vocab_path(str(tmp_path / "dev" / "tfds"), "python")
  assert os.path.exists(vocab) and f"vocabulary: {vocab}: 600 pieces" in proc.stdout


@pytest.mark.parametrize("content", [b"", b"x", b"a b c d", TEXTWRAP, _stdlib("ast.py")])
def test_a_signature_is_datasketchs_minhash_of_the_shingles(content):
  from datasketch import MinHash  # pylint: disable=g-import-not-at-top
  minhash = MinHash(num_perm=near_duplicates.NUM_PERM, seed=near_duplicates.SEED,
                    scheme=near_duplicates.SCHEME, hashfunc=int)
  minhash.update_batch(near_duplicates.shingle_hashes(content).tolist())
  assert np.array_equal(minhash.hashvalues, near_duplicates.signature(content))


def test_pairs_are_kept_where_datasketchs_estimate_reaches_the_threshold():
  contents = [TEXTWRAP, VENDORED_TEXTWRAP, TEXTWRAP.replace(b"    ", b"  "), _stdlib("ast.py"),
              _stdlib("ast.py")[:20000]]
  signatures = [near_duplicates.signature(c) for c in contents]
  minhashes = [near_duplicates.as_minhash(s) for s in signatures]
  for threshold in (0.5, 0.85, 0.99):
    kept = {tuple(pair) for pair in near_duplicates._near_pairs(signatures, threshold)}
    expected = {(i, j) for i in range(len(contents)) for j in range(i + 1, len(contents))
                if minhashes[i].jaccard(minhashes[j]) >= threshold}
    assert kept == expected, threshold
  assert (0, 1) in expected and (0, 3) not in expected  # at 0.99: the planted pair still is


def test_band_buckets_are_datasketchs_lsh_buckets():
  """near_duplicates.band_keys (the in-process and the Beam build group files on them) against
  datasketch's MinHashLSH, which found the candidates before: the same buckets in every band."""
  from datasketch import MinHashLSH  # pylint: disable=g-import-not-at-top
  contents = [TEXTWRAP, VENDORED_TEXTWRAP, TEXTWRAP.replace(b"    ", b"  "), _stdlib("ast.py"),
              _stdlib("ast.py")[:20000], b"", b"x"]
  signatures = [near_duplicates.signature(c) for c in contents]
  for threshold in (0.5, 0.85):
    index = MinHashLSH(num_perm=near_duplicates.NUM_PERM,
                       params=near_duplicates.lsh_bands(threshold))
    for number, values in enumerate(signatures):
      index.insert(number, near_duplicates.as_minhash(values))
    for band, table in enumerate(index.hashtables):
      ours = collections.defaultdict(list)
      for number, values in enumerate(signatures):
        ours[near_duplicates.band_keys(values, threshold)[band]].append(number)
      assert sorted(ours.values()) == sorted(sorted(table.get(key)) for key in table.keys())
    assert any(len(members) > 1 for members in ours.values())


def test_lsh_bands_make_a_pair_at_the_threshold_a_candidate():
  for threshold in (0.5, 0.7, 0.85, 0.95):
    bands, rows = near_duplicates.lsh_bands(threshold)
    assert bands * rows <= near_duplicates.NUM_PERM
    assert 1 - (1 - threshold ** rows) ** bands >= near_duplicates.CANDIDATE_RECALL
    # and one row more would not: the fewest chance candidates that keep the recall
    more = near_duplicates.NUM_PERM // (rows + 1)
    assert 1 - (1 - threshold ** (rows + 1)) ** more < near_duplicates.CANDIDATE_RECALL
