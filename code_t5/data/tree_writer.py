"""Writing FLCC v3 trees: the dev trees, and test fixtures.

Both go through `write_flcc_tree`, so the dev run and the tests exercise exactly the layout
that `flcc.py` reads from a published archive. Python's and C++'s dev trees are code every
machine with the lock installed already holds: Python's standard library, and the C++ headers
of Abseil that the TensorFlow wheel ships for building custom ops. Java's and JavaScript's come
from the package registries (`registry_sources`): a JDK's sources as Debian ships them, and
pinned npm packages.
"""

import collections
import dataclasses
import hashlib
import importlib.util
import json
import os
import sysconfig
from typing import Callable, Dict, Iterable, Mapping, NamedTuple, Optional, Tuple

from code_t5 import files
from code_t5.data import flcc
from code_t5.data import registry_sources

# Directories of the standard library that are not code a user writes or that are huge
# data-like modules; tests are kept out so the dev set is ordinary library code.
_STDLIB_EXCLUDED_DIRS = {"test", "tests", "idle_test", "site-packages", "dist-packages",
                         "__pycache__", "ensurepip", "lib2to3", "turtledemo", "tkinter"}
# Of the installed packages: their tests, caches, and this project's own files if installed.
_PACKAGES_EXCLUDED_DIRS = {"test", "tests", "testing_data", "__pycache__", "code_t5"}
# Fixed so that two dev trees written from the same interpreter are byte-identical.
_DEV_COMMIT_TIME = 1700000000


def write_flcc_tree(root: str, repositories: Mapping[str, Mapping[str, bytes]],
                    language: str = "python", commit_time: int = _DEV_COMMIT_TIME) -> str:
  """Writes `{"author/repo": {real path: content}}` in FLCC v3 layout under `root/v3`: each
  repository one commit at `commit_time` that adds its files of `language`.
  Returns the path of the `v3` directory."""
  _, extensions = flcc.LANGUAGES[language]
  v3 = os.path.join(root, "v3")
  for repository, contents in sorted(repositories.items()):
    author, repo = repository.split("/", 1)
    kept = {path: content for path, content in contents.items()
            if os.path.splitext(path)[1] in extensions}
    write_repository(v3, author, repo, hashlib.sha1(repository.encode("utf-8")).hexdigest(),
                     ((path, content, commit_time) for path, content in sorted(kept.items())),
                     git_log_of_one_commit(commit_time, kept), language)
  return v3


# Which language a file is, by its extension (FLCC's; `.h` is C++).
EXTENSION_LANGUAGE = {ext: language for language, (_, extensions) in flcc.LANGUAGES.items()
                      for ext in extensions}


def repository_meta_dir(v3: str, author: str, repo: str, init_hash: str) -> str:
  """`repositories/<author>/<repo>/<init hash>/`: a stored repository's paths.json, files.json
  and METADATA."""
  return os.path.join(v3, "repositories", author, repo, init_hash)


def write_repository(v3: str, author: str, repo: str, init_hash: str,
                     files: Iterable[Tuple[str, bytes, int]], metadata: str,
                     language: Optional[str] = None) -> int:
  """Stores one repository under `v3` as FLCC does: each file of a known language (or of
  `language` only) as `languages/<Language>/<.ext>/<author>/<repo>/<init hash>/<name>_<unix
  time><.ext>`, where the time is when the file last changed (`files` gives (real path,
  content, unix time)); names that would collide get the next free second, as FLCC's do.
  Beside it, `repositories/<author>/<repo>/<init hash>/` holds paths.json, files.json and
  `metadata` (METADATA, as `git log` wrote it). Returns how many files were stored."""
  meta_dir = repository_meta_dir(v3, author, repo, init_hash)
  os.makedirs(meta_dir, exist_ok=True)
  paths, counts = {}, {}
  # (stem, ext, time) -> the next second to try for it: files of one name and time take the
  # seconds after it in turn, without trying the taken ones again (8,000 such files took 7.7 s
  # when each walked the run from its own time; 100,000 about 20 minutes).
  next_free: Dict[Tuple[str, str, int], int] = {}
  for path, content, time in files:
    stem, ext = os.path.splitext(os.path.basename(path))
    file_language = EXTENSION_LANGUAGE.get(ext)
    if file_language is None or language not in (None, file_language):
      continue
    key = (stem, ext, time)
    time = next_free.get(key, time)
    while f"{stem}_{time}{ext}" in paths:
      time += 1
    next_free[key] = time + 1
    stored = f"{stem}_{time}{ext}"
    paths[stored] = path
    lang_dir = flcc.LANGUAGES[file_language][0]
    counts[f"{lang_dir}/{ext}"] = counts.get(f"{lang_dir}/{ext}", 0) + 1
    stored_dir = os.path.join(v3, "languages", lang_dir, ext, author, repo, init_hash)
    os.makedirs(stored_dir, exist_ok=True)
    with open(os.path.join(stored_dir, stored), "wb") as f:
      f.write(content)
  with open(os.path.join(meta_dir, "paths.json"), "w") as f:
    json.dump(paths, f, indent=1, sort_keys=True)
  with open(os.path.join(meta_dir, "files.json"), "w") as f:
    json.dump(counts, f, sort_keys=True)
  with open(os.path.join(meta_dir, "METADATA"), "w", encoding="utf-8") as f:
    f.write(metadata)
  return len(paths)


