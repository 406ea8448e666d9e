"""Token healing's three steps (code_t5/decoding/healing.py) on a real sentencepiece model trained the
way `python -m code_t5.data vocab` trains one, over every cursor of small Python files: what
is taken off a prefix, which pieces may be written while its text is written again, and the
completion that is left once that text is cut off. Decoding with them, on trained models:
tests/test_memorisation.py."""

import collections

import numpy as np
import pytest
import sentencepiece as spm
import tensorflow as tf

from conftest import synthetic_module
from code_t5.data import vocab
from code_t5.decoding import healing
from code_t5.vocabulary import EOS_ID, NEWLINE_ID

PIECES = 3
ROW = 96  # tokens of a prefix row (the windows here are shorter)
STEPS = 24  # tokens of a continuation


@pytest.fixture(scope="module")
def processor():
  texts = [synthetic_module(seed).decode() for seed in range(12)]
  model = spm.SentencePieceProcessor()
  model.LoadFromSerializedProto(vocab.train_sentencepiece(texts, 600))
  return model


@pytest.fixture(scope="module")
def tables(processor):
  return healing.HealingTables.of(processor)


def cursors(text, every=3):
  """(code before the cursor, rest of its line) at every `every`-th character of each line,
  the line's start, its code's start and its code's first letter included; the prefix kept
  to its last 4 lines."""
  out = []
  start = 0
  for line in text.split("\n"):
    code = len(line) - len(line.lstrip(" \t"))
    for column in sorted({0, code, min(code + 1, len(line)), *range(code, len(line), every)}):
      before = text[:start + column]
      out.append(("\n".join(before.split("\n")[-4:]), line[column:]))
    start += len(line) + 1
  return out


def rows(processor, texts, length, eos=False, head=False):
  """Each text's ids (its last `length`, or its first if `head`), then an EOS if `eos`,
  then zeros."""
  ids = np.zeros((len(texts), length), np.int32)
  room = length - int(eos)
  for i, text in enumerate(texts):
    encoded = processor.encode(text)
    encoded = (encoded[:room] if head else encoded[-room:]) + ([EOS_ID] if eos else [])
    ids[i, :len(encoded)] = encoded
  return ids


@pytest.fixture(scope="module")
def examples(processor):
  pairs = [pair for seed in (3, 20) for pair in cursors(synthetic_module(seed).decode())]
  assert len(pairs) > 100
  return pairs


def decode(processor, ids):
  return processor.decode([int(i) for i in ids if i > 1])


@pytest.mark.parametrize("delimited", [False, True], ids=["causal", "delimited"])
def test_the_last_pieces_of_the_line_are_taken_off(processor, tables, examples, delimited):
  prefixes = [p for p, _ in examples]
  ids = rows(processor, prefixes, ROW, eos=delimited)
  kept, typed = (t.numpy() for t in healing.back_off(tables, tf.constant(ids), PIECES,
                                                      delimited))
  taken_counts, indentation_alone = set(), 0
  for i, prefix in enumerate(prefixes):
    taken = [int(t) for t in typed[i] if t]
    taken_counts.add(len(taken))
    kept_ids = [int(k) for k in kept[i] if k]
    if delimited:  # the EOS moves to the end of what is kept
      assert kept_ids[-1] == EOS_ID
      kept_ids = kept_ids[:-1]
    assert kept_ids + taken == [int(t) for t in ids[i] if t and t != EOS_ID], prefix
    assert kept_ids or not prefix, prefix  # a piece always stays
    typed_text = processor.decode(taken)
    assert "\n" not in typed_text and prefix.endswith(typed_text)
    line = prefix.rsplit("\n", 1)[-1]
    if line and not line.strip(" \t"):  # only indentation: its pieces are taken
      assert taken and not typed_text.strip(" \t"), (prefix, taken)
      indentation_alone += 1
  assert taken_counts == set(range(PIECES + 1))  # the fixture reaches every count
  assert indentation_alone >= 20


def test_the_indentation_is_written_again():
  """Sentencepiece may cut a line's indentation one way when the line ends in it or in its
  first letters and another in the file: in this fixture's vocabulary `        re` is
  `▁▁▁▁▁▁▁` `▁re` where the file's `        return` is `▁▁▁▁▁▁▁▁` `r` `et` ... (the dev
  vocabulary cuts `        t` as `▁` `▁▁▁▁▁▁▁` `t`, and 8 spaces as `▁▁▁▁▁▁▁▁`, where the
  file's `        try:` is `▁▁▁▁▁▁▁` `▁try`). So the back-off takes the indentation's pieces
  too: what the model reads is then the file's own pieces, wherever fewer than PIECES pieces
  were taken, at the line's start as after its first letters."""
  # Words after a space mid-line, so that `▁re` and `▁self` are pieces.
  mid_line = "".join(f"x{i} = {i}; return a; return b; self.a; self.b; total; result; total\n"
                     for i in range(200))
  module_texts = [synthetic_module(seed).decode() for seed in range(12)]
  processor = spm.SentencePieceProcessor()
  processor.LoadFromSerializedProto(vocab.train_sentencepiece(module_texts + [mid_line], 600))
  tables = healing.HealingTables.of(processor)
  pairs = [(prefix, rest) for seed in (3, 20)
           for prefix, rest in cursors(synthetic_module(seed).decode(), every=1)
           if prefix.rsplit("\n", 1)[-1]]
  file_ids = [processor.encode(prefix + rest) for prefix, rest in pairs]
  ids = rows(processor, [prefix for prefix, _ in pairs], ROW)
  kept, typed = (t.numpy() for t in healing.back_off(tables, tf.constant(ids), PIECES, False))
  cut_otherwise = collections.Counter()  # cursors whose prefix's pieces are not the file's
  for i, (prefix, _) in enumerate(pairs):
    prefix_ids = [int(t) for t in ids[i] if t]
    if file_ids[i][:len(prefix_ids)] != prefix_ids:
      cut_otherwise["code" if prefix.rsplit("\n", 1)[-1].strip(" \t") else "indentation"] += 1
    kept_ids = [int(t) for t in kept[i] if t]
    if np.count_nonzero(typed[i]) < PIECES and len(kept_ids) > 1:  # not cut short
      assert file_ids[i][:len(kept_ids)] == kept_ids, (prefix, processor.id_to_piece(kept_ids))
  # The fixture reaches both cases.
  assert cut_otherwise["code"] >= 20 and cut_otherwise["indentation"] >= 10, cut_otherwise


