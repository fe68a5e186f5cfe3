"""Templates written indented for people, sent without their indentation.

A template that starts with the comment `{#- squeeze` loses, when it is loaded, every line
break and the indentation after it that stand between two tags (HTML's `>` and `<`, or
Jinja's `%}` / `#}` and `{%` / `{#`). It is done once, to the template's source, so it costs
nothing per page; text, and a space written between two tags on one line (SVG text needs
it between its tspans), stay. The well uses it: a step whose stack changed resends it whole.
"""

from __future__ import annotations

import re

from jinja2.ext import Extension

MARKER = "{#- squeeze"
BETWEEN_TAGS = re.compile(r"(>|%}|#})[ \t]*\n\s*(?=<|{%|{#)")


class Squeeze(Extension):
    def preprocess(self, source: str, name: str | None, filename: str | None = None) -> str:
        if not source.startswith(MARKER):
            return source
        return BETWEEN_TAGS.sub(r"\1", source)
