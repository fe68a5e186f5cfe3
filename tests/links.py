"""The state a link of a page names, read as a browser resolves it: against the page's
`<base>` (or its address), then the play page's path segment and the query."""

from __future__ import annotations

import html
import re
from urllib.parse import parse_qs, urljoin, urlsplit


def base_of(page: str, address: str) -> str:
    """What a page's relative links resolve against: its `<base href>`, else its address."""
    found = re.search(r'<base href="([^"]*)">', page)
    return urljoin(f"http://localhost{address}", html.unescape(found.group(1))) if found else f"http://localhost{address}"


def link_state(href: str, base: str = "http://localhost/") -> tuple[str, dict[str, str]]:
    """(the path without its segment, every parameter the link names)."""
    parts = urlsplit(urljoin(base, html.unescape(href)))
    path, params = parts.path, {}
    pieces = path.split("/")
    if len(pieces) == 4 and pieces[1] == "play" and "=" in pieces[3]:
        path = "/".join(pieces[:3])
        params.update(part.split("=", 1) for part in pieces[3].split(";"))
    params.update({name: values[-1] for name, values in parse_qs(parts.query).items()})
    return path, params
