"""Near-duplicates judged inside a Beam pipeline, with no worker holding the corpus.

The same verdict as near_duplicates.judge (the in-process build's), stage by stage:

  Buckets     each file into its LSH bands' buckets (near_duplicates.band_keys), as its
              node alone: the files in a bucket with another, and in which bands.
  Groups      those files' signatures (and only theirs) into those buckets. A bucket of more
              than `group_limit` files (licence headers, generated code) is cut into blocks
              by a hash of the file, and each pair of blocks is one group: a group holds at
              most about 2 x group_limit signatures, whatever the corpus.
  Pairs       in each group, the pairs whose estimate reaches the threshold
              (near_duplicates.reaches); once each, however many bands they share.
  Holdout     a validation or test file with a twin in train is removed, from its own pairs.
  Components  the pairs' connected components: each file's label is the smallest file it
              reaches (smallest-label propagation, then each label's own label: pointer jumping,
              which about doubles how far a label has spread each round), `rounds` rounds, and
              the labels still apart after them (none on the corpora measured) joined in one
              last step.
              Over all pairs (the report's clusters) and, with `drop`, over train's pairs: of
              each train component, all but its first file in build order are removed.
  Removed     the files removed; the build drops them from the splits by a join on the file.

A file here is its node, (order, split): `order`, (repository's rank, index in it), is unique
and is the build order, so a component's smallest node is its first file, as in judge. The
counters are judge's, under the same names; `near:contaminated_after:<split>` is never
incremented, since both modes remove every held-out file with a twin in train (judge counts
it as a check and finds 0).
"""

import hashlib
from typing import Callable

import apache_beam as beam
import numpy as np

from code_t5.data import near_duplicates as near_lib

TRAIN = "train"
# The sizes of the state a worker holds at once, as Beam distributions (their largest value is
# what bounds a worker's memory; `largest_state` reads them back).
STATE_NAMESPACE = "flcc_near_duplicates_state"
STATE = {"bucket_files": "the largest bucket {:,} files",
         "group_signatures": "the largest group {:,} signatures",
         "label_askers": "the largest label {:,} files"}
GROUP_LIMIT = 2048  # signatures of one bucket a group holds before the bucket is cut in blocks
ROUNDS = 4  # of label propagation before the labels still apart are joined in one step


def _record(name, value):
  beam.metrics.Metrics.distribution(STATE_NAMESPACE, name).update(value)


def largest_state(pipeline_result) -> str:
  """What the largest bucket, group and label of a finished pipeline held, in words."""
  results = pipeline_result.metrics().query(
      beam.metrics.MetricsFilter().with_namespace(STATE_NAMESPACE))["distributions"]
  largest = {}
  for result in results:  # one a step that records it: Components' rounds, each build's
    name = result.key.metric.name
    largest[name] = max(largest.get(name, 0), result.committed.max)
  return ", ".join(text.format(largest[name]) for name, text in STATE.items()
                   if name in largest) or "no two files shared a bucket"


def _block(order, blocks: int) -> int:
  """The block of a bucket cut in `blocks` that a file goes to: a hash of its order."""
  if blocks == 1:
    return 0
  # (crc32 would not do: it is linear, and orders that differ in a digit fall in few blocks.)
  digest = hashlib.blake2b(repr(order).encode("ascii"), digest_size=8).digest()
  return int.from_bytes(digest, "little") % blocks


