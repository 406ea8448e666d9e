"""Using a trained model on code: infer (complete lines), score (rate completions), export.

mesh-tf's own file modes (`decode_from_file`, `score_from_strings`) read one input per line,
strip it and cut it on the right: that destroys code, where a prefix spans lines, indentation
matters and the context that counts is the end. Here prefixes come as JSON lines,
`{"prefix": "<code before the cursor>"}` (plus `"completion"` to score), and every prefix is
prepared exactly as the full-line Task prepares its inputs: tokenize, keep the longest tail
that starts a line and fits, EOS.

  complete_lines_from_file  infer_model.decode_fn        (gin_configs/infer_full_line.gin)
  completions_dataset_fn    score_from_dataset's dataset  (gin_configs/score.gin)
  score_completions         score_from_dataset's scorer   (gin_configs/score.gin)
  serving_task              get_vocabulary's task         (gin_configs/export.gin)
"""

import json
import os

import gin
from mesh_tensorflow.transformer import dataset as transformer_dataset
from mesh_tensorflow.transformer import utils as mtf_utils
import seqio
import tensorflow.compat.v1 as tf
import tensorflow_datasets as tfds

from code_t5 import files
from code_t5 import preprocessors
from code_t5 import tasks


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


def write_lines_atomically(lines, path):
  files.write_atomically(path, "".join(line + "\n" for line in lines))


def encode_with_eos(vocab, text, length, keep_end, newline_id):
  """Token ids of `text` + EOS, padded to `length`.

  keep_end: a prefix keeps its end, cut on the left at a line start; a completion keeps its
  start (as `append_eos_after_trim`).
  """
  ids = vocab.encode_tf(text)
  if keep_end:
    ids = preprocessors.left_truncate_at_line(ids, length - 1, newline_id)
  else:
    ids = ids[:length - 1]
  ids = tf.concat([ids, [vocab.eos_id]], axis=0)
  ids = tf.pad(ids, [[0, length - tf.size(ids)]])
  return tf.reshape(ids, [length])  # static shape for the estimator


@gin.configurable(module="code_t5")
def complete_lines_from_file(estimator, vocabulary, model_type, batch_size, sequence_length,
                             checkpoint_path=None, input_filename=gin.REQUIRED,
                             output_filename=gin.REQUIRED):
  """Writes `<output_filename>-<step>`: line i completes prefix i."""
  del model_type
  prefixes = [prefix for prefix, in read_records(input_filename)]
  vocab = mtf_utils.inputs_vocabulary(vocabulary)
  newline_id = preprocessors.newline_id(vocab)
  # Pad the list to whole batches; the extra decodes are dropped below.
  padded = prefixes + [""] * (-len(prefixes) % batch_size)

  def input_fn(params):
    del params
    ds = tf.data.Dataset.from_tensor_slices(padded)
    ds = ds.map(lambda prefix: {"inputs": encode_with_eos(
        vocab, prefix, sequence_length["inputs"], True, newline_id)})
    return ds.batch(batch_size, drop_remainder=True)

  decodes = list(mtf_utils.decode(estimator, input_fn, vocabulary, checkpoint_path))
  completions = [preprocessors.cut_at_newline(
      d.decode("utf-8", errors="replace") if isinstance(d, bytes) else d)
                 for d in decodes[:len(prefixes)]]
  step = mtf_utils.get_step_from_checkpoint_path(checkpoint_path)
  write_lines_atomically(completions, f"{output_filename}-{step}")


@gin.configurable(module="code_t5")
def completions_dataset_fn(sequence_length, vocabulary, dataset_split,
                           input_filename=gin.REQUIRED):
  """score_dataset_fn: the pairs {"prefix", "completion"} of a JSON lines file."""
  del dataset_split
  pairs = read_records(input_filename, ("prefix", "completion"))
  inputs_vocab = mtf_utils.inputs_vocabulary(vocabulary)
  targets_vocab = mtf_utils.targets_vocabulary(vocabulary)
  newline_id = preprocessors.newline_id(inputs_vocab)

  def dataset_fn(sequence_length=sequence_length):
    ds = tf.data.Dataset.from_tensor_slices(tuple(map(list, zip(*pairs))))
    return ds.map(lambda prefix, completion: {
        "inputs": encode_with_eos(inputs_vocab, prefix, sequence_length["inputs"], True,
                                  newline_id),
        "targets": encode_with_eos(targets_vocab, completion, sequence_length["targets"],
                                   False, newline_id)})
  return [transformer_dataset.EvalDataset(os.path.basename(input_filename), dataset_fn,
                                          None, [])]


@gin.configurable(module="code_t5")
def score_completions(estimator, input_fn, eval_checkpoint_step, model_dir, vocabulary,
                      score_postprocess_fn, num_examples=None, output_filename=gin.REQUIRED):
  """Writes `<output_filename>-<step>`: line i is log P(completion i + EOS | prefix i), in nats.

  mesh-tf's `score_with_estimator` finds the padding rows by looking at the targets it gets
  back, which a vocabulary that detokenizes in the graph (ours) has already turned into
  strings; here they are counted on the token ids before the run.
  """
  del score_postprocess_fn, vocabulary
  if num_examples is None:
    with tf.Graph().as_default():
      num_examples = sum(int(row.any()) for batch in tfds.as_numpy(input_fn({}))
                         for row in batch["targets"])
  [checkpoint_path] = mtf_utils.get_checkpoint_iterator(eval_checkpoint_step, model_dir)
  results = list(estimator.predict(input_fn, checkpoint_path=checkpoint_path))
  scores = [float(r["scores"]) for r in results[:num_examples]]
  step = mtf_utils.get_step_from_checkpoint_path(checkpoint_path)
  write_lines_atomically([f"{s:.6f}" for s in scores], f"{output_filename}-{step}")
  return scores


class ServingVocabulary(tasks.FlccVocabulary):
  """The Task's vocabulary, whose `encode_tf` keeps the last lines of a prefix that fit.

  mesh-tf's export serving graph tokenizes each request with `vocabulary.encode_tf`, appends
  EOS and then cuts on the right, which would keep the start of the file and drop the EOS.
  `encode_tf` is the one hook inside that graph, so the cut on the left at a line start (as
  in training) happens here, to utils.run.sequence_length["inputs"] - 1 tokens.
  """

  def _encode_tf(self, s):
    inputs_length = gin.query_parameter("utils.run.sequence_length")["inputs"]
    ids = super()._encode_tf(s)
    return preprocessors.left_truncate_at_line(ids, inputs_length - 1,
                                               preprocessors.newline_id(self))


@gin.configurable(module="code_t5")
def serving_task(mixture_or_task_name=gin.REQUIRED):
  """For export.gin: `<name>_serving`, the Task's features with a ServingVocabulary for inputs.

  mesh_transformer_main takes the vocabulary of export from a Task or Mixture name
  (get_vocabulary); this registers that Task, with no data, on first use.
  """
  name = f"{mixture_or_task_name}_serving"
  if name not in seqio.TaskRegistry.names():
    task = seqio.get_subtasks(seqio.get_mixture_or_task(mixture_or_task_name))[0]
    features = dict(task.output_features)
    inputs = features["inputs"]
    features["inputs"] = seqio.Feature(ServingVocabulary(inputs.vocabulary.name),
                                       add_eos=inputs.add_eos)
    seqio.TaskRegistry.add(name, source=task.source, preprocessors=[],
                           output_features=features)
  return name
