"""A language server: an export's suggestions in any editor that speaks LSP.

    python -m code_t5_session.lsp --export_dir=runs/dev/session

speaks the Language Server Protocol over stdin and stdout (pygls). At each keystroke the
editor sends the change (incremental sync, columns in UTF-16 code units: documents.py) and
asks `textDocument/inlineCompletion` (LSP 3.18: the rest of the line as ghost text) or, where
it has no inline completion, `textDocument/completion` (one item, the same text). Each open
document has a `Session` of the export, all sharing one copy of the weights (editor.py).

The model works on one thread of its own. A request remembers how many changes its document
had when it came: one whose document has changed since (the user typed on) is answered empty
without running the model, and `$/cancelRequest` takes a waiting request off the queue.

Settings come as `initializationOptions` (editor.Settings). An export that is missing or is
not one is a line on stderr at start-up and a `window/showMessage` to the editor; every
request is then answered empty. A message that is not JSON-RPC gets an error response (id
null where it had none readable) and the server goes on; the end of stdin ends it.
"""

import argparse
import asyncio
import collections
import concurrent.futures
import json
import logging
import os
import re
import sys
import threading
from typing import Optional

from code_t5_session import documents
from code_t5_session import editor
from code_t5_session.session import CONFIG

NAME = "code_t5"
log = logging.getLogger("code_t5_session.lsp")
# A message longer than this is read past and answered with an error, its body not kept.
MAX_MESSAGE_BYTES = 64 << 20
MAX_HEADER_BYTES = 1 << 12
# What an export's session.json has that a Session reads.
EXPORT_KEYS = ("inputs_length", "targets_length", "healing_pieces", "healing_texts",
               "copy_cache", "newline_id", "eos_id", "int8")
# JSON-RPC's error codes.
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
# The files whose changes a client that watches files for servers is asked to send.
WATCHED = "**/*.{" + ",".join(sorted({e[1:] for extensions in editor.retrieval.EXTENSIONS.values()
                                      for e in extensions})) + "}"


def read_messages(stream, on_message):
  """Reads LSP's framed messages from `stream` (a binary file) and calls `on_message` with
  each body (bytes), or with an error's text (str) for one that cannot be read; returns at
  the stream's end."""
  while True:
    length, header_bytes = None, 0
    while True:
      line = stream.readline(MAX_HEADER_BYTES)
      if not line:
        return
      header_bytes += len(line)
      if line.strip() == b"":
        if length is not None:
          break
        continue  # blank lines between messages
      match = re.fullmatch(rb"content-length:\s*(\d+)\s*", line, re.IGNORECASE)
      if match:
        length = int(match.group(1))
      if header_bytes > MAX_HEADER_BYTES:
        on_message(f"a message's header passes {MAX_HEADER_BYTES} bytes")
        length, header_bytes = None, 0
    if length > MAX_MESSAGE_BYTES:
      left = length
      while left > 0:  # read past it, a chunk at a time
        chunk = stream.read(min(left, 1 << 20))
        if not chunk:
          return
        left -= len(chunk)
      on_message(f"a message of {length} bytes, over the {MAX_MESSAGE_BYTES} this server reads")
      continue
    body = stream.read(length)
    if len(body) < length:
      return
    on_message(body)


class _Writer:
  """The protocol's output: a client that has gone (its pipe closed) ends the writing
  quietly; the end of stdin then ends the server."""

  def __init__(self, stream):
    self.stream, self.gone = stream, False

  def write(self, data: bytes):
    if self.gone:
      return
    try:
      self.stream.write(data)
      self.stream.flush()
    except (OSError, ValueError):  # BrokenPipeError; or written to after exit closed it
      self.gone = True

  def close(self):
    self.gone = True
    try:
      self.stream.close()
    except OSError:
      pass


class _AnsweredByUs(logging.Filter):
  """pygls logs a traceback for a message it cannot read; the server answers it with an
  error response and a line of its own."""

  def filter(self, record):
    return not record.getMessage().startswith("Unable to deserialize message")


def _version() -> str:
  """The installed code_t5's version (pyproject.toml's), told to the editor."""
  import importlib.metadata  # pylint: disable=g-import-not-at-top
  try:
    return importlib.metadata.version("code_t5")
  except importlib.metadata.PackageNotFoundError:
    return "not installed"


