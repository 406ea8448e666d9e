"""How long a suggestion takes: an exported model asked as an editor asks it, one prefix a call.

For the latest checkpoint of --model_dir (a model of --gin_file, default the dev model):
1. Exports it (`export.gin`, one prefix a call: `utils.run.batch_size = ("sequences_per_batch",
   1)`; mesh-tf pads every call to the export's batch size) once per decoding, each a
   SavedModel under --export_root:
     greedy     the export's default decoding
     read       greedy to one token: reading the prefix and one step, the part of a call
                that does not depend on the completion's length
     beam<k>    the line search (`beam_search.gin`) with k beams, for each k of --beams: a
                beam search that ends at the line end and stops once no open beam can beat
                the best finished one
2. For each SavedModel and each --threads count, in a process of its own that holds only
   TensorFlow and tensorflow_text (as a serving client would, its intra- and inter-op threads
   set to that count): the seconds to load it, the first call (graph set-up) on its own, then
   one call per prefix: --calls prefixes of each length class of the window the export reads
   (decoding_lengths.gin),
     short   under a quarter of the window
     medium  a quarter of the window to all of it
     full    longer than the window (the export keeps its last lines that fit)
   taken from the validation split of the full-line Task (the eval's examples, in its order);
   the latency of each call (p50, p95, max), the characters it returned, and the process's
   peak RSS.
3. The size of each SavedModel on disk.

Prints a table and writes JSON (--json). The latency of a generated completion grows with its
length: `read` is the floor, and the line's length and the decoding do the rest.

With --typing=DIR (an export of `python -m code_t5.session_export`), it replays typing
sessions instead, as an editor asks: for each of the first --lines full-line examples of the
validation split (held-out repositories; with --min_prefix_chars=N, of those with at least N
characters of their file before the line: the lines of large files), the cursor jumps to the
start of the example's line (after its indentation) and the line is typed to its end one
character at a time, a suggestion asked at the start and after each character, each prefix
extending the last. Each served model answers every keystroke, in a process of its own at
each --threads count:
     session float / int8   code_t5_session.Session on DIR's float32 or 8-bit weights: the
                            state kept between calls, the shown suggestion kept while typed
                            along (those calls answered without decoding)
     SavedModel             each --saved_model as the export answers today: every call from
                            scratch (before)
per-call p50 / p95 / p99, the decoded calls' p50, the first call of each line (a jump) and
the process's first call,
the share answered without decoding, the tokens the model read a call, and the process's peak
RSS (with --repository_dir=DIR, each session is first given DIR's .py files as its
repository, Session.set_repository, and the time to index them is reported; with
--session_copy_from=file its copy cache reads the whole file before the cursor); a table,
JSON and a PNG of the latency distribution (--png). With --back_and_forth the lines are typed
two at a time, a half of each in turn, so that the cursor goes back to places read before;
--states=1,0 runs each session keeping one window's state and Session's default (as many as
fit 64 MB; `CachedModel`), a row each; --draft_tokens=0,8 each session without drafts and with
up to 8 tokens guessed a read (`Session`'s draft_tokens; the graph's calls a keystroke are
reported too). With --equality, the same session
(float) also types each of those examples' line up to its cursor and completes there
(decoding, not the kept suggestion), against the SavedModel's from-scratch completion of the
same prefix: the count that are equal; and the edit similarity of the float and 8-bit
sessions' completions against the true lines, with the paired bootstrap interval of their
difference. With --copy_from_file too, the float session completes those examples again with
the copy cache reading the whole file before the cursor (`Session(copy_from="file")`): edit
similarity and exact match against the window's and copy-line's, with paired bootstrap
intervals, and the copy probe over the window and over the whole file; and again with the
file after the cursor's line given to the cache too (`Session.complete(prefix, after)`).

With --through_server, each session row's keystrokes go through the language server instead
(`python -m code_t5_session.lsp`, in .venv-editor where `make editor` made it), as an editor
sends them: JSON-RPC over the server's pipes, a didChange then an inlineCompletion a keystroke,
timed from the change's sending to the answer's arrival; the server's settings are the row's
(--weights, --threads, --consensus, --session_copy_from), the share answered without decoding
comes from the server's counts, the peak RSS is the server process's.

  .venv/bin/python scripts/bench_serving.py --model_dir=runs/rows8 --json=runs/serving_dev.json
  .venv/bin/python scripts/bench_serving.py --model_dir=runs/tiny --gin_file=models/tiny.gin \\
      --saved_model=greedy=runs/tiny_export/1234 --threads=1 --calls=2   # the tests' mode
  .venv/bin/python scripts/bench_serving.py --model_dir=runs/rows8 --typing=runs/rows8_session \\
      --saved_model=greedy=runs/rows8_export/1234 --lines=100 --equality --json=typing.json
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from code_t5_session.session import DRAFT_TOKENS

from benchlib import (DEV_TFDS, QUIET_TF, REPO, LspPipe, launch_lengths, mesh_main_command,
                      require_checkpoint, require_dataset)

MODEL_GIN = "models/causal_lm_dev.gin"
MIXTURE = "flcc_python_causal"  # the export reads its vocabulary; the dev model's mixture
EVAL_TASK = "flcc_python_full_line"
CLASSES = ("short", "medium", "full")

# The process's own peak RSS: /proc's VmHWM, which starts afresh at exec. (getrusage's
# ru_maxrss does not on Linux: a client started from this process, which holds TensorFlow and
# the examples, began at this process's peak -- 760 MB for a session that peaks at 130.)
PEAK_RSS = r"""
def peak_rss_mb():
  with open("/proc/self/status") as f:
    return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