def test_the_files_own_pieces_are_allowed_and_cut_back_to_the_rest_of_the_line(
    processor, tables, examples):
  """Whatever was taken off, the file's own pieces for it and the line's rest are allowed at
  every step, other pieces are not while text is left, and cutting the taken-off text from
  them leaves exactly the rest of the line; or, where the line runs past the continuation's
  STEPS, exactly the text of those STEPS after the taken-off text, as code_t5_session cuts
  it: the piece that goes past the typed text's end may be written again as several (its
  tail's ids), and none of the pieces after it is lost for that."""
  prefixes = [p for p, _ in examples]
  _, typed = healing.back_off(tables, tf.constant(rows(processor, prefixes, ROW)), PIECES,
                              False)
  typed = typed.numpy()
  typed_texts = [processor.decode([int(t) for t in row if t]) for row in typed]
  written = [text + rest for text, (_, rest) in zip(typed_texts, examples)]
  continuation = rows(processor, written, STEPS, head=True)
  cut = healing.without_typed(tables, tf.constant(typed), tf.constant(continuation)).numpy()
  for i, (_, rest) in enumerate(examples):
    if len(processor.encode(written[i])) <= STEPS:
      assert decode(processor, cut[i]) == rest, (written[i], rest)
  # The same lines run on past STEPS (their rest written three times over).
  running = rows(processor, [w + 2 * (" " + rest) for w, (_, rest) in zip(written, examples)],
                 STEPS, head=True)
  cut = healing.without_typed(tables, tf.constant(typed), tf.constant(running)).numpy()
  grown = 0  # cut where a tail of several pieces replaced one
  for i, typed_text in enumerate(typed_texts):
    if np.count_nonzero(running[i]) == STEPS:
      assert decode(processor, cut[i]) == decode(processor, running[i])[len(typed_text):], i
      grown += int(np.count_nonzero(cut[i]) > STEPS - np.count_nonzero(typed[i]))
  assert grown >= 3  # the fixture reaches the case

  refused_while_typing = indentation_ends = 0
  for step in range(4):
    mask = healing.allowed_pieces(tables, tf.constant(typed), tf.constant(continuation),
                                  tf.constant(step)).numpy()
    for i, typed_text in enumerate(typed_texts):
      assert mask[i, continuation[i, step]] == 0, (written[i], step)
      written_before = len(processor.decode([int(t) for t in continuation[i, :step]]))
      indentation = typed_text and not typed_text.strip(" \t")
      if indentation and written_before == len(typed_text):  # it may not grow
        np.testing.assert_array_equal(mask[i] == 0, tables.after_indentation)
        indentation_ends += 1
      elif written_before >= len(typed_text):
        assert (mask[i] == 0).all()
      else:
        left = typed_text[written_before:]
        for piece in np.flatnonzero(mask[i] == 0):
          text = tables.texts[piece]
          assert text and (left.startswith(text) or text.startswith(left)), (left, text)
          assert not (indentation and text[len(left):len(left) + 1] in (" ", "\t")), text
        refused_while_typing += int((mask[i] < 0).sum() > 0)
  assert refused_while_typing > 50 and indentation_ends > 10


def test_code_the_vocabulary_lacks_may_follow_an_indentation(processor, tables):
  """A character the vocabulary lacks is written as its bytes (`$` as `<0x24>`): after an
  indentation written again they are code, as are a line end and EOS; a space is not."""
  allowed = tables.after_indentation
  assert allowed[processor.piece_to_id("<0x24>")] and allowed[[NEWLINE_ID, EOS_ID]].all()
  spaces = [i for i, text in enumerate(tables.texts) if text.startswith((" ", "\t"))]
  assert spaces and not allowed[spaces].any()
  assert not allowed[processor.piece_to_id("<0x20>")]


def test_a_continuation_that_stops_inside_the_typed_text_leaves_nothing(processor, tables):
  prefix = "def alpha_3(x, y=3):\n    total = x + y"
  _, typed = healing.back_off(tables, tf.constant(rows(processor, [prefix], ROW)), PIECES,
                              False)
  typed_text = processor.decode([int(t) for t in typed.numpy()[0] if t])
  assert len(typed_text) >= 2
  partial = rows(processor, [typed_text[:1]], STEPS, head=True)
  cut = healing.without_typed(tables, typed, tf.constant(partial)).numpy()
  assert not cut.any()
