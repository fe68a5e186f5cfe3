"""A bounded cache of replays, keyed by scenario and settings."""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..core.replay import Replay, replay
from ..core.scenarios import Scenario
from ..core.settings import Settings
from ..core.summarizer import Summarizer


class ReplayCache:
    """Least recently used replays, at most `size` of them; safe across threads."""

    def __init__(self, size: int, summarizer: Summarizer | None = None):
        self.size = size
        self.summarizer = summarizer  # None: the offline summarizer
        self._items: OrderedDict[tuple, Replay] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, scenario: Scenario, settings: Settings) -> Replay:
        # The source is part of the key: two uploaded transcripts never share an id by chance,
        # but a reloaded library may hold a changed scenario under the same id.
        key = (scenario.id, scenario.source, settings)
        with self._lock:
            found = self._items.get(key)
            if found is not None and found.scenario is scenario:
                self._items.move_to_end(key)
                return found
        result = replay(scenario, settings, self.summarizer)
        with self._lock:
            self._items[key] = result
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return result
