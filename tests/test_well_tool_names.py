"""Long tool names in the well's labels (a pasted session's MCP tools run to 33 characters):
clipped in the middle, so the label fits its column and two tools that share a prefix still
read apart; the whole name stays in the block's accessible name, the table view and the
selected block's detail. The floor's part a pasted log does not hold is a line of its own."""

from __future__ import annotations

import re
from html import unescape as html_unescape
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.core.model import LANGUAGES
from webapp.web.pages.play.well import SHORT_NAME, UNZOOMED_ROOM, clipped, width

SESSION = Path(__file__).parent / "fixtures" / "sessions" / "claude-code" / "vibecodingtracker-claude-code-v1.0.95.jsonl"
RESOLVE, DOCS = "mcp__context7__resolve-library-id", "mcp__context7__get-library-docs"


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
# label's words leave its name no more room than a phone's.
DRAWN = {
    "en": {"tool result: mcp__c…ve-library-id", "tool result: mcp__c…-library-docs"},
    "fr": {"résultat d'outil\xa0: mcp_…library-id", "résultat d'outil\xa0: mcp_…brary-docs"},
    "zh": {"工具结果：mcp__co…olve-library-id", "工具结果：mcp__co…et-library-docs"},
}


@pytest.mark.parametrize("lang", LANGUAGES)
def test_a_long_tool_name_is_clipped_in_the_drawing_and_whole_in_the_name_and_table(session, lang):
    client, path = session
    html = client.get(f"{path}?call=32&lang={lang}").get_data(as_text=True)
    drawn = {label.rsplit(" ", 1)[0] for label in drawn_labels(html) if "mcp" in label}
    assert drawn == DRAWN[lang]
    assert all(width(label) <= UNZOOMED_ROOM or lang == "fr" for label in drawn)
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
    assert "14" in whole and "996" in whole and len(short) < len(whole)
    title = re.search(r'<a id="block-floor"[^>]*><title>([^<]*)</title>', html).group(1)
    assert title.endswith(whole)  # the accessible name says it too
