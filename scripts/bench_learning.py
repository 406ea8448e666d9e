"""Does the model learn? The dev model after a budget of token positions, against a plain GPT
given the same, and two baselines.

1. Trains the dev model (--model_gin, default models/causal_lm_dev.gin, then any --gin_file;
   on --mixture, default flcc_python_causal; the prefix LM of the same size:
   `--model_gin=models/shared-prefix_lm_dev.gin --mixture=flcc_python`) through
   mesh_transformer_main for --tokens token positions (rows x
   (inputs + targets) a step; a budget in positions, so that figures compare across machines
   and recipes; the wall time is reported beside them), or --steps steps.
2. Full-line eval of that checkpoint (eval_full_line.gin, greedy) on the first --examples
   examples of the validation split (--split=test: the test split): repositories that
   training never saw.
3. On exactly those examples, the baselines (code_t5/baselines.py, as `make smoke` shows them):
     * a token 4-gram completer counted on the train split, with the same vocabulary;
     * "copy the earlier line of the same file that best matches what is typed", once from
       the whole file and once from only the lines the model reads (its input window);
     * copy-next: the line that followed the earlier place most like the lines before the
       cursor, at the cursor's depth (code_t5/decoding/copying.py).
4. The peer (scripts/gpt_peer.py): Hugging Face's GPT2LMHeadModel with the dev model's
   width, depth, heads and vocabulary, trained as a causal LM on the same train split for the
   same steps of as many token positions (AdamW, warm-up, cosine decay), then completing the
   same examples from the same input window, greedily to the line end, healed as the model's
   decoding is (code_t5.token_healing) (`--no_peer` skips it;
   its checkpoint, <model_dir>/peer/peer.pt, lets --resume continue it too).
5. Every full-line metric of each, ours and CodeXGLUE's (code_t5/metrics.py), the model's
   lead over the peer and each baseline with a paired bootstrap 95% interval, the copy probe
   (of the lines that stand verbatim earlier in the model's window, the share each completes
   exactly; and of those anywhere earlier in their file), the induction probe at each point
   of the curve (`evaluation.induction_pairs`: the nats a token the model needs for the rest
   of a call of random words after that call and after another; how much it copies what it
   has just read, on lines no training file holds),
   each completer's exact match and edit similarity by where the cursor stands
   (`metrics.cursor_class`: at the line's start, between words, inside a word -- a token
   cut in two), and every example with all completions in
   <model_dir>/learning_examples.jsonl.
6. With --line_search=K: the model's completions by the line search too (beam_search.gin, K
   beams, infer on the same prefixes; with repository context, each record carries the files
   the eval searched for it), scored as a completer of its own, and its acceptance curve: for
   thresholds on the line's score that show 100%, 90%, ... of the examples, the exact match and
   edit similarity of those shown (`metrics.acceptance`), printed, in the JSON and as a PNG
   beside it (the search's lines as consensus.gin reads them, all K ranked by agreement:
   beam_search.gin's own first line is greedy's); the likeliest of the K lines (the search's
   first where it ranks by probability); and the model's consensus, the line of the K that
   agrees most with the others (model_consensus.gin's chooser). With --consensus too: the
   consensus line of the K lines and the file's copies (code_t5/decoding/consensus.py, with
   the weights of the scored language's consensus gin file, `consensus.gin_file`: JavaScript's
   own, the others' consensus.gin's; a --gin_param="COPY_WEIGHT = ..." over them). Each is a
   completer of its own, with its leads.

Needs the dev dataset (`python -m code_t5.data dev`). Prints a table and writes JSON.

  .venv/bin/python scripts/bench_learning.py --tokens=12800000 --json=bench_learning.json
  .venv/bin/python scripts/bench_learning.py --tokens=12800000 --resume ...  # after a stop
"""

import argparse
import glob
import json
import os
import subprocess
import sys
import time

from benchlib import (DEV_TFDS, QUIET_TF, REPO, gin_literals, mesh_main_command, params_literals,
                      require_checkpoint, require_dataset)
from code_t5 import evaluation
from code_t5 import files

MODEL_GIN = "models/causal_lm_dev.gin"
LENGTHS_GIN = "sequence_lengths/dev.gin"  # the dev models' lengths and the prefix LM's rows
TRAIN_MIXTURE = "flcc_python_causal"
EVAL_TASK = "flcc_python_full_line"  # --language's (main sets it once, before any use)
# The induction probe: calls of random words, each a line the model has read just before or not.


def last_checkpoint_step(model_dir):
  """The step of the checkpoint the model dir's `checkpoint` file names, or None."""
  return files.latest_checkpoint_step(model_dir)


