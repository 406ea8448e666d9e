"""A folder of one's own repositories as an FLCC v3 tree: `build --repos_dir=DIR`.

Every git repository under DIR (a checkout, or a bare repository as `git clone --mirror` and
git servers keep them) becomes one FLCC repository, stored as FLCC stored GitHub's: the files
of HEAD (`git ls-tree`, contents by `git cat-file`), each named with the time of the last
commit that touched it, and METADATA as `git log --pretty=%ct --name-status
--diff-filter=ACDMR` writes it. Its folder is the hash of its first commit, its author/repo
the repository's place under DIR (`team/service` -> author `team`, repo `service`; a bare
`team/service.git` likewise; a repository right under DIR has author `local`). A folder that
holds no git repository is one repository of its files (hidden folders left out) with their
modification times. Files of every language FLCC knows are stored (by extension); the build
picks its --language.

What one repository cannot give -- git fails on it (a broken `.git`, no commit), or it holds no
source file of a known language -- is named once, skipped and counted, as a tree build does
with a malformed repository. The tree is written whole and renamed into place, with a
manifest of each repository's state (its HEAD commit, or its files' sizes and times): a rerun
on unchanged repositories reuses it, a change rewrites it.

Every repository is data (`git_store`): git reads its objects from a scratch git dir of ours,
never its config, hooks or remotes, so nothing it names runs; its git dir, object store and
alternates must lie inside DIR with no link on the way; a blob over --max_file_bytes is left out
by the size git lists, before it is read; a plain folder's files are read only where they are
regular files, to a bound.

git needs the checkouts on local disk: DIR is local (`gs://` is for data dirs, not here).
"""

import collections
import contextlib
import glob
import hashlib
import itertools
import json
import os
import shutil
from typing import Dict, Iterator, List, NamedTuple, Optional, Tuple

from tqdm import tqdm

from code_t5 import files as files_lib
from code_t5.data import flcc
from code_t5.data import git_store
from code_t5.data import received
from code_t5.data import tree_writer

log = flcc.log
MANIFEST = flcc.REPOSITORIES_MANIFEST
GIT_LOG_METADATA = ("log", "--pretty=%ct", "--name-status", "--diff-filter=ACDMR")
LOCAL_AUTHOR = "local"
# Why a repository of DIR was not stored.
GIT_FAILED = "git failed"
NO_COMMITS = "no commits"
NO_SOURCE_FILES = "no source files"
UNREADABLE_FOLDER = "unreadable folder"
# Its git dir, object store or alternates lie outside DIR, or behind a link (git_store.Outside).
REACHES_OUTSIDE = "reaches outside DIR"
# A second copy of a stored repository: the same author/repo and first commit (`team/service`
# beside its `git clone --bare`, `team/service.git`). The tree has one place for the two.
STORED_ALREADY = "stored already"
SKIP_REASONS = (GIT_FAILED, NO_COMMITS, NO_SOURCE_FILES, UNREADABLE_FOLDER, REACHES_OUTSIDE,
                STORED_ALREADY)
# Why an entry of a stored repository was not stored: a link to a source file (its target is
# stored where it lies in the repository, if there), a submodule (a repository of its own:
# put its checkout in DIR to store it), a file the folder's reader could not open or that is no
# regular file (a FIFO, a device), a file over --max_file_bytes (left out by its size, unread).
LINKS = "symbolic links"
SUBMODULES = "submodules"
UNREADABLE_FILES = "unreadable files"
TOO_LARGE = "files over max_file_bytes"
LEFT_OUT_REASONS = (LINKS, SUBMODULES, UNREADABLE_FILES, TOO_LARGE)


class RepositoriesError(Exception):
  """DIR itself cannot be read as a folder of repositories."""


class Skipped(Exception):
  """One repository cannot be stored; `reason` is one of SKIP_REASONS."""

  def __init__(self, reason: str, message: str):
    super().__init__(message)
    self.reason = reason


