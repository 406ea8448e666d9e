"""Published FLCC archives: download with progress and resume, checksum, extract.

Everything lands in a local download directory (`--download_dir`, by default
`<data_dir>/downloads/`): tar, zip and the FLCC tree reader read the local disk. A download is
named by a key of its URL (`download_name`); in progress it is `<name>.part` and is resumed with
an HTTP Range request, from the same URL only; an extraction in progress is
`<name>.incomplete/`. Only finished files carry their final names, so a rerun after an
interruption picks up where it stopped and never takes a partial file for a whole one.

An archive is data from strangers: extraction writes regular files and folders inside the
extraction folder and nothing else (no link, device or sparse member; no name that leaves the
folder), within `Limits` (a member's size, the whole), on every Python 3.11 whatever its
tarfile's fixes.
"""

import dataclasses
import hashlib
import logging
import os
import stat
import tarfile
import urllib.parse
import urllib.request
import zipfile
import zlib
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


def url_file_name(url: str) -> str:
  """The name of the file a URL names (`flcc-v3.tar.gz`)."""
  return os.path.basename(urllib.parse.urlparse(url).path) or "archive"


def download_name(url: str, expected_sha256: Optional[str] = None) -> str:
  """The file a URL downloads to: its own name after a key of the whole URL (and the sha the
  caller expects), so that two URLs whose files share a name never share a download, nor
  resume each other's `.part`."""
  name = url_file_name(url)
  key = hashlib.sha256(f"{url}\n{(expected_sha256 or '').lower()}".encode("utf-8")).hexdigest()
  return f"{key[:16]}-{name}"


def download(url: str, out_dir: str, expected_sha256: Optional[str] = None) -> str:
  """Fetches `url` into `out_dir`, resuming a `.part` that an interrupted run of the same URL
  left (`download_name`)."""
  name = download_name(url, expected_sha256)
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


@dataclasses.dataclass(frozen=True)
class Limits:
  """What an archive may unpack to: each member, and all of them together (a 427-byte
  .tar.gz can hold a 50 GB file). A published FLCC archive's files are source files of at
  most a few MB and the metadata beside them; its whole tree tens of GB."""
  max_member_bytes: int = 1 << 30
  max_extracted_bytes: int = 256 << 30


def _member_path(archive: str, name: str) -> str:
  """A member's name as a relative path inside the extraction folder, or ArchiveError: no
  absolute name, no `..`, no NUL (tar and zip both store names as their writer gave them)."""
  parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
  if name.startswith(("/", "\\")) or ".." in parts or "\0" in name or (
      parts and len(parts[0]) == 2 and parts[0][1] == ":"):
    raise ArchiveError(f"{archive}: member {name!r} would be written outside the extraction "
                       "folder; refused")
  return os.path.join(*parts) if parts else ""


class _Budget:
  """The bytes written so far against Limits, member by member; links left out, where the
  caller leaves them out rather than refuse them."""

  def __init__(self, archive: str, limits: Limits, skip_links: bool):
    self.archive, self.limits, self.total = archive, limits, 0
    self.skip_links, self.links_skipped = skip_links, 0

  def refused(self, name: str, kind: str, link: bool) -> None:
    """A member that is no regular file or folder: left out and counted if it is a link and
    links are left out, else refused in one line."""
    if link and self.skip_links:
      self.links_skipped += 1
      return
    raise ArchiveError(f"{self.archive}: member {name!r} is {kind}; an FLCC archive holds "
                       "regular files and folders only")

  def copy(self, source, destination: str, name: str) -> None:
    """Streams one member to `destination` (a new file, mode 0644), counting every byte read,
    not the size the archive declares (a zip's can lie)."""
    written = 0
    try:
      out = open(destination, "xb")  # pylint: disable=consider-using-with
    except FileExistsError:
      raise ArchiveError(f"{self.archive}: member {name!r} is stored twice; refused") from None
    with out:
      for chunk in iter(lambda: source.read(_CHUNK), b""):
        written += len(chunk)
        self.total += len(chunk)
        if written > self.limits.max_member_bytes:
          raise ArchiveError(f"{self.archive}: member {name!r} unpacks to more than "
                             f"{self.limits.max_member_bytes} bytes (--max_member_bytes)")
        if self.total > self.limits.max_extracted_bytes:
          raise ArchiveError(f"{self.archive}: unpacks to more than "
                             f"{self.limits.max_extracted_bytes} bytes "
                             "(--max_extracted_bytes)")
        out.write(chunk)


