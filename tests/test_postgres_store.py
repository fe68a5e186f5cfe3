"""Pasted transcripts in PostgreSQL (TRANSCRIPT_STORE=postgresql://…), against a real server:
hosts with empty folders of their own share one database; a server stopped mid-run, even
killed outright, gives 503 with Retry-After in the page's language and never a 500, the
lessons go on, and the store recovers by itself when the server returns, with no paste lost
that was answered with its link; processes forked after the store was made keep its totals
exact; the production server with two workers takes a paste through the real textarea.

The rules that hold for both stores are tested on both (the `stores` fixture) in
tests/test_transcript_store.py and tests/test_store_faults.py. The tests here that stop their
server run on a cluster of this module's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import logging
import multiprocessing
import os
import re
import threading
import time
import urllib.parse
from pathlib import Path

import psycopg
import psycopg_pool
import pytest

from tests.servers import ROLE, PostgresServer, empty_schema, production_server, started, with_settings
from webapp.core.inputs.store_faults import StoreUnreachable
from webapp.core.inputs.store_postgres import PostgresStore, postgres_fault
from webapp.core.inputs.store_rules import blocks

ROOT = Path(__file__).resolve().parents[1]
LESSONS = ["/", "/play/bike-shop?call=5", "/compare/bike-shop", "/transcripts/new"]


def chat(words: str) -> str:
    return json.dumps([{"role": "system", "content": "Tu es un agent. 你好"}, {"role": "user", "content": words},
                       {"role": "assistant", "content": "Bien reçu."}, {"role": "user", "content": "Et ensuite ?"},
                       {"role": "assistant", "content": "Rien."}], ensure_ascii=False)


def link(body: str) -> str:
    return "t-" + hashlib.sha256(body.encode()).hexdigest()[:16]


def text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))))


def host(url: str, folder: Path, **config):
    """An app as one host runs it: its own folder (which stays empty), the shared database."""
    from webapp import create_app

    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(folder), "TRANSCRIPT_STORE": url, **config})


@contextlib.contextmanager
def hosts(url: str, tmp_path: Path, count: int = 2, **config):
    apps = [host(url, tmp_path / f"host-{n}", **config) for n in range(count)]
    try:
        yield [app.test_client() for app in apps]
    finally:
        for app in apps:
            app.extensions["transcript_store"].close()


@pytest.fixture(scope="module")
def own_server():
    """A PostgreSQL of this module's own, which its tests stop and start."""
    server = started(PostgresServer)
    yield server
    server.remove()


@pytest.fixture
def own_url(own_server):
    if not own_server.running():  # a test that failed while it was stopped
        own_server.start()
    with empty_schema(own_server.url) as url:
        yield url


@pytest.fixture
def store_url(postgres_url):
    with empty_schema(postgres_url) as url:
        yield url


# --- Several hosts, one database ---------------------------------------------------------------


def test_hosts_with_empty_folders_of_their_own_share_pastes_and_removals(store_url, tmp_path):
    with hosts(store_url, tmp_path, TRANSCRIPT_STORE_MAX_BYTES=3 * 4096) as (first, second):
        bodies = [chat(f"hôte un, {n}") for n in range(3)]
        for body in bodies:
            assert first.post("/transcripts", data={"transcript": body}).status_code == 303
        for body in bodies:
            assert second.get(f"/play/{link(body)}?call=2").status_code == 200
            assert second.get(f"/transcripts/{link(body)}.json").get_data(as_text=True) == body
        # The second host pastes past the store's cap: the least recently used goes, and the
        # first host, which has it parsed in memory since it pasted it, now says it was removed.
        assert second.post("/transcripts", data={"transcript": chat("hôte deux")}).status_code == 303
        gone = first.get(f"/play/{link(bodies[0])}")
        assert gone.status_code == 410 and "to make room" in text(gone)
        assert first.get(f"/play/{link(chat('hôte deux'))}").status_code == 200
    assert not [path for path in tmp_path.rglob("*") if path.is_file()]  # nothing went to a folder


