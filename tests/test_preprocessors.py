"""Preprocessors and metrics on hand-written snippets, in eager TF."""

import random

import pytest
import tensorflow as tf

from code_t5 import metrics
from code_t5 import preprocessors
from code_t5_session import retrieval

SNIPPETS = {
    "spaces": "def f(x):\n    if x:\n        return 1\n    return 2\n",
    "tabs": "def f(x):\n\tif x:\n\t\treturn 1\n\treturn 2\n",
    "crlf": "a = 1\r\nb = 2\r\n\r\nc = a + b\r\n",
    "unicode": "größe = 3\nλ = größe * 2\nprint('☃', λ)\n",
    "blank_lines": "\n\nx = 1\n\n\n   \ny = 2\n\n",
    "no_final_newline": "x = 1\ny = x + 1",
    "long_line": "value = [" + ", ".join(str(i) for i in range(300)) + "]\nz = 0\n",
}


def _examples(text, sha="s", examples_per_file=16, seed=0, start_of_line_rate=0.5):
  ds = tf.data.Dataset.from_tensors({"content": text, "sha": sha})
  ds = preprocessors.full_line_examples(ds, examples_per_file=examples_per_file, seed=seed,
                                        start_of_line_rate=start_of_line_rate)
  return [(e["inputs"].decode("utf-8"), e["targets"].decode("utf-8"))
          for e in ds.as_numpy_iterator()]


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_inputs_plus_targets_is_a_prefix_ending_at_a_line_end(name):
  text = SNIPPETS[name]
  lines = text.split("\n")
  examples = _examples(text)
  non_blank = [l for l in lines if l.strip()]
  assert len(examples) == min(16, len(non_blank))
  for inputs, targets in examples:
    assert targets and targets.strip(), (inputs, targets)
    assert "\n" not in targets and not targets.endswith("\r")
    joined = inputs + targets
    assert text.startswith(joined)
    rest = text[len(joined):]
    assert rest == "" or rest.startswith("\n") or rest.startswith("\r\n")
    # The completion is the tail of a line whose head is in the inputs.
    line_head = inputs.rsplit("\n", 1)[-1]
    assert (line_head + targets).rstrip("\r") in [l.rstrip("\r") for l in lines]


def test_start_of_line_cursor_sits_after_the_indentation():
  examples = _examples(SNIPPETS["tabs"], start_of_line_rate=1.0)
  heads = {inputs.rsplit("\n", 1)[-1] for inputs, _ in examples}
  assert heads == {"", "\t", "\t\t"}
  assert {t for _, t in examples} == {"def f(x):", "if x:", "return 1", "return 2"}


def test_mid_line_cursor_splits_the_code():
  examples = _examples(SNIPPETS["spaces"], start_of_line_rate=0.0)
  assert len(examples) == 4  # one per non-blank line
  for inputs, targets in examples:
    head = inputs.rsplit("\n", 1)[-1]
    assert head.strip(), "a mid-line cursor has code before it on its line"


def test_unicode_cursor_never_splits_a_character():
  """Cursors are drawn in a line's bytes: one inside a multi-byte character fails the strict
  decode in _examples. So that the test meets that case, some cursors must stand inside lines
  that hold such characters, with code on both sides."""
  examples = _examples(SNIPPETS["unicode"], start_of_line_rate=0.0, seed=3)
  inside = [(inputs, targets) for inputs, targets in examples
            if inputs.rsplit("\n", 1)[-1].strip() and targets.strip()
            and not (inputs.rsplit("\n", 1)[-1] + targets).isascii()]
  assert len(inside) == len(examples) == 3, examples
  assert all("\ufffd" not in inputs + targets for inputs, targets in examples)


def test_examples_are_deterministic_per_file_and_vary_with_seed():
  text = SNIPPETS["long_line"] + SNIPPETS["spaces"] * 5
  assert _examples(text, sha="a") == _examples(text, sha="a")
  assert _examples(text, sha="a") != _examples(text, sha="b")
  assert _examples(text, sha="a", seed=0) != _examples(text, sha="a", seed=1)


def test_empty_and_blank_files_give_no_examples():
  assert _examples("") == []
  assert _examples("\n \n\t\n") == []


@pytest.mark.parametrize("tokens, max_length, expected", [
    ([5, 6, 3, 7, 8, 3, 9], 10, [5, 6, 3, 7, 8, 3, 9]),  # fits: unchanged
    ([5, 6, 3, 7, 8, 3, 9], 4, [7, 8, 3, 9]),  # cut right after a newline
    ([5, 6, 3, 7, 8, 3, 9], 3, [9]),  # the longest suffix that starts a line
    ([5, 6, 7, 8, 9], 3, [7, 8, 9]),  # one long line: plain left truncation
    ([5, 3, 6, 7, 8, 9], 4, [6, 7, 8, 9]),  # window starts exactly at a line start
    ([], 4, []),
])
def test_left_truncate_at_line(tokens, max_length, expected):
  result = preprocessors.left_truncate_at_line(tf.constant(tokens, tf.int32), max_length, 3)
  assert result.numpy().tolist() == expected