"""

# The serving client: TensorFlow and tensorflow_text only, one prefix a call.
CLIENT = r"""
import json, sys, time
""" + PEAK_RSS + r"""
import tensorflow as tf
threads = int(sys.argv[2])
tf.config.threading.set_intra_op_parallelism_threads(threads)
tf.config.threading.set_inter_op_parallelism_threads(threads)
import tensorflow_text  # noqa: F401  (the SavedModel's sentencepiece ops)
start = time.perf_counter()
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
load_s = time.perf_counter() - start
job = json.loads(sys.stdin.read())
if isinstance(job, dict):  # typing: [head, line, code start, end] a line, expanded here
  prefixes = lambda: ((str(k == code), head + line[:k]) for head, line, code, end in job["typed"]
                      for k in range(code, end + 1))
else:  # [length class, prefix] a call
  prefixes = lambda: iter(job)

def call(prefix):
  start = time.perf_counter()
  out = serve(inputs=tf.constant([prefix]))["outputs"].numpy()[0]
  return time.perf_counter() - start, out.decode("utf-8", "replace")

first_s, _ = call(next(prefixes())[1])
calls = []
for length_class, prefix in prefixes():
  seconds, out = call(prefix)
  calls.append([length_class, seconds, len(out.split("\n")[0]), len(out)]
               + ([out] if len(sys.argv) > 3 else []))  # argv[3]: the texts too
print(json.dumps({"load_s": load_s, "first_s": first_s, "calls": calls,
                  "peak_rss_mb": peak_rss_mb()}))
"""

# The editor's side of a typing session: code_t5_session only (no TensorFlow), one Session.
SESSION_CLIENT = r"""
import json, sys, time
""" + PEAK_RSS + r"""
from code_t5_session import Session
job = json.loads(sys.stdin.read())
start = time.perf_counter()
session = Session(job["export"], weights=job["weights"], threads=job["threads"],
                  copy_from=job.get("copy_from", "window"), consensus=job.get("consensus", False),
                  states=job.get("states", 0), draft_tokens=job["draft_tokens"])
load_s = time.perf_counter() - start
files = []  # the repository's: every .py file under it, as an editor passes a project's
if job.get("repository"):
  import os
  for root, dirs, names in os.walk(job["repository"]):
    dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    for name in sorted(n for n in names if n.endswith(".py")):
      with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
        files.append((os.path.relpath(os.path.join(root, name), job["repository"]), f.read()))
  start = time.perf_counter()
  session.set_repository(files)
index_s = time.perf_counter() - start if files else 0.0
calls = []
for head, line, code, end in job["lines"]:  # the prefixes head + line[:k], k = code .. end
  for k in range(code, end + 1):
    read, graph_calls = session.model.read_count, session.model.call_count
    start = time.perf_counter()
    got = session.suggest(head + line[:k])
    calls.append([k == code, time.perf_counter() - start, got.decoded,
                  session.model.read_count - read, session.model.call_count - graph_calls])
completions, consensus = [], []  # the greedy line, and with consensus the suggestion
for head, line, code, end, *after in job["typed_to_cursor"]:
  for k in range(code, end):
    session.suggest(head + line[:k])
  greedy = session.greedy(head + line[:end], *after)  # decoded once for both
  completions.append(greedy.text)
  if session.consensus:
    consensus.append(session.consensus_of(head + line[:end], greedy).text)
print(json.dumps({"load_s": load_s, "calls": calls, "completions": completions,
                  "consensus": consensus, "peak_rss_mb": peak_rss_mb(),
                  "repository_files": len(files), "index_s": index_s}))
"""


def typed_line(prefix, target):
  """Typing the line of a full-line example from its code start to its end, a suggestion
  asked at the code start and after each character: [the file before the line, the line, the
  code's start in it, the line's end] (the prefixes head + line[:k], k = start .. end)."""
  line_start = prefix.rfind("\n") + 1
  line = prefix[line_start:] + target
  return [prefix[:line_start], line, len(line) - len(line.lstrip(" \t")), len(line)]


def typed_to_cursor(prefix):
  """Typing a prefix's last line from its code start up to the cursor, as typed_line."""
  return typed_line(prefix, "")


