"""What a training run writes before its first step: by default, nothing it does not need.

TensorFlow's `CheckpointSaverHook`, which mesh-tf's model function creates, does two things
when the session starts, before any training: it serializes the whole graph three times
(`graph.pbtxt`, the graph and the meta graph in the event file) and saves a checkpoint of
the step it starts at (step 0, or the very checkpoint a resumed run just restored). With
default settings it also writes a meta graph (`model.ckpt-N.meta`) beside every checkpoint.
On a 2-core machine that is a quarter to a third of the start-up of a small model
(`scripts/bench_startup.py`), and nothing in t5 or code_t5 reads any of it: restoring,
eval, infer, score and export rebuild the graph from gin.

mesh-tf does not expose the hook to gin, so under `mesh_transformer_main` importing code_t5
replaces the hook's start-of-session step (as `errors.py` replaces the error report). Both
writes stay one gin binding away:

  --gin_param="code_t5.startup_writes.graph = True"       # the graph in TensorBoard, .meta files
  --gin_param="code_t5.startup_writes.checkpoint = True"  # a checkpoint before the first step

With both set, the hook runs exactly as TensorFlow wrote it.
"""

import gin
from tensorflow.python.training import basic_session_run_hooks


_HOOK = basic_session_run_hooks.CheckpointSaverHook
_TF_AFTER_CREATE_SESSION = _HOOK.after_create_session


@gin.configurable(module="code_t5")
def startup_writes(graph: bool = False, checkpoint: bool = False):
  """(write the graph, save a checkpoint at session start); gin sets them, see above."""
  return graph, checkpoint


def _no_save(session, step):  # pylint: disable=unused-argument
  return False  # CheckpointSaverHook._save's "should stop"


def _after_create_session(hook, session, coord):
  write_graph, save_checkpoint = startup_writes()
  # Read by `_save` at every checkpoint as write_meta_graph.
  hook._save_graph_def = write_graph  # pylint: disable=protected-access
  if write_graph:
    if not save_checkpoint:
      hook._save = _no_save  # pylint: disable=protected-access
    try:
      _TF_AFTER_CREATE_SESSION(hook, session, coord)
    finally:
      hook.__dict__.pop("_save", None)
    return
  global_step = session.run(hook._global_step_tensor)  # pylint: disable=protected-access
  if save_checkpoint:
    hook._save(session, global_step)  # pylint: disable=protected-access
  # As TensorFlow does: the next checkpoint is save_steps after this step.
  hook._timer.update_last_triggered_step(global_step)  # pylint: disable=protected-access


def install() -> None:
  """Under t5's entry point (upstream.install decides); tests call it in their runs too."""
  _HOOK.after_create_session = _after_create_session
