"""Score: how likely a trained model finds given completions (gin_configs/score.gin).

  completions_dataset_fn  score_from_dataset's dataset
  completion_scores       the scoring graph (utils.run.predict_fn in score mode)
  score_completions       score_from_dataset's scorer

The prefix is prepared exactly as the full-line Task prepares its inputs
(`preprocessors.prefix_inputs`); the completion as seqio's `append_eos_after_trim` prepares
the Task's targets: its start, cut to leave room for the EOS.

mesh-tf's own score of a delimited_lm counts from the first EOS of each row, which only the
prefix LM has (`preprocessors.inputs_delimiter`). So the dataset marks what is read and not
scored, the prefix, by adding READ_ONLY to its ids (`read_only`), and `completion_scores`
sums the log-likelihood of the unmarked ones: one rule for the prefix LM and the causal model.
(Not by negating them: mesh-tf detokenizes the rows it scored, and sentencepiece fails on a
negative id with an OutOfRange that the Estimator takes for the end of the input; a marked id
is beyond every vocabulary and detokenizes as UNK.)

mesh-tf's perplexity eval (perplexity_eval.gin) counts a delimited_lm's loss after the first
EOS of each row in the same way (`transformer.delimited_lm_inputs_mask`); for a causal model
that read a whole row as inputs and reported 0. Importing code_t5 puts `inputs_mask` in its
place: the prefix LM's inputs as before, none for a model that reads no delimiter.
"""

import os

import gin
import mesh_tensorflow as mtf
from mesh_tensorflow.transformer import dataset as transformer_dataset
from mesh_tensorflow.transformer import transformer
from mesh_tensorflow.transformer import utils as mtf_utils
import tensorflow.compat.v1 as tf
import tensorflow_datasets as tfds

from code_t5 import preprocessors
from code_t5.decoding import search
from code_t5.modes import json_lines
from code_t5.vocabulary import newline_id


READ_ONLY = 1 << 24  # more than any vocabulary's size
_MESH_TF_INPUTS_MASK = transformer.delimited_lm_inputs_mask


def inputs_mask(ids, eos_id=1):
  """mesh-tf's `delimited_lm_inputs_mask` for the model gin configures: the positions of
  each row that are read and not predicted. For the prefix LM, everything up to its EOS
  delimiter; a causal model (`preprocessors.inputs_delimiter` False) predicts every position,
  as its training loss counts them.

  Padding is never inputs. mesh-tf's rule (an even count of EOS before a position) makes the
  padding after a row's last EOS inputs again, and the prefix LM's inputs attend to each other
  in both directions: in a row that is not packed (score, perplexity eval) its prefix would
  read the padding, which training (packed, the padding a segment of its own) and decoding
  (`search._PrefixReader`) never do. Every loss already leaves padding out."""
  if preprocessors.inputs_delimiter():
    return mtf.logical_and(_MESH_TF_INPUTS_MASK(ids, eos_id), mtf.not_equal(ids, 0))
  return mtf.not_equal(ids, ids)


def read_only(ids):
  """`ids` marked as read and not scored; padding (0) stays padding."""
  return ids + READ_ONLY * tf.cast(ids > 0, ids.dtype)


@gin.configurable(module="code_t5")
def completions_dataset_fn(sequence_length, vocabulary, dataset_split,
                           input_filename=gin.REQUIRED):
  """score_dataset_fn: the pairs {"prefix", "completion"} of a JSON lines file."""
  del dataset_split
  preprocessors.check_no_repository_context("score")
  pairs = json_lines.read_records(input_filename, ("prefix", "completion"))
  inputs_vocab = mtf_utils.inputs_vocabulary(vocabulary)
  targets_vocab = mtf_utils.targets_vocabulary(vocabulary)
  line_break = newline_id(inputs_vocab)

  def dataset_fn(sequence_length=sequence_length):
    inputs_length, targets_length = sequence_length["inputs"], sequence_length["targets"]
    ds = tf.data.Dataset.from_tensor_slices(tuple(map(list, zip(*pairs))))
    return ds.map(lambda prefix, completion: {
        "inputs": read_only(preprocessors.prefix_inputs(inputs_vocab.encode_tf(prefix),
                                                        inputs_length, line_break)),
        "targets": preprocessors.with_eos_padded(
            targets_vocab.encode_tf(completion)[:targets_length - 1], targets_length)})
  return [transformer_dataset.EvalDataset(os.path.basename(input_filename), dataset_fn,
                                          None, [])]


@gin.configurable(module="code_t5")
def completion_scores(model, features, variable_dtype):
  """`predict_fn` for score mode: per row, log P(the unmarked ids | everything before them),
  the last of them, EOS, as the line's end (a newline or EOS).

  `features["targets"]` is a row as mesh-tf's delimited_lm joins it: the prefix marked
  `read_only` (completions_dataset_fn), then the completion and its EOS. The model reads the
  row's ids as training does, the prefix LM its EOS delimiter too: mesh-tf's default score,
  but for what it sums over (and `inputs_mask`'s padding).
  """
  marked = features["targets"]
  scored = mtf.less(marked, READ_ONLY)
  ids = marked - READ_ONLY * mtf.to_int32(mtf.logical_not(scored))
  logits, _ = model.call_simple(inputs=transformer.autoregressive_inputs(ids), targets=ids,
                                compute_loss=False, mode="score",
                                variable_dtype=variable_dtype)
  _, length_dim, vocab_dim = logits.shape.dims
  # The completion's end, EOS, scored as the line search scores it: the line ends here, at a
  # newline or EOS (search.line_end_logits).
  logits = search.line_end_logits(mtf.cast(logits, tf.float32), vocab_dim)
  cross_entropy = mtf.layers.softmax_cross_entropy_with_logits(
      logits, search.line_end_targets(ids), vocab_dim)
  cross_entropy *= mtf.cast(mtf.logical_and(scored, mtf.greater(ids, 0)), tf.float32)
  return -mtf.reduce_sum(cross_entropy, reduced_dim=length_dim)


@gin.configurable(module="code_t5")
def score_completions(estimator, input_fn, eval_checkpoint_step, model_dir, vocabulary,
                      score_postprocess_fn, num_examples=None, output_filename=gin.REQUIRED):
  """Writes `<output_filename>-<step>` for each checkpoint `eval_checkpoint_step` names (a
  step, a list of steps or -1 for the latest, as eval reads it): line i is log P(completion
  i, then the line's end | prefix i), in nats: the line search's score of that completion
  (search.line_end_logits). Returns the last checkpoint's scores.

  mesh-tf's `score_with_estimator` finds the padding rows by looking at the targets it gets
  back, which a vocabulary that detokenizes in the graph (ours) has already turned into
  strings; here they are counted on the token ids before the run.
  """
  del score_postprocess_fn, vocabulary
  if num_examples is None:
    with tf.Graph().as_default():
      num_examples = sum(int(row.any()) for batch in tfds.as_numpy(input_fn({}))
                         for row in batch["targets"])
  scores = []
  for checkpoint_path in mtf_utils.get_checkpoint_iterator(eval_checkpoint_step, model_dir):
    results = list(estimator.predict(input_fn, checkpoint_path=checkpoint_path))
    scores = [float(r["scores"]) for r in results[:num_examples]]
    step = mtf_utils.get_step_from_checkpoint_path(checkpoint_path)
    json_lines.write_lines([f"{s:.6f}" for s in scores], f"{output_filename}-{step}")
  return scores
