"""One room per page: each module (or folder) holds its routes and the presenters that put the
core's figures into that page's words."""

from __future__ import annotations

from flask import Flask

from . import compare, glossary, home, play, sweep, transcripts


def init_app(app: Flask) -> None:
    for page in (home, play, compare, sweep, transcripts, glossary):
        app.register_blueprint(page.blueprint)
