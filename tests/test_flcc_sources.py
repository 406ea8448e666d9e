"""Other ways into the same dataset: Apache Beam, local archives, downloads that resume."""

import hashlib
import http.server
import os
import threading

import pytest
import tensorflow_datasets as tfds
from tensorflow_datasets.core import example_serializer

from code_t5.data import archive
from code_t5.data import builder
from code_t5.data import flcc

from conftest import (FIXTURE_RATIOS, build_report, run_data_cli, run_data_cli_forked,
                      split_records)

RATIOS_FLAG = "--ratios=" + ",".join(str(r) for r in FIXTURE_RATIOS)


def _split_shas(data_dir):
  """Each split's shas in the order TFDS reads them."""
  return {split: [e["sha"] for e in tfds.as_numpy(
      tfds.load("flcc/python:1.0.0", split=split, data_dir=data_dir, shuffle_files=False))]
          for split in flcc.SPLITS}


# The fixture's modules share a template: at a Jaccard of 0.35 many are near-duplicates of
# each other, across splits and within train, which `drop` removes from both.
NEAR_DUPLICATES_EVERYWHERE = ("--near_duplicates=drop", "--near_duplicate_threshold=0.35")


@pytest.mark.slow
@pytest.mark.parametrize("beam_options, flags", [
    ("", ()),
    # What a machine with many cores uses for the full dataset: worker processes of their own,
    # each judging a share of the near-duplicates (beam_near_duplicates).
    ("--direct_num_workers=2 --direct_running_mode=multi_processing", NEAR_DUPLICATES_EVERYWHERE),
], ids=["one process", "two worker processes, near-duplicates dropped"])
def test_beam_build_matches_the_in_process_build(flcc_tree, flcc_data_dir, tmp_path,
                                                 beam_options, flags):
  beam_dir = str(tmp_path / "beam")
  run_data_cli_forked("build", f"--flcc_dir={flcc_tree}", f"--data_dir={beam_dir}", RATIOS_FLAG,
                      "--beam_runner=DirectRunner", f"--beam_options={beam_options}", *flags)
  plain_dir = flcc_data_dir
  if flags:
    plain_dir = str(tmp_path / "plain")
    run_data_cli("build", f"--flcc_dir={flcc_tree}", f"--data_dir={plain_dir}", RATIOS_FLAG,
                 *flags)
  beam_options, beam_report = build_report(beam_dir)
  plain_options, plain_report = build_report(plain_dir)
  assert beam_options["beam"] and not plain_options["beam"]
  assert beam_report == plain_report
  removed = plain_report["near_duplicates"].get("removed", {})
  assert not flags or (removed["train"] and removed["validation"] + removed["test"])
  assert _split_shas(beam_dir) == _split_shas(plain_dir)
  # The in-process build serializes examples itself (builder.TextExampleSerializer); Beam's
  # are TFDS' own: the same bytes.
  assert split_records(beam_dir) == split_records(plain_dir)
  _check_that_a_build_that_lost_files_is_removed(beam_dir)


def _check_that_a_build_that_lost_files_is_removed(data_dir):
  """Beam's DirectRunner with worker processes has lost examples of a large split while its
  counters counted them (builder.check_every_kept_file_written): the check, on a real Beam
  build whose report is made to count one train file more than TFDS wrote."""
  built = builder.finished_builder(data_dir, "python")
  built.flcc_report = build_report(data_dir)[1]
  builder.check_every_kept_file_written(built)  # as the build left it: nothing lost
  built.flcc_report["splits"]["train"]["files"] += 1
  with pytest.raises(flcc.IncompleteBuildError, match="the Beam runner wrote ([0-9,]+) of the "
                     "([0-9,]+) train files the build kept: the dataset is removed") as raised:
    builder.check_every_kept_file_written(built)
  wrote, kept = (int(n.replace(",", "")) for n in raised.value.args[0].split("wrote ")[1].split(
      " train")[0].split(" of the "))
  assert kept == wrote + 1
  assert builder.finished_builder(data_dir, "python") is None



