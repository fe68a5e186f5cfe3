"""Long work as jobs (web/jobs.py), against real processes and a real Redis and PostgreSQL: a
long chat's sweep page answers at once with a progress bar that advances, then shows the result,
which is kept by its inputs for the next visitor on any host; a job started on one host is seen
finished on the other; one client has one job computing at a time; a Redis stopped mid-run and
started again loses nothing."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench.transcript import generate_transcript
from tests import long_chats
from tests.servers import empty_schema
from webapp import create_app

ROOT = Path(__file__).resolve().parents[1]
JOBS = {"TESTING": True, "JOB_MESSAGES": 50}  # the 120-message chats below are long: their sweeps are jobs
HTMX_POLL = {"HX-Request": "true", "HX-Trigger": "job-progress", "HX-Target": "sweep-panel"}
PROGRESS = re.compile(r'<progress id="job-progress-bar" max="100" value="(\d+)"')


def chat(seed: int = 7) -> str:
    return json.dumps(generate_transcript(120, seed=seed), ensure_ascii=False)


def host(tmp_path: Path, name: str, **config):
    return create_app({**JOBS, "TRANSCRIPT_DIR": str(tmp_path / name / "transcripts"), **config})


def visitor(app, number: int = 1):
    return long_chats.visitor(app, number, network="10.0.1")


def sweep_url(client, body: str) -> str:
    answer = client.post("/transcripts", data={"transcript": body})
    assert answer.status_code == 303, answer.get_data(as_text=True)[:500]
    return answer.headers["Location"].split("?")[0].replace("/play/", "/sweep/")


def progress_of(response) -> int | None:
    """The progress bar's value, or None when the page shows no bar."""
    found = PROGRESS.search(response.get_data(as_text=True))
    return int(found.group(1)) if found else None


def until_done(client, url: str, seconds: float = 240, during=None):
    """Polls the page as its progress bar does (htmx, every ~second) until it shows the result;
    returns (the bar's values seen, the last answer). `during(n)` runs before the n-th poll."""
    seen: list[int] = []
    deadline = time.monotonic() + seconds
    for polls in range(10**6):
        if during is not None:
            during(polls)
        answer = client.get(url, headers={**HTMX_POLL, "HX-Current-URL": f"http://localhost{url}"})
        assert answer.status_code == 200, answer.get_data(as_text=True)[:800]
        value = progress_of(answer)
        if value is None:
            return seen, answer
        seen.append(value)
        assert time.monotonic() < deadline, f"no result after {seconds} s: {seen}"
        time.sleep(0.5)


def data(client, url: str):
    answer = client.get(f"{url}.json")
    assert answer.status_code == 200
    return answer.get_json()