def train(model_dir, data_dir, steps, gin_files, gin_params, resume=False,
          mixture=TRAIN_MIXTURE, model_gin=MODEL_GIN):
  """Trains to step `steps`; returns the wall time from launch (start-up included), summed
  over the parts of a training resumed after interruptions (`resume`).

  Each launch is recorded in <model_dir>/train_times.json when it starts; a part that was
  interrupted counts up to the last checkpoint it saved (the steps after it are trained
  again, and their time is not counted twice).
  """
  done = last_checkpoint_step(model_dir)
  if done is not None and not resume:
    sys.exit(f"bench_learning: {model_dir} already holds checkpoints; give an empty "
             "--model_dir, --resume to continue its training, or --eval_only to score it")
  os.makedirs(model_dir, exist_ok=True)
  times_path = train_times_path(model_dir)
  parts = read_train_times(model_dir) if resume else []
  for part in parts:
    if "wall_s" not in part:  # interrupted: up to its last checkpoint
      index = os.path.join(model_dir, f"model.ckpt-{done}.index")
      part.update(to_step=done, wall_s=max(0.0, os.path.getmtime(index) - part["started"])
                  if done is not None and os.path.exists(index) else 0.0)
  start = time.time()
  parts.append({"from_step": done or 0, "started": start})
  with open(times_path, "w") as f:
    json.dump(parts, f, indent=1)
  cmd = mesh_main_command(model_dir, data_dir, [model_gin, *gin_files],
                          [f"MIXTURE_NAME = {mixture_name(mixture)}", f"run.train_steps = {steps}",
                           *gin_params])
  run_logged(cmd, os.path.join(model_dir, "train.log"), "training", append=resume)
  parts[-1].update(to_step=last_checkpoint_step(model_dir), wall_s=time.time() - start)
  with open(times_path, "w") as f:
    json.dump(parts, f, indent=1)
  return recorded_training(parts)[1]


def mixture_name(mixture):
  """MIXTURE_NAME's value in gin: a name quoted, a configurable's call ("@code_t5.
  multilingual_mixture()") as it is."""
  return mixture if mixture.startswith("@") else f"'{mixture}'"


def train_times_path(model_dir):
  return os.path.join(model_dir, "train_times.json")


def read_train_times(model_dir):
  """The launches train() recorded in <model_dir>/train_times.json (none: [])."""
  try:
    with open(train_times_path(model_dir)) as f:
      return json.load(f)
  except FileNotFoundError:
    return []


def recorded_training(parts):
  """(last step, wall seconds summed over the parts) of a training; (None, None) unless
  every part has finished."""
  if not parts or any("wall_s" not in part for part in parts):
    return None, None
  return parts[-1]["to_step"], sum(part["wall_s"] for part in parts)


def run_logged(cmd, log_path, what, append=False):
  """Runs a mesh_transformer_main command with its output in `log_path` and code_t5's progress
  lines (stderr, "code_t5: ...": training's steps, decoding's examples) shown as they come, so
  a line search of half an hour is not silent; a failure ends the bench with one line naming
  `what` and the log."""
  with open(log_path, "a" if append else "w") as log:
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=log, stderr=subprocess.PIPE, text=True,
                            env=QUIET_TF)
    for line in proc.stderr:
      log.write(line)
      if line.startswith("code_t5: "):
        print(" ", line, end="", file=sys.stderr, flush=True)
    if proc.wait():
      sys.exit(f"bench_learning: {what} failed (code {proc.returncode}); see {log_path}")


def evaluate(model_dir, data_dir, examples, gin_files, gin_params, checkpoint_steps,
             model_gin=MODEL_GIN, split="validation"):
  """Greedy full-line eval of the checkpoints of `checkpoint_steps` on `split`, in one
  launch (written to <model_dir>/<split>_eval)."""
  cmd = mesh_main_command(model_dir, data_dir, [model_gin, *gin_files, "eval_full_line.gin"],
                          [f"MIXTURE_NAME = '{EVAL_TASK}'", *gin_params,
                           f"EVAL_EXAMPLES = {examples}", f"SPLIT = '{split}'",
                           f"CHECKPOINT_STEP = {list(checkpoint_steps)}"])
  run_logged(cmd, os.path.join(model_dir, f"{split}_eval.log"), "eval")


