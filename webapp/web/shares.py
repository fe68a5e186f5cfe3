"""One client's fair share of long chats (docs/serving.md, "A fair share per client"): one
computed at a time and `waiters` more waiting for it, each starting `rest_factor` times the
last one's duration after it ended; past that, a refusal saying when to come back.

`ClientShares` counts in this process's memory (LIMITS_STORE unset: each worker its own, as
always). `SharedShares` counts in the Redis LIMITS_STORE names, so a client has one share
across every worker and host; while Redis does not answer it counts in this process's memory
instead, as if LIMITS_STORE were unset, and goes back to Redis by itself (web/redis_link.py).
A share taken in Redis has a lease: a process that dies holding it frees it when the lease ends.
"""

from __future__ import annotations

import math
import threading
import time
import uuid
from dataclasses import dataclass

from .redis_link import RedisDown, RedisLink

REFUSAL_PAUSE_SECONDS = 1.0
BUSY_RETRY_SECONDS = 5  # Retry-After while the client's long chat is still being computed
POLL_SECONDS = 0.1  # how often a client waiting in Redis asks again whether its turn came


class OverShare(Exception):
    """This client already has its long chats (one computed, one waiting), or is resting after
    its last one; `retry_after` says in how many seconds to come back."""

    def __init__(self, retry_after: int):
        self.retry_after = retry_after
        super().__init__(retry_after)


@dataclass(frozen=True)
class Ticket:
    """A client's share, taken: give it back with `leave`. `token` names it in Redis; empty,
    it was taken in this process's memory."""

    client: str
    token: str = ""


def retry_after(rest: float, running: bool) -> int:
    return max(1, math.ceil(rest)) if rest > 0 and not running else BUSY_RETRY_SECONDS


class RefusalPause:
    """The first `paused` refusals of a client at a time are answered after a pause of a
    second, idle: a client that does not wait for Retry-After and asks again at once would
    otherwise have a refusal computed for it hundreds of times a second."""

    def __init__(self, paused: int = 2):
        self._paused = paused
        self._lock = threading.Lock()
        self._pausing: dict[str, int] = {}

    def refuse(self, client: str, seconds: int):
        with self._lock:
            pausing = self._pausing.get(client, 0) < self._paused
            if pausing:
                self._pausing[client] = self._pausing.get(client, 0) + 1
        if pausing:
            try:
                time.sleep(REFUSAL_PAUSE_SECONDS)
            finally:
                with self._lock:
                    self._pausing[client] -= 1
                    if not self._pausing[client]:
                        del self._pausing[client]
        raise OverShare(seconds)


@dataclass
class _Client:
    running: bool = False
    waiting: int = 0
    rested_at: float = 0.0  # time.monotonic() from which its next long chat may start


class ClientShares:
    """The shares in this process's memory."""

    def __init__(self, waiters: int, rest_factor: float, wait_seconds: float, paused: int = 2):
        self._waiters, self._rest_factor, self._wait_seconds = waiters, rest_factor, wait_seconds
        self._pause = RefusalPause(paused)
        self._changed = threading.Condition()
        self._clients: dict[str, _Client] = {}

    def enter(self, client: str, wait_seconds: float | None = None, lease: float = 0) -> Ticket:
        """Returns once `client` may compute a long chat; raises OverShare when it may not
        within `wait_seconds` (the configured wait by default), or has as many waiting already.
        (`lease` is for the shared shares: a process's memory dies with the process.)"""
        deadline = time.monotonic() + (self._wait_seconds if wait_seconds is None else wait_seconds)
        with self._changed:
            state = self._clients.setdefault(client, _Client())
            if state.waiting >= self._waiters + (not state.running):
                self._refuse(client, state)
            state.waiting += 1
            try:
                while True:
                    now = time.monotonic()
                    if not state.running and now >= state.rested_at:
                        state.running = True
                        return Ticket(client)
                    wake = deadline if state.running else min(deadline, state.rested_at)
                    if now >= deadline:
                        raise OverShare(retry_after(state.rested_at - now, state.running))
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
                self._refuse(client, state)

    def leave(self, ticket: Ticket, seconds: float) -> None:
        with self._changed:
            state = self._clients[ticket.client]
            state.running = False
            state.rested_at = time.monotonic() + seconds * self._rest_factor
            self._changed.notify_all()
            if len(self._clients) > 1024:  # forget the clients that are done and rested
                now = time.monotonic()
                self._clients = {name: each for name, each in self._clients.items() if each.running or each.waiting or each.rested_at > now}

    def _refuse(self, client: str, state: _Client) -> None:
        """Raises OverShare after the pause, which waits idle (the condition's lock released)."""
        rest = retry_after(state.rested_at - time.monotonic(), state.running)
        self._changed.release()
        try:
            self._pause.refuse(client, rest)
        finally:
            self._changed.acquire()


