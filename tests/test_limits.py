"""A bounded cost per request: a budget of computing time, past which the visitor is told what
was too large and what to change, and one long chat at a time per process, so the home page
and the built-in scenarios are never kept waiting."""

from __future__ import annotations

import html
import re
import threading

import pytest

from tests.links import link_state
from tests.long_chats import holding, visitor
from webapp import create_app
from webapp.cli import main
from webapp.core.time_budget import BudgetExceeded, spend, within
from webapp.core.analysis.compare import compare
from webapp.core.inputs.library import open_scenario
from webapp.core.engine.replay import replay


def make_client(tmp_path, **config):
    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / "transcripts"), **config}).test_client()


def test_work_stops_once_its_budget_is_spent():
    scenario = open_scenario("long-haul")
    with within(cpu_seconds=0, wall_seconds=60), pytest.raises(BudgetExceeded) as raised:
        replay(scenario)
    assert raised.value.clock == "CPU"
    with within(cpu_seconds=60, wall_seconds=0), pytest.raises(BudgetExceeded) as raised:
        compare(scenario)
    assert raised.value.clock == "wall-clock"


def test_without_a_budget_nothing_is_limited(capsys):
    spend()  # no budget open: the command line computes whatever it is asked
    assert main(["compare", "long-haul"]) == 0
    assert "verdict:" in capsys.readouterr().out


@pytest.mark.parametrize(
    "path, what",
    [
        ("/compare/long-haul", "Comparing every strategy on this chat"),
        ("/compare/long-haul.csv", "Comparing every strategy on this chat"),
        ("/compare/long-haul.json", "Comparing every strategy on this chat"),
        ("/play/long-haul?strategy=summarize", "Replaying this chat"),
        ("/sweep/long-haul", "Sweeping every strategy over these red lines"),
        ("/sweep/long-haul.json", "Sweeping every strategy over these red lines"),
    ],
)
def test_past_the_budget_the_page_says_what_was_too_large_and_what_to_change(tmp_path, path, what):
    client = make_client(tmp_path, REQUEST_CPU_SECONDS=0)
    response = client.get(path)
    text = response.get_data(as_text=True)
    assert response.status_code == 422
    assert what in text and "(0 seconds)" in text
    assert "The chat has 128 messages and 64 model calls." in text
    assert "fewer messages" in text and "compaction-playground compare" in text
    assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
    assert "ETag" not in response.headers


@pytest.mark.parametrize("lang, words", [("fr", "Le chat compte 128 messages et 64 appels au modèle."), ("zh", "这段聊天有 128 条消息、64 次模型调用。")])
def test_the_budget_message_speaks_the_pages_language(tmp_path, lang, words):
    response = make_client(tmp_path, REQUEST_CPU_SECONDS=0).get(f"/compare/long-haul?lang={lang}")
    assert response.status_code == 422 and words in response.get_data(as_text=True)


def test_an_htmx_request_past_the_budget_shows_the_message_in_the_panel(tmp_path):
    response = make_client(tmp_path, REQUEST_CPU_SECONDS=0).get("/play/long-haul?call=3", headers={"HX-Request": "true", "HX-Target": "well"})
    assert response.status_code == 422
    assert response.headers["HX-Retarget"] == "#well"  # where the request came from
    assert "Replaying this chat" in response.get_data(as_text=True)


def test_pages_without_long_work_never_run_out(tmp_path):
    client = make_client(tmp_path, REQUEST_CPU_SECONDS=0)
    assert client.get("/").status_code == 200
    assert client.get("/transcripts/new").status_code == 200


@pytest.fixture
def held(tmp_path):
    """An app where chats of more than 12 messages are long and one may wait for the slot,
    and a request for the long `receipt` (17 messages) holds its process's only slot until the
    event is set."""
    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path), "LONG_CHAT_MESSAGES": 12, "LONG_CHAT_WAITERS": 1, "LONG_CHAT_WAIT_SECONDS": 30})
    with holding(app, 1) as (release, answers):
        yield app, release, answers


def test_a_long_chat_waits_its_turn_and_one_more_is_told_to_come_back_at_once(held):
    app, release, answers = held
    waiting = threading.Thread(target=lambda: answers.append(visitor(app, 2).get("/compare/receipt.csv?window=9000").status_code))
    waiting.start()
    threading.Event().wait(2)  # the waiter takes its place in the room first
    for _ in range(100):
        response = visitor(app, 3).get("/compare/receipt.json?window=9100")
        if response.status_code == 503:
            break
        threading.Event().wait(0.1)
    assert response.status_code == 503 and response.headers["Retry-After"] == "5"
    text = response.get_data(as_text=True)
    assert "already computing another long chat" in text and "more than 12 messages" in text
    release.set()
    waiting.join(30)
    assert sorted(answers) == [200, 200], "the holder and the waiter both got their answer"


