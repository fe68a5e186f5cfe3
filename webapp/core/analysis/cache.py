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
from dataclasses import dataclass
from typing import Sequence

from ..engine.history import Block
from ..counting.tokens import Counter


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


@dataclass(frozen=True)
class CacheHit:
    """The cache's effect on one request: tokens read from it, and tokens written to it that
    are billed at the write price (zero when writing is free)."""

    cached: int
    written: int
    prefix_messages: int  # history messages in the cached prefix, after the floor; -1: none


def cache_hits(
    requests: Sequence[Sequence[Block]],
    floor_units: int,
    counter: Counter,
    model: CacheModel,
    keys: MessageKeys | None = None,
) -> list[CacheHit]:
    """The cache hits of a series of requests sent in order, each the floor then its blocks.

    A trie of message keys holds every prefix sent so far. A request usually repeats the
    previous one's blocks (the very same objects) and appends a few: that shared run is found
    by tuple comparisons done in C, and only the rest is walked through the trie.
    """
    keys = keys or MessageKeys()
    trie: dict[int, int] = {}  # (node << 32 | message key) -> child node
    written: set[int] = set()  # trie nodes where an earlier request put a breakpoint
    # The previous request, and its path: node and units after 0..n messages. Tokens are
    # computed only where a hit or a breakpoint is decided.
    previous: tuple[Block, ...] = ()
    nodes, units = [0], [floor_units]
    hits = []
    for index, request in enumerate(requests):
        blocks = tuple(request)
        shared = common_prefix(previous, blocks) if index > 0 else 0
        del nodes[shared + 1 :], units[shared + 1 :]
        matched = shared if index > 0 else -1  # the floor repeats from the second request on
        for position in range(shared, len(blocks)):
            block = blocks[position]
            edge = nodes[-1] << 32 | keys.of(block)
            node = trie.get(edge)
            if node is None:
                node = trie[edge] = len(trie) + 1
            elif matched == position:
                matched = position + 1
            nodes.append(node)
            units.append(units[-1] + block.units)
        previous = blocks
        if model.breakpoints:
            hit = _breakpoint_hit(model, nodes, units, counter, written, matched)
            tail = _prefix_tokens(counter, units[-1])
            write = max(0, tail - hit.cached) if tail >= model.minimum else 0
            hit = CacheHit(hit.cached, write, hit.prefix_messages)
            for depth in (0, len(nodes) - 1):
                if _prefix_tokens(counter, units[depth]) >= model.minimum:
                    written.add(nodes[depth])
        else:
            prefix = _prefix_tokens(counter, units[matched]) if matched >= 0 else 0
            cached = prefix // model.step * model.step if prefix >= model.minimum else 0
            hit = CacheHit(cached, 0, matched)
        hits.append(hit)
    return hits


def common_prefix(a: tuple[Block, ...], b: tuple[Block, ...]) -> int:
    """Length of the longest common prefix of two requests, by tuple comparisons done in C
    (the same object compares equal without looking inside)."""
    if len(a) <= len(b) and b[: len(a)] == a:
        return len(a)  # the usual case: the previous request, then new messages
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _breakpoint_hit(
    model: CacheModel, nodes: list[int], units: list[int], counter: Counter, written: set[int], matched: int
) -> CacheHit:
    """The deepest prefix shared with an earlier request that ends at an earlier breakpoint
    and that the lookup reaches: the floor's breakpoint, or within `lookback` messages of
    the last one."""
    last = len(nodes) - 1
    for depth in [*range(matched, max(0, last - model.lookback) - 1, -1), 0] if matched >= 0 else ():
        if depth <= matched and nodes[depth] in written:
            return CacheHit(_prefix_tokens(counter, units[depth]), 0, depth)
    return CacheHit(0, 0, -1)


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
        # By object too: a message is walked again after each compaction, and by every
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
