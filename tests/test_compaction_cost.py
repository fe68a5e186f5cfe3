"""What each compaction costs the prompt cache (webapp/core/analysis/compaction_cost.py),
checked against hand computations on two lessons, and shown in the event log, the call's
story and the comparison's JSON and CSV."""

from __future__ import annotations

import csv
import io

import pytest

from webapp.core.analysis.compaction_cost import compaction_costs
from webapp.core.analysis.metrics import replay_hits
from webapp.core.analysis.pricing import Pricing
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import open_scenario


def costs_of(name: str, strategy: str | None = None, pricing: Pricing | None = None):
    scenario = open_scenario(name)
    settings = scenario.settings if strategy is None else scenario.settings.model_copy(update={"strategy": strategy})
    result = replay(scenario, settings)
    pricing = pricing or Pricing()
    return compaction_costs(result, replay_hits(result, pricing), pricing)


def test_the_bike_shop_hammer_pays_for_itself_at_once():
    # Bike shop, truncate-drop, OpenAI caching ($2.50 a million, cached at half, 1,024-token
    # minimum, 128-token steps). Call 4 sent 118 + 6,078 = 6,196 tokens: 6,144 of them (48 x 128)
    # are in the cache for call 5. The hammer rewrites the request from message 3 on (118
    # tokens of floor and first request kept, under the minimum: nothing cached) and sends
    # 118 + 2,969 = 3,087 tokens, all uncached: 3,087 token-prices. Whole, call 5 would send
    # 6,443 tokens, 6,144 at half price: 3,072 + 299 = 3,371. So the compaction costs
    # 3,087 - 3,371 = -284 token-prices, -$0.00071: it pays at once, and each later call
    # sends 6,443 - 3,087 = 3,356 fewer tokens, 3,356 x 0.5 x $2.50 / 1e6 = $0.004195.
    cost = costs_of("bike-shop")[5]
    # Given up: the 6,144 cached tokens past the 118 kept.
    assert (cost.first_difference, cost.kept_prefix, cost.given_up, cost.rewritten) == ("m3", 118, 6_026, 2_969)
    assert cost.extra_cost == pytest.approx(-284 * 2.5e-6)
    assert cost.saved == 3_356 and cost.saving_per_call == pytest.approx(0.004195)
    assert cost.break_even == 0 and cost.repaid


def test_a_long_haul_truncation_takes_five_calls_to_pay_and_never_pays_with_anthropic():
    # Long haul, truncate-drop, call 18. OpenAI: call 17 sent 241 + 5,957 = 6,198 tokens, 6,144
    # cached for call 18. Compacted: 241 kept (under the minimum, so uncached) + 5,868 = 6,109
    # uncached token-prices. Whole: 6,109 + 998 saved = 7,107 tokens, 6,144 x 0.5 + 963 = 4,035.
    # Extra: 2,074 x $2.50 / 1e6 = $0.005185. Saved per later call: 998 x 0.5 x 2.5e-6 =
    # $0.0012475; 0.005185 / 0.0012475 = 4.16, so 5 calls of the 46 left.
    cost = costs_of("long-haul", "truncate-drop")[18]
    assert (cost.kept_prefix, cost.given_up, cost.rewritten, cost.saved) == (241, 6_144 - 241, 5_871, 998)  # rewritten: the request's own count, 6,112, less the 241 kept
    assert cost.extra_cost == pytest.approx(2_074 * 2.5e-6)
    assert (cost.break_even, cost.calls_left) == (5, 46)
    # Anthropic: reads cost 0.1, writes 1.25, and a breakpoint ends call 17's 6,198 tokens.
    # Compacted: the floor's 167 tokens are under the minimum, so 6,109 x 1.25 = 7,636.25.
    # Whole: 6,198 x 0.1 + 909 x 1.25 = 1,756.05. Extra 5,880.2 token-prices; a later call saves
    # 998 x 0.1 = 99.8: 59 calls, more than the 46 left.
    anthropic = costs_of("long-haul", "truncate-drop", Pricing(cache="anthropic"))[18]
    assert anthropic.extra_cost == pytest.approx(5_880.2 * 2.5e-6)
    assert anthropic.break_even is None and not anthropic.repaid


