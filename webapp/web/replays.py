"""A bounded cache of replays, keyed by scenario and settings."""

from __future__ import annotations

import sys
from dataclasses import is_dataclass
from typing import Any

from ..core.engine.history import Block
from ..core.lru import LRUCache
from ..core.engine.replay import replay
from ..core.engine.calls import Replay, per_replay
from ..core.model import Scenario
from ..core.settings import Settings
from ..core.engine.summarizer import Summarizer

# Measured with tracemalloc on transcripts of 200 to 1,000 messages: about 3.5 KB per call
# (its events, facts, request) and 8 to 10 bytes per block each call sends (a reference).
BYTES_PER_CALL = 3500
BYTES_PER_CALL_BLOCK = 10


def replay_bytes(key: tuple, result: Replay) -> int:
    """About how much memory a replay holds beyond the scenario it shares with the others: its
    own (`made_bytes`), and what the pages derived from it and keep on it since (`per_replay`:
    tool names, each block's versions, the bill's increments, the chat's bubbles…)."""
    return made_bytes(result) + derived_bytes(result)


@per_replay
def made_bytes(result: Replay) -> int:
    """A replay as made: its calls' block lists, and the texts compaction wrote (summaries,
    truncated results). Weighed once: a replay never changes."""
    written: dict[str, int] = {}
    blocks = 0
    for call in result.calls:
        blocks += len(call.blocks)
        for block in call.blocks:
            if block.state != "original" and block.id not in written:
                written[block.id] = len(block.text) + 8 * len(block.replaces)
    return BYTES_PER_CALL * len(result.calls) + BYTES_PER_CALL_BLOCK * blocks + sum(written.values())


def derived_bytes(result: Replay) -> int:
    """The size of what pages derived from a replay and keep on it: its containers, texts and
    numbers, each object once; a block it points to is the replay's, counted there. Texts it
    shares with the scenario count again: an estimate on the safe side."""
    seen: set[int] = set()
    return sum(_size(value, seen) for function, value in result.derived.items() if function is not made_bytes.__wrapped__)


def _size(value: Any, seen: set[int]) -> int:
    if id(value) in seen or isinstance(value, Block):
        return 0
    seen.add(id(value))
    size = sys.getsizeof(value)
    if isinstance(value, dict):
        return size + sum(_size(key, seen) + _size(item, seen) for key, item in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return size + sum(_size(item, seen) for item in value)
    if is_dataclass(value) and hasattr(value, "__dict__"):
        # A record a page made (a cache hit): its fields.
        return size + sum(_size(item, seen) for item in vars(value).values())
    return size


class ReplayCache:
    """Least recently used replays, at most `size` of them and `max_bytes` in all; safe across threads."""

    def __init__(self, size: int, max_bytes: int, summarizer: Summarizer | None = None):
        self.summarizer = summarizer  # None: the offline summarizer
        self.cache: LRUCache[tuple, Replay] = LRUCache(size, max_bytes, replay_bytes)
        self._weighed: dict[tuple, int] = {}  # per key, how many derived values its weight counts

    def __len__(self) -> int:
        return len(self.cache)

    def get(self, scenario: Scenario, settings: Settings) -> Replay:
        # The source is part of the key: two uploaded transcripts never share an id by chance,
        # but a reloaded library may hold a changed scenario under the same id.
        key = (scenario.id, scenario.source, settings)
        found = self.cache.get(key)
        if found is not None and found.scenario is scenario:
            # Pages derived more from it since it was last weighed: weigh it again.
            if self._weighed.get(key) != len(found.derived):
                self._weighed[key] = len(found.derived)
                self.cache.reweigh(key)
            return found
        result = replay(scenario, settings, self.summarizer)
        self.cache.put(key, result)
        self._weighed[key] = len(result.derived)
        if len(self._weighed) > 2 * self.cache.max_entries:  # forget the replays the cache let go
            self._weighed = {kept: count for kept, count in self._weighed.items() if kept in self.cache}
        return result
