"""The export's decoding rules on one prefix, in NumPy: the window, token healing's back-off and
mask, and the copy cache.

Each is the rule of code_t5's TensorFlow decoding (which the SavedModel export, eval and infer
run), written again for one row so that a served editor session needs no TensorFlow; each is
held to its TensorFlow original by tests/test_session.py, and the session's completions to
the SavedModel's on the learning bench's examples:

  window(...)             code_t5.preprocessors.left_truncate_at_line
  back_off(...)           code_t5.decoding.healing.back_off
  allowed_pieces(...)     code_t5.decoding.healing.allowed_pieces
  next_token_counts(...)  code_t5.decoding.copy_cache.next_token_counts
  mixed_log_probs(...)    code_t5.decoding.copy_cache.mixed_log_probs

and one of its own, `draft(...)`: the tokens a session guesses decoding will write, checked
by the model in one call (speculative decoding; the completions stay greedy's).
"""

import bisect

import numpy as np


def window(tokens, max_length: int, newline_id: int, stride: int = 1):
  """The longest suffix of `tokens` of at most `max_length` that starts a line; the plain last
  `max_length` tokens when that window holds no line start. With `stride`, cut only at a
  multiple of `stride` tokens (then at the first line start after it)."""
  excess = max(len(tokens) - max_length, 0)
  excess = min(-(-excess // stride) * stride, len(tokens))
  for i in range(excess, len(tokens)):
    if i == 0 or tokens[i - 1] == newline_id:
      return list(tokens[i:])
  return list(tokens[excess:])


# The characters of a line's indentation, which healing must not let grow once written again.
INDENTATION = " \t"


def blank(text: str) -> bool:
  """Whether `text` is indentation alone (spaces and tabs, at least one)."""
  return bool(text) and not text.strip(INDENTATION)


def after_indentation(processor, texts, line_ends):
  """The ids that may follow an indentation written again: the pieces of `texts` that start
  with code (not a space or a tab), `line_ends` (a line end, EOS), and the bytes of a
  character the vocabulary lacks (`$` in some), but a space's and a tab's."""
  starts_code = [i for i, text in enumerate(texts) if text and text[0] not in INDENTATION]
  indentation_bytes = {f"<0x{ord(c):02X}>" for c in INDENTATION}
  code_bytes = [i for i in range(processor.get_piece_size())
                if processor.is_byte(i) and processor.id_to_piece(i) not in indentation_bytes]
  return np.union1d(starts_code + code_bytes, list(line_ends)).astype(np.int64)


class HealingPieces:
  """Which pieces heal and their texts, the ids that may follow an indentation written again
  (`after_indentation(...)`'s) (code_t5.decoding.healing.HealingTables), and an index of the
  pieces by text for the mask."""

  def __init__(self, texts, after_indentation_ids):
    self.texts = list(texts)
    self.lengths = np.array([len(t) for t in self.texts])
    self.after_indentation = after_indentation_ids
    self.by_text = {t: i for i, t in enumerate(self.texts) if t}
    self.sorted = sorted((t, i) for i, t in enumerate(self.texts) if t)
    self.sorted_texts = [t for t, _ in self.sorted]

  def back_off(self, ids, pieces: int, newline_id: int):
    """(kept, typed): `ids` less up to their last `pieces` healing pieces, and those pieces.
    At least one piece stays; a line end or a piece that does not heal ends the back-off."""
    taken = 0
    for k in range(1, pieces + 1):
      position = len(ids) - k
      if position >= 1 and ids[position] != newline_id and self.lengths[ids[position]] > 0:
        taken += 1
      else:
        break
    cut = len(ids) - taken
    return list(ids[:cut]), list(ids[cut:])

  def allowed_pieces(self, typed: str, done: int):
    """The ids of the pieces that may be written after `done` characters of the taken-off text
    `typed`: a start of what is left of it, or beginning with all of it; empty (any piece)
    once it is written. A text of only spaces and tabs may not grow: the piece written after
    it must start with code, or end the line."""
    indentation = blank(typed)
    if done >= len(typed):
      return (self.after_indentation if indentation and done == len(typed)
              else self.after_indentation[:0])
    left = typed[done:]
    allowed = [self.by_text[left[:k]] for k in range(1, len(left) + 1) if left[:k] in self.by_text]
    start = bisect.bisect_left(self.sorted_texts, left)
    for text, i in self.sorted[start:]:
      if not text.startswith(left):
        break
      if not (indentation and len(text) > len(left) and text[len(left)] in INDENTATION):
        allowed.append(i)
    return np.unique(np.array(allowed, np.int64))

  def written_length(self, ids):
    """The characters `ids` wrote; a piece that does not heal (a line end, EOS) counts one."""
    return int(sum(max(int(self.lengths[i]), 1) for i in ids))


def longest_run_ends(sequence, before: int, min_length: int, max_length: int):
  """The ends j < `before` - 1 of the earlier runs that match the last tokens of `sequence`
  (an int64 array), the longest such run of `min_length` to `max_length` tokens: the places
  whose next token, j + 1, lies before `before`. Empty where no run that long matches."""
  n = len(sequence)
  last = n - 1
  # The ends j of the runs that match the last k + 1 tokens, for k = 0, 1, ...: one pass over
  # the sequence for the last token, then only those ends are checked a token further back. A
  # step costs a comparison over the sequence, not max_length of them: a session's whole-file
  # cache holds tens of thousands.
  ends = np.flatnonzero(sequence[:max(min(before, n) - 1, 0)] == sequence[last])
  longest = ends[:0]
  for k in range(min(max_length, n)):
    if k:
      ends = ends[ends >= k]
      ends = ends[sequence[ends - k] == sequence[last - k]]
    if not len(ends):
      break  # no longer run matches either
    if k + 1 >= min_length:
      longest = ends  # the longest run with a match wins
  return longest


def decoded(processor, ids) -> str:
  """The text of `ids` as seqio's SentencePieceVocabulary.decode gives it, which infer and the
  SavedModel use: an id past the vocabulary's pieces (the model's embedding is padded to a
  multiple of 128, and an undertrained model can choose a padding row) is read as UNK, where
  sentencepiece alone raises."""
  size, unk = processor.get_piece_size(), processor.unk_id()
  return processor.decode([i if i < size else unk for i in ids])


def next_token_counts(sequence, source_length: int, vocab_size: int, order: int,
                      max_order: int):
  """float32 [vocab_size]: how often each token among the first `source_length` of
  `sequence` (the prefix, then what decoding wrote) followed the longest run of the
  sequence's last tokens (`order` to `max_order` of them) that stands before it too."""
  sequence = np.asarray(sequence, np.int64)
  if len(sequence) == 0:
    return np.zeros(vocab_size, np.float32)
  longest = longest_run_ends(sequence, source_length, order, max_order)
  return np.bincount(sequence[longest + 1], minlength=vocab_size)[:vocab_size].astype(np.float32)


def draft(sequence, length: int, stop_ids, min_match: int = 2, max_match: int = 16):
  """Up to `length` ids guessed to follow `sequence` (the copy cache's source, then what
  decoding wrote): those that followed the latest earlier run of its last tokens, the longest
  such run of `min_match` to `max_match` tokens, cut before the first of `stop_ids` (the line
  end: decoding stops there). Prompt lookup: code repeats its own runs of tokens, and a
  guess costs only its check (`CachedModel.logits_after`'s `draft`). [] for no such run.
  A run of one token guessed wrong so often that its checks cost more than they saved; 2 to 4
  were level (docs/BENCHMARK_LOG.md, "Drafts checked in one call")."""
  sequence = np.asarray(sequence, np.int64)
  if len(sequence) < 2 or length < 1:
    return []
  longest = longest_run_ends(sequence, len(sequence), min_match, max_match)
  if not len(longest):
    return []
  guess = sequence[longest.max() + 1:][:length].tolist()
  for i, token in enumerate(guess):
    if token in stop_ids:
      return guess[:i]
  return guess


def log_softmax(logits):
  logits = np.asarray(logits, np.float32)
  shifted = logits - logits.max()
  return shifted - np.log(np.exp(shifted).sum())


def mixed_log_probs(logits, counts, weight: float):
  """log((1 - weight) * softmax(logits) + weight * counts / their sum), the model's alone
  where `counts` has none."""
  log_model = log_softmax(logits)
  total = counts.sum()
  share = np.float32(weight if total > 0 else 0.0)
  return np.log((1 - share) * np.exp(log_model) + share * counts / max(total, 1.0)
                + np.float32(1e-30)).astype(np.float32)
