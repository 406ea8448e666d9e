"""Training the code vocabulary: a sentencepiece model on the train split of `flcc/<language>`.

What the model must be -- its ids, a line end as one token, text kept exactly as written, where
it lives -- is the contract of `code_t5/vocabulary.py`; this module trains models that keep it,
and for one vocabulary over several languages draws a balanced sample (`balanced_sample`),
recorded beside the model (`sampling.json`).
"""

import io
import json
import os
import random
from typing import Dict, Iterable, Iterator, List, Optional

from code_t5 import files
from code_t5 import vocabulary
from code_t5.vocabulary import EOS_ID, NEWLINE, PAD_ID, TAB, UNK_ID, VocabularyError

DEFAULT_VOCAB_SIZE = 32000
# sentencepiece trains on "sentences"; files are cut into chunks of whole lines of about this
# many characters, well under its max_sentence_length.
_CHUNK_CHARS = 2000
_MAX_SENTENCE_BYTES = 16384
SAMPLING_FILE = "sampling.json"


def sampling_path(data_dir: str, name: str = vocabulary.SHARED) -> str:
  """The record of the sample a shared vocabulary was trained on, beside its model."""
  return os.path.join(os.path.dirname(vocabulary.vocab_path(data_dir, name)), SAMPLING_FILE)


def balanced_sample(texts_by_language: Dict[str, List[str]], seed: int = 0):
  """(texts, record): the same number of characters from each language, as many as the
  smallest has, in whole files taken in a seeded random order, so that no language drowns the
  others. `record` says what was taken from each, for `sampling.json`."""
  if not texts_by_language:
    raise VocabularyError("no languages to train a shared vocabulary on")
  budget = min(sum(map(len, texts)) for texts in texts_by_language.values())
  sample, taken = [], {}
  for language in sorted(texts_by_language):
    texts = texts_by_language[language]
    order = list(range(len(texts)))
    random.Random(f"{seed}:{language}").shuffle(order)
    chars = files_taken = 0
    for i in order:
      if chars >= budget:
        break
      sample.append(texts[i])
      chars += len(texts[i])
      files_taken += 1
    taken[language] = {"train_files": len(texts), "train_chars": sum(map(len, texts)),
                       "sampled_files": files_taken, "sampled_chars": chars}
  return sample, {"seed": seed, "chars_per_language": budget, "languages": taken}


def save_sampling(data_dir: str, record: dict, name: str = vocabulary.SHARED) -> None:
  files.write_atomically(sampling_path(data_dir, name), json.dumps(record, indent=2) + "\n")


def line_chunks(text: str, max_chars: int = _CHUNK_CHARS) -> Iterator[str]:
  """Whole lines, newlines included, grouped into chunks of at most about `max_chars`."""
  chunk = []
  size = 0
  for line in text.splitlines(keepends=True):
    if chunk and size + len(line) > max_chars:
      yield "".join(chunk)
      chunk, size = [], 0
    chunk.append(line[:_MAX_SENTENCE_BYTES // 4])  # a 4-byte-per-char line still fits
    size += len(line)
  if chunk:
    yield "".join(chunk)


def train_sentencepiece(texts: Iterable[str], vocab_size: int,
                        max_sentences: int = 2_000_000, seed: int = 0) -> bytes:
  """Trains the model on `texts` and returns its serialized proto."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  sentences = [c for t in texts for c in line_chunks(t)]
  if not sentences:
    raise VocabularyError("no text to train a vocabulary on")
  if len(sentences) > max_sentences:
    sentences = random.Random(seed).sample(sentences, max_sentences)
  model = io.BytesIO()
  try:
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences),
        model_writer=model,
        model_type="unigram",
        vocab_size=vocab_size,
        # With few distinct pieces in a small corpus, stop below vocab_size instead of failing.
        hard_vocab_limit=False,
        pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
        user_defined_symbols=[NEWLINE, TAB],
        byte_fallback=True,
        character_coverage=0.9999,
        normalization_rule_name="identity",
        remove_extra_whitespaces=False,
        add_dummy_prefix=False,
        allow_whitespace_only_pieces=True,
        split_by_whitespace=True,
        max_sentence_length=_MAX_SENTENCE_BYTES,
        num_threads=os.cpu_count() or 1,
        minloglevel=2,
    )
  except RuntimeError as e:  # sentencepiece reports bad settings as "Internal: file(line) ..."
    raise VocabularyError(
        f"sentencepiece could not train {vocab_size} pieces: {str(e).split('] ')[-1]}") from None
  return model.getvalue()


def chars_per_token(processor, texts: Iterable[str]) -> Optional[float]:
  chars = tokens = 0
  for text in texts:
    chars += len(text)
    tokens += len(processor.EncodeAsIds(text))
  return chars / tokens if tokens else None
