"""A bounded cost per request (docs/serving.md, "A bounded cost per request").

- Every request runs under a budget of CPU and wall-clock time (core/time_budget.py); past it the
  visitor gets a page that says what was too large and what to change, long before gunicorn's
  timeout would kill the worker.
- A long chat (more than LONG_CHAT_MESSAGES messages) is computed by one request at a time per
  worker process. A few more (LONG_CHAT_WAITERS) wait for their turn, idle, up to
  LONG_CHAT_WAIT_SECONDS; any other is answered "busy, try again in a few seconds" at once.
  So long chats hold at most a few of a worker's threads, and the others stay free for
  everything else: the home page and the short scenarios never wait behind long chats. A
  comparison replays every strategy, so it is long from LONG_COMPARISON_MESSAGES messages.
- One client (its address, `request.remote_addr`: behind a proxy, the one ProxyFix reads when
  TRUSTED_PROXY_HOPS says so) has one long chat computed at a time per process, and one more
  waiting for it; after each, it rests CLIENT_REST_FACTOR times as long as that one took
  before its next one starts (waiting, or told when to come back: 429 and Retry-After, the
  first two refusals at a time after a second's pause, so that a client asking again at once
  is not answered hundreds of times a second). So no client takes more than its share of a
  process, however many requests it sends at once.
  Per process: with two gunicorn workers, a client may have one long chat computed in each.
- A thread computing a long chat holds the interpreter's lock for THREAD_SWITCH_SECONDS at a
  time before the others may run (Python's default: 5 ms); every short page waits that long
  at each of its turns, so the process hands the lock over more often (1 ms).
"""

from __future__ import annotations

import math
import sys
import threading
import time
from dataclasses import dataclass

from flask import Flask, current_app, g, request
from flask_babel import format_number
from flask_babel import gettext as _

from ..core import time_budget
from ..core.time_budget import BudgetExceeded
from .errors import error_page
from .scenario_lookup import find_scenario
from .state_error import StateError


class LongChatsBusy(Exception):
    """Every slot for long chats of this process is taken, and so is the waiting room."""


class LongChatGate:
    """`slots` long chats computed at once, `waiters` more waiting for a slot."""

    def __init__(self, slots: int, waiters: int, wait_seconds: float):
        self._slots = threading.BoundedSemaphore(slots)
        self._room = threading.BoundedSemaphore(slots + waiters)
        self._wait_seconds = wait_seconds

    def enter(self) -> bool:
        """Takes a slot, waiting for one when there is room to wait; False when busy."""
        if not self._room.acquire(blocking=False):
            return False
        if self._slots.acquire(timeout=self._wait_seconds):
            return True
        self._room.release()
        return False

    def leave(self) -> None:
        self._slots.release()
        self._room.release()


REFUSAL_PAUSE_SECONDS = 1.0


class OverShare(Exception):
    """This client already has its long chats in this process (one computed, one waiting), or
    is resting after its last one; `retry_after` says in how many seconds to come back."""

    def __init__(self, retry_after: int):
        self.retry_after = retry_after
        super().__init__(retry_after)


@dataclass
class _Client:
    running: bool = False
    waiting: int = 0
    refused: int = 0  # refusals pausing before their answer
    rested_at: float = 0.0  # time.monotonic() from which its next long chat may start


class ClientShares:
    """Per client, one long chat at a time and `waiters` more waiting (up to `wait_seconds`),
    each starting `rest_factor` times the last one's duration after it ended. Past that, a
    refusal; the first `paused` at a time are answered after a pause of a second, idle."""

    def __init__(self, waiters: int, rest_factor: float, wait_seconds: float, paused: int = 2):
        self._waiters, self._rest_factor, self._wait_seconds, self._paused = waiters, rest_factor, wait_seconds, paused
        self._changed = threading.Condition()
        self._clients: dict[str, _Client] = {}

    def enter(self, client: str) -> None:
        """Returns once `client` may compute a long chat; raises OverShare when it may not
        within `wait_seconds`, or has as many waiting already."""
        deadline = time.monotonic() + self._wait_seconds
        with self._changed:
            state = self._clients.setdefault(client, _Client())
            if state.waiting >= self._waiters + (not state.running):
                self._refuse(state)
            state.waiting += 1
            try:
                while True:
                    now = time.monotonic()
                    if not state.running and now >= state.rested_at:
                        state.running = True
                        return
                    wake = deadline if state.running else min(deadline, state.rested_at)
                    if now >= deadline:
                        raise OverShare(self._retry_after(state))
                    self._changed.wait(wake - now)
            finally:
                state.waiting -= 1

    def refuse_at_once(self, client: str) -> None:
        """Raises OverShare when `client` has as many long chats waiting as it may, before the
        chat is even read: reading a pasted transcript is work too, and a client past its
        share would ask again at once."""
        with self._changed:
            state = self._clients.get(client)
            if state is not None and state.waiting >= self._waiters + (not state.running):
                self._refuse(state)

    def leave(self, client: str, seconds: float) -> None:
        with self._changed:
            state = self._clients[client]
            state.running = False
            state.rested_at = time.monotonic() + seconds * self._rest_factor
            self._changed.notify_all()
            if len(self._clients) > 1024:  # forget the clients that are done and rested
                now = time.monotonic()
                self._clients = {name: each for name, each in self._clients.items() if each.running or each.waiting or each.refused or each.rested_at > now}

    def _refuse(self, state: _Client) -> None:
        """Raises OverShare, after a pause (idle, up to REFUSAL_PAUSE_SECONDS) for the first
        `_paused` refusals at a time: a client that does not wait for Retry-After and asks again
        at once would otherwise have a refusal computed for it hundreds of times a second."""
        if state.refused < self._paused:
            state.refused += 1
            try:
                until = time.monotonic() + REFUSAL_PAUSE_SECONDS
                while (left := until - time.monotonic()) > 0:
                    self._changed.wait(left)
            finally:
                state.refused -= 1
        raise OverShare(self._retry_after(state))

    def _retry_after(self, state: _Client) -> int:
        rest = state.rested_at - time.monotonic()
        return max(1, math.ceil(rest)) if rest > 0 and not state.running else 5


