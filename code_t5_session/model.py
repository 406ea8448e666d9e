"""The served model in onnxruntime, with the keys and values of what it has read kept.

`CachedModel.logits_after(tokens)` gives the next token's logits after `tokens` (the model's
input sequence: 0, then the window's ids, then what decoding wrote). It reads only the tokens
after the longest start that `tokens` shares with what it read before; a prefix that does not
extend the last (a jump, a deletion, a window that moved) shares less, or nothing, and is read
from there. It keeps the states of the last few windows it read (`states`), so that a jump
back to a place read before -- another file, or the function the cursor left -- reads only
what changed there.

`logits_after(tokens, draft)` also reads `draft`, tokens guessed to follow `tokens`, in the
same call, and holds the logits after each of them: a decoder that then chooses those tokens
finds their logits held and calls the graph no more (speculative decoding). A wrong guess
costs only its call's extra positions: the tokens after it are cut at the next call, as any
others that differ.
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
# 514 at 128, a window's read 3-5% slower; docs/BENCHMARK_LOG.md, "Serving at editor speed"), the dev
# model 128.
SCORES_BYTES = 24 << 20
# The windows' states kept: as many as fit in this many bytes of keys and values, at most
# STATES (the dev model's state is 4.5 MB: 8 of them; the base model's 40 MB: 1, its process
# held under 500 MB). A state that a read would cut to less than half of what it holds (a
# jump, a window that moved) is kept, and the read goes to another; a keystroke after a
# suggestion cuts only what decoding wrote, and reads on in the same state.
STATES_BYTES = 64 << 20
STATES = 8


def states_for(layers: int, heads: int, positions: int, d_kv: int) -> int:
  """How many windows' states a model keeps by default: STATES_BYTES' worth, 1 to STATES."""
  return max(1, min(STATES, STATES_BYTES // (2 * layers * heads * positions * d_kv * 4)))


def read_chunk(layers: int, heads: int, positions: int) -> int:
  """Tokens a call reads: CHUNK, halved while the call's attention scores pass SCORES_BYTES."""
  chunk = CHUNK
  while chunk > 1 and layers * heads * chunk * positions * 4 > SCORES_BYTES:
    chunk //= 2
  return chunk


