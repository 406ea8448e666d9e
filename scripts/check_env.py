"""Checks what `make venv` installed: the pins that matter, and one owner of tensorflow_datasets."""

import importlib.metadata as md
import sys

EXPECTED = {"tensorflow": "2.15.1", "t5": "0.9.4", "mesh-tensorflow": "0.1.21",
            "seqio-nightly": "0.0.18.dev20250227", "tensorflow-datasets": "4.9.4",
            "sentencepiece": "0.2.0", "gin-config": "0.5.0"}


def main() -> int:
  problems = []
  for name, version in EXPECTED.items():
    try:
      found = md.version(name)
    except md.PackageNotFoundError:
      found = None
    if found != version:
      problems.append(f"{name}: want {version}, found {found}")
  try:
    problems.append(f"tfds-nightly {md.version('tfds-nightly')} is installed next to "
                    "tensorflow-datasets; both own the module tensorflow_datasets")
  except md.PackageNotFoundError:
    pass
  for problem in problems:
    print(f"check_env: {problem}", file=sys.stderr)
  if not problems:
    print("check_env: ok (" + ", ".join(f"{k} {v}" for k, v in EXPECTED.items()) + ")")
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
