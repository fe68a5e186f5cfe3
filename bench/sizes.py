"""Bytes on the wire: each page raw and as sent compressed, static files with their caching,
and what a repeat visit costs (304 answers); then the play page of the longest URL accepted
on a pasted 1,000-message transcript (bench/attacks/pins.py), whose links multiplied its
state (issue 26). In-process (Flask's test client), no server.

    .venv/bin/python bench/sizes.py
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.attacks.cost import agent_transcript  # noqa: E402
from bench.attacks.pins import worst_query  # noqa: E402
from webapp import create_app  # noqa: E402

PAGES = [
    ("home", "/", {}),
    ("long-haul play page", "/play/long-haul?call=64", {}),
    ("long-haul step fragment", "/play/long-haul?call=64", {"HX-Request": "true"}),
    ("long-haul comparison panel", "/compare/long-haul", {}),
    ("long-haul comparison JSON", "/compare/long-haul.json", {}),
    ("long-haul comparison CSV", "/compare/long-haul.csv", {}),
    ("bike-shop play page", "/play/bike-shop?call=5", {}),
]


def main() -> int:
    client = create_app({"TESTING": True, "TRANSCRIPT_DIR": tempfile.mkdtemp(), "REQUEST_CPU_SECONDS": 120, "REQUEST_WALL_SECONDS": 300}).test_client()
    print(f"{'page':30}{'raw':>10}{'gzip':>10}{'br':>10}{'zstd':>10}   repeat visit")
    for name, path, headers in PAGES:
        raw = client.get(path, headers=headers)
        sizes = [len(client.get(path, headers={**headers, "Accept-Encoding": encoding}).get_data()) for encoding in ("gzip", "br", "zstd")]
        again = client.get(path, headers={**headers, "If-None-Match": raw.headers.get("ETag", "")})
        print(f"{name:30}{len(raw.get_data()):>10,}" + "".join(f"{size:>10,}" for size in sizes) + f"   {again.status_code}, {len(again.get_data())} B")
    print(f"\n{'static file':52}{'raw':>8}{'br':>8}   Cache-Control")
    for link in dict.fromkeys(re.findall(r'(?:href|src)="(/static/[^"]+)"', client.get("/").get_data(as_text=True) + client.get("/compare/bike-shop").get_data(as_text=True))):
        raw = client.get(link)
        packed = client.get(link, headers={"Accept-Encoding": "br"})
        print(f"{link:52}{len(raw.get_data()):>8,}{len(packed.get_data()):>8,}   {raw.headers.get('Cache-Control')}")
    worst_url_page(client)
    return 0


def worst_url_page(client) -> None:
    """The play page of the longest URL accepted, at the last call of 1,000 messages."""
    transcript = agent_transcript(7)
    location = client.post("/transcripts", data={"transcript": json.dumps(transcript)}).headers["Location"]
    scenario_id = location.split("/play/")[1].split("?")[0]
    calls = client.get(f"/play/{scenario_id}.json").get_json()["calls"]
    path = f"/play/{scenario_id}?{worst_query(len(transcript['messages']) - 1, calls)}"
    page = client.get(path)
    packed = client.get(path, headers={"Accept-Encoding": "br"})
    print(f"\nthe longest URL accepted ({len(path):,} B) on 1,000 messages, call {calls}: {page.status_code}, "
          f"{len(page.get_data()):,} B raw, {len(packed.get_data()):,} B br, {page.get_data().count(b'href='):,} links")


if __name__ == "__main__":
    raise SystemExit(main())
