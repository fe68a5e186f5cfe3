"""Compressed and cached answers.

- Static files go through WhiteNoise under names that carry a hash of their content
  (`app.3f2a9c1e04b7.css`), so they are cached for a year and never go stale: a changed file
  has a new name. WhiteNoise also serves the gzip and Brotli copies made here once, at start.
- Pages, fragments, JSON and CSV are compressed by Flask-Compress, as the browser accepts.
- Every page answer carries an ETag (a hash of its body): a browser that already holds that
  body gets 304 Not Modified. Each answer is a function of its URL and of the headers named
  in Vary, so the body is the right validator.

In debug mode (the reloading dev server) static files are served as they are on disk, so an
edit shows at once.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from pathlib import Path

from flask import Flask, request
from flask_compress import Compress
from whitenoise import WhiteNoise
from whitenoise.compress import Compressor

from ..core.model import LANGUAGES

SECURITY_HEADERS = {
    # base-uri 'self': a play page opened at another spelling of its state names its own in a
    # <base> (templates/play.html), against which its links resolve.
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
# Every header that can change a page's answer: htmx's (a fragment or the full page; which
# fragment; a history restore wants the full page).
VARY_HTMX = ("HX-Request", "HX-Trigger", "HX-History-Restore-Request")
# app.<12 hex digits>.css: the names that may be cached for ever.
HASHED_NAME = re.compile(r"\.[0-9a-f]{12}\.[A-Za-z0-9]+$")


def init_app(app: Flask) -> None:
    Compress(app)

    # Registered after Flask-Compress, so it runs before it (Flask runs after-request hooks
    # last-registered first): the ETag is of the uncompressed body, and Flask-Compress then
    # marks it per encoding ("…:gzip") and answers 304 when it matches.
    @app.after_request
    def conditional(response):
        if request.method in ("GET", "HEAD") and response.status_code == 200 and not response.direct_passthrough:
            response.headers.setdefault("Cache-Control", "no-cache")  # keep it, but ask each time
            response.add_etag()
            response.make_conditional(request)
        return response

    # Registered after `conditional`, so it runs before it: the ETag is of the final answer.
    @app.after_request
    def page_headers(response):
        for name, value in SECURITY_HEADERS.items():
            response.headers.setdefault(name, value)
        for header in VARY_HTMX:
            response.vary.add(header)
        # The browser's languages, unless the URL names a known one.
        if request.args.get("lang") not in LANGUAGES:
            response.vary.add("Accept-Language")
        return response

    if app.debug:
        return
    static = Path(app.static_folder)
    served, names = hashed_copy(static)

    @app.url_defaults
    def hashed_static_url(endpoint, values):
        if endpoint == "static" and values.get("filename") in names:
            values["filename"] = names[values["filename"]]

    def static_headers(headers, path, url):
        for name, value in SECURITY_HEADERS.items():
            headers[name] = value

    app.wsgi_app = WhiteNoise(
        app.wsgi_app,
        root=str(served),
        prefix=app.static_url_path,
        max_age=300,
        allow_all_origins=False,
        add_headers_function=static_headers,
        immutable_file_test=lambda path, url: bool(HASHED_NAME.search(url)),
    )


def hashed_copy(static: Path) -> tuple[Path, dict[str, str]]:
    """A folder holding every static file under its own name and under its hashed name, each
    with gzip and Brotli copies; and the map from names to hashed names.

    The folder is named by a hash of every file, so the workers of a server (and a restart)
    share one copy, made by whichever comes first."""
    files = sorted(path for path in static.rglob("*") if path.is_file())
    digests = {path: hashlib.sha256(path.read_bytes()).hexdigest()[:12] for path in files}
    names = {}
    for path, digest in digests.items():
        relative = path.relative_to(static).as_posix()
        stem, dot, suffix = relative.rpartition(".")
        names[relative] = f"{stem}.{digest}.{suffix}" if dot else f"{relative}.{digest}"
    everything = hashlib.sha256("".join(f"{name}={digest};" for name, digest in sorted(zip(names, digests.values()))).encode())
    owner = os.getuid() if hasattr(os, "getuid") else "user"
    served = Path(tempfile.gettempdir()) / f"compaction-playground-static-{owner}-{everything.hexdigest()[:16]}"
    if not served.is_dir():
        partial = Path(tempfile.mkdtemp(prefix=served.name + "-", dir=served.parent))
        compressor = Compressor(quiet=True)
        for path in files:
            relative = path.relative_to(static).as_posix()
            for name in (relative, names[relative]):
                target = partial / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
                if compressor.should_compress(str(target)):
                    list(compressor.compress(str(target)))
        try:
            os.rename(partial, served)
        except OSError:  # another worker made it first: the same files
            shutil.rmtree(partial, ignore_errors=True)
    return served, names