def line_search(model_dir, data_dir, step, prefixes, beam_size, gin_files=(), gin_params=(),
                model_gin=MODEL_GIN, name="line_search", repositories=None):
  """[{"completions", "scores"}] of checkpoint `step` for `prefixes`: the line search's
  `beam_size` lines, ranked by agreement as consensus.gin reads them (a --gin_param may rank
  them otherwise), and their log-probabilities, by infer with beam_search.gin
  (its files: <model_dir>/<name>*). `repositories`: each prefix's ([(path, content)],
  language) (baselines.task_repositories), its record's "repository", so that the search
  reads the context greedy's eval read."""
  inputs = os.path.join(model_dir, f"{name}_prefixes.jsonl")
  with open(inputs, "w") as f:
    for number, prefix in enumerate(prefixes):
      record = {"prefix": prefix}
      if repositories is not None:
        files, language = repositories[number]
        record.update(repository=[{"path": path, "content": content} for path, content in files],
                      language=language)
      f.write(json.dumps(record) + "\n")
  output = os.path.join(model_dir, name)
  cmd = mesh_main_command(model_dir, data_dir, [model_gin, *gin_files, "infer_full_line.gin",
                                                "beam_search.gin"],
                          [f"MIXTURE_NAME = '{EVAL_TASK}'",
                           "code_t5.prefix_lm_beam_search.rank = 'agreement'", *gin_params,
                           f"BEAM_SIZE = {beam_size}", f"TOP_K = {beam_size}",
                           f"CHECKPOINT_STEP = {step}",
                           f"INPUT_FILE = '{inputs}'", f"OUTPUT_FILE = '{output}'"])
  run_logged(cmd, os.path.join(model_dir, f"{name}.log"), "the line search")
  with open(f"{output}-{step}") as f:
    return [json.loads(line) for line in f]


def split_suffix(split):
  """What a file of the bench names its split by: nothing for validation (the names the bench
  wrote before --split), "_<split>" for another."""
  return "" if split == "validation" else f"_{split}"


def best_lines(searched):
  """(completions, scores): each prefix's best line of the line search and its score (-inf:
  none)."""
  return ([found["completions"][0] if found["completions"] else "" for found in searched],
          [found["scores"][0] if found["scores"] else float("-inf") for found in searched])


def plot_acceptance(rows, path):
  """Edit similarity and exact match of the suggestions shown, against the share shown."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(6, 4.2))
  shown = [r["shown"] for r in rows]
  for metric, label in (("edit_similarity", "edit similarity"), ("exact_match", "exact match")):
    ax.plot(shown, [r[metric] for r in rows], marker="o", label=label)
  ax.set(title="the line search's suggestions over a score threshold",
         xlabel="examples shown (%), the best-scoring first", ylabel="of those shown (%)")
  ax.invert_xaxis()
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=110)


def command_literals(model_gin=MODEL_GIN, gin_files=(), gin_params=()):
  """The literal bindings a launch of this bench gives mesh_transformer_main: LENGTHS_GIN's,
  the model file's (models/causal_lm_dev.gin sets 8 rows), `gin_files`' (--gin_file) and
  `gin_params`' (--gin_param) over them, in the order the run reads them."""
  return {**gin_literals(LENGTHS_GIN), **gin_literals(model_gin),
          **{k: v for f in gin_files for k, v in gin_literals(f).items()},
          **params_literals(gin_params)}


def positions_per_step(model_dir, model_gin=MODEL_GIN, gin_files=(), gin_params=()):
  """(rows, inputs + targets) of a dev model step: the run's own once it has trained
  (run_records.per_step); before, those of the command's bindings (command_literals)."""
  from code_t5 import run_records  # pylint: disable=g-import-not-at-top
  step = run_records.per_step(model_dir)
  if step:
    return step["sequences"], step["token_positions"] // step["sequences"]
  literals = command_literals(model_gin, gin_files, gin_params)
  method, rows = literals["utils.run.batch_size"]
  assert method == "sequences_per_batch", literals
  return rows, sum(literals["utils.run.sequence_length"].values())


PEER_SHAPE = ("d_model", "num_layers", "d_ff", "num_heads")


def peer_shape(model_gin=MODEL_GIN, gin_files=(), gin_params=()):
  """The model's width, depth, feed-forward width and heads, as the command's bindings give
  them (command_literals): the GPT peer is built to them. A shape the bindings do not give as
  numbers (a macro set elsewhere) ends the bench, rather than a peer of another shape."""
  literals = command_literals(model_gin, gin_files, gin_params)
  shape = {name: literals.get(name) for name in PEER_SHAPE}
  unread = [name for name, value in shape.items() if not isinstance(value, int)]
  if unread:
    sys.exit(f"bench_learning: {model_gin} and the --gin_file's give no number for "
             f"{', '.join(unread)}: the GPT peer is built to the model's shape")
  return shape


def decoding_options(model_gin=MODEL_GIN, gin_files=(), gin_params=()):
  """(pieces, cache): how many pieces the model's decoding heals (code_t5.token_healing.pieces,
  0 where nothing binds it) and its copy cache's options (code_t5.copy_cache's bindings, its
  defaults elsewhere), as the command's bindings (command_literals) give them to the eval: the
  peer decodes so too. (The window the eval read is its own record: baselines.compare.)"""
  from code_t5.decoding import copy_cache  # pylint: disable=g-import-not-at-top
  literals = command_literals(model_gin, gin_files, gin_params)
  cache = configurable_literals(literals, "code_t5.copy_cache")
  return literals.get("code_t5.token_healing.pieces", 0), copy_cache.copy_cache(**cache)


