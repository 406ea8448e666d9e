"""The learning bench's induction probe (scripts/bench_learning.py): its pairs, on a real
sentencepiece vocabulary, and how it reads score mode's numbers."""

import builtins
import io
import random

import pytest
import sentencepiece as spm

import bench_learning

# Lines of Python's own names in a seeded order: a vocabulary with whole-word pieces.
NAMES = sorted(name.lower() for name in dir(builtins) if name.isalpha())
TEXT = [" ".join(random.Random(i).sample(NAMES, 8)) for i in range(400)]


@pytest.fixture(scope="module")
def pieces():
  model = io.BytesIO()
  spm.SentencePieceTrainer.train(sentence_iterator=iter(TEXT), model_writer=model,
                                 vocab_size=200, model_type="unigram", minloglevel=2)
  processor = spm.SentencePieceProcessor(model_proto=model.getvalue())
  return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def test_each_pair_completes_one_call_after_it_and_after_another(pieces):
  words = {piece[1:].lower() for piece in pieces if piece.startswith("\u2581")}
  probe = bench_learning.induction_pairs(pieces, pairs=12, arguments=5)
  assert len(probe) == 12
  for copy, control in probe:
    assert copy["completion"] == control["completion"]
    copied, start = copy["prefix"].split("\n")
    other, control_start = control["prefix"].split("\n")
    assert start == control_start and start + copy["completion"] == copied
    assert other != copied and copy["completion"] not in control["prefix"]
    name, arguments = copied[:-1].split("(")
    called = [name, *arguments.split(", ")]
    assert len(called) == 6 and set(called) <= words and all(len(w) >= 3 for w in called)
    assert start == f"{called[0]}({called[1]}"


def test_the_pairs_are_seeded(pieces):
  assert bench_learning.induction_pairs(pieces) == bench_learning.induction_pairs(pieces)
  assert bench_learning.induction_pairs(pieces) != bench_learning.induction_pairs(pieces, seed=1)


def test_a_vocabulary_without_whole_words_is_refused():
  with pytest.raises(ValueError, match="whole-word pieces: the vocabulary has 1"):
    bench_learning.induction_pairs(["<pad>", "\u2581(", "\u2581word", ",", "x"])


def test_the_summary_reads_copy_and_control_per_token():
  # Pair 1: 2 tokens, log P -2 after the call, -8 after another; pair 2: 4 tokens, -4 and -8.
  summary = bench_learning.induction_summary([-2.0, -8.0, -4.0, -8.0], [2, 4])
  assert summary["copy"] == pytest.approx(1.0) and summary["control"] == pytest.approx(3.0)
  assert summary["gain"] == pytest.approx(2.0)
  assert summary["ci95"][0] == pytest.approx(1.0) and summary["ci95"][1] == pytest.approx(3.0)