def back_and_forth(lines):
  """`lines` (typed_line's) typed two at a time, a half of each in turn: the first half of one
  line, of the next, the second half of the first, of the next; each piece [head, line, from,
  to] typed from `from` to `to`, its first call a jump. An editor's cursor goes back to where
  it was (the function left to add an import, the test beside the code): the second halves
  read the windows the first halves read."""
  pieces = []
  for pair in (lines[i:i + 2] for i in range(0, len(lines), 2)):
    halves = [(head, line, code, code + (end - code) // 2, end) for head, line, code, end in pair]
    pieces += [[head, line, code, middle] for head, line, code, middle, _ in halves]
    pieces += [[head, line, middle + 1, end] for head, line, _, middle, end in halves
               if middle < end]
  return pieces


def typing_client(job):
  """The session client's measurements of one job (an export, weights, threads, lines)."""
  proc = subprocess.run([sys.executable, "-c", SESSION_CLIENT], input=json.dumps(job),
                        capture_output=True, text=True, cwd=REPO)
  if proc.returncode != 0:
    sys.exit(f"bench_serving: the session of {job['export']} failed:\n{proc.stderr[-3000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def protocol_client(job):
  """The typing job's keystrokes through the language server (`python -m
  code_t5_session.lsp`, in the editor's venv where there is one), as an editor sends them:
  JSON-RPC over the server's stdin and stdout, each keystroke a didChange (the whole text at
  a jump to a line, else the character typed) then an inlineCompletion at the cursor, timed
  from the change's sending to the answer's arrival. Whether a call decoded comes from the
  server's counts (code_t5/counts), asked after each answer, outside the time."""
  from code_t5_session import documents  # pylint: disable=g-import-not-at-top
  root = os.path.abspath(job["repository"]) if job.get("repository") else None
  uri = "file://" + os.path.join(root or tempfile.gettempdir(), "code_t5_typed_file.py")
  start = time.perf_counter()
  pipe = LspPipe(job["export"])
  pipe.start("file://" + root if root else None, {
      "weights": job["weights"], "threads": job["threads"], "copy_from": job["copy_from"],
      "decoding": "consensus" if job["consensus"] else "greedy", "repository": bool(root)})
  pipe.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python",
                                                        "version": 0, "text": ""}})
  version, calls, decoded_before, load_s = 0, [], 0, None
  for head, line, code, end in job["lines"]:
    row = len(documents.line_starts(head))
    for k in range(code, end + 1):
      version += 1
      if k == code:  # a jump: the editor's text is the file up to here
        change = {"text": head + line[:code]}
      else:
        column = documents.utf16_length(line[:k - 1])
        here = {"line": row, "character": column}
        change = {"range": {"start": here, "end": here}, "text": line[k - 1]}
      asked = time.perf_counter()
      pipe.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": [change]})
      pipe.call("textDocument/inlineCompletion", {
          "textDocument": {"uri": uri}, "context": {"triggerKind": 2},
          "position": {"line": row, "character": documents.utf16_length(line[:k])}})
      seconds = time.perf_counter() - asked
      if load_s is None:
        load_s = time.perf_counter() - start - seconds
      counts = pipe.call("code_t5/counts", None)
      decoded = counts.get("decoded", 0) > decoded_before
      decoded_before = counts.get("decoded", 0)
      calls.append([k == code, seconds, decoded, 0, 0])
  with open(f"/proc/{pipe.process.pid}/status") as f:
    peak = next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) / 1024
  if counts.get("stale") or counts.get("no model"):
    sys.exit(f"bench_serving: the server answered without its model: {counts}")
  pipe.stop()
  return {"load_s": load_s or 0.0, "calls": calls, "completions": [], "consensus": [],
          "peak_rss_mb": peak, "repository_files": 0, "index_s": 0.0}


def typing_summary(name, threads, measured, first_call_s):
  """Latency percentiles of a typing run's calls (ms), the jumps' and the first call apart."""
  ms = np.array([seconds for _, seconds, *_ in measured["calls"]]) * 1000
  jumps = np.array([seconds for first, seconds, *_ in measured["calls"] if first]) * 1000
  decoded = np.array([seconds for _, seconds, was, *_ in measured["calls"] if was]) * 1000
  return {"served": name, "threads": threads, "calls": len(ms),
          **{f"p{q}_ms": float(np.percentile(ms, q)) for q in (50, 95, 99)},
          "decoded_p50_ms": float(np.percentile(decoded, 50)) if len(decoded) else 0.0,
          "max_ms": float(ms.max()), "jump_p50_ms": float(np.percentile(jumps, 50)),
          "first_call_ms": first_call_s * 1000,
          "kept": float(np.mean([not decoded for _, _, decoded, *_ in measured["calls"]])),
          "read_per_call": float(np.mean([read for _, _, _, read, _ in measured["calls"]])),
          "graph_calls_per_call": float(np.mean([n for *_, n in measured["calls"]])),
          "load_s": measured["load_s"], "peak_rss_mb": measured["peak_rss_mb"],
          "ms": ms.tolist()}


