"""The one way to get a replay: the play page, the comparison, the sweep and the command line
all ask a `Replays`, which replays through the configured summarizer (the offline one, or a
remote endpoint: remote_summarizer.py) and keeps what it made in one bounded cache.

A replay is keyed by what makes it (`ReplayKey`): the chat's content (`chat_hash`), the
settings, and the summarizer. Prices and the prompt cache's billing are not part of it: they
change no request, so a new price re-prices the replays kept instead of replaying them.

Two kinds of replay are kept side by side:

- `get`: the replay of exactly these settings, call by call (what the play page and the
  comparison draw: where KEEP starts, the alert line's warnings, the pinned messages…).
- `sending`: a replay that sends what these settings send, with every figure of the whole
  chat a comparison reads (the bill, SENT, compactions, overflows, facts, validity), made
  once for all the settings that send the same (`sent_settings`), and from "none"'s calls up
  to where its strategy first acts (`replay.replay_from`). The sweep asks for hundreds of
  these; they are not the replay a page draws, so their key says which kind it is.

The cache is bounded by entries and by bytes (core/lru.py), each replay weighed by what it
holds (`replay_bytes`) and weighed again as pages derive more from it.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import sys
import threading
import zlib
from functools import partial
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from typing import Any

from pydantic import BaseModel

from ..lru import CacheInfo, LRUCache
from ..model import Scenario
from ..settings import Settings
from .strategy_catalog import STRATEGIES
from .calls import Replay, per_replay
from .history import Block
from .remote_summarizer import OpenAICompatibleSummarizer, summarizer_config
from .replay import as_if, replay, replay_from
from .summarizer import OfflineSummarizer, Summarizer

# Measured with tracemalloc on transcripts of 200 to 1,000 messages: about 3.5 KB per call
# (its events, facts, request) and 8 to 10 bytes per block each call sends (a reference).
BYTES_PER_CALL = 3500
BYTES_PER_CALL_BLOCK = 10
# Without bounds (a command line run, a test): every replay made is kept while the Replays is.
UNBOUNDED = sys.maxsize


def chat_hash(scenario: Scenario) -> str:
    """The sha256 of everything the scenario holds (its messages, tools, facts, settings,
    narration, where it came from), the same in every process: two scenarios with the same
    hash replay alike. Computed once per scenario."""
    found = scenario.derived.get(chat_hash)
    if found is None:
        found = scenario.derived[chat_hash] = _digest(scenario)
    return found


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False, default=_plain).encode()).hexdigest()


def _plain(value: Any) -> Any:
    """What json cannot write, as what it can: a record by its fields (not what is derived
    from it later), a set in a fixed order."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if is_dataclass(value):
        return {field.name: getattr(value, field.name) for field in fields(value) if field.init}
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=lambda item: json.dumps(item, sort_keys=True, default=_plain))
    return str(value)


@dataclass(frozen=True)
class ReplayKey:
    """What a replay depends on, and nothing else: the chat (`chat_hash`), the settings (of a
    `figures_only` replay, `sent_settings`), and the summarizer ("offline", or the model and
    endpoint a remote one calls; never its API key)."""

    chat: str
    settings: Settings
    summarizer: str = OfflineSummarizer.name
    figures_only: bool = False


def pack_replays(replays: Iterable[Replay]) -> bytes:
    """Replays as a job hands them to another process: without the chat (every process has it)
    nor what pages derived from them (made again where they are read), compressed; the calls two
    replays share (`replay_from`) are written once. A comparison of a 1,000-message chat: 1.9 MB,
    0.3 s to pack and 0.3 s to unpack, against 0.8 s to replay it."""
    bare = [replace(made, scenario=None, derived={}, of_calls={}) for made in replays]
    return zlib.compress(pickle.dumps(bare, protocol=pickle.HIGHEST_PROTOCOL), 1)


