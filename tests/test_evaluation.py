"""The learning bench's statistics (code_t5/evaluation.py) on small inputs whose answers are
worked out by hand; the induction probe's pairs on a real sentencepiece vocabulary. And the
bench's GPT peer built to the shape of the model it is compared with."""

import builtins
import io
import random
import sys

import numpy as np
import pytest
import sentencepiece as spm

import bench_learning
from code_t5 import evaluation

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
  probe = evaluation.induction_pairs(pieces, pairs=12, arguments=5)
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
  assert evaluation.induction_pairs(pieces) == evaluation.induction_pairs(pieces)
  assert evaluation.induction_pairs(pieces) != evaluation.induction_pairs(pieces, seed=1)


def test_a_vocabulary_without_whole_words_is_refused():
  with pytest.raises(ValueError, match="whole-word pieces: the vocabulary has 1"):
    evaluation.induction_pairs(["<pad>", "\u2581(", "\u2581word", ",", "x"])


def test_the_summary_reads_copy_and_control_per_token():
  # Pair 1: 2 tokens, log P -2 after the call, -8 after another; pair 2: 4 tokens, -4 and -8.
  summary = evaluation.induction_summary([-2.0, -8.0, -4.0, -8.0], [2, 4])
  assert summary["copy"] == pytest.approx(1.0) and summary["control"] == pytest.approx(3.0)
  assert summary["gain"] == pytest.approx(2.0)
  assert summary["ci95"][0] == pytest.approx(1.0) and summary["ci95"][1] == pytest.approx(3.0)


def test_per_example_scores_each_example_as_the_metrics_do():
  # "return x" against "return y": one edit in 8 characters, 1 - 1/8 = 87.5.
  scores = evaluation.per_example(["return x", "a"], ["return y", "a"])
  assert scores["exact_match"].tolist() == [0.0, 100.0]
  assert scores["edit_similarity"].tolist() == pytest.approx([87.5, 100.0])


def test_a_lead_that_every_example_shares_has_no_spread():
  lead = evaluation.bootstrap_lead(np.array([3.0, 3.0, 3.0]), np.array([1.0, 1.0, 1.0]))
  assert lead == {"lead": 2.0, "ci95": [2.0, 2.0]}


def test_the_bootstrap_interval_spans_what_resamples_can_give():
  # Differences 2 and 0: a resample of two is {2, 2}, {2, 0}, {0, 2} or {0, 0}, means 2, 1, 1, 0,
  # each extreme a quarter of 2,000 rounds: the 2.5th and 97.5th percentiles are 0 and 2.
  lead = evaluation.bootstrap_lead(np.array([2.0, 0.0]), np.array([0.0, 0.0]))
  assert lead == {"lead": 1.0, "ci95": [0.0, 2.0]}
  assert evaluation.bootstrap_lead(np.array([2.0, 0.0]), np.array([0.0, 0.0]), seed=0) == lead


def test_the_copy_probe_counts_lines_that_stand_earlier_in_the_window():
  windows = ["x = 1\ny = 2\nx = ",  # typed "x = ", the line "x = 1" stands two lines up
             "a\nb"]                  # "bc" stands nowhere
  probe = evaluation.copy_probe(windows, ["1", "c"], {"model": ["1", "c"], "copy": ["2", "c"]})
  assert probe == {"examples": 1, "exact": {"model": 100.0, "copy": 0.0}}


def test_the_peer_is_built_to_the_models_shape():
  assert bench_learning.peer_shape() == {"d_model": 256, "num_layers": 4, "d_ff": 1024,
                                         "num_heads": 4}  # models/sizes/dev.gin
  assert bench_learning.peer_shape(gin_files=["models/tiny.gin"]) == {
      "d_model": 32, "num_layers": 1, "d_ff": 64, "num_heads": 2}
  assert bench_learning.peer_shape(gin_params=["num_layers = 6"])["num_layers"] == 6


def test_a_long_launch_shows_its_progress_and_keeps_its_log(tmp_path, capsys):
  # The line search and the evals run as child launches for up to 40 minutes: their
  # "code_t5: ..." progress lines reach the bench's stderr as they come, the rest only the log.
  child = ("import sys; print('TF noise', file=sys.stderr); "
           "print('code_t5: decoded 8 examples (0.3/s)', file=sys.stderr, flush=True); "
           "print('stdout line'); sys.exit({code})")
  log = tmp_path / "line_search.log"
  bench_learning.run_logged([sys.executable, "-c", child.format(code=0)], str(log),
                            "the line search")
  assert capsys.readouterr().err == "  code_t5: decoded 8 examples (0.3/s)\n"
  assert {"TF noise", "code_t5: decoded 8 examples (0.3/s)", "stdout line"} == set(
      log.read_text().splitlines())
  # A failure: one line naming what failed and the log; an appended log keeps what it had.
  with pytest.raises(SystemExit) as failed:
    bench_learning.run_logged([sys.executable, "-c", child.format(code=3)], str(log),
                              "the line search", append=True)
  assert str(failed.value) == f"bench_learning: the line search failed (code 3); see {log}"
  assert log.read_text().count("stdout line") == 2