def typing_table(results):
  rows = ["| served | threads | calls | p50 ms | p95 ms | p99 ms | max ms | decoded p50 ms | "
          "jump p50 ms | first call ms | kept | tokens read a call | graph calls a call | "
          "load s | peak RSS MB |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
          "| --- |"]
  for r in results:
    rows.append(f"| {r['served']} | {r['threads']} | {r['calls']} | {r['p50_ms']:.1f} | "
                f"{r['p95_ms']:.1f} | {r['p99_ms']:.1f} | {r['max_ms']:.0f} | "
                f"{r['decoded_p50_ms']:.1f} | {r['jump_p50_ms']:.1f} | "
                f"{r['first_call_ms']:.0f} | {r['kept']:.0%} | {r['read_per_call']:.1f} | "
                f"{r['graph_calls_per_call']:.2f} | "
                f"{r['load_s']:.1f} | {r['peak_rss_mb']:.0f} |")
  return "\n".join(rows)


def typing_plot(results, path):
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  fig, ax = plt.subplots(figsize=(8, 4.5))
  for r in results:
    ms = np.sort(r["ms"])
    ax.plot(np.maximum(ms, 0.01), np.arange(1, len(ms) + 1) / len(ms),
            label=f"{r['served']}, {r['threads']} thread(s)")
  ax.set_xscale("log")
  ax.set_xlabel("latency of a keystroke's suggestion (ms, log scale)")
  ax.set_ylabel("share of keystrokes at or below")
  ax.grid(True, which="both", alpha=0.3)
  ax.legend(fontsize=8)
  fig.tight_layout()
  fig.savefig(path, dpi=120)


def counts(text, flag, what, example):
  """--states' and --draft_tokens' lists of counts, 0 or more (the session's own error would
  come back as a client's traceback)."""
  try:
    values = [int(count) for count in text.split(",")]
    if min(values) < 0:
      raise ValueError(text)
  except ValueError:
    sys.exit(f"bench_serving: {flag}={text}: counts of {what}, 0 or more, such as {example}")
  return values