def consensus_weights(language, gin_params=()):
  """code_t5.consensus_line's weights for a model of `language`, as infer reads them: its
  consensus gin file's macros (consensus.gin_file: COPY_WEIGHT, NEXT_WEIGHT, TEMPERATURE),
  `gin_params`' over them."""
  from code_t5.decoding import consensus  # pylint: disable=g-import-not-at-top
  literals = {**gin_literals(consensus.gin_file(language)), **params_literals(gin_params)}
  return {"copy_weight": literals["COPY_WEIGHT"], "next_weight": literals["NEXT_WEIGHT"],
          "temperature": literals["TEMPERATURE"]}


def configurable_literals(literals, configurable):
  """{"arg": value} of `literals` (command_literals') that bind `configurable`'s arguments
  ("code_t5.copy_cache")."""
  return {key.rsplit(".", 1)[1]: value for key, value in literals.items()
          if key.rsplit(".", 1)[0] == configurable}


def repository_context_options(model_gin=MODEL_GIN, gin_files=(), gin_params=()):
  """code_t5.repository_context's options as the command's bindings (command_literals) give
  them to the eval (its defaults elsewhere)."""
  from code_t5 import preprocessors  # pylint: disable=g-import-not-at-top
  return preprocessors.repository_context(**configurable_literals(
      command_literals(model_gin, gin_files, gin_params), "code_t5.repository_context"))


def induction_probe(model_dir, data_dir, steps, vocabulary, gin_files=(), gin_params=(),
                    model_gin=MODEL_GIN):
  """{step: {"copy", "control", "gain", "ci95"}} for the checkpoints of `steps`, scored
  in one launch (score.gin; its files <model_dir>/induction*): the mean nats a token the
  model needs for the probe's completions (evaluation.induction_pairs) after the line itself
  and after another line, and how many fewer after the line itself, with a paired bootstrap
  95% interval. A model that copies needs a fraction of a nat after the line itself; one that
  does not, as many as after another line."""
  sentencepiece = vocabulary.tokenizer
  probe = evaluation.induction_pairs(
      map(sentencepiece.id_to_piece, range(sentencepiece.get_piece_size())))
  inputs = os.path.join(model_dir, "induction_pairs.jsonl")
  with open(inputs, "w") as f:
    f.writelines(json.dumps(pair) + "\n" for copy, control in probe for pair in (copy, control))
  output = os.path.join(model_dir, "induction_scores")
  for stale in glob.glob(f"{output}-*"):  # an earlier probe's, perhaps of other checkpoints
    os.remove(stale)
  # The probe's calls have no repository: score reads none (score.gin turns the context off,
  # and so does the last gin param, after any of the run's that turns it on).
  cmd = mesh_main_command(model_dir, data_dir, [model_gin, *gin_files, "score.gin"],
                          [f"MIXTURE_NAME = '{EVAL_TASK}'", *gin_params,
                           "code_t5.repository_context.enabled = False",
                           f"CHECKPOINT_STEP = {sorted(steps)}",
                           f"INPUT_FILE = '{inputs}'", f"OUTPUT_FILE = '{output}'"])
  run_logged(cmd, os.path.join(model_dir, "induction.log"), "the induction probe")
  # Score mode's tokens: the completion as the vocabulary encodes it alone, and the line end.
  tokens = [len(vocabulary.encode(copy["completion"])) + 1 for copy, _ in probe]
  results = {}
  for path in glob.glob(f"{output}-*"):
    with open(path) as f:
      results[int(path.rsplit("-", 1)[1])] = evaluation.induction_summary(
          [float(x) for x in f.read().split()], tokens)
  return dict(sorted(results.items()))


def curve_steps(steps, points, kept=None):
  """The steps of the learning curve: `points` evenly spaced, the last one `steps`; with
  `kept` (the model dir's checkpoint steps), the kept step nearest each, since an eval reads
  only a checkpoint that is there (files.chosen_checkpoint)."""
  wanted = {max(1, round(steps * i / points)) for i in range(1, points + 1)}
  if kept:
    wanted = {min(kept, key=lambda k, w=w: (abs(k - w), k)) for w in wanted}
  return sorted(wanted)


