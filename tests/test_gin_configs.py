"""Every gin file parses on top of the model it is meant for, with no unknown names."""

import glob
import os
import re

import gin
import pytest

import code_t5
import mesh_tensorflow as mtf
from mesh_tensorflow.transformer import utils as mtf_utils  # configurables, tpu_mesh_shape
import pkg_resources
import t5.models.mesh_transformer  # noqa: F401  (configurables)
from code_t5 import gin_config

GIN_DIR = code_t5.gin_configs_dir()
MESH_DEFAULTS = pkg_resources.resource_filename("mesh_tensorflow.transformer",
                                                "gin/defaults.gin")
ALL_FILES = sorted(os.path.relpath(p, GIN_DIR)
                   for p in glob.glob(os.path.join(GIN_DIR, "**", "*.gin"), recursive=True))


def _parse(*files, bindings=()):
  gin.clear_config()
  gin.parse_config_file(MESH_DEFAULTS)
  gin.parse_config_files_and_bindings(list(files), list(bindings), skip_unknown=False,
                                      finalize_config=False)


@pytest.fixture(autouse=True)
def _clean_gin():
  yield
  gin.clear_config()


@pytest.mark.parametrize("name", ALL_FILES)
def test_file_parses_after_the_shared_prefix_lm_and_its_values_hold(name):
  """Parsed last, a file's own values are the ones gin holds: none is shadowed by an include
  of its own, or bound to a name gin resolves elsewhere."""
  base = "models/bitransformer.gin" if name == "models/bitransformer.gin" else (
      "models/shared-prefix_lm.gin")
  _parse(base, name)
  own = {key: value for key, value in gin_config.literal_bindings(
      os.path.join(GIN_DIR, name)).items() if value is not None}
  for key, value in own.items():
    query = key if "." in key.rsplit("/", 1)[-1] else f"{key}/macro.value"
    assert gin.query_parameter(query) == value, (name, key)


def test_dataset_gin_wires_mixture_name_everywhere():
  _parse("models/shared-prefix_lm.gin", bindings=["MIXTURE_NAME = 'flcc_java'"])
  for target in ("mesh_train_dataset_fn.mixture_or_task_name",
                 "mesh_eval_dataset_fn.mixture_or_task_name",
                 "get_vocabulary.mixture_or_task_name"):
    assert repr(gin.query_parameter(target)) == "%MIXTURE_NAME"
  assert gin.query_parameter("MIXTURE_NAME/macro.value") == "flcc_java"


@pytest.mark.parametrize("mode_file", ["eval_full_line.gin", "infer_full_line.gin", "score.gin",
                                       "export.gin", "perplexity_eval.gin", "beam_search.gin",
                                       "consensus.gin", "consensus_javascript.gin",
                                       "model_consensus.gin", "finetune.gin",
                                       "train_and_eval.gin", "copy_cache.gin", "file_cache.gin"])
def test_no_mode_file_sets_the_mixture_back(mode_file, tmp_path):
  """The data is named once: a gin file of the user's that sets MIXTURE_NAME, placed after the
  model file and before a mode file, keeps its mixture (the mode files include no dataset.gin)."""
  mixture_file = tmp_path / "java.gin"
  mixture_file.write_text("MIXTURE_NAME = 'flcc_java'\n")
  _parse("models/causal_lm_dev.gin", str(mixture_file), mode_file)
  assert gin.query_parameter("MIXTURE_NAME/macro.value") == "flcc_java"


def test_a_run_must_name_its_data():
  """Checked once gin has read the files (launch_checks, as mesh_transformer_main runs it),
  with the causal model's own mixture offered."""
  from code_t5.upstream import launch_checks  # pylint: disable=g-import-not-at-top
  _parse("models/causal_lm_dev.gin", "eval_full_line.gin")
  with pytest.raises(launch_checks.ConfigError) as raised:
    launch_checks.check_config()
  assert str(raised.value) == (
      "MIXTURE_NAME is not set: add --gin_param=\"MIXTURE_NAME = 'flcc_python_causal'\"")


def test_dev_model_overrides_size_and_mesh():
  _parse("models/shared-prefix_lm_dev.gin")
  assert gin.query_parameter("d_model/macro.value") == 256
  assert gin.query_parameter("utils.run.mesh_devices") == ["cpu:0"]
  assert gin.query_parameter("utils.run.model_type") == "delimited_lm"
  assert gin.query_parameter("Unitransformer.input_full_attention") is True


