"""python -m code_t5.data {build,vocab,dev}: from an FLCC tree to a TFDS dataset and vocabulary.

  build  FLCC v3 tree (or a published archive of one, or a folder of your own repositories:
         --repos_dir) -> `flcc/<language>` in the TFDS data dir, with a filter/split report;
         near-duplicates of train files are taken out of validation and test
  vocab  train split of `flcc/<language>` -> sentencepiece model in the same data dir;
         `--languages=a,b,...`: one model shared by several built languages
  dev    the interpreter's standard library (with --source=environment, and the installed
         packages beside it; with --language=cpp, Abseil's C++ headers from the TensorFlow
         wheel; --language=java, a JDK's sources as Debian ships them; --language=javascript,
         pinned npm packages; with --repos_dir, your own repositories) as an FLCC tree, then
         build + vocab

Every step can be rerun after an interruption: finished outputs are reused, unfinished ones
were never renamed into place.
"""

import argparse
import hashlib
import json
import logging
import os
import sys
from typing import Optional

from code_t5 import errors
from code_t5 import files
from code_t5 import vocabulary
from code_t5.data import archive as archive_lib
from code_t5.data import flcc
from code_t5.data import near_duplicates
from code_t5.data import registry_sources
from code_t5.data import repositories
from code_t5.data import tree_writer
from code_t5.data import vocab as vocab_lib

DEFAULT_DEV_ROOT = os.path.join("data", "dev")
DEV_VOCAB_SIZE = 4096
DEV_RATIOS = (0.7, 0.15, 0.15)


class UsageError(Exception):
  pass


def _ratios(text):
  try:
    ratios = tuple(float(x) for x in text.split(","))
  except ValueError:
    raise argparse.ArgumentTypeError(f"not numbers: {text!r}") from None
  if len(ratios) != 3 or abs(sum(ratios) - 1) > 1e-6 or min(ratios) < 0:
    raise argparse.ArgumentTypeError(
        f"need train,validation,test ratios summing to 1, got {text!r}")
  return ratios


def _positive_int(text):
  try:
    value = int(text)
  except ValueError:
    value = 0
  if value < 1:
    raise argparse.ArgumentTypeError(f"need a whole number of 1 or more, got {text!r}")
  return value


def _jaccard(text):
  try:
    value = float(text)
  except ValueError:
    value = -1.0
  if not 0 < value <= 1:
    raise argparse.ArgumentTypeError(f"need a Jaccard similarity in (0, 1], got {text!r}")
  return value


def _language(text):
  try:
    return flcc.canonical_language(text)
  except flcc.FlccFormatError as e:
    raise argparse.ArgumentTypeError(str(e)) from None


def _languages(text):
  languages = [_language(part) for part in text.split(",") if part.strip()]
  if len(set(languages)) < 2:
    raise argparse.ArgumentTypeError(f"a shared vocabulary needs two languages or more: {text!r}")
  return languages


REPOS_DIR_HELP = (
    "a local folder of your own repositories (git checkouts need local disk; not gs://): "
    "each git repository under it, checkout or bare clone, is one repository (its HEAD, with "
    "file times and METADATA from git log), each folder holding none is one repository of "
    "its files; a broken one is named, skipped and counted")
LANGUAGE_HELP = ("ours (python, cpp, csharp, ...) or the tree's own spelling "
                 "(Python, C++, C#, JavaScript, ...), any case")


def _print_report(report: dict, command: str) -> None:
  report = dict(report)
  lines = near_duplicates.report_lines(report.pop("near_duplicates", {}))
  warnings = report.pop("warnings", ())
  report.update(lines)
  report["warnings"] = warnings
  width = max(len(k) for k in report)
  for key, value in report.items():
    if key == "splits":
      for split, counts in value.items():
        print(f"  {split:<{width}}  " + "  ".join(f"{k}={v}" for k, v in counts.items()))
    elif key not in ("options", "fingerprint", "warnings"):  # in the JSON report only
      print(f"  {key:<{width}}  {value}")
  sys.stdout.flush()
  for warning in report.get("warnings", ()):
    print(f"code_t5.data {command}: warning: {warning}", file=sys.stderr)


