"""The code vocabulary: a sentencepiece model trained on the train split of `flcc/<language>`.

Ids follow T5 and mesh-tf, which treat id 1 as the end of the inputs in a delimited LM:
pad 0, eos 1, unk 2, no bos. Text is kept exactly as written:

* no normalisation, no dummy prefix, extra whitespace kept, so decode(encode(x)) == x;
* "\\n" and "\\t" are pieces of their own (ids 3 and 4): a line end is always one token, which
  is what lets the full-line task cut inputs at line boundaries and cut predictions at the
  first newline;
* runs of spaces are ordinary pieces (whitespace-only pieces allowed), so common indentation
  widths become single tokens;
* byte fallback: a character outside the vocabulary becomes its UTF-8 bytes, never UNK.

The model lives in the TFDS data dir, next to the dataset it was trained on, so tasks find it
from `--t5_tfds_data_dir` alone: `flcc_vocab/<language>/spm.model` for one language, and
`flcc_vocab/shared/spm.model` for one vocabulary over several (`balanced_sample`), with the
sample it was trained on recorded beside it (`sampling.json`).
"""

import io
import json
import os
import random
from typing import Dict, Iterable, Iterator, List, Optional

from code_t5 import files

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2
NEWLINE, TAB = "\n", "\t"
DEFAULT_VOCAB_SIZE = 32000
# sentencepiece trains on "sentences"; files are cut into chunks of whole lines of about this
# many characters, well under its max_sentence_length.
_CHUNK_CHARS = 2000
_MAX_SENTENCE_BYTES = 16384
VOCAB_DIR = "flcc_vocab"


# One vocabulary for several languages; not a language name (flcc.LANGUAGES).
SHARED = "shared"
SAMPLING_FILE = "sampling.json"


class VocabularyError(Exception):
  """A vocabulary is missing or unusable; the message names the file."""


def vocab_path(data_dir: str, language: str) -> str:
  return os.path.join(data_dir, VOCAB_DIR, language, "spm.model")


def sampling_path(data_dir: str, name: str = SHARED) -> str:
  return os.path.join(data_dir, VOCAB_DIR, name, SAMPLING_FILE)


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


def save_sampling(data_dir: str, record: dict, name: str = SHARED) -> None:
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


def save(path: str, model: bytes) -> None:
  """Writes a serialized sentencepiece model to `path` (local or gs://), whole or not at all."""
  files.write_atomically(path, model)


def load_processor(path: str):
  """The sentencepiece processor at `path`, or a VocabularyError naming the problem."""
  import sentencepiece as spm  # pylint: disable=g-import-not-at-top
  if not files.exists(path):
    raise VocabularyError(
        f"{path}: no vocabulary; run `python -m code_t5.data vocab --data_dir=...` first")
  processor = spm.SentencePieceProcessor()
  try:
    processor.LoadFromSerializedProto(files.read_bytes(path))
  except (RuntimeError, OSError) as e:
    raise VocabularyError(f"{path}: not a sentencepiece model ({e})") from None
  if (processor.pad_id(), processor.eos_id(), processor.unk_id()) != (PAD_ID, EOS_ID, UNK_ID):
    raise VocabularyError(f"{path}: ids must be pad 0, eos 1, unk 2")
  return processor


def chars_per_token(processor, texts: Iterable[str]) -> Optional[float]:
  chars = tokens = 0
  for text in texts:
    chars += len(text)
    tokens += len(processor.EncodeAsIds(text))
  return chars / tokens if tokens else None