class Found(NamedTuple):
  """A repository of DIR: its place under DIR (path parts), its folder, git or a plain one,
  for git whether the folder is the git dir itself (a bare repository), and DIR (`root`),
  which nothing read of it may leave."""
  parts: Tuple[str, ...]
  path: str
  is_git: bool
  bare: bool = False
  root: str = ""

  @property
  def author_and_repo(self) -> Tuple[str, str]:
    *owner, repo = self.parts
    if self.bare and repo.endswith(".git") and len(repo) > len(".git"):
      repo = repo[:-len(".git")]  # `service.git`, as `git clone --bare` names it: `service`
    return ("__".join(owner) or LOCAL_AUTHOR), repo

  @property
  def git_dir(self) -> str:
    """The folder itself (bare), its `.git` folder, or the folder a `.git` file names."""
    if self.bare:
      return self.path
    dot_git = os.path.join(self.path, ".git")
    if os.path.isfile(dot_git) and not os.path.islink(dot_git):
      text = (git_store.read_small(dot_git) or b"").decode("utf-8", "replace").strip()
      if text.startswith("gitdir:"):
        return os.path.normpath(os.path.join(self.path, text[len("gitdir:"):].strip()))
    return dot_git


def _is_bare(path: str) -> bool:
  """A bare repository (`git clone --bare` or `--mirror`, a git server's storage): its git dir
  is the folder itself, HEAD, objects/ and refs/ right in it, and there is no checkout."""
  return (os.path.isfile(os.path.join(path, "HEAD")) and
          os.path.isdir(os.path.join(path, "objects")) and
          os.path.isdir(os.path.join(path, "refs")))


def _is_git(path: str) -> bool:
  """A bare repository, a folder with a `.git` folder, or a `.git` file (a submodule's or
  worktree's) naming a git folder that is there. A submodule copied without its parent's
  `.git/modules` (as source archives hold them) is a plain folder of files."""
  if _is_bare(path):
    return True
  dot_git = os.path.join(path, ".git")
  if not os.path.isfile(dot_git) or os.path.islink(dot_git):
    return os.path.lexists(dot_git)
  try:
    with open(dot_git, encoding="utf-8", errors="replace") as f:
      text = f.read(4096).strip()
  except OSError:
    return True  # git will say what is wrong with it
  if not text.startswith("gitdir:"):
    return True
  return os.path.isdir(os.path.join(path, text[len("gitdir:"):].strip()))


def _is_source(name: str) -> bool:
  return os.path.splitext(name)[1] in tree_writer.EXTENSION_LANGUAGE


def _listed(path: str):
  """The folder's visible subfolders and its files, sorted by name (links not followed)."""
  try:
    entries = sorted(os.scandir(path), key=lambda e: e.name)
  except OSError as e:
    raise RepositoriesError(f"{path}: cannot be listed ({e.strerror or e})") from None
  dirs = [e for e in entries if e.is_dir(follow_symlinks=False) and not e.name.startswith(".")]
  return dirs, [e for e in entries if e.is_file(follow_symlinks=False)]


def _scan(path: str, parts: Tuple[str, ...], root: str) -> Tuple[str, List[Found]]:
  """What the folder at `path` is -- "git" (a repository), "folder" (a repository of its files)
  or "container" (a folder of repositories, like an owner's) -- and the repositories in it.

  A container holds no source file of its own and some git repository or container below.
  So `team/` holding `service/.git` is a container, and a project with a vendored submodule
  deep inside (`pkg/tests/data/.git`) is one folder repository, not split in pieces."""
  if _is_git(path):
    return "git", [Found(parts, path, True, _is_bare(path), root)]
  dirs, loose = _listed(path)
  if any(_is_source(e.name) for e in loose):
    return "folder", [Found(parts, path, False, root=root)]
  inside = [_scan(e.path, parts + (e.name,), root) for e in dirs]
  if any(kind != "folder" for kind, _ in inside):
    return "container", [repo for _, repos in inside for repo in repos]
  return "folder", [Found(parts, path, False, root=root)]


