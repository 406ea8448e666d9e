"""seqio Tasks and Mixtures for code, one set per FLCC language.

  flcc_<lang>_full_line  code before a cursor -> the rest of its line (the product task)
  flcc_<lang>_prefix_lm  whole files, chunked into a prefix and its continuation (pretraining)
  flcc_<lang>_lm         whole files, cut into windows of the row's length: a causal LM
                         (for models/causal.gin only)
  flcc_<lang>            full-line and prefix LM, mixed at rates set in gin
                         (`code_t5.mixture_rate`): the prefix LM's
  flcc_<lang>_causal     the causal LM and full-line, mixed the same way: the causal model's
                         (the dev model's, models/causal_lm_dev.gin)

Each with the language's own vocabulary, and again with `_shared` at the end of the name with
the vocabulary shared by several languages (`python -m code_t5.data vocab --languages=...`);
the multilingual mixture mixes the shared ones of every built language, or of those named in
gin:

  --gin_param="MIXTURE_NAME = @code_t5.multilingual_mixture()"
  --gin_param="code_t5.multilingual_mixture.languages = ['python', 'java']"   # optional

A seqio Mixture needs one
vocabulary for all its Tasks: that is what the shared one is for. A language whose dataset has
no split that a run reads (a small tree, `--ratios` with a 0) is left out of that run, in a
line that names it (`check_split`).

Data and vocabulary both come from the TFDS data dir (`--t5_tfds_data_dir`), where
`python -m code_t5.data` writes them.
"""


import gin
import seqio

from code_t5 import metrics
from code_t5 import preprocessors
from code_t5 import progress
from code_t5 import vocabulary
from code_t5.data import builder as flcc_builder  # registers the `flcc` TFDS builder
from code_t5.data import flcc
from code_t5.decoding import copy_cache

FLCC_VERSION = str(flcc_builder.Flcc.VERSION)


def output_features(vocabulary_name: str):
  vocab = vocabulary.FlccVocabulary(vocabulary_name)
  return {
      # The inputs' EOS is the delimiter's: the Tasks add it when the model reads one.
      "inputs": seqio.Feature(vocab, add_eos=False),
      "targets": seqio.Feature(vocab, add_eos=True),
  }


class FlccSource(seqio.TfdsDataSource):
  """`flcc/<language>` in the TFDS data dir, with the splits its build filled.

  A small tree may leave a split empty, and the build then writes no such split. Upstream
  Mixtures (seqio's get_dataset, t5's eval) leave out a Task without the split; reading one
  is a MissingSplitError that says which build would fill it (`check_split` says it first).
  """

  def __init__(self, language: str):
    # read_only: `python -m code_t5.data build` makes the dataset. Otherwise seqio reads
    # through tfds.load(download=True, try_gcs=True), which first looks for flcc in TFDS'
    # public bucket (gs://tfds-data/datasets/flcc): a GCS login and a request to Google.
    super().__init__(tfds_name=f"flcc/{language}:{FLCC_VERSION}", read_only=True)
    self.language = language

  @property
  def splits(self):
    # seqio's loader, cached per data dir. Not built: every split, so that reading says so.
    built = self.tfds_dataset.info.splits
    return tuple(s for s in flcc.SPLITS if s in built and built[s].num_examples) or flcc.SPLITS

  def get_dataset(self, split="train", shuffle=True, seed=None, shard_info=None, **kwargs):
    if split not in self.splits:
      raise flcc.MissingSplitError(self.missing_split_message(split))
    dataset = super().get_dataset(split, shuffle=shuffle, seed=seed, shard_info=shard_info,
                                  **kwargs)
    # A shuffled read is training's: it meets new full-line cursors on every pass. Every other
    # read (eval, baselines, the cache job) gets each file's fixed cursors.
    return preprocessors.mark_fresh_cursors(
        dataset, fresh=shuffle and full_line_options()["fresh_train_cursors"], seed=seed)

  def missing_split_message(self, split: str) -> str:
    return flcc_builder.missing_split_message(vocabulary.tfds_data_dir(), self.language, split)


