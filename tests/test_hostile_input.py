"""Hostile input through the web app: a scenario and a transcript whose every text is an
attack, a corpus of hostile values for every parameter of every route, and generated query
strings. Every answer is a 2xx or a 4xx with a message, never a 5xx; nothing a scenario, a
transcript or a URL holds reaches the page unescaped; every response carries the security
headers."""

from __future__ import annotations

import html
import io
import json
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_malformed_scenarios import BROKEN
from webapp.web.state import PRICING_PARAMS
from webapp.web.state import SETTING_PARAMS

HX = {"HX-Request": "true"}

# Each would run, inject or mislead if it reached the page as markup.
ATTACKS = [
    '<script>alert("s")</script>',
    "<img src=x onerror=alert(1)>",
    '" onmouseover="alert(2)" data-x="',
    "' onfocus='alert(3)' autofocus='",
    "</title></textarea></script><svg onload=alert(4)>",
    "javascript:alert(5)",
    "&lt;b&gt;entity&amp;",
    "{{ 7*7 }}{% if 1 %}jinja{% endif %}",
    "\u202eevil.exe\u202c \u200f rtl",
]
ENTITY = "&lt;b&gt;entity&amp;"
TEMPLATE = "{{ 7*7 }}"
MEGABYTE_LINE = "x" * 1_000_000
TEXT = " ".join(ATTACKS)
NUL = " nul:\u0000:"


def toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string (\u escapes included) is a TOML basic string


HOSTILE_TOML = f"""
id = "hostile"
title = {{ en = {toml_string("Title " + TEXT)}, fr = {toml_string("Titre " + TEXT)} }}
lesson = {toml_string("Lesson " + TEXT)}
system = {toml_string("System " + TEXT + NUL)}

[settings]
window = 2000
keep = 1
strategy = "truncate-drop"

[[tools]]
name = "lookup"
description = {toml_string(TEXT)}
parameters = {{ type = "object", properties = {{ q = {{ type = "string", description = {toml_string(TEXT)} }} }} }}
fetch_once = true

[[facts]]
text = {toml_string(ATTACKS[0])}
label = {toml_string(ATTACKS[1])}
needed_from_call = 2

[[narration]]
call = 2
text = {toml_string(TEXT)}

[[chat]]
user = {toml_string("First " + TEXT + NUL)}
digest = {toml_string("Digest " + TEXT)}

[[chat]]
assistant = {toml_string(TEXT)}
tool_calls = [{{ id = {toml_string("call-" + ATTACKS[2])}, name = "lookup", arguments = {{ q = {toml_string(TEXT)} }} }}]

[[chat]]
tool = {toml_string("call-" + ATTACKS[2])}
content = {toml_string(TEXT + " " + MEGABYTE_LINE)}

[[chat]]
assistant = {toml_string("Answer " + TEXT)}

[[chat]]
user = {toml_string("Second " + TEXT)}

[[chat]]
assistant = {toml_string("Last " + TEXT)}
"""

NESTED = json.loads("[" * 60 + json.dumps(TEXT) + "]" * 60)
HOSTILE_TRANSCRIPT = {
    "messages": [
        {"role": "system", "content": "System " + TEXT},
        {"role": "user", "content": [{"type": "text", "text": "Parts " + TEXT + NUL}], "name": "n" + ATTACKS[3], "meta": NESTED},
        {"role": "assistant", "content": None, "tool_calls": [{"id": ATTACKS[1], "type": "function", "function": {"name": "x" + ATTACKS[4], "arguments": json.dumps({"q": TEXT})}}]},
        {"role": "tool", "tool_call_id": ATTACKS[1], "content": TEXT},
        {"role": "assistant", "content": TEXT},
    ],
    "tools": [{"type": "function", "function": {"name": "x" + ATTACKS[4], "description": TEXT, "parameters": {"type": "object"}}}],
}


