"""An editor's completion session: a suggestion per keystroke, from an export of
`python -m code_t5.session_export`.

    session = Session("runs/base_session")           # float weights; weights="int8": 8-bit
    suggestion = session.suggest(code_before_cursor)  # at each keystroke
    if suggestion.text and suggestion.log_prob > THRESHOLD: show(suggestion.text)

A call decodes greedily as the SavedModel export does (code_t5.greedy_decode: the model's
window, token healing, the copy cache, to the line end), but reads only what the last call
did not: the model keeps the keys and values of the tokens it read (`CachedModel`), and a
prefix that extends the last one shares all of them but the few that healing takes off and
the line's changed last piece. While the user types along the shown suggestion, it is kept
and its rest returned without decoding (`Suggestion.decoded` is False), as editors keep a
shown completion. Where the model must read, the tokens that followed the same run of tokens
earlier in the copy cache's source are guessed ahead (`decoding.draft`) and read in the same
call; decoding still takes what the model chooses, so a right guess saves calls and a wrong one
changes nothing but that call's size (`draft_tokens`).

With `Session(export_dir, consensus=True)` the suggestion is the consensus line
(`code_t5_session/lines.py`, the rule of the eval's `consensus.gin`) of that greedy line and
two copies from the prefix, copy-line's and copy-next's: on held-out code it led the greedy
line by 3.7 to 4.9 points of edit similarity, for the cost of the two copies' scans
(docs/BENCHMARK_LOG.md, "The consensus line in a session").
"""

import dataclasses
import itertools
import json
import math
import os
import re

import numpy as np

from code_t5_session import decoding
from code_t5_session import lines
from code_t5_session import retrieval
from code_t5_session.model import CachedModel, inference_session, model_path

CONFIG = "session.json"
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
VOCABULARY = "spm.model"
# The most tokens a read guesses ahead (Session's draft_tokens).
DRAFT_TOKENS = 8
# set_repository indexes this many files at the most (a repository of a thousand files is
# 10^5 windows; each file is read to its first file_chars characters).
MAX_REPOSITORY_FILES = 4096


def without_lone_surrogates(text: str) -> str:
  """`text` with each lone surrogate -- what Python's surrogateescape makes of a byte that is
  not UTF-8, and JSON's "\\udce9" -- as U+FFFD, the character a UTF-8 decoder puts for such a
  byte: a lone surrogate has no UTF-8, which sentencepiece and TensorFlow read. A session
  reads an editor's text so, infer its JSON lines (code_t5/modes/json_lines.py)."""
  return _LONE_SURROGATE.sub("\ufffd", text)


@dataclasses.dataclass(frozen=True)
class Suggestion:
  """The rest of the line, and what it cost.

  text: what follows the cursor to the line's end ("" for nothing to show).
  log_prob: the log-probability (nats) of the tokens decoding chose, healed pieces and the
    line end included; the shown suggestion's, when kept.
  decoded: False when the last suggestion's rest was returned without the model.
  read: tokens the model read for this call (the prefix's new ones, each written one, and
    those a draft guessed; `Session`'s draft_tokens).
  prefix_read: of those, the prefix's: what the kept state did not hold.
  confidence: with consensus=True, the shown line's expected edit similarity (0..1) to the
    greedy line and the two copies (`lines.consensus_line`); NaN without. `log_prob` stays
    the greedy line's, also where a copy was chosen.
  """
  text: str
  log_prob: float
  decoded: bool
  read: int
  prefix_read: int
  confidence: float = math.nan


