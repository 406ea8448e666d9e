"""scripts/third_party_corpus.py: a release found by its sha256 in an index's simple API
(JSON), an npm package `npm pack` made, and an upstream tarball in Debian's archive layout that
`tar` made, each served on loopback, become git repositories of one commit that are the same
on every run, their links (and the JavaScript and Java ones' tests) left out; a release not
found or not the pinned one is named."""

import functools
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from code_t5.data import archive
from code_t5.data import registry_sources

from conftest import JS_CODE, write_files

sys.path.insert(0, "scripts")
import third_party_corpus  # pylint: disable=g-import-not-at-top,wrong-import-position


class _Index(http.server.BaseHTTPRequestHandler):
  """/simple/demo/ lists one file by a relative URL, as a mirror may; /files/ serves it."""
  files = {}  # path -> bytes

  def do_GET(self):  # pylint: disable=invalid-name
    body = self.files.get(self.path)
    self.send_response(200 if body is not None else 404)
    self.send_header("Content-Length", str(len(body or b"")))
    self.end_headers()
    self.wfile.write(body or b"")

  def log_message(self, *args):
    pass


@pytest.fixture
def index(tmp_path):
  source = tmp_path / "src" / "demo-1.0"
  (source / "demo").mkdir(parents=True)
  (source / "demo" / "core.py").write_text("def answer():\n  return 42\n")
  os.symlink("demo/core.py", source / "README.py")
  tarball = tmp_path / "demo-1.0.tar.gz"
  subprocess.run(["tar", "czf", str(tarball), "-C", str(tmp_path / "src"), "demo-1.0"],
                 check=True)
  payload = tarball.read_bytes()
  sha256 = hashlib.sha256(payload).hexdigest()
  listing = {"files": [{"filename": "demo-1.0.tar.gz", "hashes": {"sha256": sha256},
                        "url": "../../files/demo-1.0.tar.gz"}]}
  _Index.files = {"/simple/demo/": json.dumps(listing).encode(),
                  "/files/demo-1.0.tar.gz": payload}
  httpd = http.server.HTTPServer(("127.0.0.1", 0), _Index)
  threading.Thread(target=httpd.serve_forever, daemon=True).start()
  yield f"http://127.0.0.1:{httpd.server_port}/simple", sha256
  httpd.shutdown()


def _git(repo, *args):
  return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                        text=True).stdout


def test_a_release_becomes_the_same_git_repository_on_every_run(index, tmp_path):
  index_url, sha256 = index
  heads = []
  for run in ("a", "b"):
    out = tmp_path / run
    third_party_corpus.fetch_release(index_url, "demo", "1.0", sha256, str(out))
    third_party_corpus.fetch_release(index_url, "demo", "1.0", sha256, str(out))  # reused
    repo = out / "repos" / "demo"
    tree = _git(repo, "ls-tree", "-r", "HEAD")
    assert "demo/core.py" in tree
    assert "README.py" not in tree  # the sdist's link, left out as it is extracted
    assert _git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert not (out / "staging" / "demo").exists()
    heads.append(_git(repo, "rev-parse", "HEAD"))
  assert heads[0] == heads[1]


def test_a_release_not_in_the_index_is_named(index, tmp_path):
  index_url, _ = index
  with pytest.raises(archive.ArchiveError, match=r"/simple/demo/: no file with the pinned"):
    third_party_corpus.fetch_release(index_url, "demo", "1.0", "0" * 64, str(tmp_path))
  with pytest.raises(archive.ArchiveError, match=r"/simple/absent/: cannot list"):
    third_party_corpus.fetch_release(index_url, "absent", "1.0", "0" * 64, str(tmp_path))