def test_examples_serialize_as_tfds_serializes_them(flcc_tree):
  """builder.TextExampleSerializer against TFDS' ExampleSerializer, on every kept file of the
  fixture tree (non-ASCII text included) and on text given as bytes."""
  features = builder.Flcc(config="python", data_dir="unused").info.features
  tfds_serializer = example_serializer.ExampleSerializer(features.get_serialized_info())
  ours = builder.TextExampleSerializer(features.get_serialized_info())
  plan = flcc.plan_build(flcc_tree, "python", FIXTURE_RATIOS)
  examples = [builder._example(source, sha, "python")  # pylint: disable=protected-access
              for kept in plan.files.values() for source, sha in kept]
  assert any(not e["content"].isascii() for e in examples)
  for example in examples + [{k: v.encode("utf-8") for k, v in examples[0].items()}]:
    assert ours.serialize_example(example) == tfds_serializer.serialize_example(
        features.encode_example(example))


def test_build_from_a_local_archive_records_its_checksum(fixture_archive, flcc_data_dir,
                                                         tmp_path):
  data_dir = str(tmp_path / "tfds")
  run_data_cli("build", f"--archive={fixture_archive}", f"--data_dir={data_dir}", RATIOS_FLAG)
  options, report = build_report(data_dir)
  with open(fixture_archive, "rb") as f:
    assert options["archive_sha256"] == hashlib.sha256(f.read()).hexdigest()
  _assert_the_trees_dataset(report, flcc_data_dir, options["archive_sha256"])


def _assert_the_trees_dataset(report, flcc_data_dir, archive_sha256):
  """The report of an archive's build is the extracted tree's, but that its fingerprint holds
  the archive's sha too (another archive of the same repository names is another dataset)."""
  report, tree_report = dict(report), build_report(flcc_data_dir)[1]
  assert report.pop("fingerprint") == dict(tree_report.pop("fingerprint"),
                                           archive_sha256=archive_sha256)
  assert report == tree_report


def test_wrong_checksum_is_refused(fixture_archive, tmp_path):
  proc = run_data_cli("build", f"--archive={fixture_archive}", f"--data_dir={tmp_path}",
                      "--archive_sha256=" + "0" * 64, check=False)
  assert proc.returncode == 1
  assert f"{fixture_archive}: sha256" in proc.stderr and "does not match" in proc.stderr


def test_not_an_archive_is_one_line(tmp_path):
  bogus = tmp_path / "bogus.tar.gz"
  bogus.write_bytes(b"this is not a tarball")
  proc = run_data_cli("build", f"--archive={bogus}", f"--data_dir={tmp_path}", check=False)
  assert proc.returncode == 1
  assert proc.stderr.strip().splitlines()[-1] == (
      f"code_t5.data build: error: {bogus}: not a tar or zip archive")


@pytest.mark.parametrize("args, path", [
    (["build", "--archive={archive}", "--data_dir=gs://bucket/data"], "gs://bucket/data/downloads"),
    (["build", "--archive=gs://bucket/flcc.tar.gz", "--data_dir={tmp}"], "gs://bucket/flcc.tar.gz"),
    (["dev", "--root=gs://bucket/dev"], "gs://bucket/dev"),
    (["dev", "--language=java", "--root={tmp}", "--jdk_src=gs://bucket/src.zip"],
     "gs://bucket/src.zip"),
], ids=["downloads under a gs:// data dir", "gs:// archive", "gs:// dev root",
        "gs:// JDK sources"])
def test_what_must_be_local_says_so_in_one_line(fixture_archive, tmp_path, monkeypatch, args,
                                                path):
  """Archives and their extraction are read by tar and zip, and a dev tree written, on the
  local disk. A gs:// path there is refused before anything is written: `os` would take
  `gs://bucket/...` for a relative local path and write a directory named `gs:`."""
  monkeypatch.chdir(tmp_path)
  args = [a.format(archive=fixture_archive, tmp=tmp_path / "tfds") for a in args]
  proc = run_data_cli(*args, check=False)
  assert proc.returncode == 1, proc.stdout + proc.stderr
  last = proc.stderr.strip().splitlines()[-1]
  assert last.startswith(f"code_t5.data {args[0]}: error: {path}: ") and "local" in last, last
  assert os.listdir(tmp_path) == []