def find(repos_dir: str) -> Tuple[List[Found], List[str]]:
  """The repositories under `repos_dir` (`_scan`: each folder right under it is a git
  repository, a folder repository or a container of more), in sorted order, and the source
  files that lie right in `repos_dir`, outside any of them."""
  if not os.path.isdir(repos_dir):
    raise RepositoriesError(f"{repos_dir}: no such directory")
  if _is_git(repos_dir):
    return [Found((os.path.basename(os.path.abspath(repos_dir)),), repos_dir, True,
                  _is_bare(repos_dir), repos_dir)], []
  dirs, loose = _listed(repos_dir)
  found = [repo for e in dirs for repo in _scan(e.path, (e.name,), repos_dir)[1]]
  if not found:
    raise RepositoriesError(f"{repos_dir}: holds no repository: put each one's checkout (or a "
                            "folder of its files) in it")
  return found, [e.path for e in loose if _is_source(e.name)]


@contextlib.contextmanager
def _store(repo: Found) -> Iterator[git_store.GitStore]:
  """The repository's object store for git to read as data (git_store); what cannot be read
  so is Skipped."""
  try:
    store = git_store.GitStore(repo.git_dir, repo.root or os.path.dirname(repo.path))
  except git_store.Outside as e:
    raise Skipped(REACHES_OUTSIDE, f"{repo.path}: {e}") from None
  except git_store.GitStoreError as e:
    raise Skipped(GIT_FAILED, f"{repo.path}: {e}") from None
  try:
    yield store
  finally:
    store.close()


def _git(repo: Found, store: git_store.GitStore, *args: str,
         stdin: Optional[bytes] = None) -> bytes:
  proc = store.run(list(args), stdin=stdin)
  if proc.returncode:
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["(no message)"]
    raise Skipped(GIT_FAILED, f"{repo.path}: git {args[0]} failed: {lines[-1]}")
  return proc.stdout


def _head(repo: Found, store: git_store.GitStore) -> str:
  """HEAD's commit: resolved by git_store, checked to be a commit git can read."""
  try:
    head = store.head()
  except git_store.NoCommit:
    raise Skipped(NO_COMMITS, f"{repo.path}: a git repository with no commit") from None
  except git_store.Outside as e:  # a ref that is a link
    raise Skipped(REACHES_OUTSIDE, f"{repo.path}: {e}") from None
  except git_store.GitStoreError as e:
    raise Skipped(GIT_FAILED, f"{repo.path}: {e}") from None
  return _git(repo, store, "rev-parse", "--verify", f"{head}^{{commit}}").decode().strip()


def _last_changed(commits) -> Dict[str, int]:
  """Each path's time of the newest commit that added, changed, copied or renamed it to
  there, from METADATA's commits (newest first)."""
  times = {}
  for time, changes in commits:
    for change in changes:
      if change[0][0] in "ACMR":
        times.setdefault(change[-1], time)
  return times


# What one `git cat-file --batch` call reads: a repository's content is read and written this
# many files, and about this many bytes, at a time, never held whole (a monorepo can hold
# gigabytes of source, generated bundles of megabytes each among it: 120 files of 4 MB read in
# one call took 920 MB above the imports).
BLOBS_PER_CALL = 500
BYTES_PER_CALL = 32 << 20


def _calls(entries: List[Tuple[str, str, int]]) -> Iterator[List[Tuple[str, str, int]]]:
  """`entries` (object id, path, size) in the runs one call reads: at most BLOBS_PER_CALL files,
  and no more than BYTES_PER_CALL bytes but where one file alone has more."""
  run, size = [], 0
  for entry in entries:
    if run and (len(run) == BLOBS_PER_CALL or size + entry[2] > BYTES_PER_CALL):
      yield run
      run, size = [], 0
    run.append(entry)
    size += entry[2]
  if run:
    yield run


