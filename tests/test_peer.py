"""The learning bench's GPT peer (scripts/gpt_peer.py): it learns, completes a line the way the
model's full-line eval does, and a training continued from its checkpoint is the same training.
A tiny GPT on the fixture's real sentencepiece vocabulary."""

import dataclasses
import json
import os
import signal
import subprocess
import time

import numpy as np
import pytest

# torch is the peer's alone, and not in the main lock: `make torch` installs it (CI does).
pytest.importorskip("torch", reason="the GPT peer needs torch: make torch")
import gpt_peer  # noqa: E402  pylint: disable=g-import-not-at-top,wrong-import-position
from code_t5 import vocabulary as vocabulary_lib

from conftest import PYTHON, QUIET_TF, REPO_ROOT

TINY = gpt_peer.PeerConfig(d_model=64, num_layers=2, d_ff=128, num_heads=2, context=48, rows=8,
                           learning_rate=3e-3, warmup_steps=10)
FILE = ("def area(width, height):\n"
        "    return width * height\n"
        "\n"
        "def perimeter(width, height):\n"
        "    return 2 * (width + height)\n")


@pytest.fixture(scope="module")
def vocab(flcc_data_dir):
  import seqio  # pylint: disable=g-import-not-at-top
  return seqio.SentencePieceVocabulary(vocabulary_lib.vocab_path(flcc_data_dir, "python"))


def test_warm_up_then_cosine_decay_to_zero():
  config = gpt_peer.PeerConfig(learning_rate=1.0, warmup_steps=10)
  rates = [gpt_peer.learning_rate(step, 200, config) for step in range(200)]
  assert rates[:10] == sorted(rates[:10]) and rates[9] == 1.0
  assert rates[10:] == sorted(rates[10:], reverse=True)
  assert rates[-1] < 1e-3


def test_the_peer_learns_a_file_and_completes_its_lines_to_the_line_end(vocab):
  stream = gpt_peer.token_stream([FILE] * 20, vocab)
  assert stream[-1] == vocab.eos_id and vocab.decode(stream[:len(stream) // 20 - 1].tolist()) == FILE
  model, losses, _ = gpt_peer.train(stream, vocab.vocab_size, 150, TINY)
  assert np.mean(losses[-10:]) < np.mean(losses[:10]) / 4, losses
  newline = vocabulary_lib.newline_id(vocab)
  # Cursors after text that only one line has: what follows is that line's rest, then a stop.
  windows = [FILE[:FILE.index(" * height")], FILE[:FILE.index("width + height)")]]
  assert gpt_peer.complete(model, vocab, windows, newline, max_new=16) == [
      " * height", "width + height)"]
  # Healed as the model's decoding heals: cursors inside a word give the rest of the line.
  inside = [FILE[:FILE.index("dth * height")], FILE[:FILE.index("ight)")]]
  assert gpt_peer.complete(model, vocab, inside, newline, max_new=16, heal_pieces=3) == [
      "dth * height", "ight):"]


def test_the_peer_copies_through_the_copy_cache_as_the_models_decoding_does(vocab):
  """With code_t5.copy_cache's options, the peer's greedy steps mix in what followed the
  line's last tokens earlier in the window: a barely trained peer completes a repeated call."""
  from code_t5.decoding import copy_cache  # pylint: disable=g-import-not-at-top
  model, _, _ = gpt_peer.train(gpt_peer.token_stream([FILE], vocab), vocab.vocab_size, 2, TINY)
  newline = vocabulary_lib.newline_id(vocab)
  window = ["total = add(first, second)\nresult = add(first"]
  cached = gpt_peer.complete(model, vocab, window, newline, max_new=16,
                             cache=copy_cache.copy_cache(weight=0.9))
  assert cached == [", second)"]
  assert gpt_peer.complete(model, vocab, window, newline, max_new=16) != cached


def test_a_training_killed_and_continued_from_its_checkpoint_is_the_same_training(
    vocab, flcc_data_dir, tmp_path):
  stream = gpt_peer.token_stream([FILE] * 20, vocab)
  _, whole, _ = gpt_peer.train(stream, vocab.vocab_size, STEPS, TINY)
  checkpoint = str(tmp_path / "peer.pt")
  proc = subprocess.Popen([PYTHON, "-c", TRAIN_IN_A_PROCESS, flcc_data_dir, checkpoint, FILE,
                           json.dumps(dataclasses.asdict(TINY))], cwd=REPO_ROOT, env=QUIET_TF)
  import torch  # pylint: disable=g-import-not-at-top
  deadline = time.time() + 300
  while not os.path.exists(checkpoint) and proc.poll() is None and time.time() < deadline:
    time.sleep(0.01)
  proc.send_signal(signal.SIGKILL)  # right after its first save, mid-run
  proc.wait()
  saved = torch.load(checkpoint, weights_only=False)
  assert 0 < saved["step"] < STEPS and saved["losses"] == pytest.approx(whole[:saved["step"]],
                                                                         rel=1e-4)
  _, resumed, wall = gpt_peer.train(stream, vocab.vocab_size, STEPS, TINY, checkpoint=checkpoint,
                                    save_every=10)
  assert resumed[:saved["step"]] == saved["losses"] and wall >= saved["wall_s"]
  np.testing.assert_allclose(resumed, whole, rtol=1e-4)
  with pytest.raises(ValueError, match="a peer trained with other settings"):
    gpt_peer.train(stream, vocab.vocab_size, STEPS + 10, TINY, checkpoint=checkpoint)


STEPS = 40
# The same training as the test's, in a process of its own: data dir, checkpoint, file, config.
TRAIN_IN_A_PROCESS = f"""
import json, sys
sys.path.insert(0, "scripts")
import seqio, gpt_peer
from code_t5 import vocabulary
vocab = seqio.SentencePieceVocabulary(vocabulary.vocab_path(sys.argv[1], "python"))
stream = gpt_peer.token_stream([sys.argv[3]] * 20, vocab)
gpt_peer.train(stream, vocab.vocab_size, {STEPS}, gpt_peer.PeerConfig(**json.loads(sys.argv[4])),
               checkpoint=sys.argv[2], save_every=10)
"""
