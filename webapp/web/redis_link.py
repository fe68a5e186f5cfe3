"""The Redis that LIMITS_STORE names (docs/deployment.md), shared by every worker and host: the
fair shares of long chats (web/shares.py), the remembered summarizer failures, and the jobs'
progress and results (web/job_store.py).

Redis holds nothing that cannot be made again: counts that start afresh, failures that are
tried again, results that are computed again. So a Redis that stops, restarts empty or does
not answer must cost a visitor nothing but those: every operation goes through `RedisLink.run`,
which fails at once (`RedisDown`) while Redis is known to be gone, and its callers fall back to
what one process can do alone. Each process asks again at most once a `RETRY_SECONDS`, so a
Redis that comes back is used again by itself. Timeouts are short: Redis answers in well under
a millisecond on a network that works, and a page must not wait on one that does not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

log = logging.getLogger("webapp.redis")

TIMEOUT_SECONDS = 0.5
RETRY_SECONDS = 1.0
REDIS_SCHEMES = ("redis", "rediss", "unix")
Result = TypeVar("Result")


class RedisDown(Exception):
    """Redis does not answer, or did not a moment ago: do without it."""


def shared_redis(app) -> RedisLink | None:
    """The app's link to the Redis LIMITS_STORE names, made once; None when it names none."""
    url = app.config["LIMITS_STORE"]
    if not url:
        return None
    if "redis" not in app.extensions:
        app.extensions["redis"] = RedisLink(check_url("LIMITS_STORE", url))
    return app.extensions["redis"]


def check_url(name: str, url: str) -> str:
    """`url` when it names a Redis (redis://, rediss:// or unix://), else ValueError naming the
    setting; the URL itself is not repeated: it may hold a password."""
    scheme = url.partition("://")[0] if "://" in url else ""
    if scheme not in REDIS_SCHEMES:
        raise ValueError(f"{name}: expected a redis:// URL, or nothing for this process's own memory; got a value of scheme {scheme!r}")
    return url


class RedisLink:
    """One Redis client per process (redis-py's pool is safe across threads and renews itself
    after a fork), without redis-py's own retries, with a breaker: after a failure, every
    operation fails at once for RETRY_SECONDS. It logs when Redis stops answering and when it
    answers again, not every failed operation."""

    def __init__(self, url: str):
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        self.url = url
        self.errors = (redis.RedisError, OSError)
        self.client = redis.Redis.from_url(
            url, socket_timeout=TIMEOUT_SECONDS, socket_connect_timeout=TIMEOUT_SECONDS, retry=Retry(NoBackoff(), 0), health_check_interval=30
        )
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down = False

    def run(self, operation: Callable[..., Result]) -> Result:
        """`operation(client)`, or RedisDown when Redis does not answer (or did not a moment ago)."""
        if time.monotonic() < self._down_until:
            raise RedisDown()
        try:
            result = operation(self.client)
        except self.errors as error:
            with self._lock:
                self._down_until = time.monotonic() + RETRY_SECONDS
                if not self._down:
                    log.warning("Redis does not answer (%s): each process does without it until it does", error)
                self._down = True
            raise RedisDown() from error
        if self._down:
            with self._lock:
                if self._down:
                    log.warning("Redis answers again")
                self._down = False
        return result

    def up(self) -> bool:
        """Whether Redis answers now (a PING, or the breaker's memory of a failure)."""
        try:
            return bool(self.run(lambda client: client.ping()))
        except RedisDown:
            return False

    def script(self, source: str):
        """A Lua script, sent by its hash once Redis knows it (redis-py loads it again after a
        restart that forgot it)."""
        return self.client.register_script(source)