def _require_local(path: str, why: str) -> None:
  """A path that TF's file layer cannot stand in for (tar, git's trees, the tree reader)."""
  if not files.is_local(path):
    raise UsageError(f"{path}: {why}")


def _repositories_tree(repos_dir: str, tree_dir: str, max_file_bytes: int) -> str:
  """Writes (or reuses) the FLCC tree of a folder of repositories; prints what it holds."""
  _require_local(repos_dir, "repositories are read from local checkouts (git runs on them); "
                 "clone or copy them here first")
  manifest = repositories.write_tree(repos_dir, tree_dir, max_file_bytes)
  print(f"{'reused' if manifest['reused'] else 'wrote'} the FLCC tree of {repos_dir} in "
        f"{tree_dir}: {repositories.summary(manifest)}")
  return tree_dir


def default_workers(options) -> int:
  """--workers unless given: a signature costs a file about 5 times its read and filters
  (docs/BENCHMARK_LOG.md, "Near-duplicates"), so then the plan is spread over the CPUs; else one
  process, as reads alone did not pay for a second (docs/BENCHMARK_LOG.md, "Build")."""
  return min(os.cpu_count() or 1, 4) if options.near_duplicates.on else 1


def _download_dir(args, why: str) -> str:
  """--download_dir, else DATA_DIR/downloads: local, as `why` says."""
  downloads = args.download_dir or os.path.join(args.data_dir, "downloads")
  _require_local(downloads, f"{why}; give --download_dir=<a local directory> (--data_dir may "
                 "stay where it is)")
  return downloads


def cmd_build(args) -> dict:
  from code_t5.data import builder  # pylint: disable=g-import-not-at-top  (imports TF)
  provenance = {}
  if args.command == "build" and args.repos_dir:  # (dev has written its tree already)
    downloads = _download_dir(args, "the FLCC tree of --repos_dir is written on local disk")
    args.flcc_dir = _repositories_tree(args.repos_dir, os.path.join(
        downloads, "repositories-" + hashlib.sha1(
            os.path.abspath(args.repos_dir).encode("utf-8")).hexdigest()[:12]),
        args.max_file_bytes)
  if getattr(args, "archive", None):
    downloads = _download_dir(args, "an archive is downloaded and extracted on local disk, "
                              "where its FLCC tree is read")
    args.flcc_dir, provenance = archive_lib.fetch(
        args.archive, downloads, args.archive_sha256,
        archive_lib.Limits(args.max_member_bytes, args.max_extracted_bytes))
  options = builder.BuildOptions(
      ratios=args.ratios, holdout_prefixes=args.holdout_prefixes,
      filters=flcc.Filters(args.max_line_length, args.max_file_bytes),
      archive=provenance.get("archive", ""), archive_sha256=provenance.get("sha256", ""),
      strict=args.strict,
      near_duplicates=near_duplicates.Options(args.near_duplicates, args.near_duplicate_threshold))
  # `dev --overwrite` retrains the vocabulary only; `build --overwrite` replaces the dataset.
  replace = args.command == "build" and args.overwrite
  report = builder.build(args.flcc_dir, args.data_dir, args.language, options,
                         beam_runner=args.beam_runner, beam_flags=args.beam_options.split(),
                         overwrite=replace, workers=args.workers or default_workers(options))
  vocab = vocabulary.vocab_path(args.data_dir, args.language)
  if replace and files.exists(vocab):
    print(f"note: {vocab} was trained on the dataset this build replaced; "
          f"`python -m code_t5.data vocab --overwrite` retrains it")
  print(f"flcc/{args.language} in {args.data_dir}:")
  _print_report(report, args.command)
  print(f"report: {builder.report_path(args.data_dir, args.language)}")
  return report


