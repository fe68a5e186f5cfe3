"""The store degrades, never the site (issue 26): whatever state the transcript folder is in,
the app starts, the lessons play and stored transcripts read; a paste the store cannot keep
gets a 503 (507 when the disk is full) in the page's language, with nothing left behind.

Faults are real where this machine allows it: a tmpfs mounted for the test, remounted
read-only, or small enough to fill (the tests run as root, which ignores a folder's
permissions, so chmod would prove nothing); they are skipped where mounting is not permitted,
and the tests marked "injected" raise the OSError (EROFS, ENOSPC) at the store's file-writing
seam instead, so that each fault is covered everywhere. A corrupt index is garbage written
over its header; two processes meet it at once.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import html
import json
import logging
import multiprocessing
import os
import re
import sqlite3
import subprocess
import traceback
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from webapp.core.inputs.store import TranscriptStore, client_key, disk_bytes
from webapp.core.inputs.store_faults import StoreUnwritable
from webapp.core.inputs.store_index import ADOPTED, INDEX

LESSON = "/play/bike-shop"


def chat(words: str) -> str:
    return json.dumps([{"role": "system", "content": "Tu es un agent. 你好"}, {"role": "user", "content": words},
                       {"role": "assistant", "content": "Bien reçu."},
                       {"role": "user", "content": "Et ensuite ?"}, {"role": "assistant", "content": "Rien."}], ensure_ascii=False)


def link(body: str) -> str:
    return "t-" + hashlib.sha256(body.encode()).hexdigest()[:16]


def new_app(directory: Path, **config):
    from webapp import create_app

    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(directory), **config})


def text(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))))


@contextlib.contextmanager
def tmpfs(path: Path, size: str = "4m"):
    """A tmpfs of `size` mounted at `path` for the test; skips the test where mounting is not permitted."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True, text=True)
    if mounted.returncode:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)  # lazily: the app's index may still be open


def store_in_another_process(folder: Path, bodies: list[str]) -> None:
    """Paste `bodies` as a worker that has since stopped would have (no file left open on the mount)."""

    def paste() -> None:
        client = new_app(folder).test_client()
        os._exit(0 if all(client.post("/transcripts", data={"transcript": body}).status_code == 303 for body in bodies) else 1)

    worker = multiprocessing.get_context("fork").Process(target=paste)
    worker.start()
    worker.join(60)
    assert worker.exitcode == 0


def read_only(path: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(path)], check=True)


def fill(path: Path) -> None:
    """Write to the mount until the disk is full."""
    with contextlib.suppress(OSError), open(path / "filler", "wb", buffering=0) as filler:
        while True:
            filler.write(b"\0" * 4096)


def assert_site_up(client, stored: list[str]) -> None:
    assert client.get("/").status_code == 200
    assert client.get(LESSON).status_code == 200
    for name in stored:
        assert client.get(f"/play/{name}").status_code == 200
        assert client.get(f"/play/{name}?call=2").status_code == 200
        assert client.get(f"/compare/{name}").status_code == 200
        assert client.get(f"/transcripts/{name}.json").status_code == 200


def leftovers(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob(".*.partial"))


# --- A read-only store --------------------------------------------------------------------------


def test_a_read_only_store_starts_reads_and_refuses_pastes_with_a_503(tmp_path):
    folder = tmp_path / "store"
    with tmpfs(folder):
        kept = chat("déjà là")
        store_in_another_process(folder, [kept])
        read_only(folder)
        client = new_app(folder).test_client()  # today: sqlite3.OperationalError at start
        assert_site_up(client, [link(kept)])
        pasted = chat("nouveau")
        refused = client.post("/transcripts", data={"transcript": pasted})
        assert refused.status_code == 503 and refused.headers["Retry-After"]
        assert "cannot store a transcript now" in text(refused) and "every transcript already stored" in text(refused)
        assert "nouveau" in refused.get_data(as_text=True)  # the pasted text stays in the box
        form = client.get("/transcripts/new")
        assert form.status_code == 200 and 'id="store-fault"' in form.get_data(as_text=True)
        french = client.post("/transcripts?lang=fr", data={"transcript": pasted})
        assert french.status_code == 503 and "Rien de ce que vous avez envoyé n'a été gardé" in text(french)
        chinese = client.post("/transcripts?lang=zh", data={"transcript": pasted})
        assert chinese.status_code == 503 and "无法" in text(chinese)
        as_json = client.post("/transcripts", data={"transcript": pasted}, headers={"Accept": "application/json"})
        assert as_json.status_code == 503 and as_json.is_json
        assert as_json.json["status"] == 503 and "cannot store a transcript now" in as_json.json["problems"][0]


