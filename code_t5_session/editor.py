"""The editor's side of a language server: the settings an editor sends, a Session per open
document on one shared copy of the export's weights, and the workspace's files as repository
context. Plain Python over code_t5_session (no protocol: code_t5_session/lsp.py speaks it).
"""

import collections
import dataclasses
import json
import logging
import math
import os
import urllib.parse
from typing import Optional

from code_t5_session import model
from code_t5_session import retrieval
from code_t5_session.session import MAX_REPOSITORY_FILES, Export, Session

log = logging.getLogger("code_t5_session.lsp")

# Sessions kept: each holds its document's model state (the dev model's windows, 4.5 MB
# each, `states` of them), so 100 open documents do not hold 100 states.
MAX_SESSIONS = 8
# A session's windows (its jumps within the file): at most STATES, fewer where they would pass
# the model's STATES_BYTES (the base model's window is 40 MB: one). CachedModel's default, up
# to 8, is for an editor of one document.
STATES = 2
# The text a suggestion reads: the cursor's last MAX_PREFIX_CHARS characters, from a line's
# start (the model reads its window of them, the copy cache and the copies all of them). A
# session tokenizes all it is given at each keystroke: without a bound, a whole 5 MiB file.
MAX_PREFIX_CHARS = 1 << 16
# The workspace's files: at most MAX_WALK_ENTRIES folders and files looked at, files of at
# most MAX_FILE_BYTES read (larger ones are rarely written by hand: data, bundles), links
# not followed, folders named with a leading "." and SKIPPED_FOLDERS not entered.
MAX_WALK_ENTRIES = 100_000
MAX_FILE_BYTES = 1 << 20
SKIPPED_FOLDERS = frozenset({"node_modules", "__pycache__", "venv", "build", "dist", "target"})
LANGUAGE_IDS = {"javascriptreact": "javascript", "typescriptreact": "typescript",
                "c": "cpp", "cs": "csharp"}


@dataclasses.dataclass(frozen=True)
class Settings:
  """What `initializationOptions` may set (GENTLE_INTRO.md, "In your editor").

  weights: the export's "float" or "int8" weights.
  threads: onnxruntime's threads (0: its choice, every core). 2 by default: the latency rows'
    count, and an editor's helper should leave the editor its cores.
  threshold: the least confidence a suggestion is shown with (0..1): the consensus line's
    expected edit similarity, or the greedy line's probability.
  decoding: "consensus" (the consensus line of the greedy line and the file's two copies,
    `Session(consensus=True)`) or "greedy".
  copy_from: what the copy cache reads, "file" (all of the text before the cursor) or
    "window" (the model's window), as `Session`'s.
  repository: read the workspace's files as repository context, where the export's model
    was trained with it.
  """
  weights: str = "float"
  threads: int = 2
  threshold: float = 0.0
  decoding: str = "consensus"
  copy_from: str = "file"
  repository: bool = True

  @classmethod
  def of(cls, options) -> "Settings":
    """Settings from `initializationOptions` (a JSON object, or None): ValueError, one line,
    for a name or value that is not one of these."""
    if options is None or options == []:  # an empty Lua table is sent as []
      return cls()
    if not isinstance(options, dict):
      raise ValueError(f"initializationOptions must be an object, not {json.dumps(options)}")
    known = {field.name: field for field in dataclasses.fields(cls)}
    unknown = sorted(set(options) - set(known))
    if unknown:
      raise ValueError(f"initializationOptions: no setting {unknown[0]!r} (the settings: "
                       f"{', '.join(known)})")
    choices = {"weights": ("float", "int8"), "decoding": ("consensus", "greedy"),
               "copy_from": ("file", "window")}
    for name, value in options.items():
      kind = known[name].type
      if name in choices and value not in choices[name]:
        raise ValueError(f"initializationOptions.{name} = {json.dumps(value)}: one of "
                         f"{', '.join(choices[name])}")
      if kind in (int, "int") and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"initializationOptions.{name} = {json.dumps(value)}: a count, 0 or more")
      if kind in (float, "float") and (isinstance(value, bool) or not isinstance(value, (int, float)) or
                              not 0.0 <= value <= 1.0):
        raise ValueError(f"initializationOptions.{name} = {json.dumps(value)}: a number from 0 to 1")
      if kind in (bool, "bool") and not isinstance(value, bool):
        raise ValueError(f"initializationOptions.{name} = {json.dumps(value)}: true or false")
    return cls(**options)


def language_of(language_id: str, path: str) -> Optional[str]:
  """The FLCC language of a document: its LSP languageId, else its extension; None for one
  that is neither."""
  language = LANGUAGE_IDS.get(language_id, language_id)
  if language in retrieval.EXTENSIONS:
    return language
  for language, extensions in retrieval.EXTENSIONS.items():
    if path.endswith(extensions):
      return language
  return None


def path_of(uri: str) -> Optional[str]:
  """The local path of a file: URI; None for another scheme."""
  parsed = urllib.parse.urlparse(uri)
  return urllib.parse.unquote(parsed.path) if parsed.scheme == "file" else None