def test_the_dev_model_decodes_with_the_copy_cache_and_its_peer_too():
  """models/causal.gin includes copy_cache.gin: the dev model's greedy decoding copies (weight
  0.5) unless a param turns it off; the prefix LM's does not; and the learning bench reads the
  same weight from the same files (through the include) for its GPT peer, and the window an
  eval-only launch decodes from for the peer and copy-window."""
  import bench_learning  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import copy_cache  # pylint: disable=g-import-not-at-top
  _parse("models/causal_lm_dev.gin")
  assert copy_cache.copy_cache()["weight"] == 0.5
  _parse("models/causal_lm_dev.gin", bindings=["code_t5.copy_cache.weight = 0.0"])
  assert copy_cache.copy_cache()["weight"] == 0.0
  _parse("models/shared-prefix_lm_dev.gin")
  assert copy_cache.copy_cache()["weight"] == 0.0
  gin.clear_config()
  assert bench_learning.decoding_options() == (3, copy_cache.copy_cache(weight=0.5))
  assert bench_learning.decoding_options(gin_params=["code_t5.copy_cache.weight = 0.0"]) == (
      3, copy_cache.copy_cache(weight=0.0))


def test_javascript_has_its_own_consensus_weights_and_the_bench_reads_them():
  """consensus_javascript.gin is consensus.gin with lighter copies: where copy-next's line
  wins under Python's weights, the model's own line wins under JavaScript's. The learning bench
  scores a language's consensus line with the weights of the file infer would read for it."""
  import bench_learning  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import consensus  # pylint: disable=g-import-not-at-top
  prefix = ("class A:\n    def __eq__(self, other):\n        if other is None:\n"
            "            return NotImplemented\n        if other is self:\n"
            "            return True\n        return self.x == other.x\n\n"
            "    def __lt__(self, other):\n        if other is None:\n            ")
  lines, scores = ["return False", "raise TypeError"], [-0.5, -1.5]
  chosen = {}
  for language in ("python", "java", "javascript"):
    _parse("models/causal_lm_dev.gin", "infer_full_line.gin", consensus.gin_file(language),
           bindings=["MIXTURE_NAME = 'flcc_python_causal'"])
    chosen[language] = consensus.consensus_line(prefix, lines, scores)[0]
  assert chosen == {"python": "return NotImplemented", "java": "return NotImplemented",
                    "javascript": "return False"}
  gin.clear_config()
  assert bench_learning.consensus_weights("python") == {
      "copy_weight": 0.3, "next_weight": 0.4, "temperature": 2.0}
  assert bench_learning.consensus_weights("javascript") == {
      "copy_weight": 0.2, "next_weight": 0.2, "temperature": 2.0}
  assert bench_learning.consensus_weights("javascript", ["NEXT_WEIGHT = 0.0"])[
      "next_weight"] == 0.0


@pytest.mark.parametrize("mode_files,reads_context", [
    ([], True), (["eval_full_line.gin"], True), (["infer_full_line.gin", "consensus.gin"], True),
    (["score.gin"], False), (["export.gin"], False), (["perplexity_eval.gin"], True)])
def test_the_dev_model_reads_repository_context_with_a_bias_per_layer(mode_files,
                                                                      reads_context):
  """models/causal_lm_dev.gin trains and decodes with repository context and a relative bias
  table per layer; score and the SavedModel export, which read no context, turn it off, and
  the prefix LM's dev file has neither."""
  from code_t5 import preprocessors  # pylint: disable=g-import-not-at-top
  _parse("models/causal_lm_dev.gin", *mode_files)
  assert preprocessors.repository_context()["enabled"] is reads_context
  assert gin.query_parameter(
      "transformer_layers.SelfAttention.relative_attention_type") == "bias"
  _parse("models/shared-prefix_lm_dev.gin", *mode_files)
  assert preprocessors.repository_context()["enabled"] is False
  assert gin.query_parameter(
      "transformer_layers.SelfAttention.relative_attention_type") == "bias_shared"


