"""The learner's path: the home page says what compaction is and numbers the lessons; each
lesson ends on what it taught and a link to the next; the glossary is one click from the
well; and no page, in any language, speaks of "the seed"."""

from __future__ import annotations

import re
from collections import defaultdict, deque
from dataclasses import dataclass, field
from html import unescape
from urllib.parse import parse_qs, urlsplit

import pytest

from webapp.core.inputs.library import SCENARIOS_DIR
from webapp.core.engine.replay import replay
from webapp.core.inputs.lessons import parse_scenario_toml
from webapp.core.inputs.library import load_library
from webapp.core.analysis.story import outcome
from webapp.web.pages.glossary import EVENTS

LIBRARY = load_library(SCENARIOS_DIR)
LESSONS = [scenario.id for scenario in LIBRARY.lessons]


def html(response) -> str:
    assert response.status_code == 200, (response.status_code, response.request.path)
    return response.get_data(as_text=True)


def links(page: str) -> list[str]:
    return [unescape(href) for href in re.findall(r'href="(/[^"#]*)', page)]


def test_home_says_what_compaction_is_then_numbers_the_lessons(client):
    page = html(client.get("/"))
    intro = page[page.index('class="intro what"') : page.index('class="cards path"')]
    assert "context window" in intro and "resends the whole chat" in intro and "Compaction shrinks" in intro
    assert '<svg class="home-well"' in intro and "<title" in intro  # the small picture of the well, named
    cards = re.findall(r'<li class="card[^"]*">(.*?)</li>', page, re.S)
    assert len(cards) == len(LESSONS)
    for number, (card, scenario_id) in enumerate(zip(cards, LESSONS), 1):
        assert f"Lesson {number}" in card and f"/play/{scenario_id}" in card
    assert "Start here" in cards[0] and all("Start here" not in card for card in cards[1:])


def test_each_lesson_ends_with_what_it_taught_and_the_next_lesson(client):
    url = "/play/" + LESSONS[0]
    visited = []
    while url:
        scenario_id = urlsplit(url).path.rsplit("/", 1)[1]
        visited.append(scenario_id)
        last = LIBRARY.get(scenario_id).call_count
        page = html(client.get(f"/play/{scenario_id}?call={last}"))
        assert "Nothing else happens" not in page
        end = unescape(page[page.index('class="lesson-end"') :])
        assert f"What lesson {len(visited)} taught:" in end
        assert LIBRARY.get(scenario_id).text("lesson") in end
        following = re.search(r'id="next-lesson"[^>]*href="([^"]+)"|href="([^"]+)"[^>]*id="next-lesson"', end)
        target = unescape(following.group(1) or following.group(2))
        url = target if target.startswith("/play/") else None
        if url:
            assert f"/play/{LESSONS[len(visited)]}" == urlsplit(url).path
            assert re.search(r'id="step-event"[^>]*href="' + re.escape(urlsplit(url).path), page)  # and in the player itself
    assert visited == LESSONS


def test_next_lesson_keeps_the_language(client):
    page = html(client.get(f"/play/{LESSONS[0]}?call={LIBRARY.get(LESSONS[0]).call_count}&lang=zh"))
    assert f'href="/play/{LESSONS[1]}?lang=zh"' in page and "下一课" in page


def test_a_call_before_the_end_with_nothing_left_jumps_to_the_end(client):
    page = html(client.get("/play/real-window?call=6"))  # the Gulp; nothing after it
    last = LIBRARY.get("real-window").call_count
    if last > 6:
        assert re.search(r'id="step-event"[^>]*href="[^"]*call=' + str(last), page)


def test_the_glossary_is_linked_next_to_the_well_and_explains_every_event(client):
    page = html(client.get("/play/bike-shop?call=5"))
    well = page[page.index('id="well-panel"') : page.index('class="table-view"')]
    assert 'id="open-glossary" href="/glossary"' in well
    glossary = html(client.get("/glossary"))
    for anchor in ("well", "floor", "blocks", "red-line", "keep", "hammer", "gulp", "sent"):
        assert f'id="{anchor}"' in glossary
    for kind in EVENTS:
        assert f'id="event-{kind}"' in glossary
    # Every event the replays log is explained, on the page (hover, focus) and in the glossary.
    logged = {event.kind for scenario in LIBRARY.scenarios.values() for call in replay(scenario).calls for event in call.events}
    assert logged <= set(EVENTS)
    events = page[page.index('id="events"') :]
    for kind in re.findall(r'href="/glossary#event-(\w+)" title="([^"]+)"', events):
        assert kind[0] in EVENTS and kind[1]
    assert 'href="/glossary#event-compact"' in events


