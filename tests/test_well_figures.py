"""The tokens a phone writes on a block and beside its label: short enough for a zoomed
block 41 px wide, in every language, and never longer than the whole figure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from webapp.core.model import LANGUAGES
from webapp.web.languages import whole_numbers
from webapp.web.pages.play.well import short_figure


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from webapp import create_app

    return create_app({"TESTING": True, "TRANSCRIPT_DIR": str(tmp_path_factory.mktemp("transcripts"))})


@given(st.floats(min_value=0, max_value=10**9, allow_nan=False), st.sampled_from(LANGUAGES))
def test_a_short_figure_takes_at_most_five_characters_and_never_more_than_the_whole(site, value, lang):
    with site.test_request_context(f"/?lang={lang}"):
        tokens = whole_numbers()
        short = short_figure(value, lang, tokens)
    assert len(short) <= 5, short  # "140 k" in French (a narrow space in it); 4 in English and Chinese
    assert len(short) <= len(tokens(value))
    if round(value) < 1000:
        assert short == tokens(value)


def test_short_figures_read_as_each_language_writes_them(site):
    written = {}
    for lang in LANGUAGES:
        with site.test_request_context(f"/?lang={lang}"):
            written[lang] = [short_figure(value, lang, whole_numbers()) for value in (812.25, 5127, 14996, 139534, 1234567)]
    assert written["en"] == ["812", "5.1K", "15K", "140K", "1.2M"]
    assert written["fr"] == ["812", "5\u00a0k", "15\u00a0k", "140\u00a0k", "1\u00a0M"]
    assert written["zh"] == ["812", "5127", "1.5万", "14万", "123万"]
