"""The served model in onnxruntime, with the keys and values of what it has read kept.

`CachedModel.logits_after(tokens)` gives the next token's logits after `tokens` (the model's
input sequence: 0, then the window's ids, then what decoding wrote). It reads only the tokens
after the longest start that `tokens` shares with what it read before; a prefix that does not
extend the last (a jump, a deletion, a window that moved) shares less, or nothing, and is read
from there.
"""

import json
import os

import numpy as np

# The most tokens one call of the graph reads: a whole window at once (512 tokens of the base
# model) held 200 MB of attention scores and activations at its peak, 128 at a time 50 MB,
# for about the same time.
CHUNK = 128
# Fewer where a call's attention scores, layers x heads x tokens x positions floats, would
# pass this: the base model then reads 64 at a time (its float32 process's peak 494 MB against
# 514 at 128, a window's read 3-5% slower; BENCHMARKS.md, "Serving at editor speed"), the dev
# model 128.
SCORES_BYTES = 24 << 20


def read_chunk(layers: int, heads: int, positions: int) -> int:
  """Tokens a call reads: CHUNK, halved while the call's attention scores pass SCORES_BYTES."""
  chunk = CHUNK
  while chunk > 1 and layers * heads * chunk * positions * 4 > SCORES_BYTES:
    chunk //= 2
  return chunk


class CachedModel:
  """One onnxruntime session of a graph of `code_t5_session.graph`, and its key/value state:
  per layer, buffers of the graph's slots ([heads, slots, d_kv]) that each call reads whole
  (no copy; the slots past the held tokens weigh nothing in the graph) and writes its new
  positions into."""

  def __init__(self, path: str, threads: int = 0):
    import onnxruntime as ort  # pylint: disable=g-import-not-at-top
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads  # 0: onnxruntime's choice, the cores
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # Every call has other shapes (new tokens, attention's width): onnxruntime's arena kept
    # growing with them (774 MB after 400 calls of the dev model, 160 MB without it, at the
    # same speed).
    options.enable_cpu_mem_arena = False
    options.enable_mem_pattern = False
    self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    meta = json.loads(self.session.get_modelmeta().custom_metadata_map["architecture"])
    self.layers, self.heads, self.d_kv = meta["layers"], meta["heads"], meta["d_kv"]
    self.positions = meta["positions"]
    self.chunk = read_chunk(self.layers, self.heads, self.positions)
    shape = (self.layers, self.heads, self.positions, self.d_kv)
    self.keys = np.zeros(shape, np.float32)
    self.values = np.zeros(shape, np.float32)
    self.tokens = []  # the inputs whose keys and values are held, positions 0 .. len - 1
    self.logits = {}  # {n: the logits after self.tokens[:n]}, for the n read last
    self.read_count = 0  # tokens read by the model since it was made (the cost of the calls)

  def forget(self):
    """Drop the state: the next call reads from the start."""
    self.tokens, self.logits = [], {}

  def _read(self, new):
    """Reads `new` after the held tokens, `chunk` a call at most; returns the last logits."""
    for start in range(0, len(new), self.chunk):
      logits = self._read_chunk(new[start:start + self.chunk])
    return logits

  def _read_chunk(self, new):
    held = len(self.tokens)
    if held + len(new) > self.positions:
      raise ValueError(f"the model holds at most {self.positions} positions; "
                       f"{held + len(new)} asked")
    feed = {"ids": np.asarray(new, np.int64), "past_length": np.array(held, np.int64)}
    for layer in range(self.layers):
      feed[f"past_key_{layer}"] = self.keys[layer]
      feed[f"past_value_{layer}"] = self.values[layer]
    outputs = self.session.run(None, feed)
    end = held + len(new)
    for layer in range(self.layers):
      self.keys[layer, :, held:end] = outputs[1 + 2 * layer]
      self.values[layer, :, held:end] = outputs[2 + 2 * layer]
    self.tokens = self.tokens + list(new)
    self.logits[end] = outputs[0]
    self.read_count += len(new)
    return outputs[0]

  def logits_after(self, tokens):
    """float32 [vocab]: the logits of the token after `tokens` (a list of ids)."""
    tokens = list(tokens)
    shared = 0
    limit = min(len(tokens), len(self.tokens))
    while shared < limit and tokens[shared] == self.tokens[shared]:
      shared += 1
    if shared == len(tokens) and shared in self.logits:
      return self.logits[shared]  # read before, and held since
    shared = min(shared, len(tokens) - 1)  # the last token is read again for its logits
    self.tokens = self.tokens[:shared]
    self.logits = {n: v for n, v in self.logits.items() if n <= shared}
    return self._read(tokens[shared:])


def architecture_metadata(arch, positions: int) -> dict:
  """The model's metadata entry that CachedModel reads (the graph's custom metadata)."""
  return {"architecture": json.dumps({"layers": arch.layers, "heads": arch.heads,
                                      "d_kv": arch.d_kv, "d_model": arch.d_model,
                                      "vocab_size": arch.vocab_size,
                                      "positions": positions})}


def model_path(export_dir: str, weights: str = "float") -> str:
  """The graph of an export: "float" (model.onnx) or "int8" (model.int8.onnx)."""
  return os.path.join(export_dir, {"float": "model.onnx", "int8": "model.int8.onnx"}[weights])