def test_tool_results_in_the_log_name_their_tool(client):
    page = html(client.get("/play/bike-shop?call=2"))
    assert "result of get_order" in page


SEED = re.compile(r"\bseeds?\b|种子", re.I)
# What a page must hold for SEED to match once the lessons' texts are taken out of it: taking
# them out puts a space in their place, which joins no letters into "seed".
SEED_LETTERS = re.compile(r"seed|种子", re.I)


def scenario_texts() -> list[str]:
    """What the lessons themselves say: a lesson may be about a random seed (coding-agent)."""
    texts = []
    for scenario in LIBRARY.scenarios.values():
        texts += [*scenario.title.values(), *scenario.lesson.values(), scenario.system]
        texts += [text for notes in scenario.narration.values() for note in notes for text in note.texts.values()]
        texts += [text for fact in scenario.facts for text in (fact.text, *fact.labels.values())]
        texts += [str(item.message.get("content") or "") for item in scenario.script]
        texts += [call["function"]["arguments"] for item in scenario.script for call in item.message.get("tool_calls") or []]
    return sorted({text for text in texts if text}, key=len, reverse=True)


LESSONS_SAY = scenario_texts()


def speaks_of_the_seed(body: str) -> str | None:
    """Where a page calls something "the seed" outside what a lesson itself says, or None."""
    text = unescape(unescape(body))
    if not SEED_LETTERS.search(text):  # most pages: nothing to take out first
        return None
    for said in LESSONS_SAY:
        text = text.replace(said, " ")
    text = re.sub(r"\S*seed=\S*", " ", text)  # a command's argument quoted in the log
    found = SEED.search(text)
    return text[max(found.start() - 80, 0) : found.end() + 80] if found else None


def latin_full_stops(body: str) -> list[str]:
    """The Chinese sentences of a page that end with a Latin full stop."""
    text = re.sub(r"<(script|style|pre|code)\b.*?</\1>", " ", body, flags=re.S)
    text = unescape(re.sub(r"<[^>]+>", " ", text))
    return re.findall(r"[\u4e00-\u9fff][.](?:\s|$)", text)


# The checks the crawl makes on every page it visits, by language.
PAGE_CHECKS = {"seed": speaks_of_the_seed, "punctuation": latin_full_stops}
CHECKS_IN = {"en": ("seed",), "fr": ("seed",), "zh": ("seed", "punctuation")}


@dataclass
class Crawl:
    paths: set[str] = field(default_factory=set)
    problems: dict[str, list[tuple]] = field(default_factory=lambda: defaultdict(list))


def crawl(client, lang: str) -> Crawl:
    """Every page reachable from the home page in `lang`, each path once and each call of a play
    page, visited once with every check of CHECKS_IN[lang] made on it."""
    seen: set[tuple] = set()
    queue = deque([f"/?lang={lang}"])
    done = Crawl()
    while queue:
        url = queue.popleft()
        parts = urlsplit(url)
        query = parse_qs(parts.query)
        if parts.path.startswith("/static/") or parts.path.endswith((".json", ".csv")):
            continue
        key = (parts.path, query.get("call", [""])[0] if parts.path.startswith("/play/") else "")
        if key in seen:
            continue
        seen.add(key)
        done.paths.add(parts.path)
        response = client.get(url if "lang=" in url else url + ("&" if "?" in url else "?") + f"lang={lang}")
        body = response.get_data(as_text=True)
        for check in CHECKS_IN[lang]:
            if problem := PAGE_CHECKS[check](body):
                done.problems[check].append((url, problem))
        if response.mimetype == "text/html":
            queue.extend(links(body))
    return done


@pytest.fixture(scope="module")
def crawl_client(tmp_path_factory):
    """One app for the three crawls: the replays a language's pages make serve the others'."""
    from webapp import create_app

    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path_factory.mktemp("transcripts"))}).test_client()


@pytest.fixture(scope="module")
def crawled(request, crawl_client) -> Crawl:
    """The crawl in the language the test names (`indirect`): made once, read by every test."""
    return crawl(crawl_client, request.param)


def failures(problems: list[tuple]) -> str:
    return f"{len(problems)} pages, e.g.:\n" + "\n".join(map(repr, problems[:8]))


