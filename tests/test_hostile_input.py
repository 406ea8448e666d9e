"""Hostile input: what a stranger's repository, tree, archive or file can try, row by row.

Beside tests/test_bad_input.py (a user's own mistakes, one line each), these are inputs made
to do harm, each made by its real producer (git, GNU tar, Info-ZIP's zip, Python's zipfile, the
JSON a user would write) and handed to the entry point a user would hand it to. Every row checks:
  * no program of the input's ran (a marker file its hostile config or hook would write),
  * nothing from outside the input reached what was written (a secret beside the input),
  * the outcome: the one line that names the file and the problem and the exit status (or the
    input's good part built and the hostile part skipped, named and counted),
  * for the size rows, Python's memory (tracemalloc's peak) bounded far below the input's size.
REFERENCE.md, "What code_t5 trusts", says what is guaranteed; the git rows check first that
git itself, as the repository asks, would run the program (the trap is real).
"""

import dataclasses
import os
import stat
import subprocess
import tracemalloc
import zipfile
from typing import Callable, Optional

import pytest

from code_t5.data import tree_writer
from code_t5.modes import json_lines
from code_t5_session import lines
import flcc_git
from conftest import PYTHON, run_data_cli, run_forked

SECRET = b"SECRET_FROM_OUTSIDE_THE_INPUT"
GOOD = (b'"""A good module."""\n\ndef good(x):\n    return x + 1\n\n\n'
        b'def better(y):\n    return y * 2\n')
T0 = 1795370000


@dataclasses.dataclass
class Place:
  """A row's folders: `input` what is handed over, `outside` a folder beside it holding the
  secret, `out` where the library writes, `marker` what a hostile program would create."""
  tmp: str

  def __post_init__(self):
    for folder in (self.input, self.outside, self.out):
      os.makedirs(folder, exist_ok=True)
    with open(os.path.join(self.outside, "secret.py"), "wb") as f:
      f.write(b"token = '" + SECRET + b"'\n")
    with open(self.program, "w") as f:
      f.write(f"#!/bin/sh\ntouch {self.marker}\nexit 1\n")
    os.chmod(self.program, 0o755)

  input = property(lambda self: os.path.join(self.tmp, "input"))
  outside = property(lambda self: os.path.join(self.tmp, "outside"))
  out = property(lambda self: os.path.join(self.tmp, "out"))
  marker = property(lambda self: os.path.join(self.tmp, "MARKER"))
  program = property(lambda self: os.path.join(self.tmp, "hostile.sh"))

  def path(self, *parts):
    return os.path.join(self.input, *parts)


def _git(work, *args, date=None):
  return flcc_git.git(work, *args, date=date)


def _repository(place, *parts, content=GOOD, name="good.py"):
  """A git checkout under the input with one commit of `name`."""
  work = place.path(*parts)
  flcc_git.play_history(work, [{name: content}], first_time=T0)
  return work


def _repos_build(place):
  """The build of the input folder, with one plain repository beside the hostile one, so that
  the build has something to build and the row shows the hostile one skipped, not the build
  stopped."""
  _repository(place, "neighbour")
  return ["build", f"--repos_dir={place.input}"]


def _signing_trap(place, work):
  """The repository's config asks git to check signatures with the hostile program."""
  _git(work, "config", "log.showSignature", "true")
  _git(work, "config", "gpg.program", place.program)


def _signed_commit(work):
  """A commit with a `gpgsig` header (made by git's own hash-object), on main."""
  tree = _git(work, "rev-parse", "HEAD^{tree}").strip()
  parent = _git(work, "rev-parse", "HEAD").strip()
  text = (f"tree {tree}\nparent {parent}\nauthor A <a@example.com> {T0 + 60} +0000\n"
          f"committer A <a@example.com> {T0 + 60} +0000\n"
          "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n"
          " -----END PGP SIGNATURE-----\n\nsigned\n")
  commit = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--stdin"], cwd=work,
                          input=text.encode(), capture_output=True, check=True).stdout.decode()
  _git(work, "update-ref", "refs/heads/main", commit.strip())


def _assert_git_itself_runs_it(place, work, *args):
  """The trap is real: git, reading the repository as it asks, runs the program."""
  subprocess.run(["git", "-c", "safe.directory=*", *args], cwd=work, capture_output=True,
                 check=False, stdin=subprocess.DEVNULL, timeout=60)
  assert os.path.exists(place.marker), f"git {' '.join(args)} did not run the program"
  os.remove(place.marker)


