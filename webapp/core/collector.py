"""Python's cyclic garbage collector, held off while a comparison or a sweep builds replays.

A sweep keeps every replay it makes until it ends, and each call of a replay holds its
request as a tuple of up to a thousand blocks. Each automatic full collection walks all of
them, and there is nothing to find: a replay makes no reference cycle, so reference counting
frees all of it. On the 1,000-message session's default sweep (docs/benchmarks.md, section 7)
that walking was two fifths of the CPU time, for the same peak memory.

The collector belongs to the process, which the server's threads share: it is held off from
the first computation that asks until the last one ends, and turned back on only if it was on.
"""

from __future__ import annotations

import gc
import threading
from functools import wraps
from typing import Callable, TypeVar

Result = TypeVar("Result")


class _Hold:
    """How many computations hold the collector off, and whether it was on before the first."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.holders = 0
        self.was_enabled = False

    def take(self) -> None:
        with self.lock:
            if self.holders == 0:
                self.was_enabled = gc.isenabled()
                gc.disable()
            self.holders += 1

    def give_back(self) -> None:
        with self.lock:
            self.holders -= 1
            if self.holders == 0 and self.was_enabled:
                gc.enable()


_hold = _Hold()  # one per process, as the collector is


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
