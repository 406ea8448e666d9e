"""Checks what `make venv` installed: the pins that matter, one owner of tensorflow_datasets,
and protobuf's compiled runtime."""

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
  # protobuf's pure-Python runtime works, slowly: TF serializes every graph through it (the
  # tiny model's start-up took 6 s longer, a 32-slice mesh two minutes longer).
  from google.protobuf.internal import api_implementation  # pylint: disable=g-import-not-at-top
  if api_implementation.Type() == "python":
    problems.append(f"protobuf {md.version('protobuf')} runs its pure-Python implementation; "
                    "the lock's protobuf 4 has a compiled one")
  for problem in problems:
    print(f"check_env: {problem}", file=sys.stderr)
  if not problems:
    print("check_env: ok (" + ", ".join(f"{k} {v}" for k, v in EXPECTED.items()) + ")")
  return 1 if problems else 0


if __name__ == "__main__":
  sys.exit(main())
