"""The scenario library in the browser's routes: every scenario under every strategy, each
lesson visible at its call, the "next thing that happens" control, settings as code, and
bring-your-own transcripts."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from tests.links import base_of, link_state

from webapp.core.inputs.library import SCENARIOS_DIR, load_library
from webapp.core.inputs.transcripts import transcript_id
from webapp.core.engine.strategy_catalog import STRATEGIES

LIBRARY = load_library(SCENARIOS_DIR)


def text(response) -> str:
    return html.unescape(response.get_data(as_text=True))


@pytest.mark.parametrize("scenario_id", list(LIBRARY.scenarios))
def test_every_scenario_plays_to_its_end_under_every_strategy(client, scenario_id):
    calls = LIBRARY.get(scenario_id).call_count
    for strategy in STRATEGIES:
        for call in range(1, calls + 1):
            response = client.get(f"/play/{scenario_id}?call={call}&strategy={strategy}")
            assert response.status_code == 200, (strategy, call)
        page = text(response)
        assert f"Call {calls}" in page and 'class="well' in page
        fragment = client.get(f"/play/{scenario_id}?call={calls}&strategy={strategy}", headers={"HX-Request": "true"})
        assert fragment.status_code == 200 and '<div id="well">' in fragment.get_data(as_text=True)


def test_next_thing_that_happens_jumps_over_quiet_calls(client):
    page = text(client.get("/play/chars-lie?call=3&price=10"))
    link = re.search(r'id="step-event"[^>]*href="([^"]+)"', page)
    assert link and "call=6" in link.group(1)  # call 4 and 5: nothing; 6: narration and overflow
    # the rest of the state comes along, from the page's address
    assert link_state(link.group(1), base_of(page, "/play/chars-lie?call=3&price=10"))[1]["price"] == "10"
    quiet_end = text(client.get("/play/bike-shop?call=6"))
    assert re.search(r'id="step-event"[^>]*href="/play/real-window"', quiet_end)  # the end leads to the next lesson
    # Without narration, compactions and rejected requests are the things that happen.
    none = text(client.get("/play/long-haul?call=21&strategy=none"))
    assert re.search(r'id="step-event"[^>]*href="[^"]*call=22', none)  # every later call overflows


def test_real_window_shows_the_models_rim_and_the_overflow(client):
    page = text(client.get("/play/real-window?call=6"))
    assert "Gulp! 8,523 > 8,000" in page and 'class="real-rim in-well"' in page
    assert "102,400" in page  # the line, far above the model's rim
    fixed = text(client.get("/play/real-window?call=6&window=8000&model_window=0"))
    assert "Gulp!" not in fixed and "before compaction: 8,523" in fixed


def test_the_naive_dropper_is_shown_rejected(client):
    page = text(client.get("/play/tool-pairs?call=5"))
    assert "invalid_request" in page
    assert "messages[2].tool_call_id: tool result 'call_ams' has no matching call" in page
    assert "An API would reject this request" in page
    assert "invalid_request" not in text(client.get("/play/tool-pairs?call=5&strategy=drop"))


def test_no_room_for_the_reply_is_said(client):
    page = text(client.get("/play/reply-room?call=5"))
    assert "no_room_for_reply" in page
    assert "3,559 + a 618-token reply > 4,096" in page
    assert "the reply needs 618 more: no room" in page


def test_chars_lie_shows_the_estimate_and_the_real_count_side_by_side(client):
    page = text(client.get("/play/chars-lie?call=6"))
    assert "5,852 of 8,000 tokens" in page
    assert "estimate; the provider counts 8,336" in page
    assert "Gulp! The model counts 8,336 > 8,000" in page
    exact = text(client.get("/play/chars-lie?call=6&counter=o200k_base"))
    assert 'id="provider-count"' not in exact and "Gulp!" not in exact


def test_receipt_and_summary_facts_are_on_the_json_twin(client):
    receipt = client.get("/play/receipt.json?call=9").get_json()["current"]["facts"]
    assert [f["present"] for f in receipt] == [True, False]
    summary = client.get("/play/summary-forgets.json?call=7").get_json()["current"]["facts"]
    assert [f["present"] for f in summary] == [False]
    kept = client.get("/play/summary-forgets.json?call=7&keep_facts=1").get_json()["current"]["facts"]
    assert [f["present"] for f in kept] == [True]


def test_settings_as_code_follow_the_settings(client):
    page = text(client.get("/play/real-window?call=1"))
    assert "maxTokens: 128000," in page and "The model really has 8,000 tokens" in page
    assert 'WINDOW = {"max_tokens": 128000, "threshold": 0.8, "keep_recent_turns": 2}' in page
    changed = "/play/real-window?call=1&window=8000&model_window=0&keep=3&threshold=0.75"
    headers = {"HX-Request": "true", "HX-Trigger": "controls", "HX-Current-URL": "http://localhost/play/real-window"}
    # Collapsed, the code is not sent with the change: a loader fetches it when it is opened.
    loader = text(client.get(changed, headers={**headers, "HX-Target": "well"}))
    assert re.search(r'<div id="settings-code" class="loading" hx-get="[^"]*keep=3[^"]*" hx-trigger="toggle once from:closest details, intersect once"', loader.replace("&amp;", "&"))
    fragment = text(client.get(changed, headers={**headers, "HX-Target": "settings-code"}))
    assert "maxTokens: 8000," in fragment and "keepRecentTurns: 3," in fragment
    code = fragment[fragment.index('id="settings-code"'):]
    assert '"threshold": 0.75' in code and "really has" not in code[: code.index("</div>")]


# --- Bring your own transcript -----------------------------------------------------------

ORDER = {"type": "function", "function": {"name": "get_order", "description": "An order", "parameters": {"type": "object", "properties": {"id": {"type": "integer"}}}}}


def transcript(extra_user: str = "") -> str:
    messages = [
        {"role": "system", "content": "You are a support bot."},
        {"role": "user", "content": "Where is order 4471?" + extra_user},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": "{\"id\": 4471}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"order": 4471, "status": "shipped", "events": ["packed"] * 400})},
        {"role": "assistant", "content": "It shipped yesterday."},
        {"role": "user", "content": "Thanks! And can I change the address?"},
        {"role": "assistant", "content": "Yes, until it reaches the depot."},
        {"role": "user", "content": "Please change it to 12 Elm St."},
    ]
    return json.dumps({"messages": messages, "tools": [ORDER]})


def test_a_pasted_transcript_gets_a_link_that_replays_with_every_strategy(client, app):
    body = transcript()
    response = client.post("/transcripts", data={"transcript": body})
    assert response.status_code == 303
    name = transcript_id(body)
    assert response.headers["Location"].endswith(f"/play/{name}")
    again = client.post("/transcripts", data={"transcript": body})
    assert again.headers["Location"] == response.headers["Location"]  # same content, same link
    for strategy in STRATEGIES:
        for call in (1, 2, 3, 4):
            assert client.get(f"/play/{name}?call={call}&strategy={strategy}&window=2000").status_code == 200
    page = text(client.get(f"/play/{name}?call=2&window=2000"))
    assert "Transcript: “Where is order 4471?" in page and "tool result: get_order" in page
    assert client.get(f"/compare/{name}?call=4&window=2000").status_code == 200
    assert client.get(f"/play/{name}.json?call=4").get_json()["calls"] == 4


def test_a_transcript_link_survives_a_restart(app, tmp_path):
    from webapp import create_app

    body = transcript()
    first = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / "shared")}).test_client()
    location = first.post("/transcripts", data={"transcript": body}).headers["Location"]
    second = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / "shared")}).test_client()
    assert second.get(location).status_code == 200  # another process, the same directory


def test_an_uploaded_file_works_like_a_paste(client):
    import io

    body = transcript(" (uploaded)")
    response = client.post("/transcripts", data={"file": (io.BytesIO(body.encode()), "chat.json")}, content_type="multipart/form-data")
    assert response.status_code == 303 and transcript_id(body) in response.headers["Location"]


@pytest.mark.parametrize(
    "body,expected",
    [
        ("{not json", "not valid JSON"),
        (json.dumps({"messages": []}), "messages"),
        (json.dumps([{"role": "robot", "content": "hi"}]), "messages[0].role"),
        (json.dumps([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "{}"}]),
         "messages[1].tool_call_id: tool result 'c9' has no matching call in the assistant message before it"),
        (json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, {"role": "user", "content": "?"}]),
         "messages[1].tool_calls: call 'c1' never gets its tool result"),
        ("   ", "Paste a transcript or choose a file."),
    ],
)
def test_bad_transcripts_are_reported_by_message_index_and_field_not_repaired(client, app, body, expected):
    response = client.post("/transcripts", data={"transcript": body})
    assert response.status_code == 400
    page = re.sub(r"<[^>]+>", "", text(response))  # the field path is set in <code>
    assert expected in page
    assert not list(Path(app.config["TRANSCRIPT_DIR"]).glob("t-*.json"))  # nothing stored


def test_a_transcript_over_the_cap_is_refused_with_the_limit(tmp_path):
    from webapp import create_app

    client = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path), "TRANSCRIPT_MAX_BYTES": 1000}).test_client()
    response = client.post("/transcripts", data={"transcript": transcript()})
    assert response.status_code == 413
    assert "the limit is 1,000 bytes" in text(response)


def test_an_unknown_transcript_link_is_a_clear_404(client):
    response = client.get("/play/t-0123456789abcdef")
    assert response.status_code == 404
    assert "No transcript was ever stored as t-0123456789abcdef" in text(response)


def test_the_store_evicts_the_least_recently_used_and_says_so(tmp_path, monkeypatch):
    from webapp.core.inputs import store as transcript_store
    from webapp.core.inputs.store import TranscriptStore, disk_bytes

    clock = [1_000_000.0]
    monkeypatch.setattr(transcript_store.time, "time", lambda: clock[0])
    monkeypatch.setattr(transcript_store, "TOUCH_EVERY", 0)
    bodies = [transcript(f" #{n}").encode() for n in range(3)]
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1)
    size = disk_bytes(store.path(store.save(bodies[0]).id))
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=int(size * 2.5))
    names = []
    for body in bodies[:2]:
        clock[0] += 10
        names.append(store.save(body).id)
    clock[0] += 10
    assert store.load(names[0]) is not None  # reading it makes it the most recently used
    clock[0] += 10
    names.append(store.save(bodies[2]).id)
    assert store.path(names[0]).exists() and store.path(names[2]).exists()
    assert not store.path(names[1]).exists()  # the least recently used went
    assert store.load(names[1]) is None and store.missing(names[1]).removed == clock[0]
    assert store.usage() == 2 * size


def test_the_orphaned_results_are_marked_in_the_well(client):
    page = text(client.get("/play/tool-pairs?call=5"))
    assert page.count("⚠ its call is gone") == 3
    assert len(re.findall(r'id="block-m(?:3|4|5)" class="tool orphan"', page)) == 3
    assert "orphan" not in text(client.get("/play/tool-pairs?call=5&strategy=drop")).split('class="legend"')[0]


def test_the_facts_panel_shows_what_survived_and_what_was_lost(client):
    page = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text(client.get("/play/receipt?call=9"))))
    assert "deposit receipt id PAY-7F3K-22A9 : still in the request" in page
    assert "transfer receipt id PAY-Q8M1-5XDT : lost at call 9, and this call needs it" in page
    assert "It truncated 2 results of a tool that cannot be called again" in page
    early = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text(client.get("/play/summary-forgets?call=1"))))
    assert "booking reference QX7P2M : not in the chat yet; needed from call 7" in early
    lost = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text(client.get("/play/summary-forgets?call=7"))))
    assert "booking reference QX7P2M : lost at call 6, and this call needs it" in lost
    kept = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", text(client.get("/play/summary-forgets?call=7&keep_facts=1"))))
    assert "booking reference QX7P2M : still in the request" in kept
    fragment = client.get("/play/summary-forgets?call=7", headers={"HX-Request": "true"}).get_data(as_text=True)
    assert 'id="facts" hx-swap-oob="true"' in fragment
