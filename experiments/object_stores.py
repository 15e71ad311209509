"""Object-storage servers the tests and experiments/perf/corpus_storage.py start themselves: an S3 server (moto in
server mode) behind a proxy that counts the bytes each object sends, so a test can say how much of a file a command
fetched, measured on the wire and not by jaxcontam's own counters; and a Google Cloud Storage emulator
(gcp-storage-emulator)."""

from __future__ import annotations

import collections
import contextlib
import http.client
import http.server
import logging
import os
import socket
import threading
import urllib.parse
import urllib.request


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now (for an emulator, or a local coordinator of several processes)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingProxy(http.server.ThreadingHTTPServer):
    """Forwards every request to `upstream` (host, port) and adds the body bytes of each GET answer to
    `fetched[object path]`; `faults[object path]` lists HTTP statuses to answer instead, one per request (a
    transient 503, a refused 403), and `requests[object path]` counts every request."""

    daemon_threads = True

    def __init__(self, upstream: tuple[str, int]):
        self.upstream = upstream
        self.fetched: collections.Counter = collections.Counter()
        self.requests: collections.Counter = collections.Counter()
        self.faults: dict[str, list[int]] = {}
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), _Forward)


class _Forward(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: CountingProxy

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        key = urllib.parse.urlsplit(self.path).path
        with self.server.lock:
            self.server.requests[key] += 1
            fault = self.server.faults.get(key, [None]).pop(0) if self.server.faults.get(key) else None
        if fault is not None:
            self._fail(fault)
            return
        connection = http.client.HTTPConnection(*self.server.upstream, timeout=60)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive")}
        connection.request(self.command, self.path, body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        connection.close()
        if self.command == "GET":
            with self.server.lock:
                self.server.fetched[urllib.parse.urlsplit(self.path).path] += len(data)
        self.send_response(answer.status, answer.reason)
        for key, value in answer.getheaders():
            if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                self.send_header(key, value)
        # a HEAD answer keeps the object's length; any other carries the body it has
        length = answer.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data))
        self.send_header("Content-Length", length)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _fail(self, status: int) -> None:
        code = {503: "SlowDown", 403: "AccessDenied"}.get(status, "InternalError")
        text = f'<?xml version="1.0"?><Error><Code>{code}</Code><Message>{code}</Message></Error>'.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", "0" if self.command == "HEAD" else str(len(text)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(text)

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    def log_message(self, format, *args):  # quiet
        pass


@contextlib.contextmanager
def environment(**values: str):
    """`values` set in os.environ (seen by this process and the processes it starts), the previous ones put back
    on exit."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextlib.contextmanager
def s3_server():
    """(direct s3fs filesystem for setting up buckets, the counting proxy) with the standard AWS variables
    pointing every other S3 client of this process, and of processes it starts, at the proxy."""
    import s3fs
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # moto's backend is per process: a server started earlier in this process would show its buckets here
    urllib.request.urlopen(urllib.request.Request(f"http://{host}:{port}/moto-api/reset", method="POST")).close()
    proxy = CountingProxy((host, port))
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    aws = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{proxy.server_address[1]}",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    try:
        with environment(**aws):
            s3fs.S3FileSystem.clear_instance_cache()
            yield s3fs.S3FileSystem(endpoint_url=f"http://{host}:{port}", skip_instance_cache=True), proxy
    finally:
        proxy.shutdown()
        server.stop()
        s3fs.S3FileSystem.clear_instance_cache()


@contextlib.contextmanager
def gcs_server(bucket: str):
    """A filesystem on a GCS emulator holding an empty `bucket`, with `STORAGE_EMULATOR_HOST` pointing every GCS
    client of this process, and of processes it starts, at it. gcsfs first asks a bucket's type over gRPC, which
    the emulator does not serve (a 60 s wait): GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT=false skips that probe."""
    from gcp_storage_emulator.server import create_server

    port = free_port()
    logging.getLogger("gcp_storage_emulator").setLevel(logging.ERROR)
    server = create_server("127.0.0.1", port, in_memory=True, default_bucket=bucket)
    server.start()
    emulator = {"STORAGE_EMULATOR_HOST": f"http://127.0.0.1:{port}", "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    try:
        with environment(**emulator):
            import gcsfs  # reads GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT when first imported

            gcsfs.GCSFileSystem.clear_instance_cache()
            try:
                yield gcsfs.GCSFileSystem(skip_instance_cache=True)
            finally:
                gcsfs.GCSFileSystem.clear_instance_cache()
    finally:
        server.stop()