def _blobs(repo: Found, store: git_store.GitStore, entries: List[Tuple[str, str, int]]
           ) -> Iterator[Tuple[str, bytes]]:
  """(path, content) of each (object id, path, size), read by `git cat-file --batch`, a few
  at a time (`_calls`)."""
  for chunk in _calls(entries):
    out = _git(repo, store, "cat-file", "--batch",
               stdin="".join(f"{oid}\n" for oid, _, _ in chunk).encode("ascii"))
    offset = 0
    for oid, path, _ in chunk:
      header_end = out.index(b"\n", offset)
      header = out[offset:header_end].split()
      if len(header) != 3:  # "<oid> missing": a damaged object store
        raise Skipped(GIT_FAILED, f"{repo.path}: git cat-file: {path} ({oid}) is missing")
      size = int(header[2])
      yield path, out[header_end + 1:header_end + 1 + size]
      offset = header_end + 1 + size + 1


def read_git(repo: Found, left_out: Optional[collections.Counter] = None,
             max_file_bytes: int = flcc.Filters.max_file_bytes):
  """(init hash, METADATA, an iterator of (path, content, time)) of HEAD of a git repository,
  the contents read as the iterator is (git can still fail then: Skipped); what of HEAD is not
  stored is counted in `left_out` by reason (LEFT_OUT_REASONS)."""
  left_out = collections.Counter() if left_out is None else left_out
  with contextlib.ExitStack() as opened:
    store = opened.enter_context(_store(repo))
    head = _head(repo, store)
    roots = _git(repo, store, "rev-list", "--max-parents=0", head).decode().split()
    metadata = _git(repo, store, *GIT_LOG_METADATA, head).decode("utf-8", "replace")
    times = _last_changed(flcc.parse_metadata(metadata, repo.git_dir))
    head_time = int(_git(repo, store, "log", "-1", "--pretty=%ct", head).decode().strip())
    wanted = _head_files(repo, store, head, left_out, max_file_bytes)
    # The store stays open until its blobs are read (or the iterator is dropped).
    blobs = _blobs_closing(repo, opened.pop_all(), store, wanted)
  stored = ((path, content, times.get(path, head_time))
            for path, content in blobs)  # read as it is written
  return roots[-1], metadata, stored


def _blobs_closing(repo, opened, store, wanted):
  with opened:
    yield from _blobs(repo, store, wanted)


def _head_files(repo: Found, store: git_store.GitStore, head: str,
                left_out: collections.Counter, max_file_bytes: int) -> List[Tuple[str, str, int]]:
  """(object id, path, size) of HEAD's source files to read; the rest counted by reason."""
  wanted = []
  # -l: each blob's size, so that a call reads a bounded number of bytes (`_calls`).
  for line in _git(repo, store, "ls-tree", "-r", "-z", "-l", "--full-tree", head).split(b"\0"):
    if not line:
      continue
    meta, path = line.split(b"\t", 1)
    mode, kind, oid, size = meta.decode().split()  # a submodule's size is "-"
    path = path.decode("utf-8", "replace")
    # Regular files only: links (120000) and submodules (commit) hold no code of their own.
    if kind == "commit":
      left_out[SUBMODULES] += 1
    elif _is_source(path):
      if kind == "blob" and mode in ("100644", "100755"):
        if not size.isdigit():  # "BAD": ls-tree found no such object
          raise Skipped(GIT_FAILED, f"{repo.path}: git ls-tree: {path} ({oid}) is missing")
        if int(size) > max_file_bytes:  # left out by its size: never read
          left_out[TOO_LARGE] += 1
        else:
          wanted.append((oid, path, int(size)))
      elif mode == "120000":
        left_out[LINKS] += 1
  return wanted


def _folder_files(repo: Found, left_out: Optional[collections.Counter] = None
                  ) -> List[Tuple[str, str]]:
  """(path under the folder, absolute path) of its source files, hidden folders left out;
  links to source files are counted in `left_out`."""
  result = []

  def fail(error):
    raise Skipped(UNREADABLE_FOLDER, f"{error.filename}: cannot be listed "
                                     f"({error.strerror or error})")
  for dirpath, dirnames, filenames in os.walk(repo.path, onerror=fail):
    dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
    for name in sorted(filenames):
      if _is_source(name):
        full = os.path.join(dirpath, name)
        if os.path.islink(full):
          if left_out is not None:
            left_out[LINKS] += 1
        elif os.path.isfile(full):
          result.append((os.path.relpath(full, repo.path).replace(os.sep, "/"), full))
  return result


