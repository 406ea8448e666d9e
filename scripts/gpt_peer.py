"""The learning bench's peer: a plain GPT, trained the usual way on the same data and compute.

Hugging Face transformers' `GPT2LMHeadModel` with the dev model's width, depth, heads and
vocabulary (learned positions, tied embeddings, no dropout), trained as a causal LM on random
windows of `rows` x `context` tokens of the train split -- every file's ids with EOS between
files, as one stream -- by AdamW with linear warm-up and cosine decay to zero over the run.
It completes a prefix from the text the code_t5 model reads of it (`baselines.model_window`),
greedily, until a line end, EOS or `max_new` tokens, healed as the model's decoding heals:
the same examples, window, decoding and stopping rule as the model's full-line eval.

`scripts/bench_learning.py` trains it beside the model for the same token positions
(`--tokens`); `train` and `complete` are its two steps.
"""

import dataclasses
import math
import os
import time
from typing import List, Sequence

import numpy as np

SEED = 0


@dataclasses.dataclass(frozen=True)
class PeerConfig:
  """A GPT's shape, by default the dev model's (models/sizes/dev.gin; the learning bench gives
  the shape of the model it compares with, bench_learning.peer_shape), and its usual recipe."""
  d_model: int = 256
  num_layers: int = 4
  d_ff: int = 1024
  num_heads: int = 4
  context: int = 160  # the dev model's inputs + targets (sequence_lengths/dev.gin)
  rows: int = 32
  learning_rate: float = 2e-3
  warmup_steps: int = 100
  weight_decay: float = 0.1


def token_stream(texts: Sequence[str], vocabulary) -> np.ndarray:
  """Every file's ids, EOS after each: the causal LM's one stream."""
  ids = []
  for text in texts:
    ids.extend(vocabulary.encode(text))
    ids.append(vocabulary.eos_id)
  return np.array(ids, np.int64)


def learning_rate(step: int, steps: int, config: PeerConfig) -> float:
  """Linear warm-up, then cosine decay to zero at `steps`."""
  warmup = min(config.warmup_steps, max(steps // 10, 1))
  if step < warmup:
    return config.learning_rate * (step + 1) / warmup
  progress = (step - warmup) / max(steps - warmup, 1)
  return config.learning_rate * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0)))


def build(vocab_size: int, config: PeerConfig):
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  torch.manual_seed(SEED)
  return transformers.GPT2LMHeadModel(transformers.GPT2Config(
      vocab_size=vocab_size, n_positions=config.context, n_embd=config.d_model,
      n_layer=config.num_layers, n_head=config.num_heads, n_inner=config.d_ff,
      resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True,
      bos_token_id=None, eos_token_id=None))