def _extract_tar(archive: str, partial: str, budget: _Budget) -> None:
  """Regular files and folders only, each written by us from its bytes (tarfile's extract and
  its filters are not used: their 2025 fixes, CVE-2025-4517 among them, came in 3.11.13)."""
  with tarfile.open(archive) as t:
    for member in tqdm(t, desc="extract", unit=" files", mininterval=1):
      path = _member_path(archive, member.name)
      if member.isdir():
        os.makedirs(os.path.join(partial, path), exist_ok=True)
        continue
      if not member.isreg() or member.issparse():
        kind = ("a symbolic link" if member.issym() else "a hard link" if member.islnk() else
                "a device" if member.isdev() else "a sparse file" if member.issparse() else
                "not a regular file")
        budget.refused(member.name, kind, member.issym() or member.islnk())
        continue
      if not path:
        continue
      os.makedirs(os.path.dirname(os.path.join(partial, path)), exist_ok=True)
      budget.copy(t.extractfile(member), os.path.join(partial, path), member.name)


def _extract_zip(archive: str, partial: str, budget: _Budget) -> None:
  """As _extract_tar: regular files and folders, links refused (a zip from Unix records one
  in the high bits of external_attr)."""
  with zipfile.ZipFile(archive) as z:
    for info in tqdm(z.infolist(), desc="extract", unit=" files", mininterval=1):
      path = _member_path(archive, info.filename)
      # Unix's st_mode, where the writer recorded one; its type bits may be left at 0
      # (Python's writestr records permissions alone), which is a regular file.
      kind = stat.S_IFMT(info.external_attr >> 16)
      if info.is_dir():
        os.makedirs(os.path.join(partial, path), exist_ok=True)
        continue
      if kind not in (0, stat.S_IFREG):
        budget.refused(info.filename,
                       "a symbolic link" if kind == stat.S_IFLNK else "not a regular file",
                       kind == stat.S_IFLNK)
        continue
      if not path:
        continue
      os.makedirs(os.path.dirname(os.path.join(partial, path)), exist_ok=True)
      with z.open(info) as source:
        budget.copy(source, os.path.join(partial, path), info.filename)


def extract(archive: str, out_dir: str, limits: Limits = Limits(),
            skip_links: bool = False) -> str:
  """Unpacks a .tar(.gz|.bz2|.xz) or .zip into `out_dir`, whole or not at all: regular files
  and folders inside it, within `limits`; anything else is refused in one line. With
  `skip_links`, links (symbolic or hard) are left out and counted instead: what a release's
  sdist may hold, which code_t5 would leave out of a tree anyway."""
  if os.path.isdir(out_dir):
    return out_dir
  try:
    with files.local_dir_written_whole(out_dir) as partial:
      budget = _Budget(archive, limits, skip_links)
      if zipfile.is_zipfile(archive):
        _extract_zip(archive, partial, budget)
      elif tarfile.is_tarfile(archive):
        _extract_tar(archive, partial, budget)
      else:
        raise ArchiveError(f"{archive}: not a tar or zip archive")
      if budget.links_skipped:
        logging.getLogger("code_t5.data").warning("%s: %d links left out", archive,
                                                  budget.links_skipped)
  except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError, zlib.error, RuntimeError,
          NotImplementedError) as e:  # (zip: encrypted, or a compression it lacks)
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


def fetch(source: str, downloads: str, expected_sha256: Optional[str] = None,
          limits: Limits = Limits()) -> Tuple[str, dict]:
  """Local path or URL -> (FLCC tree root, provenance {archive, sha256}); the download and
  the extracted tree go to `downloads`, a local directory."""
  if _is_url(source):
    path = download(source, downloads, expected_sha256)
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
  extracted = extract(path, os.path.join(downloads, f"{os.path.basename(path)}.{sha[:12]}"),
                      limits)
  return find_flcc_root(extracted), {"archive": source, "sha256": sha}
