"""gunicorn's settings for the playground (`compaction-playground serve`, scripts/serve).

Each value is chosen on purpose; docs/serving.md says why. The command line of gunicorn
overrides any of them (`--workers`, `--bind`, ...).
"""

import os

wsgi_app = "webapp:create_app()"
bind = os.environ.get("BIND", "127.0.0.1:8000")
# One process per core: the work is CPU-bound Python, so more processes than cores only queue.
workers = int(os.environ.get("WORKERS", "2"))
worker_class = "sync"
# Longer than any request may run: the app's own budget answers first, with a message.
timeout = 30
graceful_timeout = 10