def test_an_npm_package_becomes_a_repository_of_its_own_code(npm_registry, tmp_path):
  registry, packages, _ = npm_registry
  left_out = registry_sources.LeftOut()
  for _ in range(2):  # the second run reuses the repository
    third_party_corpus.fetch_npm_package(registry, *packages["left-pad-x"], str(tmp_path),
                                         left_out)
  repo = tmp_path / "repos" / "left-pad-x"
  assert _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() == ["index.js", "lib/util.js"]
  assert _git(repo, "show", "HEAD:index.js") == JS_CODE
  assert left_out[registry_sources.LEFT_OUT_FOLDER] == 2  # test/, dist/: counted once
  assert not (tmp_path / "staging" / "left-pad-x").exists()
  assert not (tmp_path / "staging" / "left-pad-x.files").exists()


@pytest.fixture
def debian_mirror(tmp_path):
  """An upstream tarball as Debian's archive keeps it (pool/main/<letter>/<source>/), made by
  tar: a Maven layout with its tests and an example beside the main code, and a link."""
  upstream = tmp_path / "upstream" / "demo-1.0"
  java = ("package org.demo.build;\n\npublic class Demo {\n  int answer() {\n    return 42;\n  }\n"
          "}\n")
  write_files(upstream, {"src/main/java/org/demo/build/Demo.java": java,  # packages, not folders
                         "src/test/java/org/demo/build/DemoTest.java": java,
                         "examples/Example.java": java, "pom.xml": "<project/>\n"})
  os.symlink("src/main/java/org/demo/build/Demo.java", upstream / "Link.java")
  pool = tmp_path / "mirror" / "pool" / "main" / "d" / "demo"
  pool.mkdir(parents=True)
  subprocess.run(["tar", "cJf", str(pool / "demo_1.0.orig.tar.xz"), "-C",
                  str(tmp_path / "upstream"), "demo-1.0"], check=True)
  sha256 = hashlib.sha256((pool / "demo_1.0.orig.tar.xz").read_bytes()).hexdigest()
  httpd = http.server.ThreadingHTTPServer(
      ("127.0.0.1", 0), functools.partial(_Quiet, directory=str(tmp_path / "mirror")))
  threading.Thread(target=httpd.serve_forever, daemon=True).start()
  yield f"http://127.0.0.1:{httpd.server_port}", sha256, java
  httpd.shutdown()


class _Quiet(http.server.SimpleHTTPRequestHandler):
  def log_message(self, *args):  # pylint: disable=arguments-differ
    pass


def test_a_debian_upstream_tarball_becomes_a_repository_of_its_main_code(debian_mirror,
                                                                         tmp_path):
  mirror, sha256, java = debian_mirror
  heads = []
  for run in ("a", "b"):
    left_out = registry_sources.LeftOut()
    third_party_corpus.fetch_debian_source(mirror, "demo", "pool/main/d/demo/demo_1.0.orig.tar.xz",
                                           sha256, str(tmp_path / run), left_out)
    repo = tmp_path / run / "repos" / "demo"  # Link.java: left out as it is unpacked
    assert _git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() == [
        "demo-1.0/src/main/java/org/demo/build/Demo.java"]
    assert _git(repo, "show", "HEAD:demo-1.0/src/main/java/org/demo/build/Demo.java") == java
    assert left_out == {registry_sources.LEFT_OUT_FOLDER: 2}  # src/test, examples
    heads.append(_git(repo, "rev-parse", "HEAD"))
  assert heads[0] == heads[1]


def test_a_debian_tarball_not_the_pinned_one_is_named(debian_mirror, tmp_path):
  mirror, _, _ = debian_mirror
  with pytest.raises(archive.ArchiveError, match=r"demo_1.0.orig.tar.xz: sha256 \w+ does not "
                     r"match the pinned 0{64}"):
    third_party_corpus.fetch_debian_source(mirror, "demo", "pool/main/d/demo/demo_1.0.orig.tar.xz",
                                           "0" * 64, str(tmp_path), registry_sources.LeftOut())
  with pytest.raises(archive.ArchiveError, match=r"absent_1.0.orig.tar.xz: cannot download"):
    third_party_corpus.fetch_debian_source(mirror, "absent",
                                           "pool/main/a/absent/absent_1.0.orig.tar.xz", "0" * 64,
                                           str(tmp_path), registry_sources.LeftOut())
  assert not (tmp_path / "repos").exists()
