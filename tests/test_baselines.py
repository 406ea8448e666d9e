"""The reference completers that scripts/bench_learning.py scores next to the model."""

import pytest

from code_t5 import baselines
from code_t5 import metrics
from code_t5.decoding import copying

STOP = (1, 2)  # stand-ins for EOS and the newline token


def test_ngram_takes_the_most_frequent_continuation_of_the_longest_context():
  docs = [[5, 6, 7, 8, 2], [5, 6, 7, 9, 2], [5, 6, 7, 8, 2], [3, 7, 9, 4, 2], [3, 7, 9, 4, 2]]
  ngram = baselines.NgramCompleter(order=4, vocab_size=10).fit(docs)
  assert ngram.complete([5, 6, 7], STOP, max_tokens=8) == [8]  # 8 twice, 9 once after 5 6 7
  # "3 7" is followed by 9 twice; "7" alone by 8 twice and 9 three times.
  assert ngram.complete([3, 7], STOP, max_tokens=8) == [9, 4]
  assert ngram.complete([4, 4, 7], STOP, max_tokens=8) == [9, 4]  # backs off to "7"
  assert ngram.complete([5, 6, 7], STOP, max_tokens=0) == []


def test_ngram_never_crosses_documents_and_stops_at_max_tokens():
  ngram = baselines.NgramCompleter(order=2, vocab_size=10).fit([[7, 8], [9, 3], [9, 3]])
  # Nothing follows 8 inside a document: back off to the most frequent token (3 and 9 tie,
  # the smaller id wins) rather than to the 9 that starts the next document.
  assert ngram.next_token([8]) == 3
  ngram = baselines.NgramCompleter(order=2, vocab_size=10).fit([[6, 4, 5, 4, 5]])
  assert ngram.complete([6], STOP, max_tokens=5) == [4, 5, 4, 5, 4]


def test_ngram_refuses_what_it_cannot_count():
  with pytest.raises(ValueError, match="no tokens"):
    baselines.NgramCompleter(order=3, vocab_size=10).fit([[], []])
  with pytest.raises(ValueError, match="int64"):
    baselines.NgramCompleter(order=5, vocab_size=2 ** 16)
  with pytest.raises(RuntimeError, match="fit"):
    baselines.NgramCompleter(order=3, vocab_size=10).next_token([1])


def test_copy_similar_line_copies_the_rest_of_the_best_matching_earlier_line():
  prefix = "x = foo(1)\ny = bar(2)\nx = f"
  assert copying.copy_similar_line(prefix) == "oo(1)"
  # Cursor after the indentation: the nearest line with that indentation wins the tie.
  prefix = "def f():\n    a = 1\n    b = 2\n\n    "
  assert copying.copy_similar_line(prefix) == "b = 2"
  assert copying.copy_similar_line("short\nmuch longer typed") == ""


def test_copy_next_line_copies_what_followed_the_line_before_the_cursor():
  prefix = ("    if a is None:\n        return NotImplemented\n    x = 1\n"
            "    if a is None:\n        ")
  assert copying.copy_next_line(prefix) == "return NotImplemented"
  # Only the same line, as before #60's analogues: the nearest earlier occurrence whose next
  # line starts with what is typed.
  exact = {"context_lines": 1, "min_similarity": 1.0}
  prefix = "if a:\n    b()\nif a:\n    c()\nz = 0\nif a:\n    b"
  assert copying.copy_next_line(prefix, **exact) == "()"
  assert copying.copy_next_line("x = 1\ny = 2\n", **exact) == ""
  assert copying.copy_next_line("if a:\n    b()\nif a:\n    c", **exact) == ""
  # Nothing to follow: the lines before the cursor are blank, or the file too short.
  assert copying.copy_next_line("x = 1\n\n\n") == ""
  assert copying.copy_next_line("x = 1\n") == ""


def test_copy_next_line_follows_the_nearest_like_place():
  # A second test after a first: the two lines before the cursor stand nowhere earlier, but
  # the place most like them is followed by the assert.
  prefix = ("def test_one():\n    got = parse('1')\n    assert got == 1\n\n"
            "def test_two():\n    got = parse('22')\n    ")
  assert copying.copy_next_line(prefix) == "assert got == 1"
  assert copying.copy_next_line(prefix, context_lines=1, min_similarity=1.0) == ""
  # A blank line is a line of the place: after a block and a blank line, the next block.
  assert copying.copy_next_line("x = 1\n\ny = 2\n\n") == "y = 2"
  # Of two places alike, the nearer; below min_similarity, none.
  prefix = "a = 1\nfirst()\na = 1\nsecond()\nzzz = 9\na = 1\n"
  assert copying.copy_next_line(prefix, context_lines=1) == "second()"
  assert copying.copy_next_line("class Q:\n    pass\nimport os\n", context_lines=1) == ""