class CachedModel:
  """One onnxruntime session of a graph of `code_t5_session.graph`, and its key/value states:
  per layer, buffers of the graph's slots ([heads, slots, d_kv]) that each call reads whole
  (no copy; the slots past the held tokens weigh nothing in the graph) and writes its new
  positions into. `tokens`, `keys`, `values` and `logits` are the state read last; up to
  `states` - 1 others are parked, the least recently read given up first."""

  def __init__(self, path: str, threads: int = 0, states: int = 0, session=None):
    """`path`: the graph's file; `threads`: onnxruntime's; `states`: the windows' states
    kept, 0 for `states_for`'s default; `session`: an `inference_session` of `path` that
    several models share (a language server's, a model a document: the weights once, a
    state each), in place of one of its own."""
    self.session = session or inference_session(path, threads)
    meta = json.loads(self.session.get_modelmeta().custom_metadata_map["architecture"])
    self.layers, self.heads, self.d_kv = meta["layers"], meta["heads"], meta["d_kv"]
    self.positions = meta["positions"]
    self.chunk = read_chunk(self.layers, self.heads, self.positions)
    if states < 0:
      raise ValueError(f"states must be 0 (the default) or more, not {states}")
    self.states = states or states_for(self.layers, self.heads, self.positions, self.d_kv)
    self.keys, self.values = self._buffers()
    self.tokens = []  # the inputs whose keys and values are held, positions 0 .. len - 1
    self.logits = {}  # {n: the logits after self.tokens[:n]}, for the n read last
    self._parked = []  # the other states, (tokens, keys, values, logits), the newest last
    self._guessed = 0  # of `tokens`, the last ones a draft read that no call has asked for
    self.read_count = 0  # tokens read by the model since it was made (the cost of the calls)
    self.draft_count = 0  # of the tokens read, those a draft guessed
    self.call_count = 0  # the graph's calls
    if "logit_count" not in {i.name for i in self.session.get_inputs()}:
      raise ValueError(f"{path}: a graph of an earlier code_t5_session, without the draft's "
                       "logits (logit_count); export it again with "
                       "`python -m code_t5.session_export`")

  def _buffers(self):
    shape = (self.layers, self.heads, self.positions, self.d_kv)
    return np.zeros(shape, np.float32), np.zeros(shape, np.float32)

  def forget(self):
    """Drop every state: the next call reads from the start."""
    self.tokens, self.logits, self._parked, self._guessed = [], {}, [], 0

  def _read(self, new, draft=()):
    """Reads `new`, then `draft`, after the held tokens, `chunk` a call at most; holds the
    logits after the last of `new` and after each of `draft`; returns the first of those."""
    sequence, wanted_from = list(new) + list(draft), len(new) - 1
    self.draft_count += len(draft)
    self._guessed = len(draft)
    for start in range(0, len(sequence), self.chunk):
      end = min(start + self.chunk, len(sequence))
      self._read_chunk(sequence[start:end], max(1, end - max(start, wanted_from)))
    return self.logits[len(self.tokens) - len(draft)]

  def _read_chunk(self, new, logit_count=1):
    """Reads `new` after the held tokens in one call; holds the logits after its last
    `logit_count` positions."""
    held = len(self.tokens)
    if held + len(new) > self.positions:
      raise ValueError(f"the model holds at most {self.positions} positions; "
                       f"{held + len(new)} asked")
    feed = {"ids": np.asarray(new, np.int64), "past_length": np.array(held, np.int64),
            "logit_count": np.array(logit_count, np.int64)}
    for layer in range(self.layers):
      feed[f"past_key_{layer}"] = self.keys[layer]
      feed[f"past_value_{layer}"] = self.values[layer]
    outputs = self.session.run(None, feed)
    end = held + len(new)
    for layer in range(self.layers):
      self.keys[layer, :, held:end] = outputs[1 + 2 * layer]
      self.values[layer, :, held:end] = outputs[2 + 2 * layer]
    self.tokens = self.tokens + list(new)
    for i, logits in enumerate(outputs[0]):
      self.logits[end - logit_count + 1 + i] = logits
    self.read_count += len(new)
    self.call_count += 1

  def _switch(self, tokens, shared):
    """Make the state that shares the longest start with `tokens` the current one (the
    current on a tie); where reading `tokens` into it would keep less than half of what it
    holds, park it and read into another state, its shared start copied over. Returns how
    many of `tokens` the new current state holds."""
    if shared == len(self.tokens):
      return shared  # `tokens` go on from the current state: typing, or decoding
    # The newest of the parked states that share the most, if more than the current.
    best, best_shared = None, shared
    for i, (held, _, _, _) in enumerate(self._parked):
      count = _shared(tokens, held)
      if count > best_shared or (best is not None and count == best_shared):
        best, best_shared = i, count
    if best is not None:
      current = (self.tokens, self.keys, self.values, self.logits)
      self.tokens, self.keys, self.values, self.logits = self._parked.pop(best)
      self._parked.append(current)
      shared, self._guessed = best_shared, 0
    # Guesses no call asked for count for nothing: a draft cut at its first token is not a jump.
    if self.states > 1 and 2 * shared < len(self.tokens) - self._guessed:
      kept = (self.tokens, self.keys, self.values, self.logits)
      if len(self._parked) + 1 >= self.states:  # the least recently read state's buffers
        _, keys, values, _ = self._parked.pop(0)
      else:
        keys, values = self._buffers()
      keys[:, :, :shared], values[:, :, :shared] = (self.keys[:, :, :shared],
                                                    self.values[:, :, :shared])
      self._parked.append(kept)
      self.tokens, self.keys, self.values = self.tokens[:shared], keys, values
      self.logits = {n: v for n, v in self.logits.items() if n <= shared}
    return shared

  def logits_after(self, tokens, draft=()):
    """float32 [vocab]: the logits of the token after `tokens` (a list of ids). Where they
    must be read, `draft` (ids guessed to follow `tokens`, or a function that returns them,
    called only then) is read in the same call, as far as the positions hold, and the logits
    after each of its tokens are held for the next calls."""
    tokens = list(tokens)
    shared = self._switch(tokens, _shared(tokens, self.tokens))
    if shared == len(tokens) and shared in self.logits:
      self._guessed = min(self._guessed, len(self.tokens) - shared)
      return self.logits[shared]  # read before, and held since
    shared = min(shared, len(tokens) - 1)  # the last token is read again for its logits
    self.tokens = self.tokens[:shared]
    self.logits = {n: v for n, v in self.logits.items() if n <= shared}
    draft = list(draft() if callable(draft) else draft)[:self.positions - len(tokens)]
    return self._read(tokens[shared:], draft)


def _shared(tokens, held) -> int:
  """How many tokens the lists `tokens` and `held` share from their start."""
  shared, limit = 0, min(len(tokens), len(held))
  while shared < limit and tokens[shared] == held[shared]:
    shared += 1
  return shared


def architecture_metadata(arch, positions: int) -> dict:
  """The model's metadata entry that CachedModel reads (the graph's custom metadata)."""
  return {"architecture": json.dumps({"layers": arch.layers, "heads": arch.heads,
                                      "d_kv": arch.d_kv, "d_model": arch.d_model,
                                      "vocab_size": arch.vocab_size,
                                      "positions": positions})}


def inference_session(path: str, threads: int = 0):
  """onnxruntime's session of the graph at `path`, on `threads` threads (0: onnxruntime's
  choice, the cores), as CachedModel calls it."""
  import onnxruntime as ort  # pylint: disable=g-import-not-at-top
  options = ort.SessionOptions()
  options.intra_op_num_threads = threads
  options.inter_op_num_threads = 1
  options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
  # Every call has other shapes (new tokens, attention's width): onnxruntime's arena kept
  # growing with them (774 MB after 400 calls of the dev model, 160 MB without it, at the
  # same speed).
  options.enable_cpu_mem_arena = False
  options.enable_mem_pattern = False
  return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])


def model_path(export_dir: str, weights: str = "float") -> str:
  """The graph of an export: "float" (model.onnx) or "int8" (model.int8.onnx)."""
  return os.path.join(export_dir, {"float": "model.onnx", "int8": "model.int8.onnx"}[weights])