def _server_classes():
  """The pygls classes (imported here: `read_messages` and the module's names need no pygls)."""
  from lsprotocol import types  # pylint: disable=g-import-not-at-top
  from pygls.lsp.server import LanguageServer  # pylint: disable=g-import-not-at-top
  from pygls.protocol import LanguageServerProtocol  # pylint: disable=g-import-not-at-top
  from pygls.protocol.language_server import lsp_method  # pylint: disable=g-import-not-at-top

  class Protocol(LanguageServerProtocol):
    """pygls' protocol with our documents (documents.Document) in place of its workspace's,
    and columns in UTF-16 whatever else the client offers (the encoding every client has)."""

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params):
      if params.capabilities.general is not None:
        params.capabilities.general.position_encodings = None  # pygls then takes UTF-16
      result = yield from super().lsp_initialize(params)
      return result

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params):
      item = params.text_document
      self._server.opened(item.uri, item.text, item.version, item.language_id)

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params):
      self._server.changed(params.text_document.uri, params.text_document.version,
                           params.content_changes)

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params):
      self._server.closed(params.text_document.uri)

  class Server(LanguageServer):
    """The language server of one export."""

    def __init__(self, export_dir: str):
      super().__init__(NAME, _version(), protocol_cls=Protocol,
                       text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
      self.export_dir = export_dir
      self.documents = {}  # uri -> (documents.Document, language)
      self.changes = collections.Counter()  # uri -> the changes seen (opened, changed, closed)
      self.completer: Optional[editor.Completer] = None
      self.error: Optional[str] = None  # why there are no suggestions
      self.model_thread = concurrent.futures.ThreadPoolExecutor(1, "code_t5_model")
      self.counts = collections.Counter()  # requests by what became of them
      self.roots = []  # the workspace folders' paths, the longest first
      self._loop = None

    # Documents (the loop's thread).
    def opened(self, uri, text, version, language_id):
      path = editor.path_of(uri) or uri
      self.documents[uri] = (documents.Document(text, version),
                             editor.language_of(language_id, path))
      self.changes[uri] += 1

    def changed(self, uri, version, changes):
      entry = self.documents.get(uri)
      if entry is None:
        log.warning("a change to %s, which is not open: left alone", uri)
        return
      document = entry[0]
      for change in changes:
        if isinstance(change, types.TextDocumentContentChangePartial):
          document.change(change.text, (change.range.start.line, change.range.start.character),
                          (change.range.end.line, change.range.end.character))
        else:
          document.change(change.text)
      document.version = version
      self.changes[uri] += 1

    def closed(self, uri):
      self.documents.pop(uri, None)
      self.changes[uri] += 1
      self.model_thread.submit(self._forget, uri)

    def _forget(self, uri):
      if self.completer is not None:
        self.completer.forget(uri)

    def changed_file(self, path):
      """A workspace file was saved, made or deleted (the model's thread)."""
      if self.completer is not None:
        self.completer.changed_file(path)

    def root_of(self, uri) -> Optional[str]:
      path = editor.path_of(uri)
      if path is None:
        return None
      path = os.path.realpath(path)
      for root in self.roots:
        if path.startswith(root.rstrip(os.sep) + os.sep):
          return root
      return None

    # The model (its thread).
    def load(self, settings):
      try:
        export = editor.Export(self.export_dir, settings.weights, settings.threads)
        self.completer = editor.Completer(export, settings)
      except Exception as error:  # pylint: disable=broad-except
        self.fail(f"{self.export_dir}: {str(error).splitlines()[0] if str(error) else type(error).__name__}")

    def fail(self, message, logged=False):
      """No suggestions, and why: a line on stderr (unless `logged` already) and a message
      to the editor."""
      self.error = message
      if not logged:
        log.error("%s", message)
      loop = self._loop
      if loop is not None:
        loop.call_soon_threadsafe(self.window_show_message, types.ShowMessageParams(
            types.MessageType.Error, f"{NAME}: no suggestions: {message}"))

    def _suggest(self, uri, prefix, changes, root, language):
      if self.changes[uri] != changes or uri not in self.documents:
        self.counts["stale"] += 1
        return ""
      if self.completer is None:
        self.counts["no model"] += 1
        return ""
      suggestion, shown = self.completer.suggest(uri, prefix, root, language)
      if self.changes[uri] != changes:
        self.counts["stale once computed"] += 1
        return ""
      self.counts["decoded" if suggestion.decoded else "kept"] += 1
      if not shown:
        self.counts["not shown"] += 1
      return suggestion.text if shown else ""

    async def suggestion(self, uri, position) -> str:
      """The suggestion at `position` of the document `uri` ("" for none)."""
      entry = self.documents.get(uri)
      if entry is None:
        self.counts["not open"] += 1
        return ""
      document, language = entry
      offset = document.offset(position.line, position.character)
      prefix = editor.cut_prefix(document.text, offset)
      return await asyncio.get_running_loop().run_in_executor(
          self.model_thread, self._suggest, uri, prefix, self.changes[uri],
          self.root_of(uri), language)

    # Messages that pygls cannot read.
    def send_error(self, msg_id, code, message):
      body = json.dumps({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": message}}).encode("utf-8")
      self.protocol.writer.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    def handle(self, body):
      """One message's body, or read_messages' error text."""
      if isinstance(body, str):
        log.warning("%s", body)
        self.send_error(None, INVALID_REQUEST, body)
        return
      # Bytes that are not UTF-8 (an editor that sent a file's bytes as they were) stand
      # as lone surrogates, which a Session reads as U+FFFD.
      text = body.decode("utf-8", "surrogateescape")
      try:
        raw = json.loads(text)
      except ValueError as error:
        self.send_error(None, PARSE_ERROR, f"not JSON: {error}")
        return
      msg_id = raw.get("id") if isinstance(raw, dict) else None
      if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
        self.send_error(msg_id, INVALID_REQUEST, "not a JSON-RPC 2.0 message")
        return
      try:
        message = json.loads(text, object_hook=self.protocol.structure_message)
      except Exception as error:  # pylint: disable=broad-except
        what = f"{raw.get('method', 'a message')}: its params are not LSP's ({error})"
        log.warning("%s", what)
        if "method" in raw and msg_id is not None:
          self.send_error(msg_id, INVALID_PARAMS, what)
        return
      self.protocol.handle_message(message)

    async def run(self, stdin, stdout):
      self._loop = asyncio.get_running_loop()
      self.protocol.set_writer(_Writer(stdout))
      bodies = asyncio.Queue()

      def read():  # a thread: the loop stays free while a read waits
        read_messages(stdin, lambda body: self._loop.call_soon_threadsafe(bodies.put_nowait,
                                                                          body))
        self._loop.call_soon_threadsafe(bodies.put_nowait, None)
      threading.Thread(target=read, name="code_t5_stdin", daemon=True).start()
      while True:
        body = await bodies.get()
        if body is None:
          log.info("stdin ended: the client is gone")
          return
        try:
          self.handle(body)
        except SystemExit:
          raise
        except Exception:  # pylint: disable=broad-except
          log.exception("a message's handling failed; the server goes on")
        # A request's handler starts (and notes its document's changes) before the next
        # message is read: a queue that holds one returns it without yielding to the loop.
        await asyncio.sleep(0)

  return types, Server


def make_server(export_dir: str):
  """The server of `export_dir`, its features registered."""
  types, Server = _server_classes()  # pylint: disable=invalid-name
  server = Server(export_dir)

  @server.feature(types.INITIALIZE)
  def initialize(ls, params):
    from pygls.exceptions import JsonRpcInvalidParams  # pylint: disable=g-import-not-at-top
    try:
      settings = editor.Settings.of(params.initialization_options)
    except ValueError as error:  # the editor shows it: the reply to initialize is this error
      log.error("%s", error)
      raise JsonRpcInvalidParams(str(error)) from None
    folders = [editor.path_of(f.uri) for f in params.workspace_folders or []]
    if params.root_uri:
      folders.append(editor.path_of(params.root_uri))
    elif params.root_path:
      folders.append(params.root_path)
    ls.roots = sorted({os.path.realpath(f) for f in folders if f}, key=len, reverse=True)
    if ls.error is None:
      ls.model_thread.submit(ls.load, settings)

  @server.feature(types.INITIALIZED)
  def initialized(ls, params):
    if ls.error is not None:
      ls.fail(ls.error, logged=True)  # the editor hears it once it can
    watch = ls.client_capabilities.workspace
    if watch and watch.did_change_watched_files and \
        watch.did_change_watched_files.dynamic_registration:
      ls.client_register_capability(types.RegistrationParams([types.Registration(
          "code_t5_watched", types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
          types.DidChangeWatchedFilesRegistrationOptions([types.FileSystemWatcher(WATCHED)]))]))

  @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
  async def inline_completion(ls, params):
    text = await ls.suggestion(params.text_document.uri, params.position)
    if not text:
      return None
    here = types.Range(params.position, params.position)
    return types.InlineCompletionList([types.InlineCompletionItem(text, range=here)])

  @server.feature(types.TEXT_DOCUMENT_COMPLETION, types.CompletionOptions())
  async def completion(ls, params):
    text = await ls.suggestion(params.text_document.uri, params.position)
    here = types.Range(params.position, params.position)
    items = [types.CompletionItem(text, kind=types.CompletionItemKind.Text, detail=NAME,
                                  text_edit=types.TextEdit(here, text), filter_text="",
                                  sort_text="0")] if text else []
    return types.CompletionList(is_incomplete=True, items=items)

  @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
  def did_save(ls, params):
    path = editor.path_of(params.text_document.uri)
    if path:
      ls.model_thread.submit(ls.changed_file, path)

  @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
  def did_change_watched_files(ls, params):
    for change in params.changes:
      path = editor.path_of(change.uri)
      if path:
        ls.model_thread.submit(ls.changed_file, path)

  @server.feature("code_t5/counts")
  def counts(ls, params):
    """What became of the requests so far: {what: count} (the tests and the bench read it)."""
    return dict(ls.counts)

  return server


def check_export(export_dir: str) -> Optional[str]:
  """Why `export_dir` is not an export to serve (one line), or None."""
  if re.match(r"^[a-z][a-z0-9+.-]*://", export_dir):
    return (f"{export_dir}: onnxruntime reads local files: copy the export down first "
            "(gsutil cp -r, or tf.io.gfile on a machine with TensorFlow)")
  if not os.path.isdir(export_dir):
    return f"{export_dir}: no such folder"
  config = os.path.join(export_dir, CONFIG)
  if not os.path.isfile(config):
    return (f"{export_dir}: no {CONFIG}: not a finished export of "
            "`python -m code_t5.session_export`")
  try:
    with open(config, "rb") as f:
      settings = json.loads(f.read(1 << 20))
  except ValueError as error:
    return f"{config}: not JSON: {error}"
  missing = [key for key in EXPORT_KEYS if not isinstance(settings, dict) or key not in settings]
  if missing:
    return (f"{config}: no {missing[0]!r}: not the settings of an export of "
            "`python -m code_t5.session_export`")
  if not os.path.isfile(editor.model.model_path(export_dir)):
    return f"{export_dir}: no {os.path.basename(editor.model.model_path(export_dir))}: not a whole export"
  return None


def serve(export_dir: str, stdin, stdout) -> int:
  """Serves until `exit` or the end of stdin; the exit code (LSP's: 1 for an exit with no
  shutdown before it)."""
  server = make_server(export_dir)
  server.error = check_export(export_dir)
  if server.error:
    log.error("%s", server.error)
  try:
    asyncio.run(server.run(stdin, stdout))
    code = 0
  except SystemExit as stop:  # pygls' exit
    code = stop.code if isinstance(stop.code, int) else 0
  server.model_thread.shutdown(wait=False, cancel_futures=True)
  return code


def main(argv=None):
  parser = argparse.ArgumentParser(
      prog="python -m code_t5_session.lsp",
      description="A language server (LSP over stdio) of an export of "
                  "`python -m code_t5.session_export`: the rest of the line as you type.")
  parser.add_argument("--export_dir", required=True,
                      help="a local folder that `python -m code_t5.session_export` wrote")
  parser.add_argument("--log_level", default="WARNING",
                      choices=("DEBUG", "INFO", "WARNING", "ERROR"), help="on stderr")
  args = parser.parse_args(argv)
  logging.basicConfig(level=args.log_level, stream=sys.stderr,
                      format="code_t5_session.lsp: %(levelname)s: %(message)s")
  if args.log_level != "DEBUG":
    logging.getLogger("pygls").setLevel(logging.ERROR)
  for handler in logging.getLogger().handlers:
    handler.addFilter(_AnsweredByUs())
  # The protocol's stream is a copy of stdout; whatever a library prints goes to stderr.
  protocol_out = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
  os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
  code = serve(args.export_dir, sys.stdin.buffer, protocol_out)
  sys.stderr.flush()
  _Writer(protocol_out).close()
  os._exit(code)  # pylint: disable=protected-access  (not waiting on a read of stdin)


if __name__ == "__main__":
  main()
