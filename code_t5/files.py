"""Files a user names, read and written through TensorFlow's file layer (`tf.io.gfile`).

Data dirs, model dirs, vocabularies, reports, prefix files and outputs may be local paths or
`gs://bucket/...`, as in t5 and seqio; `os`, `open` and `glob` see only the local disk. A
write that lands whole or not at all goes to `<path>.incomplete` first and is renamed into
place, so an interrupted run never leaves a file that looks finished. A storage failure
(no such bucket, no access) is a StorageError naming the path.

TensorFlow 2.15's `makedirs` never returns under a bucket that does not exist: it walks up the
path to the first part that exists, and at `gs://bucket/` the walk stays put, asking GCS
forever. So every write here checks the bucket first, and under t5's and seqio's entry points
the buckets of their path flags are checked before t5 writes anything (`check_path_flags`).
"""

import contextlib
import errno
import functools
import os
import shutil
import sys


@functools.cache
def _tf():
  """TensorFlow, imported on first use: `python -m code_t5.data --help` stays quick."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return tf


class StorageError(OSError):
  """Reading or writing a path failed in TensorFlow's file layer; the message names it."""


def first_line(error: BaseException) -> str:
  text = (getattr(error, "message", None) or str(error)).strip()
  return text.splitlines()[0] if text else type(error).__name__


def is_tensorflow_error(error: BaseException) -> bool:
  """A tf.errors.OpError (NotFoundError, PermissionDeniedError...), without importing TF."""
  tf = sys.modules.get("tensorflow")
  return tf is not None and isinstance(error, tf.errors.OpError)


@contextlib.contextmanager
def storage_errors(path: str):
  """Turns TF's errors for `path` (NotFoundError, PermissionDeniedError...) into StorageError."""
  try:
    yield
  except _tf().errors.OpError as e:
    raise StorageError(f"{path}: {first_line(e)}") from None


def checkpoint_step(checkpoint_path: str) -> int:
  """The step of a checkpoint path (`.../model.ckpt-<step>`, as tf.train names them)."""
  return int(checkpoint_path.rsplit("-", 1)[1])


def latest_checkpoint(model_dir: str):
  """The checkpoint `model_dir`'s `checkpoint` file names (its path prefix), or None."""
  with storage_errors(model_dir):
    return _tf().train.latest_checkpoint(model_dir)


def latest_checkpoint_step(model_dir: str):
  """The step of the checkpoint `model_dir`'s `checkpoint` file names, or None."""
  path = latest_checkpoint(model_dir)
  return checkpoint_step(path) if path else None


def checkpoint_steps(model_dir: str) -> list:
  """The steps of the checkpoints in `model_dir` that have an index, ascending."""
  return sorted(checkpoint_step(path[:-len(".index")])
                for path in glob(os.path.join(model_dir, "model.ckpt-*.index")))


def checkpoint_problem(prefix: str):
  """Why the checkpoint at `prefix` (`.../model.ckpt-N`) cannot be restored, in a line that
  names the file, or None. Its index lists every tensor; a data file shorter than the bytes
  the index lists (a copy interrupted) is found here, not as an OutOfRangeError in TF's
  restore. Tensors of strings have no fixed size, and are not counted."""
  tf = _tf()
  if not exists(prefix + ".index"):
    return f"{prefix}.index: missing, so there is no checkpoint at {prefix}"
  try:
    reader = tf.train.load_checkpoint(prefix)
  except tf.errors.OpError as e:
    return f"{prefix}.index: cannot be read ({first_line(e)}): copy the checkpoint again"
  shapes, dtypes = reader.get_variable_to_shape_map(), reader.get_variable_to_dtype_map()
  if any(dtype == tf.string for dtype in dtypes.values()):
    return None
  listed = 0
  for name, shape in shapes.items():
    count = 1
    for size in shape:
      count *= size
    listed += count * dtypes[name].size
  data = glob(prefix + ".data-*-of-*")
  shards = int(data[0].rsplit("-of-", 1)[1]) if data else 1
  if len(data) < shards:
    return (f"{prefix}: {shards - len(data)} of its {shards} data files missing "
            f"({prefix}.data-*-of-{shards:05d}): copy the checkpoint again")
  with storage_errors(prefix):
    held = sum(tf.io.gfile.stat(path).length for path in data)
  if held < listed:
    return (f"{prefix}: cut short: its data files hold {held} of the {listed} bytes its index "
            "lists (an interrupted copy?): copy the checkpoint again, or use another step")
  return None


class CheckpointError(ValueError):
  """The checkpoint a run asks for is not there, or not whole; the message names it."""


def whole_checkpoint(path: str) -> str:
  """`path`, a checkpoint prefix, if it can be restored; else a CheckpointError saying why."""
  problem = checkpoint_problem(path)
  if problem:
    raise CheckpointError(problem)
  return path


