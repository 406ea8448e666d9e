"""A held-out corpus of third-party code that no one here wrote or tunes on, in the language of
a dev model (--language):

  python      28 pinned source releases from PyPI (web frameworks, an ORM, templating, HTTP,
              CLI and date tooling), as their sdists hold them;
  javascript  20 npm packages pinned by version and integrity, none of the dev data's 61 (ORMs,
              drivers, a compiler, test and process tools, date and zip libraries), their own
              code as the dev data takes it (`registry_sources.source_files`: no tests, bundles
              or minified files, at most MAX_FILES_PER_REPOSITORY a package);
  java        20 Java projects' upstream sources as Debian's archive keeps them (the
              `.orig.tar` of a source package, pinned by sha256): Guava, Jackson, Netty, jsoup,
              picocli, ... (their main code: no test, example or benchmark folders, at most
              MAX_FILES_PER_REPOSITORY a project), license headers as their authors wrote them.

Each becomes a git repository of one commit made by git, then the corpus is built as
`flcc/<language>` by `build --repos_dir`, with the dev model's vocabulary beside it, so that a
checkpoint trained on the dev data can be scored on other people's code:

  .venv/bin/python scripts/third_party_corpus.py --language=java --out=/tmp/third_party_java
  .venv/bin/python scripts/bench_learning.py --language=java --eval_only --no_peer --curve=1 \\
    --examples=1024 --line_search=8 --consensus \\
    --gin_param="code_t5.copy_cache.file_tokens = 16384" \\
    --data_dir=/tmp/third_party_java/tfds --split=validation --model_dir=<a copy of a checkpoint>

Why: the dev splits are one source each (the standard library, a JDK, 61 npm packages), and
the choices of the defaults were made on their validation splits; what holds there need not
hold on a team's own code (BENCHMARKS.md, "Third-party code").

Each release is checked against its pin; one that cannot be fetched or does not match is
named, skipped and counted (the figures then are not comparable with BENCHMARKS'), and the
corpus is built from the rest. Downloads resume; a repository is written whole and renamed
into place, so a rerun after an interruption reuses what was finished.
"""