def git_log_of_one_commit(commit_time: int, paths) -> str:
  """What `git log --pretty=%ct --name-status --diff-filter=ACDMR` writes for a history of
  one commit that adds `paths` (ASCII names; git would quote others): its time, a blank
  line, then `A<tab>path` lines in git's (byte) order. tests/test_flcc_git.py holds it to
  real git's output."""
  return f"{commit_time}\n\n" + "".join(f"A\t{p}\n" for p in sorted(paths))


def python_repositories(top_dir: str, owner: str, excluded_dirs=frozenset(),
                        max_files: Optional[int] = None) -> Dict[str, Dict[str, bytes]]:
  """The `.py` files under `top_dir`, one "repository" `<owner>/<name>` per top-level package.

  Top-level modules are grouped by first letter (`<owner>/modules_a` ...), so that a folder of
  loose modules gives repositories of ordinary size. Directories named in `excluded_dirs`, and
  package metadata (`*.dist-info`, `*.egg-info`), are left out.
  """
  repositories: Dict[str, Dict[str, bytes]] = {}
  count = 0
  for dirpath, dirnames, filenames in os.walk(top_dir):
    dirnames[:] = sorted(d for d in dirnames if d not in excluded_dirs
                         and not d.endswith((".dist-info", ".egg-info")))
    for name in sorted(filenames):
      if not name.endswith(".py"):
        continue
      path = os.path.relpath(os.path.join(dirpath, name), top_dir)
      top = path.split(os.sep, 1)[0]
      repo = f"{owner}/{top}" if os.sep in path else f"{owner}/modules_{name[0].lower()}"
      with open(os.path.join(dirpath, name), "rb") as f:
        repositories.setdefault(repo, {})[path.replace(os.sep, "/")] = f.read()
      count += 1
      if max_files is not None and count >= max_files:
        return repositories
  return repositories


def stdlib_repositories(stdlib_dir: Optional[str] = None,
                        max_files: Optional[int] = None) -> Dict[str, Dict[str, bytes]]:
  """The running interpreter's standard library, one "repository" per top-level package
  (`python_repositories`): about 60, enough for repository-level splits to mean something."""
  return python_repositories(stdlib_dir or sysconfig.get_paths()["stdlib"], "stdlib",
                             _STDLIB_EXCLUDED_DIRS, max_files)


def environment_repositories(max_files: Optional[int] = None) -> Dict[str, Dict[str, bytes]]:
  """The standard library, then the packages installed beside it (the environment's
  site-packages: with requirements/cpu.lock, the same files on every machine), one
  "repository" per top-level package of each (`packages/tensorflow`, `packages/numpy`, ...).
  With the lock: 218 repositories, 21,026 files and 320 MB, where the standard library alone
  gives 53, 623 and 11 MB; more unique code than a dev run can exhaust. The packages' own
  tests are left out, as the stdlib's are."""
  repositories = stdlib_repositories(max_files=max_files)
  taken = sum(len(files) for files in repositories.values())
  if max_files is not None and taken >= max_files:
    return repositories
  packages = sysconfig.get_paths()["purelib"]
  repositories.update(python_repositories(
      packages, "packages", _PACKAGES_EXCLUDED_DIRS,
      None if max_files is None else max_files - taken))
  return repositories


