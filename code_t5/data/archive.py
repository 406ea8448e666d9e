"""Published FLCC archives: download with progress and resume, checksum, extract.

Everything lands in a local download directory (`--download_dir`, by default
`<data_dir>/downloads/`): tar, zip and the FLCC tree reader read the local disk. A download in progress is `<name>.part` and is
resumed with an HTTP Range request; an extraction in progress is `<name>.incomplete/`. Only
finished files carry their final names, so a rerun after an interruption picks up where it
stopped and never takes a partial file for a whole one.
"""

import hashlib
import os
import tarfile
import urllib.parse
import urllib.request
import zipfile
from typing import Optional, Tuple

from tqdm import tqdm

from code_t5 import files

_CHUNK = 1 << 20


class ArchiveError(Exception):
  """The archive cannot be fetched, verified or extracted; the message names it."""


def _is_url(source: str) -> bool:
  return urllib.parse.urlparse(source).scheme in ("http", "https")


def sha256_of(path: str) -> str:
  digest = hashlib.sha256()
  with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(_CHUNK), b""):
      digest.update(chunk)
  return digest.hexdigest()


def download(url: str, out_dir: str) -> str:
  """Fetches `url` into `out_dir`, resuming a `.part` left by an interrupted run."""
  name = os.path.basename(urllib.parse.urlparse(url).path) or "archive"
  path = os.path.join(out_dir, name)
  if os.path.exists(path):
    return path
  os.makedirs(out_dir, exist_ok=True)
  partial = path + ".part"
  have = os.path.getsize(partial) if os.path.exists(partial) else 0
  request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
  try:
    response = urllib.request.urlopen(request, timeout=60)
  except (OSError, ValueError) as e:
    raise ArchiveError(f"{url}: cannot download ({e})") from None
  with response:
    if have and response.status != 206:  # the server ignored Range: start over
      have = 0
    total = response.headers.get("Content-Length")
    total = int(total) + have if total is not None else None
    with open(partial, "ab" if have else "wb") as f, tqdm(
        total=total, initial=have, unit="B", unit_scale=True, desc=f"download {name}") as bar:
      for chunk in iter(lambda: response.read(_CHUNK), b""):
        f.write(chunk)
        bar.update(len(chunk))
  os.replace(partial, path)
  return path


def extract(archive: str, out_dir: str) -> str:
  """Unpacks a .tar(.gz|.bz2|.xz) or .zip into `out_dir`, whole or not at all."""
  if os.path.isdir(out_dir):
    return out_dir
  try:
    with files.local_dir_written_whole(out_dir) as partial:
      if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
          members = z.infolist()
          for member in tqdm(members, desc="extract", unit=" files", mininterval=1):
            z.extract(member, partial)
      elif tarfile.is_tarfile(archive):
        with tarfile.open(archive) as t:
          for member in tqdm(t, desc="extract", unit=" files", mininterval=1):
            t.extract(member, partial, filter="data")
      else:
        raise ArchiveError(f"{archive}: not a tar or zip archive")
  except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as e:
    raise ArchiveError(f"{archive}: cannot extract ({e})") from None
  return out_dir


def find_flcc_root(extracted: str) -> str:
  """The folder holding `v3/` (or `v3/` itself) inside an extracted archive."""
  for dirpath, dirnames, _ in os.walk(extracted):
    if "v3" in dirnames:
      return dirpath
    if "repositories" in dirnames and "languages" in dirnames:
      return dirpath
  raise ArchiveError(f"{extracted}: no FLCC v3 tree (v3/languages, v3/repositories) inside")


def fetch(source: str, downloads: str,
          expected_sha256: Optional[str] = None) -> Tuple[str, dict]:
  """Local path or URL -> (FLCC tree root, provenance {archive, sha256}); the download and
  the extracted tree go to `downloads`, a local directory."""
  if _is_url(source):
    path = download(source, downloads)
  elif not files.is_local(source):
    raise ArchiveError(f"{source}: an archive is read from local disk or an http(s) URL; "
                       "copy it here first (gsutil cp)")
  elif os.path.isfile(source):
    path = source
  else:
    raise ArchiveError(f"{source}: no such file")
  sha = sha256_of(path)
  if expected_sha256 and sha != expected_sha256.lower():
    raise ArchiveError(f"{path}: sha256 {sha} does not match the expected {expected_sha256}")
  extracted = extract(path, os.path.join(downloads, f"{os.path.basename(path)}.{sha[:12]}"))
  return find_flcc_root(extracted), {"archive": source, "sha256": sha}
