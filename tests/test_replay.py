"""The replay's calls, events, summaries and warnings on small hand-written chats."""

from __future__ import annotations

from webapp.core.engine.replay import replay
from webapp.core.engine.summarizer import OfflineSummarizer
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.settings import parse_settings

CHAT = '''
id = "receipt"
title = "Receipt"
lesson = "A number that matters."
system = "You are a payments assistant."

[[tools]]
name = "pay"
fetch_once = true

[[tools]]
name = "lookup"

[[facts]]
text = "PAY-99812"
label = "payment id"
needed_from_call = 4

[[chat]]
user = "Pay invoice 12 please."
digest = "The user asked to pay invoice 12; it was paid."

[[chat]]
tool_calls = [{ id = "p1", name = "pay", arguments = { invoice = 12 } }, { id = "l1", name = "lookup", arguments = { invoice = 12 } }]

[[chat]]
tool = "p1"
content = """Payment accepted. {filler} Payment id: PAY-99812."""

[[chat]]
tool = "l1"
content = """Invoice 12: {filler}"""

[[chat]]
assistant = "Paid."

[[chat]]
user = "And invoice 13?"

[[chat]]
assistant = "Invoice 13 is already paid."

[[chat]]
user = "Thanks. What was the payment id for invoice 12?"
'''.replace("{filler}", "lorem ipsum " * 300)


def scenario():
    return parse_scenario_toml(CHAT, "receipt.toml")


def test_events_come_in_the_seeds_order():
    result = replay(scenario(), parse_settings({"strategy": "none"}))
    kinds = [[e.kind for e in call.events] for call in result.calls]
    assert kinds[0] == ["user_message", "turn_start", "model_call", "tool_call", "tool_call", "tool_result", "tool_result", "turn_end"]
    assert kinds[1] == ["turn_start", "model_call", "turn_end"]
    assert kinds[2] == ["user_message", "turn_start", "model_call", "turn_end"]
    # The script ends on a user message: one more call, with no reply yet.
    assert kinds[-1] == ["user_message", "turn_start", "model_call"]
    assert result.calls[-1].reply is None
    assert [c.request_number for c in result.calls] == [1, 1, 2, 3]


def test_truncation_marks_a_result_that_cannot_be_fetched_again():
    result = replay(scenario(), parse_settings({"strategy": "truncate", "window": 1500, "keep": 1}))
    compaction = next(c.compaction for c in result.calls if c.compaction and c.compaction.changed)
    assert compaction.truncated == ("m3", "m4")[: len(compaction.truncated)]
    assert compaction.destroyed == ("m3",), "the payment receipt is gone for good"
    payment = [f for f in result.calls[-1].facts if f.fact.text == "PAY-99812"][0]
    assert payment.needed and not payment.present


def test_a_summary_keeps_the_fact_only_when_told():
    base = {"strategy": "summarize", "window": 1000, "keep": 1}
    forgetful = replay(scenario(), parse_settings(base))
    careful = replay(scenario(), parse_settings({**base, "keep_facts": True}))
    for result, kept in ((forgetful, False), (careful, True)):
        last = result.calls[-1]
        assert last.blocks[1].state == "summary" and last.blocks[1].role == "system"
        assert "invoice 12" in last.blocks[1].text, "the digest is used"
        assert [f.present for f in last.facts] == [kept]
    # The summarizer's own call is on the bill.
    compaction = next(c.compaction for c in careful.calls if c.compaction and c.compaction.changed)
    assert compaction.summarizer_input > 0 and compaction.summarizer_output > 0


def test_cannot_fit_is_said_once_with_the_numbers():
    result = replay(scenario(), parse_settings({"strategy": "truncate-drop", "window": 100, "keep": 2}))
    cannot_fit = [warning for warning in result.warnings if "cannot fit" in warning]
    assert len(cannot_fit) == 1
    warning = cannot_fit[0]
    assert "cannot fit" in warning and "100-token window" in warning and "KEEP" in warning
    assert any(call.overflow for call in result.calls)


def test_what_compaction_removed_is_listed_as_gone():
    result = replay(scenario(), parse_settings({"strategy": "drop", "window": 1000, "keep": 1}))
    last = result.calls[-1]
    assert last.compaction is None or last.compaction.levels == ("drop",)
    gone = result.gone(last.number)
    assert gone and "m1" not in gone, "the very first request is kept"
    assert set(gone).isdisjoint(block.id for block in last.blocks)


SHORT_THEN_LONG = '''
id = "short-then-long"
title = "A short exchange, then a long one"
lesson = "Folding the short one alone cannot be enough."
system = "You help."

[[chat]]
user = "Hi."

[[chat]]
assistant = "Hello."

[[chat]]
user = "Read this: {filler}"

[[chat]]
assistant = "Read: {filler}"

[[chat]]
user = "Now sum it up."
'''.replace("{filler}", "lorem ipsum " * 250)


def test_a_summary_is_asked_for_only_where_it_can_make_the_request_fit():
    """Folding "Hello." alone leaves the long exchange above the line whatever the summary
    says, so the summarizer (an endpoint may bill each call) is asked once, for both."""
    asked: list[list[str]] = []

    class Counting(OfflineSummarizer):
        def summarize(self, **question):
            asked.append([block.id for block in question["blocks"]])
            return super().summarize(**question)

    chat = parse_scenario_toml(SHORT_THEN_LONG, "short-then-long.toml")
    result = replay(chat, parse_settings({"strategy": "summarize", "window": 2400, "threshold": 0.5, "keep": 1}), Counting())
    summarized = [call.compaction.summarized for call in result.calls if call.compaction and call.compaction.summarized]
    assert summarized == [tuple(asked[0])]
    assert len(asked) == 1 and len(asked[0]) == 3