def test_the_same_paste_on_two_hosts_is_stored_once(store_url, tmp_path):
    with hosts(store_url, tmp_path) as (first, second):
        for client in (first, second, first):
            assert client.post("/transcripts", data={"transcript": chat("deux fois")}).status_code == 303
        store = first.application.extensions["transcript_store"]
        assert store.usage() == blocks(len(chat("deux fois").encode()))


# --- PostgreSQL stopped, killed, restarted -----------------------------------------------------


def assert_lessons_serve(client) -> None:
    for path in LESSONS:
        assert client.get(path).status_code == 200, path


def assert_unreachable(client, name: str) -> None:
    """A stored link and a paste while the database does not answer: 503 with Retry-After,
    in the page's language, the pasted text kept in the box."""
    for path in (f"/play/{name}", f"/play/{name}?call=2", f"/compare/{name}", f"/transcripts/{name}.json"):
        answer = client.get(path)
        assert answer.status_code == 503 and int(answer.headers["Retry-After"]) > 0, path
    english = client.get(f"/play/{name}")
    assert "Stored transcripts cannot be read right now" in text(english) and "Nothing stored is lost" in text(english)
    assert "Transcripts unavailable" in text(english)
    assert "ne répond pas" in text(client.get(f"/play/{name}?lang=fr"))
    assert "没有响应" in text(client.get(f"/play/{name}?lang=zh"))
    refused = client.post("/transcripts?lang=fr", data={"transcript": chat("pendant la panne")})
    assert refused.status_code == 503 and int(refused.headers["Retry-After"]) > 0
    assert "ne répond pas" in text(refused) and "pendant la panne" in refused.get_data(as_text=True)
    as_json = client.post("/transcripts", data={"transcript": chat("pendant la panne")}, headers={"Accept": "application/json"})
    assert as_json.status_code == 503 and as_json.is_json and "does not answer" in as_json.json["problems"][0]
    assert 'id="store-fault"' in client.get("/transcripts/new").get_data(as_text=True)  # told before pasting


def until_served(client, path: str, seconds: float = 15) -> int:
    """Asks `path` until it answers 200, as a visitor would; the last status."""
    deadline = time.monotonic() + seconds
    status = client.get(path).status_code
    while status != 200 and time.monotonic() < deadline:
        assert status == 503, status
        time.sleep(0.2)
        status = client.get(path).status_code
    return status


@pytest.mark.parametrize("room", ["play", "compare", "sweep"])
@pytest.mark.parametrize("htmx", [False, True], ids=["linked", "htmx"])
def test_a_lesson_reached_from_a_stored_transcript_serves_while_postgresql_does_not_answer(tmp_path, room, htmx):
    """The page a request came from (its Referer, or htmx's HX-Current-URL) only says which
    panels changed: a stored transcript there that cannot be read is no page before, and the
    lesson asked for answers as from any other page."""
    came_from = f"http://localhost/{room}/t-0123456789abcdef"
    headers = {"HX-Request": "true", "HX-Current-URL": came_from} if htmx else {"Referer": came_from}
    with hosts("postgresql://127.0.0.1:1/playground", tmp_path, count=1) as (client,):
        answer = client.get(f"/{room}/bike-shop?call=2", headers=headers)
        assert answer.status_code == 200, text(answer)
        assert "bike" in text(answer).lower()


@pytest.mark.parametrize("mode", ["fast", "immediate"], ids=["stopped", "killed"])
def test_postgresql_stopped_mid_run_answers_503_and_recovers_by_itself(own_server, own_url, tmp_path, mode):
    with hosts(own_url, tmp_path) as (first, second):
        kept = chat(f"avant l'arrêt {mode}")
        assert first.post("/transcripts", data={"transcript": kept}).status_code == 303
        assert second.get(f"/play/{link(kept)}").status_code == 200  # parsed, in the second host's memory
        own_server.stop(mode)
        for client in (first, second):
            assert_lessons_serve(client)
            assert_unreachable(client, link(kept))
        own_server.start()
        for client in (first, second):  # no restart of the app: it finds the server again
            assert until_served(client, f"/play/{link(kept)}") == 200
            assert client.get(f"/transcripts/{link(kept)}.json").get_data(as_text=True) == kept
        after = chat(f"après l'arrêt {mode}")
        assert second.post("/transcripts", data={"transcript": after}).status_code == 303
        assert first.get(f"/play/{link(after)}").status_code == 200
        assert 'id="store-fault"' not in first.get("/transcripts/new").get_data(as_text=True)