def test_a_store_folder_that_cannot_be_created_still_lets_the_site_start(tmp_path):
    with tmpfs(tmp_path / "disk"):
        read_only(tmp_path / "disk")
        client = new_app(tmp_path / "disk" / "transcripts").test_client()  # today: OSError at start
        assert_site_up(client, [])
        assert client.post("/transcripts", data={"transcript": chat("x")}).status_code == 503
        assert client.get(f"/play/{link(chat('x'))}").status_code == 404


def test_a_store_that_becomes_writable_again_takes_pastes_again(tmp_path):
    folder = tmp_path / "store"
    with tmpfs(folder):
        read_only(folder)
        client = new_app(folder).test_client()
        assert client.post("/transcripts", data={"transcript": chat("plus tard")}).status_code == 503
        subprocess.run(["mount", "-o", "remount,rw", str(folder)], check=True)
        assert client.post("/transcripts", data={"transcript": chat("plus tard")}).status_code == 303
        assert client.get(f"/play/{link(chat('plus tard'))}").status_code == 200
        assert 'id="store-fault"' not in client.get("/transcripts/new").get_data(as_text=True)


# --- A full disk --------------------------------------------------------------------------------


def test_a_full_disk_refuses_pastes_with_a_507_and_reads_go_on(tmp_path):
    folder = tmp_path / "store"
    with tmpfs(folder, size="1m"):
        kept = [chat(f"déjà là {n}") for n in range(3)]
        store_in_another_process(folder, kept)
        fill(folder)
        client = new_app(folder).test_client()  # a fresh worker: every read records its use
        for _ in range(3):
            assert_site_up(client, [link(body) for body in kept])  # today: 500, the use is written to SQLite
        refused = client.post("/transcripts?lang=zh", data={"transcript": chat("x" * 20_000)})
        assert refused.status_code == 507 and "磁盘已满" in text(refused)
        assert "full" in text(client.post("/transcripts", data={"transcript": chat("y" * 20_000)}))
        assert leftovers(folder) == [] and not (folder / f"{link(chat('x' * 20_000))}.json").exists()


@pytest.mark.parametrize("code,status", [(errno.ENOSPC, 507), (errno.EROFS, 503)], ids=["injected-full", "injected-read-only"])
def test_a_failed_write_answers_and_leaves_nothing_behind(tmp_path, monkeypatch, code, status):
    """Injected: the OSError is raised by the store's file write (its seam), on any machine."""
    client = new_app(tmp_path).test_client()
    kept = chat("avant")
    assert client.post("/transcripts", data={"transcript": kept}).status_code == 303
    write_bytes = Path.write_bytes

    def failing(self, data):
        if self.name.endswith(".partial"):
            write_bytes(self, data[: len(data) // 2])  # half written, as a full disk leaves it
            raise OSError(code, os.strerror(code), str(self))
        return write_bytes(self, data)

    monkeypatch.setattr(Path, "write_bytes", failing)
    refused = client.post("/transcripts", data={"transcript": chat("après")})
    assert refused.status_code == status  # today: 500
    assert leftovers(tmp_path) == []  # today: the .partial stays
    assert client.get(f"/play/{link(kept)}").status_code == 200
    monkeypatch.undo()
    assert client.post("/transcripts", data={"transcript": chat("après")}).status_code == 303


# --- What a killed worker leaves ----------------------------------------------------------------


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def test_partial_files_are_cleaned_and_unindexed_files_adopted_at_start(tmp_path):
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1_000_000)
    pasted = store.save(chat("indexé").encode(), client_key("192.0.2.1")).id
    orphans = [chat(f"jamais indexé {n}") for n in range(3)]  # a worker killed between writing and indexing
    for body in orphans:
        (tmp_path / f"{link(body)}.json").write_text(body)
    abandoned = tmp_path / f".{link(chat('coupé'))}.{dead_pid()}.1.partial"
    abandoned.write_text(chat("coup")[:20])
    in_progress = tmp_path / f".{link(chat('en cours'))}.{os.getpid()}.1.partial"  # a live writer's
    in_progress.write_text("[")
    restarted = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1_000_000)
    assert not abandoned.exists() and in_progress.exists()  # today: both stay
    adopted = sum(disk_bytes(tmp_path / f"{link(body)}.json") for body in orphans)
    assert restarted.usage(ADOPTED) == adopted  # today: 0, outside every quota
    assert restarted.usage() == adopted + disk_bytes(restarted.path(pasted))
    assert all(restarted.load(link(body)) is not None for body in orphans)