@pytest.fixture(scope="module")
def hostile_client(tmp_path_factory):
    from webapp import create_app

    directory = tmp_path_factory.mktemp("hostile")
    (directory / "hostile.toml").write_text(HOSTILE_TOML, encoding="utf-8")
    (directory / "hostile-transcript.json").write_text(json.dumps(HOSTILE_TRANSCRIPT), encoding="utf-8")
    # A broken file whose name and error both carry markup: the home page lists it.
    (directory / '<img src=x onerror=alert(6)>.toml').write_text(f'id = "broken"\n{toml_string(ATTACKS[0])} = 1\n', encoding="utf-8")
    return create_app({"TESTING": True, "SCENARIOS_DIR": directory, "TRANSCRIPT_DIR": str(directory / "pasted")}).test_client()


class Markup(HTMLParser):
    """Collects what an attack would need: scripts, handlers, inline styles, script URLs."""

    URL_ATTRIBUTES = {"href", "src", "action", "formaction", "hx-get", "hx-post", "xlink:href", "data"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []
        self.in_script = False
        self.bases = 0

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=…>: an event handler attribute")
            if name == "style":
                self.problems.append(f"<{tag} style=…>: an inline style")
            if name in self.URL_ATTRIBUTES and (value or "").strip().lower().startswith(("javascript:", "data:text")):
                self.problems.append(f"<{tag} {name}={value[:40]!r}>: a script URL")
        if tag == "script":
            source = dict(attrs).get("src") or ""
            if not source.startswith("/static/"):
                self.problems.append(f"<script src={source!r}>: not the app's own script")
            self.in_script = True
        if tag in {"img", "iframe", "object", "embed"}:
            self.problems.append(f"<{tag}>: the templates never use it, so it came from input")
        # The play page names its own address in one <base> (templates/play.html): a path of this site.
        if tag == "base" and (self.bases or not (dict(attrs).get("href") or "").startswith("/play/")):
            self.problems.append(f"<base {dict(attrs)!r}>: not the play page's own address")
        self.bases += tag == "base"

    def handle_endtag(self, tag):
        if tag == "script":
            self.in_script = False

    def handle_data(self, data):
        if self.in_script and data.strip():
            self.problems.append("an inline script body")


def assert_safe(response) -> str:
    """The response is a 2xx or a 4xx with a message, carries the security headers, and if it
    is HTML holds no markup that came from input."""
    assert response.status_code < 500, response.get_data(as_text=True)[:500]
    assert_security_headers(response)
    body = response.get_data(as_text=True)
    if response.status_code >= 400:
        assert "Traceback" not in body
        if response.mimetype == "text/html":
            assert 'class="panel problem"' in body and "<li>" in body, body[:500]
    if response.mimetype == "text/html":
        parser = Markup()
        parser.feed(body)
        assert parser.problems == []
        for attack in ATTACKS:
            if any(c in attack for c in "<>\"'&"):
                assert attack not in body, f"{attack!r} is in the page unescaped"
    else:
        assert response.mimetype in {"application/json", "text/csv", "text/css", "text/javascript", "application/javascript", "text/plain", "image/svg+xml"}, response.mimetype
    if response.mimetype == "application/json":
        strict_json(body)
    return body


def _not_json(name: str):
    raise AssertionError(f"{name} in a JSON answer: strict parsers refuse it")


def strict_json(text: str):
    """The answer parsed as strict JSON: no NaN, Infinity or -Infinity."""
    return json.loads(text, parse_constant=_not_json)


def assert_security_headers(response) -> None:
    headers = response.headers
    directives = dict((part.strip().split(" ", 1) + [""])[:2] for part in headers["Content-Security-Policy"].split(";") if part.strip())
    assert directives["default-src"] == "'self'"
    assert directives["script-src"] == "'self'", "only the app's own scripts: no inline script, no eval"
    assert directives["style-src"] == "'self'", "only the app's own styles: no inline style"
    assert directives["object-src"] == "'none'"
    assert directives["frame-ancestors"] in {"'none'", "'self'"}
    assert directives["base-uri"] in {"'none'", "'self'"}
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] in {"no-referrer", "same-origin", "strict-origin", "strict-origin-when-cross-origin"}


# --- A hostile scenario and transcript, on every page that shows them ------------------------


