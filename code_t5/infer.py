"""Infer mode for code: a file of code prefixes -> a file of completed lines.

mesh-tf's own `decode_from_file` reads one input per line and strips it, which destroys code
(prefixes span lines; indentation matters). `complete_lines_from_file` is a drop-in
`infer_model.decode_fn` (see gin_configs/infer_full_line.gin) that reads JSON lines,
`{"prefix": "<code before the cursor>"}`, prepares each prefix exactly as the full-line Task
prepares its inputs (tokenize, cut on the left at a line start, EOS), decodes, and writes one
completion per line: the rest of the line, cut at the first newline.
"""

import json
import os

import gin
from mesh_tensorflow.transformer import utils as mtf_utils
import tensorflow.compat.v1 as tf

from code_t5 import preprocessors


class PrefixFileError(ValueError):
  """The prefixes file is not JSON lines of {"prefix": str}; the message names file and line."""


def read_prefixes(path):
  prefixes = []
  with tf.io.gfile.GFile(path, "r") as f:
    for number, line in enumerate(f, 1):
      if not line.strip():
        continue
      try:
        record = json.loads(line)
        prefix = record["prefix"]
      except (ValueError, KeyError, TypeError):
        raise PrefixFileError(
            f'{path}:{number}: expected a JSON object {{"prefix": "..."}}') from None
      if not isinstance(prefix, str):
        raise PrefixFileError(f"{path}:{number}: prefix must be a string")
      prefixes.append(prefix)
  if not prefixes:
    raise PrefixFileError(f"{path}: no prefixes")
  return prefixes


def write_lines_atomically(lines, path):
  tf.io.gfile.makedirs(os.path.dirname(path) or ".")
  partial = path + ".incomplete"
  with tf.io.gfile.GFile(partial, "w") as f:
    f.write("".join(line + "\n" for line in lines))
  tf.io.gfile.rename(partial, path, overwrite=True)


@gin.configurable(module="code_t5")
def complete_lines_from_file(estimator, vocabulary, model_type, batch_size, sequence_length,
                             checkpoint_path=None, input_filename=gin.REQUIRED,
                             output_filename=gin.REQUIRED):
  """Writes `<output_filename>-<step>`: line i completes prefix i."""
  del model_type
  prefixes = read_prefixes(input_filename)
  vocab = mtf_utils.inputs_vocabulary(vocabulary)
  [newline_id] = vocab.encode(preprocessors.NEWLINE)
  inputs_length = sequence_length["inputs"]
  # Pad the list to whole batches; the extra decodes are dropped below.
  padded = prefixes + [""] * (-len(prefixes) % batch_size)

  def input_fn(params):
    del params
    ds = tf.data.Dataset.from_tensor_slices(padded)

    def prepare(prefix):
      ids = preprocessors.left_truncate_at_line(
          vocab.encode_tf(prefix), inputs_length - 1, newline_id)
      ids = tf.concat([ids, [vocab.eos_id]], axis=0)
      ids = tf.pad(ids, [[0, inputs_length - tf.size(ids)]])
      return {"inputs": tf.reshape(ids, [inputs_length])}  # static shape for the estimator
    return ds.map(prepare).batch(batch_size, drop_remainder=True)

  decodes = list(mtf_utils.decode(estimator, input_fn, vocabulary, checkpoint_path))
  completions = [preprocessors.cut_at_newline(
      d.decode("utf-8", errors="replace") if isinstance(d, bytes) else d)
                 for d in decodes[:len(prefixes)]]
  step = mtf_utils.get_step_from_checkpoint_path(checkpoint_path)
  write_lines_atomically(completions, f"{output_filename}-{step}")