def _module(name):
  return GOOD.replace(b"good", name.encode())


def gpg_program(place):
  work = _repository(place, "team", "signed", content=_module("signed"))
  _signed_commit(work)
  _signing_trap(place, work)
  _assert_git_itself_runs_it(place, work, "log", "-1")
  return _repos_build(place)


def partial_clone_fetch(place):
  work = _repository(place, "team", "partial", name="a.py")
  blob = _git(work, "rev-parse", "HEAD:a.py").strip()
  os.remove(os.path.join(work, ".git", "objects", blob[:2], blob[2:]))
  for key, value in [("core.repositoryformatversion", "1"),
                     ("extensions.partialclone", "origin"),
                     ("remote.origin.url", "file://" + place.outside),
                     ("remote.origin.promisor", "true"),
                     ("remote.origin.uploadpack", place.program)]:
    _git(work, "config", key, value)
  _assert_git_itself_runs_it(place, work, "cat-file", "-p", blob)
  return _repos_build(place)


def another_users_repository(place):
  if os.geteuid() != 0:
    pytest.skip("making a repository another user owns needs root")
  work = _repository(place, "team", "theirs", content=_module("theirs"))
  _signed_commit(work)
  _signing_trap(place, work)
  _git(work, "config", "core.fsmonitor", place.program)
  subprocess.run(["chown", "-R", "65534:65534", work], check=True)  # as `tar xf` as root
  return _repos_build(place)


def nested_bare_repository(place):
  source = os.path.join(place.tmp, "source")
  flcc_git.play_history(source, [{"bare.py": _module("bare")}], first_time=T0)
  _signed_commit(source)
  bare = place.path("unzipped", "deep", "project.git")
  subprocess.run(["git", "clone", "-q", "--bare", source, bare], check=True)
  _signing_trap(place, bare)
  _assert_git_itself_runs_it(place, bare, "log", "-1")
  return _repos_build(place)


def _outside_repository(place):
  work = os.path.join(place.outside, "repo")
  flcc_git.play_history(work, [{"secret.py": b"token = '" + SECRET + b"'\n"}], first_time=T0)
  return work


def gitdir_file_outside(place):
  outside = _outside_repository(place)
  os.makedirs(place.path("team", "pointer"))
  with open(place.path("team", "pointer", ".git"), "w") as f:
    f.write(f"gitdir: {outside}/.git\n")
  return _repos_build(place)


def git_link_outside(place):
  outside = _outside_repository(place)
  os.makedirs(place.path("team", "linked"))
  os.symlink(os.path.join(outside, ".git"), place.path("team", "linked", ".git"))
  return _repos_build(place)


def alternates_outside(place):
  outside = _outside_repository(place)
  subprocess.run(["git", "clone", "-q", "--shared", outside, place.path("team", "shared")],
                 check=True)  # objects/info/alternates names the outside store
  return _repos_build(place)


def _shared_clone(place):
  """`team/shared`, cloned with --shared from `team/base` beside it: its objects/info/alternates
  names base's object store, inside the folder."""
  base = _repository(place, "team", "base", content=_module("based"))
  subprocess.run(["git", "clone", "-q", "--shared", base, place.path("team", "shared")],
                 check=True)
  return base


def alternates_inside(place):
  _shared_clone(place)
  return _repos_build(place)


def alternate_store_with_a_link(place):
  base = _shared_clone(place)
  os.symlink(os.path.join(place.outside, "secret.py"),
             os.path.join(base, ".git", "objects", "pack", "pack-0.pack"))
  return _repos_build(place)


def shallow_clone(place):
  source = os.path.join(place.tmp, "source")
  flcc_git.play_history(source, [{"old.py": _module("old")}, {"new.py": _module("new")}],
                        first_time=T0)
  subprocess.run(["git", "clone", "-q", "--depth=1", f"file://{source}",
                  place.path("team", "shallow")], check=True, capture_output=True)
  return _repos_build(place)


def branch_linked_outside(place):
  work = _repository(place, "team", "branch", content=_module("branch"))
  head = os.path.join(place.outside, "head")
  with open(head, "w") as f:
    f.write(_git(work, "rev-parse", "HEAD"))
  branch = os.path.join(work, ".git", "refs", "heads", "main")
  os.remove(branch)
  os.symlink(head, branch)
  return _repos_build(place)


