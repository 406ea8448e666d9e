"""Repository context: the lines of a repository's other files that best match the code
before the cursor (RepoCoder's sliding windows, scored by Jaccard similarity of their sets
of words), as the text the model reads before the file's own.

Plain Python, one rule for every reader: the full-line Task calls it in training and eval
(code_t5.preprocessors.full_line_examples, through tf.numpy_function), infer on the
repository files a JSON line carries, and an editor's Session on the files it passes. What it
returns ends in a line of its own (END), so the file's text that follows starts a line:

    # other/module.py
    <the best-matching window of lines of other/module.py>
    # ---

Snippets come worst first, best last -- nearest the cursor, and the last to go when the
reader cuts the context to its token budget from the left (at a line start).
"""

import functools
import re
from typing import Iterable, Optional, Tuple

import numpy as np

# Words: identifiers, keywords and numbers. Their sets are what two pieces of code share.
_WORD = re.compile(r"\w+")
# A line comment in each FLCC language (code_t5.data.flcc.LANGUAGES): it marks the snippets
# as text from elsewhere, in a form the language itself has.
COMMENT = {
    "python": "#", "ruby": "#",
    "java": "//", "kotlin": "//", "javascript": "//", "typescript": "//", "go": "//",
    "cpp": "//", "csharp": "//", "php": "//", "rust": "//",
}
# Each FLCC language's file extensions: the one table (code_t5.data.flcc.LANGUAGES names the
# tree's folders with it; a language server takes a workspace's files of a language by it).
EXTENSIONS = {
    "python": (".py",), "java": (".java",), "kotlin": (".kt",), "javascript": (".js",),
    "typescript": (".ts",), "go": (".go",), "cpp": (".cpp", ".cc", ".h", ".hpp"),
    "csharp": (".cs",), "php": (".php",), "ruby": (".rb",), "rust": (".rs",),
}
END = "---"
# A token is rarely fewer characters: the snippets retrieved stop past this many characters a
# token of the budget (a bound on the work of tokenizing them); the budget cuts them after.
CHARS_PER_TOKEN = 6