def _sequence_length():
  value = gin.query_parameter("utils.run.sequence_length")
  if isinstance(value, gin.config.ConfigurableReference):  # %DECODING_LENGTHS
    value = gin.query_parameter(f"{value.scoped_selector}.value")
  return value


DEV_TRAINING = {"inputs": 128, "targets": 32}
TINY = {"inputs": 64, "targets": 16}
DEV_DECODING = {"inputs": 544, "targets": 32}  # models/causal_lm_dev.gin's


@pytest.mark.parametrize("files, params, lengths", [
    (["models/causal_lm_dev.gin"], [], DEV_TRAINING),
    (["models/causal_lm_dev.gin", "train_and_eval.gin"], [], DEV_TRAINING),
    (["models/causal_lm_dev.gin", "perplexity_eval.gin"], [], DEV_TRAINING),
    (["models/causal_lm_dev.gin", "eval_full_line.gin"], [], DEV_DECODING),
    (["models/causal_lm_dev.gin", "infer_full_line.gin", "beam_search.gin"], [],
     DEV_DECODING),
    (["models/causal_lm_dev.gin", "score.gin"], [], DEV_DECODING),
    (["models/causal_lm_dev.gin", "export.gin"], [], DEV_DECODING),
    (["models/shared-prefix_lm_dev.gin", "eval_full_line.gin"], [], DEV_TRAINING),
    (["models/shared-prefix_lm.gin", "export.gin"], [], {"inputs": 512, "targets": 128}),
    # tiny.gin before the mode file (as the docs' tests place it) and after it.
    (["models/causal_lm_dev.gin", "models/tiny.gin", "eval_full_line.gin"], [], TINY),
    (["models/causal_lm_dev.gin", "eval_full_line.gin"], ["include 'models/tiny.gin'"], TINY),
    (["models/causal_lm_dev.gin", "eval_full_line.gin"],
     ["utils.run.sequence_length = {'inputs': 1024, 'targets': 32}"],
     {"inputs": 1024, "targets": 32}),
    (["models/causal_lm_dev.gin", "export.gin"],
     ["DECODING_LENGTHS = {'inputs': 256, 'targets': 32}"], {"inputs": 256, "targets": 32}),
])
def test_training_reads_its_window_and_decoding_the_models_own(files, params, lengths):
  """Eval, infer, score and export read DECODING_LENGTHS (decoding_lengths.gin): the causal
  dev model's 544 input tokens, the training's elsewhere; training, perplexity eval and
  train-and-eval's evals the training's; a later binding wins. The benches' reading of the
  same files (benchlib.launch_lengths, the serving bench's window) agrees with gin's."""
  import benchlib  # pylint: disable=g-import-not-at-top
  _parse(*files, bindings=params)
  assert _sequence_length() == lengths
  assert benchlib.launch_lengths(files, params) == lengths


@pytest.mark.parametrize("files, params, stride", [
    (["models/causal_lm_dev.gin"], [], 1),
    (["models/causal_lm_dev.gin", "train_and_eval.gin"], [], 1),
    (["models/causal_lm_dev.gin", "eval_full_line.gin"], [], 128),
    (["models/causal_lm_dev.gin", "export.gin"], [], 128),
    (["models/shared-prefix_lm.gin", "export.gin"], [], 1),
    (["models/causal_lm_dev.gin", "eval_full_line.gin"], ["include 'models/tiny.gin'"], 1),
    (["models/causal_lm_dev.gin", "infer_full_line.gin"], ["WINDOW_STRIDE = 64"], 64),
])
def test_a_decodings_window_starts_where_the_model_file_lets_it(files, params, stride):
  """code_t5.window_stride: the dev model's decodings start the window every 128 tokens
  (WINDOW_STRIDE, decoding_lengths.gin's binding); training and the other models at any line
  start; tiny.gin's window too; a later binding wins."""
  from code_t5 import preprocessors  # pylint: disable=g-import-not-at-top
  _parse(*files, bindings=params)
  assert preprocessors.window_stride() == stride


