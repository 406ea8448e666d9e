"""Token healing: completing a prefix whose last pieces the cursor cut where the file would not.

A cursor stands anywhere in a line; sentencepiece cuts the code before it as if the text ended
there. `self.na` ends in the pieces `n` `a` where the file holds `self.name` as `.` `name`,
and a model trained on files has rarely seen a line go on after `n` `a`. So decoding backs
off: the last `pieces` pieces of the prefix (none across a line end) are taken off what the
model reads, and the model writes them again -- each step may only choose a piece that agrees
with the text taken off (a piece that is a start of what is left of it, or that begins with
all of it) -- so that it picks the pieces the file would have had. What it wrote of the
taken-off text is then cut from the completion, which is the rest of the line as before.

The same holds at a line's start: sentencepiece cuts a line of 8 spaces as `▁▁▁▁▁▁▁▁` where
the file's `        return` is `▁▁▁▁▁▁▁` `▁return`. Taken off, indentation alone must not grow
when written again (a space after it would be more indentation, not code): what is written
after it must start with code (or end the line).

  HealingTables.of(sp)    each piece's text and length; the ids of each piece's tails
  back_off(...)           the prefix less its last pieces, and those pieces (TF)
  allowed_pieces(...)     the mask of the pieces that agree with the text left to write (TF)
  without_typed(...)      a continuation with the taken-off text cut from its start (TF),
                          tail_room(tables) ids wider

All three are plain TF over [rows, ...]; `decoding` runs them on each slice of the mesh
(mtf.slicewise over the batch dimensions). Positions count UTF-8 characters, as the Tasks'
cursors do.
"""

import dataclasses
import functools

import numpy as np
import tensorflow.compat.v1 as tf

from code_t5.vocabulary import EOS_ID, NEWLINE, NEWLINE_ID
from code_t5_session import decoding


@dataclasses.dataclass(frozen=True)
class HealingTables:
  """What decoding needs of the vocabulary, for ids 0 .. size - 1.

  texts, lengths: each piece's text and its length in characters; a piece that never heals
    (pad, EOS, unknown, bytes, a line end, an id past the vocabulary) has "" and 0.
  blank: whether a piece is spaces and tabs only (indentation, when a line starts with it).
  after_indentation: the pieces that may follow an indentation written again: those that
    start with code (not a space or a tab), a line end, EOS and the bytes of characters the
    vocabulary lacks (code_t5_session.decoding.after_indentation, the session's rule too).
  tail_keys, tail_splits, tail_ids: for each healing piece p and each k in 1 .. len(p) - 1,
    the key p * key_stride + k (sorted) and the ids of p's text without its first k
    characters (a ragged table: tail_ids[tail_splits[i]:tail_splits[i + 1]]).
  """
  texts: np.ndarray
  lengths: np.ndarray
  blank: np.ndarray
  after_indentation: np.ndarray
  key_stride: int
  tail_keys: np.ndarray
  tail_splits: np.ndarray
  tail_ids: np.ndarray

  @classmethod
  def of(cls, processor, size=None):
    """The tables of a sentencepiece processor, padded to `size` ids (the model's vocabulary
    dimension, which may be larger)."""
    vocab_size = processor.get_piece_size()
    size = max(size or vocab_size, vocab_size)
    texts = [""] * size
    for i in range(vocab_size):
      if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_byte(i)
              or processor.is_unused(i)):
        text = processor.decode([i])
        if text and NEWLINE not in text:
          texts[i] = text
    lengths = np.array([len(t) for t in texts], np.int32)
    blank = np.array([decoding.blank(t) for t in texts])
    after_indentation = np.zeros(size, bool)
    after_indentation[decoding.after_indentation(processor, texts, (NEWLINE_ID, EOS_ID))] = True
    key_stride = int(lengths.max()) + 1
    keys, splits, ids = [], [0], []
    for piece, text in enumerate(texts):
      for k in range(1, len(text)):
        keys.append(piece * key_stride + k)
        ids.extend(processor.encode(text[k:]))
        splits.append(len(ids))
    return cls(np.array(texts, object), lengths, blank, after_indentation, key_stride,
               np.array(keys, np.int64), np.array(splits, np.int64), np.array(ids, np.int32))


@functools.lru_cache(maxsize=4)
def tables_of_model(serialized_model: bytes, size: int) -> HealingTables:
  """HealingTables of a serialized sentencepiece model (made once per model and size)."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  processor = spm.SentencePieceProcessor()
  processor.LoadFromSerializedProto(serialized_model)
  return HealingTables.of(processor, size)


def _rows(x):
  """x as [rows, last dim], and a function that gives a [rows, ...] result x's leading dims."""
  lead = tf.shape(x)[:-1]
  flat = tf.reshape(x, [-1, tf.shape(x)[-1]])
  return flat, lambda y: tf.reshape(y, tf.concat([lead, tf.shape(y)[1:]], 0))


