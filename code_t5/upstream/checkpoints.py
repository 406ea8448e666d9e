"""mesh-tf's `get_checkpoint_iterator`, replaced under the entry points: which checkpoints an
eval, infer, score or export reads.

  CHECKPOINT_STEP = None in eval mode   each new checkpoint until the training's last step
                                        (train_eval.new_checkpoints; mesh-tf waits forever)
  a step, a list of steps, or -1        exactly those (files.chosen_checkpoint): a step that is
                                        not there is an error naming the steps that are, where
                                        mesh-tf takes the closest and says so only in its log
  any of them                           whole (files.checkpoint_problem): a data file cut short
                                        is named before TensorFlow's restore fails on it
"""

from code_t5 import files
from code_t5 import gin_config
from code_t5.modes import train_eval
from code_t5.upstream import wrapping

def _choosing(get_checkpoint_iterator):
  def chosen(checkpoint_step, model_dir, skip_until=0, stop_after=None, find_closest=True):
    if (checkpoint_step is None and stop_after is None
        and gin_config.run_parameter("mode") == "eval"):
      return train_eval.new_checkpoints(model_dir, skip_until)
    steps = checkpoint_step if isinstance(checkpoint_step, (list, tuple)) else [checkpoint_step]
    if all(isinstance(step, int) for step in steps):
      return list(dict.fromkeys(files.chosen_checkpoint(step, model_dir) for step in steps))
    return map(files.whole_checkpoint, get_checkpoint_iterator(
        checkpoint_step, model_dir, skip_until, stop_after, find_closest))
  return chosen


def install() -> None:
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  wrapping.wrap_once(mtf_utils, "get_checkpoint_iterator", _choosing)
