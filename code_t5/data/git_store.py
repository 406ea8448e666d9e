"""git run on a received repository's objects alone: its data is read, nothing of it runs.

A repository someone else made is data. Its own config can name programs that git runs while
reading it (`gpg.program` under `log.showSignature`, `remote.<name>.uploadpack` for a partial
clone's lazy fetch, `core.fsmonitor`, filters, pagers), and its `.git` file, `.git` link or
`objects/info/alternates` can lead git to another repository's objects outside the folder it
was handed. So git never opens the repository as a repository here:

* each call runs in a scratch git dir of our own (its config: two lines) with the
  repository's object store as `GIT_OBJECT_DIRECTORY`. No config, hook, attribute, remote or
  ref of the repository's is ever read by git; the system's and the user's config are left out
  too (`GIT_CONFIG_NOSYSTEM`, `GIT_CONFIG_GLOBAL=/dev/null`), so that output is the same on
  every machine. With no promisor remote in force, a missing object is an error, never a
  fetch. Ownership does not matter (git's `safe.directory` guards a repository's config, and
  none is read).
* HEAD is resolved here, in Python, from HEAD and refs/ or packed-refs (each file read to a
  bound), and git is given the commit id.
* what git will still read of the repository -- the object store, its alternates, the
  `shallow` list -- must lie inside the folder given (`root`), with no link on the way:
  `Outside` otherwise.

The cost: one scratch folder per repository (three small files), and the reads of HEAD, the
refs and the object store's listing. tests/test_hostile_input.py holds each case to a marker
file that must not appear.
"""

import os
import re
import shutil
import subprocess
import tempfile
from typing import List, Optional

from code_t5.data import received

# A ref file, HEAD, `commondir`, `.git`'s `gitdir:` line: a line, never megabytes.
SMALL_FILE_BYTES = 4096
# packed-refs and shallow: a line a ref or commit; a repository of a million refs fits.
LIST_FILE_BYTES = 256 << 20
# Symbolic refs followed from HEAD before giving up (git's own limit is 5).
SYMREF_DEPTH = 5
# Alternates followed from the object store (git's own limit is 5).
ALTERNATES_DEPTH = 5
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_SCRATCH_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tbare = true\n"


class GitStoreError(Exception):
  """The repository cannot be read as data; the message names the file."""


class Outside(GitStoreError):
  """What git would read lies outside the folder given, or behind a link."""


class NoCommit(GitStoreError):
  """HEAD names no commit (a repository with none yet)."""


def _inside(path: str, root: str) -> bool:
  real, top = os.path.realpath(path), os.path.realpath(root)
  return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def _no_links_below(path: str, root: str) -> None:
  """Every folder from `root` down to `path`, and `path` itself, is no symbolic link."""
  relative = os.path.relpath(path, root)
  if relative == os.pardir or relative.startswith(os.pardir + os.sep):
    raise Outside(f"{path}: outside {root}")
  link = received.first_link(path, root)
  if link is not None:
    raise Outside(f"{link}: a symbolic link (git's files are read only where they lie)")


def read_small(path: str, limit: int = SMALL_FILE_BYTES) -> Optional[bytes]:
  """A regular file's bytes, at most `limit` (GitStoreError past it), or None where there is
  no such file (received.read_bounded: no link followed, no FIFO waited on)."""
  try:
    data = received.read_bounded(path, limit)
  except FileNotFoundError:
    return None
  except received.IsLink:
    raise Outside(f"{path}: a symbolic link (git's files are read only where they lie)") \
        from None
  except received.NotRegular as e:
    raise GitStoreError(f"{path}: {e.strerror}") from None
  except OSError as e:
    raise GitStoreError(f"{path}: unreadable ({e.strerror or e})") from None
  if len(data) > limit:
    raise GitStoreError(f"{path}: over {limit} bytes")
  return data


