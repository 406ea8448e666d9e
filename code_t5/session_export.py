"""Export a checkpoint for editor sessions: `code_t5_session`'s ONNX graph, its weights in
float32 and 8 bits, the vocabulary and the decoding's settings, all read from the same gin
files and checkpoint as mesh_transformer_main's export.

  python -m code_t5.session_export --model_dir=runs/dev --t5_tfds_data_dir=data/dev/tfds \\
      --gin_file=models/causal_lm_dev.gin --gin_param="MIXTURE_NAME = 'flcc_python_causal'" \\
      --export_dir=runs/dev_session

writes to --export_dir:
  model.onnx       the model (code_t5_session/graph.py), float32 weights (in
                   model.onnx.data beside it)
  model.int8.onnx  the same with its weight products in 8 bits (onnxruntime's dynamic
                   quantization: int8 weights, per output column; activations quantized per
                   call); attention's products of activations stay float (weights in
                   model.int8.onnx.data)
  spm.model        the Task's vocabulary
  session.json     the window (DECODING_LENGTHS), token healing, the copy cache and the
                   healing pieces' texts: what `code_t5_session.Session` decodes with;
                   written last, so an export stopped half-way has none and is not taken

The served model is the causal model (models/causal.gin) with T5's relative position bias,
one table shared by all layers (causal.gin's) or one per layer
(transformer_layers.SelfAttention.relative_attention_type = "bias"); another configuration
stops in one line that says what the session cannot serve.
"""

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from code_t5.upstream import launch_checks
from code_t5_session import graph as session_graph
from code_t5_session import model as session_model
from code_t5_session import session as session_lib


class ExportError(ValueError):
  """A configuration the session does not serve, or a checkpoint it cannot read."""


def _parse_gin(gin_files, gin_params):
  import gin  # pylint: disable=g-import-not-at-top
  import code_t5  # pylint: disable=g-import-not-at-top
  from mesh_tensorflow.transformer import utils  # pylint: disable=g-import-not-at-top
  import t5.models.mesh_transformer  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  import logging  # pylint: disable=g-import-not-at-top
  root = logging.getLogger()
  level = root.level
  root.setLevel(logging.CRITICAL)  # gin logs an ERROR for each include it finds on its path
  try:  # as mesh_transformer_main parses them: mesh-tf's defaults first
    gin.parse_config_file(os.path.join(os.path.dirname(utils.__file__),
                                       utils._DEFAULT_CONFIG_FILE))  # pylint: disable=protected-access
    # Named by its full path: gin resolves a bare name in the working folder first, where a
    # file of that name would change the export's window unseen.
    gin.parse_config_files_and_bindings(
        [*gin_files, os.path.join(code_t5.gin_configs_dir(), "decoding_lengths.gin")],
        gin_params)
  finally:
    root.setLevel(level)


RELATIVE_ATTENTION = launch_checks.RELATIVE_ATTENTION


def decoding_settings():
  """The settings of greedy decoding under the parsed gin config, as code_t5.greedy_decode
  reads them; an ExportError where the session decodes otherwise."""
  from code_t5 import gin_config, preprocessors  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import copy_cache, search  # pylint: disable=g-import-not-at-top
  if preprocessors.inputs_delimiter():
    raise ExportError("the session serves the causal model (models/causal.gin, which reads "
                      "no delimiter); these gin files configure the prefix LM")
  # {binding: (the values the graph computes, its value where no gin file binds it)}
  checks = {
      RELATIVE_ATTENTION: (("bias_shared", "bias"), None),
      "Unitransformer.positional_embedding": ((False,), None),
      "Unitransformer.shared_embedding_and_softmax_weights": ((True,), None),
      "DenseReluDense.activation": (("relu",), "relu"),
  }
  for name, (expected, default) in checks.items():
    value = gin_config.parameter(name, default)
    if value not in expected:
      served = " or ".join(repr(e) for e in expected)
      raise ExportError(f"the session serves models with {name} = {served}; "
                        f"these gin files set {value!r}")
  lengths = gin_config.run_parameter("sequence_length")
  return {
      "inputs_length": int(lengths["inputs"]), "targets_length": int(lengths["targets"]),
      "window_stride": int(preprocessors.window_stride()),
      "healing_pieces": int(search.token_healing()), "copy_cache": copy_cache.copy_cache(),
      "relative_buckets": int(gin_config.parameter(
          "SelfAttention.relative_attention_num_buckets", 32)),
      # "bias": a table per layer, "bias_shared": one for all (what the checkpoint holds).
      "relative_bias": gin_config.parameter(RELATIVE_ATTENTION),
      # What Session.set_repository retrieves by: repository_context.gin's options, when on.
      "repository_context": (preprocessors.repository_context()
                             if preprocessors.repository_context()["enabled"] else None),
  }


