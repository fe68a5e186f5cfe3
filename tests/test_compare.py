"""The comparison of strategies: cache figures against hand-computed cases and a brute-force
oracle, every figure against the engine's own replay, and the verdict."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings as hypothesis_settings, strategies as st

from webapp.cli import main
from webapp.core.analysis.cache import CACHE_MODELS, cache_hits
from webapp.core.analysis.compare import compare, variants
from webapp.core.analysis.comparison_data import comparison_json
from webapp.core.analysis.verdict import english, verdict_notices
from webapp.core.analysis.pricing import Pricing, parse_pricing
from webapp.core.engine.history import Block
from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.model import tool_pair_problems
from webapp.core.engine.compaction import Strategy, level
from webapp.core.settings import SettingsError
from webapp.core.engine.strategy_catalog import STRATEGIES
from webapp.core.triggers import TRIGGERS
from webapp.core.counting.tokens import get_counter

# With a tiktoken counter a block's tokens are its units, so hand-computed cases stay readable.
EXACT = get_counter("cl100k_base")
OPENAI = CACHE_MODELS["openai"]
ANTHROPIC = CACHE_MODELS["anthropic"]


def block(name: str, units: int, text: str | None = None, role: str = "user") -> Block:
    return Block(name, {"role": role, "content": text if text is not None else name}, units, 1)


U1, A1, T1, U2, A2 = (block("u1", 600), block("a1", 200, role="assistant"), block("t1", 300, role="tool"),
                      block("u2", 150), block("a2", 90, role="assistant"))
T1_SHORT = block("t1", 40, "[Truncated t1]", role="tool")


# --- Hand-computed cache cases ---------------------------------------------------------------


def test_openai_append_only_history_caches_the_previous_request_rounded_down_to_128():
    # floor 500; request 1 = 500 + 600 = 1,100 tokens of prefix; request 2 resends it all.
    hits = cache_hits([[U1], [U1, A1, T1], [U1, A1, T1, U2]], 500, EXACT, OPENAI)
    assert [hit.cached for hit in hits] == [0, 1024, 1536]  # 1,100 -> 1,024; 1,600 -> 1,536
    assert [hit.prefix_messages for hit in hits] == [-1, 1, 3]


def test_openai_caches_nothing_below_1024_tokens():
    hits = cache_hits([[U1], [U1, A1]], 300, EXACT, OPENAI)  # shared prefix 900 tokens
    assert [hit.cached for hit in hits] == [0, 0]


def test_openai_truncation_cuts_the_cached_prefix_at_the_rewritten_message():
    # Call 3 rewrites t1: only floor + u1 + a1 (1,300 tokens) is still a known prefix.
    hits = cache_hits([[U1, A1, T1], [U1, A1, T1, U2], [U1, A1, T1_SHORT, U2, A2]], 500, EXACT, OPENAI)
    assert [hit.cached for hit in hits] == [0, 1536, 1280]
    assert hits[2].prefix_messages == 2


def test_openai_matches_any_earlier_request_not_only_the_previous_one():
    other = block("x", 700)
    hits = cache_hits([[U1, A1, T1], [U1, other], [U1, A1, T1, U2]], 500, EXACT, OPENAI)
    # Request 2 shares floor + u1 (1,100); request 3 shares all of request 1 (1,600).
    assert [hit.cached for hit in hits] == [0, 1024, 1536]


def test_anthropic_reads_up_to_an_earlier_breakpoint_and_pays_for_writing_the_rest():
    hits = cache_hits([[U1], [U1, A1, T1], [U1, A1, T1, U2]], 500, EXACT, ANTHROPIC)
    # Breakpoints: after the floor (500, too short to cache) and on the last message.
    assert [hit.cached for hit in hits] == [0, 1100, 1600]  # no 128-token steps
    assert [hit.written for hit in hits] == [1100, 500, 150]  # each request writes its new tail


def test_anthropic_cannot_read_a_shared_prefix_that_no_earlier_request_ended_on():
    # Requests 1 and 2 both hold floor + u1 + a1, but neither put a breakpoint right after a1;
    # OpenAI reads it (1,300 -> 1,280), the breakpoint model reads nothing.
    history = [[U1, A1, T1], [U1, A1, T1, U2], [U1, A1, T1_SHORT, U2, A2]]
    assert cache_hits(history, 500, EXACT, ANTHROPIC)[2].cached == 0
    assert cache_hits(history, 500, EXACT, OPENAI)[2].cached == 1280
    # When an earlier request did end after a1, its breakpoint is read.
    history = [[U1, A1], [U1, A1, T1], [U1, A1, T1_SHORT]]
    assert cache_hits(history, 500, EXACT, ANTHROPIC)[2].cached == 1300


def test_anthropic_reads_the_floor_breakpoint_when_the_floor_is_long_enough():
    hits = cache_hits([[U1], [block("other", 80)]], 1500, EXACT, ANTHROPIC)
    assert hits[1].cached == 1500
    assert hits[1].written == 80


def test_anthropic_lookup_reaches_back_20_messages_only():
    small = [block(f"m{i}", 10, role="user") for i in range(25)]
    far = cache_hits([[U1, A1], [U1, A1, *small]], 500, EXACT, ANTHROPIC)
    near = cache_hits([[U1, A1], [U1, A1, *small[:20]]], 500, EXACT, ANTHROPIC)
    assert far[1].cached == 0
    assert near[1].cached == 1300
    assert cache_hits([[U1, A1], [U1, A1, *small]], 500, EXACT, OPENAI)[1].cached == 1280


def test_estimate_counter_prefix_is_rounded_down_so_it_never_exceeds_the_request():
    estimate = get_counter("estimate")
    first = Block("u1", {"role": "user", "content": "x"}, 4099, 1)  # 4,099 chars: 1,025 tokens sent
    hits = cache_hits([[first], [first, block("a1", 3)]], 0, estimate, ANTHROPIC)
    assert hits[1].cached == 1024  # floor(4,099 / 4)
    assert estimate.request_tokens(4099) == 1025


# --- Property tests against a brute-force oracle ---------------------------------------------

MESSAGES = [block(f"b{i}", units, role=role) for i, (units, role) in
            enumerate([(700, "user"), (40, "assistant"), (900, "tool"), (5, "user"), (300, "assistant"),
                       (128, "tool"), (1, "user"), (1024, "tool")])]


def oracle_prefix(requests, index, floor, counter):
    """Tokens of the longest prefix shared with any earlier request, comparing messages one by
    one; -1 when there is no earlier request."""
    best = -1
    current = requests[index]
    for earlier in requests[:index]:
        shared = 0
        while shared < min(len(current), len(earlier)) and current[shared].message == earlier[shared].message:
            shared += 1
        best = max(best, shared)
    if best < 0:
        return -1, 0
    return best, int(counter.block_tokens(floor + sum(b.units for b in current[:best])))


requests_strategy = st.lists(st.lists(st.sampled_from(MESSAGES), max_size=8), min_size=1, max_size=8)


@given(requests=requests_strategy, floor=st.integers(0, 2000))
@hypothesis_settings(max_examples=200, deadline=None)
def test_openai_cache_equals_brute_force_longest_shared_prefix(requests, floor):
    hits = cache_hits(requests, floor, EXACT, OPENAI)
    for index, (blocks, hit) in enumerate(zip(requests, hits)):
        shared, tokens = oracle_prefix(requests, index, floor, EXACT)
        expected = tokens // 128 * 128 if tokens >= 1024 else 0
        assert hit.cached == expected
        assert hit.prefix_messages == shared
        assert 0 <= hit.cached <= EXACT.request_tokens(floor + sum(b.units for b in blocks))


@given(requests=requests_strategy, floor=st.integers(0, 2000))
@hypothesis_settings(max_examples=200, deadline=None)
def test_anthropic_cache_never_exceeds_the_shared_prefix_or_the_request(requests, floor):
    hits = cache_hits(requests, floor, EXACT, ANTHROPIC)
    for index, (blocks, hit) in enumerate(zip(requests, hits)):
        _, shared_tokens = oracle_prefix(requests, index, floor, EXACT)
        assert hit.cached <= shared_tokens
        assert hit.cached == 0 or hit.cached >= ANTHROPIC.minimum
        assert hit.cached + hit.written <= EXACT.request_tokens(floor + sum(b.units for b in blocks))


@given(
    script=st.lists(st.integers(1, 4000), min_size=2, max_size=12),
    counter_name=st.sampled_from(["estimate", "cl100k_base"]),
)
@hypothesis_settings(max_examples=60, deadline=None)
def test_append_only_replay_caches_the_whole_previous_request_rounded_per_128(script, counter_name):
    """With `none` and a huge window nothing is ever compacted: each request's cached prefix
    is all of the previous request (without the reply priming), rounded down to 128."""
    chat = "\n".join(
        f'[[chat]]\nuser = "{"w " * (size // 2)}"\n\n[[chat]]\nassistant = "ok {i}"\n' for i, size in enumerate(script)
    )
    scenario = parse_scenario_toml(
        f'id = "grow"\ntitle = "t"\nlesson = "l"\nsystem = "s"\n[settings]\nwindow = 10000000\n'
        f'counter = "{counter_name}"\n{chat}',
        "grow.toml",
    )
    column = compare(scenario).column("none")
    counter = get_counter(counter_name)
    calls = column.calls
    for previous, call, hit in zip(calls, calls[1:], column.hits[1:]):
        whole = int(counter.block_tokens(column.result.floor_units + sum(b.units for b in previous.blocks)))
        assert hit.cached == (whole // 128 * 128 if whole >= 1024 else 0)
        assert hit.cached <= call.tokens


# --- Request validity (the engine's check, which the comparison reports) --------------------


def request_problems(request):
    return [f"{where}: {what}" for where, what in tool_pair_problems(request)]


def call_message(*ids):
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]}


def result(call_id):
    return {"role": "tool", "tool_call_id": call_id, "content": "r"}


def test_a_request_with_paired_calls_and_results_is_valid():
    request = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"},
               call_message("a", "b"), result("a"), result("b"), {"role": "user", "content": "q2"}]
    assert request_problems(request) == []


def test_a_result_whose_call_was_dropped_is_refused():
    request = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}, result("a")]
    [problem] = request_problems(request)
    assert "'a'" in problem and "no matching call" in problem


def test_a_call_without_its_result_is_refused():
    request = [{"role": "user", "content": "q"}, call_message("a", "b"), result("a"), {"role": "user", "content": "q2"}]
    [problem] = request_problems(request)
    assert "'b'" in problem and "never gets its tool result" in problem


# --- Figures equal the engine's --------------------------------------------------------------


@pytest.mark.parametrize("counter_name", ["estimate", "cl100k_base"])
def test_every_column_equals_its_own_replay(counter_name):
    scenario = open_scenario("bike-shop")
    base = scenario.settings.model_copy(update={"counter": counter_name})
    comparison = compare(scenario, base)
    assert [c.key for c in comparison.columns] == [v.strategy + ("+facts" if v.keep_facts else "") for v in variants(base)]
    for column in comparison.columns:
        engine = replay(scenario, column.settings)
        assert [c.tokens for c in column.calls] == [c.tokens for c in engine.calls]
        assert column.sent_total == engine.calls[-1].sent_total
        assert column.overflows == sum(c.overflow for c in engine.calls)
        events = [e for c in engine.calls for e in c.events if e.kind == "compact"]
        assert column.compactions + column.futile_compactions == len(events)
        assert column.summarizer_output == engine.calls[-1].summarizer_output_total
        assert column.summarizer_input == engine.calls[-1].sent_total - sum(c.tokens for c in engine.calls)
        assert column.bill.uncached + column.bill.cached + column.bill.written == column.sent_total


def test_every_registered_strategy_gets_a_column_and_summarizers_get_two():
    columns = compare(open_scenario("bike-shop")).columns
    keys = [column.key for column in columns]
    assert set(STRATEGIES) <= {column.strategy for column in columns}
    assert "summarize" in keys and "summarize+facts" in keys
    assert "drop+facts" not in keys


def test_a_strategy_added_to_the_registry_is_compared_and_a_broken_one_is_ruled_out(monkeypatch):
    """A strategy that drops old assistant messages but keeps their tool results: requests
    fit, but an API would refuse them, and the verdict must not pick it."""

    @level("drop-calls")
    def drop_calls_keep_results(work, context):
        for index, item in enumerate(work.history):
            if item.role == "assistant" and item.tool_call_ids:
                del work.history[index]
                work.units -= item.units
                work.dropped.append(item.id)
                return True
        return False

    monkeypatch.setitem(TRIGGERS, "broken-drop", None)  # the name the settings accept
    monkeypatch.setitem(STRATEGIES, "broken-drop", Strategy("broken-drop", "drops tool calls, keeps their results", (drop_calls_keep_results,)))
    comparison = compare(open_scenario("bike-shop"))
    broken = comparison.column("broken-drop")
    assert broken is not None
    assert not broken.valid_requests
    first_bad = min(broken.invalid)
    assert broken.call(first_bad).compaction is not None
    assert any("no matching call" in problem for problem in broken.invalid[first_bad])
    assert comparison.verdict.winner != "broken-drop"
    assert ("invalid", {"count": len(broken.invalid), "first": first_bad}) in comparison.verdict.faults["broken-drop"]


FORGETFUL = '''
id = "forgetful"
title = "t"
lesson = "l"
system = "You help."
[settings]
window = 400
threshold = 0.8
keep = 1
counter = "estimate"
[[facts]]
text = "K-77"
label = "key"
needed_from_call = 4
[[chat]]
user = "hello"
[[chat]]
assistant = "hi"
[[chat]]
user = "Please remember this. My key is K-77. %s"
[[chat]]
assistant = "Noted."
[[chat]]
user = "Now something long: %s"
[[chat]]
assistant = "done"
[[chat]]
user = "What was my key?"
''' % ("pad " * 40, "x " * 500)


def test_facts_lost_name_the_first_call_that_needed_them():
    comparison = compare(parse_scenario_toml(FORGETFUL, "forgetful.toml"))
    for column in comparison.columns:
        engine = replay(comparison.scenario, column.settings)
        statuses = [call.facts[0] for call in engine.calls]
        expected = next((n for n, s in enumerate(statuses, 1) if s.needed and not s.present), None)
        assert column.facts[0].lost_from == expected
        assert list(column.facts[0].present) == [s.present for s in statuses]
    drop = comparison.column("drop")
    assert drop.facts[0].lost_from is not None  # dropping the exchange forgets the key
    assert comparison.column("summarize+facts").facts[0].lost_from is None  # told to keep it
    assert comparison.column("summarize").facts[0].lost_from is not None
    assert comparison.verdict.winner not in {"drop", "summarize"}


# --- Verdict and pricing ---------------------------------------------------------------------


@pytest.mark.parametrize("cache", ["openai", "anthropic"])
def test_the_verdict_is_the_cheapest_sound_column(cache):
    comparison = compare(open_scenario("bike-shop"), pricing=Pricing(cache=cache))
    sound = [
        c
        for c in comparison.columns
        if not c.facts_lost and not c.overflows and not c.no_room_calls and c.valid_requests and not STRATEGIES[c.strategy].breaks_pairs
        and not c.product_refuses
    ]
    cheapest = min(c.bill.cost for c in sound)
    winner = comparison.column(comparison.verdict.winner)
    assert winner.bill.cost == cheapest
    for key, faults in comparison.verdict.faults.items():
        if comparison.column(key) in sound:
            assert faults[0][0] == "dearer" and faults[0][1]["cost"] > 0


def test_a_harness_its_product_would_refuse_is_never_the_advice():
    """Anthropic's compaction on the bike shop's 8,000-token window: its own trigger (150,000) is
    beyond the window and its line under the API's 50,000 minimum."""
    comparison = compare(open_scenario("bike-shop"))
    anthropic = comparison.column("anthropic-compaction")
    assert anthropic.product_refuses and not anthropic.recommendable
    assert comparison.verdict.faults["anthropic-compaction"][0] == ("refused_line", {})
    assert any("anthropic-compaction cannot run this way" in line for line in english(verdict_notices(comparison)))


