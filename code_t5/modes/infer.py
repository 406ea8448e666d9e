"""Infer: complete lines of code with a trained model (gin_configs/infer_full_line.gin).

  complete_lines_from_file  infer_model.decode_fn

Every prefix is prepared exactly as the full-line Task prepares its inputs
(`preprocessors.model_inputs`): tokenize, keep the longest tail that starts a line and fits,
EOS. Greedy decoding writes one completion per line; the line search (beam_search.gin) one
JSON object per line, its top k completions and their scores, in its order (beam_search.gin's:
greedy's line first); the consensus line
(consensus.gin) one JSON object per line, the line chosen and its confidence.
"""

import json
import math

import gin
from mesh_tensorflow.transformer import utils as mtf_utils
import tensorflow.compat.v1 as tf

from code_t5 import preprocessors
from code_t5.data import flcc
from code_t5.decoding import copy_cache
from code_t5.modes import json_lines
from code_t5.vocabulary import newline_id


def prefixes_dataset(prefixes, vocab, input_length, contexts=None, afters=None):
  """The model's features of each prefix, as the full-line Task gives them
  (`preprocessors.model_inputs`), "inputs" padded; with `contexts`, each prefix's repository
  context before it; with `afters`, the file after each prefix's line, for the copy cache."""
  line_break = newline_id(vocab)
  texts = {"prefix": prefixes, "context": contexts, "after": afters}
  cache_tokens = copy_cache.copy_cache()["file_tokens"]

  def features(text):
    encoded = {key: vocab.encode_tf(value) for key, value in text.items()}
    found = preprocessors.model_inputs(encoded["prefix"], input_length, line_break,
                                       encoded.get("context"), cache_tokens,
                                       encoded.get("after"))
    return {**found, "inputs": preprocessors.padded(found["inputs"], input_length)}
  return tf.data.Dataset.from_tensor_slices(
      {key: value for key, value in texts.items() if value is not None}).map(features)


def texts_after(input_filename, parsed):
  """The text after each prefix's line (`json_lines.afters_of`) when the copy cache reads it
  (code_t5.copy_cache.after_cursor); else None, and a record that carries one is an error (it
  would go unread)."""
  found = json_lines.afters_of(parsed, input_filename)
  if not copy_cache.copy_cache()["after_cursor"]:
    if any(found):
      raise json_lines.PrefixFileError(
          f'{input_filename}: records carry "after", which only a run with file_cache.gin and '
          "code_t5.copy_cache.after_cursor = True reads")
    return None
  return found


def repository_contexts(prefixes, input_filename, parsed=None):
  """Each prefix's repository context from its record's "repository" files
  (`json_lines.repositories_of`; `parsed`: the file's records, if read already), when
  repository_context.gin turns it on; else None, and a record that carries files is an error
  (they would go unread)."""
  if parsed is None:
    parsed = json_lines.read_json_lines(input_filename)
  repositories = json_lines.repositories_of(
      parsed, input_filename, {extension: language for language, (_, extensions) in
                               flcc.LANGUAGES.items() for extension in extensions})
  if not preprocessors.repository_context()["enabled"]:
    if any(files for files, _ in repositories):
      raise json_lines.PrefixFileError(
          f'{input_filename}: records carry "repository" files, which only a run with '
          "repository_context.gin reads (code_t5.repository_context.enabled = True)")
    return None
  return [preprocessors.context_of(preprocessors.repository_index(files, language), prefix)
          if files else "" for prefix, (files, language) in zip(prefixes, repositories)]


@gin.configurable(module="code_t5")
def complete_lines_from_file(estimator, vocabulary, model_type, batch_size, sequence_length,
                             checkpoint_path=None, input_filename=gin.REQUIRED,
                             output_filename=gin.REQUIRED, choose_line=None):
  """Writes `<output_filename>-<step>`: line i completes prefix i.

  `choose_line(prefix, completions, scores) -> (line, confidence)` (consensus.gin:
  `code_t5.consensus_line`), after the line search: line i is then the line it chooses of the
  search's and the file's copies, as {"completion", "confidence"}.
  """
  del model_type
  parsed = json_lines.read_json_lines(input_filename)  # read once: its records and their files
  prefixes = [prefix for prefix, in json_lines.records_of(parsed, input_filename)]
  contexts = repository_contexts(prefixes, input_filename, parsed)
  after = texts_after(input_filename, parsed)
  # Pad the lists to whole batches; the extra decodes are dropped below.
  padding = [""] * (-len(prefixes) % batch_size)

  def padded(texts):
    return None if texts is None else texts + padding

  def input_fn(params):
    del params
    return prefixes_dataset(padded(prefixes), mtf_utils.inputs_vocabulary(vocabulary),
                            sequence_length["inputs"], padded(contexts), padded(after)).batch(
                                batch_size, drop_remainder=True)

  results = list(estimator.predict(input_fn, checkpoint_path=checkpoint_path))[:len(prefixes)]
  step = mtf_utils.get_step_from_checkpoint_path(checkpoint_path)
  targets_vocabulary = mtf_utils.targets_vocabulary(vocabulary)
  if choose_line:
    if results and "top_k_scores" not in results[0]:
      raise ValueError("code_t5.complete_lines_from_file.choose_line chooses among the line "
                       "search's lines: add --gin_file=beam_search.gin (consensus.gin does)")
    lines = [chosen_line(prefix, *searched_lines(result, targets_vocabulary), choose_line)
             for prefix, result in zip(prefixes, results)]
  else:
    lines = [completion_line(result, targets_vocabulary) for result in results]
  json_lines.write_lines(lines, f"{output_filename}-{step}")


def chosen_line(prefix, completions, scores, choose_line):
  """What infer writes of a prefix whose line `choose_line` chooses: {"completion",
  "confidence"}."""
  line, confidence = choose_line(prefix, completions, scores)
  return json.dumps({"completion": line, "confidence": round(confidence, 6)})


def _text(decoded, vocabulary):
  """A decode as text: detokenized in the graph (bytes), or ids (on a TPU, as mesh-tf's)."""
  if isinstance(decoded, bytes):
    text = decoded.decode("utf-8", errors="replace")
  else:
    text = vocabulary.decode([int(i) for i in decoded])
  return preprocessors.cut_at_newline(text)


def completion_line(result, vocabulary):
  """What infer writes of one prefix's prediction: its completion; or, from the line search,
  {"completions": [...], "scores": [...]}, its k lines with their log-probabilities (nats),
  in its order, without those it did not finish or that scored under its min_score (-inf)."""
  if "top_k_scores" not in result:
    return _text(result["outputs"], vocabulary)
  completions, scores = searched_lines(result, vocabulary)
  return json.dumps({"completions": completions, "scores": scores})


def searched_lines(result, vocabulary):
  """(completions, scores) of the line search's prediction for one prefix: its k lines, in its
  order (`code_t5.prefix_lm_beam_search.rank`), with their log-probabilities (nats, to 6
  decimals, as infer writes them), without those it did not finish or that scored under its
  min_score (-inf)."""
  kept = [(_text(output, vocabulary), round(float(score), 6))
          for output, score in zip(result["top_k_outputs"], result["top_k_scores"])
          if not math.isinf(score)]
  return [text for text, _ in kept], [score for _, score in kept]
