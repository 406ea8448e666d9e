"""Every change code_t5 makes to the behaviour of t5, seqio, mesh-tf and TensorFlow, in one place.

`import code_t5` calls `install()` once. What it changes, and where each change lives:

  anywhere
    mesh_tensorflow.transformer.transformer.delimited_lm_inputs_mask -> score.inputs_mask
        a causal model's rows have no inputs (perplexity eval, score count every position)
    mesh_tensorflow.transformer.utils.tpu_estimator_model_fn -> decoding.add_predictions: a
        predict_fn's extra outputs (the line search's top k and scores) join PREDICT's
        predictions, and so infer's results and the SavedModel's signature
  under t5's mesh_transformer_main or seqio's cache_tasks_main (errors.ENTRY_POINTS) only
    sys.excepthook -> errors.report: an uncaught error is one line, `code_t5: error: ...`
    CheckpointSaverHook.after_create_session -> startup: no graph or checkpoint writes before
        the first step (gin: code_t5.startup_writes)
    Estimator.train, Estimator.predict -> progress: progress lines, code_t5.train_budget
    Estimator.train -> tasks: a training reads its train split with draws of its start step
        (resumed, or train_and_evaluate's next segment: new cursors, not the first pass's)
    t5's path flags (--model_dir, --t5_tfds_data_dir, ...) -> files.check_path_flags: a gs://
        bucket that does not exist is one line before t5 makes the model dir
    mesh_tensorflow.transformer.utils.parse_gin_defaults_and_flags -> launch_checks: the
        parsed config checked before t5 reads it (a required macro unset, an unknown
        MIXTURE_NAME, a step count that is no number, a missing vocabulary or checkpoint)
    mesh_tensorflow.transformer.utils.get_checkpoint_iterator -> train_eval: an eval with
        CHECKPOINT_STEP = None evaluates new checkpoints until the training's last (a sibling
        eval), keeping the best-checkpoint record, instead of waiting forever; a step that is
        not there, or a checkpoint cut short, is an error instead of the closest step
    mesh_tensorflow.transformer.utils.eval_model -> summaries: an eval records the lengths it
        read (<split>_eval/sequence_length.json), the window copy-window reads beside it
  under seqio's cache_tasks_main only
    seqio_cache.clean_up_if_entry_point: Beam's beam-temp-* of the selected Tasks removed

Private names read without being changed (decoding._call_internal, vocabulary's seqio
internals), the `.pth` shim that runs before any of this, and the gin files that shadow t5's
of the same name are listed with these in CONTRIBUTING.md, "Upstream patches": what an
upgrade of t5, seqio, mesh-tf or TensorFlow must check again.
"""

from code_t5 import decoding
from code_t5 import errors
from code_t5 import files
from code_t5 import launch_checks
from code_t5 import progress
from code_t5 import score
from code_t5 import seqio_cache
from code_t5 import startup
from code_t5 import summaries
from code_t5 import tasks
from code_t5 import train_eval

_installed = False


def install() -> None:
  """Installs the changes above (once; a second call changes nothing). The Tasks must be
  registered first: the cache clean-up selects among them."""
  global _installed
  if _installed:
    return
  _installed = True
  score.install()
  decoding.install()
  if errors.running_entry_point():
    errors.install()
    startup.install()
    progress.install()
    tasks.install()
    files.check_path_flags()
    launch_checks.install()
    train_eval.install()
    summaries.install()
  seqio_cache.clean_up_if_entry_point()
