"""Infer: complete lines of code with a trained model (gin_configs/infer_full_line.gin).

  complete_lines_from_file  infer_model.decode_fn

Every prefix is prepared exactly as the full-line Task prepares its inputs
(`preprocessors.prefix_inputs`): tokenize, keep the longest tail that starts a line and fits,
EOS.
"""

import gin
from mesh_tensorflow.transformer import utils as mtf_utils
import tensorflow.compat.v1 as tf

from code_t5 import preprocessors
from code_t5 import json_lines
from code_t5.vocabulary import newline_id


def prefixes_dataset(prefixes, vocab, input_length):
  """{"inputs"} of each prefix, as the full-line Task gives them to the model."""
  line_break = newline_id(vocab)
  return tf.data.Dataset.from_tensor_slices(prefixes).map(lambda prefix: {
      "inputs": preprocessors.prefix_inputs(vocab.encode_tf(prefix), input_length, line_break)})


@gin.configurable(module="code_t5")
def complete_lines_from_file(estimator, vocabulary, model_type, batch_size, sequence_length,
                             checkpoint_path=None, input_filename=gin.REQUIRED,
                             output_filename=gin.REQUIRED):
  """Writes `<output_filename>-<step>`: line i completes prefix i."""
  del model_type
  prefixes = [prefix for prefix, in json_lines.read_records(input_filename)]
  # Pad the list to whole batches; the extra decodes are dropped below.
  padded = prefixes + [""] * (-len(prefixes) % batch_size)

  def input_fn(params):
    del params
    return prefixes_dataset(padded, mtf_utils.inputs_vocabulary(vocabulary),
                            sequence_length["inputs"]).batch(batch_size, drop_remainder=True)

  decodes = list(mtf_utils.decode(estimator, input_fn, vocabulary, checkpoint_path))
  completions = [preprocessors.cut_at_newline(
      d.decode("utf-8", errors="replace") if isinstance(d, bytes) else d)
                 for d in decodes[:len(prefixes)]]
  step = mtf_utils.get_step_from_checkpoint_path(checkpoint_path)
  json_lines.write_lines(completions, f"{output_filename}-{step}")
