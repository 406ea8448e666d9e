"""Reading a file someone else made: a regular file where it lies, to a bound.

One rule for every read of received content (an FLCC tree's stored files and metadata, a plain
folder's files, the small files of a git dir): a symbolic link is not followed (its target may
be anywhere, /dev/zero among them), a FIFO or a device is refused without waiting on it, and at
most `limit + 1` bytes are read, so that "too large" is known without holding the whole file.
A folder of it is reached from the folder it was handed in by no link either (`first_link`).
"""

import os
import stat
from typing import Optional


_CHUNK = 1 << 20


class NotRegular(OSError):
  """A link, FIFO, device or folder where a file was to be read."""


class IsLink(NotRegular):
  """A symbolic link where a file was to be read."""


def read_bounded(path: str, limit: int) -> bytes:
  """At most `limit + 1` bytes of the regular file at `path`: more than `limit` means too
  large. IsLink for a link, NotRegular for anything else but a regular file; FileNotFoundError
  and other OSErrors as `open` raises them."""
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
  relative = os.path.relpath(path, root)
  current = root
  for part in [] if relative == os.curdir else relative.split(os.sep):
    current = os.path.join(current, part)
    if os.path.islink(current):
      return current
  return None
