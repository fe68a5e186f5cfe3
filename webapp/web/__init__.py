"""The web layer: a Flask app over the domain core.

The app keeps no state between requests but two read-mostly things in `app.extensions`: the
scenario library (loaded once, at creation) and a bounded cache of replays.
"""

from __future__ import annotations

from pathlib import Path

from flask import Flask, g, render_template, request
from flask_babel import Babel, format_number, get_locale, get_translations
from flask_babel import gettext as _
from jinja2 import StrictUndefined
from jinja2_fragments.flask import render_block
from markupsafe import Markup
from werkzeug.exceptions import HTTPException

from ..core.inputs.library import SCENARIOS_DIR, user_scenario_folders
from ..core.engine.remote_summarizer import (
    OpenAICompatibleSummarizer,
    SummarizerError,
    end_time_budget,
    start_time_budget,
    summarizer_config,
)
from ..core.inputs.scenarios import load_library
from ..core.model import LANGUAGES
from ..core.inputs.store import TranscriptStore
from ..resources import data_folder
from .delivery import install_delivery
from .squeeze import Squeeze, squeeze
from .languages import html_lang, language_links, money, number, percent, whole_numbers
from .limits import install_limits
from .panels import is_htmx
from .replays import ReplayCache
from .state import StateError

SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}


VARY_HTMX = ("HX-Request", "HX-Trigger", "HX-History-Restore-Request")


