"""The files of infer and score: JSON lines in, one line per record out.

mesh-tf's own file modes (`decode_from_file`, `score_from_strings`) read one input per line,
strip it and cut it on the right: that destroys code, where a prefix spans lines, indentation
matters and the context that counts is the end. Here prefixes come as JSON lines,
`{"prefix": "<code before the cursor>"}` (plus `"completion"` to score), and results go out one
line per record, in order, written whole or not at all. Infer's records may also carry the
other files of the prefix's repository, for the repository context (repository_context.gin):
`"repository": [{"path": ..., "content": ...}, ...]`, and `"language"` (else the language of
the first file's extension); and the file after the cursor's line, for the copy cache
(file_cache.gin with code_t5.copy_cache.after_cursor): `"after"`.
"""

import json

import tensorflow.compat.v1 as tf

from code_t5 import files
from code_t5_session.session import without_lone_surrogates


class PrefixFileError(ValueError):
  """The input is not JSON lines of the expected string fields; names file and line."""


_NOT_JSON = object()  # a line json.loads refused


def _readable(value):
  """`value` (parsed JSON) with every string's lone surrogates as U+FFFD, as a session reads
  them (`without_lone_surrogates`): JSON can spell one ("\\udce9", as json.dumps writes a
  file read with surrogateescape), which has no UTF-8 for the model's vocabulary."""
  if isinstance(value, str):
    return without_lone_surrogates(value)
  if isinstance(value, list):
    return [_readable(item) for item in value]
  if isinstance(value, dict):
    return {key: _readable(item) for key, item in value.items()}
  return value


# A record can carry a whole repository's files ("repository"): a line may be large, but not
# without bound, nor the file (its records are held together, as infer decodes them).
MAX_LINE_BYTES = 64 << 20
MAX_FILE_BYTES = 1 << 30
_CHUNK = 1 << 20


def _lines(path):
  """(line number, bytes) of `path`, each line read to MAX_LINE_BYTES and the file to
  MAX_FILE_BYTES at the most (PrefixFileError past either): never a line held whole first. Each
  chunk is split once: the line still open is kept in pieces, joined when it ends."""
  pending, pending_bytes, number, total = [], 0, 1, 0  # the open line's pieces
  with tf.io.gfile.GFile(path, "rb") as f:
    while True:
      chunk = f.read(_CHUNK)
      total += len(chunk)
      if total > MAX_FILE_BYTES:
        raise PrefixFileError(f"{path}: over {MAX_FILE_BYTES} bytes; split it")
      *whole, rest = chunk.split(b"\n")
      if whole:
        whole[0] = b"".join(pending + [whole[0]])
        pending, pending_bytes = [], 0
      for line in whole:
        yield number, line
        number += 1
      pending.append(rest)
      pending_bytes += len(rest)
      if pending_bytes > MAX_LINE_BYTES:
        raise PrefixFileError(f"{path}:{number}: a line of over {MAX_LINE_BYTES} bytes")
      if not chunk:
        break
  if pending_bytes:
    yield number, b"".join(pending)


def read_json_lines(path):
  """[(line number, parsed record)] of `path`'s lines, blank lines skipped: the file is read
  once, whatever is taken from its records (`records_of`, `repositories_of`). A line that is
  no JSON (or JSON nested past Python's recursion limit) is kept as such, for the reader of its
  fields to name; a line that is no UTF-8 is an error naming it."""
  parsed = []
  for number, raw in _lines(path):
    try:
      line = raw.decode("utf-8")
    except UnicodeDecodeError as e:
      raise PrefixFileError(f"{path}:{number}: not UTF-8 (byte {e.start + 1} of the line)") \
          from None
    if line.strip():
      try:
        parsed.append((number, _readable(json.loads(line))))
      except (ValueError, RecursionError):
        parsed.append((number, _NOT_JSON))
  return parsed


def records_of(parsed, path, fields=("prefix",)):
  """[(field values...)] of each record of `parsed` (read_json_lines' of `path`); a record
  that is no object of those string fields is an error."""
  records = []
  shape = ", ".join(f'"{f}": "..."' for f in fields)
  for number, record in parsed:
    try:
      values = tuple(record[field] for field in fields)
    except (KeyError, TypeError):
      raise PrefixFileError(f"{path}:{number}: expected a JSON object {{{shape}}}") from None
    if not all(isinstance(v, str) for v in values):
      raise PrefixFileError(f"{path}:{number}: {', '.join(fields)} must be strings")
    records.append(values)
  if not records:
    raise PrefixFileError(f"{path}: no records")
  return records


def read_records(path, fields=("prefix",)):
  """[(field values...)] from JSON lines; blank lines are skipped, anything else is an error."""
  return records_of(read_json_lines(path), path, fields)


def repositories_of(parsed, path, language_of_extension):
  """[(files, language)] of each record of `parsed` (read_json_lines' of `path`): `files` the
  [(path, content)] of its "repository" ([] without one), `language` its "language" or, by
  `language_of_extension` {".py": "python", ...}, the language of the first file's extension
  (None without files)."""
  languages = set(language_of_extension.values())
  found = []
  for number, record in parsed:
    repository = record.get("repository", []) if isinstance(record, dict) else []
    shape_ok = isinstance(repository, list) and all(
        isinstance(item, dict) and isinstance(item.get("path"), str)
        and isinstance(item.get("content"), str) for item in repository)
    if not shape_ok:
      raise PrefixFileError(f'{path}:{number}: "repository" must be a list of '
                            '{"path": "...", "content": "..."}')
    files = [(item["path"], item["content"]) for item in repository]
    language = record.get("language") if isinstance(record, dict) else None
    if language is None and files:
      extension = "." + files[0][0].rsplit(".", 1)[-1] if "." in files[0][0] else ""
      language = language_of_extension.get(extension)
      if language is None:
        raise PrefixFileError(f'{path}:{number}: no "language", and {files[0][0]!r} has no '
                              f"extension of a language of {', '.join(sorted(languages))}")
    if language is not None and language not in languages:
      raise PrefixFileError(f"{path}:{number}: language {language!r} is none of "
                            f"{', '.join(sorted(languages))}")
    found.append((files, language))
  return found


def afters_of(parsed, path):
  """[the file after the cursor's line] of each record of `parsed` (read_json_lines' of
  `path`): its "after" ("" without one), for the copy cache's after_cursor."""
  found = []
  for number, record in parsed:
    after = record.get("after", "") if isinstance(record, dict) else ""
    if not isinstance(after, str):
      raise PrefixFileError(f'{path}:{number}: "after" must be a string')
    found.append(after)
  return found


def write_lines(lines, path):
  """One line per record to `path`, whole or not at all."""
  files.write_atomically(path, "".join(line + "\n" for line in lines))