def chosen_checkpoint(step: int, model_dir: str) -> str:
  """The checkpoint of `step` in `model_dir` (-1: the latest), whole. mesh-tf would take the
  closest step and say so only in its log; a step that is not there is an error here."""
  if step == -1:
    path = latest_checkpoint(model_dir)
    if path is None:
      raise CheckpointError(f"no checkpoint in {model_dir}: train there first, or give the "
                            "--model_dir that holds the model")
    return whole_checkpoint(path)
  steps = checkpoint_steps(model_dir)
  if step not in steps:
    kept = ", ".join(map(str, steps)) if steps else "none"
    raise CheckpointError(f"no checkpoint at step {step} in {model_dir}: steps {kept} "
                          "(CHECKPOINT_STEP = -1 takes the latest)")
  return whole_checkpoint(os.path.join(model_dir, f"model.ckpt-{step}"))


def bucket_of(path: str):
  """`gs://bucket` of a gs:// path, else None."""
  if not path.startswith("gs://"):
    return None
  return "gs://" + path[len("gs://"):].split("/", 1)[0]


def is_local(path: str) -> bool:
  """A path on the local disk, not `gs://...` (or another of TF's file systems)."""
  return "://" not in path


def check_bucket(path: str) -> None:
  bucket = bucket_of(path)
  if bucket and not exists(bucket):
    raise StorageError(f"{path}: bucket {bucket} does not exist, or this account cannot see it")


# Path flags of mesh_transformer_main and cache_tasks_main that they write to or read from.
PATH_FLAGS = ("model_dir", "t5_tfds_data_dir", "output_cache_dir", "tfds_data_dir")


def check_path_flags() -> None:
  """The bucket of each gs:// path flag exists (see the module doc); absl has parsed them."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  values = flags.FLAGS
  if not values.is_parsed():
    return
  for name in PATH_FLAGS:
    if name in values and isinstance(values[name].value, str):
      check_bucket(values[name].value)


def exists(path: str) -> bool:
  with storage_errors(path):
    return _tf().io.gfile.exists(path)


def isdir(path: str) -> bool:
  with storage_errors(path):
    return _tf().io.gfile.isdir(path)


def glob(pattern: str):
  with storage_errors(pattern):
    return sorted(_tf().io.gfile.glob(pattern))


def listdir(path: str) -> list:
  """The names in `path`, sorted; a folder's name without the `/` GCS lists it with."""
  with storage_errors(path):
    return sorted(name.rstrip("/") for name in _tf().io.gfile.listdir(path))


def makedirs(path: str) -> None:
  check_bucket(path)
  with storage_errors(path):
    _tf().io.gfile.makedirs(path)


def rmtree(path: str) -> None:
  with storage_errors(path):
    _tf().io.gfile.rmtree(path)


def write_atomically(path: str, data) -> None:
  """Writes `data` (str or bytes) to `path`, whole or not at all."""
  gfile = _tf().io.gfile
  partial = path + ".incomplete"
  check_bucket(path)
  with storage_errors(path):
    gfile.makedirs(os.path.dirname(path) or ".")
    with gfile.GFile(partial, "wb" if isinstance(data, bytes) else "w") as f:
      f.write(data)
    gfile.rename(partial, path, overwrite=True)


@contextlib.contextmanager
def local_dir_written_whole(out_dir: str):
  """Yields `<out_dir>.incomplete`, emptied, to fill; it replaces `out_dir` only when the block
  ends without an error. For local trees (FLCC trees extracted or written here), which git and
  tar read from the local disk."""
  partial = out_dir.rstrip("/") + ".incomplete"
  shutil.rmtree(partial, ignore_errors=True)
  yield partial
  shutil.rmtree(out_dir, ignore_errors=True)
  os.replace(partial, out_dir)


def read_bytes(path: str) -> bytes:
  with storage_errors(path), _tf().io.gfile.GFile(path, "rb") as f:
    return f.read()


def read_start(path: str, size: int) -> bytes:
  """The first `size` bytes of `path` (all of a shorter file), a chunk at a time: a larger
  object is known to be larger without being held whole. FileNotFoundError when it is not
  there, as `open` raises it."""
  tf = _tf()
  chunks, got = [], 0
  try:
    with tf.io.gfile.GFile(path, "rb") as f:
      while got < size:
        chunk = f.read(min(1 << 20, size - got))
        if not chunk:
          break
        chunks.append(chunk)
        got += len(chunk)
  except tf.errors.NotFoundError:
    raise FileNotFoundError(errno.ENOENT, "no such file", path) from None
  except tf.errors.OpError as e:
    raise StorageError(f"{path}: {first_line(e)}") from None
  return b"".join(chunks)


def read_text(path: str) -> str:
  with storage_errors(path), _tf().io.gfile.GFile(path, "r") as f:
    return f.read()
