"""Sizes that fit real sessions: a file of up to TRANSCRIPT_MAX_BYTES, pasted or uploaded,
metadata included, whose messages fit what the replay holds (TRANSCRIPT_MAX_MESSAGES,
TRANSCRIPT_MAX_CHARACTERS); a 413 that states the limit in the page's language."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from tests.generators import session_with_metadata

from webapp import create_app

FIXTURE = Path(__file__).parent / "fixtures" / "transcripts" / "chat-tool-call.json"
SMALL_LIMIT = 20_000


def new_client(tmp_path, **config):
    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / "transcripts"), **config}).test_client()


def transcript_of(size: int) -> bytes:
    """A real chat-completions request (tests/fixtures/transcripts/SOURCES.md) padded with
    trailing spaces to exactly `size` bytes, still valid JSON."""
    data = json.dumps(json.loads(FIXTURE.read_text())).encode()
    assert len(data) <= size
    return data + b" " * (size - len(data))


def paste(client, data: bytes, lang: str = "en"):
    return client.post(f"/transcripts?lang={lang}", data={"transcript": data.decode()}, content_type="multipart/form-data")


def upload(client, data: bytes, lang: str = "en"):
    return client.post(f"/transcripts?lang={lang}", data={"file": (io.BytesIO(data), "session.json")}, content_type="multipart/form-data")


@pytest.mark.parametrize("send", [paste, upload])
def test_paste_and_upload_take_the_same_limit_and_the_413_states_it(tmp_path, send):
    client = new_client(tmp_path, TRANSCRIPT_MAX_BYTES=SMALL_LIMIT)
    at_the_limit = send(client, transcript_of(SMALL_LIMIT))
    assert at_the_limit.status_code == 303, at_the_limit.get_data(as_text=True)
    one_over = send(client, transcript_of(SMALL_LIMIT + 1))
    assert one_over.status_code == 413
    assert re.search(r"the limit (is|of) 20,000 bytes", one_over.get_data(as_text=True))
    in_french = send(client, transcript_of(SMALL_LIMIT + 1), lang="fr")
    assert in_french.status_code == 413
    assert re.search("limite (est de|de) 20[\u202f\u00a0]000 octets", in_french.get_data(as_text=True))


def test_the_form_says_the_limits_it_applies(client, app):
    page = client.get("/transcripts/new").get_data(as_text=True)
    assert f"{app.config['TRANSCRIPT_MAX_BYTES']:,} bytes" in page
    assert f"{app.config['TRANSCRIPT_MAX_MESSAGES']:,} messages" in page
    assert f"{app.config['TRANSCRIPT_MAX_CHARACTERS']:,} characters" in page


def session_of(target_bytes: int) -> bytes:
    """The fixture's few messages in a session's metadata, many lines of events around them."""
    return session_with_metadata(json.loads(FIXTURE.read_text()), target_bytes, "/home/dev/projects/weather-service", "20.0\n" * 40)


def test_a_large_session_whose_messages_fit_is_accepted_and_served_back_byte_for_byte(tmp_path):
    client = new_client(tmp_path)
    data = session_of(15_000_000)
    assert 10_000_000 < len(data) <= 20_000_000
    response = upload(client, data)
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    link = response.headers["Location"]
    assert client.get(link).status_code == 200
    name = link.split("/play/")[1].split("?")[0].split("/")[0]
    assert client.get(f"/transcripts/{name}.json").data == data
    pasted = paste(client, data)
    assert pasted.status_code == 303 and pasted.headers["Location"] == link


def test_a_large_file_with_too_many_messages_is_refused_naming_the_limit(client, app):
    request = json.loads(FIXTURE.read_text())
    turns = [{"role": "user", "content": f"question {index}"} if index % 2 == 0 else {"role": "assistant", "content": "answer"} for index in range(5000)]
    request["messages"] = request["messages"][:1] + turns
    response = upload(client, json.dumps(request).encode())
    assert response.status_code == 400
    body = response.get_data(as_text=True)
    assert "5,001 messages; at most 1,000 are accepted" in body


def test_messages_holding_too_many_characters_are_refused_naming_the_limit(tmp_path):
    client = new_client(tmp_path, TRANSCRIPT_MAX_CHARACTERS=50_000)
    request = json.loads(FIXTURE.read_text())
    request["messages"][1]["content"] = "What is the temperature? " * 4000
    response = paste(client, json.dumps(request).encode())
    assert response.status_code == 400
    assert "at most 50,000 are accepted" in response.get_data(as_text=True)


def test_a_transcript_holding_a_million_spaces_is_replayed_without_killing_the_worker(tmp_path):
    """The run that panics tiktoken's o200k encoder (tests/test_token_guard.py), pasted: the
    page is drawn with that counter."""
    client = new_client(tmp_path, TRANSCRIPT_MAX_CHARACTERS=1_100_000)
    request = json.loads(FIXTURE.read_text())
    request["messages"][1]["content"] = "What is the temperature in Tokyo?" + " " * 1_000_000 + "Thanks."
    response = paste(client, json.dumps(request).encode())
    assert response.status_code == 303, response.get_data(as_text=True)[:2000]
    link = response.headers["Location"]
    for counter in ("o200k_base", "cl100k_base"):
        page = client.get(link + ("&" if "?" in link else "?") + f"counter={counter}")
        assert page.status_code == 200, page.get_data(as_text=True)[:2000]
