"""The prompt-cache model (webapp/core/analysis/cache.py) and the compaction costs
(compaction_cost.py) against plain reference models written here as simply as they can be:
every prefix sent kept whole in a set, every sum taken again from the start. The fast models
walk only what each request adds; whatever the requests do (append, truncate, drop, summarize,
send a message again as a new object), both must give the same hits and the same costs."""

from __future__ import annotations

import json
import math
from dataclasses import astuple

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from webapp.core.analysis.cache import CACHE_MODELS, CacheHit, cache_hits, replay_prefixes, request_prefixes
from webapp.core.analysis.compaction_cost import compaction_costs
from webapp.core.analysis.metrics import replay_hits
from webapp.core.analysis.pricing import Pricing
from webapp.core.counting.tokens import get_counter
from webapp.core.engine.history import Block
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import open_scenario, scenario_library
from webapp.core.engine.strategy_catalog import STRATEGIES

EXACT = get_counter("cl100k_base")
ESTIMATE = get_counter("estimate")
LESSONS = [scenario.id for scenario in scenario_library().lessons]


# --- The reference models --------------------------------------------------------------------


def message_key(message: dict) -> tuple:
    """What makes two messages the same for a cache: their fields, nested values as JSON."""
    return tuple(sorted((name, value if isinstance(value, (str, int, float, bool, type(None))) else json.dumps(value, sort_keys=True))
                        for name, value in message.items()))


