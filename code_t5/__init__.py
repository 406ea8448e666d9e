"""code_t5: full-line code completion on seqio + t5 + mesh-tensorflow.

`--module_import=code_t5` registers the seqio Tasks and Mixtures of `code_t5/tasks.py` and
puts code_t5's gin files on gin's search path. Under t5's entry point it also turns errors into
one line (`errors.py`), skips the graph and checkpoint writes before the first training step
(`startup.py`), prints progress lines while training and decoding (`progress.py`) and checks that the buckets of gs:// path flags exist (`files.py`); under
seqio's cache_tasks_main it removes what a killed run left (`seqio_cache.py`). Anywhere, it
makes mesh-tf's delimited_lm find no inputs in a causal model's rows (`score.inputs_mask`),
so that perplexity eval counts every position the model predicts.
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

from code_t5 import errors  # noqa: E402
from code_t5 import progress  # noqa: E402
from code_t5 import startup  # noqa: E402

errors.install_if_entry_point()
startup.install_if_entry_point()
progress.install_if_entry_point()
if errors.running_entry_point():
  from code_t5 import files  # noqa: E402
  files.check_path_flags()  # before t5 makes --model_dir: see files.py

from code_t5 import decoding  # noqa: E402,F401  (gin: code_t5.prefix_lm_beam_search, greedy_decode)
from code_t5 import export  # noqa: E402,F401  (gin: code_t5.register_serving_task)
from code_t5 import infer  # noqa: E402,F401  (gin: code_t5.complete_lines_from_file)
from code_t5 import score  # noqa: E402,F401  (gin: code_t5.completions_dataset_fn, ...)
from code_t5 import tasks  # noqa: E402,F401  (registers Tasks and Mixtures)
from code_t5 import seqio_cache  # noqa: E402

seqio_cache.clean_up_if_entry_point()  # after the Tasks exist: it selects among them
