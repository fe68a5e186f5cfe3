"""What one URL can cost (issue 26): the lists a URL carries are capped, and refused past their
cap with what was wrong and what is accepted; the page of the longest URL accepted, on a
transcript of 1,000 messages, stays under the size docs/hardening.md states."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from bench.attacks.cost import agent_transcript
from bench.attacks.pins import worst_query
from webapp import create_app
from webapp.core.settings import MOST_EXCLUDED_TOOLS, MOST_PINS

HARDENING = (Path(__file__).resolve().parents[1] / "docs" / "hardening.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path_factory.mktemp("transcripts")), "REQUEST_CPU_SECONDS": 120, "REQUEST_WALL_SECONDS": 300})
    return app.test_client()


def pins(count: int) -> str:
    return ",".join(f"m{number}" for number in range(1, count + 1))


def test_fifty_pins_are_accepted_and_one_more_is_refused_with_the_cap(client):
    assert client.get(f"/play/long-haul?pin={pins(MOST_PINS)}").status_code == 200
    response = client.get(f"/play/long-haul?pin={pins(MOST_PINS + 1)}")
    assert response.status_code == 400
    assert f"pin: got &#39;{pins(MOST_PINS + 1)}&#39;, expected at most 50 message ids separated by commas" in response.get_data(as_text=True)


@pytest.mark.parametrize("lang, words", [("fr", "au plus 50 identifiants de messages"), ("zh", "最多 50 个消息编号")])
def test_the_cap_is_said_in_the_pages_language(client, lang, words):
    response = client.get(f"/compare/long-haul.json?pin={pins(MOST_PINS + 1)}&lang={lang}")
    assert response.status_code == 400 and words in response.get_data(as_text=True)


def test_a_list_past_its_cap_in_characters_is_refused_as_past_its_cap(client):
    assert client.get(f"/play/long-haul?pin={'m1,' * 100}").status_code == 200, "repeats count once: m1 is one pin"
    response = client.get(f"/play/long-haul?pin={'m1,' * 2000}")
    assert response.status_code == 400 and "at most 50 message ids" in response.get_data(as_text=True)
    response = client.get(f"/play/long-haul?pin={','.join(f'm{n:07d}' for n in range(1, 200))}")
    assert response.status_code == 400 and "at most 50 message ids" in response.get_data(as_text=True)


def test_ten_excluded_tools_are_accepted_and_one_more_is_refused(client):
    tools = [f"tool_{number}" for number in range(MOST_EXCLUDED_TOOLS + 1)]
    base = "/play/coding-agent?strategy=clear-tool-results&exclude_tools="
    assert client.get(base + ",".join(tools[:-1])).status_code == 200
    response = client.get(base + ",".join(tools))
    assert response.status_code == 400
    assert "exclude_tools: got" in response.get_data(as_text=True) and "at most 10 tool names" in response.get_data(as_text=True)


def test_links_to_the_page_itself_carry_only_what_they_change(client):
    page = client.get("/play/long-haul?call=3&pin=m1,m3&window=9000").get_data(as_text=True)
    assert '<base href="/play/long-haul/window=9000;pin=m1,m3?call=3">' in page, "the lists' commas as they are"
    assert 'href="?call=4"' in page and "%2C" not in page
    assert not re.search(r'href="\?[^"]*(pin|window)=', page), "no link to the page itself repeats its settings"


def test_a_path_segment_that_is_no_setting_is_a_404_and_the_query_wins_over_the_path(client):
    response = client.get("/play/long-haul/nonsense?call=3")
    assert response.status_code == 404 and "is not a setting of the play page" in response.get_data(as_text=True)
    page = client.get("/play/long-haul/window=9000;pin=m1?call=3&window=12000&pin=").get_data(as_text=True)
    assert '<base href="/play/long-haul/window=12000?call=3">' in page, "a form's fields (an empty one: the default) win"


def documented_page_bound() -> int:
    found = re.search(r"stays under ([\d,]+) bytes", HARDENING)
    assert found, "docs/hardening.md states the page's bound: 'stays under N bytes'"
    return int(found.group(1).replace(",", ""))


def test_the_longest_url_accepted_on_a_thousand_messages_stays_under_the_documented_size(client):
    transcript = agent_transcript(7)
    location = client.post("/transcripts", data={"transcript": json.dumps(transcript)}).headers["Location"]
    scenario_id = location.split("/play/")[1].split("?")[0]
    calls = client.get(f"/play/{scenario_id}.json").get_json()["calls"]
    query = worst_query(len(transcript["messages"]) - 1, calls)
    response = client.get(f"/play/{scenario_id}?{query}")
    assert response.status_code == 200, response.get_data(as_text=True)[-500:]
    assert len(response.get_data()) < documented_page_bound()
