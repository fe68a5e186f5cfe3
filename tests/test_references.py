"""The values the agent used again, found by themselves (webapp/core/analysis/references.py):
what counts as a value, what is ignored, and what each strategy's request still held of one at
the call that used it, on hand-written chats, generated chats and real sessions."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings as hypothesis_settings
from hypothesis import strategies as st

from tests.generators import scenarios, settings as replay_settings
from webapp.core.analysis.compare import compare
from webapp.core.analysis.references import find_references, occurs, reference_fates, values_in
from webapp.core.engine.history import searchable
from webapp.core.engine.replay import replay
from webapp.core.inputs.library import load_file, open_scenario
from webapp.core.model import Fact, Scenario, ScriptMessage
from webapp.core.settings import Settings

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"


def chat(*messages: dict, system: str = "You are a support assistant.", facts=()) -> Scenario:
    script = [ScriptMessage(f"m{i + 1}", message) for i, message in enumerate(messages)]
    return Scenario(
        id="hand", title={"en": "hand"}, lesson={"en": ""}, prefix=({"role": "system", "content": system},),
        tools=[], script=script, facts=list(facts),
    )


def test_each_kind_of_value_is_found_and_small_or_common_things_are_not():
    text = (
        'Order 4471 for "Marie Dupont": see https://shop.example.com/orders/4471?x=1. The log is at '
        "/var/log/shop/app.log and src/shop/cart.py raised ERR_CART_LOCKED on v2.3.1 (commit 3f2a9c1d), "
        'ticket INV-2024-0031, total 1,481.22. {"status": "shipped"} took 200ms on 12 of 80 "items", in 2 hours.'
    )
    found = dict(values_in(text))
    assert found["4471"] == "number"
    assert found["Marie Dupont"] == "quoted"
    assert found["https://shop.example.com/orders/4471?x=1"] == "url"  # the closing dot is not the URL's
    assert found["/var/log/shop/app.log"] == "path"
    assert found["src/shop/cart.py"] == "path"
    assert found["ERR_CART_LOCKED"] == "code"
    assert found["v2.3.1"] == "version"
    assert found["3f2a9c1d"] == "id"
    assert found["INV-2024-0031"] == "id"
    assert found["1,481.22"] == "number"
    # A JSON key, a plain quoted word, a measure, small and round numbers are not values.
    for ignored in ("status", "shipped", "items", "200ms", "12", "80", "2", "200"):
        assert ignored not in found


def test_a_version_with_a_name_glued_in_front_is_one_version_and_no_id_is_cut_from_a_dotted_number():
    found = list(values_in("Go go1.22.1, node-18.17.0, python3.12 and HTTP1.1; see file1.2.txt and build v22."))
    assert ("go1.22.1", "version") in found and ("python3.12", "version") in found and ("HTTP1.1", "version") in found
    assert ("18.17.0", "version") in found  # the number of node-18.17.0, not an id "node-18"
    assert ("file1.2.txt", "file") in found
    assert ("v22", "id") in found  # no dotted number goes on: still an id
    values = {value for value, _ in found}
    assert not values & {"go1", "node-18", "python3", "HTTP1", "file1"}


def test_quoted_code_is_not_a_quoted_name():
    code = [
        "`Field(strict=True)`", "`model_dump()`", '"frozen=True"', '"if (a) { b; }"', "`^\\d*$`", '"$(pwd)/bin"',
        '"list[int]"', '"a -> b"', "`x >= 3.12`",
    ]
    names = ['"Acme (France)"', '"$12.50 each"', '"git log --oneline -20"', "`parse_args`", '"Marie Dupont"', "'*.jsonl'"]
    found = {value for value, kind in values_in(" and ".join(code + names)) if kind == "quoted"}
    assert found == {"Acme (France)", "$12.50 each", "git log --oneline -20", "parse_args", "Marie Dupont", "*.jsonl"}


def test_a_real_go_session_uses_the_go_version_again_not_a_piece_of_it():
    scenario = load_file(SESSIONS / "codex" / "vibecodingtracker-codex-rollout.jsonl")
    values = {reference.value: reference.kind for reference in find_references(scenario).items}
    assert "go1" not in values
    assert values["1.24.0"] == "version"


def test_a_real_session_quoting_code_keeps_the_names_and_drops_the_code():
    scenario = load_file(SESSIONS / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl")
    quoted = {reference.value for reference in find_references(scenario).items if reference.kind == "quoted"}
    assert {"default_factory", "field_validator", "model_dump"} <= quoted  # names the agent wrote again
    assert not quoted & {"Field(exclude=True)", "frozen=True", "model_dump()", "Field()", "strict=True"}


def test_a_use_is_the_whole_value_not_part_of_a_longer_one():
    assert occurs("4471", "order #4471, please")
    assert not occurs("4471", "order 44712") and not occurs("4471", "A4471")
    assert occurs("src/app.py", "open src/app.py.")


def test_a_value_is_a_reference_only_when_a_later_reply_uses_it_again():
    scenario = chat(
        {"role": "user", "content": "My order 4471 has not arrived. Tracking RMA-20931 maybe?"},
        {"role": "assistant", "content": "Let me look.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"id": "4471"}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "order 4471: parcel 1Z999AA10123456784, warehouse W-5567"},
        {"role": "assistant", "content": "Parcel 1Z999AA10123456784 left warehouse W-5567 yesterday."},
    )
    references = {reference.value: reference for reference in find_references(scenario).items}
    # The order number is used again in the call's arguments (call 1); the parcel and the
    # warehouse come from the tool result and are used by the reply at call 2.
    assert references["4471"].source == "m1" and references["4471"].uses == (1,)
    assert references["1Z999AA10123456784"].source == "m3" and references["1Z999AA10123456784"].source_call == 2
    assert references["1Z999AA10123456784"].uses == (2,)
    assert references["W-5567"].uses == (2,)
    # Brought in and never written again by the agent: not a reference.
    assert "RMA-20931" not in references


def test_values_of_the_system_prompt_the_assistant_first_wrote_or_an_author_named_are_ignored():
    scenario = chat(
        {"role": "user", "content": "Use ticket TCK-1188 and order 5521."},
        {"role": "assistant", "content": "I opened case CASE-7730 for ticket TCK-1188 and order 5521."},
        {"role": "user", "content": "Is CASE-7730 still open?"},
        {"role": "assistant", "content": "Yes, CASE-7730 is open; TCK-1188 too."},
        system="Escalate anything about TCK-1188 to the manager.",
        facts=[Fact("5521", "order number", 1)],
    )
    values = {reference.value for reference in find_references(scenario).items}
    assert "TCK-1188" not in values  # in the system prompt
    assert "CASE-7730" not in values  # the assistant wrote it before any message brought it
    assert "5521" not in values  # an authored fact: checked as that, not twice


def planted(value: str):
    """A generated chat with `value` in its first request and in its last reply: a reference
    from call 1 to the last call that has a reply."""

    @st.composite
    def build(draw):
        scenario = draw(scenarios(min_requests=2))
        script = list(scenario.script)
        first = script[0]
        script[0] = replace(first, message={**first.message, "content": f"{first.message['content']} ref {value}"})
        replies = [index for index, item in enumerate(script) if item.role == "assistant" and index > 0]
        if not replies:
            script.append(ScriptMessage(f"m{len(script) + 1}", {"role": "assistant", "content": f"about {value}"}))
        else:
            last = script[replies[-1]]
            script[replies[-1]] = replace(last, message={**last.message, "content": f"{last.message.get('content') or ''} about {value}"})
        return replace(scenario, script=script)

    return build()


VALUE = "QK-77120"


@hypothesis_settings(max_examples=40, deadline=None)
@given(planted(VALUE), replay_settings())
def test_a_value_is_lost_at_a_use_exactly_when_the_request_no_longer_holds_it(scenario, chosen):
    result = replay(scenario, chosen)
    references = find_references(scenario)
    assert VALUE in {reference.value for reference in references.items}
    for fate in reference_fates(references, result.calls):
        reference = fate.reference
        for use, held in zip(reference.uses, fate.held):
            request = result.calls[use - 1].blocks
            in_request = any(occurs(reference.value, block.searchable) for block in request)
            kept_as_written = any(block.id in reference.holders and block.state == "original" for block in request)
            # Kept verbatim: never reported lost; gone from every message: reported lost there.
            assert (held == "verbatim") == kept_as_written
            assert (held == "lost") == (not in_request)
        first_lost = next((use for use, held in zip(reference.uses, fate.held) if held == "lost"), None)
        assert fate.lost_from == first_lost


@hypothesis_settings(max_examples=30, deadline=None)
@given(planted(VALUE), replay_settings(strategies=("none",)))
def test_the_none_strategy_never_loses_a_value(scenario, chosen):
    result = replay(scenario, chosen)
    fates = reference_fates(find_references(scenario), result.calls)
    assert fates and not any(fate.lost for fate in fates)
    assert all(held == "verbatim" for fate in fates for held in fate.held)


def test_a_real_claude_code_session_finds_the_versions_and_files_the_agent_came_back_to():
    scenario = load_file(SESSIONS / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl")
    references = {reference.value: reference for reference in find_references(scenario).items}
    # The user's TODO.md names the versions to install; the agent writes them again calls later.
    assert references["TODO.md"].source == "m1" and references["TODO.md"].uses[0] > references["TODO.md"].source_call
    assert references["1.23.0"].kind == "version"
    for reference in references.values():
        source = next(item for item in scenario.script if item.id == reference.source)
        assert source.role != "assistant" and occurs(reference.value, searchable(source.message))
        assert all(use >= reference.source_call for use in reference.uses)


def test_a_real_codex_session_finds_the_files_the_agent_read_about():
    scenario = load_file(SESSIONS / "codex" / "empire-of-bits-codex-session-a.jsonl")
    values = {reference.value for reference in find_references(scenario).items}
    assert {"README.md", "package.json", "Cargo.toml"} <= values


def test_a_pasted_session_is_no_longer_equally_safe_under_every_strategy():
    scenario = load_file(SESSIONS / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl")
    assert not scenario.facts  # nobody wrote its critical facts
    small = scenario.settings.model_copy(update={"window": 12_000})
    comparison = compare(scenario, small)
    lost = {column.key: column.references_lost for column in comparison.columns}
    assert not lost["none"]
    assert any(lost.values())
    for column in comparison.columns:
        assert all(fate in column.facts_lost for fate in column.references_lost)
        assert column.sound <= (not column.references_lost)


def test_the_bike_shop_order_number_is_found_without_its_author():
    scenario = open_scenario("bike-shop")
    authorless = replace(scenario, facts=[])
    references = {reference.value: reference for reference in find_references(authorless).items}
    assert references["4471"].source == "m1" and 5 in references["4471"].uses
    result = replay(authorless, Settings(**{**scenario.settings.model_dump(), "strategy": "truncate-drop"}))
    fate = next(fate for fate in reference_fates(find_references(authorless), result.calls) if fate.reference.value == "4471")
    assert not fate.lost  # the first request stays in KEEP's shadow: the lesson's point
