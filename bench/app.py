"""The app as served, plus two routes that exist only for the benchmarks and tests: a
hello-world page, and the client's address as the app sees it (behind a proxy, tests/test_nginx.py).

`bench/run.py` and `bench/load.sh` serve `bench.app:create_bench_app()` with gunicorn: the
same app, the same after-request hooks (security headers, Vary), the same server, so the
hello-world page is the baseline a page's latency is compared with.
"""

from __future__ import annotations

from flask import request

from webapp import create_app
from webapp.asgi import asgi

HELLO_PATH = "/bench/hello"
CLIENT_PATH = "/bench/client"


def create_bench_app(test_config: dict | None = None):
    app = create_app(test_config)
    app.add_url_rule(HELLO_PATH, "bench_hello", lambda: "Hello, world!")
    app.add_url_rule(CLIENT_PATH, "bench_client", lambda: request.remote_addr or "")
    return app


def create_bench_asgi_app(test_config: dict | None = None, warm: bool = False):
    """The same, as `compaction-playground serve` serves it (webapp/asgi.py)."""
    return asgi(create_bench_app(test_config), warm)
