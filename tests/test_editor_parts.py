"""The language server's parts that need no model: LSP's documents (lines, UTF-16 columns,
incremental changes), the settings an editor sends, the workspace's files and their bounds,
the text a suggestion reads, and the reading of framed messages."""

import io
import json
import os
import random

import pytest

from code_t5_session import documents
from code_t5_session import editor
from code_t5_session import lsp
from code_t5_session import retrieval


def test_lines_break_where_lsp_breaks_them_and_columns_count_utf16_units():
  # "\r\n", "\r" and "\n" break; a form feed and U+2028 (str.splitlines breaks at both) do not.
  document = documents.Document("a = '😋é'\r\nb\rc\x0cd\u2028e\nf")
  assert document.offset(0, 5) == 5 and document.offset(0, 7) == 6  # 😋: two UTF-16 units
  assert document.offset(0, 6) == 5  # inside its surrogate pair: the character's start
  assert document.offset(0, 8) == 7 and document.offset(0, 99) == 8  # past the end: the end
  assert document.offset(1, 1) == 11
  assert document.offset(2, 0) == 12 and document.offset(2, 5) == 17  # "c\fd\u2028e" is one line
  assert document.offset(3, 1) == 19 and document.offset(9, 0) == 19
  assert document.position(6) == (0, 7) and document.position(19) == (3, 1)
  with pytest.raises(ValueError, match="negative"):
    document.offset(-1, 0)


def test_incremental_changes_keep_the_text_and_its_line_starts_as_a_full_reading_would():
  """Random edits of text full of breaks ("\\r" then "\\n" typed apart make one break),
  against the text edited by offsets and its line starts found again from scratch."""
  rng = random.Random(7)
  pieces = ["a", "\n", "\r", "\r\n", "😋", "é", "\x0c", "\t"]
  text = lambda n: "".join(rng.choice(pieces) for _ in range(n))  # noqa: E731
  checked = 0
  for _ in range(3000):
    document = documents.Document(text(rng.randrange(12)))
    for _ in range(6):
      start = rng.randrange(len(document.text) + 1)
      end = rng.randrange(start, len(document.text) + 1)
      first, last = document.position(start), document.position(end)
      if document.offset(*first) != start or document.offset(*last) != end:
        continue  # between a "\r" and its "\n": no position names it
      new = text(rng.randrange(4))
      expected = document.text[:start] + new + document.text[end:]
      document.change(new, first, last, version=checked)
      assert document.text == expected
      assert document._starts == [0] + documents.line_starts(expected)  # pylint: disable=protected-access
      checked += 1
  assert checked > 10000
  document.change("whole\nnew", version=1)
  assert (document.text, document.offset(1, 2), document.version) == ("whole\nnew", 8, 1)


@pytest.mark.parametrize("options,error", [
    ({"weight": "float"}, "no setting 'weight'"),
    ({"weights": "int4"}, "weights = \"int4\": one of float, int8"),
    ({"threads": -1}, "threads = -1: a count"),
    ({"threads": True}, "threads = true: a count"),
    ({"threshold": 1.5}, "threshold = 1.5: a number from 0 to 1"),
    ({"decoding": "beam"}, "decoding = \"beam\": one of consensus, greedy"),
    ({"repository": "yes"}, "repository = \"yes\": true or false"),
    ([1], "must be an object"),
])
def test_settings_that_are_not_ours_are_one_line_naming_them(options, error):
  with pytest.raises(ValueError, match=error.replace("(", r"\(")) as raised:
    editor.Settings.of(options)
  assert "\n" not in str(raised.value)


def test_settings_default_and_take_what_is_given():
  assert editor.Settings.of(None) == editor.Settings() == editor.Settings.of([])  # Lua's {}
  settings = editor.Settings.of({"weights": "int8", "threads": 1, "threshold": 0.5,
                                 "decoding": "greedy", "copy_from": "window",
                                 "repository": False})
  assert (settings.weights, settings.threads, settings.threshold, settings.decoding,
          settings.copy_from, settings.repository) == ("int8", 1, 0.5, "greedy", "window", False)