def unpack_replays(data: bytes, scenario: Scenario) -> list[Replay]:
    """The replays `pack_replays` wrote, of `scenario` again."""
    return [replace(made, scenario=scenario) for made in pickle.loads(zlib.decompress(data))]


def sent_settings(scenario: Scenario, settings: Settings) -> Settings:
    """The settings with what changes nothing sent made equal: "none" sends the same at every
    line and KEEP (only its alert warnings and where KEEP starts differ); a harness that draws
    its own KEEP ignores keep and keep_unit; a product that lowers the line asked compacts at
    the line it lowers it to; keep facts tells nothing to the summarizer of a chat without
    critical facts."""
    if settings.strategy == "none":
        return Settings(strategy="none", window=settings.window, model_window=settings.model_window, counter=settings.counter, threshold=1.0)
    update: dict[str, object] = {"threshold": settings.effective_threshold}
    if STRATEGIES[settings.strategy].keep_rule:
        update.update(keep=1, keep_unit="requests")
    if not scenario.facts:
        update["keep_facts"] = False
    return settings.model_copy(update=update)


class Replays:
    """Replays by `ReplayKey`, made through one summarizer, the least recently used dropped
    past `size` of them or `max_bytes` in all; safe across threads (two threads asking for the
    same replay at once may both make it, and get equal ones). `made` counts the replays the
    engine made: what a cache hit saves."""

    def __init__(self, size: int = UNBOUNDED, max_bytes: int = UNBOUNDED, summarizer: Summarizer | None = None):
        self.summarizer = summarizer  # None: the offline summarizer
        self.summarizer_name = (summarizer or OfflineSummarizer).name
        self._weights: dict[ReplayKey, Weight] = {}
        # The cache weighs through the weights alone, not a method of self: a cycle would
        # leave every replay made to the garbage collector, which is off while a sweep runs.
        self.cache: LRUCache[ReplayKey, Replay] = LRUCache(size, max_bytes, partial(_weigh, self._weights))
        self._lock = threading.Lock()
        self.made = 0

    @classmethod
    def configured(cls, config: Mapping[str, object] | None = None, environ: Mapping[str, str] | None = None, **bounds: int) -> Replays:
        """Replays through the summarizer the app's config or the environment names
        (`summarizer_config`; SummarizerError when it is set wrong), or the offline one."""
        endpoint = summarizer_config(config, environ)
        return cls(summarizer=OpenAICompatibleSummarizer(endpoint) if endpoint else None, **bounds)

    def __len__(self) -> int:
        return len(self.cache)

    def info(self) -> CacheInfo:
        return self.cache.info()

    def key(self, scenario: Scenario, settings: Settings, figures_only: bool = False) -> ReplayKey:
        chosen = sent_settings(scenario, settings) if figures_only else settings
        return ReplayKey(chat_hash(scenario), chosen, self.summarizer_name, figures_only)

    def get(self, scenario: Scenario, settings: Settings) -> Replay:
        """The replay of `scenario` with exactly `settings`."""
        key = self.key(scenario, settings)
        found = self._kept(key)
        if found is None:
            found = self._keep(key, replay(scenario, settings, self.summarizer))
        return found

    def sending(self, scenario: Scenario, settings: Settings) -> Replay:
        """A replay that sends what `settings` send, with their settings and their product's
        notices about its line, and every figure a comparison reads of the whole chat; what
        the settings alone draw on a call (where KEEP starts, the alert line's warnings, the
        pinned messages) may be another's that sends the same."""
        key = self.key(scenario, settings, figures_only=True)
        found = self._kept(key)
        if found is None:
            if settings.strategy == "none":
                made = replay(scenario, settings, self.summarizer)
            else:
                none = self.sending(scenario, settings.model_copy(update={"strategy": "none", "keep_facts": False}))
                made = replay_from(none, settings, self.summarizer)
            found = self._keep(key, made)
        return found if found.settings == settings else as_if(found, settings)

    def has(self, scenario: Scenario, settings: Settings) -> bool:
        return self.key(scenario, settings) in self.cache

    def adopt(self, scenario: Scenario, made: Replay) -> Replay:
        """Keeps a replay of `scenario` that another process made (a job's, `unpack_replays`)
        as if this one had made it; the one kept already when there is one."""
        key = self.key(scenario, made.settings)
        return self._kept(key) or self._keep(key, made)

    def settle(self) -> None:
        """Weigh what was derived from the replays kept since they were last weighed (each value
        once: `Weight`). A page that derives much from many (the sweep) settles once it is
        done, so that the next page, at a new price, finds them weighed."""
        for key in list(self._weights):
            self.cache.reweigh(key)

    def _kept(self, key: ReplayKey) -> Replay | None:
        found = self.cache.get(key)
        weight = self._weights.get(key)
        if found is not None and weight is not None and weight.count != derived_count(found):
            self.cache.reweigh(key)  # pages derived more from it since it was last weighed
        return found

    def _keep(self, key: ReplayKey, made: Replay) -> Replay:
        with self._lock:
            self.made += 1
            self._weights[key] = Weight()
            if len(self._weights) > 2 * min(len(self.cache) + 1, self.cache.max_entries):  # forget the replays the cache let go
                for gone in [kept for kept in self._weights if kept not in self.cache and kept != key]:
                    del self._weights[gone]
        self.cache.put(key, made)
        return made