def big_git_blob(place):
  work = place.path("team", "big")
  flcc_git.play_history(work, [{"big.py": b"x = 0\n" * (8 << 20),  # 48 MB
                                "small.py": _module("small")}], first_time=T0)
  return _repos_build(place)


def _flcc_tree(place):
  """An FLCC tree of two repositories (the library's writer, as the fixtures are made)."""
  tree_writer.write_flcc_tree(place.input, {
      "alice/good": {"good.py": GOOD, "other.py": GOOD.replace(b"good", b"other")},
      "bob/hostile": {"victim.py": GOOD.replace(b"good", b"victim")}})
  [stored] = [os.path.join(d, f) for d, _, fs in os.walk(place.path("v3", "languages"))
              for f in fs if f.startswith("victim_")]
  return stored


def _tree_build(place):
  return ["build", f"--flcc_dir={place.input}"]


def tree_link_to_secret(place):
  stored = _flcc_tree(place)
  os.remove(stored)
  os.symlink(os.path.join(place.outside, "secret.py"), stored)
  return _tree_build(place)


def tree_link_to_dev_zero(place):
  stored = _flcc_tree(place)
  os.remove(stored)
  os.symlink("/dev/zero", stored)
  return _tree_build(place)


def tree_fifo(place):
  stored = _flcc_tree(place)
  os.remove(stored)
  os.mkfifo(stored)
  return _tree_build(place)


def tree_linked_stored_dir(place):
  stored = _flcc_tree(place)
  folder = os.path.dirname(stored)
  os.remove(stored)
  os.rmdir(folder)
  os.symlink(place.outside, folder)  # the secret lies there as secret.py
  return _tree_build(place)


def tree_huge_file(place):
  stored = _flcc_tree(place)
  with open(stored, "wb") as f:
    f.truncate(64 << 20)  # 64 MB read as zeros
  return _tree_build(place)


def tree_deep_paths_json(place):
  _flcc_tree(place)
  [paths] = [os.path.join(d, "paths.json") for d, _, fs in os.walk(place.path("v3"))
             if "paths.json" in fs and f"{os.sep}bob{os.sep}" in d]
  with open(paths, "w") as f:
    f.write("[" * 200_000 + "]" * 200_000)
  return _tree_build(place)


def _archive_build(place, archive, *flags):
  return ["build", f"--archive={archive}", f"--download_dir={place.out}/downloads", *flags]


def _tar(place, name, flags, members):
  """GNU tar's archive of `members` of the input folder."""
  archive = os.path.join(place.tmp, name)
  subprocess.run(["tar", *flags, "-f", archive, *members], cwd=place.input, check=True,
                 capture_output=True)
  return archive


def _tree_in(place, folder):
  tree_writer.write_flcc_tree(os.path.join(place.input, folder), {"alice/good": {"good.py": GOOD}})


def tar_dot_dot(place):
  _tree_in(place, "dataset")
  with open(place.path("escape.py"), "wb") as f:
    f.write(GOOD)
  # -P keeps the name as given: `dataset/../../escape.py` leaves the extraction folder.
  archive = _tar(place, "dotdot.tar", ["-cP"], ["dataset", "dataset/../../input/escape.py"])
  return _archive_build(place, archive)


def tar_link_then_through_it(place):
  _tree_in(place, "dataset")
  os.symlink(place.outside, place.path("dataset", "link"))
  # A link to the outside folder, then a file under the link's name: tar stores both, and an
  # extraction that makes the link writes the file outside (CVE-2025-4517's kind).
  archive = _tar(place, "link.tar", ["-c"], ["dataset", "dataset/link/secret.py"])
  return _archive_build(place, archive)


def tar_hard_link(place):
  _tree_in(place, "dataset")
  [good] = [os.path.join(d, f) for d, _, fs in os.walk(place.path("dataset")) for f in fs
            if f.endswith(".py")]
  os.link(good, good.replace("good_", "again_"))
  return _archive_build(place, _tar(place, "hard.tar", ["-c"], ["dataset"]))