def test_a_restart_between_two_requests_is_not_seen_by_a_visitor(own_server, own_url, tmp_path):
    """The pooled connections a restart closed are found closed at their next use: that request
    runs again on a new connection instead of answering 503."""
    with hosts(own_url, tmp_path, count=1) as (client,):
        kept = chat("avant le redémarrage")
        assert client.post("/transcripts", data={"transcript": kept}).status_code == 303
        own_server.stop("fast")
        own_server.start()
        assert client.get(f"/play/{link(kept)}").status_code == 200
        own_server.stop("fast")
        own_server.start()
        assert client.post("/transcripts", data={"transcript": chat("après le redémarrage")}).status_code == 303


def paste_until(client, stop: threading.Event, prefix: str, answers: list) -> None:
    """Pastes new transcripts one after another until `stop`, noting each answer."""
    count = 0
    while not stop.is_set():
        body = chat(f"{prefix} {count}")
        answers.append((body, client.post("/transcripts", data={"transcript": body}).status_code))
        count += 1


def test_no_paste_answered_with_its_link_is_lost_when_postgresql_is_killed_mid_run(own_server, own_url, tmp_path):
    """Two hosts paste without pause while the server is killed and started again: every paste
    is answered 303 (stored) or 503 (nothing kept), never 500, and every 303 is readable from
    both hosts afterwards, byte for byte. (One client pastes here faster than a visitor may:
    the rate limit is lifted, as it is not what this test is about.)"""
    with hosts(own_url, tmp_path, PASTE_RATE_LIMIT="100000 per second") as clients:
        stop, answers = threading.Event(), [[], []]
        pasters = [threading.Thread(target=paste_until, args=(client, stop, f"hôte {n}", answers[n])) for n, client in enumerate(clients)]
        for paster in pasters:
            paster.start()
        try:
            time.sleep(1.0)
            own_server.stop("immediate")
            time.sleep(1.5)
            own_server.start()
            time.sleep(3.0)
        finally:
            stop.set()
            for paster in pasters:
                paster.join(60)
        statuses = [status for each in answers for _, status in each]
        assert set(statuses) <= {303, 503}, statuses
        assert 503 in statuses  # the outage was seen
        for each in answers:  # and each host pasted again after it
            assert [status for _, status in each][-1] == 303
        stored = [body for each in answers for body, status in each if status == 303]
        for client in clients:
            for body in stored:
                assert client.get(f"/transcripts/{link(body)}.json").get_data(as_text=True) == body


def test_an_app_started_while_postgresql_is_down_serves_the_lessons_then_the_store(own_server, own_url, tmp_path):
    own_server.stop("fast")
    with hosts(own_url, tmp_path, count=1) as (client,):  # gunicorn's workers boot all the same
        assert_lessons_serve(client)
        assert_unreachable(client, link(chat("jamais collé")))
        own_server.start()
        assert until_served(client, "/play/bike-shop") == 200
        deadline = time.monotonic() + 15
        while (status := client.post("/transcripts", data={"transcript": chat("enfin")}).status_code) == 503:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert status == 303 and client.get(f"/play/{link(chat('enfin'))}").status_code == 200


def test_a_read_only_database_serves_what_it_holds_and_refuses_pastes(store_url, tmp_path):
    """A standby, or a database set read-only: PostgreSQL refuses every write (SQLSTATE 25006)."""
    with hosts(store_url, tmp_path, count=1) as (client,):
        assert client.post("/transcripts", data={"transcript": chat("avant")}).status_code == 303
    read_only = with_settings(store_url, default_transaction_read_only="on")
    with hosts(read_only, tmp_path / "read-only", count=1) as (client,):
        assert_lessons_serve(client)
        assert client.get(f"/play/{link(chat('avant'))}?call=2").status_code == 200
        refused = client.post("/transcripts", data={"transcript": chat("après")})
        assert refused.status_code == 503 and refused.headers["Retry-After"] == "60"
        assert "cannot be written" in text(refused)


