"""The open-internet recipe of docs/deployment.md: Debian's nginx, with the repository's own
deploy/nginx.conf, in front of a real gunicorn (the settings of `compaction-playground serve`)
on loopback. Pages pass through, a client's own X-Forwarded-For never reaches the app, a body
over the app's limit is refused at the proxy, and a client that trickles its headers is
dropped while the site answers."""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from bench.app import CLIENT_PATH
from bench.server import free_port, serve

ROOT = Path(__file__).resolve().parents[1]
NGINX = Path("/usr/sbin/nginx")
VISITOR = "127.0.0.3"  # the client's own address, another than the proxy's 127.0.0.1

pytestmark = pytest.mark.skipif(
    not NGINX.exists() and not os.environ.get("CI"), reason="Debian's nginx is not installed (scripts/test installs it)"
)


def nginx_config(folder: Path, port: int, upstream: int) -> Path:
    """deploy/nginx.conf as written, on a test port and upstream, inside a minimal main config."""
    site = (ROOT / "deploy" / "nginx.conf").read_text()
    site = site.replace("listen 80;", f"listen 127.0.0.1:{port};").replace("listen [::]:80;\n", "")
    site = site.replace("server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
    (folder / "site.conf").write_text(site)
    temp = " ".join(f"{kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    main = folder / "nginx.conf"
    main.write_text(
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\npid {folder / 'nginx.pid'};\nerror_log {folder / 'error.log'} warn;\n"
        + f"events {{ worker_connections 1024; }}\nhttp {{ access_log off; {temp} include {folder / 'site.conf'}; }}\n"
    )
    return main


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """nginx's port, nginx in front of gunicorn that trusts one proxy hop (one pair for the module)."""
    tmp_path = tmp_path_factory.mktemp("nginx")
    config = {"TRANSCRIPT_DIR": str(tmp_path / "transcripts"), "TRUSTED_PROXY_HOPS": 1}
    with serve(workers=None, production=True, config=config) as (upstream, _):
        port = free_port()
        main = nginx_config(tmp_path, port, upstream)
        nginx = subprocess.Popen([str(NGINX), "-c", str(main), "-p", str(tmp_path), "-e", str(tmp_path / "error.log")],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 20
            while True:
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                assert nginx.poll() is None and time.monotonic() < deadline, nginx.stderr.read().decode()
                time.sleep(0.1)
            yield port
        finally:
            nginx.terminate()
            nginx.wait(timeout=20)


def ask(port: int, method: str, path: str, headers: dict | None = None, body: bytes | None = None) -> tuple[int, bytes]:
    """One request to nginx from the visitor's address."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(VISITOR, 0))
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_the_recipe_serves_the_site_and_tells_the_app_the_visitors_own_address(proxied):
    port = proxied
    status, page = ask(port, "GET", "/")
    assert status == 200 and b"htmx" in page
    # The visitor's own X-Forwarded-For is replaced by nginx: the app sees the real address.
    assert ask(port, "GET", CLIENT_PATH, {"X-Forwarded-For": "203.0.113.9"}) == (200, VISITOR.encode())
    # A paste goes through the buffered body, and its link plays.
    form = urllib.parse.urlencode({"transcript": '[{"role": "user", "content": "Bonjour"}]'}).encode()
    status, _ = ask(port, "POST", "/transcripts", {"Content-Type": "application/x-www-form-urlencoded"}, form)
    assert status == 303
    # Over the app's own limit (MAX_CONTENT_LENGTH): refused by nginx from the header alone.
    status, _ = ask(port, "POST", "/transcripts", {"Content-Type": "application/x-www-form-urlencoded",
                                                   "Content-Length": str(20_131_073)}, b"")
    assert status == 413


def test_a_client_trickling_its_headers_is_dropped_while_the_site_answers(proxied):
    port = proxied
    trickling = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(40)]
    for connection in trickling:
        connection.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    started = time.monotonic()
    while time.monotonic() - started < 12:  # one line every 3 s; nginx allows 10 s for all of them
        assert ask(port, "GET", "/")[0] == 200
        for connection in trickling:
            with contextlib.suppress(OSError):
                connection.sendall(b"X-Trickle: 1\r\n")
        time.sleep(3)
    assert all(closed(connection) for connection in trickling)
    for connection in trickling:
        connection.close()


def closed(connection: socket.socket) -> bool:
    """Whether the server closed this connection (within 5 s)."""
    connection.settimeout(5)
    try:
        return connection.recv(1024) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