def select_locale() -> str:
    """The `lang` URL parameter, else the browser's preference, else English."""
    wanted = request.args.get("lang")
    if wanted in LANGUAGES:
        return wanted
    return request.accept_languages.best_match(LANGUAGES) or "en"


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(
        __name__,
        template_folder=str(data_folder("templates")),
        static_folder=str(data_folder("static")),
        instance_relative_config=True,
    )
    app.config.from_mapping(
        SCENARIOS_DIR=SCENARIOS_DIR,
        # A user's own scenario folders, added to the built-in ones (README: "Your own scenarios").
        USER_SCENARIOS_DIRS=user_scenario_folders(),
        REPLAY_CACHE_SIZE=64,
        # Per worker. One replay of a 1,000-message transcript holds up to about 30 MB.
        REPLAY_CACHE_MAX_BYTES=128 * 1024 * 1024,
        MAX_CONTENT_LENGTH=2 * 1024 * 1024,
        BABEL_DEFAULT_LOCALE="en",
        BABEL_TRANSLATION_DIRECTORIES=str(data_folder("translations")),
    )
    if test_config:
        app.config.from_mapping(test_config)
    # Pasted transcripts (README: "Bring your own transcript"): a directory several servers
    # can share, a cap per transcript and a cap for the whole store.
    app.config.setdefault("TRANSCRIPT_DIR", str(Path(app.instance_path) / "transcripts"))
    app.config.setdefault("TRANSCRIPT_MAX_BYTES", 1_000_000)
    app.config.setdefault("TRANSCRIPT_STORE_MAX_BYTES", 256 * 1024 * 1024)
    # One client's share of the store (its IPv4 address or IPv6 /64): past it, its own oldest
    # transcripts make room, so no one visitor can push out everyone else's.
    app.config.setdefault("TRANSCRIPT_CLIENT_MAX_BYTES", app.config["TRANSCRIPT_STORE_MAX_BYTES"] // 16)
    # Behind a reverse proxy, how many proxies' X-Forwarded-For to trust to tell clients apart.
    app.config.setdefault("TRUSTED_PROXY_HOPS", 0)
    # Past a few thousand messages a replay's memory and the comparison panel's time grow
    # with the square of the length (docs/hardening.md: 10,000 tiny messages took GBs and minutes).
    app.config.setdefault("TRANSCRIPT_MAX_MESSAGES", 1000)

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
    app.extensions["scenario_library"] = load_library(
        Path(app.config["SCENARIOS_DIR"]), *map(Path, app.config["USER_SCENARIOS_DIRS"])
    )
    # An OpenAI-compatible endpoint for summarize, when configured (README: "A real summarizer").
    endpoint = summarizer_config(app.config)
    summarizer = OpenAICompatibleSummarizer(endpoint) if endpoint else None
    app.extensions["replay_cache"] = ReplayCache(app.config["REPLAY_CACHE_SIZE"], app.config["REPLAY_CACHE_MAX_BYTES"], summarizer)
    app.extensions["transcript_store"] = TranscriptStore(
        Path(app.config["TRANSCRIPT_DIR"]),
        app.config["TRANSCRIPT_MAX_BYTES"],
        app.config["TRANSCRIPT_STORE_MAX_BYTES"],
        max_client_bytes=app.config["TRANSCRIPT_CLIENT_MAX_BYTES"],
        max_messages=app.config["TRANSCRIPT_MAX_MESSAGES"],
    )
    if app.config["TRUSTED_PROXY_HOPS"]:
        from werkzeug.middleware.proxy_fix import ProxyFix

        app.wsgi_app = ProxyFix(app.wsgi_app, x_for=app.config["TRUSTED_PROXY_HOPS"])

    from .compare import blueprint as compare_panel
    from .glossary import blueprint as glossary
    from .glossary import event_meaning
    from .story import close_up, message_name
    from .transcripts import blueprint as transcripts
    from .views import web

    install_limits(app)
    install_delivery(app, SECURITY_HEADERS)
    app.register_blueprint(web)
    app.register_blueprint(compare_panel)
    app.register_blueprint(transcripts)
    app.register_blueprint(glossary)
    app.jinja_env.globals.update(oob_attr=oob_attr, tokens=tokens, html_lang=html_lang, language_links=language_links, event_meaning=event_meaning, message_name=message_name)
    # numberformat: Flask-Babel's filter, made fast for whole numbers (languages.number).
    app.jinja_env.filters.update(money=money, percent=percent, numberformat=number, close_up=close_up, squeeze=squeeze)
    # Every page's language code, for texts a template picks from a scenario (facts, titles).
    app.context_processor(lambda: {"lang": str(get_locale())})
    app.jinja_env.undefined = StrictUndefined  # a misspelt name fails loudly, in tests first
    # No lines left behind by template tags: a step's answer is mostly markup, so its
    # indentation is a good part of its bytes.
    app.jinja_env.trim_blocks = app.jinja_env.lstrip_blocks = True
    app.jinja_env.add_extension(Squeeze)

    @app.before_request
    def summarizer_budget():
        # The summaries one page needs share one budget, so a slow endpoint answers with a
        # message before gunicorn kills the worker.
        g.summarizer_budget = start_time_budget()

    @app.teardown_request
    def end_summarizer_budget(error=None):
        token = g.pop("summarizer_budget", None)
        if token is not None:
            end_time_budget(token)

    @app.after_request
    def add_headers(response):
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        # Every header that can change the answer: htmx's (a fragment or the full page; which
        # fragment; a history restore wants the full page), and the browser's languages
        # unless the URL names a known one.
        for header in VARY_HTMX:
            response.vary.add(header)
        if request.args.get("lang") not in LANGUAGES:
            response.vary.add("Accept-Language")
        return response

    @app.errorhandler(StateError)
    def bad_state(error: StateError):
        return error_page(error.status, error.problems)

    @app.errorhandler(SummarizerError)
    def summarizer_failed(error: SummarizerError):
        # The endpoint's address and its answer are for the operator's log, not for visitors.
        app.logger.warning("summarizer: %s", error)
        return error_page(502, [_("The summarizer is unavailable right now. Every other strategy still works: pick another one, or try again in a minute.")])

    @app.errorhandler(HTTPException)
    def http_error(error: HTTPException):
        messages = {
            404: _("There is no page at this address."),
            405: _("This address does not accept that method."),
            413: _("What you sent is too large: the limit is %(limit)s bytes.", limit=format_number(app.config["MAX_CONTENT_LENGTH"])),
        }
        return error_page(error.code or 500, [messages.get(error.code, error.description or error.name)])

    @app.errorhandler(Exception)
    def unexpected(error: Exception):
        if isinstance(error, HTTPException):
            return http_error(error)
        app.logger.exception("unexpected error")
        return error_page(500, [_("Something went wrong on our side. The error is logged.")])

    return app


def request_catalog():
    """The catalog of the request's language (Flask-Babel's), kept for the request."""
    catalog = g.get("catalog")
    if catalog is None:
        catalog = g.catalog = get_translations()
    return catalog


def oob_attr(oob: bool, how: str = "true") -> Markup:
    """Marks a block for an out-of-band swap when it is sent as a fragment."""
    return Markup(' hx-swap-oob="{0}"').format(how) if oob else Markup("")


def tokens(value: float) -> str:
    """A token count as people read it: whole, with the locale's grouping."""
    return whole_numbers()(value)


def error_page(status: int, problems: list[str]):
    """The error page, or its fragment for an htmx request (swapped where the request came from)."""
    titles = {
        400: _("Bad request"),
        404: _("Not found"),
        413: _("Too large"),
        422: _("Too much to compute"),
        500: _("Server error"),
        502: _("Summarizer unavailable"),
        503: _("Busy"),
    }
    context = {"status": status, "title": titles.get(status, str(status)), "problems": problems}
    if is_htmx():
        # Where the request came from: the element it was to swap (the well, the comparison
        # panel, a collapsed view being opened), in the page's language.
        target = request.headers.get("HX-Target") or "main"
        body = render_block("error.html", "problem", **context)
        headers = {"HX-Retarget": f"#{target}", "HX-Reswap": "innerHTML", "HX-Push-Url": "false", "Vary": "HX-Target"}
        return body, status, headers
    return render_template("error.html", **context), status