@contextlib.contextmanager
def role_of_its_own(server: PostgresServer, url: str, *rights: str):
    """`url` as a new role that is given only `rights` (GRANT statements, `{schema}` and
    `{role}` filled in) on the schema of `url`: yields a function that grants them again (on the
    tables made since) and the URL; the role is dropped afterwards."""
    with psycopg.connect(url) as connection:
        schema = connection.execute("SELECT current_schema()").fetchone()[0]
    role = f"rows_only_{os.getpid()}_{time.monotonic_ns()}"

    def grant() -> None:
        server.sql(*(right.format(schema=schema, role=role) for right in rights), database=ROLE)

    server.sql(f"CREATE ROLE {role} LOGIN")
    try:
        grant()
        yield grant, url.replace(f"//{ROLE}@", f"//{role}@", 1)
    finally:
        server.sql(f"DROP OWNED BY {role}", f"DROP ROLE {role}", database=ROLE)


# The rights docs/deployment.md names for a role that does not own the schema: its rows only.
ROWS_ONLY = ("GRANT USAGE ON SCHEMA {schema} TO {role}",
             "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO {role}")


def test_a_role_that_may_only_read_and_write_rows_serves_the_tables_an_owner_created(own_server, own_url, tmp_path):
    """The schema's owner starts the app once, which creates the tables; a role without CREATE
    on the schema then boots every worker, pastes and reads."""
    before = chat("collé par le propriétaire")
    with hosts(own_url, tmp_path / "owner", count=1) as (client,):
        assert client.post("/transcripts", data={"transcript": before}).status_code == 303
    with role_of_its_own(own_server, own_url, *ROWS_ONLY) as (_, rows_only):
        with hosts(rows_only, tmp_path / "rows-only", count=1) as (client,):
            assert client.get(f"/play/{link(before)}?call=2").status_code == 200
            after = chat("collé par un rôle sans CREATE")
            assert client.post("/transcripts", data={"transcript": after}).status_code == 303
            assert client.get(f"/transcripts/{link(after)}.json").get_data(as_text=True) == after
            assert 'id="store-fault"' not in client.get("/transcripts/new").get_data(as_text=True)


def test_a_role_that_cannot_create_the_missing_tables_boots_says_why_and_serves_once_they_exist(own_server, own_url, tmp_path, caplog):
    """No tables yet and a role that may not create them: the workers boot, the lessons serve, a
    stored link and a paste answer 503 (never 500), the log says what the role lacks; once the
    owner has made the tables, the same app serves without a restart."""
    with role_of_its_own(own_server, own_url, *ROWS_ONLY) as (grant, rows_only):
        with caplog.at_level(logging.WARNING, logger="webapp.store"), hosts(rows_only, tmp_path / "rows-only", count=1) as (client,):
            assert_lessons_serve(client)
            assert_unreachable(client, link(chat("jamais collé")))
            assert any("tables are missing and this role cannot create them" in record.getMessage() for record in caplog.records)
            with hosts(own_url, tmp_path / "owner", count=1) as (owner,):
                assert owner.get("/play/bike-shop").status_code == 200  # the owner's app made the tables
            grant()
            deadline = time.monotonic() + 15
            while (status := client.post("/transcripts", data={"transcript": chat("enfin")}).status_code) == 503:
                assert time.monotonic() < deadline
                time.sleep(0.2)
            assert status == 303 and client.get(f"/play/{link(chat('enfin'))}").status_code == 200


# --- Processes, pools and the writer's lock ----------------------------------------------------


