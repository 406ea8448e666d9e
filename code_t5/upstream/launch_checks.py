"""What a launch's gin config must hold, checked once gin has read it and before t5 uses it.

t5's `mesh_transformer_main` parses the gin files and `--gin_param`s, then asks for the
vocabulary of `MIXTURE_NAME` and builds the run. A mistake there surfaces deep inside upstream
code (`AssertionError: Got: <object object at 0x...>` for an unset MIXTURE_NAME, `'str' object
is not callable` for `run.train_steps = 'ten'`). Under the entry point (upstream/) the parse
is followed by `check_config`, which names what is wrong and what to type instead:

  * a macro or binding left at `%gin.REQUIRED` (MIXTURE_NAME, INPUT_FILE, EXPORT_PATH, ...);
  * MIXTURE_NAME naming no registered Task or Mixture (the closest names offered);
  * utils.run's step counts bound to something other than a whole number;
  * a vocabulary the run needs that is not in the data dir: because the data dir is missing,
    the language not built, or its vocabulary not trained, each with the command that helps;
  * the checkpoint a training continues from or starts from (init_checkpoint), or an export
    reads, missing or cut short (files.checkpoint_problem); eval, infer and score check the
    steps they ask for when mesh-tf picks them (upstream/checkpoints.py);
  * that checkpoint's relative position bias, one table shared by all layers or one per
    layer, not what the gin config builds (relative_bias_mismatch);
  * a bit-identical training (reproducible.gin) in a process whose TensorFlow has its oneDNN
    ops on.
(A launch's TF_ENABLE_ONEDNN_OPTS, where unset, was chosen before TensorFlow loaded: the
`.pth` shim's `choose_onednn`.)
"""

import difflib

import gin
import seqio

from code_t5 import files
from code_t5 import gin_config
from code_t5 import preprocessors
from code_t5 import tasks
from code_t5 import vocabulary
from code_t5.data import builder as flcc_builder
from code_t5.upstream import estimator
from code_t5.upstream import wrapping
from code_t5_session import graph as session_graph


class ConfigError(ValueError):
  """The launch's gin config cannot run; the message names the binding and the fix."""


# What to suggest for a binding left at %gin.REQUIRED. MIXTURE_NAME's depends on the model.
_EXAMPLES = {
    "INPUT_FILE": "'prefixes.jsonl'",
    "OUTPUT_FILE": "'completions'",
    "EXPORT_PATH": "'/path/to/export'",
    "utils.run.init_checkpoint": "'/path/to/model_dir/model.ckpt-N'",
}
# utils.run's arguments that count steps: mesh-tf calls a train_steps that is not an int.
_STEP_COUNTS = ("train_steps", "iterations_per_loop", "save_checkpoints_steps",
                "keep_checkpoint_max", "perplexity_eval_steps")


def _is_required(value) -> bool:
  return (isinstance(value, gin.config.ConfigurableReference)
          and value.scoped_selector == "gin.REQUIRED/gin.constant")


def required_unset() -> list:
  """The macros ("MIXTURE_NAME") and bindings ("utils.run.init_checkpoint") of the parsed
  config whose value is still %gin.REQUIRED, in the order gin holds them."""
  unset = []
  for (scope, selector), params in gin.config._CONFIG.items():  # pylint: disable=protected-access
    for name, value in params.items():
      if _is_required(value):
        if selector == "gin.macro":
          unset.append(scope)
        else:
          unset.append(".".join(filter(None, (scope, selector.replace(
              "mesh_tensorflow.transformer.", ""), name))))
  return unset


def _example(name: str) -> str:
  if name == "MIXTURE_NAME":
    causal = not preprocessors.inputs_delimiter()  # models/causal.gin's model
    return "'flcc_python_causal'" if causal else "'flcc_python'"
  return _EXAMPLES.get(name, "...")


def _mixture_name():
  """MIXTURE_NAME as a string, or None where it is a reference (multilingual_mixture())."""
  try:
    value = gin.query_parameter("MIXTURE_NAME/macro.value")
  except ValueError:
    return None
  return value if isinstance(value, str) else None


def _check_mixture(name: str) -> list:
  """The Tasks of `name`, or a ConfigError offering the registered names closest to it."""
  try:
    return seqio.get_subtasks(seqio.get_mixture_or_task(name))
  except ValueError:
    known = sorted(set(seqio.TaskRegistry.names()) | set(seqio.MixtureRegistry.names()))
    close = difflib.get_close_matches(name, [k for k in known if k.startswith("flcc")], n=3)
    hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else (
        "code_t5's are flcc_<language>_full_line, _prefix_lm, _lm, flcc_<language> and "
        "flcc_<language>_causal (README, Tasks)")
    raise ConfigError(f"MIXTURE_NAME = {name!r} is no registered Task or Mixture: {hint}")


def _check_vocabularies(task_list) -> None:
  """Each FLCC vocabulary the Tasks read is in the data dir, or what would put it there."""
  data_dir = vocabulary.tfds_data_dir()
  for task in task_list:
    vocab = task.output_features["targets"].vocabulary
    if not isinstance(vocab, vocabulary.FlccVocabulary):
      continue
    path = vocab.sentencepiece_model_file
    if files.exists(path):
      continue
    if not files.isdir(data_dir):
      raise ConfigError(f"{data_dir}: no such data dir (--t5_tfds_data_dir): build a dataset "
                        f"there with `python -m code_t5.data build --data_dir={data_dir}`, or "
                        "name the data dir that holds one")
    if vocab.name == vocabulary.SHARED:  # trained over the languages built
      which = f"--languages={','.join(tasks.built_languages(data_dir))}"
    elif flcc_builder.finished_builder(data_dir, vocab.name) is None:
      raise ConfigError(
          f"{flcc_builder.builder_dir(data_dir, vocab.name)}: not built (Task {task.name}): "
          f"run `python -m code_t5.data build --data_dir={data_dir} --language={vocab.name}`, "
          f"then `python -m code_t5.data vocab --data_dir={data_dir} --language={vocab.name}`")
    else:
      which = f"--language={vocab.name}"
    raise ConfigError(f"{path}: no vocabulary (Task {task.name}): run `python -m code_t5.data "
                      f"vocab --data_dir={data_dir} {which}` first")


