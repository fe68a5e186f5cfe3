"""The web layer: a Flask app over the domain core, made of small parts that each set
themselves up on the app (flaskr's `init_app`).

The app keeps no state between requests but what web/services.py holds, read-mostly: the
scenario library, a bounded cache of replays and the store of pasted transcripts.
"""

from __future__ import annotations

from flask import Flask

from ..resources import data_folder
from . import config, delivery, errors, jobs, languages, limits, pages, rate_limits, services, templating


def create_app(test_config: dict | None = None) -> Flask:
    app = Flask(
        __name__,
        template_folder=str(data_folder("templates")),
        static_folder=str(data_folder("static")),
        instance_relative_config=True,
    )
    config.init_app(app, test_config)
    languages.init_app(app)
    templating.init_app(app)
    services.init_app(app)
    limits.init_app(app)
    rate_limits.init_app(app)
    jobs.init_app(app, test_config)
    delivery.init_app(app)
    pages.init_app(app)
    errors.init_app(app)
    return app
