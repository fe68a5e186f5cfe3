"""Long tool names in the well's labels (a pasted session's MCP tools run to 33 characters):
clipped in the middle, so the label fits its column and two tools that share a prefix still
read apart; the whole name stays in the block's accessible name, the table view and the
selected block's detail. An assistant message that calls several long-named tools at once says
how many on a wide screen and on a phone, so its label fits too. The floor's part a pasted log
does not hold is a line of its own."""

from __future__ import annotations

import json
import re
from html import unescape as html_unescape
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import SIZES
from tests.test_fit_browser import found, visit
from webapp.core.model import LANGUAGES
from webapp.web.pages.play.well import SHORT_NAME, UNZOOMED_ROOM, clipped, width

SESSION = Path(__file__).parent / "fixtures" / "sessions" / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl"
RESOLVE, DOCS = "mcp__context7__resolve-library-id", "mcp__context7__get-library-docs"
# MCP tools as a coding agent names them, 30 to 36 characters, three sharing a server's prefix.
LONG_NAMES = [RESOLVE, DOCS, "mcp__github__search_repositories", "mcp__playwright__browser_navigate", "mcp__context7__get-library-versions"]
PARALLEL = (2, 3, 5)  # how many of them each assistant message calls at once


def parallel_calls() -> str:
    """A pasted chat (OpenAI messages) whose assistant calls 2, then 3, then 5 of the long-named
    tools in one message, each answered (in 30 to 2,430 words, so the labels' figures run from
    two digits to four, the chat staying under the threshold), then replies: one call per assistant message."""
    messages = [{"role": "system", "content": "You look up libraries' documentation."}]
    for turn, count in enumerate(PARALLEL):
        messages.append({"role": "user", "content": f"Which version of library {turn} do I need, and how do I call it?"})
        calls = [{"id": f"call-{turn}-{i}", "type": "function", "function": {"name": name, "arguments": json.dumps({"library": f"lib{turn}"})}} for i, name in enumerate(LONG_NAMES[:count])]
        messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        messages += [{"role": "tool", "tool_call_id": call["id"], "content": f"{call['function']['name']} found: " + "docs " * (30 * 3**i)} for i, call in enumerate(calls)]
        messages.append({"role": "assistant", "content": "Version 2 of it; call it with a client object. " * 4})
    return json.dumps(messages)


@given(st.text(alphabet=st.characters(blacklist_characters="…"), min_size=1, max_size=80), st.integers(min_value=4, max_value=60))
def test_a_clipped_name_fits_and_keeps_its_start_and_its_longer_end(name, limit):
    short = clipped(name, limit)
    if len(name) <= limit:
        assert short == name
    else:
        assert len(short) == limit
        head, tail = short.split("…")
        assert name.startswith(head) and name.endswith(tail) and len(tail) > len(head)


@pytest.mark.parametrize("limit", range(SHORT_NAME, len(DOCS)))
def test_two_tools_that_share_a_prefix_read_apart_when_clipped(limit):
    assert clipped(RESOLVE, limit) != clipped(DOCS, limit)
    assert clipped(RESOLVE, limit).endswith("-id") and clipped(DOCS, limit).endswith("-docs")


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    """A test client, and the play page's path of the Claude Code session pasted into it."""
    from webapp import create_app

    client = create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path_factory.mktemp("transcripts"))}).test_client()
    answer = client.post("/transcripts", data={"transcript": SESSION.read_text()})
    assert answer.status_code == 303
    return client, answer.headers["Location"]


def drawn_labels(html: str) -> list[str]:
    """The block labels as a wide screen shows them: the labels' column without its phone forms."""
    column = html[html.index('<g class="at-labels">') :]
    column = column[: column.index("</g>")]
    texts = re.findall(r"<text y=\"[^\"]*\">(.*?)</text>", column)
    return [html_unescape(re.sub(r"<[^>]+>", "", re.sub(r'<tspan class="short">[^<]*</tspan>', "", text))) for text in texts]