def _split_texts(data_dir, language, split):
  import tensorflow_datasets as tfds  # pylint: disable=g-import-not-at-top
  from code_t5.data import builder  # pylint: disable=g-import-not-at-top
  flcc_builder = builder.finished_builder(data_dir, language)
  if flcc_builder is None:
    raise UsageError(f"{builder.builder_dir(data_dir, language)}: dataset not built; run "
                     f"`python -m code_t5.data build --data_dir={data_dir} --language={language}` first")
  if split not in flcc_builder.info.splits:
    return
  for example in tfds.as_numpy(flcc_builder.as_dataset(split=split)):
    yield example["content"].decode("utf-8")


def _train_texts(data_dir, language):
  from tqdm import tqdm  # pylint: disable=g-import-not-at-top
  return list(tqdm(_split_texts(data_dir, language, "train"), unit=" files", mininterval=1,
                   desc=f"read flcc/{language} train split"))


def _chars_per_token_text(processor, data_dir, language):
  from code_t5.data import builder  # pylint: disable=g-import-not-at-top
  cpt = vocab_lib.chars_per_token(processor, _split_texts(data_dir, language, "validation"))
  if cpt:
    return f"{cpt:.2f} characters per token on validation"
  return (f"no validation split to measure on "
          f"({builder.missing_split_message(data_dir, language, 'validation')})")


def _pieces_text(processor, asked: Optional[int] = None) -> str:
  """"N pieces", and where a training just run stopped below the size asked, why: a small
  corpus (a language with little data) has fewer distinct pieces, and sentencepiece stops
  there (vocab.train_sentencepiece) rather than fail."""
  size = processor.GetPieceSize()
  if asked and size < asked:
    return (f"{size} pieces ({asked} asked: the training text holds no more; a model reads "
            f"the vocabulary's own size)")
  return f"{size} pieces"


def cmd_vocab(args) -> None:
  if getattr(args, "languages", None):  # `dev` trains one language's
    cmd_shared_vocab(args)
    return
  path = vocabulary.vocab_path(args.data_dir, args.language)
  asked = None
  if files.exists(path) and not args.overwrite:
    print(f"vocabulary exists: {path} (--overwrite to retrain)")
  else:
    texts = _train_texts(args.data_dir, args.language)
    print(f"training sentencepiece ({args.vocab_size} pieces) on {len(texts)} files ...")
    vocabulary.save(path, vocab_lib.train_sentencepiece(texts, args.vocab_size))
    asked = args.vocab_size
  processor = vocabulary.load_processor(path)
  print(f"vocabulary: {path}: {_pieces_text(processor, asked)}, "
        + _chars_per_token_text(processor, args.data_dir, args.language))


def cmd_shared_vocab(args) -> None:
  """One vocabulary over several built languages, each sampled to the same characters."""
  languages = sorted(set(args.languages))
  path = vocabulary.vocab_path(args.data_dir, vocabulary.SHARED)
  sampling = vocab_lib.sampling_path(args.data_dir)
  trained_on, asked = languages, None
  if files.exists(path) and not args.overwrite:
    trained_on = sorted(json.loads(files.read_text(sampling))["languages"])
    if trained_on != languages:
      raise UsageError(f"{path} was trained on {', '.join(trained_on)}; --overwrite retrains "
                       f"it on {', '.join(languages)}")
    print(f"vocabulary exists: {path} (--overwrite to retrain)")
  else:
    texts, record = vocab_lib.balanced_sample(
        {language: _train_texts(args.data_dir, language) for language in languages})
    print(f"training sentencepiece ({args.vocab_size} pieces) on "
          f"{record['chars_per_language']} characters of each of {', '.join(languages)} ...")
    # The record first: the model's presence is what says the vocabulary is finished.
    vocab_lib.save_sampling(args.data_dir, record)
    vocabulary.save(path, vocab_lib.train_sentencepiece(texts, args.vocab_size))
    asked = args.vocab_size
  processor = vocabulary.load_processor(path)
  print(f"vocabulary: {path}: {_pieces_text(processor, asked)}, shared by "
        f"{', '.join(trained_on)} (sample: {sampling})")
  width = max(map(len, trained_on))
  for language in trained_on:
    own_path = vocabulary.vocab_path(args.data_dir, language)
    own = (f"; its own vocabulary: "
           f"{_chars_per_token_text(vocabulary.load_processor(own_path), args.data_dir, language)}"
           if files.exists(own_path) else "")
    print(f"  {language:<{width}}  "
          f"{_chars_per_token_text(processor, args.data_dir, language)}{own}")


