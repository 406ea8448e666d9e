"""Near-duplicate files across a corpus: MinHash signatures, an LSH index, and what to drop.

Exact duplicates are caught by sha-256 (`flcc.plan_build`); this catches the rest: a vendored
copy with another header, a fork, generated variants. Two files are near-duplicates when the
Jaccard similarity of their sets of 5-token shingles (tokens split at whitespace), as
datasketch's MinHash estimates it from 128 hash values, is at least the threshold (0.85 by
default, as for The Stack). LSH bands (datasketch's MinHashLSH's) find the candidate pairs;
each is kept only if its estimate reaches the threshold.

The judgement comes after the split by repository, over every split at once:
  holdout  (default) every validation or test file with a near-duplicate in train is removed,
           so that no eval example has its twin in training;
  drop     also, of each group of near-duplicates within train, the first file in build order
           is kept and the others removed (The Stack's recipe);
  off      nothing is computed.

A file's signature depends on its bytes alone (seeded permutations, crc32 of tokens), so the
in-process and the Beam build judge the same pairs: `judge` decides in one process, and
beam_near_duplicates.py decides the same in a pipeline, on the bands and rule (`reaches`) here.
"""

import collections
import dataclasses
import functools
import zlib
from typing import Dict, Sequence, Set, Tuple

import numpy as np

HOLDOUT = "holdout"
DROP = "drop"
OFF = "off"
MODES = (HOLDOUT, DROP, OFF)
SKIP_REASON = "near-duplicate"  # what the build report counts the removed files under
DEFAULT_THRESHOLD = 0.85
SHINGLE_TOKENS = 5
NUM_PERM = 128
SEED = 1
SCHEME = "affine32"  # datasketch's: hash values are uint32, permutations a * h + b mod 2^32
# The LSH bands are chosen so that a pair exactly at the threshold becomes a candidate with
# at least this probability (datasketch's own choice weighs misses and false candidates
# alike: 0.46 at 0.85); the estimate then decides.
CANDIDATE_RECALL = 0.99
_SPLITS = ("train", "validation", "test")  # flcc.SPLITS (flcc imports this module)
_HELD_OUT = _SPLITS[1:]


@dataclasses.dataclass(frozen=True)
class Options:
  mode: str = HOLDOUT
  threshold: float = DEFAULT_THRESHOLD

  @property
  def on(self) -> bool:
    return self.mode != OFF


def shingle_hashes(content: bytes) -> np.ndarray:
  """The distinct 32-bit hashes of a file's shingles: every run of SHINGLE_TOKENS
  whitespace-separated tokens (the whole file when it has fewer)."""
  words = content.split()
  tokens = np.fromiter(map(zlib.crc32, words), np.uint32, len(words)).astype(np.uint64)
  count = len(tokens) - SHINGLE_TOKENS + 1
  if count < 1:
    if not len(tokens):
      return np.zeros(0, np.uint32)
    tokens, count = np.concatenate([tokens, np.zeros(SHINGLE_TOKENS - len(tokens), np.uint64)]), 1
  shingles = tokens[:count].copy()
  for offset in range(1, SHINGLE_TOKENS):  # a polynomial of the tokens' crc32s, mod 2^64
    shingles *= np.uint64(0x100000001B3)
    shingles += tokens[offset:offset + count]
  return np.unique((shingles ^ (shingles >> np.uint64(32))).astype(np.uint32))


@functools.lru_cache(maxsize=None)
def _datasketch():
  """datasketch, imported when first needed: it takes 0.4 s (SciPy), which a build with
  --near_duplicates=off and every other command do not pay."""
  import datasketch  # pylint: disable=g-import-not-at-top
  from datasketch import minhash  # pylint: disable=g-import-not-at-top
  permutations = datasketch.MinHash(num_perm=NUM_PERM, seed=SEED, scheme=SCHEME).permutations
  # pylint: disable-next=protected-access
  return datasketch, minhash._fmix, permutations


def signature(content: bytes) -> np.ndarray:
  """The MinHash of a file's shingles: exactly what datasketch's `MinHash(num_perm=128,
  seed=1, scheme='affine32').update_batch(shingle_hashes(content))` holds (hashfunc=int),
  with the per-value Python call of update_batch left out (tests/test_repositories.py
  compares them; update_batch took 1.1-2.1 s for 5,000 files of 7 KB, this 0.7 s)."""
  hashes = shingle_hashes(content)
  if not len(hashes):
    return np.full(NUM_PERM, np.iinfo(np.uint32).max, np.uint32)
  _, fmix, (a, b) = _datasketch()
  mixed = fmix(hashes, 32)
  permuted = np.multiply.outer(a, mixed)  # one row per permutation: the fastest min here
  permuted += b[:, None]
  return permuted.min(axis=1)


