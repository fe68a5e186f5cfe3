"""Compressed and cached answers: hashed static names cached for a year, compressed pages,
JSON and CSV, ETags with 304, and the security headers on every one of them."""

from __future__ import annotations

import gzip
import re

import pytest

from webapp import create_app
from webapp.web.delivery import hashed_copy

STATIC_LINK = re.compile(r'(?:href|src)="(/static/[^"]+)"')
YEAR = 365 * 24 * 3600


def static_links(client, path="/"):
    return STATIC_LINK.findall(client.get(path).get_data(as_text=True))


def test_pages_link_static_files_by_hashed_names_cached_for_a_year(client):
    links = static_links(client) + static_links(client, "/compare/bike-shop")
    assert {link.rsplit("/", 1)[1].split(".")[0] for link in links} >= {"app", "htmx", "compare"}
    for link in links:
        assert re.search(r"\.[0-9a-f]{12}\.(css|js|svg)$", link), link
        response = client.get(link)
        assert response.status_code == 200
        max_age = int(re.search(r"max-age=(\d+)", response.headers["Cache-Control"]).group(1))
        assert max_age >= YEAR and "immutable" in response.headers["Cache-Control"]
        assert response.headers["Content-Security-Policy"].startswith("default-src 'self'")
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_static_files_keep_their_plain_names_with_a_short_cache(client):
    response = client.get("/static/app.css")
    assert response.status_code == 200
    assert "immutable" not in response.headers["Cache-Control"]
    assert response.get_data() == client.get(next(link for link in static_links(client) if "/app." in link and link.endswith(".css"))).get_data()


def test_static_files_come_precompressed(client):
    htmx = next(link for link in static_links(client) if "htmx" in link)
    plain = client.get(htmx).get_data()
    response = client.get(htmx, headers={"Accept-Encoding": "gzip"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(response.get_data()) == plain
    assert len(response.get_data()) < len(plain) / 2


def test_a_changed_file_gets_a_new_name(tmp_path):
    (tmp_path / "app.css").write_text("body { color: black }")
    first_folder, first = hashed_copy(tmp_path)
    (tmp_path / "app.css").write_text("body { color: navy }")
    second_folder, second = hashed_copy(tmp_path)
    assert first["app.css"] != second["app.css"] and first_folder != second_folder
    assert (second_folder / second["app.css"]).read_text() == "body { color: navy }"


@pytest.mark.parametrize(
    "path, mimetype",
    [
        ("/play/long-haul?call=64", "text/html"),
        ("/compare/long-haul", "text/html"),
        ("/play/long-haul.json?call=64", "application/json"),
        ("/compare/long-haul.json", "application/json"),
        ("/compare/long-haul.csv", "text/csv"),
    ],
)
def test_pages_json_and_csv_are_compressed_when_the_browser_accepts_it(client, path, mimetype):
    plain = client.get(path)
    packed = client.get(path, headers={"Accept-Encoding": "gzip"})
    assert plain.status_code == packed.status_code == 200 and plain.mimetype == mimetype
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(packed.get_data()) == plain.get_data()
    if len(plain.get_data()) > 20_000:
        assert len(packed.get_data()) < len(plain.get_data()) / 4
    assert "Accept-Encoding" in packed.headers["Vary"]


@pytest.mark.parametrize("encoding", [None, "gzip", "br"])
def test_a_page_the_browser_holds_is_answered_304(client, encoding):
    headers = {"Accept-Encoding": encoding} if encoding else {}
    first = client.get("/play/bike-shop?call=5", headers=headers)
    assert first.status_code == 200 and first.headers["ETag"]
    again = client.get("/play/bike-shop?call=5", headers={**headers, "If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and again.get_data() == b""
    assert again.headers["Content-Security-Policy"] == first.headers["Content-Security-Policy"]
    assert {"HX-Request", "Accept-Encoding"} <= {part.strip() for part in again.headers["Vary"].split(",")}
    changed = client.get("/play/bike-shop?call=4", headers={**headers, "If-None-Match": first.headers["ETag"]})
    assert changed.status_code == 200


def test_the_fragment_and_the_page_of_one_url_have_different_etags(client):
    page = client.get("/play/bike-shop?call=5")
    fragment = client.get("/play/bike-shop?call=5", headers={"HX-Request": "true"})
    assert page.headers["ETag"] != fragment.headers["ETag"]
    # A browser holding the page never gets a 304 for the fragment, and the other way round.
    assert client.get("/play/bike-shop?call=5", headers={"HX-Request": "true", "If-None-Match": page.headers["ETag"]}).status_code == 200
    assert client.get("/play/bike-shop?call=5", headers={"If-None-Match": fragment.headers["ETag"]}).status_code == 200


def test_errors_are_never_cached_as_pages(client):
    response = client.get("/play/bike-shop?call=999")
    assert response.status_code == 400 and "ETag" not in response.headers


def test_the_dev_server_serves_static_files_as_they_are_on_disk(tmp_path):
    client = create_app({"TESTING": True, "DEBUG": True, "TRANSCRIPT_DIR": str(tmp_path)}).test_client()
    assert "/static/app.css" in static_links(client)
