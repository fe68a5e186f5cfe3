"""The recording endpoint: an HTTP server on this machine that forwards an agent's model calls
to one upstream, unchanged, and records each (recording.py).

Only POST to the routes of recording.APIS is forwarded, to the host of `--upstream` and
nowhere else (a request naming another host, or any other route, is answered 404). A
streamed answer is passed on as it arrives, each piece as soon as it is read; the recorder asks
the upstream for an uncompressed answer (Accept-Encoding: identity), so what it passes on is
what it reads. A timeout of the upstream is a 504 (when no byte was sent yet), a refused
connection a 502; both say what happened in the OpenAI error shape clients show.
"""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from .recording import APIS, Recording
from .streams import answer

# Headers of one connection, not of the message (RFC 9110, 7.6.1): never passed on.
HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"}
READ_SIZE = 64 * 1024
MAX_REQUEST_BYTES = 64 * 1024 * 1024


class UpstreamError(ValueError):
    """The --upstream address cannot be used."""


@dataclass(frozen=True)
class Upstream:
    """Where calls go: scheme, host, port, and the path before /v1 (`/api` of
    https://openrouter.ai/api/v1)."""

    scheme: str
    host: str
    port: int
    prefix: str

    @classmethod
    def parse(cls, url: str) -> Upstream:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UpstreamError(f"--upstream: got {url!r}; expected an http:// or https:// address, such as https://api.openai.com/v1")
        if parts.username or parts.password or parts.query:
            raise UpstreamError("--upstream: give the address alone, without a user, password or query; the agent's key passes through")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise UpstreamError(f"--upstream: the port of {url!r} is not a number from 1 to 65535") from None
        return cls(parts.scheme, parts.hostname, port, parts.path.rstrip("/").removesuffix("/v1"))

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.prefix}"

    def connection(self, timeout: float) -> http.client.HTTPConnection:
        kind = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        return kind(self.host, self.port, timeout=timeout)


class RecordingServer(ThreadingHTTPServer):
    daemon_threads = True  # a stream still open does not hold up the stop

    def __init__(self, address: tuple[str, int], upstream: Upstream, recording: Recording, timeout: float):
        super().__init__(address, RecordingHandler)
        self.upstream, self.recording, self.upstream_timeout = upstream, recording, timeout

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{f'[{host}]' if ':' in host else host}:{port}/v1"


class RecordingHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: RecordingServer

    def log_message(self, format, *args):  # the default logs each path, query included
        pass

    def do_GET(self):
        self._not_here()

    do_PUT = do_DELETE = do_PATCH = do_HEAD = do_GET

    def do_POST(self):
        route, _, query = self.path.partition("?")
        if route not in APIS:
            self._not_here()
            return
        length = self.headers.get("Content-Length")
        if not (length or "").isdigit() or int(length) > MAX_REQUEST_BYTES:
            self._json_error(411, f"the recorder needs a Content-Length of at most {MAX_REQUEST_BYTES:,} bytes")
            return
        body = self.rfile.read(int(length))
        self._forward(route, query, body)

    def _forward(self, route: str, query: str, body: bytes) -> None:
        server = self.server
        call = server.recording.begin(route, query, list(self.headers.items()), body)
        headers = {name: value for name, value in self.headers.items() if name.lower() not in HOP_BY_HOP | {"host", "content-length", "accept-encoding"}}
        headers["Accept-Encoding"] = "identity"
        connection = server.upstream.connection(server.upstream_timeout)
        try:
            connection.request("POST", server.upstream.prefix + route + (f"?{query}" if query else ""), body, headers)
            response = connection.getresponse()
        except TimeoutError:
            self._failed(call, 504, f"the upstream {server.upstream.address} did not answer within {server.upstream_timeout:g} s")
            return
        except OSError as error:
            self._failed(call, 502, f"the upstream {server.upstream.address} could not be reached: {error}")
            return
        try:
            self._pass_on(call, response)
        finally:
            connection.close()

    def _pass_on(self, call: dict, response: http.client.HTTPResponse) -> None:
        """The upstream's answer passed on piece by piece as it is read, then recorded."""
        recording, length = self.server.recording, response.getheader("Content-Length")
        streamed = "text/event-stream" in (response.getheader("Content-Type") or "")
        self.send_response(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP | {"content-length"}:
                self.send_header(name, value)
        chunked = length is None
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", length)
        self.end_headers()
        received, error = bytearray(), None
        while True:
            try:
                piece = response.read1(READ_SIZE)
            except (OSError, http.client.HTTPException) as failure:  # a timeout is an OSError
                error = f"the upstream stopped answering after {len(received):,} bytes ({type(failure).__name__})"
                break
            if not piece:
                break
            received += piece
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
                self.wfile.flush()
            except OSError:
                error = f"the agent's client disconnected after {len(received):,} bytes"
                break
        if error:
            self.close_connection = True  # the answer is unfinished: the client must not take it as whole
        elif chunked:
            self._finish_chunks()
        reply = answer(call["api"], bytes(received), streamed)
        if error:
            reply.complete = False
        recording.finish(call, response.status, response.getheaders(), reply, error, bytes(received))

    def _finish_chunks(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True

    def _failed(self, call: dict, status: int, message: str) -> None:
        self.server.recording.finish(call, status, [], None, message)
        self._json_error(status, message)

    def _not_here(self) -> None:
        routes = ", ".join(f"POST {route}" for route in APIS)
        self._json_error(404, f"the recorder forwards only {routes}; got {self.command} {self.path.partition('?')[0][:200]}")

    def _json_error(self, status: int, message: str) -> None:
        data = json.dumps({"error": {"message": f"compaction-playground record: {message}", "type": "recorder_error", "code": status}}).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True