def workspace_files(root: str, extensions, max_files: int = MAX_REPOSITORY_FILES):
  """(path relative to `root`, content) of the files under `root` with `extensions`, in a
  sorted walk, within the module's bounds; and {reason: count} of what was left out."""
  files, left_out, looked_at = [], collections.Counter(), 0
  stack = [root]
  while stack:
    folder = stack.pop()
    try:
      with os.scandir(folder) as entries:
        entries = sorted(entries, key=lambda e: e.name)
    except OSError:
      left_out["folders not readable"] += 1
      continue
    folders = []
    for entry in entries:
      looked_at += 1
      if looked_at > MAX_WALK_ENTRIES:
        left_out[f"past {MAX_WALK_ENTRIES} entries"] += 1
        return files, left_out
      if entry.is_symlink():
        continue
      if entry.is_dir(follow_symlinks=False):
        if not entry.name.startswith(".") and entry.name not in SKIPPED_FOLDERS:
          folders.append(entry.path)
      elif entry.name.endswith(extensions) and entry.is_file(follow_symlinks=False):
        if len(files) >= max_files:
          left_out[f"past {max_files} files"] += 1
          continue
        content = read_file(entry.path)
        if content is None:
          left_out[f"over {MAX_FILE_BYTES} bytes or not readable"] += 1
          continue
        files.append((os.path.relpath(entry.path, root), content))
    stack.extend(reversed(folders))  # the first folder next: a sorted walk
  return files, left_out


def read_file(path: str) -> Optional[str]:
  """A workspace file's text (bytes that are not UTF-8 as U+FFFD); None for one over
  MAX_FILE_BYTES or not readable."""
  try:
    with open(path, "rb") as f:
      data = f.read(MAX_FILE_BYTES + 1)
  except OSError:
    return None
  return None if len(data) > MAX_FILE_BYTES else data.decode("utf-8", "replace")


class Repository:
  """A workspace folder's files of one language, and their index (`retrieval.index_of`)."""

  def __init__(self, root: str, language: str, options: dict):
    self.root, self.language, self.options = root, language, options
    files, self.left_out = workspace_files(root, retrieval.EXTENSIONS[language])
    self.files = dict(files)
    self.index = retrieval.index_of(files, language, options)
    if self.left_out:
      log.info("%s: %s files of the workspace left out: %s", root, language,
               dict(self.left_out))

  def update(self, path: str) -> bool:
    """Reads `path` (a file under the root) again, or drops it if gone; True if it changed
    the index."""
    relative = os.path.relpath(os.path.realpath(path), self.root)
    folders = relative.split(os.sep)[:-1]
    if relative.startswith("..") or not path.endswith(retrieval.EXTENSIONS[self.language]) or \
        any(f.startswith(".") or f in SKIPPED_FOLDERS for f in folders):
      return False  # not a file the walk would have read
    content = read_file(path) if os.path.isfile(path) and not os.path.islink(path) else None
    if content is None and relative not in self.files:
      return False
    if content is not None and self.files.get(relative) == content:
      return False
    if content is None:
      del self.files[relative]
    elif relative in self.files or len(self.files) < MAX_REPOSITORY_FILES:
      self.files[relative] = content
    else:
      return False
    # The walk's order, a new file last: ties between windows go the same way as before.
    self.index = retrieval.index_of(list(self.files.items()), self.language, self.options)
    return True


class Completer:
  """The model's side: a Session a document, and the repositories. One thread calls it."""

  def __init__(self, export: Export, settings: Settings):
    self.export, self.settings = export, settings
    self.sessions = collections.OrderedDict()  # uri -> Session, the most recently asked last
    self.repositories = {}  # (root, language) -> Repository
    self.context = bool(export.config.get("repository_context")) and settings.repository
    shape = json.loads(export.inference.get_modelmeta().custom_metadata_map["architecture"])
    self.states = min(STATES, model.states_for(shape["layers"], shape["heads"],
                                               shape["positions"], shape["d_kv"]))

  def session(self, uri: str) -> Session:
    session = self.sessions.pop(uri, None)
    if session is None:
      session = Session(self.export, copy_from=self.settings.copy_from,
                        consensus=self.settings.decoding == "consensus", states=self.states)
      while len(self.sessions) >= MAX_SESSIONS:
        self.sessions.popitem(last=False)
    self.sessions[uri] = session
    return session

  def forget(self, uri: str):
    self.sessions.pop(uri, None)

  def repository(self, root: Optional[str], language: Optional[str]):
    if not (self.context and root and language):
      return None
    key = (root, language)
    if key not in self.repositories:
      self.repositories[key] = Repository(root, language,
                                          self.export.config["repository_context"])
    return self.repositories[key]

  def changed_file(self, path: str):
    """A file of a workspace was saved, made or deleted: its repositories read it again."""
    for repository in self.repositories.values():
      repository.update(path)

  def suggest(self, uri: str, prefix: str, root: Optional[str], language: Optional[str]):
    """The suggestion of the session of `uri` for `prefix`, and whether it is shown."""
    session = self.session(uri)
    repository = self.repository(root, language)
    if repository is not None:
      path = path_of(uri)
      relative = os.path.relpath(os.path.realpath(path), root) if path else None
      if session.repository is not repository.index:  # a new session, or the index remade
        session.use_repository(repository.index, relative)
    suggestion = session.suggest(prefix)
    if self.settings.decoding == "consensus":
      confidence = suggestion.confidence
    else:
      confidence = math.exp(suggestion.log_prob)
    shown = bool(suggestion.text) and confidence >= self.settings.threshold
    return suggestion, shown


def cut_prefix(text: str, offset: int) -> str:
  """The text before `offset` that a suggestion reads: at most MAX_PREFIX_CHARS characters,
  from a line's start."""
  if offset <= MAX_PREFIX_CHARS:
    return text[:offset]
  start = text.find("\n", offset - MAX_PREFIX_CHARS, offset)
  return text[start + 1 if start >= 0 else offset - MAX_PREFIX_CHARS:offset]
