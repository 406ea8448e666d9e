"""code_t5: full-line code completion on seqio + t5 + mesh-tensorflow.

`--module_import=code_t5` registers the seqio Tasks and Mixtures of `code_t5/tasks.py`, puts
code_t5's gin files on gin's search path and installs code_t5's changes to upstream behaviour:
all of them, and when each applies, are in `upstream/`.
"""

import os

import gin


def gin_configs_dir() -> str:
  """`gin_configs/` of a source checkout, or its copy inside an installed wheel."""
  # The package's own files, where Python imported it from: always a local path.
  here = os.path.dirname(os.path.abspath(__file__))
  for candidate in (os.path.join(here, "gin_configs"),
                    os.path.join(os.path.dirname(here), "gin_configs")):
    if os.path.isdir(candidate):
      return candidate
  raise FileNotFoundError(f"no gin_configs/ next to {here}")


# t5's own gin directory also has a dataset.gin. mesh_transformer_main adds it to the search
# path after importing --module_import, so adding ours here puts it first and
# `include 'dataset.gin'` means ours, with or without --gin_location_prefix.
gin.add_config_file_search_path(gin_configs_dir())

from code_t5 import embedding  # noqa: E402,F401  (gin: code_t5.GatheredVocabEmbedding)
from code_t5 import tasks  # noqa: E402,F401  (registers Tasks and Mixtures)
from code_t5 import upstream  # noqa: E402
from code_t5.decoding import consensus  # noqa: E402,F401  (gin: code_t5.consensus_line)
from code_t5.decoding import search  # noqa: E402,F401  (gin: code_t5.greedy_decode, ...)
from code_t5.modes import export  # noqa: E402,F401  (gin: code_t5.register_serving_task)
from code_t5.modes import infer  # noqa: E402,F401  (gin: code_t5.complete_lines_from_file)
from code_t5.modes import score  # noqa: E402,F401  (gin: code_t5.completions_dataset_fn, ...)
from code_t5.modes import train_eval  # noqa: E402,F401  (gin: code_t5.train_and_evaluate)

upstream.install()  # every change to t5's, seqio's, mesh-tf's and TF's behaviour: upstream/
