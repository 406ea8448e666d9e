"""mesh-tf's `tpu_estimator_model_fn`, wrapped in every process that imports code_t5: the model
functions it builds add what a predict_fn asked for (`search.predict_also`: the line search's
`top_k_outputs`, `top_k_scores`) to a PREDICT spec's predictions, exported through the same
lowering, so that infer reads them and the SavedModel's signature returns them.

And the copy cache's file feature ("cache", `code_t5.copy_cache.file_tokens`) reaches the
model: mesh-tf's eval input keeps only the features in its `_MODEL_FEATURES`, and its model
function imports each feature at `sequence_length[<name before "_">]`.

Reads mesh-tf's private `MtfRestoreHook._lowering` and `_MODEL_FEATURES`, and `get_estimator`'s
call of the builder with `vocabulary` third, `use_tpu` fifth and `sequence_length` ninth when
they come by position.
"""

import mesh_tensorflow as mtf
import tensorflow.compat.v1 as tf

from code_t5 import preprocessors
from code_t5.decoding import copy_cache
from code_t5.decoding import search
from code_t5.upstream import wrapping


def add_predictions(model_fn_builder):
  """mesh-tf's `tpu_estimator_model_fn`, whose model functions add what the predict_fn asked
  for (`search.predict_also`) to a PREDICT spec's predictions."""
  def build(*args, **kwargs):
    args, kwargs = with_cache_length(args, kwargs)
    model_fn = model_fn_builder(*args, **kwargs)
    vocabulary = kwargs["vocabulary"] if "vocabulary" in kwargs else args[2]
    use_tpu = kwargs["use_tpu"] if "use_tpu" in kwargs else args[4]

    def model_fn_adding_predictions(features, labels, mode, params=None, config=None):
      from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
      predict_batch_size = features.get("predict_batch_size")
      search.forget_predictions_asked()
      spec = model_fn(features, labels, mode, params=params, config=config)
      asked, finish = search.predictions_asked()
      if not asked:
        return spec
      [lowering] = [hook._lowering for hook in spec.prediction_hooks  # pylint: disable=protected-access
                    if isinstance(hook, mtf.MtfRestoreHook)]
      for name, tensor in asked.items():
        value = lowering.export_to_tf_tensor(tensor)
        if name == "top_k_outputs":
          value = mtf_utils.clean_decodes(value)
          targets_vocabulary = mtf_utils.targets_vocabulary(vocabulary)
          if not use_tpu and hasattr(targets_vocabulary, "decode_tf"):  # as "outputs" are
            value = targets_vocabulary.decode_tf(value)
            if isinstance(value, tf.RaggedTensor):  # [batch, k], of uniform rows
              value = value.to_tensor()
        if predict_batch_size is not None:
          value = value[:predict_batch_size]
        asked[name] = value
      spec.predictions.update(finish(asked) if finish else asked)
      # The SavedModel's signature: every prediction (TPUEstimator's export builds its default
      # signature before this function returns, from mesh-tf's two).
      return spec._replace(export_outputs={
          tf.saved_model.DEFAULT_SERVING_SIGNATURE_DEF_KEY:
              tf.estimator.export.PredictOutput(spec.predictions)})
    return model_fn_adding_predictions
  return build


def with_cache_length(args, kwargs):
  """The builder's arguments with the cache feature's length in `sequence_length`, when
  `code_t5.copy_cache.file_tokens` makes one (a dict of lengths; None is mesh-tf's "as long as
  the longest example", which it finds for "inputs" and "targets" only)."""
  file_tokens = copy_cache.copy_cache()["file_tokens"]
  positional = "sequence_length" not in kwargs and len(args) > 8
  lengths = args[8] if positional else kwargs.get("sequence_length")
  if not file_tokens or not isinstance(lengths, dict):
    return args, kwargs
  lengths = {**lengths, preprocessors.CACHE: file_tokens}
  if positional:
    return args[:8] + (lengths,) + args[9:], kwargs
  return args, {**kwargs, "sequence_length": lengths}


def install() -> None:
  """In every process that imports code_t5 (upstream.install)."""
  from mesh_tensorflow.transformer import utils as mtf_utils  # pylint: disable=g-import-not-at-top
  wrapping.wrap_once(mtf_utils, "tpu_estimator_model_fn", add_predictions)
  if preprocessors.CACHE not in mtf_utils._MODEL_FEATURES:  # pylint: disable=protected-access
    mtf_utils._MODEL_FEATURES.append(preprocessors.CACHE)  # pylint: disable=protected-access