def init_app(app: Flask) -> None:
    config = app.config
    sys.setswitchinterval(config["THREAD_SWITCH_SECONDS"])
    gate = LongChatGate(config["LONG_CHATS_AT_ONCE"], config["LONG_CHAT_WAITERS"], config["LONG_CHAT_WAIT_SECONDS"])
    shares = ClientShares(config["CLIENT_LONG_CHAT_WAITERS"], config["CLIENT_REST_FACTOR"], config["LONG_CHAT_WAIT_SECONDS"])

    @app.before_request
    def admit():
        scenario_id = (request.view_args or {}).get("scenario_id")
        if scenario_id is not None:
            client = request.remote_addr or "unknown"
            if scenario_id.startswith("t-"):
                shares.refuse_at_once(client)
            g.scenario_size = size = chat_size(scenario_id)
            if size is not None and is_long(size[0]):
                shares.enter(client)
                if not gate.enter():
                    shares.leave(client, 0)
                    raise LongChatsBusy()
                g.long_chat_slot = True
                g.client_share = (client, time.monotonic())  # its rest counts its computing, not its wait
        g.budget = time_budget.start(current_app.config["REQUEST_CPU_SECONDS"], current_app.config["REQUEST_WALL_SECONDS"])

    @app.teardown_request
    def release(_error):
        if "budget" in g:
            time_budget.stop(g.pop("budget"))
        if g.pop("long_chat_slot", False):
            gate.leave()
        if "client_share" in g:
            client, started = g.pop("client_share")
            shares.leave(client, time.monotonic() - started)

    init_answers(app)


def init_answers(app: Flask) -> None:
    """The pages of a request past its budget, of a busy server and of a client past its share."""

    @app.errorhandler(BudgetExceeded)
    def over_budget(error: BudgetExceeded):
        seconds = format_number(error.seconds)
        if request.blueprint == "sweep":
            what = _("Sweeping every strategy over these red lines and KEEP values needs more computing than one page may use here (%(seconds)s seconds).", seconds=seconds)
        elif request.blueprint == "compare":
            what = _("Comparing every strategy on this chat needs more computing than one page may use here (%(seconds)s seconds).", seconds=seconds)
        else:
            what = _("Replaying this chat needs more computing than one page may use here (%(seconds)s seconds).", seconds=seconds)
        problems = [what]
        if g.get("scenario_size"):
            messages, calls = g.scenario_size
            problems.append(_("The chat has %(messages)s messages and %(calls)s model calls.", messages=format_number(messages), calls=format_number(calls)))
        problems.append(_(
            "To see it here, cut the transcript to fewer messages, or raise the window so that compaction happens less often. "
            "The command line (compaction-playground compare, or sweep) has no such limit."
        ))
        if request.blueprint == "sweep":
            problems.append(_("Or sweep fewer red lines (a larger step, a narrower range) and fewer KEEP values."))
        return error_page(422, problems, g.get("lighter_sweeps", ()))

    @app.errorhandler(LongChatsBusy)
    def busy(_error: LongChatsBusy):
        answer = error_page(503, [
            _("The server is already computing another long chat. Try again in a few seconds."),
            _(
                "Only chats of more than %(messages)s messages wait for their turn, or of more than %(compared)s to compare every strategy.",
                messages=format_number(current_app.config["LONG_CHAT_MESSAGES"]),
                compared=format_number(current_app.config["LONG_COMPARISON_MESSAGES"]),
            ),
        ])
        answer.headers["Retry-After"] = "5"
        return answer

    @app.errorhandler(OverShare)
    def over_share(error: OverShare):
        answer = error_page(429, [
            _("You already have a long chat being computed here. Try again in %(seconds)s seconds.", seconds=format_number(error.retry_after)),
            _("Each visitor has one long chat computed at a time, so that everyone gets a turn."),
        ])
        answer.headers["Retry-After"] = str(error.retry_after)
        return answer


def is_long(messages: int) -> bool:
    """Whether a chat of `messages` messages takes its turn on this route: a comparison replays
    every strategy, so it is long sooner than a replay."""
    config = current_app.config
    return messages > config["LONG_CHAT_MESSAGES"] or (request.blueprint == "compare" and messages > config["LONG_COMPARISON_MESSAGES"])


def chat_size(scenario_id: str) -> tuple[int, int] | None:
    """(messages, model calls) of the scenario named in the URL, or None when it names none
    (the view then answers its own 404)."""
    try:
        scenario = find_scenario(scenario_id)
    except StateError:  # the view reports a bad id with its own message
        return None
    return len(scenario.script), scenario.call_count