class Weight:
    """What a kept replay's derived values weigh, each weighed once, when it first appears
    (and an object two of them share counted once): a new price adds only its own."""

    def __init__(self) -> None:
        self.count = 0  # the derived values weighed, when last weighed
        self.bytes = 0
        self._weighed: set[tuple[str, object]] = set()
        self._seen: set[int] = set()

    def of(self, result: Replay) -> int:
        for store in ("derived", "of_calls"):
            for name, value in list(getattr(result, store).items()):
                if (store, name) not in self._weighed and name is not made_bytes.__wrapped__:
                    self._weighed.add((store, name))
                    self.bytes += _size(value, self._seen)
        self.count = derived_count(result)
        return self.bytes


def _weigh(weights: dict[ReplayKey, Weight], key: ReplayKey, result: Replay) -> int:
    weight = weights.get(key)
    return replay_bytes(result, weight if weight is not None else Weight())


def replay_bytes(result: Replay, weight: Weight | None = None) -> int:
    """About how much memory a replay holds beyond the scenario it shares with the others: its
    own (`made_bytes`), and what the pages derived from it and keep on it since (`per_replay`
    and `per_calls`: tool names, each block's versions, the bill's increments, the chat's
    bubbles, the prompt cache's hits…), weighed by `weight` once each."""
    return made_bytes(result) + (weight or Weight()).of(result)


@per_replay
def made_bytes(result: Replay) -> int:
    """A replay as made: its calls' block lists, and the texts compaction wrote (summaries,
    truncated results). Weighed once: a replay never changes. The calls it took from the
    replay it was made from (`replay_from`: "none"'s, which every replay of the sweep asks
    for, so it stays among the most recently used) are weighed with that one."""
    written: dict[str, int] = {}
    blocks = 0
    own = result.calls[result.taken:]
    for call in own:
        blocks += len(call.blocks)
        for block in call.blocks:
            if block.state != "original" and block.id not in written:
                written[block.id] = len(block.text) + 8 * len(block.replaces)
    return BYTES_PER_CALL * len(own) + BYTES_PER_CALL_BLOCK * blocks + sum(written.values())


def derived_count(result: Replay) -> int:
    """How many values are derived from a replay and kept on it: when it grows, weigh it again."""
    return len(result.derived) + len(result.of_calls)


def _size(value: Any, seen: set[int]) -> int:
    """The bytes of a value a page derived and what it holds, each object once (`seen`); a block
    it points to is the replay's, counted there. Texts it shares with the scenario count
    again: an estimate on the safe side."""
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
