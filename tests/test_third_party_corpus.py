"""scripts/third_party_corpus.py: a release found by its sha256 in an index's simple API
(JSON), served on loopback, becomes a git repository of one commit that is the same on every
run, its links left out as it is unpacked; a release not found is named."""

import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading

import pytest

from code_t5.data import archive

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