def paste_in_a_fork(store: PostgresStore, bodies: list[str], clients: list[str]) -> None:
    try:
        for n, body in enumerate(bodies):
            store.save(body.encode(), clients[n % len(clients)])
    except BaseException:
        os._exit(1)
    os._exit(0)


def test_processes_forked_after_the_store_was_made_keep_its_totals_exact(store_url):
    """Each process opens a pool of its own after the fork, and the writers' lock keeps every
    total exact while they evict at once: the store's cap and each client's share hold."""
    store = PostgresStore(store_url, max_bytes=100_000, max_total_bytes=12 * 4096, max_client_bytes=5 * 4096)
    try:
        store.save(chat("avant le fork").encode(), "parent")  # the parent's pool is open
        clients = ["client-a", "client-b", "client-c"]
        context = multiprocessing.get_context("fork")
        workers = [context.Process(target=paste_in_a_fork, args=(store, [chat(f"{w} {n}") for n in range(12)], clients))
                   for w in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
        assert [worker.exitcode for worker in workers] == [0, 0, 0]
        bodies = dict(store._index.run(lambda db: db.execute("SELECT name, length(data) FROM bodies").fetchall()))
        rows = {name for (name,) in store._index.run(lambda db: db.execute("SELECT name FROM transcripts WHERE removed IS NULL").fetchall())}
        assert rows == set(bodies)
        assert store.usage() == sum(blocks(size) for size in bodies.values()) <= 12 * 4096
        assert all(store.usage(client) <= 5 * 4096 for client in clients)
        assert sum(store.usage(client) for client in [*clients, "parent"]) == store.usage()
    finally:
        store.close()


@pytest.mark.parametrize("error,answer", [
    (psycopg.errors.DiskFull("could not extend file"), "full"),
    (psycopg.errors.ReadOnlySqlTransaction("cannot execute INSERT in a read-only transaction"), "unwritable"),
    (psycopg.errors.AdminShutdown("terminating connection due to administrator command"), "unreachable"),
    (psycopg.errors.QueryCanceled("canceling statement due to statement timeout"), "unreachable"),
    (psycopg_pool.PoolTimeout("couldn't get a connection after 5.00 sec"), "unreachable"),
    (psycopg.errors.UniqueViolation("duplicate key value"), "a bug"),
], ids=["disk-full", "read-only", "shutdown", "statement-timeout", "pool-timeout", "bug"])
def test_what_each_error_of_postgresql_means_for_the_store(error, answer):
    """As psycopg raises them (the SQLSTATE PostgreSQL sends): a full disk is 507, a read-only
    database refuses pastes, a server that does not answer is unreachable, anything else is a
    bug, raised as it is (a full disk is not made for real here: PostgreSQL stops when its log
    cannot be written)."""
    fault = postgres_fault(error)
    found = "a bug" if fault is None else "unreachable" if isinstance(fault, StoreUnreachable) else "full" if fault.full else "unwritable"
    assert found == answer


# --- Configuration -----------------------------------------------------------------------------


def test_the_store_is_read_from_the_environment_and_a_wrong_one_is_named_without_its_password(store_url, tmp_path, monkeypatch):
    from webapp import create_app

    monkeypatch.setenv("TRANSCRIPT_STORE", store_url)
    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path)})
    try:
        assert isinstance(app.extensions["transcript_store"], PostgresStore)
    finally:
        app.extensions["transcript_store"].close()
    monkeypatch.setenv("TRANSCRIPT_STORE", "mysql://admin:s3cret@db.example/playground")
    with pytest.raises(ValueError, match="expected a postgresql:// URL") as refused:
        create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path)})
    assert "s3cret" not in str(refused.value)


# A password's pieces: libpq cuts a password with an unencoded "/" or "@" in two.
SECRETS = ("s3cret", "passw0rd")