def test_mode_files_resolve_from_any_working_directory_without_a_location_prefix(
    tmp_path, monkeypatch):
  """The docs' commands pass no --gin_location_prefix: importing code_t5 put gin_configs/ on
  gin's search path, and `include`s inside the files and in --gin_param resolve through it."""
  monkeypatch.chdir(tmp_path)
  _parse("models/shared-prefix_lm_dev.gin", "mesh/cpu.gin", "infer_full_line.gin",
         "beam_search.gin", bindings=["include 'models/tiny.gin'",
                                      "MIXTURE_NAME = 'flcc_python_full_line'",
                                      "INPUT_FILE = 'prefixes.jsonl'", "OUTPUT_FILE = 'out'"])
  assert gin.query_parameter("INPUT_FILE/macro.value") == "prefixes.jsonl"
  assert gin.query_parameter("utils.run.mode") == "infer"
  assert gin.query_parameter("d_model/macro.value") == 32  # tiny.gin, included last
  gin.finalize()


@pytest.mark.parametrize("mode_file, required", [
    ("infer_full_line.gin", ("INPUT_FILE", "OUTPUT_FILE")),
    ("score.gin", ("INPUT_FILE", "OUTPUT_FILE")),
    ("export.gin", ("EXPORT_PATH",)),
])
def test_a_mode_file_says_what_must_be_set(mode_file, required):
  """Each run file opens with its required macros: unset, the run stops once gin has read the
  files (launch_checks, as mesh_transformer_main runs it) with one line naming the macro."""
  from code_t5.upstream import launch_checks  # pylint: disable=g-import-not-at-top
  for missing in required:
    _parse("models/shared-prefix_lm.gin", mode_file,
           bindings=["MIXTURE_NAME = 'flcc_python'"] +
           [f"{name} = 'x'" for name in required if name != missing])
    assert launch_checks.required_unset() == [missing]
    with pytest.raises(launch_checks.ConfigError) as raised:
      launch_checks.check_config()
    assert str(raised.value).startswith(f"{missing} is not set: add --gin_param=\"{missing} = ")


@pytest.mark.parametrize("mesh_file", sorted(
    os.path.relpath(path, GIN_DIR) for path in glob.glob(os.path.join(GIN_DIR, "mesh", "tpu_*.gin"))))
def test_each_tpu_mesh_is_the_slice_its_name_says(mesh_file):
  """mesh/tpu_v3_32.gin: a v3-32 topology, laid out by mesh-tf as 32 cores."""
  generation, cores = re.fullmatch(r"mesh/tpu_(v\d+)_(\d+)\.gin", mesh_file).groups()
  _parse("models/shared-prefix_lm.gin", mesh_file)
  assert gin.query_parameter("utils.tpu_mesh_shape.tpu_topology") == f"{generation}-{cores}"
  assert _parsed_mesh().size == int(cores)


def _parsed_mesh():
  """The `mtf.Shape` the parsed gin config gives mesh-tf as `utils.run.mesh_shape`."""
  shape = gin.query_parameter("utils.run.mesh_shape")
  if isinstance(shape, gin.config.ConfigurableReference):  # the TPU files' tpu_mesh_shape()
    shape = mtf_utils.tpu_mesh_shape(
        gin.query_parameter("utils.tpu_mesh_shape.tpu_topology"),
        gin.query_parameter("utils.tpu_mesh_shape.model_parallelism"))
  return mtf.convert_to_shape(shape)


def _mesh(mesh_file, bindings=()):
  """The mesh a mesh file (and gin params after it) gives mesh-tf, as `mtf.Shape`'s string."""
  _parse("models/shared-prefix_lm.gin", mesh_file, bindings=bindings)
  return str(_parsed_mesh())


def test_every_shipped_mesh_is_one_that_test_mesh_shapes_trains():
  """test_mesh_shapes runs one training per mesh, not per file; a new file with a mesh of its
  own must add a run there."""
  import test_mesh_shapes  # pylint: disable=g-import-not-at-top
  trained = {_mesh(mesh_file, params) for mesh_file, params in test_mesh_shapes.SHAPES.values()}
  assert len(trained) == len(test_mesh_shapes.SHAPES)  # no two runs of one mesh
  shipped = {name: _mesh(name) for name in ALL_FILES if name.startswith("mesh/")}
  assert len(shipped) >= 6
  assert not {name: mesh for name, mesh in shipped.items() if mesh not in trained}, trained


def test_a_typo_in_a_gin_param_is_an_error():
  with pytest.raises(ValueError, match="run.trian_steps"):
    _parse("models/shared-prefix_lm.gin", bindings=["run.trian_steps = 10"])
