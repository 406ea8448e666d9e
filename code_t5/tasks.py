"""seqio Tasks and Mixtures for code, one set per FLCC language.

  flcc_<lang>_full_line  code before a cursor -> the rest of its line (the product task)
  flcc_<lang>_prefix_lm  whole files, chunked into a prefix and its continuation (pretraining)
  flcc_<lang>            both, mixed at rates set in gin (`code_t5.mixture_rate`)
  flcc_all               every language

Data and vocabulary both come from the TFDS data dir (`--t5_tfds_data_dir`), where
`python -m code_t5.data` writes them.
"""


import gin
import seqio
import t5.data.preprocessors as t5_preprocessors
import tensorflow_datasets as tfds

from code_t5 import metrics
from code_t5 import preprocessors
from code_t5.data import builder as flcc_builder  # registers the `flcc` TFDS builder
from code_t5.data import flcc
from code_t5.data import vocab as vocab_lib

FLCC_VERSION = str(flcc_builder.Flcc.VERSION)


def tfds_data_dir() -> str:
  """--t5_tfds_data_dir when given, else TFDS' default (TFDS_DATA_DIR or ~/tensorflow_datasets)."""
  return seqio.utils._TFDS_DATA_DIR_OVERRIDE or tfds.core.constants.DATA_DIR  # pylint: disable=protected-access


class FlccVocabulary(seqio.SentencePieceVocabulary):
  """The sentencepiece model of one language, found in the data dir when first used.

  Tasks are registered when `code_t5` is imported, before t5 applies `--t5_tfds_data_dir`,
  so the path is resolved late.
  """

  def __init__(self, language: str):
    self.language = language
    super().__init__(sentencepiece_model_file="")

  @property
  def sentencepiece_model_file(self) -> str:
    return vocab_lib.vocab_path(tfds_data_dir(), self.language)

  def _model_context(self):
    if not self._model:
      path = self.sentencepiece_model_file
      vocab_lib.load_processor(path)  # a VocabularyError naming the file, not a TF crash
      self._sentencepiece_model_file = path
    return super()._model_context()


def output_features(language: str):
  vocabulary = FlccVocabulary(language)
  return {
      "inputs": seqio.Feature(vocabulary, add_eos=True),
      "targets": seqio.Feature(vocabulary, add_eos=True),
  }


def _source(language: str) -> seqio.TfdsDataSource:
  # read_only: `python -m code_t5.data build` makes the dataset. Otherwise seqio reads through
  # tfds.load(download=True, try_gcs=True), which first looks for flcc in TFDS' public bucket
  # (gs://tfds-data/datasets/flcc): a GCS login and a request to Google on every run.
  return seqio.TfdsDataSource(tfds_name=f"flcc/{language}:{FLCC_VERSION}",
                              splits=flcc.SPLITS, read_only=True)


@gin.configurable(module="code_t5")
def full_line_options(examples_per_file=8, start_of_line_rate=0.5, seed=0):
  """How many cursors per file, and where: a gin hook for `full_line_examples`."""
  return dict(examples_per_file=examples_per_file, start_of_line_rate=start_of_line_rate,
              seed=seed)


def _full_line_examples(dataset):
  return preprocessors.full_line_examples(dataset, **full_line_options())


@gin.configurable(module="code_t5")
def mixture_rate(task: seqio.Task, full_line=1.0, prefix_lm=1.0) -> float:
  """Sampling rate of a task in the `flcc_*` mixtures, by objective."""
  return full_line if task.name.endswith("_full_line") else prefix_lm


def register(language: str) -> None:
  features = output_features(language)
  seqio.TaskRegistry.add(
      f"flcc_{language}_full_line",
      source=_source(language),
      preprocessors=[
          _full_line_examples,
          seqio.preprocessors.tokenize,
          seqio.CacheDatasetPlaceholder(),
          preprocessors.truncate_inputs_at_line,
          seqio.preprocessors.append_eos_after_trim,
      ],
      output_features=features,
      postprocess_fn=preprocessors.cut_at_newline,
      metric_fns=list(metrics.FULL_LINE_METRICS),
  )
  seqio.TaskRegistry.add(
      f"flcc_{language}_prefix_lm",
      source=_source(language),
      preprocessors=[
          preprocessors.content_to_targets,
          seqio.preprocessors.tokenize,
          seqio.CacheDatasetPlaceholder(),
          t5_preprocessors.prefix_lm,
          seqio.preprocessors.append_eos_after_trim,
      ],
      output_features=features,
      metric_fns=[],
  )
  seqio.MixtureRegistry.add(
      f"flcc_{language}",
      [f"flcc_{language}_prefix_lm", f"flcc_{language}_full_line"],
      default_rate=mixture_rate)


for _language in flcc.LANGUAGES:
  register(_language)

seqio.MixtureRegistry.add("flcc_all", [f"flcc_{lang}" for lang in flcc.LANGUAGES],
                          default_rate=mixture_rate)
