"""Every change code_t5 makes to the behaviour of t5, seqio, mesh-tf, TensorFlow and gin: this
package, one module a change. The behaviour each change calls lives with its job (decoding,
progress, files, ...); what replaces or wraps an upstream name lives here.

`import code_t5` calls `install()` once. What it changes, and where:

  anywhere
    model_fn.py      mesh_tensorflow.transformer.utils.tpu_estimator_model_fn, wrapped: a
                     predict_fn's extra outputs (the line search's top k and scores) join
                     PREDICT's predictions, and so infer's results and the SavedModel's
                     signature; and the copy cache's "cache" feature (file_cache.gin) joins
                     utils._MODEL_FEATURES and the model's sequence lengths
    mesh_products.py mesh_tensorflow.placement_mesh_impl.PlacementMeshImpl.einsum: with
                     code_t5.products.column_block bound (0, off, by default), a product that
                     is one 2-D matmul lowers to code_t5.products.einsum
    (install)        mesh_tensorflow.transformer.transformer.delimited_lm_inputs_mask ->
                     score.inputs_mask: a causal model's rows have no inputs (perplexity eval
                     and score count every position)
    (gin)            a finalize hook, train_eval.wrapped_schedule: under train_and_evaluate the
                     run's learning rate schedule goes through code_t5.plateau_learning_rate
  under t5's mesh_transformer_main or seqio's cache_tasks_main (errors.ENTRY_POINTS) only
    excepthook.py    sys.excepthook: an uncaught error is one line, `code_t5: error: ...`
    startup.py       CheckpointSaverHook.after_create_session: no graph or checkpoint writes
                     before the first step (gin: code_t5.startup_writes)
    estimator.py     Estimator.train, Estimator.predict: progress lines, code_t5.train_budget,
                     code_t5.step_traces (TensorFlow's ProfilerHook);
                     a training tells the preprocessors the step it starts at
                     (preprocessors.training_reads_from: a resumed training or
                     train_and_evaluate's next segment meets new cursors, not the first pass's);
                     under code_t5.reproducible, a graph seed, one thread, and
                     mesh_tensorflow.placement_mesh_impl's random and hash seeded
    (files)          t5's path flags (--model_dir, --t5_tfds_data_dir, ...) ->
                     files.check_path_flags: a gs:// bucket that does not exist is one line
                     before t5 makes the model dir
    launch_checks.py mesh_tensorflow.transformer.utils.parse_gin_defaults_and_flags, wrapped:
                     the parsed config checked before t5 reads it (a required macro unset, an
                     unknown MIXTURE_NAME, a step count that is no number, a missing vocabulary
                     or checkpoint)
    checkpoints.py   mesh_tensorflow.transformer.utils.get_checkpoint_iterator, replaced: an eval
                     with CHECKPOINT_STEP = None evaluates new checkpoints until the training's
                     last (a sibling eval); a step that is not there, or a checkpoint cut short,
                     is an error instead of the closest step
    eval_model.py    mesh_tensorflow.transformer.utils.eval_model, wrapped: an eval records the
                     lengths it read (<split>_eval/sequence_length.json)
  under seqio's cache_tasks_main only
    seqio_cache.py   Beam's beam-temp-* of the selected Tasks removed

Private names read without being changed (vocabulary's seqio internals, export's
`_encode_tf`, the TFDS builder's, gin's), the `.pth` shim that runs before any of this, and
the gin files that shadow t5's of the same name are listed with these in CONTRIBUTING.md,
"Upstream patches": what an upgrade of t5, seqio, mesh-tf, TFDS, TensorFlow or gin must check
again.
"""

import gin

from code_t5 import errors
from code_t5 import files
from code_t5.modes import score
from code_t5.modes import train_eval
from code_t5.upstream import checkpoints
from code_t5.upstream import estimator
from code_t5.upstream import eval_model
from code_t5.upstream import excepthook
from code_t5.upstream import launch_checks
from code_t5.upstream import mesh_products
from code_t5.upstream import model_fn
from code_t5.upstream import seqio_cache
from code_t5.upstream import startup

_installed = False


def install() -> None:
  """Installs the changes above (once; a second call changes nothing). The Tasks must be
  registered first: the cache clean-up selects among them."""
  global _installed
  if _installed:
    return
  _installed = True
  from mesh_tensorflow.transformer import transformer  # pylint: disable=g-import-not-at-top
  model_fn.install()
  mesh_products.install()
  transformer.delimited_lm_inputs_mask = score.inputs_mask
  gin.config.register_finalize_hook(train_eval.wrapped_schedule)
  if errors.running_entry_point():
    excepthook.install()
    startup.install()
    estimator.install()
    files.check_path_flags()
    launch_checks.install()
    checkpoints.install()
    eval_model.install()
  seqio_cache.clean_up_if_entry_point()
