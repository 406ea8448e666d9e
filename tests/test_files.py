"""code_t5.files: the one place user-named files are read and written (tf.io.gfile)."""

import os

import pytest

from code_t5 import files


def test_an_atomic_write_lands_whole_and_leaves_nothing_beside_it(tmp_path):
  path = str(tmp_path / "deep" / "dir" / "report.json")
  files.write_atomically(path, "{}\n")
  files.write_atomically(path, b"\x00\x01")  # bytes, over the old file
  assert files.read_bytes(path) == b"\x00\x01"
  assert os.listdir(tmp_path / "deep" / "dir") == ["report.json"]


def test_a_storage_failure_names_the_path(tmp_path):
  (tmp_path / "a_file").write_text("x")
  with pytest.raises(files.StorageError, match=r"a_file/out\.txt: "):
    files.write_atomically(str(tmp_path / "a_file" / "out.txt"), "y")  # under a file
  with pytest.raises(files.StorageError, match=r"missing\.model: "):
    files.read_bytes(str(tmp_path / "missing.model"))
  assert not files.exists(str(tmp_path / "missing.model"))