def test_a_strategy_that_breaks_pairs_by_design_is_never_the_advice_even_when_it_got_lucky():
    comparison = compare(open_scenario("receipt"))
    naive = comparison.column("naive-drop")
    assert naive.sound  # on this chat its drops happened to keep every pair whole
    assert comparison.verdict.winner != "naive-drop"
    assert comparison.verdict.faults["naive-drop"] == [("by_luck", {})]
    assert any("by luck" in line for line in english(verdict_notices(comparison)))


def test_breakpoint_caching_makes_the_uncompacted_chat_cheapest_on_the_bike_shop():
    """The lesson of the panel: compaction rewrites the prefix and loses cache hits, so the
    strategy that sends the fewest tokens is not the cheapest."""
    comparison = compare(open_scenario("bike-shop"), pricing=Pricing(cache="anthropic"))
    verdict = comparison.verdict
    assert verdict.fewest_tokens is not None
    winner, fewest = comparison.column(verdict.winner), comparison.column(verdict.fewest_tokens)
    assert fewest.sent_total < winner.sent_total
    assert fewest.bill.cost > winner.bill.cost
    assert fewest.cached_total < winner.cached_total


def test_bill_uses_the_share_and_prices_given():
    scenario = open_scenario("bike-shop")
    full = compare(scenario, pricing=Pricing(cached_share=1)).column("drop")
    free = compare(scenario, pricing=Pricing(cached_share=0, price=3, output_price=0)).column("drop")
    assert full.bill.cost == pytest.approx(full.sent_total * 2.5 / 1e6)
    assert free.bill.cost == pytest.approx((free.sent_total - free.cached_total) * 3 / 1e6)