@contextlib.contextmanager
def worker(redis: str, postgres: str, folder: Path):
    """`compaction-playground worker` in a process of its own, as an operator starts it."""
    # Its own folder for what it keeps while Redis does not answer, not the checkout's instance/.
    environment = {**os.environ, "LIMITS_STORE": redis, "JOB_QUEUE": "redis", "TRANSCRIPT_STORE": postgres, "PYTHONPATH": str(ROOT), "JOB_DIR": str(folder / "jobs")}
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "worker.log", "w") as log:
        process = subprocess.Popen([sys.executable, "-m", "webapp", "worker"], cwd=folder, env=environment, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        process.wait(30)


# --- One machine: the server's own processes ---------------------------------------------------


def test_a_long_chats_sweep_answers_at_once_with_a_bar_that_advances_then_the_result(tmp_path):
    app = host(tmp_path, "one")
    client = visitor(app)
    url = sweep_url(client, chat())
    first = client.get(url + "?lang=fr")
    page = first.get_data(as_text=True)
    assert first.status_code == 200 and progress_of(first) is not None
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in page, "without JavaScript the page refreshes itself"
    assert "Balayage de toutes les stratégies" in page and 'hx-trigger="every 1s"' in page
    assert 'id="advice"' not in page
    seen, done = until_done(client, url)
    assert seen == sorted(seen), "the bar never goes back"
    assert 'id="advice"' in done.get_data(as_text=True) and "<noscript><meta" not in done.get_data(as_text=True)
    # The same figures as the sweep computed in the request, by a server that makes no job of it.
    computed_here = host(tmp_path, "sync", JOB_MESSAGES=10_000, REQUEST_CPU_SECONDS=600, REQUEST_WALL_SECONDS=600).test_client()
    assert data(client, url) == data(computed_here, sweep_url(computed_here, chat()))


def test_a_long_chats_comparison_answers_at_once_with_a_bar_then_the_same_figures(tmp_path):
    """The comparison of a long chat is a job too: its replays are made in a job process and
    handed to the page, whose figures are those the comparison computed in the request gives."""
    app = host(tmp_path, "one")
    client = visitor(app)
    url = sweep_url(client, chat()).replace("/sweep/", "/compare/")
    first = client.get(url + "?lang=fr")
    page = first.get_data(as_text=True)
    assert first.status_code == 200 and progress_of(first) is not None
    assert "Comparaison de toutes les stratégies" in page and 'hx-target="#compare-panel"' in page
    assert '<noscript><meta http-equiv="refresh" content="2"></noscript>' in page
    assert 'id="verdict"' not in page
    seen, done = until_done(client, url)
    assert seen == sorted(seen) and 'id="verdict"' in done.get_data(as_text=True)
    stepped = client.get(url + "?call=3")
    assert progress_of(stepped) is None and 'id="verdict"' in stepped.get_data(as_text=True), "a step needs no new job"
    assert progress_of(client.get(url + "?price=3")) is None, "nor a new price: it changes no request"
    computed_here = host(tmp_path, "sync", JOB_MESSAGES=10_000).test_client()
    assert data(client, url) == data(computed_here, sweep_url(computed_here, chat()).replace("/sweep/", "/compare/"))
    restarted = visitor(host(tmp_path, "one"), 2)  # a new server on the same folder: the job's result is kept
    assert progress_of(restarted.get(url + "?call=2")) is None


def test_its_twins_answer_202_with_the_progress_until_the_result(tmp_path):
    client = visitor(host(tmp_path, "one"))
    url = sweep_url(client, chat())
    waiting = client.get(f"{url}.json")
    assert waiting.status_code == 202 and waiting.headers["Retry-After"] == "1"
    assert waiting.get_json()["state"] in ("queued", "running")
    assert client.get(f"{url}.csv").status_code == 202
    until_done(client, url)
    assert client.get(f"{url}.csv").status_code == 200 and data(client, url)["points"]


def test_the_result_is_kept_for_the_next_visitor_and_after_a_restart(tmp_path):
    app = host(tmp_path, "one")
    url = sweep_url(visitor(app), chat())
    visitor(app).get(url)
    until_done(visitor(app), url)
    again = visitor(app, 2).get(url + "?lang=zh")
    assert again.status_code == 200 and progress_of(again) is None and 'id="advice"' in again.get_data(as_text=True)
    restarted = host(tmp_path, "one")  # the same folder, a new server
    assert progress_of(visitor(restarted, 3).get(url)) is None
    other_prices = visitor(restarted, 3).get(url + "?price=3")
    assert progress_of(other_prices) is not None, "another price is another sweep"


def test_a_job_past_its_budget_says_what_to_change_and_offers_lighter_sweeps(tmp_path):
    client = visitor(host(tmp_path, "one", JOB_CPU_SECONDS=0))
    url = sweep_url(client, chat())
    client.get(url)
    for _ in range(240):
        answer = client.get(url + "?lang=fr")
        if answer.status_code != 200:
            break
        time.sleep(0.5)
    text = answer.get_data(as_text=True)
    assert answer.status_code == 422 and "Balayer toutes les stratégies" in text
    assert "Balayer à votre KEEP seulement" in text


# --- Several hosts: Redis ----------------------------------------------------------------------


def test_the_next_visitor_on_another_host_gets_the_result_at_once(redis_store, tmp_path):
    first, second = host(tmp_path, "first", LIMITS_STORE=redis_store), host(tmp_path, "second", LIMITS_STORE=redis_store)
    body = chat()
    url = sweep_url(visitor(first), body)
    sweep_url(visitor(second), body)  # the same paste, on the other host's own folder
    visitor(first).get(url)
    seen, _ = until_done(visitor(second, 2), url)
    assert seen, "the other host saw the job's progress"
    again = visitor(second, 3).get(url)
    assert progress_of(again) is None and 'id="advice"' in again.get_data(as_text=True)


def test_one_client_has_one_job_computing_at_a_time_across_hosts(redis_store, tmp_path):
    first, second = host(tmp_path, "first", LIMITS_STORE=redis_store), host(tmp_path, "second", LIMITS_STORE=redis_store)
    body = chat()
    url = sweep_url(visitor(first), body)
    sweep_url(visitor(second), body)
    assert progress_of(visitor(first, 1).get(url)) is not None
    waiting = visitor(second, 1).get(url + "?keeps=1&lang=fr")
    assert waiting.status_code == 200 and progress_of(waiting) == 0
    assert "En attente de votre tour" in waiting.get_data(as_text=True), "its second job waits for its first, on another host"
    assert visitor(second, 2).get(url + "?keeps=2").status_code == 200, "another client starts its own"
    assert visitor(second, 1).get(f"{url}.json?keeps=1").status_code == 202
    until_done(visitor(first, 1), url)
    _, done = until_done(visitor(second, 1), url + "?keeps=1")  # its turn came, then its result
    assert 'id="advice"' in done.get_data(as_text=True)


@pytest.fixture
def postgres_store(postgres_url):
    with empty_schema(postgres_url) as url:
        yield url


def test_a_job_started_on_one_host_is_computed_by_a_worker_and_seen_finished_on_the_other(redis_store, postgres_store, tmp_path):
    queued = {"LIMITS_STORE": redis_store, "JOB_QUEUE": "redis", "TRANSCRIPT_STORE": postgres_store}
    first, second = host(tmp_path, "first", **queued), host(tmp_path, "second", **queued)
    url = sweep_url(visitor(first), chat())
    with worker(redis_store, postgres_store, tmp_path / "worker"):
        assert progress_of(visitor(first).get(url)) is not None
        _, done = until_done(visitor(second, 2), url)
    assert 'id="advice"' in done.get_data(as_text=True)
    assert not list((tmp_path / "first" / "jobs").glob("*.result")), "the worker computed it, not the first host"


def test_redis_stopped_mid_run_and_started_again_loses_nothing(own_redis, postgres_store, tmp_path):
    queued = {"LIMITS_STORE": own_redis.url, "JOB_QUEUE": "redis", "TRANSCRIPT_STORE": postgres_store}
    first, second = host(tmp_path, "first", **queued), host(tmp_path, "second", **queued)
    url = sweep_url(visitor(first), chat())

    def outage(polls: int) -> None:
        if polls == 3:
            own_redis.stop()
            assert visitor(second).get("/sweep/bike-shop").status_code == 200, "the lessons serve"
        if polls == 8:
            own_redis.start()

    with worker(own_redis.url, postgres_store, tmp_path / "worker"):
        visitor(first).get(url)
        seen, done = until_done(visitor(second, 2), url, during=outage)
    # Redis stopped before poll 3 while the job was not done: an outage mid-run. (Who computes
    # it then, the worker or the host doing without Redis, is the machine's timing.)
    assert len(seen) > 3 and 'id="advice"' in done.get_data(as_text=True)
    # The other host's visitor gets it too: found in Redis, or, when the second host computed it
    # in its own folder while Redis was down (it publishes it at its next look), computed again
    # for them by the worker on the Redis that came back empty.
    with worker(own_redis.url, postgres_store, tmp_path / "worker"):
        _, also_done = until_done(visitor(first, 3), url)
    assert 'id="advice"' in also_done.get_data(as_text=True)


def test_a_job_process_ends_with_the_worker_that_owns_it(tmp_path):
    """A pool process whose worker is gone stops within a second or two (web/job_queue.py,
    `watch_owner`), instead of computing on for nobody; here the owner is a short process."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from webapp.web.job_queue import start_job_process

    owner = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("forkserver"), initializer=start_job_process,
                               initargs=({**JOBS, "TRANSCRIPT_DIR": str(tmp_path / "transcripts")}, owner.pid))
    computing = pool.submit(time.sleep, 120)
    owner.wait()
    started = time.monotonic()
    with pytest.raises(BrokenProcessPool):
        computing.result(timeout=30)
    assert time.monotonic() - started < 10
    pool.shutdown()


def test_a_result_kept_in_a_hosts_folder_while_redis_was_down_reaches_every_host(redis_store, tmp_path):
    """A result computed while Redis did not answer stays in that host's folder; once Redis
    answers, the first look at it publishes it, so another host finds it instead of queuing
    the job again (a worker that found it in its folder took the job for done, and the pages
    of every other host waited for ever)."""
    first, second = host(tmp_path, "first", LIMITS_STORE=redis_store), host(tmp_path, "second", LIMITS_STORE=redis_store)
    jobs_of = lambda app: app.extensions["job_store"]  # noqa: E731
    jobs_of(first).local.finish("k" * 40, b"the sweep")
    assert jobs_of(second).result("k" * 40) is None
    assert jobs_of(first).result("k" * 40) == b"the sweep"
    assert jobs_of(second).result("k" * 40) == b"the sweep"