def relative_bias_by_distance(table: np.ndarray, buckets: int, distances: int) -> np.ndarray:
  """[..., heads, distances + 1] of `table` [..., heads, buckets] (one layer's, or every
  layer's stacked): the bias of a key d positions before its query, by mesh-tf's own bucket
  function (causal: no later key is read)."""
  import mesh_tensorflow as mtf  # pylint: disable=g-import-not-at-top
  from mesh_tensorflow.transformer import transformer_layers  # pylint: disable=g-import-not-at-top
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  graph = tf.Graph()
  with graph.as_default():
    mtf_graph = mtf.Graph()
    mesh = mtf.Mesh(mtf_graph, "buckets")
    distance = mtf.Dimension("distance", distances + 1)
    relative = -mtf.range(mesh, distance, tf.int32)
    bucket = transformer_layers._relative_position_bucket(  # pylint: disable=protected-access
        relative, bidirectional=False, num_buckets=buckets)
    impl = mtf.placement_mesh_impl.PlacementMeshImpl(shape=[], layout={}, devices=[""])
    lowering = mtf.Lowering(mtf_graph, {mesh: impl})
    result = lowering.export_to_tf_tensor(bucket)
    with tf.Session(graph=graph) as sess:
      ids = sess.run(result)
  return table[..., ids]


