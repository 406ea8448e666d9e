"""The `flcc` TFDS dataset: one config per language, built from an FLCC v3 tree.

The tree is TFDS' "manual dir": `python -m code_t5.data build --flcc_dir=... --data_dir=...`
passes it. TFDS writes into an `incomplete.*` directory and renames it when every split is
written, so an interrupted build never looks complete and a rerun starts clean.

Two ways to run the same recipe (`flcc.py` decides keep/skip, split and which duplicate
stays): in this process, reading files one after another (the default), or as an Apache Beam
pipeline (`--beam`) for archives too large for one machine. Both give the same dataset and the
same report.
"""

import collections
import contextlib
import dataclasses
import hashlib
import json
import os
from typing import Optional, Sequence, Tuple

import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer
from tensorflow.core.example import example_pb2
from tensorflow.core.example import feature_pb2
from tqdm import tqdm

from code_t5 import files
from code_t5.data import flcc
from code_t5.data import near_duplicates as near_lib

REPORT_FILE = "flcc_report.json"
# What a tree and options turn into. Raise it when that changes, so that a dataset built the
# old way is not taken for one built the new way. 2: a repository is author/repo/init hash.
RECIPE = 2


@dataclasses.dataclass
class FlccConfig(tfds.core.BuilderConfig):
  language: str = "python"


@dataclasses.dataclass(frozen=True)
class BuildOptions:
  """How files are filtered and split. Recorded in the report of every build."""
  ratios: Tuple[float, float, float] = flcc.DEFAULT_RATIOS
  holdout_prefixes: str = ""
  filters: flcc.Filters = flcc.Filters()
  beam: bool = False  # set by build() from its beam_runner
  # Where the tree came from: an archive path or URL and its sha-256, when built from one.
  archive: str = ""
  archive_sha256: str = ""
  # A malformed repository stops the build instead of being skipped and counted.
  strict: bool = False
  near_duplicates: near_lib.Options = near_lib.Options()


def _not_in_the_tfds_bucket():
  pass