def test_adopted_files_count_inside_the_store_cap(tmp_path):
    bodies = [chat(f"{n} " + "z" * 5000) for n in range(6)]
    for n, body in enumerate(bodies):
        path = tmp_path / f"{link(body)}.json"
        path.write_text(body)
        os.utime(path, (1_000_000 + n, 1_000_000 + n))
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=4 * 8192)
    assert store.usage() <= 4 * 8192
    assert not (tmp_path / f"{link(bodies[0])}.json").exists() and (tmp_path / f"{link(bodies[-1])}.json").exists()


# --- A corrupt index ----------------------------------------------------------------------------


def corrupt(directory: Path) -> None:
    with open(directory / INDEX, "r+b") as index:
        index.write(b"this is not SQLite's header, nor any database's" * 4)


def test_a_corrupt_index_at_start_is_copied_aside_and_rebuilt_from_the_files(tmp_path, caplog):
    bodies = [chat(f"gardé {n}") for n in range(3)]
    client = new_app(tmp_path).test_client()
    for body in bodies:
        assert client.post("/transcripts", data={"transcript": body}).status_code == 303
    corrupt(tmp_path)
    with caplog.at_level(logging.ERROR, logger="webapp.store"):
        restarted = new_app(tmp_path).test_client()  # today: sqlite3.DatabaseError, no worker boots
    assert_site_up(restarted, [link(body) for body in bodies])
    [aside] = tmp_path.glob(f"{INDEX}.corrupt-*")
    assert aside.read_bytes().startswith(b"this is not SQLite's header")  # kept, never silently lost
    assert any(str(aside) in record.getMessage() for record in caplog.records)
    store = restarted.application.extensions["transcript_store"]
    assert store.usage() == sum(disk_bytes(store.path(link(body))) for body in bodies)
    assert restarted.post("/transcripts", data={"transcript": chat("après")}).status_code == 303


def meet_the_corrupt_index(directory: str, name: str, ready, go, answers) -> None:
    store = TranscriptStore(Path(directory), max_bytes=100_000, max_total_bytes=1_000_000)
    store.usage()  # connected before the index is corrupted
    ready.wait()
    go.wait()
    try:
        answers.put((store.missing(name).why, store.usage(), store.save(chat(f"{os.getpid()}").encode()).id))
    except Exception:  # the test reports what the process met
        answers.put(traceback.format_exc())


def test_two_processes_meeting_a_corrupt_index_repair_it_once(tmp_path):
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1_000_000)
    kept = store.save(chat("gardé").encode()).id
    context = multiprocessing.get_context("fork")
    ready, go, answers = context.Barrier(3), context.Event(), context.Queue()
    workers = [context.Process(target=meet_the_corrupt_index, args=(str(tmp_path), "t-00000000000000ff", ready, go, answers))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    ready.wait()
    corrupt(tmp_path)
    go.set()
    results = [answers.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(30)
    assert all(isinstance(result, tuple) for result in results), results  # today: DatabaseError in both
    assert [result[0] for result in results] == ["never", "never"]
    assert len(list(tmp_path.glob(f"{INDEX}.corrupt-*"))) == 1  # repaired once, by one of them
    assert sqlite3.connect(tmp_path / INDEX).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    fresh = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1_000_000)
    names = [kept, *(result[2] for result in results)]
    assert all(fresh.load(name) is not None for name in names)
    assert fresh.usage() == sum(disk_bytes(fresh.path(name)) for name in names)


# --- A file deleted behind the index ------------------------------------------------------------


def test_a_file_deleted_behind_the_index_is_gone_and_uncharged(stores):
    app = stores.app()
    client = app.test_client()
    body = chat("supprimé à la main")
    visitor = {"REMOTE_ADDR": "192.0.2.7"}
    assert client.post("/transcripts", data={"transcript": body}, environ_base=visitor).status_code == 303
    assert client.get(f"/play/{link(body)}").status_code == 200
    stores.delete_body(link(body))  # the file, or the body's row in PostgreSQL
    gone = client.get(f"/play/{link(body)}")
    assert gone.status_code == 410  # today: 404, "never stored here"
    assert "was removed: its file was deleted" in text(gone)
    assert client.get(f"/transcripts/{link(body)}.json").status_code == 410
    assert client.get(f"/play/{link(body)}?lang=fr").status_code == 410
    assert app.extensions["transcript_store"].usage(client_key("192.0.2.7")) == 0  # today: still charged


def test_a_file_deleted_while_the_server_was_stopped_is_uncharged_at_start(tmp_path):
    store = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1_000_000)
    names = [store.save(chat(f"{n}").encode(), client_key("192.0.2.8")).id for n in range(2)]
    store.path(names[0]).unlink()
    restarted = TranscriptStore(tmp_path, max_bytes=100_000, max_total_bytes=1_000_000)
    assert restarted.usage(client_key("192.0.2.8")) == disk_bytes(restarted.path(names[1]))
    assert restarted.missing(names[0]).why == "deleted"