def abseil_repositories(max_files: Optional[int] = None) -> Dict[str, Dict[str, bytes]]:
  """Abseil's C++ headers as the installed TensorFlow wheel holds them (`tensorflow/include/
  absl`), one "repository" per Abseil library (`abseil/strings`, `abseil/container`, ...).
  Found without importing TensorFlow; about 270 files."""
  spec = importlib.util.find_spec("tensorflow")
  include = (os.path.join(spec.submodule_search_locations[0], "include")
             if spec and spec.submodule_search_locations else None)
  if include is None or not os.path.isdir(os.path.join(include, "absl")):
    raise FileNotFoundError(f"{include or 'tensorflow'}: no absl/ headers; the C++ dev tree "
                            "reads them from the TensorFlow wheel of requirements/cpu.lock")
  _, extensions = flcc.LANGUAGES["cpp"]
  repositories: Dict[str, Dict[str, bytes]] = {}
  count = 0
  for dirpath, dirnames, filenames in os.walk(os.path.join(include, "absl")):
    dirnames.sort()
    for name in sorted(filenames):
      if os.path.splitext(name)[1] not in extensions:
        continue
      path = os.path.relpath(os.path.join(dirpath, name), include).replace(os.sep, "/")
      library = path.split("/")[1] if path.count("/") > 1 else "base"
      with open(os.path.join(dirpath, name), "rb") as f:
        repositories.setdefault(f"abseil/{library}", {})[path] = f.read()
      count += 1
      if max_files is not None and count >= max_files:
        return repositories
  return repositories


@dataclasses.dataclass
class SourceOptions:
  """Where a registry source downloads and unpacks (`downloads`, local), which JDK and npm
  registry it reads, and what it left out, by reason (filled as it reads)."""
  downloads: str = "downloads"
  jdk_src: Optional[str] = None
  npm_registry: Optional[str] = None
  left_out: registry_sources.LeftOut = dataclasses.field(default_factory=collections.Counter)


class DevSource(NamedTuple):
  language: str
  what: str  # for the dev command's lines
  # (max_files, options) -> {"author/repo": {path: bytes}}, capped at max_files
  read: Callable[[Optional[int], SourceOptions], Dict[str, Dict[str, bytes]]]


# Source name -> its dev tree. A language's first source is its default (`dev --language`).
DEV_SOURCES: Dict[str, DevSource] = {
    "stdlib": DevSource("python", "the standard library",
                        lambda max_files, _: stdlib_repositories(max_files=max_files)),
    "environment": DevSource("python", "the standard library and the installed packages",
                             lambda max_files, _: environment_repositories(max_files)),
    "abseil": DevSource("cpp", "Abseil's C++ headers",
                        lambda max_files, _: abseil_repositories(max_files)),
    "jdk": DevSource("java", "the JDK's sources (Debian's "
                     f"{registry_sources.JDK_SOURCE_PACKAGE})",
                     lambda max_files, o: registry_sources.jdk_repositories(
                         o.downloads, o.jdk_src, max_files, o.left_out)),
    "npm": DevSource("javascript", f"{len(registry_sources.NPM_PACKAGES)} pinned npm packages",
                     lambda max_files, o: registry_sources.npm_repositories(
                         o.downloads, o.npm_registry, max_files=max_files,
                         left_out=o.left_out)),
}


def default_dev_source(language: str) -> Optional[str]:
  return next((name for name, source in DEV_SOURCES.items() if source.language == language),
              None)


def write_dev_tree(out_dir: str, max_files: Optional[int] = None, source: str = "stdlib",
                   options: Optional[SourceOptions] = None) -> str:
  """Writes the dev tree of `source` (a key of DEV_SOURCES) to `out_dir`, replacing it only
  once it is complete."""
  language, _, read_repositories = DEV_SOURCES[source]
  options = options or SourceOptions()
  repositories = read_repositories(max_files, options)
  with files.local_dir_written_whole(out_dir) as partial:
    write_flcc_tree(partial, repositories, language=language)
  return os.path.join(out_dir, "v3")