class Flcc(tfds.core.GeneratorBasedBuilder):
  """Source files of GitHub repositories, as published by the FLCC dataset."""

  VERSION = tfds.core.Version("1.0.0")
  RELEASE_NOTES = {"1.0.0": "Filters, sha-256 de-duplication, repository-level splits."}
  BUILDER_CONFIGS = [FlccConfig(name=lang, language=lang) for lang in flcc.LANGUAGES]
  MANUAL_DOWNLOAD_INSTRUCTIONS = (
      "Pass an FLCC v3 tree (the folder holding `v3/`, or `v3/` itself) as the manual dir: "
      "`python -m code_t5.data build --flcc_dir=PATH`, or `python -m code_t5.data dev` for "
      "the no-download dev tree.")

  def __init__(self, *, options: BuildOptions = BuildOptions(), fingerprint=None,
               workers: int = 1, **kwargs):
    super().__init__(**kwargs)
    self.options = options
    self.workers = workers  # processes that read and filter the tree (flcc.plan_build)
    self.fingerprint = fingerprint  # recorded in the report
    self.flcc_report = None
    self._beam_flcc_dir = None
    self._beam_split_method = None
    if options.beam:
      self._split_generators = self._beam_split_generators

  def _info(self) -> tfds.core.DatasetInfo:
    info = self.dataset_info_from_configs(
        features=tfds.features.FeaturesDict({name: tfds.features.Text() for name in FEATURES}),
        supervised_keys=None,
        homepage="https://zenodo.org/records/7229669",
    )
    # TFDS fills the info of a dataset not built yet from its public bucket,
    # gs://tfds-data/dataset_info/flcc/...: flcc is not there, and asking costs every build a
    # GCS login (the metadata server, then Google) from machines that may have no network.
    info.initialize_from_bucket = _not_in_the_tfds_bucket
    return info

  def _download_and_prepare(self, dl_manager, download_config):
    if self.options.beam:
      return super()._download_and_prepare(dl_manager, download_config)
    with _examples_serialized_directly(self.info.features):
      return super()._download_and_prepare(dl_manager, download_config)

  def _split_generators(self, dl_manager: tfds.download.DownloadManager):
    # TFDS makes a Beam pipeline (importing Beam: 0.5-1.5 s) for a builder whose
    # _split_generators takes `pipeline`; a Beam build puts that signature in place (__init__).
    flcc_dir = os.fspath(dl_manager.manual_dir)
    config, options = self.builder_config, self.options
    with tqdm(desc=f"scan {config.language}", unit=" files", mininterval=1) as progress:
      plan = flcc.plan_build(flcc_dir, config.language,
                             options.ratios, options.holdout_prefixes, options.filters,
                             progress, options.strict, self.workers,
                             options.near_duplicates)
    self._write_report(plan.report())
    return {split: self._generate_examples(plan.files[split], config.language)
            for split in flcc.SPLITS if plan.files[split]}

  def _write_report(self, report):
    report["options"] = dataclasses.asdict(self.options)
    report["fingerprint"] = self.fingerprint
    # self.data_dir is TFDS' incomplete directory here: the report lands with the dataset.
    files.write_atomically(os.path.join(self.data_dir, REPORT_FILE),
                           json.dumps(report, indent=1))
    self.flcc_report = report

  def _generate_examples(self, kept, language):
    for source, sha in kept:
      yield sha, _example(source, sha, language)

  def _beam_split_generators(self, dl_manager: tfds.download.DownloadManager, pipeline):
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    from code_t5.data import beam_near_duplicates as beam_near  # pylint: disable=g-import-not-at-top
    flcc_dir = os.fspath(dl_manager.manual_dir)
    language, options = self.builder_config.language, self.options
    flcc.check_language(language)
    root, self._beam_split_method, repos = flcc.assign_splits(
        flcc_dir, language, options.ratios, options.holdout_prefixes)
    near = options.near_duplicates
    kept = (pipeline
            | "Repositories" >> beam.Create(list(enumerate(repos)))
            | "Spread" >> beam.Reshuffle()
            | "Inspect" >> beam.FlatMap(_beam_candidates, root, language, options.filters,
                                        options.strict, near.on)
            | "GroupBySha" >> beam.GroupByKey()
            | "KeepFirstCopy" >> beam.Map(_beam_first_copy))
    if near.on:
      # Judged in the pipeline (beam_near_duplicates); the removed files leave by a join.
      removed = (kept
                 | "Signatures" >> beam.Map(lambda kv: (kv[1][2], kv[0], kv[1][4]))
                 | "JudgeNearDuplicates" >> beam_near.JudgeNearDuplicates(near, _inc)
                 | "RemovedByOrder" >> beam.Map(lambda order: (order, True)))
      kept = ({"file": kept | "ByOrder" >> beam.Map(_beam_unsigned),
               "removed": removed}
              | "JoinRemoved" >> beam.CoGroupByKey()
              | "DropNearDuplicates" >> beam.FlatMap(
                  lambda kv: [] if kv[1]["removed"] else kv[1]["file"]))
    kept = kept | "CountKept" >> beam.Map(_beam_count_kept)
    _ = (kept
         | "SplitRepository" >> beam.Map(lambda kv: (kv[0], kv[1][0].repository))
         | "Distinct" >> beam.Distinct()
         | "CountRepositories" >> beam.Map(lambda kv: _inc(f"repos:{kv[0]}")))
    self._beam_flcc_dir = flcc_dir
    splits = {}
    for split in sorted({r.split for r in repos}, key=flcc.SPLITS.index):
      splits[split] = (
          kept
          | f"Select_{split}" >> beam.Filter(lambda kv, s: kv[0] == s, split)
          | f"Examples_{split}" >> beam.Map(
              lambda kv, lang: (kv[1][1], _example(kv[1][0], kv[1][1], lang)), language))
    return splits

  def _process_pipeline_result(self, pipeline_result):
    if not self.options.beam:
      return
    import apache_beam as beam  # pylint: disable=g-import-not-at-top
    results = pipeline_result.metrics().query(
        beam.metrics.MetricsFilter().with_namespace(_BEAM_NAMESPACE))
    counters = collections.Counter(
        {r.key.metric.name: r.committed for r in results["counters"]})
    language = self.builder_config.language
    if self.options.near_duplicates.on:
      from code_t5.data import beam_near_duplicates as beam_near  # pylint: disable=g-import-not-at-top
      print(f"near-duplicates judged in the pipeline: {beam_near.largest_state(pipeline_result)}"
            " (what one worker held at once)", flush=True)
    flcc.check_not_empty(self._beam_flcc_dir, language,
                         sum(counters[f"files:{s}"] for s in flcc.SPLITS), counters)
    self._write_report(flcc.report_from_counters(language, counters, self.options.ratios,
                                                 self._beam_split_method,
                                                 self.options.near_duplicates))


_BEAM_NAMESPACE = "flcc"


def _inc(name, value=1):
  import apache_beam as beam  # pylint: disable=g-import-not-at-top
  beam.metrics.Metrics.counter(_BEAM_NAMESPACE, name).inc(value)