def train_peer(model_dir, steps, rows, context, task_name, shape, at_steps=(), on_step=None):
  """(peer, vocabulary, newline id, losses, wall seconds): the GPT peer of the model's `shape`
  (peer_shape) trained on the Task's train split for `steps` steps of `rows` x `context`
  tokens, as the model's (resumed from
  <model_dir>/peer/peer.pt if there); `on_step(step, peer, vocabulary, newline id)` at each of
  `at_steps`."""
  import seqio  # pylint: disable=g-import-not-at-top
  import gpt_peer  # pylint: disable=g-import-not-at-top
  from code_t5 import baselines  # pylint: disable=g-import-not-at-top
  from code_t5.vocabulary import newline_id  # pylint: disable=g-import-not-at-top
  task = seqio.get_mixture_or_task(task_name)
  vocab = task.output_features["targets"].vocabulary
  texts = [ex["content"].decode("utf-8") for ex in
           task.source.get_dataset(split="train", shuffle=False).as_numpy_iterator()]
  config = gpt_peer.PeerConfig(rows=rows, context=context, **shape)
  print(f"training the GPT peer for {steps} steps of {rows} x {context} tokens ...",
        file=sys.stderr, flush=True)
  peer, losses, wall = gpt_peer.train(
      gpt_peer.token_stream(texts, vocab), vocab.vocab_size, steps, config, log_every=50,
      checkpoint=os.path.join(model_dir, "peer", "peer.pt"), at_steps=at_steps,
      on_step=on_step and (lambda step, model: on_step(step, model, vocab, newline_id(vocab))))
  return peer, vocab, newline_id(vocab), losses, wall


