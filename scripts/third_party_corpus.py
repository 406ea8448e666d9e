"""A held-out corpus of third-party Python that no one here wrote or tunes on: 28 pinned
source releases from PyPI (web frameworks, an ORM, templating, HTTP, CLI and date tooling),
each made a git repository by git, then built as `flcc/python` by `build --repos_dir`, with
the dev model's vocabulary beside it, so that a checkpoint trained on the dev data (the
standard library) can be scored on other people's code:

  .venv/bin/python scripts/third_party_corpus.py --out=/tmp/third_party
  .venv/bin/python scripts/bench_learning.py --eval_only --no_peer --curve=1 --examples=716 \\
    --line_search=8 --consensus --gin_param="code_t5.copy_cache.file_tokens = 16384" \\
    --data_dir=/tmp/third_party/tfds --split=validation --model_dir=<a copy of a checkpoint>

Why: the dev splits are the standard library, and the choices of the defaults were made on
its validation split, and what holds there need not hold on a team's own code
(BENCHMARKS.md, "Third-party code").

Each release is checked against its pinned sha256; one that cannot be fetched or does not
match is named, skipped and counted (the figures then are not comparable with BENCHMARKS'),
and the corpus is built from the rest. Downloads resume; a repository is written whole and
renamed into place, so a rerun after an interruption reuses what was finished.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # before `code_t5` imports TensorFlow
from code_t5 import files  # pylint: disable=wrong-import-position
from code_t5.data import archive  # pylint: disable=wrong-import-position

# The simple API as JSON (PEP 691): every file of a project with its sha256.
INDEX_URL = "https://pypi.org/simple"
# (name, version, sha256 of its sdist), as PyPI served them on 2026-12-02.
RELEASES = (
    ("alembic", "1.20.1", "83490def1f723413db5096591f7609ac52544805be93849170088ed04f5a2e0b"),
    ("arrow", "1.4.0", "ed0cc050e98001b8779e84d461b0098c4ac597e88704a655582b21d116e526d7"),
    ("attrs", "26.1.0", "d03ceb89cb322a8fd706d4fb91940737b6642aa36998fe130a9bc96c985eff32"),
    ("bottle", "0.13.4", "787e78327e12b227938de02248333d788cfe45987edca735f8f88e03472c3f47"),
    ("cachetools", "8.0.2", "30ac523adfc118b51d2b2e7bad8a0ddb31370dfe2700c7f10ca224f36ccf81e0"),
    ("click", "8.5.1", "9bbfada76703fd1d784b83eea012e3e8c6a001a876543ef104fa56aaaeb072b4"),
    ("fabric", "3.2.3", "dcbd2c47ad87688facaef5cc11aab6d1ec9ed05645fed97a5de7204d5d17cc44"),
    ("flask", "3.1.3", "0ef0e52b8a9cd932855379197dd8f94047b359ca0a78695144304cb45f87c9eb"),
    ("httpx", "0.29.0", "700928ee6c1f4213795e67c47eba8f8553639069fea89199f71d654e38edc593"),
    ("invoke", "3.0.3", "437b6a622223824380bfb4e64f612711a6b648c795f565efc8625af66fb57f0c"),
    ("isort", "9.0.2", "d2298980ce44350f11d9d24c8150eaef1883431ec203dddbb4e9b5c3ceb54c70"),
    ("itsdangerous", "2.2.0", "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173"),
    ("jinja2", "3.1.6", "0137fb05990d35f1275a587e9aee6d56da821fc83491a0fb838183be43f66d6d"),
    ("mako", "1.4.3", "cd6537fe88d5fec315c55c2f8529bc4ce7a9a352ad7db3eeaa6a66e2dd4ec37a"),
    ("marshmallow", "4.4.0", "9e6ffa8511012ca89732324c1c253efd7b4d35632dcbdf80aa793fe01804af3e"),
    ("more-itertools", "11.2.1",
     "cbf08fd0af284dc69718b9b76a8e6203df624d70209ea511e4219d350c856f63"),
    ("packaging", "26.4", "c4b671c41ddb9bf26e543c37723610d28fb6bf7affc4da17cf048d419d2c062a"),
    ("paramiko", "5.1.0", "239b5f9b2a53006cd54f83cf8495ee742083708ead947882c8dd2786de79f39b"),
    ("peewee", "4.5.3", "434576afaf806428a01f84af74c42fde59372c4f6a6eba26d9b5372113344a8a"),
    ("pluggy", "1.7.0", "d1eaa46ebb595891b860ab086b4d09c8588af65ebd4361b8e8f4bb8920b90ba8"),
    ("python-dateutil", "4.0.0",
     "d7295ff14fdc0f92f662100bfb6c551d160ca090f2939f1ec5b9794265c03f06"),
    ("requests", "2.34.2", "f288924cae4e29463698d6d60bc6a4da69c89185ad1e0bcc4104f584e960b9ed"),
    ("sqlparse", "0.6.1", "ca722573f848ff2d30e40ea30f53a104b7dea7635ea9285891263eb2c58fb6e7"),
    ("starlette", "1.10.0", "b8399098d4c1e3522734f7235dc79b1fc967f96cf139c81e0fa30479e0685f9b"),
    ("tenacity", "9.2.1", "a606b5c808d0cded4a359d5b9932d867ff2a6a6b64d37350260fd01bbdf83839"),
    ("tomlkit", "0.15.2", "83e32755ba1d20d9340bd069ee97e9f6232ba2346b63ffcba425de01f7e327a6"),
    ("typer", "0.29.2", "b1998dc5f2c3dedafa1517a9521fa944cc4dc1fadcea085d81a3b10ebcaeb075"),
    ("werkzeug", "3.1.9", "55ca7c70a75689be937aa27f8ff4b018f06ff4838fc73045560bf0f5a1291060"),
)
# Half the repositories train the 4-gram baseline; a quarter each are scored. The build
# balances the splits' files (split_method "balanced"), so the shares are of files.
RATIOS = "0.5,0.25,0.25"
# One commit, with this author, date and message: the same commit hash, and so the same
# repository (`<author>/<repo>/<first commit>`) and split, on every run and machine.
COMMIT = ("-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false",
          "commit", "-qm", "import")
COMMIT_DATE = "2026-01-01T00:00:00Z"


def sdist_url(index_url, name, sha256):
  """The URL of `name`'s file whose sha256 is `sha256`, from the index's simple API (JSON)."""
  project_url = f"{index_url}/{name}/"
  request = urllib.request.Request(
      project_url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
  try:
    with urllib.request.urlopen(request, timeout=60) as response:
      listed = json.load(response)["files"]
  except (OSError, ValueError, KeyError) as e:
    raise archive.ArchiveError(f"{project_url}: cannot list the project's files ({e})") from None
  urls = [f["url"] for f in listed if f.get("hashes", {}).get("sha256") == sha256]
  if not urls:
    raise archive.ArchiveError(f"{project_url}: no file with the pinned sha256 {sha256}")
  return urllib.parse.urljoin(project_url, urls[0])  # a mirror may give a relative URL


def git_repository(source_dir, repo_dir, staging_dir):
  """`source_dir`'s files as a git repository of one commit at `repo_dir`, made in
  `staging_dir` and renamed into place, so that the folder of repositories never holds a
  half-made one."""
  if os.path.isdir(repo_dir):
    return
  shutil.rmtree(staging_dir, ignore_errors=True)
  shutil.copytree(source_dir, staging_dir, symlinks=True)  # (extract left the links out)
  env = dict(os.environ, GIT_AUTHOR_DATE=COMMIT_DATE, GIT_COMMITTER_DATE=COMMIT_DATE)
  for args in (["init", "-q"], ["add", "-A"], list(COMMIT)):
    subprocess.run(["git", "-C", staging_dir, *args], check=True, env=env,
                   capture_output=True, text=True)
  os.makedirs(os.path.dirname(repo_dir), exist_ok=True)
  os.replace(staging_dir, repo_dir)


def fetch_release(index_url, name, version, sha256, out):
  """Downloads, checks and unpacks one release into `out`/repos as a git repository, named as
  its sdist names it (`python_dateutil` for python-dateutil)."""
  url = sdist_url(index_url, name, sha256)
  path = archive.download(url, os.path.join(out, "sdist"))
  found = archive.sha256_of(path)
  if found != sha256:
    raise archive.ArchiveError(f"{path}: sha256 {found} does not match the pinned {sha256}")
  # A release's links are left out (the FLCC reader leaves a stored link out as well).
  extracted = archive.extract(path, os.path.join(out, "extracted", f"{name}-{version}"),
                              skip_links=True)
  tops = os.listdir(extracted)  # an sdist holds one folder, <name>-<version>
  source = os.path.join(extracted, tops[0]) if len(tops) == 1 else extracted
  repo = archive.url_file_name(url).rsplit("-", 1)[0]
  git_repository(source, os.path.join(out, "repos", repo), os.path.join(out, "staging", repo))


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--out", required=True,
                      help="a local folder: sdist/, extracted/, repos/, flcc/ and tfds/ go here")
  parser.add_argument("--vocab_from", default="data/dev/tfds",
                      help="the data dir whose flcc_vocab/python/spm.model the model reads")
  parser.add_argument("--index_url", default=INDEX_URL)
  args = parser.parse_args()
  if not files.is_local(args.out):
    sys.exit(f"{args.out}: --out must be a local folder (git and tar write there); "
             "copy its tfds/ to a bucket after")
  vocab = os.path.join(args.vocab_from, "flcc_vocab", "python", "spm.model")
  if not files.exists(vocab):
    sys.exit(f"{vocab}: no vocabulary; build the dev data first (python -m code_t5.data dev) "
             "or give --vocab_from")
  skipped = []
  for number, (name, version, sha256) in enumerate(RELEASES, 1):
    print(f"[{number}/{len(RELEASES)}] {name} {version}", flush=True)
    try:
      fetch_release(args.index_url, name, version, sha256, args.out)
    except subprocess.CalledProcessError as e:
      print(f"  skipped: {name} {version}: git failed: {e.stderr.strip()}", flush=True)
      skipped.append(name)
    except (archive.ArchiveError, OSError) as e:
      print(f"  skipped: {name} {version}: {files.first_line(e)}", flush=True)
      skipped.append(name)
  if len(skipped) == len(RELEASES):
    sys.exit("no release could be fetched; nothing to build")
  data_dir = os.path.join(args.out, "tfds")
  built = subprocess.run([sys.executable, "-m", "code_t5.data", "build", "--language=python",
                          f"--repos_dir={os.path.join(args.out, 'repos')}",
                          f"--data_dir={data_dir}",
                          f"--download_dir={os.path.join(args.out, 'flcc')}",
                          f"--ratios={RATIOS}"])
  if built.returncode:
    sys.exit(built.returncode)  # the build has named the problem
  files.makedirs(os.path.join(data_dir, "flcc_vocab", "python"))
  files.write_atomically(os.path.join(data_dir, "flcc_vocab", "python", "spm.model"),
                         files.read_bytes(vocab))
  print(f"{len(RELEASES) - len(skipped)} of {len(RELEASES)} releases in {data_dir}"
        + (f"; skipped {len(skipped)}: {', '.join(skipped)} (figures not comparable with "
           "BENCHMARKS')" if skipped else ""))


if __name__ == "__main__":
  main()
