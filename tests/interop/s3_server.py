"""A real S3-compatible server on loopback for the tests: moto's server mode
(PyPI `moto`, pinned in requirements.txt) with authentication on, so every
request sluice makes is checked against its SigV4 signature, and IAM users
made through moto's own IAM API. And FaultProxy, which stands between
sluice and the server and breaks chosen requests the ways networks do:
an HTTP 503 (S3's SlowDown), a connection dropped halfway through the
body, a connection reset before any answer."""

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request

import boto3

REGION = "us-east-1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """moto in server mode. The first UNAUTHENTICATED requests (IAM setup)
    go without signatures; every later one must be signed."""
    UNAUTHENTICATED = 5

    def __init__(self):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(self.UNAUTHENTICATED))
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1",
                                      "-p", str(self.port)], env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=1)
                break
            except Exception:
                if time.time() > deadline or self.proc.poll() is not None:
                    self.stop()
                    raise RuntimeError("moto server did not start")
                time.sleep(0.2)
        iam = boto3.client("iam", endpoint_url=self.url, region_name=REGION,
                           aws_access_key_id="setup", aws_secret_access_key="setup")
        allow = {"Version": "2012-10-17",
                 "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}
        iam.create_user(UserName="reader")                                   # 1
        key = iam.create_access_key(UserName="reader")["AccessKey"]          # 2
        iam.put_user_policy(UserName="reader", PolicyName="s3",
                            PolicyDocument=json.dumps(allow))                # 3
        iam.create_user(UserName="nobody")                                   # 4
        none = iam.create_access_key(UserName="nobody")["AccessKey"]         # 5
        self.key = (key["AccessKeyId"], key["SecretAccessKey"])
        self.no_rights_key = (none["AccessKeyId"], none["SecretAccessKey"])

    def client(self):
        return boto3.client("s3", endpoint_url=self.url, region_name=REGION,
                            aws_access_key_id=self.key[0], aws_secret_access_key=self.key[1])

    def env(self, endpoint=None, key=None, home="/nonexistent"):
        """The environment a sluice process gets: credentials and endpoint the
        AWS way, and a HOME without ~/.aws."""
        key = key or self.key
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(AWS_ACCESS_KEY_ID=key[0], AWS_SECRET_ACCESS_KEY=key[1], AWS_REGION=REGION,
                   AWS_ENDPOINT_URL=endpoint or self.url, HOME=home)
        return env

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class FaultProxy:
    """Forwards each request on its own upstream connection (Connection:
    close), except that request number n (counting from 1) for which
    `fault(n, request_line)` returns "503", "drop" or "reset" fails that way.
    Counts requests and faults."""

    def __init__(self, upstream_port, fault=lambda n, line: None):
        self.upstream_port = upstream_port
        self.fault = fault
        self.requests = 0
        self.faults = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    @staticmethod
    def _read_request(conn):
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, body = data.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        while len(body) < length:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            body += chunk
        lines = [l for l in head.split(b"\r\n") if not l.lower().startswith(b"connection:")]
        return b"\r\n".join(lines + [b"Connection: close"]) + b"\r\n\r\n" + body

    def _handle(self, conn):
        with conn:
            request = self._read_request(conn)
            if request is None:
                return
            with self.lock:
                self.requests += 1
                n = self.requests
            kind = self.fault(n, request.split(b"\r\n", 1)[0].decode())
            if kind:
                with self.lock:
                    self.faults += 1
            if kind == "reset":
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                return
            if kind == "503":
                body = (b"<?xml version=\"1.0\"?><Error><Code>SlowDown</Code>"
                        b"<Message>Please reduce your request rate.</Message></Error>")
                conn.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/xml"
                             b"\r\nConnection: close\r\nContent-Length: " +
                             str(len(body)).encode() + b"\r\n\r\n" + body)
                return
            with socket.create_connection(("127.0.0.1", self.upstream_port)) as up:
                up.sendall(request)
                response = b""
                while True:
                    chunk = up.recv(1 << 20)
                    if not chunk:
                        break
                    response += chunk
            if kind == "drop":
                head, _, body = response.partition(b"\r\n\r\n")
                conn.sendall(head + b"\r\n\r\n" + body[:len(body) // 2])
                return
            conn.sendall(response)

    def close(self):
        self.sock.close()


class HttpServer:
    """A plain web server for a folder on loopback: Werkzeug's file sending
    (PyPI, pinned), which answers Range requests with 206 and the
    Content-Range of RFC 9110, as static file servers and CDNs do."""

    def __init__(self, folder, weak_etags=False):
        from werkzeug.serving import make_server
        from werkzeug.utils import send_from_directory
        from werkzeug.wrappers import Request, Response

        self.requests = 0

        @Request.application
        def app(request):
            self.requests += 1
            r = send_from_directory(folder, request.path.lstrip("/"), request.environ,
                                    conditional=True)
            tag, _ = r.get_etag()
            if weak_etags and tag:  # as Node's serve-static and many CDNs send
                r.set_etag(tag, weak=True)
            # If-Match compares strongly (RFC 9110 13.1.1): a weak tag never
            # matches, so such a server answers 412, as nginx does.
            asked = request.headers.get("If-Match")
            if asked and asked.strip() != "*" and r.status_code < 300:
                if weak_etags or f'"{tag}"' not in [t.strip() for t in asked.split(",")]:
                    return Response(status=412)
            return r

        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()