class Export:
  """What every session of an export shares, read once: its settings, vocabulary, healing
  tables and model (onnxruntime's session of the graph: the weights, most of the memory). A
  language server opens one and a Session of it per document."""

  def __init__(self, export_dir: str, weights: str = "float", threads: int = 0):
    """As `Session`'s arguments of the same names."""
    import sentencepiece as spm  # pylint: disable=g-import-not-at-top
    config = os.path.join(export_dir, CONFIG)
    if not os.path.isfile(config):
      raise FileNotFoundError(f"{export_dir}: no {CONFIG}: not a finished export of "
                              "`python -m code_t5.session_export`")
    if weights not in ("float", "int8"):
      raise ValueError(f"weights must be 'float' or 'int8', not {weights!r}")
    self.export_dir, self.weights = export_dir, weights
    with open(config) as f:
      self.config = json.load(f)
    if weights == "int8" and not self.config["int8"]:
      raise ValueError(f"{export_dir}: exported without 8-bit weights (--no_int8)")
    self.processor = spm.SentencePieceProcessor(model_file=os.path.join(export_dir, VOCABULARY))
    texts = self.config["healing_texts"]
    self.healing = decoding.HealingPieces(texts, decoding.after_indentation(
        self.processor, texts, (self.config["newline_id"], self.config["eos_id"])))
    self.model_path = model_path(export_dir, weights)
    self.inference = inference_session(self.model_path, threads)


