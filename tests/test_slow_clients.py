"""Slow clients against the server `compaction-playground serve` runs (issue 26): connections
that trickle their headers or their body hold no thread, so the home page still answers; and
the ASGI front (webapp/asgi.py) hands the app every body whole, refuses what is too large from
its header, and answers 408 to a body that does not arrive in time."""

from __future__ import annotations

import asyncio
import concurrent.futures
import socket
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import webapp.asgi as front
from webapp import create_app
from bench.server import get, serve

CONNECTIONS = 40  # more than the 2 x 8 threads of the gthread workers before



def run_apart(coroutine) -> None:
    """Runs `coroutine` in an event loop of its own thread: a browser test earlier in the run
    leaves Playwright's loop running in this one, where asyncio.run() refuses to start."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, coroutine).result()

def trickling(port: int, opening: bytes) -> list[socket.socket]:
    connections = []
    for _ in range(CONNECTIONS):
        connection = socket.create_connection(("127.0.0.1", port), timeout=5)
        connection.sendall(opening)
        connections.append(connection)
    return connections


@pytest.mark.parametrize("opening", [
    b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Trickle: 1\r\n",
    b"POST /transcripts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
    b"Content-Length: 900000\r\n\r\ntranscript=aaaa",
], ids=["headers", "body"])
def test_the_home_page_answers_while_many_connections_trickle(tmp_path, opening):
    with serve(workers=None, production=True, config={"TRANSCRIPT_DIR": str(tmp_path)}) as (port, _):
        connections = trickling(port, opening)
        try:
            time.sleep(1)
            for connection in connections:  # one more piece each: every one of them is mid-request
                connection.sendall(b"X-More: 1\r\n" if opening.startswith(b"GET") else b"aaaaaaaaaa")
            started = time.monotonic()
            assert [get(port, "/", timeout=10)[0] for _ in range(5)] == [200] * 5
            assert time.monotonic() - started < 5
        finally:
            for connection in connections:
                connection.close()


def request(app, body_chunks: list[bytes], headers: list[tuple[bytes, bytes]], client=("127.0.0.1", 5000)) -> tuple[int, bytes, list]:
    """One request through an ASGI app, its body in `body_chunks`; returns status, body, headers."""
    messages = [{"type": "http.request", "body": chunk, "more_body": index < len(body_chunks) - 1}
                for index, chunk in enumerate(body_chunks or [b""])]
    sent = []

    async def receive():
        if messages:
            return messages.pop(0)
        await asyncio.sleep(3600)

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/", "raw_path": b"/", "query_string": b"", "root_path": "",
             "headers": headers, "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 80), "client": client}
    run_apart(asyncio.wait_for(app(scope, receive, send), 10))
    start = sent[0]
    return start["status"], b"".join(message.get("body", b"") for message in sent[1:]), start.get("headers", [])


async def echo(scope, receive, send):
    """An app that answers with the body it read."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": body})


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=3000), max_size=8))
def test_the_app_reads_the_body_exactly_as_sent(chunks):
    sent = b"".join(chunks)
    status, body, _ = request(front.WholeRequests(echo, 1_000_000), chunks, [(b"content-length", str(len(sent)).encode())])
    assert (status, body) == (200, sent)


def test_a_body_announced_too_large_is_never_read():
    read = []

    async def app(scope, receive, send):
        read.append(await receive())
        await send({"type": "http.response.start", "status": 413, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    status, _, _ = request(front.WholeRequests(app, 100), [b"x" * 50, b"y" * 50], [(b"content-length", b"5000")])
    assert status == 413 and read == [{"type": "http.request", "body": b"", "more_body": False}]


def test_a_body_that_stops_arriving_gets_a_408_that_says_so(monkeypatch):
    monkeypatch.setattr(front, "BODY_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(front, "BODY_BYTES_PER_SECOND", 10**9)
    pieces = [{"type": "http.request", "body": b"a" * 10, "more_body": True}]  # 10 bytes of 900, then nothing
    answers = []

    async def receive():
        if pieces:
            return pieces.pop()
        await asyncio.sleep(3600)

    async def send(message):
        answers.append(message)

    scope = {"type": "http", "headers": [(b"content-length", b"900")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    run_apart(asyncio.wait_for(front.WholeRequests(echo, 1_000_000)(scope, receive, send), 5))
    assert answers[0]["status"] == 408 and (b"connection", b"close") in answers[0]["headers"]
    assert b"did not arrive within 0 seconds" in answers[1]["body"]


def test_a_kept_alive_connection_is_asked_to_close_once_it_is_old(monkeypatch):
    clock = [1000.0]
    monkeypatch.setattr(front.time, "monotonic", lambda: clock[0])
    app = front.WholeRequests(echo, 1000)

    def closes(port: int) -> bool:
        return (b"connection", b"close") in request(app, [b""], [], client=("10.0.0.1", port))[2]

    assert not closes(4242)
    clock[0] += front.CONNECTION_SECONDS - 1
    assert not closes(4242) and not closes(4243)  # another connection, first seen now
    clock[0] += 1
    assert closes(4242) and not closes(4243)
    assert not closes(4242)  # the browser's next connection on that port starts afresh


@pytest.mark.parametrize("headers, query, words", [
    ([(b"accept-language", b"fr-FR,fr;q=0.9")], b"", "n'est pas arrivé en 0\u00a0secondes"),
    ([(b"accept-language", b"fr")], b"lang=zh", "请求正文未在 0 秒内送达"),
    ([], b"", "did not arrive within 0 seconds"),
])
def test_the_408_speaks_the_language_the_page_would(monkeypatch, headers, query, words):
    monkeypatch.setattr(front, "BODY_GRACE_SECONDS", 0.2)
    monkeypatch.setattr(front, "BODY_BYTES_PER_SECOND", 10**9)
    served = front.asgi(create_app({"TESTING": True}))
    answers = []

    async def receive():
        await asyncio.sleep(3600)  # the body never comes

    async def send(message):
        answers.append(message)

    scope = {"type": "http", "path": "/transcripts", "query_string": query, "headers": [(b"content-length", b"900"), *headers],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    run_apart(asyncio.wait_for(served(scope, receive, send), 5))
    assert answers[0]["status"] == 408 and words in answers[1]["body"].decode()
