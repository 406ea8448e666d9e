"""Score: how likely a trained model finds given completions (gin_configs/score.gin).

  completions_dataset_fn  score_from_dataset's dataset
  score_completions       score_from_dataset's scorer

The prefix is prepared exactly as the full-line Task prepares its inputs
(`preprocessors.prefix_inputs`); the completion as seqio's `append_eos_after_trim` prepares
the Task's targets: its start, cut to leave room for the EOS.
"""

import os

import gin
from mesh_tensorflow.transformer import dataset as transformer_dataset
from mesh_tensorflow.transformer import utils as mtf_utils
import tensorflow.compat.v1 as tf
import tensorflow_datasets as tfds

from code_t5 import preprocessors
from code_t5 import records
from code_t5.vocabulary import newline_id


@gin.configurable(module="code_t5")
def completions_dataset_fn(sequence_length, vocabulary, dataset_split,
                           input_filename=gin.REQUIRED):
  """score_dataset_fn: the pairs {"prefix", "completion"} of a JSON lines file."""
  del dataset_split
  if not preprocessors.inputs_delimiter():
    # mesh-tf's delimited_lm score counts from the inputs' EOS; without one it would sum
    # nothing and print 0 for every pair.
    raise ValueError("score.gin scores the prefix LM: a causal model "
                     "(code_t5.inputs_delimiter.eos = False) has no EOS after the prefix "
                     "for mesh-tf's delimited_lm score to start after")
  pairs = records.read_records(input_filename, ("prefix", "completion"))
  inputs_vocab = mtf_utils.inputs_vocabulary(vocabulary)
  targets_vocab = mtf_utils.targets_vocabulary(vocabulary)
  line_break = newline_id(inputs_vocab)

  def dataset_fn(sequence_length=sequence_length):
    inputs_length, targets_length = sequence_length["inputs"], sequence_length["targets"]
    ds = tf.data.Dataset.from_tensor_slices(tuple(map(list, zip(*pairs))))
    return ds.map(lambda prefix, completion: {
        "inputs": preprocessors.prefix_inputs(inputs_vocab.encode_tf(prefix), inputs_length,
                                              line_break),
        "targets": preprocessors.with_eos_padded(
            targets_vocab.encode_tf(completion)[:targets_length - 1], targets_length)})
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
  records.write_lines([f"{s:.6f}" for s in scores], f"{output_filename}-{step}")
  return scores
