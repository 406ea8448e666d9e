"""Training throughput: ours (mesh-tf through mesh_transformer_main) next to a peer.

The unit is non-padding target tokens per second: the tokens a step learns from.

Peer: Hugging Face transformers' T5ForConditionalGeneration in PyTorch on the CPU, with the
dimensions of our size gin file (relative position buckets shared across layers, ReLU
feed-forward, tied embeddings, Adafactor) and fed the very batches ours trains on: rows of
t5's `mesh_train_dataset_fn` for the `flcc_python` mixture with the same seed, one example
per row (HF's T5 has no packed-row attention masks in its encoder). Ours runs the same
encoder-decoder (models/bitransformer.gin) on those rows; that pair gives the ratio.

Then ours as users run it -- the shared prefix LM -- unpacked, packed (several examples per
row, mesh-tf's default), and with the settings tried to make it faster. Each of ours is a
training run of --steps steps through mesh_transformer_main; its rate is the median of
`global_step/sec` after the first --warmup steps, times the mean non-padding target tokens of
the batches it trained on. Prints a table and writes JSON.

  .venv/bin/python scripts/bench_throughput.py --sizes=dev,base --json=bench_throughput.json
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

from benchlib import DEV_TFDS, QUIET_TF, REPO, gin_literals, mesh_main_command

MIXTURE = "flcc_python"
SEED = 0

# Size -> gin files that set its dimensions and sequence lengths, rows per batch, steps, and
# which of VARIANTS to run (the base size takes minutes a run: the peer pair and the default).
SIZES = {
    "dev": {"size_gin": "models/sizes/dev.gin", "lengths_gin": "sequence_lengths/dev.gin",
            "rows": 32, "steps": 40, "warmup": 10, "peer_steps": 25, "variants": None},
    # mesh-tf's default batch of 2048 tokens per replica at inputs length 512.
    "base": {"size_gin": "models/sizes/base.gin", "lengths_gin": "sequence_lengths/code.gin",
             "rows": 4, "steps": 14, "warmup": 4, "peer_steps": 10, "variants": [0, 2, 4, 5]},
}

# Ours: (name, model gin, pack, extra gin params, extra environment).
VARIANTS = [
    ("enc-dec, one example per row", "models/bitransformer.gin", False, [], {}),
    ("prefix LM, one example per row", "models/shared-prefix_lm.gin", False, [], {}),
    ("prefix LM, packed (default)", "models/shared-prefix_lm.gin", True, [], {}),
    # mesh-tf's defaults.gin splits a batch into microbatches of 2048 tokens (memory, TPU);
    # the dev batch (32 x 160 tokens) then runs as two sequential halves.
    ("prefix LM, packed, one microbatch", "models/shared-prefix_lm.gin", True,
     ["serialize_num_microbatches.tokens_per_microbatch_per_replica = None"], {}),
    ("prefix LM, packed, float32 master weights", "models/shared-prefix_lm.gin", True,
     ["get_variable_dtype.master_dtype = 'float32'"], {}),
    ("prefix LM, packed, bfloat16 activations", "models/shared-prefix_lm.gin", True,
     ["get_variable_dtype.activation_dtype = 'bfloat16'"], {}),
    ("prefix LM, packed, XLA auto-jit (fusible ops)", "models/shared-prefix_lm.gin", True, [],
     {"TF_XLA_FLAGS": "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit "
                      "--tf_xla_ops_to_cluster=FUSIBLE"}),
    ("prefix LM, packed, oneDNN off", "models/shared-prefix_lm.gin", True, [],
     {"TF_ENABLE_ONEDNN_OPTS": "0"}),
]


def gin_numbers(path):
  """The number macros of a gin file (`d_model = 256`...)."""
  return {name: value for name, value in gin_literals(path).items()
          if "." not in name and isinstance(value, (int, float)) and not isinstance(value, bool)}


def batches(size, pack, count):
  """The first `count` batches that mesh_transformer_main trains on, as numpy."""
  from t5.models import mesh_transformer  # pylint: disable=g-import-not-at-top
  lengths = gin_literals(SIZES[size]["lengths_gin"])["utils.run.sequence_length"]
  ds = mesh_transformer.mesh_train_dataset_fn(MIXTURE, lengths,
                                              seed=SEED,
                                              pack=pack)
  ds = ds.batch(SIZES[size]["rows"], drop_remainder=True).take(count)
  return list(ds.as_numpy_iterator())


def target_tokens(batch):
  return int((batch["targets"] != 0).sum())


def run_ours(size, model_gin, pack, params, env, data_dir, steps, tokens_per_batch):
  model_dir = tempfile.mkdtemp(prefix=f"bench_throughput_{size}_")
  cmd = mesh_main_command(
      model_dir, data_dir,
      [model_gin, SIZES[size]["size_gin"], SIZES[size]["lengths_gin"], "mesh/cpu.gin"],
      [f"MIXTURE_NAME = '{MIXTURE}'", f"run.train_steps = {steps}",
       f"utils.run.save_checkpoints_steps = {steps}",
       f"utils.run.batch_size = ('sequences_per_batch', {SIZES[size]['rows']})",
       f"mesh_train_dataset_fn.seed = {SEED}", f"mesh_train_dataset_fn.pack = {pack}",
       *params])
  proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True,
                        env=dict(QUIET_TF, **env))
  if proc.returncode != 0:
    return {"error": proc.stderr.strip().splitlines()[-1][:300]}
  # The Estimator logs global_step/sec once per step (twice: absl and tf loggers).
  rates = [float(x) for x in re.findall(r"global_step/sec: ([0-9.]+)", proc.stderr)][::2]
  warmup = SIZES[size]["warmup"]
  steps_per_s = statistics.median(rates[warmup:] or rates)
  return {"steps_per_s": steps_per_s,
          "target_tokens_per_s": steps_per_s * statistics.mean(tokens_per_batch[warmup:steps])}


def run_peer(size, vocab_size, rows_of_batches, steps, warmup=3):
  """HF T5 with our dimensions, trained on the same (unpacked) batches."""
  import numpy as np  # pylint: disable=g-import-not-at-top
  import torch  # pylint: disable=g-import-not-at-top
  import transformers  # pylint: disable=g-import-not-at-top
  dims = gin_numbers(SIZES[size]["size_gin"])
  torch.manual_seed(SEED)
  torch.set_num_threads(os.cpu_count())  # TensorFlow's default: one intra-op thread per core
  config = transformers.T5Config(
      vocab_size=vocab_size, d_model=dims["d_model"], d_kv=dims["d_kv"], d_ff=dims["d_ff"],
      num_layers=dims["num_layers"], num_decoder_layers=dims["num_layers"],
      num_heads=dims["num_heads"], relative_attention_num_buckets=32,
      relative_attention_max_distance=128, dropout_rate=dims["dropout_rate"],
      feed_forward_proj="relu", tie_word_embeddings=True, pad_token_id=0, eos_token_id=1,
      decoder_start_token_id=0)
  model = transformers.T5ForConditionalGeneration(config).train()
  optimizer = transformers.optimization.Adafactor(
      model.parameters(), lr=0.01, scale_parameter=True, relative_step=False,
      warmup_init=False, clip_threshold=1.0, decay_rate=-0.8, beta1=None)
  times, tokens = [], []
  for batch in rows_of_batches[:steps]:
    inputs = torch.from_numpy(batch["inputs"].astype(np.int64))
    targets = torch.from_numpy(batch["targets"].astype(np.int64))
    start = time.perf_counter()
    loss = model(input_ids=inputs, attention_mask=(inputs != 0).long(),
                 labels=targets.masked_fill(targets == 0, -100)).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    times.append(time.perf_counter() - start)
    tokens.append(target_tokens(batch))
  return {"steps_per_s": 1 / statistics.median(times[warmup:]),
          "target_tokens_per_s": sum(tokens[warmup:]) / sum(times[warmup:]),
          "parameters": sum(p.numel() for p in model.parameters()),
          "torch_threads": torch.get_num_threads()}


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--sizes", default="dev,base")
  parser.add_argument("--variants", default=None,
                      help="comma-separated indexes into VARIANTS (default: per size)")
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  import code_t5  # pylint: disable=g-import-not-at-top,unused-import
  seqio.set_tfds_data_dir_override(args.data_dir)
  vocab_size = seqio.get_mixture_or_task(MIXTURE).output_features["targets"].vocabulary.vocab_size

  rows = []
  for size in args.sizes.split(","):
    if size not in SIZES:
      sys.exit(f"bench_throughput: unknown size {size!r}; known: {', '.join(SIZES)}")
    steps = SIZES[size]["steps"]
    chosen = ([int(i) for i in args.variants.split(",")] if args.variants
              else SIZES[size]["variants"] or range(len(VARIANTS)))
    data = {pack: batches(size, pack, steps) for pack in (False, True)}
    tokens = {pack: [target_tokens(b) for b in data[pack]] for pack in data}
    print(f"{size}: HF T5 (PyTorch) for {SIZES[size]['peer_steps']} steps ...",
          file=sys.stderr, flush=True)
    peer = run_peer(size, vocab_size, data[False], SIZES[size]["peer_steps"])
    rows.append({"size": size, "name": "HF transformers T5 (PyTorch), one example per row",
                 **peer})
    for i in chosen:
      name, model_gin, pack, params, env = VARIANTS[i]
      print(f"{size}: ours, {name}, {steps} steps ...", file=sys.stderr, flush=True)
      result = run_ours(size, model_gin, pack, params, env, args.data_dir, steps, tokens[pack])
      rows.append({"size": size, "name": f"ours, {name}", **result})
    for r in rows:
      if r["size"] == size and "target_tokens_per_s" in r:
        r["vs_peer"] = r["target_tokens_per_s"] / peer["target_tokens_per_s"]
    for pack in (False, True):
      rows.append({"size": size, "name": f"rows {'packed' if pack else 'one example each'}",
                   "mean_target_tokens_per_batch": statistics.mean(tokens[pack])})

  print(f"\n{'size':<5} {'who, what':<52} {'steps/s':>8} {'target tok/s':>13} {'vs HF':>6}")
  for r in rows:
    if "mean_target_tokens_per_batch" in r:
      continue
    if "error" in r:
      print(f"{r['size']:<5} {r['name']:<52} failed: {r['error']}")
      continue
    print(f"{r['size']:<5} {r['name']:<52} {r['steps_per_s']:>8.2f} "
          f"{r['target_tokens_per_s']:>13,.0f} {r.get('vs_peer', 1):>6.2f}")
  for r in rows:
    if "mean_target_tokens_per_batch" in r:
      print(f"{r['size']}: {r['name']}: {r['mean_target_tokens_per_batch']:.0f} non-padding "
            f"target tokens per batch")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(rows, f, indent=2)
  return rows


if __name__ == "__main__":
  main()
