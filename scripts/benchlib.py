"""What the benchmarks (and the tests, through conftest) share: the repository root and
mesh_transformer_main as users run it."""

import os
import sys

# The checkout the script was started from, as typed: Python resolves symlinks in an imported
# module's __file__, and a workspace that links scripts/ in must keep its own data/ and runs/.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(sys.argv[0])))
DEV_TFDS = os.path.join(REPO, "data", "dev", "tfds")
QUIET_TF = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")


def gin_literals(path):
  """The literal bindings of a gin file under gin_configs/ (e.g. "sequence_lengths/dev.gin")
  and of the files it includes, as gin applies them (an include's first, the file's own
  over them): {"utils.run.sequence_length": {...}, "d_model": 256, ...}."""
  import code_t5  # pylint: disable=g-import-not-at-top
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  # The files the run reads: gin's search path, not REPO (a pytest's argv[0] is not a script).
  return _text_literals(files.read_text(os.path.join(code_t5.gin_configs_dir(), path)))


def params_literals(gin_params):
  """The literal bindings of --gin_param's, in order, an `include` among them as gin_literals
  reads the file."""
  literals = {}
  for param in gin_params:
    literals.update(_text_literals(param))
  return literals


def _text_literals(text):
  """gin_literals of gin text: its includes' first, its own bindings over them."""
  from code_t5 import gin_config  # pylint: disable=g-import-not-at-top
  literals = {}
  for included in gin_config.included_files_of(text):
    literals.update(gin_literals(included))
  return {**literals, **gin_config.literal_bindings_of(text)}


def launch_lengths(gin_files, gin_params=()):
  """utils.run.sequence_length of a launch with these --gin_file's, then --gin_param's, as gin
  resolves it: a mode file's decoding_lengths.gin binds it to DECODING_LENGTHS (gin_literals
  gives that binding, a macro's value, as None), a later binding replaces it."""
  literals = {k: v for f in gin_files for k, v in gin_literals(f).items()}
  literals.update(params_literals(gin_params))
  lengths = literals.get("utils.run.sequence_length")
  return literals.get("DECODING_LENGTHS") if lengths is None else lengths


def require_dataset(script, data_dir, language="python"):
  """Ends `script` in one line where flcc/<language> is not built in `data_dir`."""
  from code_t5.data import builder  # pylint: disable=g-import-not-at-top
  if builder.finished_builder(data_dir, language) is None:
    flag = "" if language == "python" else f" --language={language}"
    sys.exit(f"{script}: {builder.builder_dir(data_dir, language)}: not built: run "
             f"`python -m code_t5.data dev{flag}` for the dev data, or give --data_dir")


def require_checkpoint(script, model_dir):
  """The step of `model_dir`'s latest checkpoint; `script` ends in one line where it has none."""
  from code_t5 import files  # pylint: disable=g-import-not-at-top
  step = files.latest_checkpoint_step(model_dir)
  if step is None:
    sys.exit(f"{script}: no checkpoint in {model_dir}: train one there first, or give the "
             "--model_dir that holds it")
  return step


def mesh_main_command(model_dir, data_dir, gin_files, gin_params, flags=(), program=None):
  """t5's mesh_transformer_main with code_t5, as a user types it in REPO; `program` replaces
  `python -m t5.models.mesh_transformer_main`."""
  cmd = list(program or [sys.executable, "-m", "t5.models.mesh_transformer_main"])
  cmd += [f"--model_dir={model_dir}", f"--t5_tfds_data_dir={data_dir}", "--module_import=code_t5",
          *flags]
  cmd += [f"--gin_file={f}" for f in gin_files]
  return cmd + [f"--gin_param={p}" for p in gin_params]


def editor_python():
  """The Python that runs the language server as a user's editor would: the editor's own venv
  (`make editor`: no TensorFlow), else this one."""
  checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # also under pytest
  editor = os.path.join(checkout, ".venv-editor", "bin", "python")
  return editor if os.access(editor, os.X_OK) else sys.executable


class LspPipe:
  """A language server in a process of its own, spoken to as an editor does: LSP's framed
  JSON-RPC over its stdin and stdout (the typing bench's client, and the tests')."""

  def __init__(self, export_dir, python=None, args=(), stderr=None):
    import subprocess  # pylint: disable=g-import-not-at-top
    self.process = subprocess.Popen(
        [python or editor_python(), "-m", "code_t5_session.lsp", f"--export_dir={export_dir}",
         *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=REPO)
    self._id = 0
    self.notifications = []  # what the server sent that answers nothing (showMessage, ...)
    self._answers = {}  # responses read while waiting for another's, by id

  def send(self, message):
    import json  # pylint: disable=g-import-not-at-top
    self.send_bytes(json.dumps(message).encode("utf-8"))

  def send_bytes(self, body):
    self.process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    self.process.stdin.flush()

  def notify(self, method, params):
    self.send({"jsonrpc": "2.0", "method": method, "params": params})

  def request(self, method, params):
    """Sends a request; returns its id (`response` waits for the answer)."""
    self._id += 1
    self.send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
    return self._id

  def read(self):
    """The next message from the server; None at the end of its output."""
    import json  # pylint: disable=g-import-not-at-top
    length = None
    while True:
      line = self.process.stdout.readline()
      if not line:
        return None
      if not line.strip() and length is not None:
        return json.loads(self.process.stdout.read(length))
      if line.lower().startswith(b"content-length:"):
        length = int(line.split(b":")[1])

  def response(self, msg_id):
    """The response to request `msg_id`; requests of the server's are answered null."""
    while msg_id not in self._answers:
      message = self.read()
      if message is None:
        raise EOFError(f"the server ended before answering request {msg_id}")
      if "method" in message:
        if "id" in message:  # the server's request (client/registerCapability): answered
          self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
        else:
          self.notifications.append(message)
      else:
        self._answers[message.get("id")] = message
    return self._answers.pop(msg_id)

  def call(self, method, params):
    """A request's result (AssertionError for an error response)."""
    answer = self.response(self.request(method, params))
    assert "error" not in answer, answer
    return answer.get("result")

  def start(self, root_uri=None, options=None, capabilities=None):
    """initialize and initialized; the server's capabilities."""
    result = self.call("initialize", {"processId": os.getpid(), "rootUri": root_uri,
                                      "capabilities": capabilities or {},
                                      "initializationOptions": options})
    self.notify("initialized", {})
    return result["capabilities"]

  def stop(self, timeout=30):
    """shutdown, exit; the server's exit code."""
    self.call("shutdown", None)
    self.notify("exit", None)
    return self.process.wait(timeout)