def check_split(mixture_or_task_name: str, split: str) -> None:
  """Names in a line each Task of a Mixture (or the Task) that has no `split`: t5 and seqio
  leave it out. When none has it, a MissingSplitError."""
  tasks = seqio.get_subtasks(seqio.get_mixture_or_task(mixture_or_task_name))
  missing = [task for task in tasks if split not in task.splits]
  reasons = [task.source.missing_split_message(split) if isinstance(task.source, FlccSource)
             else f"Task {task.name} has no {split} split" for task in missing]
  if len(missing) == len(tasks):
    raise flcc.MissingSplitError(reasons[0] if len(set(reasons)) == 1 else "; ".join(reasons))
  for task, reason in zip(missing, reasons):
    progress.say(f"{mixture_or_task_name}: {task.name} left out of {split}: {reason}")


@gin.configurable(module="code_t5")
def train_dataset_fn(mixture_or_task_name, sequence_length, vocabulary, dataset_split="train",
                     **kwargs):
  """t5's mesh_train_dataset_fn, after `check_split` (dataset.gin wires it)."""
  from t5.models import mesh_transformer  # pylint: disable=g-import-not-at-top  (mesh-tf)
  check_split(mixture_or_task_name, dataset_split)
  return mesh_transformer.mesh_train_dataset_fn(
      mixture_or_task_name, sequence_length, vocabulary, dataset_split, **kwargs)


@gin.configurable(module="code_t5")
def eval_dataset_fn(mixture_or_task_name, sequence_length, dataset_split, vocabulary=None,
                    **kwargs):
  """t5's mesh_eval_dataset_fn, after `check_split` (dataset.gin wires it): without it, an eval
  of a Task that lacks the split evaluates nothing and exits 0."""
  from t5.models import mesh_transformer  # pylint: disable=g-import-not-at-top  (mesh-tf)
  check_split(mixture_or_task_name, dataset_split)
  return mesh_transformer.mesh_eval_dataset_fn(
      mixture_or_task_name, sequence_length, dataset_split, vocabulary, **kwargs)


@gin.configurable(module="code_t5")
def full_line_options(examples_per_file=8, start_of_line_rate=0.5, seed=0,
                      fresh_train_cursors=True):
  """How many cursors per file, and where: a gin hook for `full_line_examples`. With
  `fresh_train_cursors`, training draws new cursors in each file on every pass (the source's
  shuffled reads); False trains on each file's fixed cursors, the ones eval reads."""
  return dict(examples_per_file=examples_per_file, start_of_line_rate=start_of_line_rate,
              seed=seed, fresh_train_cursors=fresh_train_cursors)


def full_line_cursor_options() -> dict:
  """`full_line_options` that `preprocessors.full_line_examples` takes (fresh_train_cursors is
  FlccSource's): where the Task's cursors fall."""
  options = full_line_options()
  del options["fresh_train_cursors"]
  return options


def _full_line_examples(dataset):
  options = full_line_cursor_options()
  context = preprocessors.repository_context()
  if context["enabled"]:
    dataset = preprocessors.repository_neighbours(dataset, context["group_files"],
                                                  context["max_neighbours"])
  return preprocessors.full_line_examples(
      dataset, after_cursor=copy_cache.copy_cache()["after_cursor"], **options)


SHARED_SUFFIX = "_" + vocabulary.SHARED


@gin.configurable(module="code_t5")
def mixture_rate(task: seqio.Task, full_line=1.0, prefix_lm=1.0, lm=4.0) -> float:
  """Sampling rate of a task in the `flcc_*` mixtures, by objective.

  `lm` is only ever mixed with full-line (`flcc_<lang>_causal`): 4 to 1 keeps most rows whole
  files, while a fifth read the code before a cursor as a user types it -- a cursor inside a
  word, or after a line's indentation, ends the code in a token that never ends that text in
  the file's own tokenization, and a model trained on files alone does not know what follows
  it (the memorisation test's causal model missed 4 of 13 such lines without them). A third
  of the rows full-line (`lm = 2`) scored lower at 12.8M positions and copied less (docs/BENCHMARK_LOG.md,
  "A third of the rows full-line examples").
  """
  name = task.name[:-len(SHARED_SUFFIX)] if task.name.endswith(SHARED_SUFFIX) else task.name
  for objective, rate in (("_full_line", full_line), ("_prefix_lm", prefix_lm), ("_lm", lm)):
    if name.endswith(objective):
      return rate
  raise ValueError(f"{task.name}: not an flcc_<lang>_<objective> Task")