def test_bad_pricing_is_named_with_what_is_accepted():
    with pytest.raises(SettingsError) as error:
        parse_pricing({"cache": "gemini", "price": "-1", "tip": "5"})
    assert "tip" in str(error.value)
    with pytest.raises(SettingsError) as error:
        parse_pricing({"cache": "gemini", "price": "-1"})
    assert error.value.problems == [
        "cache: got 'gemini', expected one of openai, anthropic",
        "price: got '-1', expected a number from 0 to 1000 (US dollars per million input tokens)",
    ]
    assert parse_pricing({"cache": "", "price": None}) == Pricing()


# --- Command line ----------------------------------------------------------------------------


def test_cli_json_lists_every_strategy_with_the_engines_numbers(capsys):
    assert main(["compare", "bike-shop", "--json", "--cache", "anthropic"]) == 0
    data = json.loads(capsys.readouterr().out)
    comparison = compare(open_scenario("bike-shop"), pricing=Pricing(cache="anthropic"))
    assert data == json.loads(json.dumps(comparison_json(comparison)))
    for row, column in zip(data["strategies"], comparison.columns):
        engine = replay(comparison.scenario, column.settings)
        assert {"strategy", "sent_total", "cached_total", "compactions", "overflows", "facts_lost", "valid_requests"} <= set(row)
        assert row["strategy"] == column.settings.strategy
        assert row["sent_total"] == engine.calls[-1].sent_total
        assert row["overflows"] == sum(c.overflow for c in engine.calls)
        assert row["cached_total"] == sum(c["cached"] for c in row["calls"])


