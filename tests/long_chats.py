"""Visitors and a long chat held computing, for the tests of the fair shares (test_limits.py,
test_shared_limits.py) and of the jobs."""

from __future__ import annotations

import contextlib
import threading


def visitor(app, number: int, network: str = "10.0.0"):
    """A test client from a visitor of its own (its own address)."""
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = f"{network}.{number}"
    return client


@contextlib.contextmanager
def holding(app, number: int, path: str = "/compare/receipt"):
    """Visitor `number` asks `app` for `path`, whose replays of the `receipt` lesson stay
    computing until `release` is set (at the latest when the block ends); yields (release, the
    answers' statuses)."""
    cache = app.extensions["replay_cache"]
    computing, release = threading.Event(), threading.Event()
    plain_get = cache.get

    def slow_get(scenario, settings):
        if scenario.id == "receipt":
            computing.set()
            release.wait(30)
        return plain_get(scenario, settings)

    cache.get = slow_get
    answers: list[int] = []
    holder = threading.Thread(target=lambda: answers.append(visitor(app, number).get(path).status_code))
    holder.start()
    assert computing.wait(30)
    try:
        yield release, answers
    finally:
        release.set()
        holder.join(30)
        cache.get = plain_get
