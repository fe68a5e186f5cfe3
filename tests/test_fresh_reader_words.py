"""What a fresh reader, given the README and the browser, found disagreeing on one screen (issue
33, stop 38's list), through the Flask client: each figure says what it counts, so two figures of
one screen never tell two stories.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from webapp.core.model import LANGUAGES

SESSIONS = Path(__file__).parent / "fixtures" / "sessions"


def words(markup: str) -> str:
    """What a person reads of some HTML: its text, spaces collapsed."""
    body = re.sub(r"<(script|style).*?</\1>", "", markup, flags=re.S)
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", body))).strip()


def between(page: str, start: str, end: str) -> str:
    return page[page.index(start) : page.index(end, page.index(start))]


def column(page: str, key: str) -> str:
    """The HTML of a strategy's card in full (under the cards the page opens on)."""
    cards = page[page.index('<section id="columns"') :].split('<li class="column')[1:]
    return next(card for card in cards if f'data-strategy="{key}"' in card)


def test_a_harness_card_says_its_line_is_not_the_charts_red_line(client):
    """codex-cli's card said "its line 7,200" beside the chart's "red line 6,400"."""
    page = client.get("/compare/bike-shop").get_data(as_text=True)
    codex = words(column(page, "codex-cli"))
    assert "Its own line, not the red line: 90% of the window, 7,200 tokens" in codex
    # A harness whose line is the red line says so, not that it differs.
    assert "Its line is the red line: 80% of the window, 6,400 tokens" in words(column(page, "openhands-masking"))
    caption = words(between(page, '<figcaption id="chart-caption"', "</figcaption>"))
    assert "the red line (6,400 tokens), where the textbook strategies compact" in caption
    assert "each production harness compacts at its own line, given on its card" in caption

def test_api_validity_is_no_tick_beside_a_refused_trigger_or_an_overflow(client):
    """anthropic-compaction said "the request would be rejected" beside "API validity ✓ all
    valid", and truncate overflowed the long haul's window beside the same tick."""
    bike = client.get("/compare/bike-shop").get_data(as_text=True)
    anthropic = words(column(bike, "anthropic-compaction"))
    assert "API validity ✗ every request refused: the API takes no trigger under 50,000 tokens" in anthropic
    assert "✓ all valid" not in anthropic
    long_haul = client.get("/compare/long-haul").get_data(as_text=True)
    truncate = words(column(long_haul, "truncate"))
    assert re.search(r"API validity ✗ 4 refused as too long, from call \d+", truncate), truncate
    assert "✓ all valid" in words(column(long_haul, "summarize+facts"))

def test_a_fact_missing_when_it_was_needed_is_never_ticked(client):
    """gemini-cli's "✗ loses a fact" stood over "✓ order number, in this request · missing when
    call 5 needs it"."""
    card = column(client.get("/compare/bike-shop?call=6").get_data(as_text=True), "gemini-cli")
    facts = re.findall(r'<li class="fact ([^"]+)">\s*<span class="fact__mark" aria-hidden="true">(.)</span>(.*?)</li>', card, flags=re.S)
    order = next((state, mark, words(text)) for state, mark, text in facts if "order number" in text)
    assert order[:2] == ("is-bad", "✗"), order
    assert "back in this request · missing when call 5 needs it" in order[2]

def test_a_glance_card_says_when_a_fact_was_missing_as_the_full_card_does(client):
    """drop's card at a glance said "✗ lost from call 64" where the play page says the fact was
    lost at call 35 and needed from call 64."""
    page = client.get("/compare/long-haul").get_data(as_text=True)
    glance = words(between(page, 'id="glance"', "</section>"))
    assert "Critical facts ✗ missing at call 64" in glance and "lost from call" not in glance

def test_an_overflow_badge_says_at_which_calls(client):
    """truncate's card at a glance said "✗ overflows" over "90% of the window" at call 64: its
    overflows were earlier, and no figure of the card said when."""
    glance = words(between(client.get("/compare/long-haul").get_data(as_text=True), 'id="glance"', "</section>"))
    assert "✗ overflows at 4 calls, from call 41" in glance

def test_the_least_saving_is_told_after_the_compaction_that_grew(client):
    """claude-code: "2 compactions saved under 10% (the least: 3% at call 3)" beside a compaction
    that made the request bigger at call 2, a smaller saving still."""
    card = words(column(client.get("/compare/bike-shop").get_data(as_text=True), "claude-code"))
    grew = card.index("1 compaction made the request bigger (by 9 tokens at call 2).")
    assert card.index("2 other compactions saved under 10% (the least: 3% at call 3).") > grew

def test_the_sweep_and_the_comparison_say_at_which_line_they_run_a_harness(client):
    sweep = words(client.get("/sweep/bike-shop").get_data(as_text=True))
    assert "Here every strategy, the production harnesses' too, compacts at the red line of its column" in sweep
    assert "the comparison runs each harness at its own line" in sweep
    page = client.get("/compare/bike-shop").get_data(as_text=True)
    harnesses = words(between(page, 'id="family-harness"', "</ol>"))
    assert "Each compacts at its own line, given on its card, not at the red line; “Choose your settings” runs them at every red line." in harnesses

@pytest.mark.parametrize(
    "path, start, end",
    [("/compare/bike-shop", 'id="verdict"', 'id="every-strategy"'), ("/sweep/bike-shop", 'id="advice"', 'id="sweep-tables"')],
)
def test_the_money_basis_is_on_the_page_not_in_a_closed_fold(client, path, start, end):
    """The sweep's bills had no basis on its page, the comparison's sat in its closed settings."""
    page = client.get(path).get_data(as_text=True)
    before = page[: page.index('id="bill-basis"')]
    assert before.count("<details") == before.count("</details>"), "the basis is inside a fold"
    shown = between(page, start, end)
    assert (
        "Every bill on this page: $2.50 per million input tokens, $10.00 per million output tokens (the summaries). "
        "Prompt cache: OpenAI automatic caching; a cached token costs 0.5 of the price."
    ) in words(shown)