def _shared_bucket_members(bucket, group_limit):
  """The members of a bucket that more than one file shares, as (node, band); and, tagged
  "large", a bucket of more than `group_limit` files with the blocks it is cut into. The
  members are counted, then read again: a runner may keep a large group out of memory."""
  key, members = bucket
  count = sum(1 for _ in members)
  if count > 1:
    _record("bucket_files", count)
    if count > group_limit:
      yield beam.pvalue.TaggedOutput("large", (key, -(-count // group_limit)))
    for node in members:
      yield node, key[0]


def _block_entries(node_grouped, threshold, blocks_of):
  """A file's entry in each shared bucket of its: ((band, bucket, block, other block), (its
  block, node, signature)), once with every block of its bucket (one block: the bucket)."""
  node, grouped = node_grouped
  signature = grouped["signature"][0]  # bytes: Beam's coder moves them as they are
  keys = near_lib.band_keys(np.frombuffer(signature, np.uint32), threshold)
  for band in sorted(set(grouped["bands"])):  # none: in no shared bucket, no pair to look at
    key = keys[band]
    blocks = blocks_of.get(key, 1)
    block = _block(node[0], blocks)
    for other in range(blocks):
      yield (*key, min(block, other), max(block, other)), (block, node, signature)


def _verified_pairs(group, threshold):
  """The near-duplicate pairs of one group, as (node, node) in build order: every pair within
  a block, or every pair across the group's two blocks."""
  (_, _, first, second), entries = group
  sides = {first: [], second: []}
  for block, node, signature in entries:
    sides[block].append((node, np.frombuffer(signature, np.uint32)))
  left, right = sides[first], sides[second]
  within = first == second  # a bucket's one block, or a block and itself: each pair once
  if not (len(left) > 1 if within else left and right):
    return ()
  _record("group_signatures", len(left) + (0 if within else len(right)))
  return _pairs_reaching(left, right, within, threshold)


def _pairs_reaching(left, right, within, threshold):
  matrix = np.stack([values for _, values in right])
  for number, (node, values) in enumerate(left):
    start = number + 1 if within else 0
    equal = np.count_nonzero(matrix[start:] == values, axis=1)
    for other_number in np.flatnonzero(near_lib.reaches(equal, threshold)):
      other = right[start + other_number][0]
      yield (node, other) if node < other else (other, node)


def _held_out_with_train_twin(pair):
  for held_out, twin in (pair, pair[::-1]):
    if held_out[1] != TRAIN and twin[1] == TRAIN:
      yield held_out


def _union_of_labels(pending):
  """The labels still apart after the rounds, each joined to the smallest it reaches over the
  `pending` (label, label) pairs: {label: smallest}, by near_lib.components (judge's)."""
  labels = sorted({label for pair in pending for label in pair})
  number = {label: n for n, label in enumerate(labels)}
  pairs = np.array([(number[a], number[b]) for a, b in pending], np.int64).reshape(-1, 2)
  # Numbered in order, so a component's smallest number is its smallest label.
  return dict(zip(labels, (labels[n] for n in near_lib.components(len(labels), pairs))))


class Components(beam.PTransform):
  """(node, label) for every node of `pairs`, a PCollection of (node, node): its label is the
  smallest node of its connected component."""

  def __init__(self, rounds: int = ROUNDS, inc: Callable = None, label=None):
    super().__init__(label)
    self.rounds = rounds
    self.inc = inc

  def expand(self, pairs):
    both_ways = pairs | "BothWays" >> beam.FlatMap(lambda pair: (pair, pair[::-1]))
    labels = (both_ways
              | "Start" >> beam.Map(lambda edge: (edge[0], min(edge)))
              | "SmallestNeighbour" >> beam.CombinePerKey(min))
    for number in range(self.rounds):
      labels = labels | f"Round{number}" >> _Round(both_ways)
    # The labels of a pair's ends, where the rounds left them apart: (label, label).
    first_ends = ({"label": labels, "pair": pairs}
                  | "FirstEnds" >> beam.CoGroupByKey()
                  | "FirstLabel" >> beam.FlatMap(
                      lambda kv: ((second, kv[1]["label"][0]) for second in kv[1]["pair"])))
    pending = ({"label": labels, "first": first_ends}
               | "SecondEnds" >> beam.CoGroupByKey()
               | "Apart" >> beam.FlatMap(
                   lambda kv: ((first, kv[1]["label"][0]) for first in kv[1]["first"]
                               if first != kv[1]["label"][0]))
               | "OnceEach" >> beam.Distinct())
    if self.inc:
      pending = pending | "CountApart" >> beam.Map(
          lambda pair, inc: inc("near:labels_joined_after_rounds") or pair, self.inc)
    joined = (pending
              | "Remainder" >> beam.combiners.ToList()
              | "Join" >> beam.Map(_union_of_labels))
    return labels | "Final" >> beam.Map(
        lambda node_label, joined: (node_label[0], joined.get(node_label[1], node_label[1])),
        beam.pvalue.AsSingleton(joined))


class _Round(beam.PTransform):
  """One round: each node takes the smallest label among its own and its neighbours', then the
  smaller of that and its label's label."""

  def __init__(self, both_ways):
    super().__init__()
    self.both_ways = both_ways

  def expand(self, labels):
    def send(kv):
      node, grouped = kv
      label = grouped["label"][0]
      yield node, label
      for neighbour in grouped["next"]:
        yield neighbour, label
    spread = ({"label": labels, "next": self.both_ways}
              | "Send" >> beam.CoGroupByKey()
              | "ToNeighbours" >> beam.FlatMap(send)
              | "Smallest" >> beam.CombinePerKey(min))

    def answer(kv):
      label_node, grouped = kv
      label, count = grouped["label"][0], 0
      for count, asker in enumerate(grouped["asker"], 1):
        yield asker, label
      _record("label_askers", count)
    jumped = ({"label": spread,
               "asker": spread | "Ask" >> beam.Map(lambda node_label: node_label[::-1])}
              | "LabelsLabel" >> beam.CoGroupByKey()
              | "Answer" >> beam.FlatMap(answer))
    return ((spread, jumped)
            | "Both" >> beam.Flatten()
            | "Jumped" >> beam.CombinePerKey(min))


class JudgeNearDuplicates(beam.PTransform):
  """(order, split, signature) of every kept file -> the orders of the files removed, with
  judge's counters incremented through `inc(name, value=1)`."""

  def __init__(self, options: near_lib.Options, inc: Callable,
               group_limit: int = GROUP_LIMIT, rounds: int = ROUNDS):
    super().__init__()
    self.options, self.inc = options, inc
    self.group_limit, self.rounds = group_limit, rounds

  def expand(self, files):
    threshold, inc = self.options.threshold, self.inc
    files = files | "CountChecked" >> beam.Map(
        lambda file: inc(f"near:checked:{file[1]}") or file)
    # The buckets, of nodes alone (most files share none): which files have a pair to look
    # at, in which bands, and which buckets must be cut in blocks.
    shared = (files
              | "BucketEntries" >> beam.FlatMap(lambda file: (
                  (key, (file[0], file[1])) for key in near_lib.band_keys(file[2], threshold)))
              | "Buckets" >> beam.GroupByKey()
              | "SharedBuckets" >> beam.FlatMap(
                  _shared_bucket_members, self.group_limit).with_outputs("large", main="bands"))
    blocks_of = (shared.large
                 | "LargeBuckets" >> beam.combiners.ToList()
                 | "BlocksOfBucket" >> beam.Map(dict))
    # Then the signatures of those files alone, into the shared buckets' groups.
    pairs = ({"signature": files | "ByNode" >> beam.Map(
                  lambda file: ((file[0], file[1]), file[2].tobytes())),
              "bands": shared.bands}
             | "SignShared" >> beam.CoGroupByKey()
             | "Entries" >> beam.FlatMap(_block_entries, threshold,
                                         beam.pvalue.AsSingleton(blocks_of))
             | "Groups" >> beam.GroupByKey()
             | "Pairs" >> beam.FlatMap(_verified_pairs, threshold)
             | "OncePerPair" >> beam.Distinct())
    labels = pairs | "Clusters" >> Components(self.rounds, inc)
    _ = labels | "CountClusters" >> beam.Map(lambda node_label: (
        inc(f"near:clustered:{node_label[0][1]}"),
        node_label[0] == node_label[1] and inc("near:clusters")))
    contaminated = (pairs
                    | "HeldOutWithTrainTwin" >> beam.FlatMap(_held_out_with_train_twin)
                    | "Contaminated" >> beam.Distinct()
                    | "CountContaminated" >> beam.Map(
                        lambda node: inc(f"near:contaminated:{node[1]}") or node))
    removed = [contaminated]
    if self.options.mode == near_lib.DROP:
      removed.append(
          pairs
          | "TrainPairs" >> beam.Filter(lambda pair: pair[0][1] == pair[1][1] == TRAIN)
          | "TrainClusters" >> Components(self.rounds)
          | "AfterTheFirst" >> beam.FlatMap(
              lambda node_label: [node_label[0]] if node_label[0] != node_label[1] else []))
    return (removed
            | "Removed" >> beam.Flatten()
            | "CountRemoved" >> beam.Map(lambda node: (
                inc(f"near:removed:{node[1]}"), inc(f"skipped:{near_lib.SKIP_REASON}"),
                node[0])[-1]))
