"""The app as `compaction-playground serve` runs it: gunicorn's asyncio worker in front of the
Flask app, so that a slow client costs a coroutine, never a thread (docs/serving.md).

gunicorn's ASGI worker reads every connection's headers in its event loop. `WholeRequests`
reads the body there too, whole, before a thread sees the request, and a2wsgi's bridge then
runs the Flask app in a pool of threads: a connection that trickles its headers or its body,
or sends nothing, holds no thread, and the threads compute only requests that have arrived.
"""

from __future__ import annotations

import asyncio
import io
import tempfile
import time
from collections import OrderedDict

from typing import Callable

from a2wsgi import WSGIMiddleware
from flask_babel import gettext

from . import create_app
from .core.i18n import N_

# Threads per worker process that run the Flask app: webapp/web/limits.py lets three of them
# hold a long chat (one computing, two waiting), which leaves five for everything else.
THREADS = 8
# A body must arrive within this, plus one second per BODY_BYTES_PER_SECOND it announces: a
# 20 MB upload has 17 minutes (a slow classroom link), a form of a few bytes 30 s.
BODY_GRACE_SECONDS = 30.0
BODY_BYTES_PER_SECOND = 20_000
# Bodies are held in memory up to this size, then in a temporary file.
BODY_IN_MEMORY = 1024 * 1024
CHUNK = 64 * 1024
# A kept-alive connection older than this is asked to close (Connection: close) at its next
# answer: the browser opens a new one, which goes to whichever worker accepts first. Without it,
# the connections of a replaced worker all move to the survivor and stay there while the new
# worker idles (issue 26). A new connection every 10 s costs a browser nothing it would notice.
CONNECTION_SECONDS = 10.0
TRACKED_CONNECTIONS = 4096
SLOW_BODY = N_("The request's body did not arrive within %(seconds)s seconds; send it again on a faster connection.")


class WholeRequests:
    """ASGI middleware: reads a request's whole body (at most `max_bytes` + 1, a bound the app
    then refuses with its own 413) in the event loop before calling `app`, and answers 408 to a
    body that does not arrive in time."""

    def __init__(self, app, max_bytes: int, words: Callable[[dict, float], str] | None = None):
        self.app, self.max_bytes = app, max_bytes
        self.words = words or (lambda scope, seconds: SLOW_BODY % {"seconds": f"{seconds:.0f}"})
        self.opened: OrderedDict[tuple, float] = OrderedDict()  # connection → when first seen

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        announced = next((int(value) for name, value in scope["headers"] if name == b"content-length" and value.isdigit()), None)
        if announced is not None and announced > self.max_bytes:
            # The app refuses it from the header alone; its body is never read.
            return await self.app(scope, _replay(io.BytesIO(), receive), self._closing(scope, send))
        seconds = BODY_GRACE_SECONDS + (announced if announced is not None else self.max_bytes) / BODY_BYTES_PER_SECOND
        body = tempfile.SpooledTemporaryFile(max_size=BODY_IN_MEMORY)
        try:
            async with asyncio.timeout(seconds):
                arrived = await self._read(receive, body)
        except TimeoutError:
            body.close()
            return await _too_slow(send, self.words(scope, seconds))
        if not arrived:
            body.close()
            return None  # the client went away
        body.seek(0)
        with body:
            await self.app(scope, _replay(body, receive), self._closing(scope, send))

    async def _read(self, receive, body) -> bool:
        """Whether the whole body arrived (False: the client disconnected)."""
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return False
            chunk = message.get("body", b"")
            size += len(chunk)
            body.write(chunk)
            if not message.get("more_body") or size > self.max_bytes:
                return True

    def _closing(self, scope, send):
        """`send`, adding Connection: close to an answer on a connection older than CONNECTION_SECONDS."""
        client = scope.get("client")
        if client is None:
            return send
        key = (tuple(client), scope.get("server") and tuple(scope["server"]))
        now = time.monotonic()
        opened = self.opened.setdefault(key, now)
        if now - opened < CONNECTION_SECONDS:
            while len(self.opened) > TRACKED_CONNECTIONS:  # the oldest, closed by their clients long ago
                self.opened.popitem(last=False)
            return send
        del self.opened[key]

        async def send_closing(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)
        return send_closing


def _replay(body, receive):
    """An ASGI `receive` that hands the buffered body out in chunks, then waits on the client
    (for its disconnect)."""
    done = False

    async def replayed():
        nonlocal done
        if done:
            return await receive()
        chunk = body.read(CHUNK)
        done = not chunk
        return {"type": "http.request", "body": chunk, "more_body": not done}
    return replayed


async def _too_slow(send, words: str) -> None:
    text = f"{words}\n".encode()
    await send({"type": "http.response.start", "status": 408,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(text)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": text})


def create_asgi_app(test_config: dict | None = None, warm: bool = False):
    """The Flask app of `create_app(test_config)`, served through the event loop (`asgi`)."""
    return asgi(create_app(test_config), warm)


def asgi(app, warm: bool = False):
    """A Flask app as an ASGI app, whole requests to a pool of THREADS threads; with `warm`,
    after playing every built-in lesson once (`warm_lessons`)."""
    if warm:
        warm_lessons(app)
    return WholeRequests(WSGIMiddleware(app, workers=THREADS), app.config["MAX_CONTENT_LENGTH"], _in_page_language(app))


def _in_page_language(app) -> Callable[[dict, float], str]:
    """The 408's sentence in the language the page asked for would speak (its `lang`, else
    the browser's Accept-Language: the app's own choice, `languages.select_locale`)."""

    def words(scope: dict, seconds: float) -> str:
        headers = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope.get("headers", []) if name == b"accept-language"]
        with app.test_request_context(scope.get("path", "/"), query_string=scope.get("query_string", b"").decode("latin-1"), headers=headers):
            return gettext(SLOW_BODY, seconds=str(round(seconds)))
    return words


def warm_lessons(app) -> None:
    """Asks for every lesson's play page and comparison once, as a visitor would, so that a
    worker started after another one (a restart, a recycle) already holds their replays, the
    tokenizer and the templates: a step through a lesson stays as fast as on a worker that has
    served it before. About 3.5 s of a worker's start (docs/serving.md)."""
    with app.test_client() as client:
        for scenario_id in app.extensions["scenario_library"].scenarios:
            client.get(f"/play/{scenario_id}")
            client.get(f"/compare/{scenario_id}")