def tar_device(place):
  if os.geteuid() != 0:
    pytest.skip("making a device node needs root")
  _tree_in(place, "dataset")
  os.mknod(place.path("dataset", "zero.py"), stat.S_IFCHR | 0o600, os.makedev(1, 5))
  return _archive_build(place, _tar(place, "device.tar", ["-c"], ["dataset"]))


def tar_sparse(place):
  _tree_in(place, "dataset")
  with open(place.path("dataset", "holes.py"), "wb") as f:
    f.seek(4 << 20)
    f.write(b"x = 1\n")
  return _archive_build(place, _tar(place, "sparse.tar", ["-c", "--sparse"], ["dataset"]))


def tar_gz_bomb(place):
  _tree_in(place, "dataset")
  with open(place.path("dataset", "bomb.py"), "wb") as f:
    f.write(b"\0" * (24 << 20))  # 24 MB of zeros: about 24 KB gzipped
  archive = _tar(place, "bomb.tar.gz", ["-cz"], ["dataset"])
  return _archive_build(place, archive, "--max_member_bytes=8000000")


def tar_too_much_in_all(place):
  _tree_in(place, "dataset")
  for i in range(4):
    with open(place.path("dataset", f"part{i}.py"), "wb") as f:
      f.write(b"\0" * (3 << 20))
  archive = _tar(place, "many.tar.gz", ["-cz"], ["dataset"])
  return _archive_build(place, archive, "--max_extracted_bytes=8000000")


def zip_dot_dot(place):
  archive = os.path.join(place.tmp, "dotdot.zip")
  with zipfile.ZipFile(archive, "w") as z:  # Python's zipfile keeps a name as given
    z.writestr("dataset/v3/repositories/a/b/c/paths.json", "{}")
    z.writestr("../../escape.py", GOOD)
  return _archive_build(place, archive)


def zip_symlink(place):
  _tree_in(place, "dataset")
  os.symlink(os.path.join(place.outside, "secret.py"), place.path("dataset", "secret.py"))
  archive = os.path.join(place.tmp, "link.zip")
  subprocess.run(["zip", "-q", "-r", "--symlinks", archive, "dataset"], cwd=place.input,
                 check=True)
  return _archive_build(place, archive)


@dataclasses.dataclass
class Row:
  """`make(place)` builds the input and returns the data CLI's arguments (a build into
  place.out), or is a `check(place)` of its own. `says`: a line the run prints (the error, or
  the warning naming what was skipped); `stored`: text the dataset must hold (the good part);
  `peak`: Python's peak memory in bytes during the run, at the most."""
  name: str
  make: Callable
  says: Callable[[Place], str]
  code: int = 0
  stored: Optional[bytes] = GOOD.splitlines()[0]
  peak: Optional[int] = None


_SKIPPED = " (repository skipped)"


