"""gunicorn's settings for the playground (`compaction-playground serve`, scripts/serve).

Each value is chosen on purpose; docs/serving.md says why. The command line of gunicorn
overrides any of them (`--workers`, `--bind`, ...).
"""

import os

wsgi_app = "webapp:create_app()"
bind = os.environ.get("BIND", "127.0.0.1:8000")
# One process per core: the work is CPU-bound Python, so more processes than cores only queue.
workers = int(os.environ.get("WORKERS", "2"))
# Threads, so that a request computing a long chat never holds the whole worker: the others
# answer the home page and the scenarios meanwhile. webapp/web/limits.py lets one thread per
# process compute a long chat and two more wait for it; the rest answer "busy" at once. That
# leaves at least five threads of eight for everything else.
worker_class = "gthread"
threads = 8
# The app's own budget (REQUEST_WALL_SECONDS, 20 s) answers first, with a message; this is
# only the last resort for a worker that stopped answering gunicorn's heartbeat.
timeout = 30
graceful_timeout = 10
# A worker is replaced, between requests, after this many: the memory Python keeps from
# the largest request it served goes back to the system.
max_requests = 2000
max_requests_jitter = 200
