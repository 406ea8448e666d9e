"""mesh-tf's `eval_model`, wrapped under the entry points: an eval writes the lengths it reads
to `<split>_eval/sequence_length.json` (run_records.eval_lengths reads it back), so that
`code_t5.baselines` and the learning bench read copy-window from the window the eval read (a
decoding window can be longer than the training's: decoding_lengths.gin)."""

import json
import os

from code_t5 import files
from code_t5 import preprocessors
from code_t5 import run_records
from code_t5.upstream import wrapping

def _recording_lengths(eval_model):
  def recorded(estimator, vocabulary, sequence_length, batch_size, dataset_split, model_dir,
               eval_dataset_fn, eval_summary_dir, *args, **kwargs):
    if sequence_length is not None:  # None: mesh-tf's longest example, found as it reads them
      written_to = eval_summary_dir or run_records.eval_dir(model_dir, dataset_split)
      if kwargs.get("eval_dir_suffix") is not None:  # as eval_model names its dir
        written_to += f"_{kwargs['eval_dir_suffix']}"
      files.write_atomically(os.path.join(written_to, run_records.EVAL_LENGTHS),
                             json.dumps(sequence_length))
      files.write_atomically(os.path.join(written_to, run_records.EVAL_WINDOW_STRIDE),
                             json.dumps(preprocessors.window_stride()))
    return eval_model(estimator, vocabulary, sequence_length, batch_size, dataset_split,
                      model_dir, eval_dataset_fn, eval_summary_dir, *args, **kwargs)
  return recorded


def install() -> None:
  """Under the entry points."""
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  wrapping.wrap_once(mtf_utils, "eval_model", _recording_lengths)
