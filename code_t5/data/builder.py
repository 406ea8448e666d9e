"""The `flcc` TFDS dataset: one config per language, built from an FLCC v3 tree.

The tree is TFDS' "manual dir": `python -m code_t5.data build --flcc_dir=... --data_dir=...`
passes it. TFDS writes into an `incomplete.*` directory and renames it when every split is
written, so an interrupted build never looks complete and a rerun starts clean.
"""

import dataclasses
import json
import os
from typing import Tuple

import tensorflow_datasets as tfds
from tqdm import tqdm

from code_t5.data import flcc

REPORT_FILE = "flcc_report.json"


@dataclasses.dataclass
class FlccConfig(tfds.core.BuilderConfig):
  language: str = "python"


@dataclasses.dataclass(frozen=True)
class BuildOptions:
  """How files are filtered and split. Recorded in the report of every build."""
  ratios: Tuple[float, float, float] = (0.9, 0.05, 0.05)
  holdout_prefixes: str = ""
  filters: flcc.Filters = flcc.Filters()


class Flcc(tfds.core.GeneratorBasedBuilder):
  """Source files of GitHub repositories, as published by the FLCC dataset."""

  VERSION = tfds.core.Version("1.0.0")
  RELEASE_NOTES = {"1.0.0": "Filters, sha-256 de-duplication, repository-level splits."}
  BUILDER_CONFIGS = [FlccConfig(name=lang, language=lang) for lang in flcc.LANGUAGES]
  MANUAL_DOWNLOAD_INSTRUCTIONS = (
      "Pass an FLCC v3 tree (the folder holding `v3/`, or `v3/` itself) as the manual dir: "
      "`python -m code_t5.data build --flcc_dir=PATH`, or `python -m code_t5.data dev` for "
      "the no-download dev tree.")

  def __init__(self, *, options: BuildOptions = BuildOptions(), **kwargs):
    super().__init__(**kwargs)
    self.options = options
    self.flcc_report = None

  def _info(self) -> tfds.core.DatasetInfo:
    return self.dataset_info_from_configs(
        features=tfds.features.FeaturesDict({
            "content": tfds.features.Text(),
            "path": tfds.features.Text(),
            "repository": tfds.features.Text(),
            "language": tfds.features.Text(),
            "extension": tfds.features.Text(),
            "sha": tfds.features.Text(),
        }),
        supervised_keys=None,
        homepage="https://zenodo.org/records/7229669",
    )

  def _split_generators(self, dl_manager: tfds.download.DownloadManager):
    config, options = self.builder_config, self.options
    with tqdm(desc=f"scan {config.language}", unit=" files", mininterval=1) as progress:
      plan = flcc.plan_build(os.fspath(dl_manager.manual_dir), config.language,
                             options.ratios, options.holdout_prefixes, options.filters,
                             progress)
    report = plan.report()
    report["options"] = dataclasses.asdict(options)
    # self.data_dir is TFDS' incomplete directory here: the report lands with the dataset.
    os.makedirs(self.data_dir, exist_ok=True)
    with open(os.path.join(self.data_dir, REPORT_FILE), "w") as f:
      json.dump(report, f, indent=1)
    self.flcc_report = report
    return {split: self._generate_examples(plan.files[split], config.language)
            for split in flcc.SPLITS if plan.files[split]}

  def _generate_examples(self, files, language):
    for source, sha in files:
      with open(source.stored_path, "rb") as f:
        content = f.read().decode("utf-8")
      yield sha, {
          "content": content,
          "path": source.path,
          "repository": source.repository,
          "language": language,
          "extension": source.extension,
          "sha": sha,
      }


def build(flcc_dir: str, data_dir: str, language: str,
          options: BuildOptions = BuildOptions()) -> dict:
  """Builds `flcc/<language>` into `data_dir` and returns the report.

  A dataset already built there is kept as it is (its report is returned).
  """
  builder = Flcc(config=language, data_dir=data_dir, options=options)
  if builder.is_prepared():
    with open(os.path.join(builder.data_dir, REPORT_FILE)) as f:
      return json.load(f)
  builder.download_and_prepare(
      download_config=tfds.download.DownloadConfig(manual_dir=flcc_dir))
  return builder.flcc_report


def report_path(data_dir: str, language: str) -> str:
  return os.path.join(Flcc(config=language, data_dir=data_dir).data_dir, REPORT_FILE)