def run_typing(args, threads):
  """The --typing mode: typing sessions on the session export and the --saved_model's."""
  import seqio  # pylint: disable=g-import-not-at-top
  import code_t5  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from code_t5 import baselines, evaluation, metrics  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(args.data_dir)
  count = max(args.lines, args.equality)
  if args.min_prefix_chars:  # the split's examples in large files, in its order
    examples = [(p, t) for p, t in baselines.task_examples(EVAL_TASK, args.split, -1)
                if p.rfind("\n") + 1 >= args.min_prefix_chars][:count]
    if not examples:
      sys.exit(f"bench_serving: no {args.split} example has {args.min_prefix_chars} characters "
               "of its file before the cursor's line: give a smaller --min_prefix_chars")
  else:
    examples = baselines.task_examples(EVAL_TASK, args.split, count)
  lines = [typed_line(p, t) for p, t in examples[:args.lines]]
  if args.back_and_forth:
    lines = back_and_forth(lines)
  checked = examples[:args.equality]
  cursor_steps = [typed_to_cursor(p) for p, _ in checked]
  keystrokes = sum(end - code + 1 for _, _, code, end in lines)
  file_chars = int(np.median([len(head) for head, *_ in lines])) if lines else 0
  print(f"typing {len(lines)} {'pieces of lines' if args.back_and_forth else 'lines'}, "
        f"{keystrokes} keystrokes, {file_chars:,} characters of the file before the line at "
        "the median", file=sys.stderr)
  state_counts = counts(args.states, "--states", "states", "0,1,8")
  draft_counts = counts(args.draft_tokens, "--draft_tokens", "tokens", "0,8")
  results, completions = [], {}
  for weights, states, drafts, count_threads in (
      (w, n, d, t) for w in args.weights.split(",") for n in state_counts for d in draft_counts
      for t in threads):
    first_run = (states, drafts, count_threads) == (state_counts[0], draft_counts[0], threads[0])
    job = {"export": args.typing, "weights": weights, "threads": count_threads,
           "states": states, "draft_tokens": drafts, "lines": lines,
           "typed_to_cursor": cursor_steps if first_run else [],
           "consensus": args.consensus, "copy_from": args.session_copy_from,
           "repository": args.repository_dir}
    measured = protocol_client(job) if args.through_server else typing_client(job)
    first = measured["calls"][0][1] if measured["calls"] else 0.0
    served = ("server" if args.through_server else "session") + f" {weights}" + (
        ", consensus" if args.consensus else "") + (
        f", copy_from={args.session_copy_from}" if args.session_copy_from != "window" else ""
    ) + (", a repository" if args.repository_dir else "") + (
        f", {states} state{'s' if states > 1 else ''}" if states else "") + (
        f", drafts of {drafts}" if len(draft_counts) > 1 else "")
    results.append(typing_summary(served, count_threads, measured, first))
    if args.repository_dir:
      results[-1].update(repository_files=measured["repository_files"],
                         index_s=measured["index_s"])
      print(f"{served}: a repository of {measured['repository_files']} files, indexed in "
            f"{measured['index_s']:.1f} s", file=sys.stderr)
    if job["typed_to_cursor"]:
      completions[weights] = measured["completions"]
      if args.consensus:
        completions[f"{weights} consensus"] = measured["consensus"]
    print(f"{served}, {count_threads} thread(s): p50 {results[-1]['p50_ms']:.1f} ms",
          file=sys.stderr)
  saved_models = dict(item.split("=", 1) for item in args.saved_model)
  for name, saved_model in saved_models.items():
    for count_threads in threads:
      measured = serve(saved_model, count_threads, {"typed": lines})
      calls = [[jump == "True", seconds, True, 0, 1] for jump, seconds, *_ in measured["calls"]]
      results.append(typing_summary(f"SavedModel {name} (from scratch)", count_threads,
                                    {**measured, "calls": calls}, measured["first_s"]))
      print(f"SavedModel {name}, {count_threads} thread(s): p50 {results[-1]['p50_ms']:.1f} ms",
            file=sys.stderr)
  report = {"typing": args.typing, "lines": len(lines), "keystrokes": keystrokes,
            "min_prefix_chars": args.min_prefix_chars, "median_file_chars": file_chars,
            "results": results}
  if checked and args.consensus:  # each session's consensus line against its greedy line
    targets = [t for _, t in checked]
    report["consensus"] = {}
    for weights in args.weights.split(","):
      ours, greedy = (evaluation.per_example(targets, completions[k])["edit_similarity"]
                      for k in (f"{weights} consensus", weights))
      report["consensus"][weights] = {
          "consensus": float(np.mean(ours)), "greedy": float(np.mean(greedy)),
          "consensus - greedy": evaluation.bootstrap_lead(ours, greedy)}
    print(f"consensus: {json.dumps(report['consensus'])}", file=sys.stderr)
  if checked and args.copy_from_file:
    report["copy_from_file"] = copy_from_file(args, checked, completions["float"], threads[0])
  if checked and saved_models:
    name, saved_model = next(iter(saved_models.items()))
    from_scratch = [out.split("\n")[0] for out in serve_outputs(saved_model, [p for p, _ in checked])]
    targets = [t for _, t in checked]
    equality = {"examples": len(checked),
                "equal": sum(a == b for a, b in zip(completions["float"], from_scratch)),
                "unequal_examples": [i for i, (a, b) in enumerate(zip(completions["float"],
                                                                       from_scratch)) if a != b]}
    scores = {w: evaluation.per_example(targets, c) for w, c in completions.items()}
    quality = {w: {**metrics.edit_similarity(targets, c), **metrics.exact_match(targets, c)}
               for w, c in {**completions, "SavedModel": from_scratch}.items()}
    if "int8" in scores:
      quality["int8 - float"] = evaluation.bootstrap_lead(scores["int8"]["edit_similarity"],
                                                          scores["float"]["edit_similarity"])
    report.update(equality=equality, quality=quality)
    print(f"equal to the SavedModel's from-scratch completion: {equality['equal']} of "
          f"{equality['examples']}", file=sys.stderr)
    print(json.dumps(quality), file=sys.stderr)
  print(typing_table(results))
  if args.png:
    typing_plot(results, args.png)
  if args.json:
    with open(args.json, "w") as f:
      json.dump(report, f, indent=1)
  return 0


def texts_after(examples, split):
  """The text of each (prefix, target) example's file after its line (from the next line on),
  read from the split's files in the order the Task cuts its examples from them."""
  import seqio  # pylint: disable=g-import-not-at-top
  files = seqio.get_mixture_or_task(EVAL_TASK).source.get_dataset(split, shuffle=False)
  contents = (ex["content"].decode("utf-8") for ex in files.as_numpy_iterator())
  content, after = next(contents, None), []
  for i, (prefix, target) in enumerate(examples):
    while content is not None and not content.startswith(prefix + target):
      content = next(contents, None)
    if content is None:
      sys.exit(f"bench_serving: example {i} of the {split} split stands in none of its files "
               "after the previous example's")
    after.append(content[len(prefix + target) + 1:])  # past the line's newline
  return after


