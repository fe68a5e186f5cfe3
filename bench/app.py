"""The app as served, plus a hello-world route that exists only for the benchmarks.

`bench/run.py` and `bench/load.sh` serve `bench.app:create_bench_app()` with gunicorn: the
same app, the same after-request hooks (security headers, Vary), the same server, so the
hello-world page is the baseline a page's latency is compared with.
"""

from __future__ import annotations

from webapp import create_app

HELLO_PATH = "/bench/hello"


def create_bench_app(test_config: dict | None = None):
    app = create_app(test_config)
    app.add_url_rule(HELLO_PATH, "bench_hello", lambda: "Hello, world!")
    return app
