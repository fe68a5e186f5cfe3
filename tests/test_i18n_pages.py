"""The pages in English, French and Chinese: how the language is chosen, the picker, numbers
and money in the language's format, and scenario texts in the page's language."""

from __future__ import annotations

import re
import shutil
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.links import base_of, link_state
from webapp import create_app
from webapp.core.inputs.library import SCENARIOS_DIR

PLAY = "/play/bike-shop"
NNBSP = "\u202f"  # French groups thousands with a narrow no-break space


def text(response) -> str:
    assert response.status_code == 200, response.status_code
    return response.get_data(as_text=True)


def html_lang(page: str) -> str:
    return re.search(r'<html lang="([^"]+)"', page).group(1)


@pytest.mark.parametrize(
    "header, tag, heading",
    [
        ("fr-FR,fr;q=0.9,en;q=0.5", "fr", "Qu’est-ce que la compaction\u202f?"),
        ("zh-CN,zh;q=0.9", "zh-Hans", "什么是压缩？"),
        ("de-DE,de;q=0.9", "en", "What is compaction?"),
        ("", "en", "What is compaction?"),
    ],
)
def test_the_browser_language_chooses_the_page_language(client, header, tag, heading):
    page = text(client.get("/", headers={"Accept-Language": header} if header else {}))
    assert html_lang(page) == tag
    assert f'<h1 id="what-title">{heading}</h1>' in page.replace("&#39;", "’").replace("'", "’")


def test_the_lang_parameter_wins_over_the_browser(client):
    page = text(client.get("/?lang=zh", headers={"Accept-Language": "fr"}))
    assert html_lang(page) == "zh-Hans" and "什么是压缩？" in page


def picker_links(page: str) -> dict[str, str]:
    nav = re.search(r'<nav id="languages".*?</nav>', page, re.S).group(0)
    return {lang: href.replace("&amp;", "&") for href, lang in re.findall(r'href="([^"]+)" lang="([^"]+)"', nav)}


@pytest.mark.parametrize("path", ["/", PLAY + "?call=3&strategy=drop&window=9000&keep=1&block=m2&lang=fr", "/no-such-page?lang=zh"])
def test_every_page_links_to_itself_in_each_language(client, path):
    page = client.get(path).get_data(as_text=True)
    links = picker_links(page)
    assert set(links) == {"en", "fr", "zh-Hans"}
    asked_path, asked = link_state(path)
    for tag, link in links.items():
        code = {"zh-Hans": "zh"}.get(tag, tag)
        assert link_state(link, base_of(page, path)) == (asked_path, {**asked, "lang": code})


def test_the_picker_marks_the_current_language(client):
    page = text(client.get("/?lang=fr"))
    assert re.search(r'lang="fr" aria-current="true">Français<', page)
    assert page.count('aria-current="true"') == 1


def test_an_htmx_step_swaps_the_picker_with_the_new_state(client):
    fragment = text(client.get(PLAY + "?call=4&lang=fr", headers={"HX-Request": "true"}))
    assert re.search(r'<nav id="languages"[^>]*hx-swap-oob="true"', fragment)
    assert ("call", "4") in parse_qsl(urlsplit(picker_links(fragment)["en"]).query)


@pytest.mark.parametrize(
    "lang, tokens, cost, share",
    [
        ("en", "19,770", "$0.0368", "40%"),
        ("fr", f"19{NNBSP}770", "0,0368\xa0$US", "40\xa0%"),
        ("zh", "19,770", "US$0.0368", "40%"),
    ],
)
def test_numbers_and_money_follow_the_language(client, lang, tokens, cost, share):
    page = text(client.get(f"{PLAY}?call=6&lang={lang}"))
    bill = page[page.index('id="bill"'):page.index('id="events"')]
    assert tokens in bill and cost in bill
    summary = re.search(r'id="call-summary"[^>]*>(.*?)</p>', page, re.S).group(1)
    assert share in summary


def test_the_speed_chips_use_the_decimal_separator_of_the_language(client):
    assert "0,5×" in text(client.get(PLAY + "?lang=fr"))
    assert "0.5×" in text(client.get(PLAY + "?lang=en"))


@pytest.mark.parametrize(
    "lang, title, lesson, narration, strategy",
    [
        ("fr", "Le magasin de vélos", "Le marteau tombe", "le marteau réduit le plus vieux résultat d'outil", "niveau 1, puis niveau 2"),
        ("zh", "自行车店", "锤子落在最旧的工具结果上", "锤子把最旧的工具结果压成一行注释", "先第 1 级，不够时再第 2 级"),
    ],
)
def test_the_scenario_speaks_the_page_language(client, lang, title, lesson, narration, strategy):
    page = text(client.get(f"{PLAY}?call=5&lang={lang}"))
    assert f"<h1>{title}</h1>" in page or title in re.search(r"<title>(.*?)</title>", page).group(1)
    assert lesson in page and narration in page.replace("&#39;", "'") and strategy in page.replace("&#39;", "'")
    home = text(client.get(f"/?lang={lang}"))
    assert title in home and lesson in home