def train(stream: np.ndarray, vocab_size: int, steps: int, config: PeerConfig = PeerConfig(),
          log_every: int = 0, checkpoint: str = "", save_every: int = 100,
          at_steps: Sequence[int] = (), on_step=None):
  """(model, losses per step, wall seconds) after `steps` steps of `rows` random windows.

  With `checkpoint` (a file path), the state is saved there every `save_every` steps and at
  the end, whole or not at all, and a training found there continues from its step: the
  losses and the wall time add up over its parts, and the windows are those an uninterrupted
  run would have drawn. `on_step(step, model)` is called after each step of `at_steps` that
  this part trains (the model in eval mode; its time is not counted as training's), before
  that step's checkpoint.
  """
  import torch  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(os.cpu_count())
  if len(stream) <= config.context:
    raise ValueError(f"the train split has {len(stream)} tokens, fewer than one window "
                     f"of {config.context}")
  model = build(vocab_size, config).train()
  decay = [p for p in model.parameters() if p.dim() >= 2]
  no_decay = [p for p in model.parameters() if p.dim() < 2]
  optimizer = torch.optim.AdamW(
      [{"params": decay, "weight_decay": config.weight_decay},
       {"params": no_decay, "weight_decay": 0.0}],
      lr=config.learning_rate, betas=(0.9, 0.95))
  rng = np.random.default_rng(SEED)
  first, losses, wall_before = 0, [], 0.0
  if checkpoint and os.path.exists(checkpoint):
    state = torch.load(checkpoint, weights_only=False)
    if state["config"] != dataclasses.asdict(config) or state["steps"] != steps:
      raise ValueError(f"{checkpoint}: a peer trained with other settings "
                       f"({state['config']}, {state['steps']} steps); remove it to start again")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    rng.bit_generator.state = state["rng"]
    first, losses, wall_before = state["step"], state["losses"], state["wall_s"]

  start = time.perf_counter()

  def save(step):
    os.makedirs(os.path.dirname(os.path.abspath(checkpoint)), exist_ok=True)
    torch.save({"step": step, "steps": steps, "config": dataclasses.asdict(config),
                "model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "rng": rng.bit_generator.state, "losses": losses,
                "wall_s": wall_before + time.perf_counter() - start}, checkpoint + ".tmp")
    os.replace(checkpoint + ".tmp", checkpoint)

  for step in range(first, steps):
    starts = rng.integers(0, len(stream) - config.context, config.rows)
    batch = torch.from_numpy(np.stack([stream[s:s + config.context] for s in starts]))
    for group in optimizer.param_groups:
      group["lr"] = learning_rate(step, steps, config)
    loss = model(input_ids=batch, labels=batch).loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    losses.append(loss.item())
    if on_step and step + 1 in at_steps:
      paused = time.perf_counter()
      on_step(step + 1, model.eval())
      model.train()
      start += time.perf_counter() - paused
    if log_every and (step + 1) % log_every == 0:
      print(f"peer: step {step + 1}/{steps} | loss {np.mean(losses[-log_every:]):.3f} | "
            f"{(step + 1 - first) / (time.perf_counter() - start):.2f} steps/s", flush=True)
    if checkpoint and ((step + 1) % save_every == 0 or step + 1 == steps):
      save(step + 1)
  return model.eval(), losses, wall_before + time.perf_counter() - start


def complete(model, vocabulary, windows: Sequence[str], newline_id: int,
             max_new: int = 32, heal_pieces: int = 0, cache=None) -> List[str]:
  """Greedy continuation of each window text up to a line end, EOS or `max_new` tokens (the
  line end and EOS not included), as the model's full-line eval cuts its predictions; with
  `heal_pieces`, healed as the model's decoding heals (code_t5/decoding/healing.py, the same three
  steps): the window's last pieces taken off, written again under its mask, cut off after;
  with `cache` (code_t5.copy_cache()'s options, a weight above 0), each step's distribution
  mixed with the copy cache's as the model's greedy decoding mixes it (code_t5/decoding/copy_cache.py),
  before the healing mask."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import copy_cache  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import healing  # pylint: disable=g-import-not-at-top
  tables = (healing.HealingTables.of(vocabulary.tokenizer, model.config.vocab_size)
            if heal_pieces else None)
  steps = max_new + heal_pieces
  completions = []
  with torch.no_grad():
    for window in windows:
      ids = vocabulary.encode(window)
      typed = None
      if tables and ids:
        kept, typed = healing.back_off(tables, tf.constant([ids], tf.int32), heal_pieces, False)
        ids = [int(i) for i in kept.numpy()[0] if i]
      context = model.config.n_positions
      new = np.zeros([1, steps], np.int32)
      past = None
      step_ids = torch.tensor([ids[-(context - steps):] or [vocabulary.eos_id]])
      for step in range(steps):
        out = model(input_ids=step_ids, past_key_values=past, use_cache=True)
        past = out.past_key_values
        logits = out.logits[0, -1]
        if cache and cache["weight"]:
          logits = torch.from_numpy(copy_cache.cached_log_probs(
              tf.constant(logits.numpy()[None]), tf.constant([ids], tf.int32),
              tf.constant([len(ids)]), tf.constant(new), tf.constant(step), cache).numpy()[0])
        if typed is not None:
          allowed = healing.allowed_pieces(tables, typed, tf.constant(new), tf.constant(step))
          logits = logits + torch.from_numpy(allowed.numpy()[0])
        token = int(logits.argmax())
        if token in (newline_id, vocabulary.eos_id):
          break
        new[0, step] = token
        step_ids = torch.tensor([[token]])
      if typed is not None:
        new = healing.without_typed(tables, typed, tf.constant(new)).numpy()
      completions.append(vocabulary.decode([int(i) for i in new[0] if i]))
  return completions
