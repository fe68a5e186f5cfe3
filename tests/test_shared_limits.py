"""LIMITS_STORE=redis://…, against a real Redis (tests/servers.py): one client's fair share of
long chats, its rest, its pastes and the summarizer's remembered failure hold across two hosts
(two apps, each with its own folder, as two machines run them); a Redis stopped mid-run costs
nothing but the sharing (each host counts its own meanwhile), and the sharing comes back by
itself when Redis answers again."""

from __future__ import annotations

import threading
import time

from tests.long_chats import holding, visitor
from tests.test_remote_summarizer import serve_fake
from webapp import create_app

CHAT = '[{"role": "user", "content": "Bonjour"}, {"role": "assistant", "content": "Salut"}]'
LONG = {"LONG_CHAT_MESSAGES": 12, "LONG_CHAT_WAITERS": 1}  # receipt's 17 messages are a long chat


def host(tmp_path, name: str, redis: str, **config):
    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / name), "LIMITS_STORE": redis, **config})


def test_one_clients_long_chat_on_one_host_is_its_share_on_the_other(redis_store, tmp_path):
    first = host(tmp_path, "first", redis_store, **LONG)
    second = host(tmp_path, "second", redis_store, **LONG, LONG_CHAT_WAIT_SECONDS=0.5)
    with holding(first, 1) as (_, answers):
        response = visitor(second, 1).get("/compare/receipt?window=9000&lang=fr")
        assert response.status_code == 429 and response.headers["Retry-After"] == "5"
        assert "Vous avez déjà un long chat en cours de calcul ici" in response.get_data(as_text=True)
        assert visitor(second, 2).get("/compare/receipt?window=9000").status_code == 200, "another visitor has a share of its own"
        assert visitor(second, 1).get("/play/bike-shop?call=5").status_code == 200, "short chats are never rationed"
    assert answers == [200]


def test_a_long_chat_waits_on_the_other_host_until_the_first_is_done(redis_store, tmp_path):
    first = host(tmp_path, "first", redis_store, **LONG)
    second = host(tmp_path, "second", redis_store, **LONG, LONG_CHAT_WAIT_SECONDS=20)
    waited: list[int] = []
    with holding(first, 1) as (_, answers):
        waiting = threading.Thread(target=lambda: waited.append(visitor(second, 1).get("/compare/receipt.csv?window=9000").status_code))
        waiting.start()
        time.sleep(1)
        assert not waited, "its second long chat waits for its first, on another host"
    waiting.join(30)
    assert answers == [200] and waited == [200]


def test_the_rest_after_a_long_chat_holds_on_every_host(redis_store, tmp_path):
    rested = {**LONG, "CLIENT_REST_FACTOR": 1000, "LONG_CHAT_WAIT_SECONDS": 0.5}
    first, second = host(tmp_path, "first", redis_store, **rested), host(tmp_path, "second", redis_store, **rested)
    assert visitor(first, 1).get("/compare/receipt?window=9000").status_code == 200
    response = visitor(second, 1).get("/compare/receipt?window=9100")
    assert response.status_code == 429 and int(response.headers["Retry-After"]) >= 2
    assert visitor(second, 2).get("/compare/receipt?window=9100").status_code == 200


def test_pastes_are_counted_for_a_client_across_hosts(redis_store, tmp_path):
    first = host(tmp_path, "first", redis_store, PASTE_RATE_LIMIT="2 per minute")
    second = host(tmp_path, "second", redis_store, PASTE_RATE_LIMIT="2 per minute")
    assert visitor(first, 1).post("/transcripts", data={"transcript": CHAT}).status_code == 303
    assert visitor(second, 1).post("/transcripts", data={"transcript": CHAT}).status_code == 303
    refused = visitor(first, 1).post("/transcripts?lang=zh", data={"transcript": CHAT})
    assert refused.status_code == 429 and 0 < int(refused.headers["Retry-After"]) <= 60
    assert "1分钟" in refused.get_data(as_text=True).replace(" ", "")
    assert visitor(second, 2).post("/transcripts", data={"transcript": CHAT}).status_code == 303, "another address has its own count"


def test_a_summarizer_failure_seen_by_one_host_spares_the_other_a_call(redis_store, tmp_path):
    for endpoint in serve_fake():
        endpoint.mode = "error"
        summarizer = {"SUMMARIZER_URL": endpoint.url, "SUMMARIZER_MODEL": "m"}
        first, second = host(tmp_path, "first", redis_store, **summarizer), host(tmp_path, "second", redis_store, **summarizer)
        assert first.test_client().get("/play/summary-forgets?call=6&strategy=summarize").status_code == 502
        assert len(endpoint.requests) == 1
        answer = second.test_client().get("/play/summary-forgets?call=6&strategy=summarize")
        assert answer.status_code == 502 and len(endpoint.requests) == 1, "the second host knew at once"


def test_redis_stopped_mid_run_costs_only_the_sharing_and_it_comes_back_by_itself(own_redis, tmp_path):
    # No rest after a long chat: what is counted here is the one computing.
    first = host(tmp_path, "first", own_redis.url, **LONG, LONG_CHAT_WAIT_SECONDS=0.5, CLIENT_REST_FACTOR=0)
    second = host(tmp_path, "second", own_redis.url, **LONG, LONG_CHAT_WAIT_SECONDS=0.5, CLIENT_REST_FACTOR=0)
    own_redis.stop()
    for app in (first, second):
        client = visitor(app, 1)
        assert client.get("/").status_code == 200 and client.get("/play/bike-shop?call=5").status_code == 200
        assert client.get("/compare/receipt").status_code == 200, "a long chat is computed with this process's share"
        assert client.post("/transcripts", data={"transcript": CHAT}).status_code == 303, "pastes are counted in memory"
    with holding(first, 1):
        # Without Redis, each host counts its own: the same visitor's long chat on the other host is computed.
        assert visitor(second, 1).get("/compare/receipt?window=9000").status_code == 200
        assert visitor(first, 1).get("/compare/receipt?window=9100").status_code == 429, "one host still counts its own"
    own_redis.start()
    answered = time.monotonic() + 10  # each process asks Redis again a second after it failed
    while not all(app.extensions["redis"].up() for app in (first, second)) and time.monotonic() < answered:
        time.sleep(0.2)
    with holding(first, 1):
        assert visitor(second, 1).get("/compare/receipt?window=9200").status_code == 429, "shared again, with no restart"