def read_folder(repo: Found, left_out: Optional[collections.Counter] = None,
                max_file_bytes: int = flcc.Filters.max_file_bytes):
  """(init hash, METADATA, an iterator of (path, content, time)) of a folder that is not a git
  repository: its files at their modification times, METADATA one commit adding them at the
  newest; the contents read as the iterator is, as read_git's (a folder can hold gigabytes),
  each a regular file read to a bound (received.read_bounded); what is not stored is counted
  in `left_out` by reason."""
  left_out = collections.Counter() if left_out is None else left_out

  def unreadable(full, error):
    log.warning("%s: unreadable (%s); left out", full, error.strerror or error)
    left_out[UNREADABLE_FILES] += 1
  listed = []  # (path, full path, time): the times first, for METADATA's
  for path, full in _folder_files(repo, left_out):
    try:
      status = os.stat(full, follow_symlinks=False)
    except OSError as e:
      unreadable(full, e)
      continue
    if status.st_size > max_file_bytes:  # left out by its size: never read
      left_out[TOO_LARGE] += 1
    else:
      listed.append((path, full, int(status.st_mtime)))

  def contents():
    for path, full, time in listed:
      try:
        content = received.read_bounded(full, max_file_bytes)
      except OSError as e:  # METADATA lists it, as git's lists files not stored
        unreadable(full, e)
        continue
      if len(content) > max_file_bytes:  # grown since it was listed
        left_out[TOO_LARGE] += 1
        continue
      yield path, content, time
  newest = max((time for _, _, time in listed), default=0)
  init_hash = hashlib.sha1(("folder:" + "/".join(repo.parts)).encode("utf-8")).hexdigest()
  return (init_hash, tree_writer.git_log_of_one_commit(newest, [p for p, _, _ in listed]),
          contents())


def state(repo: Found) -> str:
  """What a repository's stored files depend on: its HEAD commit, or its files' sizes and
  modification times (a folder). A rerun compares these to reuse a written tree."""
  try:
    if repo.is_git:
      with _store(repo) as store:
        return "git " + store.head()
    listing = hashlib.sha256()
    for path, full in _folder_files(repo):
      stat = os.stat(full)
      listing.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode("utf-8", "replace"))
    return "folder " + listing.hexdigest()
  except (Skipped, OSError, git_store.GitStoreError):
    return "unreadable"


@contextlib.contextmanager
def _removed_if_skipped(v3: str, author: str, repo: str, init_hash: str):
  """Removes what the block wrote of a repository new to the tree where it raises Skipped (git
  failing on a file partway through), so that no repository is stored in part."""
  meta_dir = tree_writer.repository_meta_dir(v3, author, repo, init_hash)
  new = not os.path.isdir(meta_dir)
  try:
    yield
  except Skipped:
    if new:
      # (include_hidden: an extension's folder, `.py`, starts with a dot)
      for written in [meta_dir] + glob.glob(
          os.path.join(glob.escape(v3), "languages", "*", "*", glob.escape(author),
                       glob.escape(repo), glob.escape(init_hash)), include_hidden=True):
        shutil.rmtree(written, ignore_errors=True)
        for parent in (os.path.dirname(written), os.path.dirname(os.path.dirname(written))):
          try:
            os.rmdir(parent)  # its repo and author folders, unless another repository's
          except OSError:
            break
    raise


def _manifest(repos_dir: str, found: List[Found], outside: List[str],
              max_file_bytes: int) -> dict:
  return {"repos_dir": os.path.abspath(repos_dir), "max_file_bytes": max_file_bytes,
          "repositories": {"/".join(repo.parts): state(repo) for repo in found},
          "outside_any_repository": len(outside)}


