"""The transcript store keeps exact bytes, finds them from any worker and after a restart,
says why a link is dead, shares the disk fairly and never scans itself on a paste. The tests
that take `stores` run on both kinds of store (tests/stores.py): the folder and PostgreSQL."""

from __future__ import annotations

import hashlib
import io
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.core.inputs.store import TranscriptStore, client_key

MESSAGES = [
    {"role": "system", "content": "Tu es un agent. 你好 👋 \u2028 \u0000 e\u0301"},
    {"role": "user", "content": "Où est la commande 4471 ?"},
    {"role": "assistant", "content": "Elle est partie hier."},
]


def link(data: bytes) -> str:
    return "t-" + hashlib.sha256(data).hexdigest()[:16]


def new_app(directory: Path, **config):
    from webapp import create_app

    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(directory), **config})


def text(response) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.get_data(as_text=True)))


@pytest.mark.parametrize(
    "newline,bom",
    [("\r\n", ""), ("\r", ""), ("\n", "\ufeff"), ("\r\n", "\ufeff")],
    ids=["crlf", "cr", "bom", "crlf-bom"],
)
def test_a_paste_is_stored_byte_for_byte_and_found_by_every_worker(stores, newline, bom):
    body = bom + json.dumps(MESSAGES, ensure_ascii=False, indent=1).replace("\n", newline)
    data = body.encode("utf-8")
    pasting = stores.app().test_client()
    response = pasting.post("/transcripts", data={"transcript": body})
    assert response.status_code == 303
    assert response.headers["Location"] == f"/play/{link(data)}"  # the hash of the bytes sent
    # Another worker, or the server after a restart: a new app on the same store (with
    # PostgreSQL, another host, with a folder of its own that stays empty).
    other = stores.app().test_client()
    assert other.get(f"/play/{link(data)}").status_code == 200
    original = other.get(f"/transcripts/{link(data)}.json")
    assert original.status_code == 200 and original.get_data() == data


def test_an_uploaded_file_keeps_its_bytes_too(stores):
    data = "\ufeff".encode() + json.dumps(MESSAGES, ensure_ascii=False).replace(", ", ",\r").encode()
    client = stores.app().test_client()
    response = client.post("/transcripts", data={"file": (io.BytesIO(data), "chat.json")}, content_type="multipart/form-data")
    assert response.headers["Location"] == f"/play/{link(data)}"
    assert stores.app().test_client().get(f"/transcripts/{link(data)}.json").get_data() == data


def test_a_dead_link_says_whether_it_was_removed_or_never_stored(stores):
    bodies = [json.dumps(MESSAGES + [{"role": "user", "content": "x" * 3000 + str(n)}]) for n in range(3)]
    client = stores.app(TRANSCRIPT_STORE_MAX_BYTES=2 * 4096).test_client()
    for body in bodies:
        assert client.post("/transcripts", data={"transcript": body}).status_code == 303
    first = link(bodies[0].encode())
    restarted = stores.app(TRANSCRIPT_STORE_MAX_BYTES=2 * 4096).test_client()
    removed = restarted.get(f"/play/{first}")
    assert removed.status_code == 410  # Gone: it was stored here
    assert f"The transcript {first} was removed on" in text(removed) and "to make room" in text(removed)
    never = restarted.get("/play/t-00000000000000ff")
    assert never.status_code == 404 and "No transcript was ever stored as t-00000000000000ff" in text(never)
    assert restarted.get(f"/transcripts/{first}.json").status_code == 410
    # Pasting it again brings the same link back.
    assert restarted.post("/transcripts", data={"transcript": bodies[0]}).headers["Location"] == f"/play/{first}"
    assert restarted.get(f"/play/{first}").status_code == 200