def dev_tree_dir(root: str, language: str) -> str:
  """ROOT/flcc for Python (where it always was), ROOT/flcc_<language> for the others: each
  dev tree is written whole and renamed into place, so each language has its own."""
  return os.path.join(root, "flcc" if language == "python" else f"flcc_{language}")


def dev_source(args) -> str:
  """The dev source `dev` writes: --source, else --language's first (DEV_SOURCES); sets
  args.language to its language and args.root to data/dev (a language's first source) or
  data/dev_<source> unless given, so that each source has its own data dir. With --repos_dir:
  "repos", --language as given (python by default), data/dev_repos."""
  language = args.language or "python"
  if args.repos_dir:
    if args.source:
      raise UsageError("--source and --repos_dir both name the code to write: give one")
    args.language = language
    args.root = args.root or f"{DEFAULT_DEV_ROOT}_repos"
    return "repos"
  source = args.source or tree_writer.default_dev_source(language)
  if source is None:
    raise UsageError(f"no dev tree for {language}: dev writes "
                     + ", ".join(f"{name} ({s.language}: {s.what})"
                                 for name, s in tree_writer.DEV_SOURCES.items())
                     + "; build other languages from an FLCC tree with `build`")
  source_language = tree_writer.DEV_SOURCES[source].language
  if args.language and args.language != source_language:
    raise UsageError(f"--source={source} is {source_language} code, not {args.language}")
  args.language = source_language
  if args.root is None:
    args.root = (DEFAULT_DEV_ROOT if source == tree_writer.default_dev_source(source_language)
                 else f"{DEFAULT_DEV_ROOT}_{source}")
  return source


def cmd_dev(args) -> None:
  source = dev_source(args)
  _require_local(args.root, "the dev tree is written and read on local disk; give a local "
                 "--root (--data_dir may be gs://)")
  if args.jdk_src:
    _require_local(args.jdk_src, "a JDK's src.zip is unpacked from local disk (as an archive "
                   "is); copy it here first")
  flcc_dir = dev_tree_dir(args.root, args.language)
  args.data_dir = args.data_dir or os.path.join(args.root, "tfds")
  if source == "repos":
    _repositories_tree(args.repos_dir, flcc_dir, args.max_file_bytes)
  elif files.isdir(os.path.join(flcc_dir, "v3")):
    print(f"dev tree exists: {flcc_dir}")
  else:
    print(f"writing {tree_writer.DEV_SOURCES[source].what} as an FLCC v3 tree to {flcc_dir} ...")
    options = tree_writer.SourceOptions(
        downloads=os.path.join(args.root, "downloads"), jdk_src=args.jdk_src,
        npm_registry=args.npm_registry)
    tree_writer.write_dev_tree(flcc_dir, max_files=args.max_files, source=source,
                               options=options)
    for reason, count in sorted(options.left_out.items()):
      print(f"  {count} files {reason}")
  args.flcc_dir = flcc_dir
  try:
    cmd_build(args)
  except flcc.BuildMismatchError as e:  # dev --overwrite retrains the vocabulary only
    raise flcc.BuildMismatchError(
        str(e).replace("--overwrite replaces it", "replace it with `python -m code_t5.data "
                       f"build --flcc_dir={flcc_dir} --data_dir={args.data_dir} --language="
                       f"{args.language} --ratios={flcc.ratios_text(args.ratios)} --overwrite`, "
                       "then `dev --overwrite` retrains its vocabulary")) from None
  cmd_vocab(args)