ROWS = [
    Row("a repository's gpg.program under log.showSignature", gpg_program,
        lambda p: "wrote the FLCC tree of", stored=b'"""A signed module."""'),
    Row("a partial clone's lazy fetch through remote.uploadpack", partial_clone_fetch,
        lambda p: f"{p.path('team', 'partial')}: git ls-tree: a.py"),
    Row("another user's repository with a hostile config", another_users_repository,
        lambda p: "wrote the FLCC tree of", stored=b'"""A theirs module."""'),
    Row("a bare repository nested in a plain folder, hostile config", nested_bare_repository,
        lambda p: "wrote the FLCC tree of", stored=b'"""A bare module."""'),
    Row("a .git file naming a git dir outside", gitdir_file_outside,
        lambda p: f"{p.path('team', 'pointer')}: {p.outside}/repo/.git: outside {p.input}"
                  + _SKIPPED),
    Row("a .git link to a git dir outside", git_link_outside,
        lambda p: f"{p.path('team', 'linked')}: {p.path('team', 'linked', '.git')}: a symbolic "
                  "link (git's files are read only where they lie)" + _SKIPPED),
    Row("alternates naming an object store outside", alternates_outside,
        lambda p: f"{p.path('team', 'shared', '.git', 'objects', 'info', 'alternates')}: names "
                  f"{p.outside}/repo/.git/objects, outside {p.input}" + _SKIPPED),
    Row("a shared clone whose alternates lie inside the folder", alternates_inside,
        lambda p: "wrote the FLCC tree of", stored=b'"""A based module."""'),
    Row("a link in the object store an alternate names", alternate_store_with_a_link,
        lambda p: f"{p.path('team', 'shared')}: "
                  f"{p.path('team', 'base', '.git', 'objects', 'pack', 'pack-0.pack')}: "
                  "a symbolic link in the object store" + _SKIPPED),
    Row("a shallow clone (read as its history is: the shallow list is data)", shallow_clone,
        lambda p: "wrote the FLCC tree of", stored=b'"""A new module."""'),
    Row("a branch that is a link to a file outside", branch_linked_outside,
        lambda p: f"{p.path('team', 'branch', '.git', 'refs', 'heads', 'main')}: a symbolic "
                  "link (git's files are read only where they lie)" + _SKIPPED),
    Row("a 48 MB git blob", big_git_blob,
        lambda p: "left out of the stored repositories: files over max_file_bytes 1",
        stored=b'"""A small module."""', peak=16 << 20),
    Row("a stored file linked to a secret outside the tree", tree_link_to_secret,
        lambda p: ": a symbolic link; not read"),
    Row("a stored file linked to /dev/zero", tree_link_to_dev_zero,
        lambda p: ": a symbolic link; not read", peak=16 << 20),
    Row("a stored file that is a FIFO", tree_fifo, lambda p: ": not a regular file; not read"),
    Row("a stored dir linked outside the tree", tree_linked_stored_dir,
        lambda p: ": a symbolic link, or below one: the tree is read only where it lies"
                  + _SKIPPED.replace(")", "; --strict stops instead)")),
    Row("a 64 MB stored file", tree_huge_file, lambda p: "files_skipped: too large",
        peak=16 << 20),
    Row("a paths.json nested 200,000 deep", tree_deep_paths_json,
        lambda p: "paths.json: not valid JSON (nested too deeply)"
                  + _SKIPPED.replace(")", "; --strict stops instead)")),
    Row("a tar member named ../..", tar_dot_dot,
        lambda p: "member 'dataset/../../input/escape.py' would be written outside the "
                  "extraction folder; refused", code=1, stored=None),
    Row("a tar link, then a file through it", tar_link_then_through_it,
        lambda p: "member 'dataset/link' is a symbolic link; an FLCC archive holds regular "
                  "files and folders only", code=1, stored=None),
    Row("a tar hard link", tar_hard_link, lambda p: "is a hard link; an FLCC archive holds",
        code=1, stored=None),
    Row("a tar device member", tar_device, lambda p: "member 'dataset/zero.py' is a device",
        code=1, stored=None),
    Row("a tar sparse member", tar_sparse, lambda p: "member 'dataset/holes.py' is a sparse file",
        code=1, stored=None),
    Row("a .tar.gz member that unpacks to 24 MB", tar_gz_bomb,
        lambda p: "member 'dataset/bomb.py' unpacks to more than 8000000 bytes "
                  "(--max_member_bytes)", code=1, stored=None, peak=16 << 20),
    Row("a .tar.gz that unpacks to 12 MB in all", tar_too_much_in_all,
        lambda p: "unpacks to more than 8000000 bytes (--max_extracted_bytes)", code=1,
        stored=None),
    Row("a zip member named ../..", zip_dot_dot,
        lambda p: "member '../../escape.py' would be written outside the extraction folder",
        code=1, stored=None),
    Row("a zip symlink", zip_symlink,
        lambda p: "member 'dataset/secret.py' is a symbolic link", code=1, stored=None),
]


def _written(place):
  """Every byte written under `out` (the tree, the download folder, the dataset)."""
  for folder, _, names in os.walk(place.out):
    for name in names:
      path = os.path.join(folder, name)
      if os.path.isfile(path) and not os.path.islink(path):
        with open(path, "rb") as f:
          yield path, f.read()


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_hostile_input_stays_data(row, tmp_path):
  place = Place(str(tmp_path))
  args = row.make(place)
  tracemalloc.start()
  try:
    proc = run_data_cli(*args, f"--data_dir={place.out}/tfds", "--ratios=1,0,0",
                        "--near_duplicates=off", check=False)
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  output = proc.stdout + proc.stderr
  assert not os.path.exists(place.marker), "a program of the input's ran"
  written = dict(_written(place))
  assert not [path for path, data in written.items() if SECRET in data], "the secret got in"
  assert not [p for p in written if "escape" in os.path.basename(p)]
  assert not os.path.exists(os.path.join(place.tmp, "input", "..", "escape.py"))
  assert "Traceback" not in output, output[-3000:]
  assert proc.returncode == row.code, output[-3000:]
  if row.code:
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("code_t5.data build: error: ") and row.says(place) in last, last
    assert not os.path.exists(os.path.join(place.out, "tfds", "flcc"))
  else:
    assert row.says(place) in output, output[-3000:]
  if row.stored is not None:
    assert any(row.stored in data for path, data in written.items() if ".tfrecord" in path), (
        "the good part was not built")
  if row.peak is not None:
    assert peak < row.peak, f"Python's peak {peak / 2**20:.1f} MB"