def test_cli_table_shows_every_column_and_the_verdict(capsys):
    assert main(["compare", "bike-shop", "--call", "5"]) == 0
    out = capsys.readouterr().out
    for key in ("none", "truncate", "drop", "truncate-drop", "summarize", "summarize+facts"):
        assert f" {key} " in out
    assert "call 5 of 6" in out and "verdict:" in out and "Cheapest safe choice" in out


def test_cli_refuses_a_call_out_of_range(capsys):
    assert main(["compare", "bike-shop", "--call", "99"]) == 2
    assert "call: got 99, expected a whole number from 1 to 6" in capsys.readouterr().err


# --- Properties on generated chats -----------------------------------------------------------

from tests.generators import scenarios as generated_scenarios, settings as generated_settings  # noqa: E402

BUILT_IN = ("none", "truncate", "drop", "truncate-drop", "summarize")


@given(scenario=generated_scenarios(), settings=generated_settings(), cache=st.sampled_from(sorted(CACHE_MODELS)))
@hypothesis_settings(max_examples=40, deadline=None)
def test_on_any_chat_every_column_agrees_with_the_engine_and_the_cache_stays_within_the_request(scenario, settings, cache):
    comparison = compare(scenario, settings, Pricing(cache=cache))
    for column in comparison.columns:
        engine = replay(scenario, column.settings)
        assert [c.tokens for c in column.calls] == [c.tokens for c in engine.calls]
        assert column.sent_total == (engine.calls[-1].sent_total if engine.calls else 0)
        for call, hit in zip(column.calls, column.hits):
            assert 0 <= hit.cached and hit.cached + hit.written <= call.tokens
        assert column.bill.uncached >= 0
        # The built-in strategies never separate a tool call from its results.
        if column.strategy in BUILT_IN:
            assert column.valid_requests, column.invalid
    if comparison.verdict.winner is not None:
        assert comparison.column(comparison.verdict.winner).sound


def test_the_verdict_is_data_each_reader_words():
    from webapp.core.analysis.verdict import Dollars, Name

    comparison = compare(open_scenario("bike-shop"))
    (message, values), *rest = verdict_notices(comparison)[0]
    winner = comparison.column(comparison.verdict.winner)
    assert values["name"] == Name(winner.strategy, winner.keep_facts)
    assert isinstance(values["cost"], Dollars) and values["cost"] == winner.bill.cost
    assert values["sent"] == winner.sent_total  # a number, formatted by the reader
    assert english(verdict_notices(comparison))[0].startswith(f"Cheapest safe choice: {winner.key}, ${winner.bill.cost:.4f} for {winner.sent_total:,} tokens")
