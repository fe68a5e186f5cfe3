"""A transcript pasted through the real textarea, served by gunicorn with two workers, then by
a restarted server: every reload finds it, and its bytes come back exactly."""

from __future__ import annotations

import hashlib
import json
import urllib.request

from bench.server import get, serve

BODY = json.dumps(
    [
        {"role": "system", "content": "Tu es l'agent du magasin de vélos. 你好 👋"},
        {"role": "user", "content": "Où est ma commande n° 4471 ?"},
        {"role": "assistant", "content": "Elle est partie hier, livraison jeudi."},
        {"role": "user", "content": "Merci !"},
    ],
    ensure_ascii=False,
    indent=2,
)


def test_a_browser_paste_is_found_by_both_workers_and_after_a_restart(page, tmp_path):
    config = {"TRANSCRIPT_DIR": str(tmp_path / "transcripts")}
    # A textarea submits its lines with CRLF: the link is the hash of those exact bytes.
    sent = BODY.replace("\n", "\r\n").encode("utf-8")
    name = "t-" + hashlib.sha256(sent).hexdigest()[:16]
    with serve(workers=2, config=config) as (port, _):
        page.goto(f"http://127.0.0.1:{port}/transcripts/new")
        page.fill("#transcript", BODY)
        page.click("#transcript-submit")
        page.wait_for_url(f"**/play/{name}")
        # Sixteen new connections: gunicorn's two sync workers share them.
        statuses = [get(port, f"/play/{name}")[0] for _ in range(16)]
        assert statuses == [200] * 16
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/transcripts/{name}.json") as response:
            assert response.read() == sent
    with serve(workers=2, config=config) as (port, _):
        page.goto(f"http://127.0.0.1:{port}/play/{name}")
        assert page.locator("h1").first.inner_text().startswith("Transcript: “Où est ma commande n° 4471 ?”")
        assert [get(port, f"/play/{name}?call=2")[0] for _ in range(4)] == [200] * 4