def test_a_workspaces_files_are_read_within_bounds_and_what_is_left_out_is_counted(
    tmp_path, monkeypatch):
  (tmp_path / "pkg").mkdir()
  (tmp_path / "pkg" / "a.py").write_text("a = 1\n")
  (tmp_path / "pkg" / "b.py").write_bytes(b"b = '\xe9'\n")  # not UTF-8: read, U+FFFD
  (tmp_path / "pkg" / "big.py").write_text("x = 1\n" * 100)
  (tmp_path / "pkg" / "notes.txt").write_text("not python\n")
  for hidden in (".git", "node_modules", "__pycache__"):
    (tmp_path / hidden).mkdir()
    (tmp_path / hidden / "c.py").write_text("c = 1\n")
  outside = tmp_path.parent / f"{tmp_path.name}_outside"
  outside.mkdir()
  (outside / "secret.py").write_text("secret = 1\n")
  (tmp_path / "link.py").symlink_to(outside / "secret.py")
  (tmp_path / "linked").symlink_to(outside)
  monkeypatch.setattr(editor, "MAX_FILE_BYTES", 100)
  files, left_out = editor.workspace_files(str(tmp_path), (".py",))
  assert files == [("pkg/a.py", "a = 1\n"), ("pkg/b.py", "b = '\ufffd'\n")]
  assert left_out == {"over 100 bytes or not readable": 1}
  files, left_out = editor.workspace_files(str(tmp_path), (".py",), max_files=1)
  assert [path for path, _ in files] == ["pkg/a.py"]
  assert left_out == {"past 1 files": 2}  # not read once past the bound
  monkeypatch.setattr(editor, "MAX_WALK_ENTRIES", 3)
  _, left_out = editor.workspace_files(str(tmp_path), (".py",))
  assert left_out == {"past 3 entries": 1}


def test_a_suggestion_reads_the_cursors_last_lines_up_to_the_bound(monkeypatch):
  monkeypatch.setattr(editor, "MAX_PREFIX_CHARS", 10)
  text = "first line\nsecond\nthird"
  assert editor.cut_prefix(text, 5) == "first"
  assert editor.cut_prefix(text, len(text)) == "third"  # from the line start within the bound
  assert editor.cut_prefix("x" * 30, 25) == "x" * 10  # no line start in it: the bound


def test_language_of_a_document_by_its_id_else_its_extension():
  assert editor.language_of("python", "/a/b.txt") == "python"
  assert editor.language_of("javascriptreact", "/a/b.jsx") == "javascript"
  assert editor.language_of("plaintext", "/a/B.java") == "java"
  assert editor.language_of("plaintext", "/a/b.txt") is None


def test_framed_messages_are_read_and_bad_frames_reported_not_fatal(monkeypatch):
  monkeypatch.setattr(lsp, "MAX_MESSAGE_BYTES", 8)
  stream = io.BytesIO(b"Content-Length: 2\r\n\r\n{}"
                      b"\r\ncontent-length:3\r\nContent-Type: x\r\n\r\n[1]"
                      b"Content-Length: 20\r\n\r\n" + b"x" * 20 +
                      b"X-Junk: " + b"y" * 5000 + b"\r\nContent-Length: 2\r\n\r\n{}"
                      b"Content-Length: 9\r\n\r\n{")  # cut short: the end
  got = []
  lsp.read_messages(stream, got.append)
  assert got == [b"{}", b"[1]", "a message of 20 bytes, over the 8 this server reads",
                 f"a message's header passes {lsp.MAX_HEADER_BYTES} bytes", b"{}"]


def test_an_export_that_is_not_one_is_named_in_one_line(tmp_path):
  assert "no such folder" in lsp.check_export(str(tmp_path / "none"))
  assert "no session.json" in lsp.check_export(str(tmp_path))
  (tmp_path / "session.json").write_text("{")
  assert "not JSON" in lsp.check_export(str(tmp_path))
  assert "copy the export down" in lsp.check_export("gs://bucket/export")
  (tmp_path / "session.json").write_text('{"inputs_length": 64}')  # another program's
  assert "no 'targets_length': not the settings of an export" in lsp.check_export(str(tmp_path))
  (tmp_path / "session.json").write_text(json.dumps({key: 0 for key in lsp.EXPORT_KEYS}))
  assert "no model.onnx: not a whole export" in lsp.check_export(str(tmp_path))
  for reason in (lsp.check_export(str(tmp_path)), lsp.check_export(str(tmp_path / "none"))):
    assert "\n" not in reason
  assert os.sep in lsp.check_export(str(tmp_path / "none"))


def test_a_shared_index_leaves_out_the_typed_files_own_windows():
  files = [("a.py", "def load(path):\n    return open(path)\n"),
           ("b.py", "def load(path):\n    return read(path)\n")]
  index = retrieval.index_of(files, "python", {"window_lines": 10, "file_chars": 1000})
  prefix = "def load(path):\n"
  both = index.context(prefix)
  assert "# a.py" in both and "# b.py" in both
  assert "# a.py" not in index.context(prefix, skip="a.py")
  assert "# b.py" in index.context(prefix, skip="a.py")
  assert index.context(prefix, skip="elsewhere.py") == both