class GitStore:
  """One repository's object store, for reading with git (`run`). `git_dir` is its git dir as
  found (a checkout's `.git`, the `gitdir:` a `.git` file names, or a bare repository);
  `root` the folder the repositories were handed in, which nothing read may leave."""

  def __init__(self, git_dir: str, root: str):
    self.root = root
    _no_links_below(git_dir, root)
    self.git_dir = git_dir
    common = read_small(os.path.join(git_dir, "commondir"))  # a worktree's: the main git dir
    self.common_dir = (os.path.normpath(os.path.join(git_dir, common.decode("utf-8", "replace")
                                                     .strip()))
                       if common else git_dir)
    self.objects = os.path.join(self.common_dir, "objects")
    if not os.path.isdir(self.objects):
      raise GitStoreError(f"{git_dir}: not a git repository (no objects/ in {self.common_dir})")
    for folder in (self.common_dir, self.objects):
      if not _inside(folder, root):
        raise Outside(f"{git_dir}: its object store {folder} lies outside {root}")
      _no_links_below(folder, root)
    self._check_object_store(self.objects)
    self._check_alternates(self.objects, 0)
    # git reads the shallow list from its git dir: copied into ours (commit ids, a line each).
    self._shallow = read_small(os.path.join(self.common_dir, "shallow"), LIST_FILE_BYTES)
    self._scratch = None

  def _check_alternates(self, objects: str, depth: int) -> None:
    """git reads `objects/info/alternates` (other object stores, a line each) and theirs in
    turn: each must lie inside root."""
    path = os.path.join(objects, "info", "alternates")
    data = read_small(path, LIST_FILE_BYTES)
    if not data:
      return
    if depth >= ALTERNATES_DEPTH:
      raise Outside(f"{path}: alternates nested deeper than {ALTERNATES_DEPTH}")
    for line in data.decode("utf-8", "replace").splitlines():
      line = line.strip()
      if not line or line.startswith("#"):
        continue
      other = os.path.normpath(os.path.join(objects, line))
      if not _inside(other, self.root):
        raise Outside(f"{path}: names {line}, outside {self.root}")
      _no_links_below(other, self.root)
      self._check_object_store(other)
      self._check_alternates(other, depth + 1)

  @staticmethod
  def _check_object_store(objects: str) -> None:
    """No link anywhere in an object store (a pack or loose object linked to another
    repository's, or to /dev/zero): listed, not read."""
    folders = [objects]
    while folders:
      try:
        entries = list(os.scandir(folders.pop()))
      except OSError as e:
        raise GitStoreError(f"{e.filename}: cannot be listed ({e.strerror or e})") from None
      for entry in entries:  # (the folder's own listing says what each is: no stat a file)
        if entry.is_symlink():
          raise Outside(f"{entry.path}: a symbolic link in the object store")
        if entry.is_dir(follow_symlinks=False):
          folders.append(entry.path)

  def _ref(self, name: str) -> Optional[str]:
    """What ref `name` (refs/heads/main, HEAD) holds: an object id, `ref: ...`, or None."""
    # HEAD and a worktree's own refs lie in its git dir; branches in the common one.
    for folder in dict.fromkeys((self.git_dir, self.common_dir)):
      data = read_small(os.path.join(folder, *name.split("/")))
      if data is not None:
        return data.decode("utf-8", "replace").strip()
    packed = read_small(os.path.join(self.common_dir, "packed-refs"), LIST_FILE_BYTES)
    for line in (packed or b"").decode("utf-8", "replace").splitlines():
      parts = line.split(" ", 1)
      if len(parts) == 2 and parts[1].strip() == name and _OBJECT_ID.fullmatch(parts[0]):
        return parts[0]
    return None

  def head(self) -> str:
    """The object id HEAD names, resolved here (NoCommit where its branch has none yet)."""
    name = "HEAD"
    for _ in range(SYMREF_DEPTH + 1):
      value = self._ref(name)
      if value is None:
        if name == "HEAD":
          raise GitStoreError(f"{self.git_dir}: no HEAD")
        raise NoCommit(f"{self.git_dir}: HEAD's {name} has no commit")
      if _OBJECT_ID.fullmatch(value):
        return value
      if not value.startswith("ref:"):
        raise GitStoreError(f"{self.git_dir}: {name} holds neither an object id nor a ref")
      name = value[len("ref:"):].strip()
      if not name.startswith("refs/") or ".." in name.split("/"):
        raise GitStoreError(f"{self.git_dir}: HEAD names {name!r}, not a ref under refs/")
    raise GitStoreError(f"{self.git_dir}: refs nested deeper than {SYMREF_DEPTH}")

  def _scratch_dir(self) -> str:
    """Our own git dir for the calls: its config ours, the repository's shallow list in it."""
    if self._scratch is None:
      scratch = tempfile.mkdtemp(prefix="code_t5_git_")
      os.makedirs(os.path.join(scratch, "refs"))
      os.makedirs(os.path.join(scratch, "objects"))
      with open(os.path.join(scratch, "HEAD"), "w") as f:
        f.write("ref: refs/heads/main\n")
      with open(os.path.join(scratch, "config"), "w") as f:
        f.write(_SCRATCH_CONFIG)
      if self._shallow:
        with open(os.path.join(scratch, "shallow"), "wb") as f:
          f.write(self._shallow)
      self._scratch = scratch
    return self._scratch

  def run(self, args: List[str], stdin: Optional[bytes] = None) -> subprocess.CompletedProcess:
    """git ARGS on the object store alone, as described above."""
    scratch = self._scratch_dir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_DIR=scratch, GIT_OBJECT_DIRECTORY=os.path.realpath(self.objects),
               GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_NO_REPLACE_OBJECTS="1",
               GIT_NO_LAZY_FETCH="1", GIT_TERMINAL_PROMPT="0", GIT_ATTR_NOSYSTEM="1",
               HOME=scratch, XDG_CONFIG_HOME=scratch, LC_ALL="C")
    return subprocess.run(["git", "-c", "core.quotePath=false", *args], input=stdin,
                          capture_output=True, check=False, env=env, cwd=scratch)

  def close(self) -> None:
    if self._scratch is not None:
      shutil.rmtree(self._scratch, ignore_errors=True)
      self._scratch = None

  def __enter__(self):
    return self

  def __exit__(self, *exc):
    self.close()
