"""Prompt caching: what a provider serves from its cache when a request repeats the start of an
earlier one.

Providers bill the part of a request that repeats the start of an earlier request at a
discount. Two documented models are offered:

- ``openai`` — automatic caching, as described in "Prompt Caching in the API"
  (https://openai.com/index/api-prompt-caching/) and the guide
  (https://platform.openai.com/docs/guides/prompt-caching): prompts of 1,024 tokens or more;
  the longest previously computed prefix is cached, "starting at 1,024 tokens and increasing
  in 128-token increments". Cached input was billed at half price at launch (gpt-4o: $2.50
  uncached, $1.25 cached per million tokens), hence the default share of 0.5. Writing to the
  cache costs nothing extra.
- ``anthropic`` — explicit breakpoints (``cache_control``), as described in
  https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching. The model here puts
  two breakpoints on every request, the common choice for an agent loop: one after the system
  prompt and tools, one on the last message. A request reads from the cache the longest
  prefix that ends where an earlier request put a breakpoint, if it is identical and at least
  1,024 tokens long (the minimum for Claude Sonnet and Opus); the lookup reaches back 20
  blocks from the last breakpoint. Cache reads cost 0.1x the base input price (the default
  share), and the tokens written to the cache past the part read cost 1.25x (5-minute cache).

Both models assume every call comes within the cache's lifetime (minutes), as in an agent's
loop; a request above the window is treated like the others (a real API would reject it; the
verdict rules out any strategy that overflows anyway).

How a prefix is measured: at message granularity. Every request starts with the floor (the
system prompt and the tool definitions, identical on every call), then the history's
messages in order. The cached prefix is the floor plus the longest run of leading messages
that are identical, in content and order, to the start of an earlier request of the same
strategy; its tokens are the floor's plus those messages' own token counts from the replay
(no re-encoding). A real provider compares tokens, so it may also match a few tokens into
the first message that differs (its role header, a common start of its text): these figures
can be a few tokens low, never high.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Sequence

from ..engine.calls import Replay, per_calls
from ..engine.history import Block
from ..counting.tokens import Counter

_UNITS = attrgetter("units")


@dataclass(frozen=True)
class CacheModel:
    name: str
    label: str
    source: str
    minimum: int  # a prefix shorter than this is never cached
    step: int  # cached tokens are a multiple of this
    cached_share: float  # default price of a cached token, as a share of the full price
    write_share: float  # price of a token written to the cache, as a share of the full price
    breakpoints: bool  # True: only prefixes ending at an earlier breakpoint can be read
    lookback: int = 0  # how many messages before the last breakpoint a hit may end


CACHE_MODELS: dict[str, CacheModel] = {
    "openai": CacheModel(
        name="openai",
        label="OpenAI automatic caching",
        source="https://platform.openai.com/docs/guides/prompt-caching",
        minimum=1024,
        step=128,
        cached_share=0.5,
        write_share=1.0,
        breakpoints=False,
    ),
    "anthropic": CacheModel(
        name="anthropic",
        label="Anthropic cache breakpoints",
        source="https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching",
        minimum=1024,
        step=1,
        cached_share=0.1,
        write_share=1.25,
        breakpoints=True,
        lookback=20,
    ),
}


@dataclass(frozen=True, slots=True)
class CacheHit:
    """The cache's effect on one request: tokens read from it, and tokens written to it that
    are billed at the write price (zero when writing is free)."""

    cached: int
    written: int
    prefix_messages: int  # history messages in the cached prefix, after the floor; -1: none


@dataclass
class RequestPrefixes:
    """How each request of a series starts like the one before it, by request, in the
    counter's units (the floor's included). Made once, never changed after."""

    shared: list[int] = field(default_factory=list)  # leading messages identical to the previous request's (0 for the first)
    shared_units: list[int] = field(default_factory=list)  # the floor's units and those messages'
    units: list[int] = field(default_factory=list)  # the floor's units and every message's

    def units_at(self, index: int, blocks: tuple[Block, ...], depth: int) -> int:
        """The floor's units and those of the first `depth` messages of request `index`
        (`blocks`), from the nearest sum known."""
        shared = self.shared[index]
        if depth == shared:
            return self.shared_units[index]
        if depth == len(blocks):
            return self.units[index]
        if depth > shared:
            return self.shared_units[index] + sum(map(_UNITS, blocks[shared:depth]))
        return self.shared_units[index] - sum(map(_UNITS, blocks[depth:shared]))


def request_prefixes(
    requests: Sequence[Sequence[Block]], floor_units: int, appended: Sequence[bool] = ()
) -> RequestPrefixes:
    """What each request shares with the one before it, and its units. `appended[i]` vouches
    that request i is request i - 1 and then new messages (the engine's calls that did not
    compact), so its messages are not compared. A request that appends costs only the new
    messages' sum; after a compaction, the shared part's units come from whichever side of the
    first difference is shorter, and the first difference is looked for from the last one
    (a compaction that rewrites from its n-th message tends to rewrite from there or later
    the next time: what it already shortened stays as it is)."""
    prefixes = RequestPrefixes()
    previous: tuple[Block, ...] = ()
    units = floor_units
    guess = None  # where the last request that did not append first differed: the next one likely differs there or later
    for index, request in enumerate(requests):
        blocks = tuple(request)
        if index < len(appended) and appended[index]:
            shared, kept = len(previous), units
            for block in blocks[shared:]:  # a few: quicker than sum(map(...)) for so few
                units += block.units
        else:
            shared = guess = common_prefix(previous, blocks, guess)
            if shared == len(previous):
                kept = units
            elif shared <= len(previous) - shared:
                kept = floor_units + sum(map(_UNITS, blocks[:shared]))
            else:
                kept = units - sum(map(_UNITS, previous[shared:]))  # the same blocks, so the same units
            units = kept + sum(map(_UNITS, blocks[shared:]))
        prefixes.shared.append(shared)
        prefixes.shared_units.append(kept)
        prefixes.units.append(units)
        previous = blocks
    return prefixes


@per_calls
def replay_prefixes(result: Replay) -> RequestPrefixes:
    """`request_prefixes` of the replay's calls, shared by its cache model at every price and
    its compaction costs. A call without a compaction sends the history as the previous call
    left it, with its reply and the messages that came since appended (the engine replaces
    the history only when it compacts: `engine.strategies.compact`)."""
    calls = result.calls
    return request_prefixes([call.blocks for call in calls], result.floor_units, [call.compaction is None for call in calls])


def cache_hits(
    requests: Sequence[Sequence[Block]],
    floor_units: int,
    counter: Counter,
    model: CacheModel,
    keys: MessageKeys | None = None,
    prefixes: RequestPrefixes | None = None,
) -> list[CacheHit]:
    """The cache hits of a series of requests sent in order, each the floor then its blocks
    (`prefixes`, their `request_prefixes`, when already known). Tokens are computed only where
    a hit or a breakpoint is decided."""
    requests = [tuple(request) for request in requests]
    prefixes = prefixes if prefixes is not None else request_prefixes(requests, floor_units)
    trie = PrefixTrie(keys or MessageKeys())
    minimum, step = model.minimum, model.step
    # Trie nodes where an earlier request put a breakpoint: the floor's, from the first
    # request on (no hit is read before the second), if it is long enough to be cached.
    written = {0} if _prefix_tokens(counter, floor_units) >= minimum else set()
    hits = []
    for index, blocks in enumerate(requests):
        matched = trie.add(blocks, prefixes.shared[index])
        if index == 0:
            matched = -1  # the floor repeats from the second request on
        if model.breakpoints:
            depth = _breakpoint_depth(model, trie, written, matched)
            cached = _prefix_tokens(counter, prefixes.units_at(index, blocks, depth)) if depth >= 0 else 0
            whole = _prefix_tokens(counter, prefixes.units[index])
            hits.append(CacheHit(cached, max(0, whole - cached) if whole >= minimum else 0, depth))
            if whole >= minimum:
                written.add(trie.end)
        else:
            tokens = _prefix_tokens(counter, prefixes.units_at(index, blocks, matched)) if matched >= 0 else 0
            hits.append(CacheHit(tokens // step * step if tokens >= minimum else 0, 0, matched))
    return hits


def common_prefix(a: tuple[Block, ...], b: tuple[Block, ...], guess: int | None = None) -> int:
    """Length of the longest common prefix of two requests, by tuple comparisons done in C
    (the same object compares equal without looking inside). Without a `guess` (a length they
    probably share), the usual case first: `b` is `a` and then new messages; else a guess,
    where the two stop holding the same objects (found by halving). The guess is checked by one
    comparison of the two prefixes, then runs twice as long each time are compared, from the
    guess if it held, else from the start, until one holds the first difference, which
    halving it finds."""
    n = min(len(a), len(b))
    if guess is None:
        if n == len(a) and n and b[n - 1] is a[n - 1] and b[:n] == a:
            return n
        low, high = 0, n
        while low < high:
            middle = (low + high) // 2
            if a[middle] is b[middle]:
                low = middle + 1
            else:
                high = middle
        guess = low
    guess = min(guess, n)
    if a[:guess] == b[:guess]:
        return _first_difference(a, b, guess, n)
    return _first_difference(a, b, 0, guess)


def _first_difference(a: tuple[Block, ...], b: tuple[Block, ...], low: int, high: int) -> int:
    """The first position from `low` where `a` and `b` differ, given that they agree before
    it; `high` if they agree up to it."""
    size = 1
    while low < high:
        end = min(high, low + size)
        if a[low:end] != b[low:end]:
            while end - low > 1:  # the first difference is in [low, end)
                middle = (low + end) // 2
                if a[low:middle] == b[low:middle]:
                    low = middle
                else:
                    end = middle
            return low
        low, size = end, size * 2
    return high


class PrefixTrie:
    """Every prefix sent so far, as a trie of messages: node 0 is the floor, and a node's child
    under a message (its key, `MessageKeys`) is the prefix one message longer.

    Once a request's message is not under its node, every later message of the request makes
    a new node too (nothing hangs under a new node yet). Those nodes are one run: consecutive
    ids, whose only child each is the next message of that request, read from the request
    when a lookup needs it. A run's first message is keyed only when a later request looks
    under its parent. So a request that appends to the previous one adds a run and keys
    nothing, and a compaction that rewrites a long request adds one run, not a node per
    message; a lookup finds what a trie of a node per message would, so every hit is the same.
    The last request's path is kept the same way: where each run of consecutive nodes starts."""

    def __init__(self, keys: MessageKeys) -> None:
        self.keys = keys
        self.run_firsts: list[int] = []  # each run's first node, in increasing order
        self.runs: list[tuple[tuple[Block, ...], int, int]] = []  # its request, its first message there, its length
        self.unkeyed: dict[int, list[int]] = {}  # node -> the runs under it whose first message is not keyed yet
        self.edges: dict[int, int] = {}  # (node << 32 | message key) -> the first node of a run under it
        self.keyed: set[int] = set()  # nodes with a run in `edges`
        self.nodes = 1  # nodes made so far, the floor's included
        # The last request's path: its length in messages, and where each stretch of
        # consecutive nodes starts (the depth, and the node there).
        self.length = 0
        self.depths, self.starts = [0], [0]
        self.end = 0  # its node after all its messages

    def node(self, depth: int) -> int:
        """The last request's node after its first `depth` messages."""
        stretch = bisect_right(self.depths, depth) - 1
        return self.starts[stretch] + depth - self.depths[stretch]

    def add(self, blocks: tuple[Block, ...], shared: int) -> int:
        """Adds a request whose first `shared` messages are the last one's, and returns how
        many of its leading messages an earlier request started with."""
        depths, starts = self.depths, self.starts
        if shared == self.length and starts[-1] + shared - depths[-1] == self.nodes - 1:
            # The usual case: the last request, then new messages, under the newest node
            # (nothing hangs under it yet).
            if shared < len(blocks):
                self._new_run(self.nodes - 1, blocks, shared)
            self.length, self.end = len(blocks), self.nodes - 1
            return shared
        while depths[-1] > shared:
            depths.pop()
            starts.pop()
        position, node = shared, self.node(shared)
        while position < len(blocks):
            child = self._child(node, blocks[position])
            if child is None:
                self._new_run(node, blocks, position)
                break
            if child != node + 1:
                depths.append(position + 1)
                starts.append(child)
            position, node = position + 1, child
        self.length, self.end = len(blocks), self.node(len(blocks))
        return position

    def _new_run(self, node: int, blocks: tuple[Block, ...], position: int) -> None:
        """The nodes of `blocks` from `position` on, a run under `node`, end the path."""
        self.unkeyed.setdefault(node, []).append(len(self.runs))
        self.run_firsts.append(self.nodes)
        self.runs.append((blocks, position, len(blocks) - position))
        self.depths.append(position + 1)
        self.starts.append(self.nodes)
        self.nodes += len(blocks) - position

    def _child(self, node: int, block: Block) -> int | None:
        run = bisect_right(self.run_firsts, node) - 1
        if run >= 0:  # the next message of the node's own run
            request, start, length = self.runs[run]
            step = node - self.run_firsts[run] + 1
            if step < length and self._same(request[start + step], block):
                return node + 1
        for other in self.unkeyed.pop(node, ()):
            request, start, _ = self.runs[other]
            self.edges[node << 32 | self.keys.of(request[start])] = self.run_firsts[other]
            self.keyed.add(node)
        return self.edges.get(node << 32 | self.keys.of(block)) if node in self.keyed else None

    def _same(self, a: Block, b: Block) -> bool:
        return a is b or a.message is b.message or self.keys.of(a) == self.keys.of(b)