def _beam_candidates(rank_and_repo, root, language, filters, strict, signed):
  """Kept files of one repository as (sha, (order, split, source, size, signature)); counts
  the rest."""
  rank, repo_dir = rank_and_repo
  candidates = flcc.repository_candidates(root, language, repo_dir, filters, _inc, strict,
                                          signed)
  for index, (source, sha, size, signature) in enumerate(candidates):
    yield sha, ((rank, index), repo_dir.split, source, size, signature)


def _beam_first_copy(sha_and_copies):
  """The copy the in-process build would meet first, as (split, (source, sha, order, size,
  signature)); the others count as duplicates."""
  sha, copies = sha_and_copies
  copies = sorted(copies, key=lambda copy: copy[0])
  _inc(f"skipped:{flcc.DUPLICATE}", len(copies) - 1)
  order, split, source, size, signature = copies[0]
  return split, (source, sha, order, size, signature)


def _beam_unsigned(kv):
  """A kept file keyed by its order for the join with the removed ones, its signature left
  out (the join need not move it)."""
  split, (source, sha, order, size, _) = kv
  return order, (split, (source, sha, order, size, None))


def _beam_count_kept(kv):
  split, (source, sha, _, size, _) = kv
  _inc(f"files:{split}")
  _inc(f"bytes:{split}", size)
  return split, (source, sha)


# The features of an example: all text, one value each.
FEATURES = ("content", "path", "repository", "language", "extension", "sha")


class TextExampleSerializer(example_serializer.Serializer):
  """An example of FEATURES as the tf.train.Example TFDS' ExampleSerializer writes, byte for
  byte (tests/test_flcc_sources.py compares them), without TFDS' per-feature way through NumPy
  and its checks, which were most of an in-process build (bench_build.py: 0.6 of 1.0 s at
  5,000 files). Values are str or bytes."""

  def __init__(self, example_specs):
    super().__init__(example_specs)
    # TFDS' order of features: the map's entries serialize in the order they were added.
    self._names = list(example_serializer.utils.flatten_nest_dict(example_specs))

  def serialize_example(self, example) -> bytes:
    return example_pb2.Example(features=feature_pb2.Features(feature={
        name: feature_pb2.Feature(bytes_list=feature_pb2.BytesList(
            value=[example_serializer._as_bytes(example[name])]))  # pylint: disable=protected-access
        for name in self._names})).SerializeToString()


@contextlib.contextmanager
def _examples_serialized_directly(features: tfds.features.FeaturesDict):
  """During an in-process build of `features` (text only), TFDS' split writer serializes each
  example with TextExampleSerializer, and the features' encoding (a NumPy array a value) is
  skipped: the serializer takes the text itself. TFDS makes its serializer by the name
  `example_serializer.ExampleSerializer`; it is restored afterwards (CONTRIBUTING.md,
  "Upstream patches"). A Beam build's workers keep TFDS' own."""
  original = example_serializer.ExampleSerializer
  specs = features.get_serialized_info()

  def serializer(example_specs):
    return (TextExampleSerializer(example_specs) if example_specs == specs
            else original(example_specs))
  example_serializer.ExampleSerializer = serializer
  features.encode_example = lambda example: example
  try:
    yield
  finally:
    example_serializer.ExampleSerializer = original
    del features.encode_example


def _example(source: flcc.SourceFile, sha: str, language: str) -> dict:
  return {
      "content": flcc.read_text(source),
      "path": source.path,
      "repository": source.repository,
      "language": language,
      "extension": source.extension,
      "sha": sha,
  }


def fingerprint(flcc_dir: str, language: str, options: BuildOptions) -> dict:
  """What a dataset is made from: the tree's repositories (their names, not their bytes: a
  listing is cheap on 500 GB), the language, and the options that decide what is kept and
  where it goes, and an archive's sha-256 (another archive may hold the same names). Beam or
  not, --strict and the archive's path change none of it."""
  names = "\n".join("/".join(r) for r in flcc.iter_repository_dirs(flcc.languages_root(flcc_dir)))
  repositories = names.count("\n") + 1 if names else 0
  return {
      "recipe": RECIPE,
      "language": language,
      "repositories": repositories,
      "repositories_sha256": hashlib.sha256(names.encode("utf-8")).hexdigest(),
      "ratios": list(options.ratios),
      "holdout_prefixes": options.holdout_prefixes,
      "filters": dataclasses.asdict(options.filters),
      "split_method": flcc.split_method(repositories, options.ratios, options.holdout_prefixes),
      "near_duplicates": near_duplicates_key(options.near_duplicates),
      **_repositories_state(flcc_dir),
      **({"archive_sha256": options.archive_sha256} if options.archive_sha256 else {}),
  }


