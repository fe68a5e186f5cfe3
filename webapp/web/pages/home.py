"""The home page: the lessons in order, and any scenario file that failed to load."""

from __future__ import annotations

from flask import Blueprint, current_app, render_template, send_from_directory
from flask_babel import get_locale

from ..languages import transcript_formats
from ..services import library

blueprint = Blueprint("home", __name__)


@blueprint.route("/", endpoint="page")
def page():
    return render_template("home.html", library=library(), lang=str(get_locale()), formats=transcript_formats())


@blueprint.route("/favicon.ico")
def favicon():
    """Browsers ask for /favicon.ico whatever the page says: answer with the page's icon."""
    return send_from_directory(current_app.static_folder, "favicon.svg", mimetype="image/svg+xml", max_age=86400)