def write_tree(repos_dir: str, out_dir: str,
               max_file_bytes: int = flcc.Filters.max_file_bytes) -> dict:
  """Writes the FLCC tree of `repos_dir` to `out_dir` (whole, then renamed into place), or
  reuses the one there if every repository is as it was. Files over `max_file_bytes` are left
  out unread. Returns the manifest, with what was stored and skipped."""
  found, outside = find(repos_dir)
  manifest = _manifest(repos_dir, found, outside, max_file_bytes)
  existing = flcc.repositories_manifest(out_dir)
  if (existing and os.path.isdir(os.path.join(out_dir, "v3")) and
      {k: existing.get(k) for k in manifest} == manifest):
    existing["reused"] = True
    return existing
  if outside:
    log.warning("%s: %d source files lie right in it, outside any repository (e.g. %s); "
                "left out: put them in a folder of their own to include them",
                repos_dir, len(outside), outside[0])
  counts, left_out = collections.Counter(), collections.Counter()
  skipped: Dict[str, List[str]] = collections.defaultdict(list)
  stored_as: Dict[Tuple[str, str, str], str] = {}  # (author, repo, init hash): its name in DIR
  with files_lib.local_dir_written_whole(out_dir) as partial:
    v3 = os.path.join(partial, "v3")
    os.makedirs(os.path.join(v3, "repositories"))
    os.makedirs(os.path.join(v3, "languages"))
    for repo in tqdm(found, desc=f"read {repos_dir}", unit=" repositories", mininterval=1):
      name = "/".join(repo.parts)
      repo_left_out = collections.Counter()  # counted only where the repository is stored
      try:
        init_hash, metadata, stored = (read_git if repo.is_git else read_folder)(
            repo, repo_left_out, max_file_bytes)
        author, repo_name = repo.author_and_repo
        first_copy = stored_as.get((author, repo_name, init_hash))
        if first_copy is not None:
          raise Skipped(STORED_ALREADY, f"{repo.path}: a copy of {first_copy}, which is stored "
                                        f"(the same name, {author}/{repo_name}, and first "
                                        f"commit, {init_hash[:12]}); left out")
        stored = iter(stored)
        first = next(stored, None)
        if first is None:
          raise Skipped(NO_SOURCE_FILES, f"{repo.path}: no file of a language FLCC knows "
                                         f"({', '.join(sorted(tree_writer.EXTENSION_LANGUAGE))})")
        with _removed_if_skipped(v3, author, repo_name, init_hash):
          written = tree_writer.write_repository(v3, author, repo_name, init_hash,
                                                 itertools.chain([first], stored), metadata)
      except Skipped as e:
        log.warning("%s (repository skipped)", e)
        skipped[e.reason].append(name)
      else:
        stored_as[author, repo_name, init_hash] = name
        counts["files"] += written
        counts["git" if repo.is_git else "folders"] += 1
        left_out.update(repo_left_out)
    if not counts["files"]:
      raise RepositoriesError(
          f"{repos_dir}: none of its {len(found)} repositories could be stored ("
          + ", ".join(f"{reason} {len(names)}" for reason, names in skipped.items()) + ")")
    manifest.update(
        stored={"git repositories": counts["git"], "folders": counts["folders"],
                "files": counts["files"]},
        skipped={reason: skipped.get(reason, []) for reason in SKIP_REASONS},
        files_left_out={reason: left_out[reason] for reason in LEFT_OUT_REASONS})
    with open(os.path.join(partial, MANIFEST), "w") as f:
      json.dump(manifest, f, indent=1, sort_keys=True)
  manifest["reused"] = False
  return manifest


def summary(manifest: dict) -> str:
  """One line of what a tree of repositories holds and what was left out."""
  stored = manifest["stored"]
  skipped = ", ".join(f"{reason} {len(names)}" for reason, names in manifest["skipped"].items()
                      if names) or "none"
  # (A tree written before files_left_out was recorded has none.)
  left_out = ", ".join(f"{reason} {count}"
                       for reason, count in manifest.get("files_left_out", {}).items() if count)
  return (f"{stored['git repositories']} git repositories and {stored['folders']} folders, "
          f"{stored['files']} source files; repositories skipped: {skipped}; source files "
          f"outside any repository: {manifest['outside_any_repository']}"
          + (f"; left out of the stored repositories: {left_out}" if left_out else ""))

