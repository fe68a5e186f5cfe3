"""Templates written indented for people, sent without their indentation.

- A whole template that starts with the comment `{#- squeeze` loses, when it is loaded, every
  line break and the indentation after it that stand between two tags (HTML's `>` and `<`, or
  Jinja's `%}` / `#}` and `{%` / `{#`). It is done once, to the template's source, so it
  costs nothing per page. The well uses it: a step whose stack changed resends it whole.
- A part of a page, `{% filter squeeze %}…{% endfilter %}`, loses the same whitespace from
  what it renders, each time (for small panels of a page whose other parts need their line
  breaks, as HTML text does between inline elements).

Text, and a space written between two tags on one line (SVG text needs it between its
tspans), stay.
"""

from __future__ import annotations

import re

from jinja2.ext import Extension
from markupsafe import Markup

MARKER = "{#- squeeze"
BETWEEN_TAGS = re.compile(r"(>|%}|#})[ \t]*\n\s*(?=<|{%|{#)")
BETWEEN_RENDERED_TAGS = re.compile(r">\s*\n\s*<")


def squeeze(markup: str) -> Markup:
    """The filter: rendered markup without its indentation."""
    return Markup(BETWEEN_RENDERED_TAGS.sub("><", markup))


class Squeeze(Extension):
    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        if not source.startswith(MARKER):
            return source
        return BETWEEN_TAGS.sub(r"\1", source)