import argparse
import collections
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
from code_t5.data import registry_sources  # pylint: disable=wrong-import-position

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
# (name, version, the registry's integrity of its tarball), as npm's registry served them on
# 2026-12-07: none of registry_sources.NPM_PACKAGES, whose code the JavaScript dev model reads.
NPM_RELEASES = (
    ("axios", "1.21.1",
     "sha512-6eI5Q/Y4u/Um9dDlsRoq5pY2rxnUTv+L4PpLitnbk/i4jb3MxLZ5CsN5Ih3IysbeRYK4pR+P7qfMsOQl9fwwFQ=="),
    ("bull", "4.16.5",
     "sha512-lDsx2BzkKe7gkCYiT5Acj02DpTwDznl/VNN7Psn7M3USPG7Vs/BaClZJJTAG+ufAR9++N1/NiUTdaFBWDIl5TQ=="),
    ("date-fns", "4.4.0",
     "sha512-+1UMbeh68lH1SegH83CGWwpb6OHHbpSgr3+s5Eww5M4CAgswBpoWS0AjTOfEJ33HiYKz1hdj/KTFprzXHmq/6w=="),
    ("dayjs", "1.11.23",
     "sha512-QDTCU0M0MxR3hQfnlDJfwekQiaanm1ubOD231u73WBckQ/fsamwRLiE2GBz6D3a/xF1NgfiDLJjXBa1hYOYTtQ=="),
    ("debug", "4.4.3",
     "sha512-RGwwWnwQvkVfavKVt22FGLw+xYSdzARwm0ru6DhTVA3umU5hZc28V3kO4stgYryrTlLpuvgI9GiijltAjNbcqA=="),
    ("jsonwebtoken", "9.0.3",
     "sha512-MT/xP0CrubFRNLNKvxJ2BYfy53Zkm++5bX9dtuPbqAeQpTVe0MQTFhao8+Cp//EmJp244xt6Drw/GVEGCUj40g=="),
    ("jszip", "3.10.2",
     "sha512-3l+rb15IOWtUhU0H5MFqES/T6Kh7abYwjosBey/vD6hDt8zoEffkSC5Ws5SGtgVw3gBx2NEbhTeSW1+kWkpyTQ=="),
    ("karma", "6.4.4",
     "sha512-LrtUxbdvt1gOpo3gxG+VAJlJAEMhbWlM4YrFQgql98FwF7+K8K12LYO4hnDdUkNjeztYrOXEMqgTajSWgmtI/w=="),
    ("knex", "3.3.0",
     "sha512-LgWl031hNuLv9Lhxdd9093zULa2aNcoP04Bk29e5NidgRcEr/T0rAr2WYi4BhjTiCDoQiRU56meUE5rppLKZzQ=="),
    ("mongoose", "9.13.2",
     "sha512-feQdih/gpEsJmbsI/DkC8hHj6Fmh+HAh4ll7nezQx4eiKctKl8Yr6aQnDyQpsWDxCwbA3r/V5mr5vHEWfuwtqA=="),
    ("mysql", "2.18.1",
     "sha512-Bca+gk2YWmqp2Uf6k5NFEurwY/0td0cpebAucFpY/3jhrwrVGuxU2uQFCHjU19SJfje0yQvi+rVWdq78hR5lig=="),
    ("nodemon", "3.1.14",
     "sha512-jakjZi93UtB3jHMWsXL68FXSAosbLfY0In5gtKq3niLSkrWznrVBzXFNOEMJUfc9+Ke7SHWoAZsiMkNP3vq6Jw=="),
    ("papaparse", "5.7.1",
     "sha512-qOR+UDWv6D3hMxnWWOk0ZpBdCkd+kw5Yh7aXOaNSQU8A+73EA2bhW7EiUix/hY0yulUi5FRvt7PpYSI2VDvY0g=="),
    ("passport", "0.7.0",
     "sha512-cPLl+qZpSc+ireUvt+IzqbED1cHHkDoVYMo30jbJIdOOjQ1MQYZBPiNvmi8UM6lJuOpTPXJGZQk0DtC4y61MYQ=="),
    ("pg", "8.23.1",
     "sha512-aL96AHANtWjPLDOLqnhx+ngp9+UK7ETEU8VJrDCGvsSSi/mGLcWYsS6Herg7lmaBJe4uwrfqsa7gTEFaSizDoQ=="),
    ("pm2", "7.0.4",
     "sha512-rMzoZmZlmJw7hoTbO9cOqcwj407TzUVc84JRaIjmnK8+808zldQT2Sd4rVcqVvXUcI2LoXEf1irMevWfOx5SEQ=="),
    ("restify", "12.0.0",
     "sha512-phWRX0ca9sSulM6SJ2SxnPze7gmkm2ePLNd6cuo9loM1UfARu+ZhcNNCKldEal/R3virVcl6Anp1XyPNVVCptQ=="),
    ("sequelize", "6.37.8",
     "sha512-HJ0IQFqcTsTiqbEgiuioYFMSD00TP6Cz7zoTti+zVVBwVe9fEhev9cH6WnM3XU31+ABS356durAb99ZuOthnKw=="),
    ("sinon", "22.1.0",
     "sha512-n1ajF2rBWMTtEwbKcw4UdFg4nCnDdq/U6RDoxtOd7oapOlRoJ5ynwFx60owROyhDpA9QhMZi0pCO/xtmwFjG7w=="),
    ("svelte", "5.60.1",
     "sha512-wQ9xYVUpR7d0tsFkpX1CZ+FlHGA9JItXDjtx2aJwnrVbav5RyGciZuN+RsdKSMrRnUIVRUH7X83sqYBW/yFZJQ=="),
)
DEBIAN_MIRROR = "https://deb.debian.org/debian"
# (Debian source package, its upstream tarball in the archive, sha256), from trixie's
# Sources index on 2026-12-07: projects outside the JDK, whose code the Java dev model reads.
DEBIAN_RELEASES = (
    ("antlr4", "pool/main/a/antlr4/antlr4_4.9.2.orig.tar.xz",
     "4b04ae2380793fdba4b659c23bc9f562d2308b78afaf771aa213b664bca29607"),
    ("assertj-core", "pool/main/a/assertj-core/assertj-core_3.26.3.orig.tar.xz",
     "ec43e61c1973cc6665e15c5e2d662aa81cc7194d02596bcdccc1b1628d061dab"),
    ("checkstyle", "pool/main/c/checkstyle/checkstyle_8.36.1.orig.tar.xz",
     "bd41bfbcc0a5fcf5bd67cf6caf5cf42a0f0a6fd214fee7370552e385d8281f21"),
    ("commons-csv", "pool/main/c/commons-csv/commons-csv_1.9.0.orig.tar.xz",
     "661252998cf2b9aac1aa12fe9e104dc23190761a8971384f83a6c1fc02536867"),
    ("commons-io", "pool/main/c/commons-io/commons-io_2.19.0.orig.tar.xz",
     "e15d8c5afb162423499afca525642826194f9fe375252ef435c0ec0c49fdc0d3"),
    ("commons-math3", "pool/main/c/commons-math3/commons-math3_3.6.1.orig.tar.xz",
     "16d940c11c48793214915b72201c35719acd1cb40278066b3c090165550fd992"),
    ("commons-text", "pool/main/c/commons-text/commons-text_1.13.1.orig.tar.xz",
     "0e319c32b30eef4e0fc059cf7e42e79e23d57e699e0574289398ff178a1dd232"),
    ("guava-libraries", "pool/main/g/guava-libraries/guava-libraries_32.0.1.orig.tar.xz",
     "9fe8fb149a2e9a0e24de658fb094767182593e64e21ba00556bc53ee35deae2c"),
    ("httpcomponents-client",
     "pool/main/h/httpcomponents-client/httpcomponents-client_4.5.14.orig.tar.xz",
     "659535b7ac7eb59e36435d1a24bc526b5f8d64d5c7d979165110ce2dfa54b1eb"),
    ("jackson-core", "pool/main/j/jackson-core/jackson-core_2.14.1.orig.tar.xz",
     "d9eb6aa1898c4d5a582c52e69da249efae25e4d2c809c57dc6b6ee01c4b0fb3b"),
    ("jackson-databind", "pool/main/j/jackson-databind/jackson-databind_2.14.0+ds.orig.tar.xz",
     "311a2bcc6cca5ac74b7f27b5209d41cc023ab6e0d214dc0818ea5fad490ebf8c"),
    ("javaparser", "pool/main/j/javaparser/javaparser_3.26.1.orig.tar.xz",
     "86725d476f8e8a325d47a22f2febe1b24d7febf662f6cc3f2f9f1e17bae1cfaf"),
    ("jgit", "pool/main/j/jgit/jgit_6.7.0.orig.tar.xz",
     "d219f29c8cf5c432cb5fbd1c377fe4cac3c86cd0f5b1c3eb9ee73b3b9bad9fa4"),
    ("jline3", "pool/main/j/jline3/jline3_3.3.1.orig.tar.xz",
     "0e9fc779c7eb0b40fc24140cb567744677a60f91d712b64608355833c36e2376"),
    ("jsoup", "pool/main/j/jsoup/jsoup_1.15.3.orig.tar.xz",
     "052511f0be47511f9b2a17d44fc1eccc4b5373e77cc5a3221e34b6af437e1e2e"),
    ("junit4", "pool/main/j/junit4/junit4_4.13.2.orig.tar.xz",
     "8cb9e6cd3c1188e93ce6ed56df12f8dab9db379256386973dbc61690ad184c60"),
    ("libgoogle-gson-java",
     "pool/main/libg/libgoogle-gson-java/libgoogle-gson-java_2.10.1.orig.tar.xz",
     "ee8d226848374c5cd0b3a0af7915eb96d5c977fdc84d34db1cfd7c8a5b66a345"),
    ("mockito", "pool/main/m/mockito/mockito_3.3.0.orig.tar.xz",
     "ea4b61d291935295d6d2fd4847e3e8defeebdd5af720dded85c3369fc5020116"),
    ("netty", "pool/main/n/netty/netty_4.1.48.orig.tar.xz",
     "e5351d821f461f64af58e89f260ad8943b0ab75f26c1a845300a91f22a711600"),
    ("picocli", "pool/main/p/picocli/picocli_4.6.2.orig.tar.xz",
     "884e0bef7fb8fc79d22420f04a5c538a89203a6946d43b6370157d293d7cdb40"),
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


def _committed_into_place(fill, repo_dir, staging_dir):
  """A git repository of one commit at `repo_dir`, its files put into the emptied `staging_dir`
  by `fill(staging_dir)`, committed there and renamed into place, so that the folder of
  repositories never holds a half-made one. Nothing is done where `repo_dir` exists."""
  if os.path.isdir(repo_dir):
    return
  shutil.rmtree(staging_dir, ignore_errors=True)
  fill(staging_dir)
  env = dict(os.environ, GIT_AUTHOR_DATE=COMMIT_DATE, GIT_COMMITTER_DATE=COMMIT_DATE)
  for args in (["init", "-q"], ["add", "-A"], list(COMMIT)):
    subprocess.run(["git", "-C", staging_dir, *args], check=True, env=env,
                   capture_output=True, text=True)
  os.makedirs(os.path.dirname(repo_dir), exist_ok=True)
  os.replace(staging_dir, repo_dir)


def git_repository(source_dir, repo_dir, staging_dir):
  """`source_dir`'s files as a git repository of one commit at `repo_dir`."""
  _committed_into_place(  # (extract left the links out)
      lambda staging: shutil.copytree(source_dir, staging, symlinks=True), repo_dir, staging_dir)


def repository_of(contents, repo_dir, staging_dir):
  """`contents` ({path: bytes}) as a git repository of one commit at `repo_dir`, written
  straight into the staging folder."""
  def fill(staging):
    for path, content in contents.items():
      os.makedirs(os.path.dirname(os.path.join(staging, path)), exist_ok=True)
      with open(os.path.join(staging, path), "wb") as f:
        f.write(content)
  _committed_into_place(fill, repo_dir, staging_dir)


def checked_download(url, out_dir, sha256):
  """`url` downloaded into `out_dir` (resumed, `archive.download`), or ArchiveError where its
  sha256 is not the pinned one."""
  path = archive.download(url, out_dir, sha256)
  found = archive.sha256_of(path)
  if found != sha256:
    raise archive.ArchiveError(f"{path}: sha256 {found} does not match the pinned {sha256}")
  return path


def fetch_npm_package(registry, name, version, integrity, out, left_out):
  """One npm package's own code (`registry_sources.npm_repositories`: checked against its
  integrity, no tests, bundles or minified files) as a git repository in `out`/repos."""
  repo_dir = os.path.join(out, "repos", name)
  if os.path.isdir(repo_dir):
    return
  found = registry_sources.npm_repositories(os.path.join(out, "npm"), registry,
                                            ((name, version, integrity),), left_out=left_out)
  contents = found.get(f"npm/{name}")
  if not contents:
    raise registry_sources.SourceError(f"{name} {version}: no .js file of its own")
  repository_of(contents, repo_dir, os.path.join(out, "staging", name))


def fetch_debian_source(mirror, name, pool_path, sha256, out, left_out):
  """One project's upstream tarball from Debian's archive, checked against its sha256: its
  .java files outside test, example and build folders, at most MAX_FILES_PER_REPOSITORY
  taken evenly (`registry_sources.source_files`, `evenly`), as a git repository in
  `out`/repos."""
  repo_dir = os.path.join(out, "repos", name)
  if os.path.isdir(repo_dir):
    return
  path = checked_download(f"{mirror.rstrip('/')}/{pool_path}", os.path.join(out, "debian"),
                          sha256)
  top = registry_sources.unpack_once(path, os.path.join(out, "debian"))
  contents = registry_sources.evenly(dict(registry_sources.source_files(
      top, ".java", left_out, registry_sources.JAVA_LEFT_OUT_FOLDERS,
      registry_sources.JAVA_SOURCE_ROOT)), left_out)
  if not contents:
    raise registry_sources.SourceError(f"{pool_path}: no .java file of its own")
  repository_of(contents, repo_dir, os.path.join(out, "staging", name))


def fetch_release(index_url, name, version, sha256, out):
  """Downloads, checks and unpacks one release into `out`/repos as a git repository, named as
  its sdist names it (`python_dateutil` for python-dateutil)."""
  url = sdist_url(index_url, name, sha256)
  path = checked_download(url, os.path.join(out, "sdist"), sha256)
  # A release's links are left out (the FLCC reader leaves a stored link out as well).
  extracted = archive.extract(path, os.path.join(out, "extracted", f"{name}-{version}"),
                              skip_links=True)
  tops = os.listdir(extracted)  # an sdist holds one folder, <name>-<version>
  source = os.path.join(extracted, tops[0]) if len(tops) == 1 else extracted
  repo = archive.url_file_name(url).rsplit("-", 1)[0]
  git_repository(source, os.path.join(out, "repos", repo), os.path.join(out, "staging", repo))


def fetch_all(language, out, index_url=INDEX_URL, npm_registry=None,
              debian_mirror=DEBIAN_MIRROR):
  """Every pinned release of `language` as a git repository in `out`/repos: (names of those
  skipped, files left out by reason of the releases made repositories in this run, the number
  of releases)."""
  left_out = collections.Counter()
  fetchers = {
      "python": [(f"{n} {v}", lambda n=n, v=v, h=h: fetch_release(index_url, n, v, h, out))
                 for n, v, h in RELEASES],
      "javascript": [(f"{n} {v}", lambda n=n, v=v, i=i: fetch_npm_package(
          npm_registry, n, v, i, out, left_out)) for n, v, i in NPM_RELEASES],
      "java": [(n, lambda n=n, p=p, h=h: fetch_debian_source(debian_mirror, n, p, h, out,
                                                             left_out))
               for n, p, h in DEBIAN_RELEASES],
  }[language]
  skipped = []
  for number, (name, fetch) in enumerate(fetchers, 1):
    print(f"[{number}/{len(fetchers)}] {name}", flush=True)
    try:
      fetch()
    except subprocess.CalledProcessError as e:
      print(f"  skipped: {name}: git failed: {e.stderr.strip()}", flush=True)
      skipped.append(name)
    except (archive.ArchiveError, registry_sources.SourceError, OSError) as e:
      print(f"  skipped: {name}: {files.first_line(e)}", flush=True)
      skipped.append(name)
  return skipped, left_out, len(fetchers)


def main():
  parser = argparse.ArgumentParser(description=__doc__,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
  parser.add_argument("--out", required=True,
                      help="a local folder: downloads, repos/, flcc/ and tfds/ go here")
  parser.add_argument("--language", default="python", choices=("python", "javascript", "java"))
  parser.add_argument("--vocab_from", default="data/dev/tfds",
                      help="the data dir whose flcc_vocab/<language>/spm.model the model reads")
  parser.add_argument("--index_url", default=INDEX_URL, help="PyPI's simple API (python)")
  parser.add_argument("--npm_registry", default=None,
                      help="npm's registry (javascript; default $NPM_CONFIG_REGISTRY, else npm's)")
  parser.add_argument("--debian_mirror", default=DEBIAN_MIRROR, help="Debian's archive (java)")
  args = parser.parse_args()
  if not files.is_local(args.out):
    sys.exit(f"{args.out}: --out must be a local folder (git and tar write there); "
             "copy its tfds/ to a bucket after")
  vocab = os.path.join(args.vocab_from, "flcc_vocab", args.language, "spm.model")
  if not files.exists(vocab):
    sys.exit(f"{vocab}: no vocabulary; build the dev data first (python -m code_t5.data dev "
             f"--language={args.language}) or give --vocab_from")
  skipped, left_out, total = fetch_all(args.language, args.out, args.index_url,
                                       args.npm_registry, args.debian_mirror)
  if any(left_out.values()):
    print("files of the releases made repositories in this run, left out:")
  for reason, count in sorted(left_out.items()):
    if count:
      print(f"  {reason}: {count} files")
  if len(skipped) == total:
    sys.exit("no release could be fetched; nothing to build")
  data_dir = os.path.join(args.out, "tfds")
  built = subprocess.run([sys.executable, "-m", "code_t5.data", "build",
                          f"--language={args.language}",
                          f"--repos_dir={os.path.join(args.out, 'repos')}",
                          f"--data_dir={data_dir}",
                          f"--download_dir={os.path.join(args.out, 'flcc')}",
                          f"--ratios={RATIOS}"])
  if built.returncode:
    sys.exit(built.returncode)  # the build has named the problem
  files.makedirs(os.path.join(data_dir, "flcc_vocab", args.language))
  files.write_atomically(os.path.join(data_dir, "flcc_vocab", args.language, "spm.model"),
                         files.read_bytes(vocab))
  print(f"{total - len(skipped)} of {total} releases in {data_dir}"
        + (f"; skipped {len(skipped)}: {', '.join(skipped)} (figures not comparable with "
           "BENCHMARKS')" if skipped else ""))


if __name__ == "__main__":
  main()