def hostile_urls(client, scenario_id: str) -> list[str]:
    data = client.get(f"/play/{scenario_id}.json").get_json()
    calls = data["calls"]
    urls = ["/", "/?lang=fr"]
    for call in range(1, calls + 1):
        current = client.get(f"/play/{scenario_id}.json?call={call}").get_json()["current"]
        blocks = [block["id"] for block in current["blocks"]] + ["floor"]
        urls += [f"/play/{scenario_id}?call={call}&block={block}" for block in blocks]
        urls += [
            f"/play/{scenario_id}?call={call}&lang=fr",
            f"/play/{scenario_id}?call={call}&strategy=summarize&keep_facts=1",
            f"/play/{scenario_id}?call={call}&strategy=naive-drop",
            f"/play/{scenario_id}.json?call={call}&strategy=summarize",
            f"/play/{scenario_id}/request.json?call={call}",
            f"/compare/{scenario_id}?call={call}",
            f"/compare/{scenario_id}.json?call={call}",
            f"/compare/{scenario_id}.csv?call={call}",
        ]
    return urls


@pytest.mark.parametrize("scenario_id", ["hostile", "hostile-transcript"])
def test_every_text_of_a_hostile_scenario_is_escaped_on_every_page(hostile_client, scenario_id):
    urls = hostile_urls(hostile_client, scenario_id)
    shown = {"entity": False, "template": False}
    for url in urls:
        for headers in ({}, HX):
            response = hostile_client.get(url, headers=headers)
            assert response.status_code == 200, (url, response.get_data(as_text=True)[:300])
            body = assert_safe(response)
            if response.mimetype == "text/html":
                # Shown as the literal text the scenario holds, not decoded, not evaluated.
                shown["entity"] |= "&amp;lt;b&amp;gt;entity&amp;amp;" in body
                shown["template"] |= TEMPLATE in body
                assert "jinja{% endif %}" in body or "jinja" not in body
    assert shown == {"entity": True, "template": True}


def test_the_json_twin_keeps_hostile_text_exactly(hostile_client):
    request = json.loads(hostile_client.get("/play/hostile/request.json?call=1").get_data(as_text=True))
    assert request["messages"][0]["content"] == "System " + TEXT + NUL
    assert request["messages"][1]["content"] == "First " + TEXT + NUL
    transcript = json.loads(hostile_client.get("/play/hostile-transcript/request.json?call=1").get_data(as_text=True))
    assert transcript["messages"][1] == HOSTILE_TRANSCRIPT["messages"][1]


def test_the_megabyte_line_is_shown_escaped_when_selected(hostile_client):
    response = hostile_client.get("/play/hostile?call=2&block=m3")
    body = assert_safe(response)
    assert "x" * 10_000 in body


def test_a_broken_file_with_markup_in_its_name_and_error_is_listed_escaped(hostile_client):
    body = assert_safe(hostile_client.get("/"))
    assert "&lt;img src=x onerror=alert(6)&gt;.toml" in body
    assert "&lt;script&gt;" in body


# --- Hostile values for every parameter of every route ---------------------------------------

ROUTES = [
    "/transcripts/new",
    "/play/bike-shop",
    "/play/bike-shop.json",
    "/play/bike-shop/request.json",
    "/compare/bike-shop",
    "/compare/bike-shop.json",
    "/compare/bike-shop.csv",
    "/",
]
PARAMS = [*SETTING_PARAMS, "call", "price", "block", "play", "speed", "lang", *PRICING_PARAMS, "unknown"]
VALUES = [
    *ATTACKS,
    "",
    " ",
    "-1",
    "0",
    "1e309",
    "-1e309",
    "1e-320",
    "nan",
    "inf",
    "99999999999999999999999999999",
    "9" * 5000,
    "0x10",
    "1_000",
    "٣",
    "１",
    "1.5",
    "true",
    "None",
    "[]",
    "{}",
    "%00",
    "\x00",
    "\x7f\x1b[31m",
    "é😀",
    "../../etc/passwd",
    "A" * 20_000,
]


