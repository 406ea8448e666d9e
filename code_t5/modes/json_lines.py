"""The files of infer and score: JSON lines in, one line per record out.

mesh-tf's own file modes (`decode_from_file`, `score_from_strings`) read one input per line,
strip it and cut it on the right: that destroys code, where a prefix spans lines, indentation
matters and the context that counts is the end. Here prefixes come as JSON lines,
`{"prefix": "<code before the cursor>"}` (plus `"completion"` to score), and results go out one
line per record, in order, written whole or not at all.
"""

import json

import tensorflow.compat.v1 as tf

from code_t5 import files


class PrefixFileError(ValueError):
  """The input is not JSON lines of the expected string fields; names file and line."""


def read_records(path, fields=("prefix",)):
  """[(field values...)] from JSON lines; blank lines are skipped, anything else is an error."""
  records = []
  shape = ", ".join(f'"{f}": "..."' for f in fields)
  with tf.io.gfile.GFile(path, "r") as f:
    for number, line in enumerate(f, 1):
      if not line.strip():
        continue
      try:
        record = json.loads(line)
        values = tuple(record[field] for field in fields)
      except (ValueError, KeyError, TypeError):
        raise PrefixFileError(f"{path}:{number}: expected a JSON object {{{shape}}}") from None
      if not all(isinstance(v, str) for v in values):
        raise PrefixFileError(f"{path}:{number}: {', '.join(fields)} must be strings")
      records.append(values)
  if not records:
    raise PrefixFileError(f"{path}: no records")
  return records


def write_lines(lines, path):
  """One line per record to `path`, whole or not at all."""
  files.write_atomically(path, "".join(line + "\n" for line in lines))