def back_off(tables: HealingTables, ids, pieces: int, delimited: bool):
  """The prefixes `ids` [..., length] (then zeros; an EOS after the text if `delimited`) with
  up to their last `pieces` healing pieces taken off, and those pieces, in order, then zeros
  ([..., pieces]). At least one piece of each prefix stays; a line end or a piece that does
  not heal ends the back-off. The indentation's pieces go as any others: sentencepiece cuts
  `        t` as `▁` `▁▁▁▁▁▁▁` `t`, and a line of 8 spaces as `▁▁▁▁▁▁▁▁`, where the file has
  `▁▁▁▁▁▁▁` `▁try`; with them kept, the model reads spaces cut as no file has them.
  (`allowed_pieces` keeps a taken-off indentation from growing.)"""
  flat, unflat = _rows(ids)
  length = tf.shape(flat)[1]
  lengths = tf.constant(tables.lengths)
  text_end = tf.reduce_sum(tf.cast(flat > 0, tf.int32), axis=1) - int(delimited)  # [rows]
  columns = tf.broadcast_to(tf.range(length)[None, :], tf.shape(flat))
  in_text = columns < text_end[:, None]
  last_line_end = tf.reduce_max(tf.where(in_text & tf.equal(flat, NEWLINE_ID), columns,
                                         -tf.ones_like(flat)), axis=1)
  back = tf.range(1, pieces + 1)  # the k-th piece from the end
  position = text_end[:, None] - back[None, :]  # [rows, pieces]
  heals = tf.gather(lengths, tf.gather(flat, tf.maximum(position, 0), batch_dims=1)) > 0
  heals &= (position >= 1) & (position > last_line_end[:, None])
  # [rows]: how many pieces heal in a row, counted from the end
  taken = tf.reduce_sum(tf.math.cumprod(tf.cast(heals, tf.int32), axis=1), axis=1)
  start = text_end - taken
  # The taken pieces in their order, then zeros.
  offsets = tf.range(pieces)[None, :]
  typed = tf.gather(flat, tf.minimum(start[:, None] + offsets, length - 1), batch_dims=1)
  typed *= tf.cast(offsets < taken[:, None], typed.dtype)
  kept = flat * tf.cast(columns < start[:, None], flat.dtype)
  if delimited:  # the EOS moves to where the text now ends
    kept += EOS_ID * tf.cast(tf.equal(columns, start[:, None]), flat.dtype)
  return unflat(kept), unflat(typed)


def _typed_length(tables: HealingTables, typed):
  """[rows]: the length of each row's taken-off text, in characters."""
  return tf.reduce_sum(tf.gather(tf.constant(tables.lengths), typed), axis=1)


def _typed_text(tables: HealingTables, typed):
  """[rows] strings: the text of each row's taken-off pieces."""
  return tf.strings.reduce_join(tf.gather(tf.constant(tables.texts, tf.string), typed), axis=1)


def _written_lengths(tables: HealingTables, continuation):
  """[rows, steps]: the characters written up to each step; a piece that does not heal (a line
  end, EOS, padding) counts one, so the sum grows at every step."""
  lengths = tf.gather(tf.constant(tables.lengths), continuation)
  return tf.cumsum(tf.maximum(lengths, 1), axis=1)


