"""Golden answers: what the app answers to a few hundred URLs, recorded so that a change of
structure that means to change no behaviour can prove it did not.

The URLs (every lesson at its key calls, every strategy, the JSON, CSV and download twins,
htmx fragments as a step and as a settings form send them, errors, three languages) are
chosen once, by `choose`, from the app's own JSON answers, and stored with a digest of each
answer in tests/golden/answers.json. tests/test_golden.py asks the same URLs again and
compares. When a change means to change what a page says, record again and explain each
difference in the commit:

    .venv/bin/python -m tests.golden update          # digests of the stored URLs, anew
    .venv/bin/python -m tests.golden dump DIR        # every answer written out, to diff two trees
    .venv/bin/python -m tests.golden choose          # the URL list itself, anew
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tempfile
from pathlib import Path

ANSWERS = Path(__file__).parent / "golden" / "answers.json"
LANGS = ("en", "fr", "zh")
# The headers an htmx answer is steered by, and the ones a cache must respect.
KEPT_HEADERS = ("Content-Type", "HX-Push-Url", "HX-Reswap", "HX-Retarget", "HX-Trigger", "Vary", "Content-Disposition", "Location")
# A pasted transcript, so the transcript pages have a link to answer for.
PASTE = {
    "messages": [
        {"role": "system", "content": "You answer questions about invoices."},
        {"role": "user", "content": "What is the total of invoice 4471?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{\"invoice\": 4471}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Invoice 4471: 3 items, total 812.40 EUR, due 2026-01-15. " * 30},
        {"role": "assistant", "content": "Invoice 4471 totals 812.40 EUR, due on 15 January."},
        {"role": "user", "content": "And who issued it?"},
        {"role": "assistant", "content": "Atelier Vélo, Lyon."},
    ]
}


def make_client():
    from webapp import create_app

    folder = tempfile.mkdtemp(prefix="golden-")
    return create_app({"TESTING": True, "TRANSCRIPT_DIR": folder}).test_client()


def paste(client) -> str:
    """The pasted transcript's scenario id (content-addressed, so the same on every run)."""
    answer = client.post("/transcripts", data={"transcript": json.dumps(PASTE)})
    location = answer.headers["Location"]
    return re.search(r"/play/(t-[0-9a-z-]+)", location).group(1)


def request(client, url: str, headers: dict[str, str] | None = None) -> dict:
    answer = client.get(url, headers=headers or {})
    body = answer.get_data()
    kept = {name: answer.headers[name] for name in KEPT_HEADERS if name in answer.headers}
    return {"status": answer.status_code, "headers": kept, "bytes": len(body), "sha256": hashlib.sha256(body).hexdigest(), "body": body}


def lessons(client) -> list[str]:
    """The ids of the lessons the home page lists."""
    return sorted(set(re.findall(r'href="/play/([a-z0-9-]+)"', client.get("/").text)))