def as_minhash(values: np.ndarray):
  datasketch, _, permutations = _datasketch()
  return datasketch.MinHash(hashvalues=values, permutations=permutations, seed=SEED,
                            scheme=SCHEME)


def exact_jaccard(a: bytes, b: bytes) -> float:
  """The Jaccard similarity of two files' shingle sets, for checks and measurements."""
  x, y = shingle_hashes(a), shingle_hashes(b)
  union = len(np.union1d(x, y))
  return len(np.intersect1d(x, y)) / union if union else 1.0


def lsh_bands(threshold: float, num_perm: int = NUM_PERM) -> Tuple[int, int]:
  """(bands, rows) of the LSH index: the most rows per band (the fewest chance candidates)
  that still make a pair at `threshold` a candidate with probability CANDIDATE_RECALL."""
  for rows in range(num_perm, 0, -1):
    bands = num_perm // rows
    if 1 - (1 - threshold ** rows) ** bands >= CANDIDATE_RECALL:
      return bands, rows
  return num_perm, 1


def band_slices(threshold: float) -> Tuple[slice, ...]:
  """The LSH bands of a signature: lsh_bands' `rows` values each, as datasketch's MinHashLSH
  cuts them. Two files are a candidate pair when all the values of one band are equal."""
  bands, rows = lsh_bands(threshold)
  return tuple(slice(band * rows, (band + 1) * rows) for band in range(bands))


def band_keys(values: np.ndarray, threshold: float) -> Tuple[Tuple[int, bytes], ...]:
  """A signature's bucket in each band, as (band, its values' bytes): the Beam build groups
  files on these (beam_near_duplicates); `_near_pairs` groups on the same slices."""
  return tuple((band, values[cut].tobytes()) for band, cut in enumerate(band_slices(threshold)))


def reaches(equal_values, threshold: float):
  """Whether a candidate pair is a near-duplicate: datasketch's MinHash.jaccard estimate (the
  share of the NUM_PERM values that are equal) at least `threshold`. Counts or an array."""
  return equal_values >= threshold * NUM_PERM


