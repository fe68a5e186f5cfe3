"""Python's cyclic garbage collector, held off while a replay, a comparison or a sweep runs.

A sweep keeps every replay it makes until it ends, and each call of a replay holds its
request as a tuple of up to a thousand blocks. Each automatic full collection walks all of
them, and there is nothing to find: a replay makes no reference cycle, so reference counting
frees all of it. On the 1,000-message session's default sweep (docs/benchmarks.md, section 7)
that walking was two fifths of the CPU time, for the same peak memory.

The collector belongs to the process, which the server's threads share: it is held off from
the first computation that asks until the last one ends, and turned back on only if it was on.
Under steady load the computations may overlap for long; then the one that ends after the
collector has been held off for LONGEST_HOLD_SECONDS runs one collection, so that what the
rest of the server leaves for the collector does not wait for a quiet moment that may not come.
The web layer does leave some: Jinja's context and the macros a page imports form a cycle,
which keeps the page's values (a whole sweep) until a collection. Two seconds bound that pile
to the pages of two seconds, for one full collection (a fifth of a second, measured under four
threads of sweeps) every two seconds of continuous hold.
"""

from __future__ import annotations

import gc
import threading
import time
from functools import wraps
from typing import Callable, TypeVar

Result = TypeVar("Result")

LONGEST_HOLD_SECONDS = 2.0


class CollectorHold:
    """How many computations hold the collector off, and whether it was on before the first."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.lock = threading.Lock()
        self.clock = clock
        self.holders = 0
        self.was_enabled = False
        self.since = 0.0  # when the collector last ran or was held off

    def take(self) -> None:
        with self.lock:
            if self.holders == 0:
                self.was_enabled = gc.isenabled()
                self.since = self.clock()
                gc.disable()
            self.holders += 1

    def give_back(self) -> None:
        with self.lock:
            self.holders -= 1
            overdue = self.holders > 0 and self.was_enabled and self.clock() - self.since > LONGEST_HOLD_SECONDS
            if overdue:
                self.since = self.clock()
            elif self.holders == 0 and self.was_enabled:
                gc.enable()
        if overdue:  # outside the lock: a finalizer the collection runs may start a computation
            gc.collect()


_hold = CollectorHold()  # one per process, as the collector is


def without_collection(function: Callable[..., Result]) -> Callable[..., Result]:
    """`function`, run with the cyclic collector held off (reference counting still frees)."""

    @wraps(function)
    def held_off(*args, **kwargs) -> Result:
        _hold.take()
        try:
            return function(*args, **kwargs)
        finally:
            _hold.give_back()

    return held_off
