"""Worker recycling as `compaction-playground serve` does it (issue 26): by resident memory,
never by a count of requests, and a new worker starts warm."""

from __future__ import annotations

import http.client
import importlib
import re
import time
from pathlib import Path

from gunicorn.util import import_app
from werkzeug.middleware.proxy_fix import ProxyFix

import webapp.gunicorn_config
from bench.app import HELLO_PATH
from bench.server import get, serve


def workers_of(master: int) -> list[int]:
    return sorted(int(pid) for pid in Path(f"/proc/{master}/task/{master}/children").read_text().split())


def booted(port: int, master: int) -> list[int]:
    """The worker pids once the site answers again."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if get(port, HELLO_PATH, timeout=30)[0] == 200 and workers_of(master):
            return workers_of(master)
        time.sleep(0.2)
    raise AssertionError("no worker answers")


def test_a_flood_of_cheap_requests_replaces_no_worker():
    with serve(workers=1, production=True) as (port, master):
        before = booted(port, master.pid)
        static = re.search(rb"/static/app\.[0-9a-f]+\.css", get(port, "/")[1]).group(0).decode()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        for _ in range(2500):  # more than the 2,000 (+ up to 200) after which a worker was replaced
            connection.request("GET", static)
            response = connection.getresponse()
            response.read()
            assert response.status == 200
            if response.getheader("Connection", "").lower() == "close":
                connection.close()
        connection.close()
        assert booted(port, master.pid) == before


def test_a_worker_over_its_memory_bound_is_replaced_after_its_request(monkeypatch):
    monkeypatch.setenv("MAX_WORKER_MEMORY_MB", "1")  # every worker is over it
    with serve(workers=1, production=True) as (port, master):
        first = booted(port, master.pid)
        assert get(port, "/")[0] == 200  # answered in full, then the worker leaves
        deadline = time.monotonic() + 60
        while booted(port, master.pid) == first:
            assert time.monotonic() < deadline, "the worker over its bound was never replaced"
            time.sleep(0.2)


def test_the_served_app_starts_warm_and_believes_the_proxy_hops_it_is_told(monkeypatch):
    monkeypatch.setenv("TRUSTED_PROXY_HOPS", "1")
    config = importlib.reload(webapp.gunicorn_config)
    try:
        served = import_app(config.wsgi_app)
    finally:
        monkeypatch.delenv("TRUSTED_PROXY_HOPS")
        importlib.reload(webapp.gunicorn_config)
    flask_app = served.app.app  # WholeRequests → a2wsgi → Flask
    middleware = [flask_app.wsgi_app]
    while (inner := getattr(middleware[-1], "application", None) or getattr(middleware[-1], "app", None)) is not None:
        middleware.append(inner)  # WhiteNoise, Flask-Compress... down to the app
    assert [layer.x_for for layer in middleware if isinstance(layer, ProxyFix)] == [1]
    lessons = len(flask_app.extensions["scenario_library"].scenarios)
    assert len(flask_app.extensions["replay_cache"]) >= lessons