def _add_build_flags(parser, need_source, ratios=flcc.DEFAULT_RATIOS):
  if need_source:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--flcc_dir", help="FLCC v3 tree: the folder holding v3/, or v3/ "
                        "itself; a local path or gs://")
    source.add_argument("--archive",
                        help="a published FLCC archive (.tar.gz/.zip), local path or http(s) "
                             "URL; downloads resume, extraction goes to --download_dir")
    source.add_argument("--repos_dir", help=REPOS_DIR_HELP)
    parser.add_argument("--download_dir", default=None,
                        help="local directory for an --archive's download and extracted tree, "
                             "or the tree written from --repos_dir (default: "
                             "DATA_DIR/downloads; give one when DATA_DIR is gs://)")
    parser.add_argument("--archive_sha256", default=None,
                        help="fail unless the archive has this sha-256")
    parser.add_argument("--max_member_bytes", type=_positive_int,
                        default=archive_lib.Limits.max_member_bytes,
                        help="refuse an --archive with a member that unpacks to more bytes")
    parser.add_argument("--max_extracted_bytes", type=_positive_int,
                        default=archive_lib.Limits.max_extracted_bytes,
                        help="refuse an --archive that unpacks to more bytes in all")
  parser.add_argument("--language", default="python", type=_language, help=LANGUAGE_HELP)
  parser.add_argument("--strict", action="store_true",
                      help="stop at a malformed repository instead of skipping and counting it")
  parser.add_argument("--ratios", type=_ratios, default=ratios,
                      help="train,validation,test shares of repositories")
  parser.add_argument("--holdout_prefixes", default="",
                      help="old dev-set recipe: repositories whose name starts with one of "
                           "these letters are validation/test, all others train")
  parser.add_argument("--max_line_length", type=int, default=flcc.Filters.max_line_length,
                      help="skip files with a longer line (characters)")
  parser.add_argument("--max_file_bytes", type=int, default=flcc.Filters.max_file_bytes)
  parser.add_argument("--near_duplicates", choices=near_duplicates.MODES,
                      default=near_duplicates.HOLDOUT,
                      help="after the split: holdout removes every validation and test file "
                           "with a near-duplicate in train; drop also keeps one file of each "
                           "group of near-duplicates within train; off judges none")
  parser.add_argument("--near_duplicate_threshold", type=_jaccard,
                      default=near_duplicates.DEFAULT_THRESHOLD,
                      help="Jaccard similarity of 5-token shingles (MinHash's estimate) at "
                           "which two files are near-duplicates")
  parser.add_argument("--workers", type=_positive_int, default=None,
                      help="processes that read, filter and sign the tree in a build without "
                           "Beam; the dataset is the same for any number. Default: the CPUs "
                           "(at most 4) while near-duplicates are judged (their signatures are "
                           "most of a build), else 1")
  parser.add_argument("--beam_runner", default=None,
                      help="build with Apache Beam on this runner (DirectRunner here; "
                           "DataflowRunner, FlinkRunner... for the 500 GB parts)")
  parser.add_argument("--beam_options", default="",
                      help="Beam pipeline flags, space-separated, e.g. "
                           "'--direct_num_workers=2 --direct_running_mode=multi_processing'")


def _add_vocab_flags(parser, default_size):
  parser.add_argument("--vocab_size", type=int, default=default_size)
  parser.add_argument("--overwrite", action="store_true", help="retrain an existing vocabulary")


