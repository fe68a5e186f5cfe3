"""The page a sweep past its budget answers, as a phone, a laptop and a projector show it: its
lighter sweeps are buttons inside the panel, and the page never scrolls sideways."""

from __future__ import annotations

import threading

import pytest

from tests.conftest import SIZES
from webapp.core.model import LANGUAGES


@pytest.fixture(scope="module")
def tight_server(tmp_path_factory):
    """The app with no computing budget at all: every sweep is past it."""
    from werkzeug.serving import make_server

    from webapp import create_app

    app = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path_factory.mktemp("transcripts")), "REQUEST_CPU_SECONDS": 0})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_the_lighter_sweeps_of_a_422_fit_the_screen(sized, tight_server, width, lang):
    sized.goto(f"{tight_server}/sweep/long-haul?lang={lang}")
    panel = sized.locator(".problem").bounding_box()
    buttons = sized.locator(".ways-out .btn")
    assert buttons.count() == 2
    for index in range(2):
        box = buttons.nth(index).bounding_box()
        assert panel["x"] <= box["x"] and box["x"] + box["width"] <= panel["x"] + panel["width"], f"button {index} runs past the panel"
    assert sized.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