def test_one_client_cannot_push_out_the_others(stores):
    app = stores.app(TRANSCRIPT_STORE_MAX_BYTES=16 * 4096, TRANSCRIPT_CLIENT_MAX_BYTES=4 * 4096)
    client = app.test_client()
    others = [json.dumps(MESSAGES + [{"role": "user", "content": f"visitor {n}"}]) for n in range(3)]
    for n, body in enumerate(others):
        client.post("/transcripts", data={"transcript": body}, environ_base={"REMOTE_ADDR": f"192.0.2.{n + 1}"})
    flood = [json.dumps(MESSAGES + [{"role": "user", "content": f"flood {n}"}]) for n in range(40)]
    for body in flood:  # one client, from addresses of one IPv6 /64
        response = client.post("/transcripts", data={"transcript": body}, environ_base={"REMOTE_ADDR": f"2001:db8::{len(body) % 7 + 1}"})
        assert response.status_code == 303  # the newest paste always works
    for body in others:
        assert client.get(f"/play/{link(body.encode())}").status_code == 200
    store = app.extensions["transcript_store"]
    assert store.usage(client_key("2001:db8::1")) <= 4 * 4096
    assert client.get(f"/play/{link(flood[-1].encode())}").status_code == 200
    assert client.get(f"/play/{link(flood[0].encode())}").status_code == 410  # removed to make room


def test_the_cap_counts_disk_blocks_not_file_sizes(stores):
    store = stores.store(max_total_bytes=10 * 4096)
    pasted = [json.dumps([{"role": "user", "content": str(n)}]).encode() for n in range(20)]
    names = [store.save(data).id for data in pasted]
    kept = [name for name in names if name in stores.stored()]
    assert sum(len(data) for data in pasted) < 1000
    assert store.usage() == sum(stores.disk(name) for name in kept) <= 10 * 4096
    assert len(kept) < 20  # tiny files still fill blocks: the oldest went
    assert kept == names[-len(kept):] and all(store.load(name) is not None for name in kept)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 2), st.integers(0, 3)), min_size=1, max_size=12))
def test_whatever_is_pasted_the_totals_count_exactly_what_the_store_holds(stores, pastes):
    """Pastes of any size from three clients, some the same again, some read back: the store's
    total and each client's are what the stored bodies take, within the cap and the shares."""
    store = stores.store(max_total_bytes=8 * 4096, max_client_bytes=4 * 4096)
    clients = [client_key(f"192.0.2.{n}") for n in range(3)]
    try:
        for content, who, blocks in pastes:
            data = json.dumps(MESSAGES + [{"role": "user", "content": f"{content} " + "b" * 4096 * blocks}]).encode()
            name = store.save(data, clients[who]).id
            assert store.load(name) is not None  # the newest paste is always kept
        held = stores.stored()
        assert store.usage() == sum(stores.disk(name) for name in held) <= 8 * 4096
        assert all(store.usage(client) <= 4 * 4096 for client in clients)
        assert sum(store.usage(client) for client in clients) == store.usage()
    finally:
        store.close()


def test_a_paste_neither_lists_nor_stats_the_store(tmp_path, monkeypatch):
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=3 * 4096)

    def refuse(*args, **kwargs):
        raise AssertionError("a paste listed the store")

    monkeypatch.setattr(Path, "glob", refuse)
    monkeypatch.setattr(Path, "iterdir", refuse)
    monkeypatch.setattr("os.scandir", refuse)
    monkeypatch.setattr("os.listdir", refuse)
    for n in range(8):
        assert store.load(store.save(json.dumps([{"role": "user", "content": str(n)}]).encode()).id) is not None


def test_an_oversize_multibyte_upload_is_called_too_large(tmp_path):
    client = new_app(tmp_path, TRANSCRIPT_MAX_BYTES=1000).test_client()
    data = json.dumps([{"role": "user", "content": "你好" * 400}], ensure_ascii=False).encode()
    assert len(data) > 1000 and data[:1001].decode("utf-8", "ignore").encode() != data[:1001]  # the cut splits a character
    response = client.post("/transcripts", data={"file": (io.BytesIO(data), "chat.json")}, content_type="multipart/form-data")
    assert response.status_code == 413
    assert "larger than the limit of 1,000 bytes" in text(response) and "UTF-8" not in text(response)


def test_a_paste_with_an_unknown_language_is_refused_before_it_is_stored(stores):
    client = stores.app().test_client()
    response = client.post("/transcripts?lang=xx", data={"transcript": json.dumps(MESSAGES)})
    assert response.status_code == 400 and "lang" in text(response)
    assert not stores.stored()
    assert client.post("/transcripts?lang=fr", data={"transcript": json.dumps(MESSAGES)}).headers["Location"].endswith("?lang=fr")
