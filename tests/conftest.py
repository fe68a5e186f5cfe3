"""Shared fixtures: the Flask app and client, a live server, headless Chromium, and real
PostgreSQL and Redis servers (tests/servers.py) with a transcript store of either kind."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Without the background-networking flags Chromium keeps trying to reach Google's hosts,
# which this closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def app(tmp_path):
    from webapp import create_app

    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path / "transcripts")})


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture(scope="session")
def live_server(tmp_path_factory):
    """The app served on a free loopback port for the whole session; yields its base URL."""
    from werkzeug.serving import make_server

    from webapp import create_app

    transcripts = tmp_path_factory.mktemp("transcripts")
    server = make_server("127.0.0.1", 0, create_app({"TESTING": True, "TRANSCRIPT_DIR": str(transcripts)}), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture(scope="session")
def postgres_url():
    """A real PostgreSQL: the one scripts/test started (TEST_POSTGRES_URL), or a throwaway
    cluster for this session. Connects as a role that owns its database, no superuser."""
    from tests.servers import POSTGRES_URL, PostgresServer, session_server

    yield from session_server(POSTGRES_URL, PostgresServer)


@pytest.fixture(scope="session")
def redis_url():
    """A real Redis: the one scripts/test started (TEST_REDIS_URL), or a throwaway server for
    this session."""
    from tests.servers import REDIS_DATABASES, REDIS_URL, RedisServer, session_server

    # Each pytest-xdist worker its own database (gw0 the first...): `redis_store` empties it,
    # which must not empty another worker's shares and jobs mid-test.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    database = int(worker.removeprefix("gw")) % REDIS_DATABASES if worker.startswith("gw") else 0
    for url in session_server(REDIS_URL, RedisServer):
        yield url.rsplit("/", 1)[0] + f"/{database}"


@pytest.fixture
def redis_store(redis_url):
    """The session's Redis, emptied: a test starts with no share, count, job or result."""
    import redis

    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    client.close()
    return redis_url


@pytest.fixture
def own_redis():
    """A Redis of the test's own, which it may stop and start again."""
    from tests.servers import RedisServer, started

    server = started(RedisServer)
    yield server
    server.remove()


@pytest.fixture(params=["folder", "postgresql"])
def stores(request, tmp_path):
    """An empty transcript store of each kind (tests/stores.py): the folder with its SQLite
    index, then PostgreSQL, an empty schema of the session's server."""
    from tests.servers import empty_schema
    from tests.stores import FOLDER, Stores

    folder = tmp_path / "transcripts"
    if request.param == FOLDER:
        under_test = Stores(FOLDER, folder)
        yield under_test
        under_test.close()
        return
    with empty_schema(request.getfixturevalue("postgres_url")) as url:
        under_test = Stores(request.param, folder, url)
        yield under_test
        under_test.close()


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import expect

    # Two cores shared with the server and Chromium: a swap can take longer than Playwright's
    # 5-second default when the machine is busy; a slow page is not a failed behaviour.
    expect.set_options(timeout=15_000)
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


# The three screens every layout test looks at: a phone, a laptop, a projector (width: height).
SIZES = {390: 844, 1280: 800, 1920: 1080}


@pytest.fixture
def sized(browser, request):
    """A page at the width (and height) the test's `width` parameter names."""
    width = request.node.callspec.params["width"]
    context = browser.new_context(viewport={"width": width, "height": SIZES[width]}, reduced_motion="reduce")
    yield context.new_page()
    context.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    yield page
    context.close()


def pytest_runtest_setup(item):
    """Tests marked needs_seed run the seed's own code from ../shared/seeds (or $SEEDS_DIR).
    A checkout without the seeds skips them; CI, which always has them, fails instead."""
    if item.get_closest_marker("needs_seed") is None:
        return
    from tests.seed_reference import SeedMissing, seed_python_source

    try:
        seed_python_source()
    except SeedMissing as missing:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"the seed is not available: {missing}")


# scripts/test runs the tests on every core (pytest-xdist, `--dist loadfile`): a test file is one
# unit of work, so that its module fixtures (a crawl, a live server, a page measured on every
# screen) are made once. The longest files start first, so that none is left running alone at
# the end (docs/development.md: the durations); the others keep their order.
LONGEST_FIRST = ("tests/test_path.py", "tests/test_fit_browser.py", "tests/test_hostile_input.py", "tests/test_layout_browser.py", "tests/test_library_web.py", "tests/test_package.py")


def pytest_collection_modifyitems(items):
    for item in items:
        if "page" in getattr(item, "fixturenames", ()) or "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
    rank = {name: number for number, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))