def copy_from_file(args, checked, window_completions, threads):
  """The float session's completions of the checked examples with the copy cache reading the
  whole file before the cursor, against its window's (`window_completions`): edit similarity
  and exact match, the paired bootstrap lead, and the copy probe over the window and over
  the whole file (#60's first lever)."""
  import seqio  # pylint: disable=g-import-not-at-top
  from code_t5 import baselines, evaluation, metrics  # pylint: disable=g-import-not-at-top
  from code_t5.decoding import copying  # pylint: disable=g-import-not-at-top
  job = {"export": args.typing, "weights": "float", "threads": threads, "copy_from": "file",
         "draft_tokens": DRAFT_TOKENS,
         "lines": [], "typed_to_cursor": [typed_to_cursor(p) for p, _ in checked]}
  file_completions = typing_client(job)["completions"]
  # The file after the cursor's line too, as an editor holds it (another task: the eval's
  # examples see nothing after the cursor).
  job["typed_to_cursor"] = [[*cursor, after] for cursor, after in
                            zip(job["typed_to_cursor"], texts_after(checked, args.split))]
  after_completions = typing_client(job)["completions"]
  targets = [t for _, t in checked]
  completions = {"window": window_completions, "file": file_completions,
                 "file and after": after_completions}
  with open(os.path.join(args.typing, "session.json")) as f:
    exported = json.load(f)
  input_length = exported["inputs_length"]
  feature = seqio.get_mixture_or_task(EVAL_TASK).output_features["inputs"]
  # The causal model's window has no delimiter; it starts where the export's stride lets it.
  baselines.read_as_the_run(args.model_dir, exported.get("window_stride", 1))
  windows = [baselines.model_window(p, feature, input_length) for p, _ in checked]
  prefixes = [p for p, _ in checked]
  completions.update({"copy-line": [copying.copy_similar_line(p) for p in prefixes],
                      "copy-window": [copying.copy_similar_line(w) for w in windows]})
  edit_similarity = {k: evaluation.per_example(targets, c)["edit_similarity"]
                     for k, c in completions.items()}
  leads = {f"{ours} - {theirs}": evaluation.bootstrap_lead(edit_similarity[ours],
                                                          edit_similarity[theirs])
           for ours, theirs in (("file", "window"), ("file and after", "file"),
                                ("file", "copy-line"), ("window", "copy-line"))}
  report = {
      "quality": {k: {**metrics.edit_similarity(targets, c), **metrics.exact_match(targets, c)}
                  for k, c in completions.items()},
      **leads,
      "copy_probe_window": evaluation.copy_probe(windows, targets, completions),
      "copy_probe_file": evaluation.copy_probe(prefixes, targets, completions),
      "by_cursor": {name: metrics.by_cursor(windows, targets, preds)
                    for name, preds in completions.items()}}
  print(f"copy cache from the file: {json.dumps(report)}", file=sys.stderr)
  return {**report, "completions": completions}  # in the JSON, for pairing with other runs


def decodings(beams):
  """{name: (gin files after export.gin, gin params)} for greedy, read and each beam size."""
  out = {"greedy": ([], []), "read": ([], [])}  # read: its targets length set in export()
  for k in beams:
    out[f"beam{k}"] = (["beam_search.gin"], [f"code_t5.prefix_lm_beam_search.beam_size = {k}"])
  return out


def export(model_dir, data_dir, gin_files, gin_params, export_root, name, extra_files,
           extra_params, lengths):
  """Exports the latest checkpoint with one decoding; returns the SavedModel's path."""
  export_dir = os.path.join(export_root, name)
  params = [*gin_params, f"EXPORT_PATH = '{export_dir}'",
            "utils.run.batch_size = ('sequences_per_batch', 1)", *extra_params]
  if name == "read":
    params.append(f"utils.run.sequence_length = {{'inputs': {lengths['inputs']}, "
                  "'targets': 1}")
  cmd = mesh_main_command(model_dir, data_dir, [*gin_files, "export.gin", *extra_files],
                          params)
  start = time.perf_counter()
  proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=QUIET_TF)
  if proc.returncode != 0:
    sys.exit(f"bench_serving: the {name} export failed:\n{proc.stderr[-3000:]}")
  saved = sorted(d for d in os.listdir(export_dir) if d.isdigit())
  print(f"exported {name} in {time.perf_counter() - start:.0f} s", file=sys.stderr)
  return os.path.join(export_dir, saved[-1])


def prefixes_by_length(data_dir, input_length, calls):
  """[(length class, prefix)]: the first `calls` prefixes of each class among the full-line
  Task's validation examples, by how many tokens of the model's window they fill."""
  import seqio  # pylint: disable=g-import-not-at-top
  import code_t5  # noqa: F401  pylint: disable=g-import-not-at-top,unused-import
  from code_t5 import baselines  # pylint: disable=g-import-not-at-top
  seqio.set_tfds_data_dir_override(data_dir)
  vocabulary = seqio.get_mixture_or_task(EVAL_TASK).output_features["inputs"].vocabulary
  chosen = {c: [] for c in CLASSES}
  for prefix, _ in baselines.task_examples(EVAL_TASK, "validation", 4096):
    tokens = len(vocabulary.encode(prefix))
    length_class = ("short" if tokens < input_length / 4 else
                    "medium" if tokens <= input_length else "full")
    if len(chosen[length_class]) < calls:
      chosen[length_class].append(prefix)
    if all(len(v) >= calls for v in chosen.values()):
      break
  missing = [c for c in CLASSES if not chosen[c]]
  if missing:
    print(f"bench_serving: no validation prefix of class {', '.join(missing)}", file=sys.stderr)
  return [(c, p) for c in CLASSES for p in chosen[c]]