@pytest.mark.parametrize("tokens, expected", [
    ([5, 3, 6, 3, 7, 8], [5, 3, 6, 3, 7, 8]),  # fits: unchanged
    ([5, 3, 6, 3, 7, 8, 3], [6, 3, 7, 8, 3]),  # 1 over: cut at 2, where a line starts
    ([5, 3, 6, 3, 7, 8, 3, 9], [6, 3, 7, 8, 3, 9]),  # 2 over: the same start
    ([5, 3, 6, 3, 7, 8, 3, 9, 4], [7, 8, 3, 9, 4]),  # 3 over: cut at 4, a line start
    ([5, 3, 6, 3, 7, 8, 3, 9, 4, 4], [7, 8, 3, 9, 4, 4]),  # 4 over: the same start
    ([5, 3, 6, 3, 7, 8, 3, 9, 4, 4, 4], [9, 4, 4, 4]),  # 5 over: from 6, the next line's start
    ([5, 6, 7, 8, 9, 9, 9, 9, 9], [9, 9, 9, 9, 9]),  # no line start: the plain cut at 4
])
def test_left_truncate_at_line_with_a_stride(tokens, expected):
  """Cut only at a multiple of the stride (2), then at the first line start after it: the
  window keeps its start while the text after it grows by up to the stride."""
  result = preprocessors.left_truncate_at_line(tf.constant(tokens, tf.int32), 6, 3, stride=2)
  assert result.numpy().tolist() == expected


def test_cut_at_newline():
  assert preprocessors.cut_at_newline("return x\n    y = 2") == "return x"
  assert preprocessors.cut_at_newline("a = 1\r\nb") == "a = 1"
  assert preprocessors.cut_at_newline("no newline") == "no newline"


def test_metrics_on_known_pairs():
  targets = ["return x", "foo(bar)", "abc", ""]
  predictions = ["return x  ", "foo(baz)", "xyz", ""]
  assert metrics.exact_match(targets, predictions) == {"exact_match": 50.0}
  sim = metrics.edit_similarity(targets, predictions)["edit_similarity"]
  assert sim == pytest.approx(100 * (1 + 7 / 8 + 0 + 1) / 4)
  cov = metrics.prefix_coverage(targets, predictions)["prefix_coverage"]
  assert cov == pytest.approx(100 * (1 + 6 / 8 + 0 + 1) / 4)
  with pytest.raises(ValueError, match="2 targets but 1 predictions"):
    metrics.exact_match(["a", "b"], ["a"])


def test_codexglue_metrics_on_known_pairs():
  """CodeXGLUE's line-completion evaluator, worked by hand: exact match on whitespace-split
  tokens, fuzz.ratio = 100 * (1 - insertions and deletions / (len(a) + len(b))), rounded
  per example as fuzzywuzzy's integer ratio is."""
  targets = ["x = f(a, b)", "return x", "foo(bar)", "abc", " 1", ""]
  predictions = ["x =  f(a,  b)", "return y", "foo(bar)  ", "xyz", "1", ""]
  # Same tokens; one token differs; same after rstrip; nothing shared; a leading space
  # (both sides stripped); both empty.
  assert metrics.codexglue_exact_match(targets, predictions) == {
      "codexglue_exact_match": pytest.approx(100 * 4 / 6)}
  # "x = f(a, b)" (11) vs "x =  f(a,  b)" (13): two insertions -> 1 - 2/24 = 91.67 -> 92.
  # "return x" vs "return y": one substitution is an insertion and a deletion: 1 - 2/16 =
  # 87.5, which fuzzywuzzy's round() takes to 88 (round half to even).
  # "abc" vs "xyz": 0. "" vs "": 100, as fuzz.ratio of two equal strings.
  expected = (92 + 88 + 100 + 0 + 100 + 100) / 6
  assert metrics.codexglue_edit_similarity(targets, predictions) == {
      "codexglue_edit_similarity": pytest.approx(expected)}
  # Ours on the same pairs, for contrast: the extra spaces count.
  assert metrics.exact_match(targets, predictions)["exact_match"] == pytest.approx(100 * 2 / 6)
  assert metrics.FULL_LINE_METRIC_NAMES[-2:] == ("codexglue_exact_match",
                                                 "codexglue_edit_similarity")
  with pytest.raises(ValueError, match="2 targets but 1 predictions"):
    metrics.codexglue_edit_similarity(["a", "b"], ["a"])


# Repository context (code_t5_session/retrieval.py; preprocessors.repository_neighbours).
UTIL = ("pkg/util.py", "import json\n\n\ndef parse_config(path):\n    with open(path) as f:\n"
                       "        return json.load(f)\n\n\ndef unrelated():\n    return 42\n")