@pytest.mark.parametrize("written", [
    "postgresql://playground:s3cret/passw0rd@127.0.0.1:1/playground",  # read as host "playground", port "s3cret"
    "postgresql://playground:s3cret@passw0rd@127.0.0.1:1/playground",  # read as host "passw0rd@127.0.0.1"
    "postgresql://playground:1234/s3cretpassw0rd@127.0.0.1:1/db",      # read as port 1234, database "s3cretpassw0rd@…"
    "postgresql://playground:s3cretpassw0rd@[fe80::1/playground",      # no "]": libpq quotes the whole URL
    "postgresql://playground:s3cret passw0rd@127.0.0.1:1/playground",  # a space: libpq quotes the password
    "postgresql://playground:s3cret%zzpassw0rd@127.0.0.1:1/playground",
], ids=["slash", "at", "digits-then-slash", "ipv6", "space", "percent"])
def test_a_url_libpq_misreads_stops_the_app_at_start_without_its_password(written, tmp_path, caplog):
    """A password with a character a URL reserves, not percent-encoded: the app does not start,
    and neither its message, nor its traceback, nor the log repeats any piece of the password."""
    import traceback

    from webapp import create_app

    with caplog.at_level(logging.DEBUG), pytest.raises(ValueError, match="TRANSCRIPT_STORE") as refused:
        create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path), "TRANSCRIPT_STORE": written})
    said = "".join(traceback.format_exception(refused.value)) + "\n".join(record.getMessage() for record in caplog.records)
    assert not [secret for secret in SECRETS if secret in said], said
    assert "percent-encode" in str(refused.value)


def test_a_password_percent_encoded_is_read_and_never_logged(store_url, tmp_path, caplog):
    """The same password written as a URL must be (%2F for "/", %40 for "@") is read; with the
    database down, the retries log where it is without the password."""
    with_password = store_url.replace("//playground@", "//playground:s3cret%2F%40passw0rd@", 1)
    with hosts(with_password, tmp_path / "up", count=1) as (client,):
        assert client.post("/transcripts", data={"transcript": chat("avec un mot de passe")}).status_code == 303
    down = with_password.replace(urllib.parse.urlsplit(store_url).netloc.rpartition("@")[2], "127.0.0.1:1", 1)
    with caplog.at_level(logging.DEBUG), hosts(down, tmp_path / "down", count=1) as (client,):
        assert client.get(f"/play/{link(chat('avec un mot de passe'))}").status_code == 503
        time.sleep(1.1)  # past the wait between two tries
        assert client.get(f"/play/{link(chat('avec un mot de passe'))}").status_code == 503
    assert any("127.0.0.1:1/playground" in record.getMessage() for record in caplog.records)
    assert not [record.getMessage() for record in caplog.records if any(secret in record.getMessage() for secret in SECRETS)]


# --- As it runs in production ------------------------------------------------------------------


def test_the_production_server_takes_a_paste_through_the_textarea_and_another_host_reads_it(page, own_server, own_url, tmp_path):
    body = chat("collé dans le navigateur")
    with production_server(tmp_path / "first", 2, TRANSCRIPT_STORE=own_url) as first, production_server(tmp_path / "second", 1, TRANSCRIPT_STORE=own_url) as second:
        page.goto(f"{first}/transcripts/new")
        page.fill("#transcript", body)
        page.click("#transcript-submit")
        page.wait_for_url(re.compile(r"/play/t-[0-9a-f]{16}"))
        name = urllib.parse.urlsplit(page.url).path.removeprefix("/play/")
        assert name == link(body)
        title = "Transcript: “collé dans le navigateur”"  # its first request, which every host reads
        page.goto(f"{second}/play/{name}?call=2")
        assert page.locator("h1").first.inner_text().startswith(title)
        own_server.stop("immediate")
        answer = page.goto(f"{second}/play/{name}?lang=fr")
        assert answer.status == 503 and int(answer.headers["retry-after"]) > 0
        assert "ne répond pas" in page.locator("main").inner_text()
        assert page.goto(f"{first}/play/bike-shop?call=5").status == 200  # the lessons go on
        own_server.start()
        deadline = time.monotonic() + 15
        while (answer := page.goto(f"{first}/play/{name}")).status == 503 and time.monotonic() < deadline:
            time.sleep(0.3)
        assert answer.status == 200 and page.locator("h1").first.inner_text().startswith(title)
