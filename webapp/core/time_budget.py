"""A budget of computing time for the work of one request.

The web layer opens a budget around each request (`within`); the core's long loops call
`spend()` at each step, which raises `BudgetExceeded` once the request has used more CPU time
than allowed, or more wall-clock time (a thread that waits for the interpreter's lock spends
wall time without CPU). Outside a budget, as on the command line, `spend()` does nothing.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass


class BudgetExceeded(Exception):
    """The request used up its budget: `seconds` of CPU time, or of wall-clock time."""

    def __init__(self, seconds: float, clock: str):
        self.seconds = seconds
        self.clock = clock
        super().__init__(f"over the budget of {seconds:g} s of {clock} time")


@dataclass(frozen=True)
class Budget:
    cpu_seconds: float
    wall_seconds: float
    cpu_start: float
    wall_start: float

    def check(self) -> None:
        if time.thread_time() - self.cpu_start > self.cpu_seconds:
            raise BudgetExceeded(self.cpu_seconds, "CPU")
        if time.monotonic() - self.wall_start > self.wall_seconds:
            raise BudgetExceeded(self.wall_seconds, "wall-clock")


_current: ContextVar[Budget | None] = ContextVar("budget", default=None)


def start(cpu_seconds: float, wall_seconds: float) -> Token:
    """Opens a budget from now on; give the token to `stop` when the work is done."""
    return _current.set(Budget(cpu_seconds, wall_seconds, time.thread_time(), time.monotonic()))


def stop(token: Token) -> None:
    _current.reset(token)


@contextmanager
def within(cpu_seconds: float, wall_seconds: float):
    """Runs the body under a budget; the body's `spend()` calls raise once it is used up."""
    token = start(cpu_seconds, wall_seconds)
    try:
        yield
    finally:
        stop(token)


def spend() -> None:
    """A step of long work: raises BudgetExceeded when the current budget is used up."""
    budget = _current.get()
    if budget is not None:
        budget.check()