def _near_pairs(signatures: Sequence[np.ndarray], threshold: float) -> np.ndarray:
  """Every pair (i, j), i < j, that shares a bucket of some band (band_slices) and whose
  estimate reaches `threshold`, as an array of shape (pairs, 2), sorted."""
  matrix = np.stack(signatures) if len(signatures) else np.zeros((0, NUM_PERM), np.uint32)
  firsts, seconds = [], []
  upper = functools.lru_cache(maxsize=None)(lambda count: np.triu_indices(count, 1))
  for cut in band_slices(threshold):
    band = np.ascontiguousarray(matrix[:, cut])
    # One bucket a distinct row of the band: its values' bytes, compared as one void scalar.
    _, buckets, counts = np.unique(band.view(np.dtype((np.void, band.shape[1] * 4))).ravel(),
                                   return_inverse=True, return_counts=True)
    members = np.argsort(buckets, kind="stable")  # files by bucket, each bucket's in order
    starts = np.concatenate([[0], np.cumsum(counts)])
    for bucket in np.flatnonzero(counts > 1):
      keys = members[starts[bucket]:starts[bucket + 1]]
      i, j = upper(len(keys))
      firsts.append(keys[i])
      seconds.append(keys[j])
  if not firsts:
    return np.zeros((0, 2), np.int64)
  count = len(signatures)  # each pair as one number: np.unique of rows sorts far slower
  keys = np.unique(np.concatenate(firsts).astype(np.int64) * count + np.concatenate(seconds))
  pairs = np.stack([keys // count, keys % count], axis=1)
  equal = np.empty(len(pairs), np.int64)
  for start in range(0, len(pairs), 65536):  # a chunk of pairs at a time
    chunk = pairs[start:start + 65536]
    equal[start:start + len(chunk)] = np.count_nonzero(
        matrix[chunk[:, 0]] == matrix[chunk[:, 1]], axis=1)
  return pairs[reaches(equal, threshold)]


class Verdict:
  """What `judge` decided: the keys removed and the counts the report gives."""

  def __init__(self):
    self.removed: Set = set()
    self.counters = collections.Counter()


def components(count: int, pairs: np.ndarray) -> np.ndarray:
  """Each of `count` items' component, named by its smallest member (the first in build
  order), over the edges `pairs`."""
  from scipy.sparse import coo_matrix  # pylint: disable=g-import-not-at-top
  from scipy.sparse.csgraph import connected_components  # pylint: disable=g-import-not-at-top
  graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(count, count))
  _, labels = connected_components(graph, directed=False)
  first = np.full(labels.max() + 1 if count else 0, count, np.int64)
  np.minimum.at(first, labels, np.arange(count))
  return first[labels]


def judge(files: Sequence[Tuple[str, object, np.ndarray]], options: Options) -> Verdict:
  """Near-duplicates among `files`, (split, key, signature) in build order.

  Counters (flat names, as the Beam build's metrics are): `skipped:near-duplicate` (all
  removed files, as the report counts every skip), `near:clusters`,
  `near:clustered:<split>` (files with a near-duplicate anywhere), `near:contaminated:<split>`
  (validation or test files with a near-duplicate in train, before), `near:removed:<split>`,
  `near:contaminated_after:<split>` and `near:checked:<split>` (files judged)."""
  verdict = Verdict()
  splits = np.array([_SPLITS.index(split) for split, _, _ in files], np.int64)
  for number, split in enumerate(_SPLITS):
    verdict.counters[f"near:checked:{split}"] = int(np.count_nonzero(splits == number))
  if not files:
    return verdict
  pairs = _near_pairs([values for _, _, values in files], options.threshold)
  roots = components(len(files), pairs)
  sizes = np.bincount(roots, minlength=len(files))
  verdict.counters["near:clusters"] = int(np.count_nonzero(sizes > 1))
  in_cluster = sizes[roots] > 1
  train = splits == 0

  def with_train_twin(keep):
    """Held-out files with a near-duplicate among the train files in `keep`."""
    marked = np.zeros(len(files), bool)
    for a, b in ((0, 1), (1, 0)):
      held_out, twin = pairs[:, a], pairs[:, b]
      hit = train[twin] & ~train[held_out] & keep[twin]
      marked[held_out[hit]] = True
    return marked & keep
  everything = np.ones(len(files), bool)
  contaminated = with_train_twin(everything)
  removed = contaminated.copy() if options.mode in (HOLDOUT, DROP) else np.zeros_like(train)
  if options.mode == DROP:
    within_train = pairs[train[pairs[:, 0]] & train[pairs[:, 1]]]
    removed |= train & (components(len(files), within_train) != np.arange(len(files)))
  contaminated_after = with_train_twin(~removed)
  for number, split in enumerate(_SPLITS):
    of_split = splits == number
    verdict.counters[f"near:clustered:{split}"] = int(np.count_nonzero(in_cluster & of_split))
    verdict.counters[f"near:removed:{split}"] = int(np.count_nonzero(removed & of_split))
    if split != "train":
      verdict.counters[f"near:contaminated:{split}"] = int(
          np.count_nonzero(contaminated & of_split))
      verdict.counters[f"near:contaminated_after:{split}"] = int(
          np.count_nonzero(contaminated_after & of_split))
  verdict.counters[f"skipped:{SKIP_REASON}"] = int(np.count_nonzero(removed))
  verdict.removed = {files[number][1] for number in np.flatnonzero(removed)}
  return verdict


def report(options: Options, counters) -> dict:
  """The report's `near_duplicates` entry, from `judge`'s counters (summed, in Beam)."""
  if not options.on:
    return {"mode": OFF}
  by_split = lambda name, splits=_SPLITS: {s: counters[f"near:{name}:{s}"] for s in splits}
  checked = by_split("checked")
  return {
      "mode": options.mode,
      "threshold": options.threshold,
      "clusters": counters["near:clusters"],
      "files_in_clusters": by_split("clustered"),
      "removed": by_split("removed"),
      "contamination_before": {
          s: _share(counters[f"near:contaminated:{s}"], checked[s]) for s in _HELD_OUT},
      "contamination_after": {
          s: _share(counters[f"near:contaminated_after:{s}"],
                    checked[s] - counters[f"near:removed:{s}"]) for s in _HELD_OUT},
      "contaminated_before": by_split("contaminated", _HELD_OUT),
      "checked": checked,
  }


def _share(part: int, whole: int) -> float:
  return round(part / whole, 4) if whole else 0.0


def report_lines(entry: dict) -> Dict[str, str]:
  """The report's near-duplicate entry as the CLI prints it: one line per key."""
  if entry.get("mode", OFF) == OFF:
    return {"near_duplicates": "off"}
  splits = lambda counts: ", ".join(f"{s} {n}" for s, n in counts.items())
  clustered = entry["files_in_clusters"]
  contamination = "; ".join(
      f"{s} {100 * entry['contamination_before'][s]:.1f}% ({entry['contaminated_before'][s]} "
      f"of {entry['checked'][s]}) before, {100 * entry['contamination_after'][s]:.1f}% after"
      for s in _HELD_OUT)
  return {
      "near_duplicates": (f"{entry['mode']}, Jaccard >= {entry['threshold']:g}: "
                          f"{entry['clusters']} clusters of {sum(clustered.values())} files "
                          f"({splits(clustered)})"),
      "near_duplicates_removed": splits(entry["removed"]),
      "contamination": contamination,
  }
