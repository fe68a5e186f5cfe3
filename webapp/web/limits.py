"""A bounded cost per request (docs/serving.md, "A bounded cost per request").

- Every request runs under a budget of CPU and wall-clock time (core/time_budget.py); past it the
  visitor gets a page that says what was too large and what to change, long before gunicorn's
  timeout would kill the worker.
- A long chat (more than LONG_CHAT_MESSAGES messages) is computed by one request at a time per
  worker process. A few more (LONG_CHAT_WAITERS) wait for their turn, idle, up to
  LONG_CHAT_WAIT_SECONDS; any other is answered "busy, try again in a few seconds" at once.
  So long chats hold at most a few of a worker's threads, and the others stay free for
  everything else: the home page and the built-in scenarios never wait behind long chats.
"""

from __future__ import annotations

import threading

from flask import Flask, current_app, g, request
from flask_babel import format_number
from flask_babel import gettext as _

from ..core import time_budget
from ..core.time_budget import BudgetExceeded
from .errors import error_page
from .state import StateError, find_scenario


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
    gate = LongChatGate(app.config["LONG_CHATS_AT_ONCE"], app.config["LONG_CHAT_WAITERS"], app.config["LONG_CHAT_WAIT_SECONDS"])

    @app.before_request
    def admit():
        scenario_id = (request.view_args or {}).get("scenario_id")
        if scenario_id is not None:
            g.scenario_size = size = chat_size(scenario_id)
            if size is not None and size[0] > current_app.config["LONG_CHAT_MESSAGES"]:
                if not gate.enter():
                    raise LongChatsBusy()
                g.long_chat_slot = True
        g.budget = time_budget.start(current_app.config["REQUEST_CPU_SECONDS"], current_app.config["REQUEST_WALL_SECONDS"])

    @app.teardown_request
    def release(_error):
        if "budget" in g:
            time_budget.stop(g.pop("budget"))
        if g.pop("long_chat_slot", False):
            gate.leave()

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
        return error_page(422, problems)

    @app.errorhandler(LongChatsBusy)
    def busy(_error: LongChatsBusy):
        body, status, *headers = error_page(503, [
            _("The server is already computing another long chat. Try again in a few seconds."),
            _("Only chats of more than %(messages)s messages wait for their turn; the built-in scenarios never do.", messages=format_number(current_app.config["LONG_CHAT_MESSAGES"])),
        ])
        return body, status, {**(headers[0] if headers else {}), "Retry-After": "5"}


def chat_size(scenario_id: str) -> tuple[int, int] | None:
    """(messages, model calls) of the scenario named in the URL, or None when it names none
    (the view then answers its own 404)."""
    try:
        scenario = find_scenario(scenario_id)
    except StateError:  # the view reports a bad id with its own message
        return None
    return len(scenario.script), scenario.call_count
