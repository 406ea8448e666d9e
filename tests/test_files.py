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


def test_the_latest_checkpoint_step_is_read_from_tfs_own_checkpoint_file(tmp_path):
  import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top
  assert files.latest_checkpoint_step(str(tmp_path)) is None
  with tf.Graph().as_default():
    tf.train.get_or_create_global_step()
    saver = tf.train.Saver(max_to_keep=1)
    with tf.Session() as session:
      session.run(tf.global_variables_initializer())
      for step in (7, 12):  # the second rotates the first away
        saver.save(session, str(tmp_path / "model.ckpt"), global_step=step)
  assert files.latest_checkpoint_step(str(tmp_path)) == 12