def allowed_pieces(tables: HealingTables, typed, continuation, step):
  """[..., vocab] float: 0 for the pieces that may follow `continuation` [..., steps] (its
  first `step` written), -1e9 for the others. While some of the taken-off text `typed` is not
  written again, a piece must be a start of what is left of it, or begin with all of it;
  after that, every piece may. A taken-off text of only spaces and tabs (a line's indentation
  alone) may not grow: the piece written after it must start with code, or end the line."""
  typed, unflat = _rows(typed)
  continuation, _ = _rows(continuation)
  text_length = _typed_length(tables, typed)
  # Characters written by the first `step` pieces.
  written = tf.where(step > 0,
                     tf.gather(_written_lengths(tables, continuation), tf.maximum(step - 1, 0),
                               axis=1),
                     tf.zeros_like(text_length))
  left_length = tf.maximum(text_length - written, 0)  # [rows]
  blank_text = (text_length > 0) & tf.reduce_all(
      tf.gather(tf.constant(tables.blank), typed) | tf.equal(typed, 0), axis=1)
  # A blank text written again exactly by the pieces so far: this piece must start with code.
  at_blank_end = blank_text & (written > 0) & tf.equal(written, text_length)
  vocab = len(tables.texts)

  def mask():  # only while some row has text left: the strings are joined here, not every step
    left = tf.strings.substr(_typed_text(tables, typed), tf.minimum(written, text_length),
                             left_length, unit="UTF8_CHAR")
    rows = tf.shape(left)[0]
    piece_texts = tf.tile(tf.constant(tables.texts, tf.string)[None, :], [rows, 1])
    piece_lengths = tf.tile(tf.constant(tables.lengths)[None, :], [rows, 1])
    lefts = tf.tile(left[:, None], [1, vocab])
    left_lengths = tf.tile(left_length[:, None], [1, vocab])
    zeros = tf.zeros_like(piece_lengths)
    starts_left = (piece_lengths <= left_lengths) & tf.equal(
        tf.strings.substr(lefts, zeros, piece_lengths, unit="UTF8_CHAR"), piece_texts)
    covers_left = (piece_lengths >= left_lengths) & tf.equal(
        tf.strings.substr(piece_texts, zeros, left_lengths, unit="UTF8_CHAR"), lefts)
    # Past a blank text, the piece's next character must be code.
    next_character = tf.strings.substr(piece_texts, tf.minimum(left_lengths, piece_lengths),
                                       tf.ones_like(zeros), unit="UTF8_CHAR")
    grows = ((piece_lengths > left_lengths) & blank_text[:, None]
             & tf.reduce_any(tf.equal(next_character[..., None], list(decoding.INDENTATION)),
                             axis=-1))
    agrees = (piece_lengths > 0) & (starts_left | (covers_left & ~grows))
    free = tf.tile((left_length <= 0)[:, None], [1, vocab])
    free &= ~at_blank_end[:, None] | tf.constant(tables.after_indentation)[None, :]
    return tf.where(agrees | free, tf.zeros([rows, vocab]), tf.fill([rows, vocab], -1e9))

  result = tf.cond(tf.reduce_any((left_length > 0) | at_blank_end), mask,
                   lambda: tf.zeros([tf.shape(typed)[0], vocab]))
  return unflat(result)


def tail_room(tables: HealingTables) -> int:
  """The columns `without_typed` adds to a continuation: the most ids a piece's tail takes,
  less the one piece it replaces."""
  return max(int(np.max(np.diff(tables.tail_splits), initial=1)) - 1, 0)


def without_typed(tables: HealingTables, typed, continuation):
  """`continuation` [..., steps] with the taken-off text `typed` cut from its start: the
  pieces written inside it dropped, the one that goes past its end replaced by the ids of its
  tail; then zeros, to [..., steps + tail_room(tables)]. (A continuation that never wrote all
  of it becomes all zeros: nothing after the typed text.)

  The tail may take several ids where its piece took one, so the result is wider than the
  continuation: cut to `steps`, a line that runs the whole decoding length would lose its last
  pieces, and end sooner than the same decoding cut as text (code_t5_session: all the written
  text, less the typed characters)."""
  typed, _ = _rows(typed)
  continuation, unflat = _rows(continuation)
  steps = tf.shape(continuation)[1]
  width = steps + tail_room(tables)
  text_length = _typed_length(tables, typed)
  written = _written_lengths(tables, continuation)  # [rows, steps]
  inside = tf.reduce_sum(tf.cast(written <= text_length[:, None], tf.int32), axis=1)  # [rows]
  before = tf.where(inside > 0,
                    tf.gather(written, tf.maximum(inside - 1, 0), batch_dims=1),
                    tf.zeros_like(inside))
  cut = text_length - before  # characters of the piece at `inside` that were typed
  straddling = tf.gather(continuation, tf.minimum(inside, steps - 1), batch_dims=1)
  has_tail = (cut > 0) & (inside < steps)
  key = (tf.cast(straddling, tf.int64) * tables.key_stride + tf.cast(cut, tf.int64))
  keys = tf.constant(tables.tail_keys)
  index = tf.minimum(tf.searchsorted(keys, key), tf.size(keys) - 1)
  found = has_tail & tf.equal(tf.gather(keys, index), key)
  table = tf.RaggedTensor.from_row_splits(tf.constant(tables.tail_ids),
                                          tf.constant(tables.tail_splits))
  tails = tf.gather(table, index)  # ragged [rows, ?]
  tail_length = tf.where(found, tf.cast(tails.row_lengths(), tf.int32), tf.zeros_like(index))
  tails = tails.to_tensor()
  rest_start = inside + tf.cast(has_tail, tf.int32)  # the pieces after the typed text
  columns = tf.tile(tf.range(width)[None, :], [tf.shape(continuation)[0], 1])
  from_tail = columns < tail_length[:, None]
  tail_column = tf.minimum(columns, tf.maximum(tf.shape(tails)[1] - 1, 0))
  tail_values = tf.gather(tf.pad(tails, [[0, 0], [0, 1]]), tail_column, batch_dims=1)
  rest_column = rest_start[:, None] + columns - tail_length[:, None]
  rest_values = tf.gather(continuation, tf.clip_by_value(rest_column, 0, steps - 1),
                          batch_dims=1)
  rest_values *= tf.cast(rest_column < steps, rest_values.dtype)
  result = tf.where(from_tail, tf.cast(tail_values, continuation.dtype), rest_values)
  return unflat(result)