def _repositories_state(flcc_dir: str) -> dict:
  """For a tree written from --repos_dir: the state of its repositories (HEAD commits, or
  folders' file sizes and times), so that a build of changed repositories is not taken for
  the one already built. A published tree's names say it all (and a listing is cheap)."""
  manifest = flcc.repositories_manifest(flcc_dir)
  if manifest is None:
    return {}
  state = json.dumps(manifest["repositories"], sort_keys=True).encode("utf-8")
  return {"repositories_state_sha256": hashlib.sha256(state).hexdigest()}


def near_duplicates_key(near: near_lib.Options) -> str:
  """How near-duplicates were judged, as a fingerprint records it: `holdout@0.85`, `off`."""
  return f"{near.mode}@{near.threshold:g}" if near.on else near_lib.OFF


def _recorded_fingerprint(report: dict) -> Optional[dict]:
  """The fingerprint a finished dataset recorded. Those recorded before splits were balanced
  (no `split_method`) were all drawn by hash or by holdout prefixes: the same recipe as
  `flcc.HASH` today, so a large tree built then is still taken as built."""
  recorded = report.get("fingerprint")
  if recorded and "split_method" not in recorded:
    recorded = dict(recorded, split_method=flcc.HOLDOUT_PREFIXES
                    if recorded.get("holdout_prefixes") else flcc.HASH)
  if recorded and "near_duplicates" not in recorded:  # built before near-duplicates were
    recorded = dict(recorded, near_duplicates=near_lib.OFF)
  return recorded


def _differences(recorded: Optional[dict], wanted: dict) -> str:
  if not recorded:
    return "an earlier code_t5 built it and recorded no fingerprint"
  return "; ".join(
      "the repositories changed: their HEAD commits or files"
      if key == "repositories_state_sha256" else f"{key} {recorded.get(key)!r}, now {value!r}"
      for key, value in wanted.items() if recorded.get(key) != value)


def build(flcc_dir: str, data_dir: str, language: str,
          options: BuildOptions = BuildOptions(), beam_runner: Optional[str] = None,
          beam_flags: Sequence[str] = (), overwrite: bool = False,
          workers: int = 1) -> dict:
  """Builds `flcc/<language>` into `data_dir` and returns the report.

  With `beam_runner` (e.g. "DirectRunner") the build is a Beam pipeline on that runner,
  configured by `beam_flags` (Beam's own command-line flags). A dataset already built in
  `data_dir` from the same tree and options is kept as it is (its report is returned); one
  built from others is a flcc.BuildMismatchError, or with `overwrite` is replaced. Without
  Beam, `workers` processes read and filter the tree; the dataset is the same for any number.
  """
  options = dataclasses.replace(options, beam=beam_runner is not None)
  wanted = fingerprint(flcc_dir, language, options)
  # TFDS lists this folder when the builder is made and catches only OSError; on gs:// TF
  # raises NotFoundError for a folder not there yet.
  files.makedirs(builder_dir(data_dir, language))
  builder = Flcc(config=language, data_dir=data_dir, options=options, fingerprint=wanted,
                 workers=workers)
  if builder.is_prepared():
    report = json.loads(files.read_text(os.path.join(builder.data_dir, REPORT_FILE)))
    if _recorded_fingerprint(report) == wanted:
      return report
    if not overwrite:
      raise flcc.BuildMismatchError(
          f"{builder.data_dir}: built from other inputs ("
          f"{_differences(_recorded_fingerprint(report), wanted)}); --overwrite replaces it")
    files.rmtree(builder.data_dir)
    builder = Flcc(config=language, data_dir=data_dir, options=options, fingerprint=wanted,
                 workers=workers)
  beam_options = None
  if beam_runner:
    from apache_beam.options.pipeline_options import PipelineOptions  # pylint: disable=g-import-not-at-top
    # Given none, TFDS builds PipelineOptions() -- parsed from sys.argv, the caller's own
    # flags, with a warning per flag.
    beam_options = PipelineOptions(list(beam_flags))
  # try_download_gcs: TFDS would look for a prepared copy in its public bucket first (see _info).
  try:
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(
        manual_dir=flcc_dir, beam_runner=beam_runner, beam_options=beam_options,
        try_download_gcs=False))
  except Exception as e:  # pylint: disable=broad-except
    # The splits of a Beam build are fixed before it reads a file; TFDS' Beam writer then
    # fails on one left with nothing (its message names no split, no cause).
    if beam_runner and "total number of generated examples is 0" in str(e):
      raise flcc.FlccFormatError(
          f"{flcc_dir}: a split of flcc/{language} has no {language} files left after the "
          f"filters and near-duplicates, and a Beam build cannot write an empty split: build "
          f"without --beam_runner (which leaves it out), or give it more repositories "
          f"(--ratios)") from None
    raise
  if beam_runner:
    check_every_kept_file_written(builder)
  return builder.flcc_report