def test_a_scenario_in_english_only_falls_back_to_english(tmp_path):
    source = (SCENARIOS_DIR / "bike-shop.toml").read_text(encoding="utf-8")
    english_only = re.sub(r'^title = \{.*\}$', 'title = "Only in English"', source, flags=re.M)
    english_only = english_only.replace('id = "bike-shop"', 'id = "english-only"')
    assert english_only != source
    shutil.copy(SCENARIOS_DIR / "bike-shop.toml", tmp_path / "bike-shop.toml")
    (tmp_path / "english-only.toml").write_text(english_only, encoding="utf-8")
    client = create_app({"TESTING": True, "SCENARIOS_DIR": tmp_path}).test_client()
    page = text(client.get("/play/english-only?lang=fr"))
    assert "Only in English" in page and "Le marteau tombe" in page  # the lesson is still French


def test_the_json_twin_titles_the_scenario_in_the_requested_language(client):
    assert client.get(PLAY + ".json?lang=zh").get_json()["title"] == "自行车店"
    assert client.get(PLAY + ".json", headers={"Accept-Language": "fr"}).get_json()["title"] == "Le magasin de vélos"


@pytest.mark.parametrize("lang, line", [("en", "82.5%"), ("fr", "82,5\xa0%"), ("zh", "82.5%")])
def test_the_red_line_is_labelled_in_the_language(client, lang, line):
    page = text(client.get(f"{PLAY}?threshold=0.825&lang={lang}"))
    assert re.search(rf'class="axis mark-line"[^>]*>{line}</text>', page)


def test_a_comparison_step_swaps_the_picker_with_the_new_state(client):
    fragment = text(client.get("/compare/bike-shop?call=4&lang=zh", headers={"HX-Request": "true"}))
    assert 'id="compare-panel"' in fragment
    assert re.search(r'<nav id="languages"[^>]*hx-swap-oob="true"', fragment)
    french = picker_links(fragment)["fr"]
    assert urlsplit(french).path == "/compare/bike-shop"
    assert sorted(parse_qsl(urlsplit(french).query)) == [("call", "4"), ("lang", "fr")]


@pytest.mark.parametrize(
    "lang, warning",
    [
        ("en", "Warning: Call 2 cannot fit"),
        ("fr", "Attention\u00a0: L&#39;appel 2 ne peut pas tenir"),
        ("zh", "警告： 第 2 次调用装不下"),
    ],
)
def test_the_cannot_fit_warning_speaks_the_page_language(client, lang, warning):
    page = text(client.get(f"{PLAY}?call=5&window=1500&keep=2&lang={lang}"))
    alert = re.search(r'<p class="warning" role="alert">(.*?)</p>', page, re.S).group(1)
    assert warning in re.sub(r"</?strong>", "", alert)
    assert {"en": "1,500-token", "fr": f"1{NNBSP}500 tokens", "zh": "1,500 token"}[lang] in alert


@pytest.mark.parametrize(
    "lang, message",
    [
        ("en", "keep: got &#39;0&#39;, expected a whole number from 1 to 1000"),
        ("fr", "keep\u00a0: reçu &#39;0&#39;, attendu un nombre entier de 1 à 1000"),
        ("zh", "keep：收到 &#39;0&#39;，应为 1 到 1000 之间的整数"),
    ],
)
def test_a_bad_setting_is_explained_in_the_page_language(client, lang, message):
    response = client.get(f"{PLAY}?keep=0&strategy=magic&lang={lang}")
    assert response.status_code == 400
    page = response.get_data(as_text=True)
    assert message in page
    assert "strategy" in page and "magic" in page and "naive-drop" in page


@pytest.mark.parametrize("lang", ["en", "fr", "zh"])
def test_fast_whole_numbers_are_written_as_babel_writes_them(app, lang):
    from flask_babel import format_number

    from webapp.web.languages import number, whole_numbers

    with app.test_request_context(f"/?lang={lang}"):
        tokens = whole_numbers()
        for value in (0, 7, 999, 1000, 8504, 123456, 10_000_000, -1234):
            assert tokens(value) == number(value) == format_number(value)
        assert tokens(3567.75) == format_number(3568)  # token counts are whole
        assert number(0.5) == format_number(0.5)