def token_budget(max_tokens: int, inputs_length: int) -> int:
  """The most tokens of context an input of `inputs_length` holds: `max_tokens`, at most half
  of it (the file's own text has the rest)."""
  return min(max_tokens, inputs_length // 2)


def words(text: str) -> frozenset:
  return frozenset(_WORD.findall(text))


@functools.lru_cache(maxsize=64)
def _rows(content: str) -> Tuple[str, ...]:
  return tuple(content.split("\n"))


def window_text(content: str, start: int, lines: int) -> str:
  """The text of the window of `lines` lines of `content` from line `start` (a chosen window's;
  the lines of the files most chosen from are kept)."""
  return "\n".join(_rows(content)[start:start + lines]).rstrip("\n")


# Kept across calls: in training every file of a repository searches the same neighbours.
@functools.lru_cache(maxsize=2048)
def windows(content: str, lines: int, stride: int):
  """The windows of `lines` lines of `content`, `stride` lines apart, that hold a word, as
  numbers: (each one's first line; the distinct words of all of them; each one's words as
  indexes into those, one window after another; each one's count of words). Numbers, not sets
  of strings: those took 290 MB for the 61,000 windows of 703 files, an index of these 65."""
  rows = content.split("\n")
  starts, distinct, ids, counts = [], {}, [], []
  for start in range(0, max(len(rows) - lines, 0) + 1, stride):
    found = words("\n".join(rows[start:start + lines]))
    if found:
      starts.append(start)
      ids += [distinct.setdefault(word, len(distinct)) for word in found]
      counts.append(len(found))
  return (np.array(starts, np.int64), tuple(distinct), np.array(ids, np.intp),
          np.array(counts, np.int64))


class RepositoryIndex:
  """The windows of a file's neighbours, (path, content) of other files of its repository:
  `window_lines` lines each, half a window apart, each file read to its first `file_chars`
  characters. Made once for all the cursors of a file."""

  def __init__(self, neighbours: Iterable[Tuple[str, str]], language: str,
               window_lines: int = 10, file_chars: int = 100_000):
    self.comment = COMMENT.get(language, "#")
    self.window_lines = window_lines
    # Each window's words as ids, one window after another, so that a query's shared words
    # are counted for all windows at once: a repository of a thousand files has 10^5 windows,
    # and an editor asks at each keystroke (a loop over them took 90 ms a call at 60,000).
    # Each file's are numbered once (`windows`, cached), then renumbered here.
    self.files, self._vocabulary = [], {}
    orders, starts, word_ids, sizes = [], [], [], []
    for order, (path, content) in enumerate(neighbours):
      content = content[:file_chars]
      self.files.append((path, content))
      first_lines, distinct, ids, counts = windows(content, window_lines,
                                                   max(window_lines // 2, 1))
      ours = np.array([self._vocabulary.setdefault(word, len(self._vocabulary))
                       for word in distinct], np.intp)
      orders.append(np.full(len(first_lines), order, np.int64))
      starts.append(first_lines)
      word_ids.append(ours[ids])
      sizes.append(counts)
    joined = lambda arrays, dtype: np.concatenate(arrays) if arrays else np.zeros(0, dtype)
    self._order, self._start = joined(orders, np.int64), joined(starts, np.int64)
    self._word_ids, self._sizes = joined(word_ids, np.intp), joined(sizes, np.int64)
    self._first_word = np.cumsum(self._sizes) - self._sizes
    self._order_of = {path: order for order, (path, _) in enumerate(self.files)}  # `skip`'s

  def __len__(self) -> int:
    return len(self._order)

  def window(self, i: int) -> Tuple[int, int, str, str]:
    """(neighbour's order, first line, path, text) of window `i`, in the windows' order: by
    neighbour, then by first line."""
    order, start = int(self._order[i]), int(self._start[i])
    path, content = self.files[order]
    return order, start, path, window_text(content, start, self.window_lines)

  def similarities(self, query: frozenset) -> np.ndarray:
    """The Jaccard similarity of `query` to each window's words (shared words / words of
    either), in the windows' order."""
    in_query = np.zeros(len(self._vocabulary), bool)
    in_query[np.array([self._vocabulary[word] for word in query if word in self._vocabulary],
                      np.int64)] = True
    # Summed window by window (every window has a word), into an array of one count a window:
    # a running sum as long as the words allocated megabytes a call, which cost more than it.
    shared = np.add.reduceat(in_query[self._word_ids], self._first_word, dtype=np.int64)
    return shared / (len(query) + self._sizes - shared)

  def context(self, prefix: str, max_tokens: int = 64, query_lines: int = 10,
              min_similarity: float = 0.1, skip: Optional[str] = None) -> str:
    """The context for the code before the cursor, `prefix`: the windows most similar to its
    last `query_lines` lines, at least `min_similarity`, no two overlapping, best last, until
    CHARS_PER_TOKEN * `max_tokens` characters (the reader cuts them to `token_budget` after
    tokenizing); none of the file at path `skip` (the one being typed, where the index holds
    all of a workspace's). "" when no window is similar enough."""
    max_chars = CHARS_PER_TOKEN * max_tokens
    query = words("\n".join(prefix.rsplit("\n", query_lines)[-query_lines:]))
    if not query or not len(self):
      return ""
    similarity = self.similarities(query)
    if skip in self._order_of:
      similarity[self._order == self._order_of[skip]] = -1.0
    passing = np.flatnonzero(similarity >= min_similarity)
    # Most similar first; ties go to the earlier neighbour and the earlier window (the
    # windows' order, which a stable sort keeps): the same choice every run.
    chosen, taken, size = [], [], 0
    for i in passing[np.argsort(-similarity[passing], kind="stable")]:
      order, start = int(self._order[i]), int(self._start[i])
      if any(o == order and abs(s - start) < self.window_lines for o, s in taken):
        continue
      _, _, path, text = self.window(i)
      snippet = f"{self.comment} {path}\n{text}\n"
      chosen.append(snippet)
      taken.append((order, start))
      size += len(snippet)
      if size >= max_chars:
        break
    if not chosen:
      return ""
    return "".join(reversed(chosen)) + f"{self.comment} {END}\n"


def index_of(neighbours: Iterable[Tuple[str, str]], language: str,
             options: dict) -> RepositoryIndex:
  """The index of `neighbours` by `options`, the keys of `code_t5.repository_context` (gin,
  or an export's session.json): what the Task, infer and a Session all make."""
  return RepositoryIndex(neighbours, language, options["window_lines"], options["file_chars"])


def context_of(index: RepositoryIndex, prefix: str, options: dict,
               skip: Optional[str] = None) -> str:
  """`index`'s context for `prefix` by `options` (as `index_of`), none of `skip`'s windows."""
  return index.context(prefix, options["max_tokens"], options["query_lines"],
                       options["min_similarity"], skip)