@pytest.mark.parametrize("route", ROUTES)
def test_every_parameter_with_every_hostile_value(client, route):
    # HTMX asks for fragments of the HTML pages only.
    variants = ({},) if route.endswith((".json", ".csv")) else ({}, HX)
    for param in PARAMS:
        for value in VALUES:
            for headers in variants:
                assert_safe(client.get(route, query_string={param: value}, headers=headers))
    # Every parameter bad at once, and each repeated.
    for value in VALUES:
        assert_safe(client.get(route + "?" + urlencode([(param, value) for param in PARAMS] * 2)))


@pytest.mark.parametrize("value", VALUES + ["..", ".", "bike-shop.", "BIKE-SHOP", "bike-shop/", "a" * 5000])
@pytest.mark.parametrize("pattern", ["/play/{}", "/play/{}.json", "/play/{}/request.json", "/compare/{}", "/compare/{}.json", "/compare/{}.csv"])
def test_hostile_scenario_ids_in_the_path(client, pattern, value):
    url = pattern.format(quote(value, safe=""))
    for headers in ({}, HX):
        response = client.get(url, headers=headers)
        assert response.status_code in {200, 308, 404}, (url, response.status_code)
        assert_safe(response)


def test_other_methods_are_refused_with_a_message(client):
    for route in ROUTES[1:]:
        for method in ("post", "put", "delete", "patch"):
            response = getattr(client, method)(route, data={"window": ATTACKS[0]})
            assert response.status_code == 405
            assert_safe(response)


def test_static_files_and_missing_ones_carry_the_headers(client):
    for url in ["/static/app.js", "/static/app.css", "/static/vendor/htmx-2.0.11/htmx.min.js", "/static/nope.js", "/static/../webapp/__init__.py"]:
        response = client.get(url)
        assert response.status_code in {200, 404}
        assert_safe(response)


query_values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
query_strings = st.lists(st.tuples(st.sampled_from(PARAMS) | query_values, st.sampled_from(VALUES) | query_values), max_size=8)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(ROUTES), query=query_strings, htmx=st.booleans())
def test_generated_query_strings_never_break_a_page(client, route, query, htmx):
    assert_safe(client.get(route + "?" + urlencode(query), headers=HX if htmx else {}))


# --- Uploaded and pasted transcripts ----------------------------------------------------------


def test_a_pasted_hostile_transcript_is_escaped_on_every_page(hostile_client):
    response = hostile_client.post("/transcripts", data={"transcript": json.dumps(HOSTILE_TRANSCRIPT)})
    assert response.status_code == 303
    scenario_id = response.headers["Location"].split("/play/")[1].split("?")[0]
    for url in hostile_urls(hostile_client, scenario_id):
        for headers in ({}, HX):
            response = hostile_client.get(url, headers=headers)
            assert response.status_code == 200, url
            assert_safe(response)


@pytest.mark.parametrize("case", [case for case in BROKEN if case[0].endswith(".json")], ids=lambda case: case[0])
def test_every_broken_transcript_pasted_or_uploaded_gets_a_400_naming_the_field(client, app, case):
    name, content, where, what = case
    for data in ({"transcript": content}, {"file": (io.BytesIO(content.encode()), name)}):
        response = client.post("/transcripts", data=data, content_type="multipart/form-data")
        body = assert_safe(response)
        assert response.status_code in {400, 413}, (name, response.status_code)
        assert html.escape(what, quote=True) in body or what in body, (name, what)
        if where:
            assert where in body
    assert not list(Path(app.config["TRANSCRIPT_DIR"]).glob("t-*.json")), "nothing broken is stored"


def test_ten_thousand_messages_are_refused_with_the_limit(client, app):
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": str(i)} for i in range(10_000)]
    response = client.post("/transcripts", data={"transcript": json.dumps(messages)})
    body = assert_safe(response)
    assert response.status_code == 400
    assert "10,000 messages" in body and f"at most {app.config['TRANSCRIPT_MAX_MESSAGES']:,}" in body