def test_the_home_page_and_short_scenarios_never_wait_for_a_long_chat(held):
    app, release, answers = held
    client = visitor(app, 2)
    assert client.get("/").status_code == 200
    assert client.get("/play/bike-shop?call=5", headers={"HX-Request": "true"}).status_code == 200
    assert client.get("/compare/bike-shop").status_code == 200
    assert not answers, "the long chat is still being computed"


def test_the_slot_is_free_again_once_the_long_chat_is_answered(held):
    app, release, answers = held
    client = visitor(app, 2)
    release.set()
    for _ in range(100):
        if answers:
            break
        threading.Event().wait(0.1)
    assert answers == [200]
    assert client.get("/compare/receipt.csv?window=9000").status_code == 200


def test_a_long_chat_past_its_budget_frees_its_slot(tmp_path):
    client = make_client(tmp_path, REQUEST_CPU_SECONDS=0, LONG_CHAT_MESSAGES=12)
    assert client.get("/compare/receipt").status_code == 422
    assert client.get("/compare/receipt").status_code == 422  # not 503: the slot came back


def test_a_visitor_gets_one_long_chat_at_a_time_one_more_waits_and_the_next_is_told_when_to_come_back(held):
    app, release, answers = held
    holder = visitor(app, 1)  # the visitor whose long chat is being computed
    waiting = threading.Thread(target=lambda: answers.append(holder.get("/compare/receipt.csv?window=9000").status_code))
    waiting.start()
    threading.Event().wait(1)  # its second request waits for its first
    response = holder.get("/compare/receipt.json?window=9100&lang=fr")
    assert response.status_code == 429 and response.headers["Retry-After"] == "5"
    text = response.get_data(as_text=True)
    assert "Vous avez déjà un long chat en cours de calcul ici" in text
    release.set()
    waiting.join(30)
    assert sorted(answers) == [200, 200]


def test_after_a_long_chat_a_visitor_rests_as_long_as_it_took_before_the_next(tmp_path):
    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path), "LONG_CHAT_MESSAGES": 12, "CLIENT_REST_FACTOR": 1000, "LONG_CHAT_WAIT_SECONDS": 0.5})
    client = visitor(app, 1)
    assert client.get("/compare/receipt?window=9000").status_code == 200
    response = client.get("/compare/receipt?window=9100")
    assert response.status_code == 429 and int(response.headers["Retry-After"]) >= 2
    assert "Try again in" in response.get_data(as_text=True)
    assert visitor(app, 2).get("/compare/receipt?window=9100").status_code == 200
    assert client.get("/play/bike-shop?call=5").status_code == 200, "short chats are never rationed"


def test_a_comparison_takes_its_turn_from_fewer_messages_than_a_replay(held):
    app, release, answers = held
    client = visitor(app, 2)
    app.config.update(LONG_CHAT_MESSAGES=200, LONG_COMPARISON_MESSAGES=12)  # 17 and 28 messages are long only to compare
    waiting = threading.Thread(target=lambda: answers.append(client.get("/compare/receipt.csv?window=9000").status_code))
    waiting.start()
    threading.Event().wait(1)
    assert visitor(app, 3).get("/compare/workshop-manuals.json?window=9100").status_code == 503, "a comparison of 28 messages waits its turn"
    assert visitor(app, 4).get("/play/workshop-manuals?window=9100").status_code == 200, "a replay of 28 messages does not"
    release.set()
    waiting.join(30)


def test_a_sweep_past_the_budget_offers_lighter_sweeps_of_the_same_chat(tmp_path):
    response = make_client(tmp_path, REQUEST_CPU_SECONDS=0).get("/sweep/long-haul?keep=3&lang=fr")
    assert response.status_code == 422
    links = dict(re.findall(r'<li><a class="btn" href="([^"]+)"[^>]*>([^<]+) →</a>', response.get_data(as_text=True)))
    offered = {text: link_state(href) for href, text in links.items()}
    assert offered == {
        "Balayer à votre KEEP seulement (3)": ("/sweep/long-haul", {"keep": "3", "keeps": "3", "lang": "fr"}),
        "Balayer une ligne rouge sur deux (un pas de 10\u00a0%)": ("/sweep/long-haul", {"keep": "3", "line_step": "10", "lang": "fr"}),
    }
    one_keep = make_client(tmp_path).get(html.unescape(next(href for href, text in links.items() if "KEEP" in text)))
    assert one_keep.status_code == 200


def test_a_sweep_at_one_keep_and_every_other_line_offers_nothing_lighter_than_itself(tmp_path):
    response = make_client(tmp_path, REQUEST_CPU_SECONDS=0).get("/sweep/long-haul?keeps=2&line_from=50&line_to=55")
    assert response.status_code == 422 and 'class="ways-out"' not in response.get_data(as_text=True)
