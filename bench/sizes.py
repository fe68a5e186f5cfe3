"""Bytes on the wire: each page raw and as sent compressed, static files with their caching,
and what a repeat visit costs (304 answers). In-process (Flask's test client), no server.

    .venv/bin/python bench/sizes.py
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    client = create_app({"TESTING": True, "TRANSCRIPT_DIR": tempfile.mkdtemp()}).test_client()
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
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
