"""The vocabulary contract: ids, the line-end token, EOS, where a model lives, loading, saving.

Ids follow T5 and mesh-tf, which treat id 1 as the end of the inputs in a delimited LM:
pad 0, eos 1, unk 2, no bos. Text is kept exactly as written (`code_t5.data.vocab` trains the
model so):

* no normalisation, no dummy prefix, extra whitespace kept, so decode(encode(x)) == x;
* "\\n" and "\\t" are pieces of their own (ids 3 and 4): a line end is always one token, which
  is what lets the full-line task cut inputs at line boundaries and cut predictions at the
  first newline;
* runs of spaces are ordinary pieces (whitespace-only pieces allowed), so common indentation
  widths become single tokens;
* byte fallback: a character outside the vocabulary becomes its UTF-8 bytes, never UNK.

The model lives in the TFDS data dir, next to the dataset it was trained on, so tasks find it
from `--t5_tfds_data_dir` alone: `flcc_vocab/<language>/spm.model` for one language, and
`flcc_vocab/shared/spm.model` for one vocabulary over several languages.
"""

import os

import seqio
import tensorflow_datasets as tfds

from code_t5 import files

PAD_ID, EOS_ID, UNK_ID = 0, 1, 2
NEWLINE, TAB = "\n", "\t"
# data/vocab.py trains NEWLINE as the first user-defined symbol, the id after pad, EOS and
# unk: the id decoding stops at, where a graph is built without the vocabulary at hand.
NEWLINE_ID = 3
VOCAB_DIR = "flcc_vocab"
# One vocabulary for several languages; not a language name (flcc.LANGUAGES).
SHARED = "shared"


class VocabularyError(Exception):
  """A vocabulary is missing or unusable; the message names the file."""


def vocab_path(data_dir: str, name: str) -> str:
  """Where the model of `name` (a language, or SHARED) lives in `data_dir`."""
  return os.path.join(data_dir, VOCAB_DIR, name, "spm.model")


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


def newline_id(vocabulary) -> int:
  """The one token `vocabulary` encodes a line end as: where inputs are cut."""
  ids = vocabulary.encode(NEWLINE)
  if ids != [NEWLINE_ID]:
    raise ValueError(f"the vocabulary must encode {NEWLINE!r} as the one token {NEWLINE_ID} "
                     f"(as `python -m code_t5.data vocab` trains it), got {ids}")
  return ids[0]


def tfds_data_dir() -> str:
  """--t5_tfds_data_dir when given, else TFDS' default (TFDS_DATA_DIR or ~/tensorflow_datasets)."""
  return seqio.utils._TFDS_DATA_DIR_OVERRIDE or tfds.core.constants.DATA_DIR  # pylint: disable=protected-access


class FlccVocabulary(seqio.SentencePieceVocabulary):
  """The model of `name` (a language, or SHARED) in the TFDS data dir, found when first used.

  Tasks are registered when `code_t5` is imported, before t5 applies `--t5_tfds_data_dir`,
  so the path is resolved late.
  """

  def __init__(self, name: str):
    self.name = name
    super().__init__(sentencepiece_model_file="")

  @property
  def sentencepiece_model_file(self) -> str:
    return vocab_path(tfds_data_dir(), self.name)

  def _model_context(self):
    if not self._model:
      path = self.sentencepiece_model_file
      load_processor(path)  # a VocabularyError naming the file, not a TF crash
      self._sentencepiece_model_file = path
    return super()._model_context()