# Redis's own clock (TIME) is every host's: a rest that one host starts, another one ends.
_NOW = "local t = redis.call('TIME') local now = tonumber(t[1]) + tonumber(t[2]) / 1000000 "
_STATE = (
    "local running = tonumber(redis.call('HGET', KEYS[1], 'until') or '0') > now "
    "local rest = tonumber(redis.call('HGET', KEYS[1], 'rested') or '0') - now "
)
# ARGV: token, waiters allowed, seconds to wait, 1 to join the room (0: only look).
JOIN = _NOW + _STATE + """
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local allowed = tonumber(ARGV[2]) + (running and 0 or 1)
if redis.call('ZCARD', KEYS[2]) >= allowed then return {0, running and '1' or '0', tostring(rest)} end
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]) + 5, ARGV[1])
  redis.call('EXPIRE', KEYS[2], math.ceil(tonumber(ARGV[3])) + 10)
end
return {1, '0', '0'}
"""
# ARGV: token, lease seconds.
TAKE = _NOW + _STATE + """
if running or rest > 0 then return {0, running and '1' or '0', tostring(rest)} end
redis.call('HSET', KEYS[1], 'holder', ARGV[1], 'until', tostring(now + tonumber(ARGV[2])))
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])) + 60)
redis.call('ZREM', KEYS[2], ARGV[1])
return {1, '0', '0'}
"""
# ARGV: token, seconds it took, rest factor.
LEAVE = _NOW + """
if redis.call('HGET', KEYS[1], 'holder') == ARGV[1] then
  local rest = tonumber(ARGV[2]) * tonumber(ARGV[3])
  redis.call('HSET', KEYS[1], 'until', '0', 'rested', tostring(now + rest))
  redis.call('HDEL', KEYS[1], 'holder')
  redis.call('EXPIRE', KEYS[1], math.ceil(rest) + 60)
end
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
"""


class SharedShares:
    """The shares in Redis, across every worker and host; in `local` while Redis does not answer."""

    def __init__(self, link: RedisLink, local: ClientShares, waiters: int, rest_factor: float, wait_seconds: float, lease: float):
        self.link, self.local = link, local
        self._waiters, self._rest_factor, self._wait_seconds, self._lease = waiters, rest_factor, wait_seconds, lease
        self._pause = RefusalPause()
        self._join, self._take, self._leave = (link.script(source) for source in (JOIN, TAKE, LEAVE))

    def enter(self, client: str, wait_seconds: float | None = None, lease: float | None = None) -> Ticket:
        wait = self._wait_seconds if wait_seconds is None else wait_seconds
        try:
            return self._enter(client, wait, lease or self._lease)
        except RedisDown:
            return self.local.enter(client, wait)

    def refuse_at_once(self, client: str) -> None:
        try:
            self._ask(self._join, client, "", self._waiters, 0, 0)
        except RedisDown:
            self.local.refuse_at_once(client)

    def leave(self, ticket: Ticket, seconds: float) -> None:
        if not ticket.token:
            self.local.leave(ticket, seconds)
            return
        try:  # else its lease ends by itself
            self.link.run(lambda client: self._leave(keys=self._keys(ticket.client), args=[ticket.token, seconds, self._rest_factor], client=client))
        except RedisDown:
            pass

    def _enter(self, client: str, wait: float, lease: float) -> Ticket:
        token = uuid.uuid4().hex
        self._ask(self._join, client, token, self._waiters, wait, 1)
        deadline = time.monotonic() + wait
        taken = False
        try:
            while True:
                taken, running, rest = self._try(self._take, client, token, lease)
                if taken:
                    return Ticket(client, token)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise OverShare(retry_after(rest, running))
                time.sleep(min(POLL_SECONDS, left))
        finally:
            if not taken:
                self._leave_room(client, token)

    def _ask(self, script, client: str, *args) -> None:
        """Runs a JOIN; a refusal raises OverShare after the refusal pause."""
        allowed, running, rest = self._try(script, client, *args)
        if not allowed:
            self._pause.refuse(client, retry_after(rest, running))

    def _try(self, script, client: str, *args) -> tuple[bool, bool, float]:
        answer = self.link.run(lambda redis: script(keys=self._keys(client), args=list(args), client=redis))
        allowed, running, rest = answer
        return allowed == 1, running in (b"1", "1"), float(rest)

    def _leave_room(self, client: str, token: str) -> None:
        try:
            self.link.run(lambda redis: redis.zrem(self._keys(client)[1], token))
        except RedisDown:
            pass  # its place in the room expires by itself

    @staticmethod
    def _keys(client: str) -> list[str]:
        return [f"playground:share:{client}", f"playground:share-room:{client}"]