def _check_step_counts() -> None:
  for name in _STEP_COUNTS:
    value = gin_config.run_parameter(name)
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
      continue
    if name == "train_steps" and callable(value):
      continue  # mesh-tf's auto_train_steps, or a function of the same signature
    raise ConfigError(f"run.{name} = {value!r}: a whole number of steps is expected, e.g. "
                      f"--gin_param=\"run.{name} = 1000\"")


RELATIVE_ATTENTION = "transformer_layers.SelfAttention.relative_attention_type"


def relative_bias_mismatch(checkpoint: str, relative_attention_type):
  """What is wrong with restoring `checkpoint` into a model of `relative_attention_type`
  ("bias": a table per layer, "bias_shared": block_000's for all), or None. A shared table's
  checkpoint restored as "bias" stops in TF's restore, a traceback deep in upstream code; a
  checkpoint of a table per layer restored as "bias_shared" restores block_000's table and
  serves every layer with it, silently."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  shapes = tf.train.load_checkpoint(checkpoint).get_variable_to_shape_map()
  if session_graph.relative_bias_name(0) not in shapes or not any(
      name.startswith("transformer/block_001/") for name in shapes):
    return None  # no relative bias, or one layer: both types restore alike
  per_layer = session_graph.relative_bias_name(1) in shapes
  if relative_attention_type == "bias" and not per_layer:
    fix = f"--gin_param='{RELATIVE_ATTENTION} = \"bias_shared\"'"
    if preprocessors.repository_context()["enabled"]:
      fix += " (and, for models/causal_lm_dev.gin before #60, --gin_param=\"" \
             "code_t5.repository_context.enabled = False\")"
    return (f"{checkpoint}: its model has one relative position bias for all layers, these gin "
            f"files one per layer; add {fix} as its training had")
  if relative_attention_type == "bias_shared" and per_layer:
    return (f"{checkpoint}: its model has a relative position bias per layer, these gin files "
            f"one for all layers; add --gin_param='{RELATIVE_ATTENTION} = \"bias\"' as its "
            "training had")
  return None


def _check_checkpoints() -> None:
  """A training continues from the model dir's latest checkpoint, where there is one, or
  starts from init_checkpoint; an export without a step reads the latest: each must be whole.
  (Eval, infer and score check the steps they ask for: files.chosen_checkpoint.)"""
  from absl import flags  # pylint: disable=g-import-not-at-top
  model_dir = flags.FLAGS["model_dir"].value if "model_dir" in flags.FLAGS else None
  mode = gin_config.run_parameter("mode", "train")
  if mode == "train":
    init = gin_config.run_parameter("init_checkpoint")
    if init and files.isdir(init):  # TF takes a model dir for its latest checkpoint too
      init = files.chosen_checkpoint(-1, init)
    restored = [init, model_dir and files.latest_checkpoint(model_dir)]
    for path in restored:
      if path:
        files.whole_checkpoint(path)
  else:
    if mode.startswith("export") and model_dir and not gin_config.run_parameter(
        "export_checkpoint_step"):
      files.chosen_checkpoint(-1, model_dir)
    # Eval, infer and score: the model dir's checkpoints are all of one model.
    restored = [model_dir and files.latest_checkpoint(model_dir)]
  for path in restored:
    problem = path and relative_bias_mismatch(path, gin_config.parameter(RELATIVE_ATTENTION))
    if problem:
      raise ConfigError(problem)


def _check_reproducible() -> None:
  """`code_t5.reproducible.bit_identical` needs TensorFlow's oneDNN ops off: on one thread they
  still add floats in an order of their own (two 6-step trainings of the dev model differed
  from the second step), and TensorFlow reads TF_ENABLE_ONEDNN_OPTS once, when imported."""
  if not estimator.reproducible()[1]:
    return
  from tensorflow.python.util import _pywrap_util_port  # pylint: disable=g-import-not-at-top
  if _pywrap_util_port.IsMklEnabled():
    raise ConfigError("code_t5.reproducible.bit_identical = True (reproducible.gin): TensorFlow's "
                      "oneDNN ops are on, and they add floats in varying order; run with "
                      "TF_ENABLE_ONEDNN_OPTS=0 in the environment (TensorFlow reads it when "
                      "imported)")


def check_config() -> None:
  """The checks above on gin's parsed config; the first failure is a ConfigError."""
  unset = required_unset()
  if unset:
    name = unset[0]
    raise ConfigError(f"{name} is not set: add --gin_param=\"{name} = {_example(name)}\"")
  _check_step_counts()
  name = _mixture_name()
  if name is not None:
    _check_vocabularies(_check_mixture(name))
  _check_checkpoints()
  _check_reproducible()


def _checking(parse_gin_defaults_and_flags):
  def parsed_and_checked(*args, **kwargs):
    result = parse_gin_defaults_and_flags(*args, **kwargs)
    check_config()
    return result
  return parsed_and_checked


def install() -> None:
  """mesh-tf's parse_gin_defaults_and_flags, then check_config (under the entry point)."""
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  wrapping.wrap_once(mtf_utils, "parse_gin_defaults_and_flags", _checking)