def checkpoint_weights(checkpoint: str, bias_per_layer: bool = False):
  """(Architecture, {name: float32 array}) of a mesh-tf checkpoint of the causal model; with
  `bias_per_layer`, each layer's relative position bias table besides block_000's."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  reader = tf.train.load_checkpoint(checkpoint)
  shapes = reader.get_variable_to_shape_map()
  layers = 0
  while session_graph.weight_names(layers)["q"] in shapes:
    layers += 1
  names = [session_graph.EMBEDDING, session_graph.FINAL_NORM, session_graph.RELATIVE_BIAS]
  names += [n for layer in range(layers) for n in session_graph.weight_names(layer).values()]
  if bias_per_layer:
    names += [session_graph.relative_bias_name(layer) for layer in range(1, layers)]
  missing = [n for n in names if n not in shapes]
  if not layers or missing:
    raise ExportError(f"{checkpoint}: not a checkpoint of the causal model the session serves "
                      f"({(missing or ['transformer/block_000'])[0]} is not in it)")
  weights = {n: np.asarray(reader.get_tensor(n), np.float32) for n in names}
  vocab_size, d_model = weights[session_graph.EMBEDDING].shape
  heads = weights[session_graph.RELATIVE_BIAS].shape[0]
  arch = session_graph.Architecture(layers=layers, heads=heads,
                                    d_kv=weights[session_graph.weight_names(0)["q"]].shape[1] // heads,
                                    d_model=d_model, vocab_size=vocab_size)
  return arch, weights


def _vocabulary_model():
  """The serialized sentencepiece model of the Task's vocabulary (MIXTURE_NAME's first Task)."""
  import gin  # pylint: disable=g-import-not-at-top
  import seqio  # pylint: disable=g-import-not-at-top
  mixture = gin.query_parameter("%MIXTURE_NAME")
  task = seqio.get_subtasks(seqio.get_mixture_or_task(mixture))[0]
  return task.output_features["targets"].vocabulary.sp_model


def _write(path, data):
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  files.write_atomically(path, data)


def export(model_dir: str, export_dir: str, checkpoint_step: int = -1, int8: bool = True):
  """Writes the export of the parsed gin config's model at `checkpoint_step` of `model_dir`;
  returns the files written."""
  from onnxruntime.quantization import QuantType, quantize_dynamic  # pylint: disable=g-import-not-at-top
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import healing  # pylint: disable=g-import-not-at-top
  from code_t5.vocabulary import EOS_ID, NEWLINE_ID  # pylint: disable=g-import-not-at-top
  settings = decoding_settings()
  checkpoint = files.chosen_checkpoint(checkpoint_step, model_dir)
  problem = launch_checks.relative_bias_mismatch(checkpoint, settings["relative_bias"])
  if problem:
    raise ExportError(problem)
  per_layer = settings["relative_bias"] == "bias"
  arch, weights = checkpoint_weights(checkpoint, bias_per_layer=per_layer)
  # The model's input sequence: 0, the window, and what decoding writes (healing's pieces too).
  positions = (1 + settings["inputs_length"] + settings["targets_length"]
               + settings["healing_pieces"])
  tables = (np.stack([weights[session_graph.relative_bias_name(layer)]
                      for layer in range(arch.layers)])
            if per_layer else weights[session_graph.RELATIVE_BIAS])
  bias = relative_bias_by_distance(tables, settings["relative_buckets"], positions)
  model = session_graph.build(arch, weights, bias, positions)
  for key, value in session_model.architecture_metadata(arch, positions).items():
    entry = model.metadata_props.add()
    entry.key, entry.value = key, value
  vocabulary = _vocabulary_model()
  texts = healing.tables_of_model(vocabulary, arch.vocab_size).texts.tolist()
  written = []
  files.makedirs(export_dir)
  session_json = os.path.join(export_dir, session_lib.CONFIG)
  if files.exists(session_json):  # no old config beside new files, if this export stops
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    tf.io.gfile.remove(session_json)
  with tempfile.TemporaryDirectory() as tmp:
    # The weights go in a file beside the graph (ONNX's external data): onnxruntime reads
    # them from it into their tensors, where from one protobuf of graph and weights it held
    # the file's bytes and the tensors at once (the base model's float32 process: 650 MB
    # after loading, against 415).
    import onnx  # pylint: disable=g-import-not-at-top
    float_path = os.path.join(tmp, "model.onnx")
    onnx.save_model(model, float_path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=1024)
    if int8:
      import logging  # pylint: disable=g-import-not-at-top
      logging.getLogger().setLevel(logging.ERROR)  # its advice to pre-process image models
      # Weights in 7 bits (reduce_range): without VNNI (AVX2 alone, the slow class) the
      # u8 x s8 kernels add pairs of products in int16, which 8-bit weights can saturate. On
      # a Zen 3 the dev model's logits were 3.3% of their spread off float32's at the median
      # with 8 bits, 0.8% with 7 (docs/BENCHMARK_LOG.md, "Serving on the slow class").
      quantize_dynamic(float_path, os.path.join(tmp, "model.int8.onnx"),
                       weight_type=QuantType.QInt8, per_channel=True, reduce_range=True,
                       nodes_to_quantize=session_graph.weight_matmuls(model),
                       use_external_data_format=True)  # model.int8.onnx.data
    for name in sorted(os.listdir(tmp)):
      if not name.startswith(("model.onnx", "model.int8.onnx")):
        continue  # the quantizer's scratch files
      target = os.path.join(export_dir, name)
      with open(os.path.join(tmp, name), "rb") as f:
        _write(target, f.read())
      written.append(target)
  _write(os.path.join(export_dir, session_lib.VOCABULARY), vocabulary)
  config = {**settings, "healing_texts": texts, "checkpoint": checkpoint,
            "newline_id": NEWLINE_ID, "eos_id": EOS_ID, "int8": int8}
  _write(session_json, json.dumps(config))
  return written + [os.path.join(export_dir, session_lib.VOCABULARY), session_json]


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(prog="python -m code_t5.session_export",
                                   description=__doc__.split("\n\n", 1)[0])
  parser.add_argument("--model_dir", required=True, help="holds the checkpoint")
  parser.add_argument("--export_dir", required=True, help="where the export goes")
  parser.add_argument("--t5_tfds_data_dir", required=True,
                      help="the run's data dir: the Task's vocabulary is read there")
  parser.add_argument("--gin_file", action="append", default=[],
                      help="the model's gin files, as it was trained (models/causal_lm_dev.gin)")
  parser.add_argument("--gin_param", action="append", default=[])
  parser.add_argument("--checkpoint_step", type=int, default=-1, help="-1: the latest")
  parser.add_argument("--no_int8", action="store_true", help="float32 weights only")
  args = parser.parse_args(argv)
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import errors, files  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(args.t5_tfds_data_dir)

  def run():
    _parse_gin(args.gin_file, args.gin_param)
    for path in export(args.model_dir, args.export_dir, args.checkpoint_step,
                       int8=not args.no_int8):
      print(f"wrote {path}")
  return errors.run_command("code_t5.session_export", run,
                            expected=(ExportError, files.CheckpointError, ValueError))


if __name__ == "__main__":
  sys.exit(main())
