"""Benchmark of the worst cases a hostile input can force on work that has a stated bound.

  1. A suggestion's copy rules on a file made to be slow: 4,096 earlier lines, alike but for a
     few characters, of each --widths characters; copy-next (`copy_next_line`) and the
     consensus of two model lines with the two copies (`consensus_line`). Bounded by
     code_t5_session.lines.MAX_COMPARISONS and MAX_LINE_CHARS.
  2. The tree writer on --collisions files of one name and one commit time (each takes the
     next free second, as FLCC names them).

Prints min / median / max seconds over --runs runs of each.

  .venv/bin/python scripts/bench_hostile.py --widths=100,200,1000,4000 --collisions=8000,100000
"""

import argparse
import random
import statistics
import tempfile
import time

from code_t5.data import tree_writer
from code_t5_session import lines


def alike_lines(width: int, count: int = lines.MAX_LINES, seed: int = 0) -> str:
  """`count` lines of `width` characters, each the same but for 5 characters among the first
  MAX_LINE_CHARS (the part compared), then the start of one more: every place of copy-next is
  as alike as the next, so no bound prunes it."""
  rng = random.Random(seed)
  base = "".join(rng.choice("abcdefgh ") for _ in range(width))
  rows = []
  for _ in range(count):
    row = list(base)
    for _ in range(5):
      row[rng.randrange(3, min(width, lines.MAX_LINE_CHARS))] = rng.choice("xyz")
    rows.append("".join(row))
  return "\n".join(rows) + "\n" + base[:3]


def timed(fn, runs):
  seconds = []
  for _ in range(runs):
    start = time.perf_counter()
    fn()
    seconds.append(time.perf_counter() - start)
  return min(seconds), statistics.median(seconds), max(seconds)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--widths", default="100,200,1000,4000")
  parser.add_argument("--collisions", default="8000,100000")
  parser.add_argument("--runs", type=int, default=5)
  args = parser.parse_args()
  print(f"{'case':<58}{'min':>9}{'median':>9}{'max':>9}  (seconds)")
  for width in map(int, filter(None, args.widths.split(","))):
    prefix = alike_lines(width)
    row = prefix.rsplit("\n", 2)[-2]
    for name, fn in [("copy-next", lambda: lines.copy_next_line(prefix)),
                     ("consensus line", lambda: lines.consensus_line(
                         prefix, [row[3:], row[3:-1] + "q"], [-1.0, -2.0]))]:
      low, mid, high = timed(fn, args.runs)
      print(f"{f'{name}, 4,096 alike lines of {width} characters':<58}"
            f"{low:>9.3f}{mid:>9.3f}{high:>9.3f}")
  for count in map(int, filter(None, args.collisions.split(","))):
    files = [(f"dir{i}/same.py", b"x = 1\n", 1795370000) for i in range(count)]

    def write():
      with tempfile.TemporaryDirectory() as root:
        tree_writer.write_repository(root, "a", "r", "0" * 40, files, "")
    low, mid, high = timed(write, min(args.runs, 3))
    print(f"{f'tree writer, {count} files of one name and time':<58}"
          f"{low:>9.3f}{mid:>9.3f}{high:>9.3f}")


if __name__ == "__main__":
  main()
