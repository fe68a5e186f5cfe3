"""gunicorn's settings for the playground (`compaction-playground serve`, scripts/serve).

Each value is chosen on purpose; docs/serving.md says why, with the measurements. The command
line of gunicorn overrides any of them (`--workers`, `--bind`, ...).
"""

import os

from webapp.recycling import recycle_when_large

# TRUSTED_PROXY_HOPS: behind a reverse proxy (docs/deployment.md), how many X-Forwarded-For
# hops to believe; 0, the default, takes every client's address from its connection.
wsgi_app = f"webapp.asgi:create_asgi_app({{'TRUSTED_PROXY_HOPS': {int(os.environ.get('TRUSTED_PROXY_HOPS', '0'))}}}, warm=True)"
bind = os.environ.get("BIND", "127.0.0.1:8000")
# One process per core: the work is CPU-bound Python, so more processes than cores only queue.
workers = int(os.environ.get("WORKERS", "2"))
# gunicorn's asyncio worker reads headers and bodies in its event loop, and webapp/asgi.py
# hands whole requests to a pool of eight threads per process: a slow or idle connection
# holds no thread (with gthread, 16 connections trickling their headers held all 2 x 8).
worker_class = "asgi"
# A kept-alive connection with no new request is closed after this many seconds.
keepalive = 5
# The app's own budget (REQUEST_WALL_SECONDS, 20 s) answers first, with a message; this is
# only the last resort for a worker that stopped answering gunicorn's heartbeat. The ASGI
# worker also gives up on a body that sends nothing for this long.
timeout = 30
graceful_timeout = 10
# No recycling by count (max_requests = 0): a worker is replaced, between requests, only
# when its resident memory passes MAX_WORKER_MEMORY_MB (webapp/recycling.py).
max_requests = 0
post_request = recycle_when_large
