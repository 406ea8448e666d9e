"""The served model as an ONNX graph: the dev and base models' causal Transformer, one call
reading the tokens after those whose keys and values the caller keeps.

    inputs   ids [T] int64: the tokens at positions P .. P + T - 1
             past_length [] int64: P
             logit_count [] int64: N, 1 .. T: how many of the last positions' logits
             past_key_<l>, past_value_<l> [heads, slots, d_kv] float32, l = 0 .. layers - 1:
               the caller's buffers, whose first P slots hold what earlier calls returned
    outputs  logits [N, vocab]: the next token's after each of positions P + T - N .. P + T - 1
               (more than one where the caller checks tokens it guessed: a draft)
             key_<l>, value_<l> [heads, T, d_kv]: the new positions', for the caller to store
               in slots P .. P + T - 1

The caller (`code_t5_session.model.CachedModel`) passes its whole buffers: a numpy array is
handed to onnxruntime without a copy, where a slice of the first P slots would be copied at
every call. The products with the keys and values run over every slot (the empty ones'
probabilities are zeros); the bias, the softmax and their copies only over the P held and
the new positions. A call computes only its own positions. The computation is mesh-tf's
Unitransformer as models/causal.gin configures it (mesh_tensorflow/transformer/transformer.py
and transformer_layers.py):

  x = embedding[ids]                                   no positional embedding
  per layer:  x += o(attention(rms_norm(x)))           T5's relative position bias, one
              x += wo(relu(wi(rms_norm(x))))             table shared by all layers or one
                                                         per layer, causal
  logits = embedding @ (rms_norm(x) * d_model ** -0.5) the embedding shared with the softmax

Attention logits are q . k unscaled (mesh-tf folds the scale into q's initialization); the
relative position bias of a key `d` positions back is `bias[head, bucket(d)]` with mesh-tf's
buckets (computed by the exporter with mesh-tf's own function:
`code_t5.session_export.relative_bias_by_distance`), a later key or an empty slot gets -1e9,
as mesh-tf's visibility bias gives it. tests/test_memorisation.py holds the graph's logits
to mesh-tf's on the same checkpoint and tokens.
"""

import dataclasses

import numpy as np

OPSET = 17


@dataclasses.dataclass(frozen=True)
class Architecture:
  """What the graph needs to know of a model besides its weights."""
  layers: int
  heads: int
  d_kv: int
  d_model: int
  vocab_size: int
  epsilon: float = 1e-6


def weight_names(layer: int) -> dict:
  """mesh-tf's checkpoint names of one layer's weights (block_<layer>, self-attention as
  layer_000 and the feed-forward as layer_001 of it)."""
  block = f"transformer/block_{layer:03d}"
  return {
      "attention_norm": f"{block}/layer_000/rms_norm/scale",
      "q": f"{block}/layer_000/SelfAttention/q",
      "k": f"{block}/layer_000/SelfAttention/k",
      "v": f"{block}/layer_000/SelfAttention/v",
      "o": f"{block}/layer_000/SelfAttention/o",
      "ff_norm": f"{block}/layer_001/rms_norm/scale",
      "wi": f"{block}/layer_001/DenseReluDense/wi/kernel",
      "wo": f"{block}/layer_001/DenseReluDense/wo/kernel",
  }


EMBEDDING = "transformer/embedding"
FINAL_NORM = "transformer/rms_norm/scale"


def relative_bias_name(layer: int) -> str:
  """mesh-tf's checkpoint name of one layer's relative position bias table [heads, buckets]
  (relative_attention_type = "bias"); the shared table ("bias_shared") is block_000's,
  RELATIVE_BIAS."""
  return f"transformer/block_{layer:03d}/layer_000/SelfAttention/relative_attention_bias"


RELATIVE_BIAS = relative_bias_name(0)