def make_parser():
  parser = argparse.ArgumentParser(prog="python -m code_t5.data", description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--verbose", action="store_true", help="tracebacks and TF logs")
  sub = parser.add_subparsers(dest="command", required=True)

  build = sub.add_parser("build", help="FLCC v3 tree -> TFDS dataset flcc/<language>")
  _add_build_flags(build, need_source=True)
  build.add_argument("--data_dir", required=True, help="TFDS data dir (--t5_tfds_data_dir)")
  build.add_argument("--overwrite", action="store_true",
                     help="replace a finished dataset built from another tree or options")
  build.set_defaults(run=cmd_build)

  vocab = sub.add_parser("vocab", help="train the sentencepiece vocabulary on the train split")
  vocab.add_argument("--data_dir", required=True)
  vocab.add_argument("--language", default="python", type=_language, help=LANGUAGE_HELP)
  vocab.add_argument("--languages", default=None, type=_languages,
                     help="comma-separated built languages: one vocabulary shared by them "
                          f"(DATA_DIR/{vocabulary.VOCAB_DIR}/{vocabulary.SHARED}/), trained on "
                          "the same number of characters of each")
  _add_vocab_flags(vocab, vocab_lib.DEFAULT_VOCAB_SIZE)
  vocab.set_defaults(run=cmd_vocab)

  dev = sub.add_parser("dev", help="dev dataset and vocabulary: the stdlib (python), the stdlib "
                                    "and the installed packages (--source=environment), "
                                    "Abseil's headers (--language=cpp), the JDK's sources "
                                    "(--language=java) or npm packages (--language=javascript)")
  dev.add_argument("--source", default=None, choices=sorted(tree_writer.DEV_SOURCES),
                   help="default: the language's first: stdlib (python), abseil (cpp), jdk "
                        "(java), npm (javascript)")
  dev.add_argument("--jdk_src", default=None,
                   help="--source=jdk: a JDK's lib/src.zip (default: $JAVA_HOME's, else "
                        "/usr/lib/jvm's, where Debian's openjdk-17-source puts it)")
  dev.add_argument("--npm_registry", default=None,
                   help="--source=npm: the registry to fetch the pinned packages from "
                        "(default: $NPM_CONFIG_REGISTRY, else https://registry.npmjs.org)")
  dev.add_argument("--repos_dir", default=None, help=REPOS_DIR_HELP + "; the default root is "
                   f"{DEFAULT_DEV_ROOT}_repos")
  dev.add_argument("--root", default=None,
                   help="writes ROOT/flcc (the tree; ROOT/flcc_<language> for the others) and "
                        f"ROOT/tfds (the data dir); default {DEFAULT_DEV_ROOT}, or "
                        f"{DEFAULT_DEV_ROOT}_<source> for a language's other sources")
  dev.add_argument("--data_dir", default=None, help="default: ROOT/tfds")
  dev.add_argument("--max_files", type=int, default=None, help="cap on source files")
  # About 50 stdlib "repositories": larger held-out shares keep validation and test non-empty.
  _add_build_flags(dev, need_source=False, ratios=DEV_RATIOS)
  _add_vocab_flags(dev, DEV_VOCAB_SIZE)
  dev.set_defaults(language=None)  # the source's (dev_source)
  dev.set_defaults(run=cmd_dev)
  return parser


def main(argv=None) -> int:
  args = make_parser().parse_args(argv)
  if not args.verbose:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    logging.getLogger("absl").setLevel(logging.WARNING)
  # Skipped files are counted in the report; each one that points at a broken tree (listed
  # but missing, unreadable) also gets a line naming it.
  handler = logging.StreamHandler(sys.stderr)
  handler.setFormatter(logging.Formatter(f"code_t5.data {args.command}: %(levelname)s: %(message)s"))
  flcc.log.addHandler(handler)
  propagate, flcc.log.propagate = flcc.log.propagate, False
  try:
    return errors.run_command(
        f"code_t5.data {args.command}", lambda: args.run(args), verbose=args.verbose,
        expected=(flcc.FlccFormatError, vocabulary.VocabularyError, archive_lib.ArchiveError,
                  flcc.BuildMismatchError, flcc.IncompleteBuildError, UsageError, repositories.RepositoriesError,
                  registry_sources.SourceError))
  finally:  # main() may run again in this process (the tests call it)
    flcc.log.removeHandler(handler)
    flcc.log.propagate = propagate


if __name__ == "__main__":
  sys.exit(main())