def key_calls(client, scenario: str) -> list[int]:
    """A lesson's calls worth looking at, read from its JSON twin: the first and the last, and
    each where compaction changes the request, the request overflows or is rejected, or the
    lesson tells a story; a long lesson keeps its first, last and an even spread of the rest."""
    calls = client.get(f"/play/{scenario}.json").get_json()["calls"]
    key = {1, calls}
    for number in range(1, calls + 1):
        data = client.get(f"/play/{scenario}.json?call={number}").get_json()
        current = data["current"]
        if (current["compaction"] and current["compaction"]["tokens_after"] != current["compaction"]["tokens_before"]) or current["overflow"] or not current["valid"]:
            key.add(number)
        if data["story"].get("author"):
            key.add(number)
    key = sorted(key)
    if len(key) > 8:  # long lessons: their first, last and an even spread of the rest
        key = sorted({key[0], key[-1], *key[:: max(1, len(key) // 6)]})
    return key


def choose(client) -> list[dict]:
    """The URLs worth keeping an eye on, each as {url, send: the request headers}."""
    chosen: list[dict] = []

    def add(url: str, **headers: str) -> None:
        chosen.append({"url": url, "send": headers})

    scenarios = lessons(client)
    menu = re.search(r'<select[^>]*name="strategy".*?</select>', client.get("/play/bike-shop").text, re.S).group(0)
    strategies = list(dict.fromkeys(re.findall(r'<option value="([a-z-]+)"', menu)))
    for page in ("/", "/glossary", "/transcripts/new", "/favicon.ico"):
        for lang in LANGS:
            add(f"{page}?lang={lang}")
    for scenario in scenarios:
        key = key_calls(client, scenario)
        for number in key:
            for lang in LANGS:
                add(f"/play/{scenario}?call={number}&lang={lang}")
            add(f"/play/{scenario}.json?call={number}")
            add(f"/play/{scenario}?call={number}", **{"HX-Request": "true", "HX-Current-URL": f"http://localhost/play/{scenario}?call={max(1, number - 1)}"})
        middle = key[len(key) // 2]
        for strategy in strategies:
            add(f"/play/{scenario}?call={middle}&strategy={strategy}")
            add(f"/play/{scenario}.json?call={middle}&strategy={strategy}")
            add(f"/play/{scenario}/request.json?call={middle}&strategy={strategy}")
        add(f"/play/{scenario}?call={middle}&block=m3&lang=fr")
        add(f"/play/{scenario}?call={middle}&block=floor")
        add(f"/play/{scenario}?call={middle}&projector=1")
        add(f"/play/{scenario}?call={middle}&counter=o200k_base&keep=1&threshold=0.6")
        for lang in LANGS:
            add(f"/compare/{scenario}?call={middle}&lang={lang}")
        add(f"/compare/{scenario}.json?call={middle}")
        add(f"/compare/{scenario}.csv?call={middle}")
        add(f"/compare/{scenario}?call={middle}&cache=anthropic", **{"HX-Request": "true", "HX-Current-URL": f"http://localhost/compare/{scenario}?call={middle}"})
        add(f"/compare/{scenario}?call={middle}", **{"HX-Request": "true", "HX-Current-URL": f"http://localhost/play/{scenario}?call={middle}"})
        add(f"/play/{scenario}?call={middle}&strategy=summarize&window=6000", **{"HX-Request": "true", "HX-Trigger": "controls", "HX-Current-URL": f"http://localhost/play/{scenario}?call={middle}"})
        add(f"/play/{scenario}?call={middle}", **{"HX-Request": "true", "HX-Target": "table-view", "HX-Current-URL": f"http://localhost/play/{scenario}?call={middle}"})
    # Bad input, in each language: the 400s name the parameter, the 404s the page.
    for lang in LANGS:
        add(f"/play/bike-shop?call=99&window=5&strategy=nope&lang={lang}")
        add(f"/play/no-such-lesson?lang={lang}")
        add(f"/compare/bike-shop?price=-1&cache=nowhere&lang={lang}")
        add(f"/play/bike-shop?pin=m999&lang={lang}")
        add(f"/play/t-0000000000000000?lang={lang}")
    add("/play/bike-shop?block=zz9")
    add("/play/bike-shop?call=3", **{"HX-Request": "true", "HX-Target": "well"})
    add("/play/bike-shop?call=x", **{"HX-Request": "true", "HX-Target": "well"})
    add("/nowhere")
    add("/compare/bike-shop.csv?call=0")
    transcript = paste(client)
    for lang in LANGS:
        add(f"/play/{transcript}?lang={lang}")
    add(f"/play/{transcript}?call=2&keep=1&window=400")
    add(f"/play/{transcript}.json?call=2&keep=1&window=400")
    add(f"/compare/{transcript}?call=2&keep=1&window=400")
    add(f"/transcripts/{transcript}.json")
    return chosen


def answers(client, chosen: list[dict]) -> list[dict]:
    paste(client)
    return [{**each, **request(client, each["url"], each["send"])} for each in chosen]


def save(recorded: list[dict]) -> None:
    ANSWERS.parent.mkdir(exist_ok=True)
    kept = [{name: value for name, value in each.items() if name != "body"} for each in recorded]
    ANSWERS.write_text(json.dumps(kept, indent=1, ensure_ascii=False) + "\n")


def stored() -> list[dict]:
    return json.loads(ANSWERS.read_text())


def main(argv: list[str]) -> int:
    verb = argv[0] if argv else "update"
    client = make_client()
    if verb == "choose":
        save(answers(client, choose(client)))
    elif verb == "update":
        save(answers(client, [{"url": each["url"], "send": each["send"]} for each in stored()]))
    elif verb == "dump" and len(argv) == 2:
        out = Path(argv[1])
        out.mkdir(parents=True, exist_ok=True)
        for number, each in enumerate(answers(client, stored())):
            head = json.dumps({name: each[name] for name in ("url", "send", "status")}, ensure_ascii=False)
            (out / f"{number:04d}.txt").write_bytes(head.encode() + b"\n" + json.dumps(each["headers"]).encode() + b"\n" + each["body"])
    else:
        print(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