def register(language: str, shared: bool = False) -> None:
  """flcc_<language>_full_line, _prefix_lm and _lm, and the mixtures flcc_<language> (full
  line and prefix LM) and flcc_<language>_causal (the causal LM and full line); with `shared`,
  the same named `..._shared`, with the shared vocabulary."""
  suffix = SHARED_SUFFIX if shared else ""
  features = output_features(vocabulary.SHARED if shared else language)
  seqio.TaskRegistry.add(
      f"flcc_{language}_full_line{suffix}",
      source=FlccSource(language),
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
      f"flcc_{language}_prefix_lm{suffix}",
      source=FlccSource(language),
      preprocessors=[
          preprocessors.content_to_targets,
          seqio.preprocessors.tokenize,
          seqio.CacheDatasetPlaceholder(),
          preprocessors.prefix_lm,
          seqio.preprocessors.append_eos_after_trim,
      ],
      output_features=features,
      metric_fns=[],
  )
  seqio.TaskRegistry.add(
      f"flcc_{language}_lm{suffix}",
      source=FlccSource(language),
      preprocessors=[
          preprocessors.content_to_targets,
          seqio.preprocessors.tokenize,
          seqio.preprocessors.append_eos,
          seqio.CacheDatasetPlaceholder(),
          preprocessors.lm_windows,
      ],
      output_features=features,
      metric_fns=[],
  )
  seqio.MixtureRegistry.add(
      f"flcc_{language}{suffix}",
      [f"flcc_{language}_prefix_lm{suffix}", f"flcc_{language}_full_line{suffix}"],
      default_rate=mixture_rate)
  seqio.MixtureRegistry.add(
      f"flcc_{language}_causal{suffix}",
      [f"flcc_{language}_lm{suffix}", f"flcc_{language}_full_line{suffix}"],
      default_rate=mixture_rate)


for _language in flcc.LANGUAGES:
  register(_language)
  register(_language, shared=True)

MULTILINGUAL = "flcc_multilingual"


def built_languages(data_dir: str):
  """The languages whose dataset is built in `data_dir`, in flcc.LANGUAGES order."""
  return [language for language in flcc.LANGUAGES
          if flcc_builder.finished_builder(data_dir, language) is not None]


@gin.configurable(module="code_t5")
def multilingual_mixture(languages=None, language_rates=None, causal=False) -> str:
  """Registers `flcc_multilingual` and returns its name, for MIXTURE_NAME (module doc).

  The `_shared` Tasks of `languages` (default: every language built in the data dir, looked
  up now, when the data dir is known), each at `language_rates[language]` (default 1) times
  its objective's `mixture_rate`: prefix LM and full line, as `flcc_<lang>`; with `causal`,
  the causal LM and full line, as `flcc_<lang>_causal` (for models/causal.gin's model, the
  dev recipe's). Registered anew at each call: gin calls it wherever MIXTURE_NAME is read,
  and every call sees the same bindings.
  """
  data_dir = vocabulary.tfds_data_dir()
  built = built_languages(data_dir)
  if languages is None:
    languages = built
    if not languages:
      raise ValueError(f"{MULTILINGUAL}: no language is built in {data_dir}")
  languages = [flcc.canonical_language(language) for language in languages]
  for language in languages:
    if language not in built:
      raise ValueError(f"{MULTILINGUAL}: {language} is not built in {data_dir} (`python -m "
                       f"code_t5.data build --data_dir={data_dir} --language={language}`)")
  language_rates = dict(language_rates or {})
  unknown = set(language_rates) - set(languages)
  if unknown:
    raise ValueError(f"{MULTILINGUAL}: language_rates names languages it does not mix: "
                     f"{', '.join(sorted(unknown))}")
  tasks = []
  for language in languages:
    for objective in ("lm" if causal else "prefix_lm", "full_line"):
      task = seqio.get_mixture_or_task(f"flcc_{language}_{objective}{SHARED_SUFFIX}")
      tasks.append((task.name, language_rates.get(language, 1.0) * mixture_rate(task)))
  seqio.MixtureRegistry.remove(MULTILINGUAL)
  seqio.MixtureRegistry.add(MULTILINGUAL, tasks)
  return MULTILINGUAL