# What a wide screen draws of the two tools' results at call 32 (no zoomed view): the French
# label's words leave its name no more room than a phone's, which just fits.
DRAWN = {
    "en": {"tool result: mcp__c…ve-library-id", "tool result: mcp__c…-library-docs"},
    "fr": {"résultat d'outil\xa0: mcp_…ibrary-id", "résultat d'outil\xa0: mcp_…rary-docs"},
    "zh": {"工具结果：mcp__co…olve-library-id", "工具结果：mcp__co…et-library-docs"},
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_long_tool_name_is_clipped_in_the_drawing_and_whole_in_the_name_and_table(session, lang):
    client, path = session
    html = client.get(f"{path}?call=32&lang={lang}").get_data(as_text=True)
    drawn = {label.rsplit(" ", 1)[0] for label in drawn_labels(html) if "mcp" in label}
    assert drawn == DRAWN[lang]
    assert all(width(label) <= UNZOOMED_ROOM for label in drawn)
    assert re.search(rf"<title>[^<]*{RESOLVE}[^<]*</title>", html) and re.search(rf"<title>[^<]*{DOCS}[^<]*</title>", html)
    table = html[html.index('id="table-view"') :]
    assert re.search(rf">[^<]*{RESOLVE}</a>", table) and re.search(rf">[^<]*{DOCS}</a>", table)


def test_the_selected_blocks_detail_names_the_tool_whole(session):
    client, path = session
    html = client.get(f"{path}?call=32").get_data(as_text=True)
    block = re.search(r'<a id="block-([^"]+)"[^>]*><title>tool result: ' + RESOLVE, html).group(1)
    detail = client.get(f"{path}?call=32&block={block}").get_data(as_text=True)
    assert re.search(r'<h2 id="detail-title">tool result: ' + RESOLVE + " <", detail)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_the_floors_part_not_in_the_log_is_a_line_under_its_name(session, lang):
    client, path = session
    html = client.get(f"{path}?call=1&lang={lang}").get_data(as_text=True)
    column = html[html.index('<g class="at-labels">') :]
    floor = re.search(r'<a href="[^"]*block=floor[^"]*"[^>]*><text[^>]*>(.*?)</text>', column).group(1)
    note = re.search(r'<tspan class="note" x="\d+" dy="[\d.]+"><tspan class="long">([^<]*)</tspan><tspan class="short">([^<]*)</tspan>', floor)
    assert note, floor
    whole, short = note.groups()
    unlogged = client.get(f"{path}.json?call=1").get_json()["recorded_usage"]["unlogged_tokens"]
    thousands, rest = divmod(unlogged, 1000)
    assert unlogged > 10_000 and str(thousands) in whole and f"{rest:03d}" in whole and len(short) < len(whole)
    title = re.search(r'<a id="block-floor"[^>]*><title>([^<]*)</title>', html).group(1)
    assert title.endswith(whole)  # the accessible name says it too


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("width", SIZES)
def test_a_message_calling_several_long_named_tools_fits_its_label(sized, live_server, width, lang):
    """At every call of a chat whose assistant calls 2, 3 and 5 MCP tools at once, every label
    of the well lies inside the drawing and over no other (tests/test_fit_browser.py's measure)."""
    answer = sized.request.post(f"{live_server}/transcripts", form={"transcript": parallel_calls()}, max_redirects=0)
    assert answer.status == 303
    path = answer.headers["location"].removeprefix(live_server)
    paths = [f"{path}?call={number}&lang={lang}" for number in range(1, 2 * len(PARALLEL) + 1)]
    failures = found(visit(sized, live_server, paths, [width]), paths, width)
    assert not failures, f"{len(failures)} problems at {width} px, e.g.:\n" + "\n".join(failures[:12])


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_message_calling_several_tools_names_each_whole_in_its_name_table_and_detail(client, lang):
    answer = client.post("/transcripts", data={"transcript": parallel_calls()})
    path = answer.headers["Location"]
    html = client.get(f"{path}?call=6&lang={lang}").get_data(as_text=True)
    for count in PARALLEL:
        names = ", ".join(LONG_NAMES[:count])
        assert re.search(rf'<a id="block-[^"]+"[^>]*><title>[^<]*→ {names}[,，]', html), count
        assert re.search(rf">[^<]*→ {names}</a>", html[html.index('id="table-view"') :]), count
    block = re.search(rf'<a id="block-([^"]+)"[^>]*><title>[^<]*→ {", ".join(LONG_NAMES)}[,，]', html).group(1)
    detail = client.get(f"{path}?call=6&block={block}&lang={lang}").get_data(as_text=True)
    assert re.search(r'<h2 id="detail-title">[^<]*→ ' + ", ".join(LONG_NAMES) + " <", detail)