MODELS = ("pkg/models.py", "class Model:\n    def __init__(self, path):\n"
                           "        self.path = path\n")


def test_retrieval_puts_the_best_matching_lines_last_and_marks_them():
  prefix = "def load(path):\n    with open(path) as f:\n        return json."
  context = retrieval.RepositoryIndex([MODELS, UTIL], "python", window_lines=3).context(prefix)
  lines = context.split("\n")
  assert context.endswith(f"\n# {retrieval.END}\n")
  # The best window (json.load in util.py) stands last, under its path; every snippet is
  # lines of the file its header names.
  assert lines[-3] == "        return json.load(f)"
  headers = [i for i, line in enumerate(lines) if line.startswith("# pkg/")]
  assert lines[headers[-1]] == "# pkg/util.py"
  for first, end in zip(headers, headers[1:] + [len(lines) - 2]):
    path = lines[first][2:]
    assert "\n".join(lines[first + 1:end]) in dict([MODELS, UTIL])[path]
  # Overlapping windows of one file are not both taken.
  assert context.count("return json.load(f)") == 1
  # Java marks with //; nothing similar enough, or nothing to query with: no context.
  assert retrieval.RepositoryIndex([UTIL], "java", window_lines=3).context(prefix).startswith(
      "// pkg/")
  assert retrieval.RepositoryIndex([UTIL], "python").context("while True:\n    pass") == ""
  assert retrieval.RepositoryIndex([UTIL], "python").context("   \n") == ""


def _context_as_defined(index, prefix, query_lines, min_similarity):
  """RepositoryIndex.context's choice by its definition, with no budget: every window's
  Jaccard similarity to the query, best first (ties to the earlier file and window), each
  taken unless it overlaps one taken before; the best last."""
  query = retrieval.words("\n".join(prefix.split("\n")[-query_lines:]))
  ranked = sorted((-len(query & retrieval.words(text)) / len(query | retrieval.words(text)),
                   order, start, path, text)
                  for order, start, path, text in map(index.window, range(len(index))))
  taken = []
  for similarity, order, start, path, text in ranked:
    if query and -similarity >= min_similarity and all(
        o != order or abs(s - start) >= index.window_lines for o, s, _ in taken):
      taken.append((order, start, f"# {path}\n{text}\n"))
  return "".join(snippet for *_, snippet in reversed(taken)) + "# ---\n" if taken else ""


def test_retrieval_takes_the_windows_of_its_definition_on_random_repositories():
  # Few words, so that similarities tie often.
  rng = random.Random(5)
  vocabulary = ["a", "b", "c", "d", "x y", "1", "self.a", ""]
  chose = 0
  for _ in range(300):
    files = [(f"f{i}.py", "\n".join(" ".join(rng.choice(vocabulary) for _ in range(3))
                                    for _ in range(rng.randrange(0, 20))))
             for i in range(rng.randrange(1, 5))]
    index = retrieval.RepositoryIndex(files, "python", window_lines=rng.choice([1, 2, 4]))
    prefix = "\n".join(rng.choice(vocabulary) for _ in range(rng.randrange(1, 12)))
    query_lines, min_similarity = rng.choice([1, 3, 10]), rng.choice([0.0, 0.1, 0.5])
    expected = _context_as_defined(index, prefix, query_lines, min_similarity)
    assert index.context(prefix, max_tokens=10_000, query_lines=query_lines,
                         min_similarity=min_similarity) == expected, prefix
    chose += expected.count("# f") > 1
  assert chose > 100


def test_every_flcc_language_has_a_comment_mark():
  from code_t5.data import flcc  # pylint: disable=import-outside-toplevel
  assert set(retrieval.COMMENT) == set(flcc.LANGUAGES)


def test_neighbours_are_other_files_of_the_repository_within_a_group():
  files = [("r/a", "a.py"), ("r/b", "b.py"), ("r/a", "c.py"), ("r/a", "d.py"), ("r/b", "e.py")]
  ds = tf.data.Dataset.from_tensor_slices({
      "repository": [r for r, _ in files], "path": [p for _, p in files],
      "content": [f"# {p}\n" for _, p in files]})
  found = [(e["path"].decode(), sorted(p.decode() for p in e["neighbour_paths"]))
           for e in preprocessors.repository_neighbours(ds, group_files=3, max_neighbours=4)
           .as_numpy_iterator()]
  # The read's order kept; a neighbour only in the file's group of 3, never itself.
  assert found == [("a.py", ["c.py"]), ("b.py", []), ("c.py", ["a.py"]), ("d.py", []),
                   ("e.py", [])]
  capped = list(preprocessors.repository_neighbours(ds, group_files=8, max_neighbours=1)
                .as_numpy_iterator())
  assert [len(e["neighbour_contents"]) for e in capped] == [1, 1, 1, 1, 1]
  assert capped[1]["neighbour_contents"][0] == b"# e.py\n"