def test_download_dir_is_where_an_archive_is_extracted(fixture_archive, flcc_data_dir,
                                                       tmp_path):
  data_dir, downloads = str(tmp_path / "tfds"), tmp_path / "downloads"
  run_data_cli("build", f"--archive={fixture_archive}", f"--data_dir={data_dir}",
               f"--download_dir={downloads}", RATIOS_FLAG)
  # The extracted tree, <archive name>.<sha-256 prefix>, and nothing else.
  assert [p.name.startswith(os.path.basename(fixture_archive) + ".")
          for p in downloads.iterdir()] == [True]
  options, report = build_report(data_dir)
  _assert_the_trees_dataset(report, flcc_data_dir, options["archive_sha256"])


class _RangeHandler(http.server.BaseHTTPRequestHandler):
  """Serves one payload; honours `Range: bytes=N-` unless told not to."""
  payload = b""
  honour_range = True
  ranges_seen = []

  def do_GET(self):  # pylint: disable=invalid-name
    start = 0
    header = self.headers.get("Range")
    type(self).ranges_seen.append(header)
    if header and self.honour_range:
      start = int(header.split("=")[1].rstrip("-"))
      self.send_response(206)
    else:
      self.send_response(200)
    body = self.payload[start:]
    self.send_header("Content-Length", str(len(body)))
    self.end_headers()
    self.wfile.write(body)

  def log_message(self, *args):
    pass


@pytest.fixture
def server():
  httpd = http.server.HTTPServer(("127.0.0.1", 0), _RangeHandler)
  thread = threading.Thread(target=httpd.serve_forever, daemon=True)
  thread.start()
  _RangeHandler.ranges_seen = []
  yield httpd
  httpd.shutdown()


@pytest.mark.parametrize("honour_range", [True, False])
def test_download_resumes_a_partial_file(server, tmp_path, honour_range):
  payload = os.urandom(3 * 1024 * 1024 + 17)
  _RangeHandler.payload, _RangeHandler.honour_range = payload, honour_range
  url = f"http://127.0.0.1:{server.server_port}/part-1.tar.gz"
  out = tmp_path / "downloads"
  out.mkdir()
  part = out / (archive.download_name(url) + ".part")
  part.write_bytes(payload[:1000000])  # left by a killed run
  path = archive.download(url, str(out))
  with open(path, "rb") as f:
    assert f.read() == payload
  assert _RangeHandler.ranges_seen == ["bytes=1000000-"]
  assert not part.exists()
  archive.download(url, str(out))  # finished: not fetched again
  assert len(_RangeHandler.ranges_seen) == 1


def test_a_download_is_its_urls_alone(server, tmp_path):
  """Two URLs whose files share a name: neither reuses the other's download nor resumes the
  other's `.part` (a spliced file would pass no checksum, or worse, the first URL's would be
  taken for the second's)."""
  payload = os.urandom(100_000)
  _RangeHandler.payload, _RangeHandler.honour_range = payload, True
  first = f"http://127.0.0.1:{server.server_port}/a/flcc.tar.gz"
  second = f"http://localhost:{server.server_port}/b/flcc.tar.gz"
  out = tmp_path / "downloads"
  out.mkdir()
  (out / (archive.download_name(first) + ".part")).write_bytes(b"another file's start")
  assert archive.download_name(first) != archive.download_name(second)
  with open(archive.download(second, str(out)), "rb") as f:
    assert f.read() == payload
  assert _RangeHandler.ranges_seen == [None]  # the whole file, from its own URL


def test_unreachable_url_names_it(tmp_path):
  with pytest.raises(archive.ArchiveError, match=r"http://127.0.0.1:9/x.tar.gz: cannot download"):
    archive.download("http://127.0.0.1:9/x.tar.gz", str(tmp_path))