def test_a_request_over_the_upload_cap_gets_a_413_with_a_message(client, app):
    too_big = b"[" + b" " * app.config["MAX_CONTENT_LENGTH"] + b"]"
    response = client.post("/transcripts", data={"file": (io.BytesIO(too_big), "big.json")}, content_type="multipart/form-data")
    assert response.status_code == 413
    body = assert_safe(response)
    assert f"larger than the limit of {app.config['TRANSCRIPT_MAX_BYTES']:,} bytes" in body


def test_a_file_that_is_not_utf8_is_refused(client):
    response = client.post("/transcripts", data={"file": (io.BytesIO(b"\xff\xfe[\x00"), "x.json")}, content_type="multipart/form-data")
    assert response.status_code == 400
    assert "UTF-8" in assert_safe(response)


@pytest.mark.parametrize("value", VALUES)
def test_hostile_form_values_are_refused_with_a_message(client, value):
    for data in ({"transcript": value}, {"transcript": value, "file": (io.BytesIO(value.encode()), value[:50] or "x")}, {"other": value}):
        response = client.post("/transcripts", query_string={"lang": value}, data=data, content_type="multipart/form-data")
        assert response.status_code in {303, 400}, (value, response.status_code)
        assert_safe(response)


# --- Transcripts built to be as costly as the limits allow (issue 15) ------------------------
# The rule for each: refused with a 4xx and a message, or served on every route without a 5xx.