def check_every_kept_file_written(builder: Flcc) -> None:
  """The examples TFDS' writer wrote in each split against the files the pipeline kept (its
  counters, the report's). Beam's DirectRunner with worker processes
  (`--direct_running_mode=multi_processing`, Beam 2.77) was seen to lose examples of a large
  split, its counters still counting them: 545 of 179,198 train files of a tree of 200,000
  (one worker process wrote them all). A build that lost any is removed, so that it never
  looks complete, and is an IncompleteBuildError."""
  written = {name: split.num_examples for name, split in builder.info.splits.items()}
  lost = [(split, entry["files"], written.get(split, 0))
          for split, entry in builder.flcc_report["splits"].items()
          if entry["files"] != written.get(split, 0)]
  if lost:
    files.rmtree(builder.data_dir)
    raise flcc.IncompleteBuildError(
        f"{builder.data_dir}: the Beam runner wrote "
        + "; ".join(f"{w:,} of the {n:,} {split} files the build kept" for split, n, w in lost)
        + ": the dataset is removed; build again with one worker process "
        "(--beam_options=--direct_num_workers=1) or without --beam_runner")


def builder_dir(data_dir: str, language: str) -> str:
  """Where TFDS keeps every version of `flcc/<language>`."""
  return os.path.join(data_dir, Flcc.name, language)


def finished_builder(data_dir: str, language: str) -> Optional[Flcc]:
  """The finished `flcc/<language>` of this code_t5 in `data_dir`, or None."""
  if not files.isdir(builder_dir(data_dir, language)):
    return None  # (TFDS would raise on gs://, see build)
  builder = Flcc(config=language, data_dir=data_dir)
  return builder if builder.is_prepared() else None


def report_path(data_dir: str, language: str) -> str:
  return os.path.join(builder_dir(data_dir, language), str(Flcc.VERSION), REPORT_FILE)


def built_report(data_dir: str, language: str) -> Optional[dict]:
  """The report of the finished `flcc/<language>` in `data_dir`, or None."""
  path = report_path(data_dir, language)
  return json.loads(files.read_text(path)) if files.exists(path) else None


def missing_split_message(data_dir: str, language: str, split: str) -> str:
  """Why `flcc/<language>` in `data_dir` has no `split`, and the build that gives it one."""
  report = built_report(data_dir, language) or {}
  ratios = tuple(report.get("options", {}).get("ratios", BuildOptions.ratios))
  ratio = dict(zip(flcc.SPLITS, ratios))
  counts = report.get("splits", {})
  repositories = sum(c.get("repositories", 0) for c in counts.values())
  nonzero = [s for s in flcc.SPLITS if ratio[s] > 0]
  head = f"flcc/{language} in {data_dir} has no {split} split"
  if ratio[split] and repositories <= 1:
    return (f"{head}: its files come from {repositories} repository, which cannot be split; "
            f"build it from a tree of more repositories")
  if not ratio[split]:
    why = f"it was built with --ratios={flcc.ratios_text(ratios)}"
    fix = flcc.with_split(ratios, split)
  elif repositories < len(nonzero):
    # Too few repositories to go round: free one by leaving out the other held-out split.
    other = [s for s in nonzero if s != split and ratio[s] < max(ratios)][0]
    why = f"its {repositories} repositories with kept files cannot fill {len(nonzero)} splits"
    fix = flcc.without_splits(ratios, [other])
  else:
    placed = ", ".join(f"{counts.get(s, {}).get('repositories', 0)} in {s}" for s in flcc.SPLITS)
    why = (f"it was split by {report.get('split_method') or flcc.HASH} ({placed} repositories); "
           f"a build by this code_t5 gives every split of non-zero ratio a repository")
    fix = ratios
  return (f"{head}: {why}; rebuild it: python -m code_t5.data build --flcc_dir=<the tree> "
          f"--data_dir={data_dir} --language={language} --ratios={flcc.ratios_text(fix)} "
          f"--overwrite")