def plot_curve(curve, baseline_metrics, path):
  """Edit similarity (ours, CodeXGLUE's) against token positions for the model and the peer,
  the baselines as lines: a PNG at `path`."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  from matplotlib import pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
  for ax, metric, title in zip(axes, ("edit_similarity", "codexglue_edit_similarity"),
                               ("edit similarity (ours)", "edit similarity (CodeXGLUE)")):
    for name, points in curve.items():
      ax.plot([p["token_positions"] / 1e6 for p in points], [p[metric] for p in points],
              marker="o", label=name)
    for (name, scores), style in zip(baseline_metrics.items(), (":", "--", "-.")):
      ax.axhline(scores[metric], linestyle=style, color="grey", label=name)
    ax.set(title=title, xlabel="token positions trained (millions)")
    ax.grid(alpha=0.3)
  axes[0].legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=110)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--tokens", type=int, default=12_800_000,
                      help="training budget in token positions, the same for the model and "
                           "the peer (rows x (inputs + targets) a step, padding included)")
  parser.add_argument("--steps", type=int, default=None, help="the budget in steps instead")
  parser.add_argument("--no_peer", action="store_true", help="leave out the GPT peer")
  parser.add_argument("--curve", type=int, default=4,
                      help="points of the learning curve: the model and the peer are scored "
                           "at that many evenly spaced steps, the last at the budget")
  parser.add_argument("--examples", type=int, default=1024,
                      help="examples of --split to score (-1: all)")
  parser.add_argument("--split", default="validation",
                      help="the held-out split every completer is scored on (validation, "
                           "or test: repositories no choice of the defaults has seen)")
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--model_dir", default=os.path.join(REPO, "runs", "bench_learning"))
  parser.add_argument("--resume", action="store_true",
                      help="continue the training in --model_dir to --steps (after an "
                           "interruption); the wall time adds up every part")
  parser.add_argument("--eval_only", action="store_true",
                      help="score the last checkpoint in --model_dir without training")
  parser.add_argument("--model_gin", default=MODEL_GIN,
                      help="the model's gin file, first, for training and eval")
  parser.add_argument("--gin_file", action="append", default=[],
                      help="gin files after --model_gin, for training and eval")
  parser.add_argument("--gin_param", action="append", default=[],
                      help="gin bindings for training and eval")
  parser.add_argument("--language", default="python",
                      help="the dev data's language (`python -m code_t5.data dev "
                           "--language=...` builds it): trains on flcc_<language>_causal, "
                           "scores flcc_<language>_full_line")
  parser.add_argument("--mixture", default=None,
                      help="the Task or Mixture the model trains on (default "
                           "flcc_<language>_causal; its eval: flcc_<language>_full_line), or "
                           "a configurable's call: '@code_t5.multilingual_mixture()'")
  parser.add_argument("--shared_vocabulary", action="store_true",
                      help="the model reads the vocabulary shared by several languages "
                           "(`code_t5.data vocab --languages=...`): it scores "
                           "flcc_<language>_full_line_shared, and trains on "
                           "flcc_<language>_causal_shared unless --mixture says otherwise")
  parser.add_argument("--line_search", type=int, default=0, metavar="K",
                      help="also complete by the line search with K beams, and report its "
                           "acceptance curve (0: not)")
  parser.add_argument("--consensus", action="store_true",
                      help="also the consensus line (the language's consensus gin file's "
                           "chooser and weights) of the line search's K lines and the file's "
                           "copies (needs --line_search)")
  parser.add_argument("--json", default=None)
  args = parser.parse_args()
  if args.consensus and not args.line_search:
    parser.error("--consensus chooses among the line search's lines: give --line_search=K")
  if not args.no_peer and decoding_options(args.model_gin, args.gin_file,
                                           args.gin_param)[1]["file_tokens"]:
    parser.error("the GPT peer's copy cache reads its window alone: with file_cache.gin (or "
                 "code_t5.copy_cache.file_tokens) give --no_peer")
  global EVAL_TASK
  shared = "_shared" if args.shared_vocabulary else ""
  EVAL_TASK = f"flcc_{args.language}_full_line{shared}"
  args.mixture = args.mixture or f"flcc_{args.language}_causal{shared}"
  if args.mixture.startswith("@") and not args.no_peer:
    parser.error("the GPT peer trains on the scored language's train split alone, not on "
                 "--mixture=@...: give --no_peer")
  require_dataset("bench_learning", args.data_dir, args.language)
  if args.shared_vocabulary:
    from code_t5 import vocabulary  # pylint: disable=g-import-not-at-top
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    path = vocabulary.vocab_path(args.data_dir, vocabulary.SHARED)
    if not tf.io.gfile.exists(path):
      sys.exit(f"bench_learning: {path}: no shared vocabulary: run `python -m code_t5.data "
               f"vocab --data_dir={args.data_dir} --languages=<all of them>`")
  rows, context = positions_per_step(args.model_dir, args.model_gin, args.gin_file,
                                     args.gin_param)
  args.steps = args.steps or -(-args.tokens // (rows * context))

  budget, train_wall = args.steps, None
  if args.eval_only:
    budget, train_wall = recorded_training(read_train_times(args.model_dir))
  else:
    print(f"training the dev model for {args.steps} steps into {args.model_dir} ...",
          file=sys.stderr, flush=True)
    train_wall = train(args.model_dir, args.data_dir, args.steps, args.gin_file,
                       args.gin_param, args.resume, args.mixture, args.model_gin)
  step = require_checkpoint("bench_learning", args.model_dir)
  at_steps = curve_steps(step, args.curve, files.checkpoint_steps(args.model_dir))
  print(f"full-line eval of steps {at_steps} ...", file=sys.stderr, flush=True)
  evaluate(args.model_dir, args.data_dir, args.examples, args.gin_file, args.gin_param,
           at_steps, args.model_gin, args.split)

  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import baselines, metrics, run_records, summaries, tasks  # pylint: disable=g-import-not-at-top
  del tasks  # registers the Tasks
  seqio.set_tfds_data_dir_override(args.data_dir)
  print("the baselines on the same examples ...", file=sys.stderr, flush=True)
  heal, cache = decoding_options(args.model_gin, args.gin_file, args.gin_param)
  report = baselines.compare(args.model_dir, EVAL_TASK, args.split)
  completions, targets = report["completions"], report["targets"]
  features = seqio.get_mixture_or_task(EVAL_TASK).output_features
  examples = baselines.task_examples(EVAL_TASK, args.split, len(targets))
  windows = [baselines.model_window(prefix, features["inputs"], report["input_length"])
             for prefix, _ in examples]
  # Copy-next, the consensus line's other copy (at the cursor's depth), as a completer too.
  from code_t5.decoding import copying  # pylint: disable=g-import-not-at-top
  completions["copy-next"] = [copying.copy_next_line(prefix) for prefix, _ in examples]
  report["metrics"]["copy-next"] = baselines.score(targets, completions["copy-next"])
  # What the run trained (its operative config, now that it has one): the peer's rows too.
  rows, context = positions_per_step(args.model_dir, args.model_gin, args.gin_file,
                                     args.gin_param)
  positions = rows * context

  def curve_point(at, predictions):
    return {"step": at, "token_positions": at * positions,
            **baselines.score(targets, predictions)}
  curve = {"model": []}
  for at in baselines.eval_steps(args.model_dir, EVAL_TASK, args.split):
    if at <= step:
      _, eval_targets, predictions = baselines.eval_outputs(args.model_dir, EVAL_TASK,
                                                            args.split, step=at)
      # An older eval of other examples left its predictions (the targets file is the last
      # eval's): only the steps scored on these examples are points.
      if eval_targets == targets and len(predictions) == len(targets):
        curve["model"].append(curve_point(at, predictions))
  print("the induction probe ...", file=sys.stderr, flush=True)
  induction = [{"step": at, "token_positions": at * positions, **probed}
               for at, probed in induction_probe(
                   args.model_dir, args.data_dir, {p["step"] for p in curve["model"]} | {step},
                   features["targets"].vocabulary, args.gin_file, args.gin_param,
                   args.model_gin).items()]
  peer_wall = None
  if not args.no_peer:
    import gpt_peer  # pylint: disable=g-import-not-at-top
    max_new = run_records.run_bindings(args.model_dir)["sequence_length"]["targets"]
    # The peer's points, kept across a --resume as its checkpoint is.
    peer_curve_path = os.path.join(args.model_dir, "peer",
                                   f"curve{split_suffix(args.split)}.json")
    # Kept with the decoding they were made by: another window, healing or cache scores again.
    decoding = {"window": report["input_length"], "max_new": max_new, "heal": heal,
                "cache": cache}
    peer_completions = {}
    if os.path.exists(peer_curve_path):
      with open(peer_curve_path) as f:
        kept = json.load(f)
      if kept.get("decoding") == decoding:
        peer_completions = {int(k): v for k, v in kept["completions"].items()}

    def score_peer(at, model, vocab, newline):
      print(f"the peer at step {at} on the same examples ...", file=sys.stderr, flush=True)
      peer_completions[at] = gpt_peer.complete(model, vocab, windows, newline, max_new, heal,
                                               cache)
      # Whole or not at all (it makes the folder, which nothing has made before the peer's
      # first checkpoint).
      files.write_atomically(peer_curve_path,
                             json.dumps({"decoding": decoding, "completions": peer_completions}))
    shape = peer_shape(args.model_gin, args.gin_file, args.gin_param)
    peer, vocab, newline, _, peer_wall = train_peer(args.model_dir, step, rows, context,
                                                    EVAL_TASK, shape, at_steps, score_peer)
    if step not in peer_completions:
      score_peer(step, peer, vocab, newline)
    curve["peer"] = [curve_point(at, peer_completions[at]) for at in sorted(peer_completions)
                     if at in at_steps]
    completions["peer"] = peer_completions[step]
    report["metrics"] = {"model": report["metrics"]["model"],
                         "peer": baselines.score(targets, completions["peer"]),
                         **{k: v for k, v in report["metrics"].items() if k != "model"}}
  acceptance = None
  if args.line_search:
    print(f"the line search ({args.line_search} beams) on the same examples ...",
          file=sys.stderr, flush=True)
    prefixes = [prefix for prefix, _ in examples]
    context = repository_context_options(args.model_gin, args.gin_file, args.gin_param)
    repositories = None
    if context["enabled"]:  # the files each example's context was searched in, for infer
      try:
        repositories = baselines.task_repositories(EVAL_TASK, args.split, examples, context)
      except ValueError as e:
        sys.exit(f"bench_learning: {e}")
    searched = line_search(args.model_dir, args.data_dir, step, prefixes, args.line_search,
                           args.gin_file, args.gin_param, args.model_gin,
                           name=f"line_search_{args.split}", repositories=repositories)
    completions["line search"], line_scores = best_lines(searched)
    report["metrics"]["line search"] = baselines.score(targets, completions["line search"])
    # The search's likeliest line: its first where it ranks by probability (rank =
    # 'probability').
    completions["likeliest line"] = [
        found["completions"][max(range(len(found["scores"])), key=found["scores"].__getitem__)]
        if found["completions"] else "" for found in searched]
    report["metrics"]["likeliest line"] = baselines.score(targets,
                                                          completions["likeliest line"])
    acceptance = metrics.acceptance(targets, completions["line search"], line_scores)
    from code_t5.decoding import consensus  # pylint: disable=g-import-not-at-top
    # The model's consensus (model_consensus.gin): the same lines, chosen by agreement.
    completions["model consensus"] = [
        consensus.model_consensus_line(prefix, found["completions"], found["scores"])[0]
        for prefix, found in zip(prefixes, searched)]
    report["metrics"]["model consensus"] = baselines.score(targets,
                                                           completions["model consensus"])
    if args.consensus:
      weights = consensus_weights(args.language, args.gin_param)
      completions["consensus"] = [
          consensus.consensus_line(prefix, found["completions"], found["scores"], **weights)[0]
          for prefix, found in zip(prefixes, searched)]
      report["metrics"]["consensus"] = baselines.score(targets, completions["consensus"])
  per = {name: evaluation.per_example(targets, preds) for name, preds in completions.items()}
  def leads_of(ours):
    return {other: {metric: evaluation.bootstrap_lead(per[ours][metric], per[other][metric])
                    for metric in ("exact_match", "edit_similarity")}
            for other in completions if other != ours}
  leads = leads_of("model")
  # The two consensus lines are the model's completers too: their leads over the baselines
  # and the peer.
  def completer_leads(ours):
    return ({other: lead for other, lead in leads_of(ours).items()
             if other not in ("model", "line search", "likeliest line", "model consensus",
                              "consensus")}
            if ours in completions else None)
  consensus_leads = completer_leads("consensus")
  model_consensus_leads = completer_leads("model consensus")
  line_search_leads = leads_of("line search") if "line search" in completions else None
  probe = evaluation.copy_probe(windows, targets, completions)
  # #60's: the lines that stand verbatim anywhere earlier in their file.
  file_probe = evaluation.copy_probe([prefix for prefix, _ in examples], targets, completions)
  cursors = {name: metrics.by_cursor(windows, targets, preds)
             for name, preds in completions.items()}

  with open(os.path.join(args.model_dir,
                         f"learning_examples{split_suffix(args.split)}.jsonl"), "w") as f:
    for i, target in enumerate(targets):
      f.write(json.dumps({"prefix_tail": report["prefix_tails"][i], "target": target,
                          **{name: preds[i] for name, preds in completions.items()}}) + "\n")

  trained = summaries.summarize(args.model_dir).get("train", {})
  # A model dir holding only a copied checkpoint has no training events: its positions from
  # its step and what a step reads.
  trained.setdefault("token_positions", step * positions)
  wall = f", {train_wall / 60:.1f} min of wall time from launch" if train_wall else ""
  print(f"\ndev model at step {step}{wall}; {trained.get('token_positions', '?'):,} token "
        f"positions trained; {len(targets)} {args.split} examples (held-out repositories)")
  print(f"(copy-window: copy-line from only the model's {report['input_length']}-token input "
        "window; CXG: CodeXGLUE's definitions)")
  if peer_wall is not None:
    print(f"GPT peer: {step} steps of {rows} x {context} token positions, "
          f"{peer_wall / 60:.1f} min of training")
  print(baselines.table(report))
  shares = ", ".join(f"{name} {share:.0f}%" for name, share in probe["exact"].items()
                     if share is not None)
  print(f"copy probe: {probe['examples']} lines stand verbatim earlier in the model's window"
        + (f"; completed exactly: {shares}" if shares else ""))
  shares = ", ".join(f"{name} {share:.0f}%" for name, share in file_probe["exact"].items()
                     if share is not None)
  print(f"copy probe over the file: {file_probe['examples']} lines stand verbatim earlier in "
        "their file" + (f"; completed exactly: {shares}" if shares else ""))
  print(f"induction probe ({evaluation.INDUCTION_PAIRS} calls of random words; nats a token of a call's "
        "rest after the call itself / after another, and the gain):")
  for point in induction:
    print(f"  step {point['step']} ({point['token_positions'] / 1e6:.1f}M): "
          f"{point['copy']:.2f} / {point['control']:.2f}, gain {point['gain']:.2f} "
          f"({point['ci95'][0]:.2f} .. {point['ci95'][1]:.2f})")
  for cursor in metrics.CURSOR_CLASSES:
    if cursor in cursors["model"]:
      print(f"cursor {cursor} ({cursors['model'][cursor]['examples']} examples), edit sim: "
            + ", ".join(f"{name} {by[cursor]['edit_similarity']:.2f}"
                        for name, by in cursors.items()))
  for ours, ours_leads in (("model", leads), ("line search", line_search_leads or {}),
                           ("model consensus", model_consensus_leads or {}),
                           ("consensus", consensus_leads or {})):
    for baseline, by_metric in ours_leads.items():
      for metric, lead in by_metric.items():
        print(f"{ours} - {baseline:<11} {metric:<15} {lead['lead']:+6.2f} points "
              f"(paired bootstrap 95% CI {lead['ci95'][0]:+.2f} .. {lead['ci95'][1]:+.2f})")
  out = {"budget_steps": budget, "train_wall_s": train_wall,
         "checkpoint_step": step, "token_positions": trained.get("token_positions"),
         "examples": len(targets), "split": args.split, "ngram": report["ngram"],
         "copy_window_tokens": report["input_length"], "metric_names":
         list(metrics.FULL_LINE_METRIC_NAMES), "metrics": report["metrics"],
         "model_lead": leads, "consensus_lead": consensus_leads,
         "model_consensus_lead": model_consensus_leads,
         "line_search_lead": line_search_leads, "copy_probe": probe,
         "consensus_weights": weights if args.consensus else None,
         "copy_probe_file": file_probe,
         "induction_probe": induction,
         "by_cursor": cursors,
         "peer_train_wall_s": peer_wall,
         "curve": curve, "line_search_beams": args.line_search or None,
         "acceptance": acceptance}
  baseline_metrics = {name: report["metrics"][name] for name in baselines.BASELINES}
  curve_png = (os.path.splitext(args.json)[0] if args.json else
               os.path.join(args.model_dir, "learning")) + "_curve.png"
  plot_curve(curve, baseline_metrics, curve_png)
  for name, points in curve.items():
    print(f"curve, {name:<5} " + "  ".join(
        f"{p['token_positions'] / 1e6:.1f}M: {p['edit_similarity']:.2f} "
        f"({p['codexglue_edit_similarity']:.2f})" for p in points))
  print(f"learning curve (edit similarity, CodeXGLUE's in brackets): {curve_png}")
  if acceptance:
    acceptance_png = curve_png.replace("_curve.png", "_acceptance.png")
    plot_acceptance(acceptance, acceptance_png)
    print("acceptance (the line search's best line shown when its score >= min_score):")
    print("  shown %  min_score  exact  edit sim")
    for row in acceptance:
      print(f"  {row['shown']:7.1f}  {row['min_score']:9.3f}  {row['exact_match']:5.2f}  "
            f"{row['edit_similarity']:8.2f}")
    print(f"acceptance curve: {acceptance_png}")
  if args.json:
    with open(args.json, "w") as f:
      json.dump(out, f, indent=2)
  return out


if __name__ == "__main__":
  main()