def test_the_interface_never_says_seed():
    """Not one message of the interface, in any language, calls the design documents 'the seed'."""
    from babel.messages.pofile import read_po

    for lang in ("fr", "zh"):
        with open(f"translations/{lang}/LC_MESSAGES/messages.po", "rb") as source:
            for message in read_po(source, locale=lang):
                strings = [message.id] if isinstance(message.id, str) else list(message.id)
                strings += [message.string] if isinstance(message.string, str) else list(message.string)
                assert not any(SEED.search(text) for text in strings if text), message.id


@pytest.mark.parametrize("crawled", ["en", "fr", "zh"], indirect=True)
def test_no_page_speaks_of_the_seed(crawled, crawl_client, request):
    lang = request.node.callspec.params["crawled"]
    assert {"/", "/glossary", "/transcripts/new"} <= crawled.paths
    assert all(f"/play/{scenario_id}" in crawled.paths for scenario_id in LESSONS)
    assert any(path.startswith("/compare") for path in crawled.paths)
    assert not crawled.problems["seed"], failures(crawled.problems["seed"])
    assert not (found := speaks_of_the_seed(crawl_client.get(f"/nowhere?lang={lang}").get_data(as_text=True))), ("404", found)


@pytest.mark.parametrize("crawled", ["zh"], indirect=True)
def test_chinese_sentences_end_with_chinese_punctuation(crawled):
    assert not crawled.problems["punctuation"], failures(crawled.problems["punctuation"])


def test_favicon_and_the_413_limit(client, app):
    icon = client.get("/favicon.ico")
    assert icon.status_code == 200 and icon.mimetype == "image/svg+xml" and b"<svg" in icon.data
    assert 'rel="icon"' in html(client.get("/"))
    too_big = client.post("/transcripts", data={"transcript": "x" * (app.config["MAX_CONTENT_LENGTH"] + 10)})
    assert too_big.status_code == 413
    assert "larger than the limit of 20,000,000 bytes" in too_big.get_data(as_text=True)


def test_the_transcript_form_shows_only_the_notes_that_apply(client):
    broken_json = client.post("/transcripts", data={"transcript": "[{"})
    assert broken_json.status_code == 400 and "Nothing was changed or repaired" not in broken_json.get_data(as_text=True)
    orphan = '[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}]'
    split = client.post("/transcripts", data={"transcript": orphan})
    assert split.status_code == 400 and "Nothing was changed or repaired" in split.get_data(as_text=True)


def test_one_name_per_concept(client):
    play = unescape(html(client.get("/play/real-window")))
    compare = unescape(html(client.get("/compare/real-window")))
    for page in (play, compare):
        assert "Model's window" in page and "real window (0" not in page
    assert re.search(r'<option value="estimate"[^>]*>estimate</option>', play)  # the name; the panel adds what it is
    assert "estimate (characters / 4)" in compare
    assert "Red line (share of the window)" in play and ">Line" not in play
    assert "Preview of a truncated result" in play


# --- The comparison says what each strategy did on this scenario -----------------------------


def test_strategy_none_on_the_bike_shop_is_not_said_to_overflow(client):
    page = unescape(html(client.get("/compare/bike-shop")))
    assert "watch the well overflow" not in page
    none = page[page.index("never compacts") :][:600]
    assert "nothing was compacted" in none and "Every request fit the model's window." in none


GROWS = '''
id = "tiny"
title = "Tiny results"
lesson = "A note can be longer than what it replaces."
system = "You answer."
[settings]
window = 300
threshold = 0.5
keep = 1
strategy = "truncate"
[[tools]]
name = "ok"
{chat}
[[chat]]
user = "Last question {padding}"
'''


def test_a_truncation_note_longer_than_its_result_is_explained(app):
    from webapp.web.story import outcome_text

    chat = "".join(
        f'[[chat]]\nuser = "Question {i}"\n[[chat]]\ntool_calls = [{{ id = "c{i}", name = "ok" }}]\n[[chat]]\ntool = "c{i}"\ncontent = "ok"\n[[chat]]\nassistant = "Done {i}."\n'
        for i in range(6)
    )
    scenario = parse_scenario_toml(GROWS.format(chat=chat, padding="word " * 60), "tiny.toml")
    done = outcome(replay(scenario))
    assert done.grown_notes >= 1 and done.grown_tokens > 0 and done.overflow_calls
    with app.test_request_context("/"):
        text = outcome_text(done, "en")
    assert "longer than the small result" in text or "longer than the small results" in text
    assert "overflowed" in text