def test_every_compaction_that_changed_the_request_has_a_cost_and_no_other():
    scenario = open_scenario("long-haul")
    result = replay(scenario, scenario.settings.model_copy(update={"strategy": "summarize"}))
    costs = compaction_costs(result, replay_hits(result, Pricing()), Pricing())
    changed = [call.number for call in result.calls if call.compaction is not None and call.compaction.changed]
    assert sorted(costs) == changed and changed
    for cost in costs.values():
        call, previous = result.calls[cost.call - 1], result.calls[cost.call - 2]
        ids = [block.id for block in call.blocks]
        # The first difference is a message of the new request, and every one before it was
        # sent the same way by the call before.
        assert cost.first_difference in ids
        index = ids.index(cost.first_difference)
        assert call.blocks[:index] == previous.blocks[:index] and call.blocks[index] is not previous.blocks[index]
        assert cost.kept_prefix >= int(result.floor_tokens) and cost.given_up >= 0
        assert (cost.write_cost > 0) == (cost.given_up > 0)
        assert cost.calls_left == len(result.calls) - cost.call


def test_the_event_log_and_the_story_say_what_the_hammer_cost_the_cache(client):
    page = client.get("/play/bike-shop?call=5").get_data(as_text=True)
    assert "giving up 6,026 cached tokens and writing 2,969 again" in page
    assert "it costs no more than the whole request, so there is nothing to pay back" in page
    assert "why clear-tool-results has &#34;clear at least&#34;" in page
    data = client.get("/play/long-haul.json?call=18&strategy=truncate-drop").get_json()
    assert data["compaction_cost"]["break_even"] == 5 and data["compaction_cost"]["first_difference"] == "m3"
    assert client.get("/play/long-haul.json?call=17&strategy=truncate-drop").get_json()["compaction_cost"] is None


def test_the_comparison_json_and_csv_carry_the_cache_costs_and_the_references(client):
    data = client.get("/compare/coding-agent.json").get_json()
    columns = {column["key"]: column for column in data["strategies"]}
    truncate = columns["truncate"]
    assert truncate["compaction_costs"] and all("break_even" in cost for cost in truncate["compaction_costs"])
    assert truncate["compaction_write_usd"] == pytest.approx(sum(cost["write_cost"] for cost in truncate["compaction_costs"]), abs=1e-5)
    assert columns["none"]["compaction_costs"] == [] and columns["none"]["references_lost"] == []
    claude = columns["claude-code"]["references_lost"]
    assert claude and {"value", "kind", "from_message", "from_call", "used_at_call", "uses"} <= set(claude[0])
    assert all(lost["from_call"] <= lost["used_at_call"] and lost["used_at_call"] in lost["uses"] for lost in claude)
    assert {lost["value"] for lost in claude} <= {fact["text"] for fact in columns["claude-code"]["facts_lost"]}
    rows = list(csv.DictReader(io.StringIO(client.get("/compare/coding-agent.csv").get_data(as_text=True))))
    row = next(row for row in rows if row["strategy"] == "claude-code")
    assert int(row["references_lost"]) == len(claude) and int(row["references"]) >= len(claude)
    assert {"compaction_write_usd", "compaction_extra_usd", "compactions_never_repaid"} <= set(row)


@pytest.mark.parametrize("lang, words, wrong", [
    ("en", "No call comes after this one to send fewer tokens", "0 later call"),
    ("fr", "Aucun appel ne vient après celui-ci pour envoyer moins de tokens", "Le 0 appel suivant"),
    ("zh", "此后没有调用能少发 token", "之后的 0 次调用"),
])
def test_a_compaction_at_the_last_call_says_no_later_call_saves_anything(client, lang, words, wrong):
    result = replay(open_scenario("tool-pairs"))
    last = result.calls[-1]
    assert last.compaction is not None and last.compaction.changed  # the lesson's hammer falls at its last call
    page = client.get(f"/play/tool-pairs?call={last.number}&lang={lang}").get_data(as_text=True)
    assert words in page and wrong not in page