def reference_hits(requests, floor_units, counter, model) -> list[CacheHit]:
    """Every prefix of every earlier request in a set; breakpoints as a set of whole prefixes."""
    def tokens(blocks) -> int:
        return math.floor(counter.block_tokens(floor_units + sum(block.units for block in blocks)))

    sent: set[tuple] = set()
    written: set[tuple] = set()
    hits = []
    for index, request in enumerate(requests):
        keys = tuple(message_key(block.message) for block in request)
        matched = -1
        if index:
            matched = max(depth for depth in range(len(keys) + 1) if depth == 0 or keys[:depth] in sent)
        if model.breakpoints:
            lowest = max(0, len(keys) - model.lookback)
            reached = [depth for depth in range(lowest, matched + 1) if keys[:depth] in written]
            depth = max(reached) if reached else (0 if matched >= 0 and () in written else -1)
            cached = tokens(request[:depth]) if depth >= 0 else 0
            whole = tokens(request)
            hits.append(CacheHit(cached, max(0, whole - cached) if whole >= model.minimum else 0, depth))
            for end in (0, len(keys)):
                if tokens(request[:end]) >= model.minimum:
                    written.add(keys[:end])
        else:
            prefix = tokens(request[:matched]) if matched >= 0 else 0
            hits.append(CacheHit(prefix // model.step * model.step if prefix >= model.minimum else 0, 0, matched))
        sent.update(keys[:depth] for depth in range(1, len(keys) + 1))
    return hits


def reference_costs(result, hits, pricing) -> dict:
    """compaction_costs as first written: the shared prefix found and every sum taken from the
    start, at every call."""
    counter = get_counter(result.settings.counter)
    model = pricing.model
    per_token = pricing.price / 1_000_000
    share, write = pricing.share, model.write_share

    def tokens(blocks) -> int:
        return math.floor(counter.block_tokens(result.floor_units + sum(block.units for block in blocks)))

    def cached(prefix: int) -> int:
        return prefix // model.step * model.step if prefix >= model.minimum else 0

    costs = {}
    for index, call in enumerate(result.calls):
        compaction = call.compaction
        if compaction is None or not compaction.changed:
            continue
        previous = result.calls[index - 1].blocks if index else ()
        shared = 0
        while shared < min(len(previous), len(call.blocks)) and previous[shared] == call.blocks[shared]:
            shared += 1
        kept, sent = tokens(call.blocks[:shared]), tokens(call.blocks)
        before = tokens(previous) if index else kept
        whole = sent + compaction.tokens_before - compaction.tokens_after
        hit = hits[index].cached
        extra = (hit * share + (sent - hit) * write) - (cached(before) * share + (whole - cached(before)) * write)
        saved = compaction.tokens_before - compaction.tokens_after
        saving = saved * share * per_token
        left = len(result.calls) - call.number
        ratio = extra * per_token / saving if saving > 0 else math.inf
        break_even = 0 if extra <= 0 else (math.ceil(ratio) if math.isfinite(ratio) and ratio <= left else None)
        given_up = max(0, cached(before) - kept)
        rewritten = call.tokens - kept  # the request's whole count after the difference, the reply's opening too
        costs[call.number] = (
            call.number, call.blocks[shared].id if shared < len(call.blocks) else None, kept, given_up, rewritten,
            rewritten * write * per_token if given_up else 0.0, extra * per_token, saved, saving, left, break_even,
        )
    return costs


# --- Random histories ------------------------------------------------------------------------

TEXTS = ["a", "bb", "the invoice", "[Truncated]", "ok"]


@st.composite
def histories(draw):
    """Requests as an agent loop sends them: each is the last one plus new messages, or the
    last one compacted (a message truncated in place, a run dropped, a run folded into a
    summary), or an earlier request sent again; messages may repeat, as the same object or as
    an equal new one, with a nested content now and then."""
    made = 0

    def new_block(role: str | None = None) -> Block:
        nonlocal made
        made += 1
        content = draw(st.sampled_from(TEXTS))
        if draw(st.integers(0, 5)) == 0:
            content = [{"type": "text", "text": content}]
        role = role or draw(st.sampled_from(["user", "assistant", "tool"]))
        return Block(f"m{made}", {"role": role, "content": content}, draw(st.integers(1, 700)), 1)

    requests: list[tuple[Block, ...]] = []
    appended: list[bool] = []
    current: list[Block] = []
    for _ in range(draw(st.integers(1, 14))):
        step = draw(st.sampled_from(["append", "append", "append", "truncate", "drop", "summary", "again", "repeat"]))
        grew = step == "append" or not current
        if step == "truncate" and current:
            at = draw(st.integers(0, len(current) - 1))
            old = current[at]
            current[at] = Block(old.id, {**old.message, "content": "[Truncated]"}, draw(st.integers(1, 50)), 1, state="truncated")
        elif step == "drop" and current:
            start = draw(st.integers(0, len(current) - 1))
            del current[start : draw(st.integers(start + 1, len(current)))]
        elif step == "summary" and current:
            start = draw(st.integers(0, len(current) - 1))
            current[start : draw(st.integers(start + 1, len(current)))] = [new_block("user")]
        elif step == "again" and requests:
            current = list(draw(st.sampled_from(requests)))
        elif step == "repeat" and current:  # a message sent again: the same object, or an equal copy
            old = draw(st.sampled_from(current))
            copy = draw(st.booleans())
            current.append(Block(old.id, dict(old.message), old.units, 1) if copy else old)
        current.extend(new_block() for _ in range(draw(st.integers(0 if not grew else 1, 3))))
        requests.append(tuple(current))
        appended.append(grew and bool(requests[:-1]) and requests[-1][: len(requests[-2])] == requests[-2])
    return requests, appended


@given(history=histories(), floor=st.integers(0, 2000), model=st.sampled_from(list(CACHE_MODELS.values())),
       counter=st.sampled_from([EXACT, ESTIMATE]))
@hypothesis_settings(max_examples=400, deadline=None)
def test_the_cache_model_gives_the_reference_hits_on_any_history(history, floor, model, counter):
    requests, appended = history
    expected = reference_hits(requests, floor, counter, model)
    assert cache_hits(requests, floor, counter, model) == expected
    # Told which requests only append (as the engine's calls without a compaction do).
    assert cache_hits(requests, floor, counter, model, prefixes=request_prefixes(requests, floor, appended)) == expected


@given(history=histories(), floor=st.integers(0, 2000))
@hypothesis_settings(max_examples=300, deadline=None)
def test_the_prefixes_are_what_comparing_and_summing_from_the_start_give(history, floor):
    requests, appended = history
    for told in ((), appended):
        prefixes = request_prefixes(requests, floor, told)
        previous: tuple[Block, ...] = ()
        for index, blocks in enumerate(requests):
            shared = 0
            while shared < min(len(previous), len(blocks)) and previous[shared] == blocks[shared]:
                shared += 1
            assert prefixes.shared[index] == shared
            assert prefixes.shared_units[index] == floor + sum(block.units for block in blocks[:shared])
            assert prefixes.units[index] == floor + sum(block.units for block in blocks)
            for depth in range(len(blocks) + 1):
                assert prefixes.units_at(index, blocks, depth) == floor + sum(block.units for block in blocks[:depth])
            previous = blocks


# --- Every lesson, every strategy ------------------------------------------------------------


@pytest.fixture(scope="module")
def lesson_replays():
    replays = []
    for name in LESSONS:
        scenario = open_scenario(name)
        for strategy in STRATEGIES:
            replays.append(replay(scenario, scenario.settings.model_copy(update={"strategy": strategy})))
    return replays


def test_a_call_that_did_not_compact_sends_the_last_request_then_new_messages(lesson_replays):
    # What replay_prefixes takes on trust from the engine, so that it need not compare them.
    for result in lesson_replays:
        for previous, call in zip(result.calls, result.calls[1:]):
            if call.compaction is None:
                assert all(a is b for a, b in zip(previous.blocks, call.blocks)) and len(call.blocks) >= len(previous.blocks)


@pytest.mark.parametrize("cache", list(CACHE_MODELS))
def test_every_lesson_and_strategy_gets_the_reference_hits_and_costs(lesson_replays, cache):
    pricing = Pricing(cache=cache)
    compacted = 0
    for result in lesson_replays:
        requests = [call.blocks for call in result.calls]
        hits = replay_hits(result, pricing)
        assert hits == reference_hits(requests, result.floor_units, get_counter(result.settings.counter), pricing.model)
        costs = compaction_costs(result, hits, pricing)
        assert {number: astuple(cost) for number, cost in costs.items()} == reference_costs(result, hits, pricing)
        compacted += len(costs)
    assert compacted > 100  # the lessons do compact, in every way the strategies have


def test_the_prefixes_are_kept_once_per_replay(lesson_replays):
    result = lesson_replays[0]
    assert replay_prefixes(result) is replay_prefixes(result)