# Rows of other entry points: infer's and score's JSON lines, the copy rules, a session export.


def _json_lines(tmp_path, data):
  path = tmp_path / "prefixes.jsonl"
  path.write_bytes(data)
  with pytest.raises(json_lines.PrefixFileError) as error:
    json_lines.read_records(str(path))
  return str(path), str(error.value)


def test_a_json_line_that_is_no_utf8_is_named_with_its_number(tmp_path):
  path, message = _json_lines(tmp_path, b'{"prefix": "a"}\n{"prefix": "\xff\xfe"}\n')
  assert message == f"{path}:2: not UTF-8 (byte 13 of the line)"


def test_a_json_line_nested_past_the_recursion_limit_is_named_with_its_number(tmp_path):
  path, message = _json_lines(tmp_path, b'{"prefix": "a"}\n' + b"[" * 100_000 + b"]" * 100_000)
  assert message == f'{path}:2: expected a JSON object {{"prefix": "..."}}'


def test_a_json_line_past_its_bound_is_refused_unread(tmp_path, monkeypatch):
  monkeypatch.setattr(json_lines, "MAX_LINE_BYTES", 1000)
  data = b'{"prefix": "a"}\n' + b" " * (16 << 20)
  tracemalloc.start()
  try:
    path, message = _json_lines(tmp_path, data)
    peak = tracemalloc.get_traced_memory()[1]
  finally:
    tracemalloc.stop()
  assert message == f"{path}:2: a line of over 1000 bytes"
  assert peak < 4 << 20, peak  # a chunk read at a time, not the 16 MB line


def test_the_copy_rules_work_is_bounded_on_any_file(monkeypatch):
  """A file of 4,096 alike lines of 4,000 characters: copy-next compares at most
  MAX_COMPARISONS line pairs, each of at most MAX_LINE_CHARS characters (186 s a suggestion
  before the bounds), and the consensus compares its candidates so too."""
  compared = []
  similarity = lines.line_similarity
  monkeypatch.setattr(lines, "line_similarity", lambda a, b: (
      compared.append((len(a), len(b))), similarity(a, b))[1])
  long_line = "value = [" + ", ".join(str(i) for i in range(900)) + "]"
  prefix = "\n".join(long_line[:-len(str(i))] + str(i) for i in range(4096)) + "\nval"
  lines.copy_next_line(prefix)
  assert 0 < len(compared) <= lines.MAX_COMPARISONS
  assert max(max(pair) for pair in compared) <= lines.MAX_LINE_CHARS
  compared.clear()
  lines.consensus_line(prefix, [long_line, long_line + "1"], [-1.0, -2.0])
  assert compared and max(max(pair) for pair in compared) <= lines.MAX_LINE_CHARS


def test_a_decoding_lengths_gin_in_the_working_folder_changes_no_export(tmp_path):
  """A session export parses the decoding's lengths from gin_configs/, never a file of that
  name where it runs (a received repository's folder, say)."""
  (tmp_path / "decoding_lengths.gin").write_text("code_t5.window_stride.tokens = 999\n")
  script = tmp_path / "parse.py"
  script.write_text(
      "import os, sys\n"
      f"os.chdir({str(tmp_path)!r})\n"
      "import gin\n"
      "from code_t5 import session_export\n"
      "session_export._parse_gin(['models/causal_lm_dev.gin'],\n"
      "                          [\"MIXTURE_NAME = 'flcc_python_causal'\"])\n"
      "print('stride', gin.query_parameter('code_t5.window_stride.tokens'))\n")
  proc = run_forked([PYTHON, str(script)])
  assert proc.returncode == 0, proc.stderr[-3000:]
  stride = proc.stdout.split("stride", 1)[1].strip()
  assert stride != "999" and stride, proc.stdout
