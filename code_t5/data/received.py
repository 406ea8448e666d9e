"""Reading a file someone else made: a regular file where it lies, to a bound.

One rule for every read of received content (an FLCC tree's stored files and metadata, a plain
folder's files, the small files of a git dir): a symbolic link is not followed (its target may
be anywhere, /dev/zero among them), a FIFO or a device is refused without waiting on it, and at
most `limit + 1` bytes are read, so that "too large" is known without holding the whole file.
A folder of it is reached from the folder it was handed in by no link either (`first_link`).

A tree handed in as `gs://...` is read through TensorFlow's file layer (`files`), to the same
bound; an object store has no links, FIFOs or devices, so the rest of the rule holds there by
construction. The listing functions below (`isdir`, `listdir`, `lexists`) are the same choice
made for folders: the local disk's own calls, which see a link as a link, or TF's.
"""

import os
import stat
from typing import List, Optional

from code_t5 import files


_CHUNK = 1 << 20


class NotRegular(OSError):
  """A link, FIFO, device or folder where a file was to be read."""


class IsLink(NotRegular):
  """A symbolic link where a file was to be read."""


def read_bounded(path: str, limit: int) -> bytes:
  """At most `limit + 1` bytes of the regular file at `path`: more than `limit` means too
  large. IsLink for a link, NotRegular for anything else but a regular file; FileNotFoundError
  and other OSErrors as `open` raises them (files.StorageError on gs://)."""
  if not files.is_local(path):
    return files.read_start(path, limit + 1)
  try:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
  except OSError as e:
    if os.path.islink(path):  # O_NOFOLLOW's ELOOP
      raise IsLink(e.errno, "a symbolic link", path) from None
    raise
  with os.fdopen(fd, "rb", buffering=0) as f:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
      raise NotRegular(0, "not a regular file", path)
    # A chunk at a time: read(limit + 1) would allocate the whole bound up front.
    chunks, size = [], 0
    while size <= limit:
      chunk = f.read(min(_CHUNK, limit + 1 - size))
      if not chunk:
        break
      chunks.append(chunk)
      size += len(chunk)
    return b"".join(chunks)


def first_link(path: str, root: str) -> Optional[str]:
  """The first symbolic link on the way from `root` down to `path` (`path` included, `root`
  not), or None where there is none. `path` lies below `root`, or is it."""
  if not files.is_local(root):
    return None
  relative = os.path.relpath(path, root)
  current = root
  for part in [] if relative == os.curdir else relative.split(os.sep):
    current = os.path.join(current, part)
    if os.path.islink(current):
      return current
  return None


def isdir(path: str) -> bool:
  """A folder at `path` (locally, a link to one counts: `first_link` finds the link)."""
  return os.path.isdir(path) if files.is_local(path) else files.isdir(path)


def listdir(path: str) -> List[str]:
  """The names in the folder `path`, in the file system's order; OSError if it cannot be
  listed."""
  return os.listdir(path) if files.is_local(path) else files.listdir(path)


def lexists(path: str) -> bool:
  """Something at `path`; locally a link counts, whatever it points at."""
  return os.path.lexists(path) if files.is_local(path) else files.exists(path)
