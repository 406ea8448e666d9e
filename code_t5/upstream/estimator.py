"""tensorflow_estimator's Estimator.train and Estimator.predict, wrapped under the entry points.

  train    1. tells the preprocessors the step this training starts at, the step of the model
              dir's checkpoint (`preprocessors.training_reads_from`: the one input of the
              training's draws that the data pipeline cannot see), so that a resumed training,
              or train_and_evaluate's next segment, meets new full-line cursors and LM windows,
              not the first pass's again;
           2. joins `progress.TrainProgressHook`: progress lines, `code_t5.train_budget`, the
              closing line;
           3. with `code_t5.step_traces.every`, joins TensorFlow's ProfilerHook: a trace of
              one step's ops every that many steps (where a step's time goes).
  predict  its results pass through `progress.predicted`: lines counting what was decoded or
           scored, not the padding of the last batch.
Both run under `code_t5.reproducible` (reproducible.gin): a graph seed for what mesh-tf draws
without one (every initializer, sampled decodes), the seeds of its placement mesh's random ops
(dropout) drawn from the same seed, and, for bit-identical trainings on a CPU, one thread
(launch_checks asks for TensorFlow's oneDNN ops off too). Reads mesh-tf's
`placement_mesh_impl.random` (the module) and its use of the builtin `hash`, both only in
`PlacementMeshImpl.random`.
"""

import random
from typing import Optional
import zlib

import gin
from mesh_tensorflow import placement_mesh_impl
import tensorflow.compat.v1 as tf
from tensorflow_estimator.python.estimator import estimator as estimator_lib

from code_t5 import files
from code_t5 import preprocessors
from code_t5 import progress

_TF_TRAIN = estimator_lib.Estimator.train
_TF_PREDICT = estimator_lib.Estimator.predict


@gin.configurable(module="code_t5")
def reproducible(seed: Optional[int] = None, bit_identical: bool = False):
  """(graph seed, bit_identical). mesh-tf draws every initializer without a seed, so two runs
  start from other weights unless `seed` is set. With the same seed a CPU training still drifts
  apart from its second step (the dev model's loss 7.00996 against 7.00832), as TensorFlow's
  threads and its oneDNN ops add the same floats in another order; `bit_identical` runs each
  step's ops one at a time (intra- and inter-op pools of 1), and the launch stops unless oneDNN
  is off (launch_checks). Both together made 400 steps of the dev model bit-identical run to
  run on a 2-core Zen 4, at 2.51 steps/s against 3.61; either alone did not."""
  return seed, bit_identical


@gin.configurable(module="code_t5")
def step_traces(every: int = 0) -> int:
  """Steps between traces of one training step's ops (0: none). Each is a Chrome trace,
  `timeline-<step>.json` in the model dir, of every op the step ran, on which thread and for
  how long (TensorFlow's ProfilerHook; the first step's builds the kernels, so read a later
  one). A traced step runs slower than the rest. `scripts/bench_throughput.py --profile` sums
  them by the part of the model each op belongs to:
    --gin_param="code_t5.step_traces.every = 100" """
  return every


def _reproducible(estimator) -> None:
  """Puts `reproducible()`'s seed and threads in `estimator`'s config. Estimator reads the
  seed from `_config` and the session's config from `_session_config`, both set when mesh-tf's
  `get_estimator` builds it, which takes neither from gin."""
  seed, bit_identical = reproducible()
  _seed_placement_draws(seed)
  changes = {}
  if seed is not None:
    changes["tf_random_seed"] = seed
  if bit_identical:
    session_config = tf.ConfigProto()
    if estimator._session_config is not None:  # pylint: disable=protected-access
      session_config.CopyFrom(estimator._session_config)  # pylint: disable=protected-access
    session_config.intra_op_parallelism_threads = 1
    session_config.inter_op_parallelism_threads = 1
    # Per session: the process's shared inter-op pool is sized by its first session.
    session_config.use_per_session_threads = True
    changes["session_config"] = session_config
  if changes:
    estimator._config = estimator._config.replace(**changes)  # pylint: disable=protected-access
    estimator._session_config = estimator._config.session_config  # pylint: disable=protected-access


def _seed_placement_draws(seed):
  """mesh-tf's placement mesh (cpu, gpu) seeds each random op from `random.random()` and the
  builtin `hash` of a string, which Python salts in every process: dropout then differs from
  run to run whatever the graph's seed. With a seed, both come from it (a `random.Random` of
  the seed, made again for each graph, and CRC-32); without, mesh-tf's own again."""
  if seed is None:
    placement_mesh_impl.random = random
    placement_mesh_impl.__dict__.pop("hash", None)
  else:
    placement_mesh_impl.random = random.Random(seed)
    placement_mesh_impl.hash = lambda text: zlib.crc32(text.encode())


def train(estimator, input_fn, hooks=None, steps=None, max_steps=None, saving_listeners=None):
  _reproducible(estimator)
  preprocessors.training_reads_from(files.latest_checkpoint_step(estimator.model_dir) or 0)
  hooks = list(hooks or []) + [progress.TrainProgressHook(estimator.model_dir, max_steps)]
  every = step_traces()
  if every:
    hooks.append(tf.train.ProfilerHook(save_steps=every, output_dir=estimator.model_dir))
  return _TF_TRAIN(estimator, input_fn, hooks=hooks, steps=steps, max_steps=max_steps,
                   saving_listeners=saving_listeners)


def predict(estimator, input_fn, *args, **kwargs):
  _reproducible(estimator)
  return progress.predicted(_TF_PREDICT(estimator, input_fn, *args, **kwargs))


def install() -> None:
  """Under the entry points (upstream.install decides); tests call it in their runs too."""
  estimator_lib.Estimator.train = train
  estimator_lib.Estimator.predict = predict
