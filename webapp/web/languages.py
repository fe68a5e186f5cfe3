"""The page's language: chosen per request (Flask-Babel), its catalog looked up once per
request, its tag in HTML, the language picker's links, numbers, money and percentages in its
format, and the core's registries (strategies, counters) in its words."""

from __future__ import annotations

from urllib.parse import urlencode

from functools import cache, lru_cache
from typing import Callable

from babel.lists import format_list
from babel.numbers import format_decimal, format_percent, get_group_symbol, parse_pattern
from flask import Flask, g, request
from flask_babel import Babel, get_locale, get_translations
from werkzeug.datastructures import LanguageAccept
from werkzeug.http import parse_accept_header
from flask_babel import gettext as _

from ..core.counter_catalog import OPEN, runnable
from ..core.counting.tokens import COUNTERS
from ..core.inputs.formats import FORMATS
from ..core.model import LANGUAGES
from ..core.engine.strategy_catalog import STRATEGIES

ACCEPT_LANGUAGE_CHARS = 1000
# Each language named in itself, so a reader finds theirs whatever the page's language.
LANGUAGE_NAMES = {"en": "English", "fr": "Français", "zh": "中文"}
# The Chinese catalog is in simplified characters; the tag also lets the browser pick a
# simplified-Chinese font.
HTML_TAGS = {"zh": "zh-Hans"}


def init_app(app: Flask) -> None:
    app.config.setdefault("BABEL_DEFAULT_LOCALE", "en")
    Babel(app, locale_selector=select_locale)
    # Flask-Babel looks the catalog up again for every string a template translates, through
    # a chain of Flask's context locals; a step's answer translates dozens. Look it up once
    # per request instead.
    app.jinja_env.install_gettext_callables(
        gettext=lambda text: request_catalog().ugettext(text),
        ngettext=lambda singular, plural, number: request_catalog().ungettext(singular, plural, number),
        pgettext=lambda context, text: request_catalog().upgettext(context, text),
        npgettext=lambda context, singular, plural, number: request_catalog().unpgettext(context, singular, plural, number),
        newstyle=True,
    )
    # Every page's language code, for texts a template picks from a scenario (facts, titles).
    app.context_processor(lambda: {"lang": str(get_locale())})


def select_locale() -> str:
    """The `lang` URL parameter, else the browser's preference, else English."""
    wanted = request.args.get("lang")
    if wanted in LANGUAGES:
        return wanted
    # Browsers send a few languages; a header of thousands would take longer to parse than
    # the page to render, so only its first part is read.
    header = request.headers.get("Accept-Language", "")[:ACCEPT_LANGUAGE_CHARS]
    return parse_accept_header(header, LanguageAccept).best_match(LANGUAGES) or "en"


def request_catalog():
    """The catalog of the request's language (Flask-Babel's), kept for the request."""
    catalog = g.get("catalog")
    if catalog is None:
        catalog = g.catalog = get_translations()
    return catalog


def strategy_descriptions() -> dict[str, str]:
    """Each strategy's name and what it does, in the page's language."""
    return {name: _(strategy.description) for name, strategy in STRATEGIES.items()}


def counter_labels() -> dict[str, str]:
    """Each token counter this installation runs, its name and label in the page's language."""
    return {name: _(COUNTERS[name].label if name in COUNTERS else OPEN[name].label) for name in runnable()}


def transcript_formats() -> str:
    """The transcript formats the playground reads, as one list in the page's language ("A,
    B and C"), from the registry: a format added there is named here by itself."""
    return format_list([_(known.label) for known in FORMATS], locale=get_locale())


def html_lang(code: str | None = None) -> str:
    code = code or str(get_locale())
    return HTML_TAGS.get(code, code)


def language_links(state=None, endpoint: str | None = None) -> list[dict]:
    """The current page in each language: the page state's URL with only `lang` changed, or
    on a page without one the same path and query."""
    current = str(get_locale())
    links = []
    for code in LANGUAGES:
        if state is not None:
            url = state.url(endpoint or request.endpoint, lang=code)
        else:
            query = [(name, value) for name, value in request.args.items(multi=True) if name != "lang"]
            url = f"{request.path}?{urlencode([*query, ('lang', code)])}"
        links.append({"code": code, "tag": html_lang(code), "name": LANGUAGE_NAMES[code], "url": url, "current": code == current})
    return links


@cache
def _group(locale: str) -> str:
    return get_group_symbol(locale)


def whole_numbers() -> Callable[[float], str]:
    """A formatter of whole numbers in the page's language (12,345; 12 345 with the narrow
    no-break space in French), as Babel writes them but without its cost per number: a page
    writes hundreds of token counts."""
    group = _group(str(get_locale()))
    return lambda value: f"{round(value):,}".replace(",", group)


def number(value: float) -> str:
    """A number in the page's language: whole numbers fast, others through Babel, once per
    value and language (a page writes the same few: the speeds 0.5×, a price)."""
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return whole_numbers()(value)
    return _decimal(value, str(get_locale()))


@lru_cache(maxsize=512)
def _decimal(value: float, locale: str) -> str:
    return format_decimal(value, locale=locale)


def money(dollars: float, digits: int = 4) -> str:
    """Dollars in the page's language ($0.0496, 0,0496 $US, US$0.0496), always with `digits`
    decimals: a call costs fractions of a cent, and a column of costs should line up."""
    locale = get_locale()
    pattern = parse_pattern(locale.currency_formats["standard"])
    pattern.frac_prec = (digits, digits)
    return pattern.apply(dollars, locale, currency="USD", currency_digits=False)


def percent(share: float, digits: int = 0) -> str:
    """A share as a percentage in the page's language (40%, 40 %), with up to `digits`
    decimals (a threshold of 0.825 reads 82.5%)."""
    return format_percent(round(share, 2 + digits), locale=get_locale(), decimal_quantization=False)