def test_copy_next_line_moves_the_line_to_the_cursors_depth():
  # The place stands one level deeper earlier: its `else:` comes at the cursor's depth, not
  # 4 spaces right of it.
  prefix = ("def f(a):\n    if a:\n        if a > 1:\n            b = 2\n"
            "        else:\n            b = 3\n"
            "    if a > 1:\n        b = 2\n    ")
  assert copying.copy_next_line(prefix) == "else:"
  # A deeper line keeps its depth below the place's: the body after `if x:` one level in.
  prefix = "        if x:\n            go()\nif x:\n"
  assert copying.copy_next_line(prefix, context_lines=1) == "    go()"
  # A line shallower than its place: as many columns left of the cursor's depth; a place
  # whose line would go left of column 0 is passed over, for the next like one if any.
  prefix = ("class A:\n    def f(self):\n        return 1\n    x = 1\n"
            "def g():\n    return 2\n")
  assert copying.copy_next_line(prefix, context_lines=1) == "x = 1"
  assert copying.copy_next_line("    return 1\nx = 1\nreturn 2\n", context_lines=1) == ""
  prefix = "return 9\nfirst()\n    return 1\nx = 1\nreturn 2\n"
  assert copying.copy_next_line(prefix, context_lines=1) == "first()"
  # The places' last lines are not alike (the place matched on its first line): their
  # depths need not correspond, so the line keeps its own.
  prefix = "total = compute(values)\n        zzzzzz\n    next_line()\ntotal = compute(values)\nqq\n"
  assert copying.copy_next_line(prefix) == "    next_line()"
  # Tabs: the cursor's indentation is the base, the line's own beyond its place's is kept.
  assert copying.copy_next_line("if a:\n\tb()\n\tif a:\n\t", context_lines=1) == "\tb()"


def test_cursor_class_tells_a_cursor_inside_a_word_from_one_between_words():
  assert metrics.cursor_class("def f():\n    ", "return x") == "line start"
  assert metrics.cursor_class("x = 1\n", "y = 2") == "line start"
  assert metrics.cursor_class("    self.na", "me = name") == "inside a word"
  assert metrics.cursor_class("    self.", "name = name") == "between words"
  assert metrics.cursor_class("    return x", " + 1") == "between words"
  assert metrics.cursor_class("    total_", "2 += 1") == "inside a word"
  assert metrics.cursor_class("    x", "") == "between words"


def test_by_cursor_scores_each_class_on_its_own_examples():
  prefixes = ["a = se", "    ", "b = "]
  targets = ["lf.x", "pass", "2"]
  predictions = ["lf.x", "return", "3"]
  by = metrics.by_cursor(prefixes, targets, predictions)
  assert set(by) == {"inside a word", "line start", "between words"}
  assert by["inside a word"]["examples"] == 1 and by["inside a word"]["exact_match"] == 100.0
  assert by["line start"]["exact_match"] == 0.0
  assert by["between words"]["edit_similarity"] == 0.0


def test_acceptance_shows_the_best_scoring_suggestions_first():
  targets = ["a", "b", "c", "d"]
  predictions = ["a", "b", "x", "yyyy"]
  scores = [-0.1, -0.5, -2.0, float("-inf")]  # the last returned nothing
  rows = metrics.acceptance(targets, predictions, scores, shown_shares=(100, 75, 50, 25))
  # 100% cannot be shown: one example has no suggestion.
  assert [(r["shown"], r["min_score"]) for r in rows] == [(75.0, -2.0), (50.0, -0.5),
                                                           (25.0, -0.1)]
  assert [r["exact_match"] for r in rows] == pytest.approx([200 / 3, 100.0, 100.0])
  assert rows[0]["edit_similarity"] == pytest.approx(200 / 3)
  with pytest.raises(ValueError, match="3 scores"):
    metrics.acceptance(targets, predictions, scores[:3])
