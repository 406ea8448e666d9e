"""An editor's open document as the Language Server Protocol addresses it: lines broken at
"\\n", "\\r\\n" and "\\r" alone, columns counted in UTF-16 code units.

pygls' own TextDocument breaks lines with str.splitlines, which also breaks at form feeds,
U+2028 and five other characters that LSP does not count (a column after a form feed in a
Python file then lands on the wrong line), and rebuilds the whole text line by line at each
change. Here a change rewrites the text once, and the line starts are kept and moved, not
found again: a keystroke in a 5 MB file costs a copy of its text, not a scan of its lines.
"""

import bisect
import re
from typing import List, Optional

_BREAK = re.compile(r"\r\n|\r|\n")


def line_starts(text: str, start: int = 0, end: Optional[int] = None) -> List[int]:
  """The offsets in `text` at which a line starts after a break found in text[start:end]."""
  return [m.end() for m in _BREAK.finditer(text, start, len(text) if end is None else end)]


def utf16_length(text: str) -> int:
  """`text`'s length in UTF-16 code units: 2 for a character past U+FFFF."""
  return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def column_offset(line: str, units: int) -> int:
  """The index in `line` (its text, no break) of UTF-16 column `units`: past the line's end,
  its end (LSP); inside a surrogate pair, the character's start."""
  if units >= len(line) and line.isascii():
    return len(line)
  if line.isascii():
    return units
  count = 0
  for i, c in enumerate(line):
    width = 2 if ord(c) > 0xFFFF else 1
    if count + width > units:
      return i
    count += width
  return len(line)


class Document:
  """An open document's text and version, changed as LSP's incremental sync says."""

  def __init__(self, text: str, version: int = 0):
    self.text, self.version = text, version
    self._starts = [0] + line_starts(text)

  def _line_end(self, line: int) -> int:
    """The offset of line `line`'s break (or the text's end)."""
    if line + 1 < len(self._starts):
      end = self._starts[line + 1]
      return end - (2 if self.text.startswith("\r\n", end - 2) else 1)
    return len(self.text)

  def offset(self, line: int, character: int) -> int:
    """The index into `text` of an LSP position: a line past the last is the text's end."""
    if line < 0 or character < 0:
      raise ValueError(f"a position has no negative parts: line {line}, character {character}")
    if line >= len(self._starts):
      return len(self.text)
    start = self._starts[line]
    return start + column_offset(self.text[start:self._line_end(line)], character)

  def position(self, offset: int):
    """(line, UTF-16 character) of the index `offset` into `text`."""
    line = bisect.bisect_right(self._starts, offset) - 1
    return line, utf16_length(self.text[self._starts[line]:offset])

  def change(self, text: str, start=None, end=None, version: Optional[int] = None):
    """Replaces the range from `start` to `end`, (line, character) positions, with `text`;
    without a range, the whole text (LSP's full change)."""
    if start is None:
      self.__init__(text, self.version if version is None else version)
      return
    first, last = self.offset(*start), self.offset(*end)
    if last < first:
      raise ValueError(f"a change's range ends before it starts: {start} to {end}")
    self.text = self.text[:first] + text + self.text[last:]
    # The starts before the changed text's line stay; those after its end move by the change's
    # length; the ones between are found again, from the line before the change's start to
    # two past its end (a "\r" before it and a "\n" after it are one break).
    low = max(bisect.bisect_right(self._starts, first - 1) - 1, 0)
    high = bisect.bisect_right(self._starts, last)
    delta = len(text) - (last - first)
    scan_end = min(len(self.text), first + len(text) + 2)
    if self.text.startswith("\r\n", scan_end - 1):
      scan_end += 1
    found = line_starts(self.text, self._starts[low], scan_end)
    moved = [s + delta for s in self._starts[high:] if s + delta > scan_end]
    self._starts = self._starts[:low + 1] + [s for s in found if s > self._starts[low]] + moved
    if version is not None:
      self.version = version
