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
  process, however many requests it sends at once (web/shares.py).
  Per process: with two gunicorn workers, a client may have one long chat computed in each;
  with LIMITS_STORE=redis://…, one across every worker and host (one slot per process still).
- A thread computing a long chat holds the interpreter's lock for THREAD_SWITCH_SECONDS at a
  time before the others may run (Python's default: 5 ms); every short page waits that long
  at each of its turns, so the process hands the lock over more often (1 ms).
"""

from __future__ import annotations

import sys
import threading
import time

from flask import Flask, current_app, g, request
from flask_babel import format_number
from flask_babel import gettext as _

from ..core import time_budget
from ..core.time_budget import BudgetExceeded
from .errors import error_page
from .redis_link import shared_redis
from .scenario_lookup import find_scenario
from .shares import ClientShares, OverShare, SharedShares
from .state_error import StateError


JOB_PAGES = ("sweep", "compare")  # the blueprints whose long work runs as jobs


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


def init_app(app: Flask) -> None:
    config = app.config
    sys.setswitchinterval(config["THREAD_SWITCH_SECONDS"])
    gate = LongChatGate(config["LONG_CHATS_AT_ONCE"], config["LONG_CHAT_WAITERS"], config["LONG_CHAT_WAIT_SECONDS"])
    shares = app.extensions["client_shares"] = client_shares(app)

    @app.before_request
    def admit():
        scenario_id = (request.view_args or {}).get("scenario_id")
        if scenario_id is not None:
            client = request.remote_addr or "unknown"
            if scenario_id.startswith("t-"):
                shares.refuse_at_once(client)
            g.scenario_size = size = chat_size(scenario_id)
            if size is not None and is_long(size[0]) and not runs_as_job(size[0]):
                ticket = shares.enter(client)
                if not gate.enter():
                    shares.leave(ticket, 0)
                    raise LongChatsBusy()
                g.long_chat_slot = True
                g.client_share = (ticket, time.monotonic())  # its rest counts its computing, not its wait
        g.budget = time_budget.start(current_app.config["REQUEST_CPU_SECONDS"], current_app.config["REQUEST_WALL_SECONDS"])

    @app.teardown_request
    def release(_error):
        if "budget" in g:
            time_budget.stop(g.pop("budget"))
        if g.pop("long_chat_slot", False):
            gate.leave()
        if "client_share" in g:
            ticket, started = g.pop("client_share")
            shares.leave(ticket, time.monotonic() - started)

    init_answers(app)


def client_shares(app: Flask) -> ClientShares | SharedShares:
    """Each client's share of long chats: in this process's memory, or with LIMITS_STORE, in
    that Redis, across every worker and host (web/shares.py)."""
    config = app.config
    local = ClientShares(config["CLIENT_LONG_CHAT_WAITERS"], config["CLIENT_REST_FACTOR"], config["LONG_CHAT_WAIT_SECONDS"])
    link = shared_redis(app)
    if link is None:
        return local
    # A share taken by a request outlives it by nothing: a process that dies holding one frees it
    # once the longest request could have ended.
    lease = config["REQUEST_WALL_SECONDS"] + config["LONG_CHAT_WAIT_SECONDS"]
    return SharedShares(link, local, config["CLIENT_LONG_CHAT_WAITERS"], config["CLIENT_REST_FACTOR"], config["LONG_CHAT_WAIT_SECONDS"], lease)


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


def runs_as_job(messages: int) -> bool:
    """Whether this route has a chat of `messages` messages computed by a job (web/jobs.py):
    its requests only look the result up, or start the job, which takes the client's share."""
    return request.blueprint in JOB_PAGES and messages > current_app.config["JOB_MESSAGES"]


def chat_size(scenario_id: str) -> tuple[int, int] | None:
    """(messages, model calls) of the scenario named in the URL, or None when it names none
    (the view then answers its own 404)."""
    try:
        scenario = find_scenario(scenario_id)
    except StateError:  # the view reports a bad id with its own message
        return None
    return len(scenario.script), scenario.call_count