# --- Whatever fails, the index counts what the disk holds ---------------------------------------


@contextlib.contextmanager
def failing(step: str | None):
    """Injected: the paste's file write or its rename into place fails with ENOSPC."""
    if step is None:
        yield
        return
    original = getattr(Path, step)

    def fail(self, *args):
        if self.name.endswith(".partial"):
            if step == "write_bytes":
                original(self, args[0][:7])  # a half-written file, as a full disk leaves it
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return original(self, *args)

    with mock.patch.object(Path, step, fail):
        yield


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 7), st.sampled_from([None, None, "write_bytes", "replace"])), min_size=1, max_size=14))
def test_whatever_write_fails_the_index_counts_exactly_the_files_on_disk(tmp_path_factory, pastes):
    folder = tmp_path_factory.mktemp("store")
    store = TranscriptStore(folder, max_bytes=100_000, max_total_bytes=6 * 4096, max_client_bytes=4 * 4096)
    clients = [client_key("192.0.2.1"), client_key("192.0.2.2")]
    for content, step in pastes:
        with failing(step), contextlib.suppress(StoreUnwritable):
            store.save(chat(f"{content}").encode(), clients[content % 2])
    files = list(folder.glob("t-*.json"))
    assert store.usage() == sum(disk_bytes(path) for path in files) <= 6 * 4096
    assert all(store.usage(client) <= 4 * 4096 for client in clients)
    assert leftovers(folder) == []
    assert TranscriptStore(folder, max_bytes=100_000, max_total_bytes=6 * 4096).usage(ADOPTED) == 0  # nothing unindexed


# --- What a person sees -------------------------------------------------------------------------


def test_a_person_pasting_on_a_read_only_store_is_told_and_keeps_the_text(page, tmp_path):
    from bench.server import serve

    folder = tmp_path / "store"
    with tmpfs(folder):
        kept = chat("déjà là")
        store_in_another_process(folder, [kept])
        read_only(folder)
        with serve(workers=1, config={"TRANSCRIPT_DIR": str(folder)}, error_log=str(tmp_path / "gunicorn.log")) as (port, _):
            page.goto(f"http://127.0.0.1:{port}/transcripts/new?lang=fr")
            assert page.locator("#store-fault").is_visible()  # told before pasting
            page.fill("#transcript", chat("nouveau"))
            page.click("#transcript-submit")
            assert "Tout le reste fonctionne" in page.locator("#store-fault").inner_text()
            assert page.input_value("#transcript") == chat("nouveau")
            page.goto(f"http://127.0.0.1:{port}/play/{link(kept)}")
            assert page.locator("h1").first.inner_text().startswith(f"Transcript {link(kept)}")


def test_every_gunicorn_worker_boots_on_a_corrupt_index_and_serves_the_stored_transcripts(tmp_path):
    """A real gunicorn with the production settings, two workers, each building the app on the
    corrupt index at once (today: every worker fails to boot and gunicorn exits)."""
    from bench.server import get, serve

    folder = tmp_path / "store"
    bodies = [chat(f"servi {n}") for n in range(4)]
    store_in_another_process(folder, bodies)
    corrupt(folder)
    with serve(workers=2, production=True, config={"TRANSCRIPT_DIR": str(folder)}, error_log=str(tmp_path / "gunicorn.log")) as (port, _):
        # New connections, so both workers answer some of them.
        assert {get(port, "/")[0] for _ in range(8)} == {200}
        assert {get(port, f"/play/{link(body)}")[0] for body in bodies for _ in range(2)} == {200}
        assert len(list(folder.glob(f"{INDEX}.corrupt-*"))) == 1
