"""The templates' environment: the globals and filters every page uses, strict about names,
and written without the whitespace people indent templates with."""

from __future__ import annotations

import re

from flask import Flask
from markupsafe import Markup, escape
from jinja2 import StrictUndefined

from ..core.engine.strategy_catalog import STRATEGIES
from .languages import html_lang, language_links, money, number, percent, whole_numbers
from .settings_form import FORM_FIELDS, settings_inputs
from .squeeze import Squeeze, squeeze
from .story import close_up, message_name


def init_app(app: Flask) -> None:
    env = app.jinja_env
    env.globals.update(oob_attr=oob_attr, tokens=tokens, html_lang=html_lang, language_links=language_links, message_name=message_name)
    # The strategies' records, for what a page shows only with some (the legend's swatches).
    env.globals["strategies_by_name"] = STRATEGIES
    # The settings form, written from the fields of Settings.
    env.globals.update(settings_inputs=settings_inputs, settings_form_fields=FORM_FIELDS)
    # numberformat: Flask-Babel's filter, made fast for whole numbers (languages.number).
    env.filters.update(money=money, percent=percent, numberformat=number, close_up=close_up, squeeze=squeeze, unbroken_names=unbroken_names)
    env.undefined = StrictUndefined  # a misspelt name fails loudly, in tests first
    # No lines left behind by template tags: a step's answer is mostly markup, so its
    # indentation is a good part of its bytes.
    env.trim_blocks = env.lstrip_blocks = True
    env.add_extension(Squeeze)


def oob_attr(oob: bool, how: str = "true") -> Markup:
    """Marks a block for an out-of-band swap when it is sent as a fragment."""
    return Markup(' hx-swap-oob="{0}"').format(how) if oob else Markup("")


def tokens(value: float) -> str:
    """A token count as people read it: whole, with the locale's grouping."""
    return whole_numbers()(value)


# The strategies' names a line may break at a hyphen, longest first, as whole words.
HYPHENATED_NAMES = re.compile(
    r"(?<![\w-])(" + "|".join(re.escape(name) for name in sorted((name for name in STRATEGIES if "-" in name), key=len, reverse=True)) + r")(?![\w-])"
)


def unbroken_names(text: str) -> Markup:
    """A sentence with each hyphenated strategy name in a span no line break splits: Chinese
    lines broke "clear-tool-results" at its hyphens."""
    return Markup(HYPHENATED_NAMES.sub(r'<span class="strategy-name">\1</span>', str(escape(text))))