class Session:
  """One editor's session with an export: suggestions for prefixes of one file as it is typed."""

  def __init__(self, export_dir, weights: str = "float", threads: int = 0,
               copy_from: str = "window", consensus: bool = False, states: int = 0,
               draft_tokens: int = DRAFT_TOKENS):
    """`export_dir`: a local folder that `python -m code_t5.session_export` wrote (copy a
    gs:// one down first: onnxruntime reads local files), or an `Export` of one that other
    sessions share (`weights` and `threads` are then its own); `weights`: "float" or "int8";
    `threads`: onnxruntime's, 0 for its choice; `copy_from`: what the copy cache reads,
    "window" (the model's window, as the export decodes) or "file" (all of the prefix: the
    lines before the window too; and the file after the cursor's line, where the editor
    passes it as `after`); `consensus`: suggest the consensus line of the greedy line and the
    prefix's two copies (`lines.consensus_line`) in its place, with the rule's default
    settings (gin's `code_t5.consensus_line` and `code_t5.copy_next_line` params configure the
    eval and infer, not a session); `states`: the windows' states the model keeps, so that a
    jump back to a place read before reads only what changed there (`CachedModel`; 0: as many
    as fit in 64 MB, at most 8); `draft_tokens`: the most tokens a read guesses ahead from
    the copy cache's source (`decoding.draft`) for the model to check in the same call, 0 for
    none: float32's completions are the same either way, the calls fewer (8-bit's nearly: its
    activations are quantized with one scale a call)."""
    if copy_from not in ("window", "file"):
      raise ValueError(f"copy_from must be 'window' or 'file', not {copy_from!r}")
    self.copy_from = copy_from
    if draft_tokens < 0:
      raise ValueError(f"draft_tokens must be 0 or more, not {draft_tokens}")
    self.draft_tokens = draft_tokens
    self.consensus = consensus
    export = export_dir if isinstance(export_dir, Export) else Export(export_dir, weights,
                                                                      threads)
    self.config, self.processor, self.healing = export.config, export.processor, export.healing
    self.pieces = self.config["healing_pieces"]
    self.steps = self.config["targets_length"] + self.pieces
    self.model = CachedModel(export.model_path, states=states, session=export.inference)
    self._shown_prefix, self._shown = None, None
    self._after = ("", [])  # the last `after` text and its ids: encoded once while it stands
    self._repository = None  # set_repository's index
    self._skipped = None  # the path of the file being typed, in a shared index (use_repository)
    self._context = ("", [])  # the last context and its ids, as `_after`

  def set_repository(self, files, language: str = "python"):
    """The other files of the file being typed, [(path, content)], for an export of a model
    trained with repository_context.gin: each suggestion then reads their lines that best
    match the code before the cursor, as the model's Task did (code_t5_session/retrieval.py).
    None: no repository. The files are indexed once, here: the first MAX_REPOSITORY_FILES of
    them, each to its first retrieval's file_chars characters (a bound on the index's memory
    and time, whatever the caller hands in). Returns how many files were left out."""
    options = self.config.get("repository_context")
    if files is not None and not options:
      raise ValueError("set_repository: this export's model was not trained with "
                       "repository_context.gin; it reads no repository context")
    left_out = 0
    if files is None:
      retrieval.windows.cache_clear()  # the earlier repository's contents go with its index
    else:
      files = iter(files)
      kept = list(itertools.islice(files, MAX_REPOSITORY_FILES))
      left_out = sum(1 for _ in files)  # counted, not held
      files = kept
      for i, item in enumerate(files):  # (an infer record's are {"path": ..., "content": ...})
        if not (isinstance(item, (tuple, list)) and len(item) == 2 and
                all(isinstance(part, str) for part in item)):
          raise TypeError(f"set_repository: files are (path, content) pairs of strings; "
                          f"file {i} is {type(item).__name__} {str(item)[:60]!r}")
    self._repository = None if files is None else retrieval.index_of(files, language, options)
    self._skipped = None
    self._shown_prefix, self._shown = None, None
    return left_out

  @property
  def repository(self):
    """The repository index the suggestions read (set_repository's or use_repository's), or
    None."""
    return self._repository

  def use_repository(self, index, path=None):
    """Read the repository context from `index` (`retrieval.index_of`'s, made once for the
    open files of a workspace), leaving out the windows of `path`, the file being typed;
    None: no repository. As set_repository, for an export trained with it."""
    if index is not None and not self.config.get("repository_context"):
      raise ValueError("use_repository: this export's model was not trained with "
                       "repository_context.gin; it reads no repository context")
    self._repository, self._skipped = index, path
    self._shown_prefix, self._shown = None, None

  def _context_ids(self, prefix: str):
    """The ids of the repository context of `prefix`, cut to its budget ([] without one)."""
    if self._repository is None:
      return []
    options = self.config["repository_context"]
    text = retrieval.context_of(self._repository, prefix, options, skip=self._skipped)
    if text != self._context[0]:
      self._context = (text, self._ids(text) if text else [])
    budget = retrieval.token_budget(options["max_tokens"], self.config["inputs_length"])
    return decoding.window(self._context[1], budget, self.config["newline_id"])

  def window(self, prefix: str):
    """The ids the model reads of `prefix`: its last lines that fit the window (after the
    repository context, when there is one)."""
    context = self._context_ids(prefix)
    return context + self._encoded(prefix, len(context))[1]

  def _encoded(self, prefix: str, context_length: int = 0):
    """(the ids of `prefix` before the window, the window's). The whole prefix is encoded, as
    the export encodes it: sentencepiece breaks ties between equal segmentations of a run of
    spaces by its running score, which the text before the run changes, so a line encoded
    alone can come out in other pieces (measured: 3 of the first 40 validation examples)."""
    ids = self._ids(prefix)
    window = decoding.window(ids, self.config["inputs_length"] - context_length,
                             self.config["newline_id"], self.config.get("window_stride", 1))
    return ids[:len(ids) - len(window)], window

  def _ids(self, text: str):
    """`text`'s pieces, a lone surrogate read as U+FFFD (`without_lone_surrogates`: an
    editor may decode a file with surrogateescape)."""
    try:
      return self.processor.encode(text)
    except TypeError:  # "not a string": sentencepiece could not convert it to UTF-8
      return self.processor.encode(without_lone_surrogates(text))

  def _after_ids(self, after: str):
    if after != self._after[0]:
      self._after = (after, self._ids(after))
    return self._after[1]

  def suggest(self, prefix: str, after: str = "") -> Suggestion:
    """The suggestion for the code before the cursor: the shown one's rest while `prefix`
    is the shown one's prefix typed further along it, else decoded. `after`: the file after
    the cursor's line, for the copy cache of copy_from="file" (the task then differs from
    the SavedModel's, which sees no text after the cursor)."""
    if self._shown is not None and prefix.startswith(self._shown_prefix):
      typed = prefix[len(self._shown_prefix):]
      if "\n" not in typed and len(typed) < len(self._shown.text) and \
          self._shown.text.startswith(typed):
        return Suggestion(self._shown.text[len(typed):], self._shown.log_prob, False, 0, 0,
                          self._shown.confidence)
    suggestion = self.complete(prefix, after)
    self._shown_prefix, self._shown = (prefix, suggestion) if suggestion.text else (None, None)
    return suggestion

  def complete(self, prefix: str, after: str = "") -> Suggestion:
    """The greedy completion of the rest of the line, as the export decodes it (`after`: as
    for `suggest`); with consensus=True, the consensus line of it and the two copies."""
    greedy = self.greedy(prefix, after)
    return self.consensus_of(prefix, greedy) if self.consensus else greedy

  def consensus_of(self, prefix: str, greedy: Suggestion) -> Suggestion:
    """`greedy` (this session's greedy completion of `prefix`) with its text replaced by the
    consensus line of it and the prefix's two copies, and that line's confidence."""
    text, confidence = lines.consensus_line(prefix, [greedy.text], [greedy.log_prob])
    return dataclasses.replace(greedy, text=text, confidence=confidence)

  def greedy(self, prefix: str, after: str = "") -> Suggestion:
    """The greedy completion of the rest of the line, as the export decodes it (`after`: as
    for `suggest`)."""
    if after and self.copy_from != "file":
      raise ValueError("after: the copy cache reads the file after the cursor's line only "
                       "with copy_from='file'")
    newline, eos = self.config["newline_id"], self.config["eos_id"]
    cache = self.config["copy_cache"]
    context = self._context_ids(prefix)
    before, window = self._encoded(prefix, len(context))
    # The model reads the repository context first; healing backs off over all it reads.
    kept, typed = self.healing.back_off(context + window, self.pieces, newline)
    # The copy cache's source: what the model reads, less the healed pieces, and with
    # copy_from="file" the file's lines before the window, and first of all the text after
    # the cursor's line (first: the cache looks for the run that ends the source and
    # decoding's tokens, which must be the window's end).
    source = np.asarray(self._after_ids(after) + before + kept if self.copy_from == "file"
                        else kept, np.int64)  # an array once a call: the file's can be long
    typed_text = "".join(self.healing.texts[t] for t in typed)
    inputs = [0] + kept  # mesh-tf's inputs: each position reads the token before it
    written, log_prob, stops = [], 0.0, (newline, eos)
    # What the copy cache and the draft read: the source, then what decoding wrote, a view of
    # one buffer (no copy of the file's source at each step).
    buffer = np.empty(len(source) + self.steps, np.int64)
    buffer[:len(source)] = source

    def sequence():
      return buffer[:len(source) + len(written)]

    def draft():  # what to guess after `written`, when the model must read
      room = min(self.draft_tokens, self.steps - 1 - len(written))
      return decoding.draft(sequence(), room, stops)

    read_before, guessed_before = self.model.read_count, self.model.draft_count
    logits = self.model.logits_after(inputs, draft)
    prefix_read = (self.model.read_count - read_before) - (self.model.draft_count - guessed_before)
    for _ in range(self.steps):
      if cache["weight"]:
        counts = decoding.next_token_counts(sequence(), len(source), len(logits),
                                            cache["order"], cache["max_order"])
        scores = decoding.mixed_log_probs(logits, counts, cache["weight"])
      else:
        scores = decoding.log_softmax(logits)
      done = self.healing.written_length(written)
      allowed = self.healing.allowed_pieces(typed_text, done)
      if len(allowed):
        token = int(allowed[np.argmax(scores[allowed])])
      else:  # no text left to write again (or no piece agrees: the mask's argmax is the plain one)
        token = int(np.argmax(scores))
      log_prob += float(scores[token])
      written.append(token)
      buffer[len(source) + len(written) - 1] = token
      if token in stops:
        break
      if len(written) < self.steps:
        logits = self.model.logits_after(inputs + written, draft)
    text = decoding.decoded(self.processor, [t for t in written if t != eos])
    if typed_text:
      text = text[len(typed_text):] if text.startswith(typed_text) else ""
    return Suggestion(text.split("\n")[0], log_prob, True, self.model.read_count - read_before,
                      prefix_read)
