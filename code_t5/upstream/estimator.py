"""tensorflow_estimator's Estimator.train and Estimator.predict, wrapped under the entry points.

  train    1. tells the preprocessors the step this training starts at, the step of the model
              dir's checkpoint (`preprocessors.training_reads_from`: the one input of the
              training's draws that the data pipeline cannot see), so that a resumed training,
              or train_and_evaluate's next segment, meets new full-line cursors and LM windows,
              not the first pass's again;
           2. joins `progress.TrainProgressHook`: progress lines, `code_t5.train_budget`, the
              closing line.
  predict  its results pass through `progress.predicted`: lines counting what was decoded or
           scored, not the padding of the last batch.
"""

from tensorflow_estimator.python.estimator import estimator as estimator_lib

from code_t5 import files
from code_t5 import preprocessors
from code_t5 import progress

_TF_TRAIN = estimator_lib.Estimator.train
_TF_PREDICT = estimator_lib.Estimator.predict


def train(estimator, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
  preprocessors.training_reads_from(files.latest_checkpoint_step(estimator.model_dir) or 0)
  hooks = list(hooks or []) + [progress.TrainProgressHook(estimator.model_dir, max_steps)]
  return _TF_TRAIN(estimator, input_fn, hooks=hooks, steps=steps, max_steps=max_steps,
                   saving_listeners=saving_listeners)


def predict(estimator, input_fn, *args, **kwargs):
  return progress.predicted(_TF_PREDICT(estimator, input_fn, *args, **kwargs))


def install() -> None:
  """Under the entry points (upstream.install decides); tests call it in their runs too."""
  estimator_lib.Estimator.train = train
  estimator_lib.Estimator.predict = predict