def test_anthropics_cache_says_what_a_written_token_costs(client):
    shown = words(between(client.get("/compare/bike-shop?cache=anthropic").get_data(as_text=True), 'id="verdict"', 'id="every-strategy"'))
    assert "Prompt cache: Anthropic cache breakpoints; a cached token costs 0.1 of the price, a token written to the cache 1.25." in shown

def test_a_pasted_sessions_basis_is_said_beside_the_cards(client):
    answer = client.post("/transcripts", data={"transcript": (SESSIONS / "claude-code/spotter-tool_heavy.jsonl").read_text()})
    page = client.get(answer.headers["Location"].replace("/play/", "/compare/")).get_data(as_text=True)
    assert "Billed at Anthropic's prices for" in words(between(page, 'id="verdict"', 'id="every-strategy"'))

@pytest.mark.parametrize(
    "lang, word",
    [("en", "compaction"), ("fr", "compaction"), ("zh", "压缩")],
)
def test_the_event_log_names_events_in_the_readers_words(client, lang, word):
    """The log showed the loop's keys (user_message, compact, turn_start): each event has a name
    in the reader's words, its key on hover and beside it in the glossary."""
    from webapp.web.pages.glossary import EVENT_NAMES, EVENTS

    assert set(EVENT_NAMES) == set(EVENTS)
    page = client.get(f"/play/bike-shop?call=5&lang={lang}").get_data(as_text=True)
    log = between(page, 'id="events-title"', 'id="chat-title"')
    assert "<code>compact</code>" not in log and "<code>user_message</code>" not in log
    compact = re.search(r'<li class="event kind-compact"><a class="event-name" href="[^"]+" title="([^"]+)">(.*?)</a>', log)
    assert words(compact.group(2)) == word
    assert html.unescape(compact.group(1)).startswith("compact: ")  # the loop's own name, on hover
    glossary = words(client.get(f"/glossary?lang={lang}").get_data(as_text=True))
    assert f"{word} compact" in glossary

@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_pasted_session_is_titled_by_its_first_request_not_its_hash(client, lang):
    answer = client.post("/transcripts", data={"transcript": (SESSIONS / "claude-code/spotter-tool_heavy.jsonl").read_text()})
    link = answer.headers["Location"]
    name = link.rsplit("/", 1)[1]
    heading = words(re.search(r"<h1.*?</h1>", client.get(f"{link}?lang={lang}").get_data(as_text=True), flags=re.S).group(0))
    assert "start phoenix in background" in heading and name not in heading, heading

def test_a_long_first_request_is_cut_at_a_word(client):
    long = "Please look at every failing test of the billing module and tell me why the totals are off by a cent"
    answer = client.post("/transcripts", data={"transcript": f'[{{"role": "user", "content": "{long}"}}, {{"role": "assistant", "content": "On it."}}]'})
    heading = words(re.search(r"<h1.*?</h1>", client.get(answer.headers["Location"]).get_data(as_text=True), flags=re.S).group(0))
    assert "“Please look at every failing test of the billing module and…”" in heading, heading

def test_a_first_request_without_words_leaves_the_id_as_title():
    from webapp.core.inputs.transcripts import parse_transcript, transcript_id

    image = {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
    text = json.dumps([{"role": "user", "content": [image]}, {"role": "assistant", "content": "A cat."}])
    assert parse_transcript(text, "pasted").text("title") == f"Transcript {transcript_id(text)}"

def test_the_bills_change_from_the_previous_call_is_the_storys(client):
    """harnesses, call 10: the story said "SENT grew by 26,518 tokens, 3,261 more than at the
    previous call", the bill "vs previous call −15,349" (the request's change)."""
    page = client.get("/play/harnesses?call=10").get_data(as_text=True)
    assert "SENT grew by 26,518 tokens, 3,261 more than at the previous call" in words(page)
    bill = words(between(page, 'id="bill-figures"', "</dl>"))
    assert "This call +26,518 vs previous call +3,261" in bill

def test_the_summarizers_tokens_say_they_hold_its_instructions_too(client):
    """harnesses, call 10: "folded 11 old messages (18,556 tokens …)" and "18,610 of them went
    to the summarizer" read as two counts of one thing."""
    story = words(between(client.get("/play/harnesses?call=10").get_data(as_text=True), 'class="story', "</section>"))
    assert "folded 11 old messages (18,556 tokens, from request 1)" in story
    assert "18,610 of them went to the summarizer: the messages it summarized and its instructions." in story

def test_the_glossary_says_both_things_request_names(client):
    """The glossary said "a request is one message of the user", where the metrics, the facts
    and the chart say "this request" of what a call sends."""
    glossary = words(client.get("/glossary").get_data(as_text=True))
    assert "A request is one message of the user." not in glossary
    assert "The user's messages are numbered as requests: request 3 is the third, and KEEP counts them." in glossary
    assert "what one call sends, the floor and the whole history, is that call's request" in glossary

def test_the_verdict_names_a_lost_fact_in_the_readers_language(client):
    """The Chinese verdict said "truncate 从第 24 次调用起丢掉了一个关键事实（the nightly's random seed）"."""
    page = client.get("/compare/coding-agent?lang=zh").get_data(as_text=True)
    verdict = words(between(page, 'id="verdict"', "</section>"))
    assert "（nightly 构建的随机种子）" in verdict and "the nightly's random seed" not in verdict