def costly_routes(client, scenario_id: str) -> list[str]:
    last = client.get(f"/play/{scenario_id}.json").get_json()["calls"]
    routes = []
    for call in sorted({1, last // 2, last}):
        routes += [
            f"/play/{scenario_id}?call={call}&strategy=summarize",
            f"/play/{scenario_id}.json?call={call}&strategy=truncate",
            f"/play/{scenario_id}/request.json?call={call}&strategy=summarize",
        ]
    return routes + [f"/compare/{scenario_id}?call={last}", f"/compare/{scenario_id}.json?call={last}", f"/compare/{scenario_id}.csv?call={last}"]


def test_long_tool_names_on_every_request_are_served_on_every_route(client):
    """333 requests, each calling a tool whose name is 2,760 random letters: the summaries
    quoted every earlier name, and its comparison took 30 s of CPU."""
    from bench.hostile_transcripts import long_tool_names

    response = client.post("/transcripts", data={"transcript": long_tool_names()})
    assert response.status_code == 303
    scenario_id = response.headers["Location"].split("/play/")[1].split("?")[0]
    from webapp.core.engine.summarizer import MAX_SUMMARY_CHARS, SUMMARY_HEADER

    for url in costly_routes(client, scenario_id):
        body = assert_safe(client.get(url))
        if "/request.json" in url:
            sent = json.loads(body)["messages"]
            assert all(len(message["content"]) <= MAX_SUMMARY_CHARS for message in sent if str(message.get("content")).startswith(SUMMARY_HEADER))


# --- Transcripts that were accepted and then broke every page (issue 15) ----------------------

USER = {"role": "user", "content": "u"}


def tool(**function) -> dict:
    return {"type": "function", "function": {"name": "f", **function}}


def called(call_id, second=None) -> list:
    """A request whose assistant calls a tool with this id, answered."""
    messages = [USER, {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]
    messages.append({"role": "tool", "tool_call_id": call_id if isinstance(call_id, str) else "x", "content": "r"})
    if second is not None:
        messages += called(second)[1:]
    return messages


# (name, transcript as JSON text, where the refusal points; None: it is served)
HOSTILE_TRANSCRIPTS = [
    ("text part is a number", json.dumps([{"role": "user", "content": [{"type": "text", "text": 5}]}]), "messages[0].content[0].text"),
    ("text part is a list", json.dumps([{"role": "user", "content": [{"type": "text", "text": ["x"]}]}]), "messages[0].content[0].text"),
    ("tool function is a string", json.dumps({"messages": [USER], "tools": [{"type": "function", "function": "get"}]}), "tools[0].function"),
    ("parameters is a list", json.dumps({"messages": [USER], "tools": [tool(parameters=[])]}), "tools[0].function.parameters"),
    ("properties is a list", json.dumps({"messages": [USER], "tools": [tool(parameters={"type": "object", "properties": ["x"]})]}), "tools[0].function.parameters.properties"),
    ("enum is a number", json.dumps({"messages": [USER], "tools": [tool(parameters={"type": "object", "properties": {"x": {"type": "string", "enum": 5}}})]}), "tools[0].function.parameters.properties.x.enum"),
    ("call id is a list", json.dumps(called(["a"])), "messages[1].tool_calls[0].id"),
    ("call id is an object", json.dumps(called({"a": 1})), "messages[1].tool_calls[0].id"),
    ("system text part is a number", json.dumps([{"role": "system", "content": [{"type": "text", "text": 5}]}, USER]), "messages[0].content[0].text"),
    ("NaN in an extra field", '[{"role": "user", "content": "u", "extra": NaN}]', ""),
    ("Infinity in an extra field", '[{"role": "user", "content": "u", "extra": [-Infinity]}]', ""),
    ("1e999 in an extra field", '[{"role": "user", "content": "u", "extra": {"n": 1e999}}]', ""),
    ("ids differing by a zero-width space", json.dumps(called("call_1", "call\u200b_1")), "messages[3].tool_calls[0].id"),
    ("ids differing by a byte-order mark", json.dumps(called("call_1", "\ufeffcall_1")), "messages[3].tool_calls[0].id"),
    # Served: odd but harmless, every page answers and every JSON twin stays strict.
    ("the words NaN and Infinity as text", json.dumps([{"role": "user", "content": "NaN Infinity -Infinity 1e999"}]), None),
    ("the largest finite number", '[{"role": "user", "content": "u", "extra": 1.7976931348623157e308}]', None),
    ("a zero-width space in one id only", json.dumps(called("call\u200b_1")), None),
]


@pytest.mark.parametrize("name, text, where", HOSTILE_TRANSCRIPTS, ids=[case[0] for case in HOSTILE_TRANSCRIPTS])
def test_a_hostile_transcript_is_refused_with_its_field_or_served_everywhere(hostile_client, name, text, where):
    for data in ({"transcript": text}, {"file": (io.BytesIO(text.encode()), "t.json")}):
        response = hostile_client.post("/transcripts", data=data, content_type="multipart/form-data")
        body = assert_safe(response)
        if where is None:
            assert response.status_code == 303, body[:500]
            scenario_id = response.headers["Location"].split("/play/")[1].split("?")[0]
            for url in hostile_urls(hostile_client, scenario_id):
                for headers in ({}, HX):
                    assert hostile_client.get(url, headers=headers).status_code == 200, url
                    assert_safe(hostile_client.get(url, headers=headers))
        else:
            assert response.status_code == 400, (name, response.status_code)
            assert f"<code>{html.escape(where)}</code>" in body if where else "not valid JSON" in body, body[-1500:]


@pytest.mark.parametrize("came_from", ["http://[::1", "http://[::1/play/bike-shop?call=1", "http://[zz]/", "\x00://x"])
@pytest.mark.parametrize("page", ["/play/bike-shop?call=2", "/compare/bike-shop?call=2"])
def test_a_malformed_url_in_referer_or_hx_current_url_is_ignored(client, page, came_from):
    """The page a request came from is only a hint for what to send: a URL no browser sends
    gives the whole answer, as from another site, never a 500."""
    for headers in ({"Referer": came_from}, {"HX-Request": "true", "HX-Current-URL": came_from}):
        answer = client.get(page, headers=headers)
        assert answer.status_code == 200, (headers, answer.status_code)
        assert "Something went wrong" not in answer.get_data(as_text=True)


def test_a_huge_accept_language_is_read_from_its_first_part(client):
    """A browser names a few languages: the first ones of a header of thousands still choose
    the page's language."""
    header = "zh-CN," + ",".join(f"x{number};q=0.{number % 9 + 1}" for number in range(25_000))
    answer = client.get("/", headers={"Accept-Language": header})
    assert answer.status_code == 200
    assert '<html lang="zh-Hans"' in answer.get_data(as_text=True)
    assert '<html lang="fr"' in client.get("/", headers={"Accept-Language": "fr-CH, fr;q=0.9, en;q=0.8"}).get_data(as_text=True)