def _breakpoint_depth(model: CacheModel, trie: PrefixTrie, written: set[int], matched: int) -> int:
    """The deepest prefix shared with an earlier request (`matched` messages) that ends at an
    earlier breakpoint and that the lookup reaches: the floor's breakpoint, or within
    `lookback` messages of the last one; -1: none."""
    if matched < 0:
        return -1
    for depth in range(matched, max(0, trie.length - model.lookback) - 1, -1):
        if trie.node(depth) in written:
            return depth
    return 0 if 0 in written else -1


def _prefix_tokens(counter: Counter, units: int) -> int:
    """Tokens of a request's prefix: its parts' tokens, without the reply's priming, rounded
    down so that a prefix never counts more than the request."""
    return math.floor(counter.block_tokens(units))


class MessageKeys:
    """A small integer per distinct message, so prefixes compare by integers. A message is
    keyed by its fields as a tuple (strings keep their hash once computed, so a long tool
    result is hashed once); only nested values (tool calls, content parts) are serialized."""

    def __init__(self) -> None:
        self.keys: dict[tuple, int] = {}
        # By object too: a message is looked up again by later requests, and by every
        # strategy (their blocks share the script's message objects). The message is kept
        # with its key, so its id cannot be reused by another object meanwhile.
        self.by_object: dict[int, tuple[dict, int]] = {}

    def of(self, block: Block) -> int:
        known = self.by_object.get(id(block.message))
        if known is not None:
            return known[1]
        fields = tuple(
            sorted(
                (name, value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True))
                for name, value in block.message.items()
            )
        )
        key = self.by_object[id(block.message)] = (block.message, self.keys.setdefault(fields, len(self.keys)))
        return key[1]
