"""A seqio cache run that was killed leaves Beam's temporary shards; the next run removes them.

`python -m seqio.scripts.cache_tasks_main` writes each split through Beam's WriteToTFRecord,
which stages shards in `<cache dir>/<task>/beam-temp-<split>.tfrecord-<uuid>/` and moves them
into place at the end. A run killed before that leaves the staging dirs behind, and a rerun
stages into new ones, so the old ones stay forever: unread (seqio reads only finished shards,
and only once COMPLETED is written), but as large as the data. Under that entry point,
importing code_t5 (`--module_import=code_t5`) removes them from the cache dirs of the Tasks
the run selects, before its pipeline starts; another job caching other Tasks into the same
dir is left alone. Every removal is logged.
"""

import logging
import os
import re
from typing import Iterable, List, Optional

import seqio
import tensorflow as tf

from code_t5 import errors

ENTRY_POINT = "seqio.scripts.cache_tasks_main"
log = logging.getLogger("code_t5")


def selected_tasks(patterns: Optional[Iterable[str]],
                   excluded: Optional[Iterable[str]]) -> List[str]:
  """The registered Task names that `--tasks` and `--excluded_tasks` select, with the rule
  of seqio's `cache_tasks_main.run_pipeline` (full-match regexes; none given: every Task)."""
  included = re.compile(r"(%s\Z)" % r"\Z|".join(patterns or [".*"]))
  excluded = re.compile(r"(%s\Z)" % r"\Z|".join(excluded or []))
  return [name for name in seqio.TaskRegistry.names()
          if included.match(name) and not excluded.match(name)]


def remove_stale_beam_temp(cache_dir: str, task_names: Iterable[str]) -> List[str]:
  """Removes `beam-temp-*` dirs from the cache dirs of `task_names`; returns what it removed."""
  removed = []
  for name in task_names:
    task_dir = os.path.join(cache_dir, seqio.get_task_dir_from_name(name))
    for stale in sorted(tf.io.gfile.glob(os.path.join(task_dir, "beam-temp-*"))):
      log.warning("%s: left by an interrupted cache run; removing it", stale)
      tf.io.gfile.rmtree(stale)
      removed.append(stale)
  return removed


def clean_up_if_entry_point() -> None:
  if not errors.running_entry_point((ENTRY_POINT,)):
    return
  from absl import flags  # pylint: disable=g-import-not-at-top
  parsed = flags.FLAGS
  if parsed.is_parsed() and parsed.output_cache_dir:
    remove_stale_beam_temp(parsed.output_cache_dir,
                           selected_tasks(parsed.tasks, parsed.excluded_tasks))
