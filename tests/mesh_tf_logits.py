"""mesh-tf's logits of token sequences, read by the training graph's own model: the reference
the served ONNX graph (code_t5_session/graph.py) is held to.

  python tests/mesh_tf_logits.py CHECKPOINT DATA_DIR GIN_FILES_JSON GIN_PARAMS_JSON < sequences.json

prints JSON: for each input sequence (the model's inputs: 0, then the tokens), the logits
[positions, vocab] of the position after each. The gin files are parsed as
mesh_transformer_main parses them on a CPU (mesh-tf's defaults, the files, float32 slices and
activations), the model built by mesh-tf's build_model and called on all positions at once.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main():
  checkpoint, data_dir = sys.argv[1], sys.argv[2]
  gin_files, gin_params = json.loads(sys.argv[3]), json.loads(sys.argv[4])
  sequences = json.loads(sys.stdin.read())
  import gin  # pylint: disable=g-import-not-at-top
  import mesh_tensorflow as mtf  # pylint: disable=g-import-not-at-top
  from mesh_tensorflow.transformer import transformer  # pylint: disable=g-import-not-at-top
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  import numpy as np  # pylint: disable=g-import-not-at-top
  import seqio  # pylint: disable=g-import-not-at-top
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  from code_t5 import session_export  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(data_dir)
  session_export._parse_gin(gin_files, gin_params)  # pylint: disable=protected-access
  with gin.unlock_config():  # as mesh_transformer_main binds them without --tpu
    gin.bind_parameter("utils.get_variable_dtype.slice_dtype", "float32")
    gin.bind_parameter("utils.get_variable_dtype.activation_dtype", "float32")
  vocab_size = tf.train.load_checkpoint(checkpoint).get_tensor("transformer/embedding").shape[0]
  out = []
  for sequence in sequences:
    graph = tf.Graph()
    with graph.as_default():
      mtf_graph = mtf.Graph()
      mesh = mtf.Mesh(mtf_graph, "reference")
      model = mtf_utils.build_model(model_type="lm", input_vocab_size=vocab_size,
                                    output_vocab_size=vocab_size,
                                    layout_rules=mtf.convert_to_layout_rules(""),
                                    mesh_shape=mtf.convert_to_shape(""))
      length = mtf.Dimension("length", len(sequence))
      batch = mtf.Dimension("batch", 1)
      # The model's inputs are the sequence itself; the targets (one on) only give the
      # shifted-by-one view that autoregressive_inputs undoes.
      targets = mtf.import_tf_tensor(mesh, tf.constant([sequence[1:] + [0]], tf.int32),
                                     [batch, length])
      logits, _ = model.call_simple(inputs=transformer.autoregressive_inputs(targets),
                                    targets=targets, compute_loss=False,
                                    mode=tf.estimator.ModeKeys.EVAL,
                                    variable_dtype=mtf_utils.get_variable_dtype())
      impl = mtf.placement_mesh_impl.PlacementMeshImpl(shape=[], layout={}, devices=[""])
      lowering = mtf.Lowering(mtf_graph, {mesh: impl})
      result = lowering.export_to_tf_tensor(logits)
      stored = tf.train.load_checkpoint(checkpoint).get_variable_to_shape_map()
      saver = tf.train.Saver({v.op.name: v for v in tf.global_variables()
                              if v.op.name in stored})
      with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        saver.restore(sess, checkpoint)
        sess.run(lowering.copy_masters_to_slices())
        out.append(np.asarray(sess.run(result)[0], np.float64).tolist())
  print(json.dumps(out))


if __name__ == "__main__":
  main()
