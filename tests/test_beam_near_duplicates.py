"""Near-duplicates judged in a Beam pipeline (beam_near_duplicates) against near_duplicates.judge.

The corpus is built so that its answer is known as well as judge's: a chain of near-duplicates
whose ends are far apart (each link changes 12 of the 128 values, so neighbours agree on 116,
files two links apart on at most 108, under 0.85 x 128), which connects train stretches through
validation and test files, its build order such that several of its files are at first their
own labels; a clique in train; a bucket shared by many files that are not near-duplicates at
all; singletons. The build order is shuffled, so the first file of a group is not the first
made. Each case runs on Beam's DirectRunner with a bucket limit that cuts every shared bucket
into blocks, and with no rounds of propagation (all labels joined in the last step).
"""

import apache_beam as beam
from apache_beam.testing import util as beam_util
import numpy as np
import pytest

from code_t5.data import beam_near_duplicates as beam_near
from code_t5.data import builder
from code_t5.data import near_duplicates

from conftest import in_a_forked_child

NUM_PERM = near_duplicates.NUM_PERM
BANDS = near_duplicates.band_slices(near_duplicates.DEFAULT_THRESHOLD)


def _link(values, rng):
  """One link of a chain: a new value at a place in each of 12 bands (the other 4 bands stay
  whole, so the pair is an LSH candidate), so neighbours agree on 116 of 128 values and files
  two links apart on at most 108, under the threshold's 108.8."""
  for band in rng.permutation(len(BANDS))[:12]:
    place = BANDS[band].start + rng.integers(BANDS[band].stop - BANDS[band].start)
    values[place] = values[place] ^ np.uint32(rng.integers(1, 2 ** 32))


CHAIN_SPLITS = ["validation", "train", "train", "train", "test", "train", "train", "train"]
# The chain's places in build order: files smaller than both neighbours (3, 1, 4, 2 here) are
# each their own label at first, in the whole chain and in each train stretch, so the labels
# need the rounds (or the last step) to agree.
CHAIN_RANKS = [7, 3, 11, 1, 9, 4, 12, 2]


def _corpus(seed=0):
  """[(order, split, signature)] in build order, and each order's file name."""
  rng = np.random.default_rng(seed)
  fresh = lambda: rng.integers(0, 2 ** 32, NUM_PERM, dtype=np.uint64).astype(np.uint32)
  files = {}
  values = fresh()
  for number, split in enumerate(CHAIN_SPLITS):
    if number:
      values = values.copy()
      _link(values, rng)
    files[f"chain{number}"] = (split, values)
  # A clique of 5 in train: the same base, 4 values changed each (120+ of 128 agree).
  base = fresh()
  for number in range(5):
    values = base.copy()
    values[rng.permutation(NUM_PERM)[:4]] = fresh()[:4]
    files[f"clique{number}"] = ("train", values)
  # 9 files that share band 0's bucket and nothing else: candidates, never near-duplicates.
  shared = fresh()[BANDS[0]]
  for number in range(9):
    values = fresh()
    values[BANDS[0]] = shared
    files[f"bucket{number}"] = (["train", "validation", "test"][number % 3], values)
  for number in range(12):
    files[f"single{number}"] = (["train", "validation", "test"][number % 3], fresh())
  others = [name for name in files if not name.startswith("chain")]
  free = [rank for rank in range(len(files)) if rank not in CHAIN_RANKS]
  ranks = dict(zip(others, rng.permutation(free)), **{
      f"chain{number}": rank for number, rank in enumerate(CHAIN_RANKS)})
  corpus = sorted(((int(ranks[name]), 0), split, values)
                  for name, (split, values) in files.items())
  return corpus, {(int(ranks[name]), 0): name for name in files}


def _judge_in_beam(corpus, mode, group_limit, rounds):
  """judge's verdict, and the pipeline's counters and largest state, its removed files checked
  against the verdict's. The pipeline runs in a forked child (conftest.in_a_forked_child):
  Beam's runner leaves a gRPC thread behind, after which this process must not fork."""
  options = near_duplicates.Options(mode)
  verdict = near_duplicates.judge([(split, order, values) for order, split, values in corpus],
                                  options)
  counters, largest = in_a_forked_child(_run_pipeline, corpus, options, group_limit, rounds,
                                        sorted(verdict.removed))
  return verdict, counters, largest


