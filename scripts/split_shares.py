"""Each split's files and repositories for an FLCC tree: drawn by hash (every build before
splits were balanced, and large trees now) and as a build splits it now.

  .venv/bin/python scripts/split_shares.py --flcc_dir=PATH [--language=python] [--ratios=...]

Reads every file once, as a build's plan does (filters and de-duplication included), and
writes nothing.
"""

import argparse
import os

from code_t5.data import flcc


def plan(flcc_dir, language, ratios, hash_from):
  saved, flcc.HASH_SPLITS_FROM_REPOSITORIES = flcc.HASH_SPLITS_FROM_REPOSITORIES, hash_from
  try:
    return flcc.plan_build(flcc_dir, language, ratios)
  finally:
    flcc.HASH_SPLITS_FROM_REPOSITORIES = saved


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--flcc_dir", required=True)
  parser.add_argument("--language", default="python")
  parser.add_argument("--ratios", default=flcc.ratios_text(flcc.DEFAULT_RATIOS))
  args = parser.parse_args()
  ratios = tuple(float(r) for r in args.ratios.split(","))
  plans = [("hash", plan(args.flcc_dir, args.language, ratios, 0)),
           ("now", plan(args.flcc_dir, args.language, ratios, flcc.HASH_SPLITS_FROM_REPOSITORIES))]
  repositories = len(plans[0][1].split_of_repository)
  print(f"{args.flcc_dir}: {repositories} repositories, {args.language}, ratios {args.ratios}; "
        f"a build now splits it by {plans[1][1].split_method}")
  print(f"{'method':<10}{'split':<12}{'files':>7}{'share':>8}{'repos':>7}")
  for name, p in plans:
    report = p.report()
    total = sum(s["files"] for s in report["splits"].values())
    label = p.split_method if name == "now" else "hash"
    for split, counts in report["splits"].items():
      print(f"{label:<10}{split:<12}{counts['files']:>7}{100 * counts['files'] / total:>7.1f}%"
            f"{counts['repositories']:>7}")
    for warning in report["warnings"]:
      print(f"  {label}: warning: {warning}")


if __name__ == "__main__":
  os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
  main()