def serve(saved_model, threads, prefixes):
  """The client's measurements of one SavedModel at one thread count."""
  proc = subprocess.run([sys.executable, "-c", CLIENT, saved_model, str(threads)],
                        input=json.dumps(prefixes), capture_output=True, text=True,
                        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if proc.returncode != 0:
    sys.exit(f"bench_serving: serving {saved_model} failed:\n{proc.stderr[-3000:]}")
  return json.loads(proc.stdout.strip().splitlines()[-1])


def serve_outputs(saved_model, prefixes):
  """The SavedModel's whole outputs for each prefix, one call each, at 2 threads."""
  proc = subprocess.run([sys.executable, "-c", CLIENT, saved_model, "2", "texts"],
                        input=json.dumps([["x", p] for p in prefixes]), capture_output=True,
                        text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
  if proc.returncode != 0:
    sys.exit(f"bench_serving: serving {saved_model} failed:\n{proc.stderr[-3000:]}")
  return [call[4] for call in json.loads(proc.stdout.strip().splitlines()[-1])["calls"]]


def summary(measured, saved_model):
  """Latency percentiles in ms, overall and per length class, and the rest."""
  def stats(seconds):
    ms = np.array(seconds) * 1000
    return ({"calls": len(ms), "p50_ms": float(np.percentile(ms, 50)),
             "p95_ms": float(np.percentile(ms, 95)), "max_ms": float(ms.max())}
            if len(ms) else {"calls": 0})
  calls = measured["calls"]
  disk = sum(os.path.getsize(os.path.join(root, f))
             for root, _, names in os.walk(saved_model) for f in names)
  return {
      **stats([s for _, s, _, _ in calls]),
      "by_length": {c: stats([s for k, s, _, _ in calls if k == c]) for c in CLASSES},
      "mean_line_chars": float(np.mean([n for _, _, n, _ in calls])) if calls else 0.0,
      "mean_output_chars": float(np.mean([n for _, _, _, n in calls])) if calls else 0.0,
      "first_call_ms": measured["first_s"] * 1000, "load_s": measured["load_s"],
      "peak_rss_mb": measured["peak_rss_mb"], "disk_mb": disk / 2**20,
  }


def table(results):
  rows = ["| decoding | threads | p50 ms | p95 ms | max ms | p50 short / medium / full | "
          "first call ms | load s | chars of the line / out | peak RSS MB | disk MB |",
          "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
  for r in results:
    by = " / ".join(f"{r['by_length'][c].get('p50_ms', float('nan')):.0f}" for c in CLASSES)
    rows.append(f"| {r['decoding']} | {r['threads']} | {r['p50_ms']:.0f} | {r['p95_ms']:.0f} | "
                f"{r['max_ms']:.0f} | {by} | {r['first_call_ms']:.0f} | {r['load_s']:.1f} | "
                f"{r['mean_line_chars']:.0f} / {r['mean_output_chars']:.0f} | {r['peak_rss_mb']:.0f} | {r['disk_mb']:.1f} |")
  return "\n".join(rows)


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
  parser.add_argument("--model_dir", required=True, help="holds the checkpoint to export")
  parser.add_argument("--data_dir", default=DEV_TFDS)
  parser.add_argument("--model_gin", default=MODEL_GIN)
  parser.add_argument("--gin_file", action="append", default=[],
                      help="after --model_gin, as the model was trained (models/tiny.gin)")
  parser.add_argument("--gin_param", action="append", default=[])
  parser.add_argument("--beams", default="1,3,5",
                      help="beam sizes, comma-separated; empty: greedy and read only")
  parser.add_argument("--threads", default="1,2")
  parser.add_argument("--calls", type=int, default=20, help="prefixes of each length class")
  parser.add_argument("--export_root", default=None,
                      help="where the SavedModels go (default: a new temporary folder)")
  parser.add_argument("--mixture", default=MIXTURE,
                      help="the model's MIXTURE_NAME (its vocabulary is the export's)")
  parser.add_argument("--saved_model", action="append", default=[],
                      help="NAME=PATH of a SavedModel export mode wrote: measured as it is, "
                           "with no exports of its own (give the --gin_file's it was "
                           "exported with: they give the window its prefixes are classed by)")
  parser.add_argument("--json", default=None)
  parser.add_argument("--typing", default=None,
                      help="an export of code_t5.session_export: replay typing sessions")
  parser.add_argument("--lines", type=int, default=100, help="--typing: lines typed")
  parser.add_argument("--back_and_forth", action="store_true",
                      help="--typing: the lines typed two at a time, a half of each in turn "
                           "(the cursor goes back to a place it read before)")
  parser.add_argument("--states", default="0",
                      help="--typing: the windows' states each session keeps, a run for each "
                           "of these counts (0: Session's default)")
  parser.add_argument("--draft_tokens", default=str(DRAFT_TOKENS),
                      help="--typing: the most tokens each session guesses a read, a run for "
                           "each of these counts (0: no drafts; the default, Session's)")
  parser.add_argument("--weights", default="float,int8", help="--typing: the session's weights")
  parser.add_argument("--equality", type=int, default=0,
                      help="--typing: examples completed at their cursor by the session and "
                           "by the first --saved_model, compared (716: the learning bench's)")
  parser.add_argument("--png", default=None, help="--typing: the latency distribution's plot")
  parser.add_argument("--copy_from_file", action="store_true",
                      help="--typing with --equality: the float session's completions again "
                           "with the copy cache reading the whole file before the cursor")
  parser.add_argument("--split", default="validation",
                      help="--typing: the split whose full-line examples are typed")
  parser.add_argument("--min_prefix_chars", type=int, default=0,
                      help="--typing: only examples with at least this many characters of "
                           "their file before the cursor's line: the lines of large files")
  parser.add_argument("--session_copy_from", default="window", choices=("window", "file"),
                      help="--typing: what the sessions' copy cache reads (Session's "
                           "copy_from): the model's window or the whole file before the cursor")
  parser.add_argument("--repository_dir", default=None,
                      help="--typing: a local folder whose .py files each session is given as "
                           "its repository (Session.set_repository; an export of a model "
                           "trained with repository_context.gin), as an editor passes a project")
  parser.add_argument("--consensus", action="store_true",
                      help="--typing: sessions of Session(consensus=True), the consensus line "
                           "of the greedy line and the prefix's two copies; with --equality, "
                           "its edit similarity against the greedy line's, paired")
  parser.add_argument("--through_server", action="store_true",
                      help="--typing: each keystroke through the language server "
                           "(python -m code_t5_session.lsp) as JSON-RPC over pipes, not a "
                           "Session in a process of its own")
  args = parser.parse_args(argv)
  beams = [int(k) for k in args.beams.split(",") if k.strip()]
  threads = [int(t) for t in args.threads.split(",") if t.strip()]
  if args.copy_from_file and not (args.typing and args.equality and
                                  "float" in args.weights.split(",")):
    sys.exit("bench_serving: --copy_from_file compares the float session's completions: give "
             "--typing, --equality and float in --weights")
  if (args.session_copy_from != "window" or args.repository_dir) and args.equality:
    sys.exit("bench_serving: --equality holds the sessions to the SavedModel, which reads "
             "neither the file before its window nor a repository: time "
             "--session_copy_from=file and --repository_dir apart")
  if args.through_server and (args.equality or args.back_and_forth or args.states != "0" or
                              args.draft_tokens != str(DRAFT_TOKENS)):
    sys.exit("bench_serving: --through_server times the server's own sessions: no "
             "--equality, --back_and_forth, --states or --draft_tokens with it")
  if args.typing:
    require_dataset("bench_serving", args.data_dir)
    return run_typing(args, threads)
  gin_files = [args.model_gin, *args.gin_file]
  # The window the exports read (decoding_lengths.gin), as export.gin gives it after the files.
  lengths = launch_lengths([*gin_files, "export.gin"], args.gin_param)
  if not lengths:
    sys.exit(f"bench_serving: {' '.join(gin_files)} and export.gin set no DECODING_LENGTHS "
             "(sequence_lengths/*.gin set it): give the model's gin files")
  export_root = args.export_root or tempfile.mkdtemp(prefix="bench_serving_")
  if args.saved_model:
    export_root = None
  require_dataset("bench_serving", args.data_dir)
  if not args.saved_model:
    require_checkpoint("bench_serving", args.model_dir)
  prefixes = prefixes_by_length(args.data_dir, lengths["inputs"], args.calls)
  if args.saved_model:
    saved_models = dict(item.split("=", 1) for item in args.saved_model)
  else:
    saved_models = {name: export(args.model_dir, args.data_dir, gin_files,
                                 [*args.gin_param, f"MIXTURE_NAME = '{args.mixture}'"],
                                 export_root, name, extra_files, extra_params, lengths)
                    for name, (extra_files, extra_params) in decodings(beams).items()}
  results = []
  for name, saved_model in saved_models.items():
    for count in threads:
      measured = serve(saved_model, count, prefixes)
      results.append({"decoding": name, "threads": count, **summary(measured, saved_model)})
      print(f"{name}, {count} thread(s): p50 {results[-1]['p50_ms']:.0f} ms", file=sys.stderr)
  report = {"model_dir": args.model_dir, "gin_files": gin_files, "gin_params": args.gin_param,
            "sequence_length": lengths, "prefixes": {c: sum(1 for k, _ in prefixes if k == c)
                                                     for c in CLASSES},
            "export_root": export_root, "results": results}
  print(table(results))
  if args.json:
    with open(args.json, "w") as f:
      json.dump(report, f, indent=1)
  return 0


if __name__ == "__main__":
  sys.exit(main())