def _run_pipeline(corpus, options, group_limit, rounds, expected_removed):
  pipeline = beam.Pipeline(runner="DirectRunner")
  removed = (pipeline
             | beam.Create(corpus)
             | beam_near.JudgeNearDuplicates(options, builder._inc,  # pylint: disable=protected-access
                                             group_limit=group_limit, rounds=rounds))
  beam_util.assert_that(removed, beam_util.equal_to(expected_removed))
  result = pipeline.run()
  result.wait_until_finish()
  counters = {r.key.metric.name: r.committed for r in result.metrics().query(
      beam.metrics.MetricsFilter().with_namespace("flcc"))["counters"]}
  return counters, beam_near.largest_state(result)


@pytest.mark.parametrize("mode, group_limit, rounds", [
    (near_duplicates.DROP, 1, 0),
    (near_duplicates.DROP, 1, beam_near.ROUNDS),
    (near_duplicates.HOLDOUT, beam_near.GROUP_LIMIT, 1),
], ids=["drop, blocks, labels joined at the end", "drop, blocks, rounds", "holdout, one round"])
def test_the_pipeline_removes_what_judge_removes(mode, group_limit, rounds):
  corpus, names = _corpus()
  if group_limit == 1:  # every shared bucket in blocks: the clique's pairs cross them
    assert len({beam_near._block(o, 5) for o, n in names.items() if n.startswith("clique")}) > 1  # pylint: disable=protected-access
  verdict, counters, largest = _judge_in_beam(corpus, mode, group_limit, rounds)
  removed = sorted(names[order] for order in verdict.removed)
  # What the corpus was made to hold, first: judge's answer is the known one.
  held_out_with_twins = ["chain0", "chain4"]
  assert verdict.counters["near:clusters"] == 2  # the chain and the clique
  if mode == near_duplicates.HOLDOUT:
    assert removed == held_out_with_twins
  else:  # of train's chain1-3, chain5-7 and the clique, all but the first in build order
    first_of_clique = names[min(o for o, n in names.items() if n.startswith("clique"))]
    assert removed == sorted(held_out_with_twins + ["chain1", "chain2", "chain5", "chain6"] + [
        f"clique{i}" for i in range(5) if f"clique{i}" != first_of_clique])
  # and the pipeline's counters are judge's, but the one judge keeps as a check (always 0).
  expected = {name: value for name, value in verdict.counters.items()
              if value and not name.startswith("near:contaminated_after:")}
  assert {name: value for name, value in counters.items()
          if name != "near:labels_joined_after_rounds"} == expected
  assert not any(value for name, value in verdict.counters.items()
                 if name.startswith("near:contaminated_after:"))
  # The shared bucket of 9 is one group unless cut in blocks; after the rounds the chain's
  # first file is the label of all 8.
  assert largest.startswith("the largest bucket 9 files, the largest group ")
  assert (largest.split(", ")[1] == "the largest group 9 signatures") == (group_limit > 9)
  assert largest.endswith("the largest label 8 files") or rounds != beam_near.ROUNDS
  # With no rounds, the pairs' labels are all joined in the last step; after ROUNDS, none.
  joined = counters.get("near:labels_joined_after_rounds", 0)
  assert joined > 0 if rounds == 0 else (rounds != beam_near.ROUNDS or joined == 0)


def test_a_long_chain_needs_no_last_step_after_the_rounds():
  """Pointer jumping: a chain of 40 files, its build order along it, converges in ROUNDS."""
  rng = np.random.default_rng(1)
  values, corpus = rng.integers(0, 2 ** 32, NUM_PERM, dtype=np.uint64).astype(np.uint32), []
  for number in range(40):
    values = values.copy()
    _link(values, rng)
    corpus.append(((number, 0), "train", values))
  verdict, counters, _ = _judge_in_beam(corpus, near_duplicates.DROP, 2048, beam_near.ROUNDS)
  assert len(verdict.removed) == 39 and verdict.counters["near:clusters"] == 1
  assert counters.get("near:labels_joined_after_rounds", 0) == 0
