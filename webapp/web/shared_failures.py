"""The summarizer's failures remembered in the Redis LIMITS_STORE names, so that every worker
and host stops asking a failing endpoint at once, not each after its own failed call
(core/engine/remote_summarizer.py). While Redis does not answer, each process remembers its own."""

from __future__ import annotations

import hashlib

from ..core.engine.remote_summarizer import FailureMemory, SummarizerConfig
from .redis_link import RedisDown, RedisLink


class SharedFailures(FailureMemory):
    def __init__(self, link: RedisLink, endpoint: SummarizerConfig):
        super().__init__()
        self.link = link
        # One memory per endpoint and model (never its key): two apps may share a Redis.
        self.key = "playground:summarizer-failure:" + hashlib.sha256(f"{endpoint.base_url} {endpoint.model}".encode()).hexdigest()[:24]

    def recall(self) -> str | None:
        try:
            why = self.link.run(lambda redis: redis.get(self.key))
        except RedisDown:
            return super().recall()
        return why.decode() if why else None

    def remember(self, why: str, seconds: float) -> None:
        super().remember(why, seconds)  # for this process, should Redis stop answering
        try:
            self.link.run(lambda redis: redis.set(self.key, why, px=max(1, round(seconds * 1000))))
        except RedisDown:
            pass

    def forget(self) -> None:
        super().forget()
        try:
            self.link.run(lambda redis: redis.delete(self.key))
        except RedisDown:
            pass
