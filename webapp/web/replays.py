"""A bounded cache of replays, keyed by scenario and settings."""

from __future__ import annotations

from ..core.lru import LRUCache
from ..core.replay import Replay, replay
from ..core.scenarios import Scenario
from ..core.settings import Settings
from ..core.summarizer import Summarizer

# Measured with tracemalloc on transcripts of 200 to 1,000 messages: about 3.5 KB per call
# (its events, facts, request) and 8 to 10 bytes per block each call sends (a reference).
BYTES_PER_CALL = 3500
BYTES_PER_CALL_BLOCK = 10


def replay_bytes(key: tuple, result: Replay) -> int:
    """About how much memory a replay holds beyond the scenario it shares with the others: its
    calls' block lists, and the texts compaction wrote (summaries, truncated results)."""
    written: dict[str, int] = {}
    blocks = 0
    for call in result.calls:
        blocks += len(call.blocks)
        for block in call.blocks:
            if block.state != "original" and block.id not in written:
                written[block.id] = len(block.text) + 8 * len(block.replaces)
    return BYTES_PER_CALL * len(result.calls) + BYTES_PER_CALL_BLOCK * blocks + sum(written.values())


class ReplayCache:
    """Least recently used replays, at most `size` of them and `max_bytes` in all; safe across threads."""

    def __init__(self, size: int, max_bytes: int, summarizer: Summarizer | None = None):
        self.summarizer = summarizer  # None: the offline summarizer
        self.cache: LRUCache[tuple, Replay] = LRUCache(size, max_bytes, replay_bytes)

    def __len__(self) -> int:
        return len(self.cache)

    def get(self, scenario: Scenario, settings: Settings) -> Replay:
        # The source is part of the key: two uploaded transcripts never share an id by chance,
        # but a reloaded library may hold a changed scenario under the same id.
        key = (scenario.id, scenario.source, settings)
        found = self.cache.get(key)
        if found is not None and found.scenario is scenario:
            return found
        result = replay(scenario, settings, self.summarizer)
        self.cache.put(key, result)
        return result