def build(arch: Architecture, weights: dict, bias_by_distance: np.ndarray, positions: int):
  """The ONNX ModelProto of a model: `weights` by mesh-tf's checkpoint names (float32 arrays),
  `bias_by_distance` [heads, D + 1] (one table for all layers) or [layers, heads, D + 1] (one
  per layer): the bias of a key d positions back, d = 0 .. D (every distance past D has D's
  bucket); `positions`: the slots of the caller's key/value buffers."""
  from onnx import TensorProto, helper, numpy_helper  # pylint: disable=g-import-not-at-top

  nodes, initializers = [], []
  counter = [0]

  def name(stem):
    counter[0] += 1
    return f"{stem}_{counter[0]}"

  def const(stem, value):
    tensor = numpy_helper.from_array(np.asarray(value), name(stem))
    initializers.append(tensor)
    return tensor.name

  def node(op, inputs, stem=None, output=None, **attributes):
    out = output or name(stem or op.lower())
    nodes.append(helper.make_node(op, inputs, [out], name=out, **attributes))
    return out

  def weight(key):
    return const(key.replace("/", "_"), weights[key].astype(np.float32))

  def ints(*values):
    return const("ints", np.array(values, np.int64))

  def rms_norm(x, scale_key):
    # The pattern onnxruntime fuses into one SimplifiedLayerNormalization.
    variance = node("ReduceMean", [node("Pow", [x, const("two", np.float32(2.0))])], axes=[-1],
                    keepdims=1)
    root = node("Sqrt", [node("Add", [variance, const("eps", np.float32(arch.epsilon))])])
    return node("Mul", [node("Div", [x, root]), weight(scale_key)])

  def heads_first(x):  # [T, heads * d_kv] -> [heads, T, d_kv]
    return node("Transpose", [node("Reshape", [x, ints(0, arch.heads, arch.d_kv)])],
                perm=[1, 0, 2])

  slots = [arch.heads, positions, arch.d_kv]
  graph_inputs = [helper.make_tensor_value_info("ids", TensorProto.INT64, ["T"]),
                  helper.make_tensor_value_info("past_length", TensorProto.INT64, []),
                  helper.make_tensor_value_info("logit_count", TensorProto.INT64, [])]
  graph_outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                                 ["N", arch.vocab_size])]
  for layer in range(arch.layers):
    for kind in ("key", "value"):
      graph_inputs.append(helper.make_tensor_value_info(f"past_{kind}_{layer}",
                                                        TensorProto.FLOAT, slots))
      graph_outputs.append(helper.make_tensor_value_info(
          f"{kind}_{layer}", TensorProto.FLOAT, [arch.heads, "T", arch.d_kv]))

  # The bias [heads, T, P + T] of the keys a call reads: the P held (the caller's first P
  # slots), then the new positions (each reads itself and those before it). With every slot
  # in the bias and the softmax, the empty ones masked, the dev model read a window from the
  # start in 59 ms, 42 now (a generated token's call 0.9 ms either way). Slicing the keys and
  # values to P as well reads it in 33, but copies them at every call: the base model's
  # generated token took 29 ms against 21.
  zero, one = const("zero", np.array(0, np.int64)), const("one", np.array(1, np.int64))
  new_count = node("Squeeze", [node("Shape", ["ids"])], stem="T")
  end = node("Add", ["past_length", new_count])
  query_positions = node("Range", ["past_length", end, one])
  key_positions = node("Range", [zero, end, one])
  distance = node("Sub", [node("Unsqueeze", [query_positions, ints(1)]),
                          node("Unsqueeze", [key_positions, ints(0)])])  # [T, P + T]
  tables = np.asarray(bias_by_distance, np.float32)
  tables = tables[None] if tables.ndim == 2 else tables  # [1 or layers, heads, D + 1]
  if tables.shape[0] not in (1, arch.layers):
    raise ValueError(f"bias tables for {tables.shape[0]} layers, the model has {arch.layers}")
  clipped = node("Clip", [distance, zero, const("dmax", np.array(tables.shape[2] - 1,
                                                                   np.int64))])
  mask = node("Where", [node("Less", [distance, zero]), const("neg", np.float32(-1e9)),
                        const("fzero", np.float32(0.0))])
  # One bias per table (a shared table's serves every layer), gathered by rows: a distance's
  # biases of all heads are one row of the table transposed, [D + 1, heads]. Gathered one
  # float at a time ([heads, D + 1] along its distances), the dev model's Gathers took 8.5 ms
  # of a window's 48 in onnxruntime's profile (docs/BENCHMARK_LOG.md, "The position bias gathered by
  # rows"). Each table apart, as before: gathered all at once, the base model's float32
  # process peaked at 527-542 MB, against 480-486.
  biases = [node("Add", [node("Transpose", [node("Gather", [
      const("bias_by_distance", np.ascontiguousarray(table.T)), clipped], axis=0)],
      perm=[2, 0, 1]), mask]) for table in tables]  # [heads, T, P + T] each
  held_end = node("Unsqueeze", ["past_length", ints(0)])
  # Zeros for the empty slots' probabilities: [0, 0, 0, 0, 0, slots - P]
  empty_pads = node("Concat", [ints(0, 0, 0, 0, 0), node("Sub", [ints(positions), held_end])],
                    axis=0)

  x = node("Gather", [const("embedding", weights[EMBEDDING].astype(np.float32)), "ids"])
  for layer in range(arch.layers):
    w = weight_names(layer)
    h = rms_norm(x, w["attention_norm"])
    q = heads_first(node("MatMul", [h, weight(w["q"])]))
    new_key = node("Transpose", [node("Reshape", [node("MatMul", [h, weight(w["k"])]),
                                                  ints(0, arch.heads, arch.d_kv)])],
                   perm=[1, 0, 2], output=f"key_{layer}")
    new_value = node("Transpose", [node("Reshape", [node("MatMul", [h, weight(w["v"])]),
                                                    ints(0, arch.heads, arch.d_kv)])],
                     perm=[1, 0, 2], output=f"value_{layer}")
    # q . k over every slot is one product (no copy of the keys); what follows reads the P.
    held_scores = node("Slice", [
        node("MatMul", [q, node("Transpose", [f"past_key_{layer}"], perm=[0, 2, 1])]),
        ints(0), held_end, ints(2)])  # [heads, T, P]
    scores = node("Concat", [held_scores, node("MatMul", [
        q, node("Transpose", [new_key], perm=[0, 2, 1])])], axis=-1)
    probs = node("Softmax", [node("Add", [scores, biases[layer % len(biases)]])], axis=-1)
    held_probs = node("Pad", [node("Slice", [probs, ints(0), held_end, ints(2)]), empty_pads])
    new_probs = node("Slice", [probs, held_end, ints(np.iinfo(np.int64).max), ints(2)])
    attended = node("Add", [node("MatMul", [held_probs, f"past_value_{layer}"]),
                            node("MatMul", [new_probs, new_value])])
    merged = node("Reshape", [node("Transpose", [attended], perm=[1, 0, 2]),
                              ints(0, arch.heads * arch.d_kv)])
    x = node("Add", [x, node("MatMul", [merged, weight(w["o"])])])
    h = rms_norm(x, w["ff_norm"])
    x = node("Add", [x, node("MatMul", [node("Relu", [node("MatMul", [h, weight(w["wi"])])]),
                                        weight(w["wo"])])])
  # Only the last N positions reach the softmax's product, the vocabulary's 1.0M weights: a
  # window's read needs one position's logits, a draft's check one per guessed token.
  last = node("Slice", [x, node("Neg", [node("Unsqueeze", ["logit_count", ints(0)])]),
                        ints(np.iinfo(np.int64).max)])
  hidden = node("Mul", [rms_norm(last, FINAL_NORM),
                        const("rescale", np.float32(arch.d_model ** -0.5))])
  softmax_weights = const("softmax_weights",
                          np.ascontiguousarray(weights[EMBEDDING].T.astype(np.float32)))
  node("MatMul", [hidden, softmax_weights], output="logits")
  graph = helper.make_graph(nodes, "code_t5_causal_lm", graph_inputs, graph_outputs, initializers)
  model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                            producer_name="code_t5")
  model.ir_version = 8  # what onnxruntime of the lock reads, whatever onnx writes by default
  return model


def weight_matmuls(model) -> list:
  """The names of the MatMul nodes whose second input is a weight: what 8-bit quantization
  changes (attention's two products of activations stay float)."""
  weights = {i.name for i in model.graph.initializer}
  return [n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
