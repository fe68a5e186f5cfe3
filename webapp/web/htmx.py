"""The one htmx path: every page with panels answers a plain GET with the whole page, and an
htmx request with only the panels that changed, rendered from the same template blocks.

A panel is a block of a page template that declares its inputs in the template itself, as
the first statement of its block:

    {% block facts %}{% set inputs = "call settings lang" %}…{% endblock %}

Inputs are URL parameter names, or `settings` (every replay setting), `pricing` (every price)
or `state` (every parameter: a panel whose links or hidden fields carry the whole state). The
panels are read from the template's source once, so the list lives in one place, beside the
markup.

For an htmx request the page the request came from is known (htmx sends `HX-Current-URL`), so
`respond` sends only the panels whose inputs differ between that page and the requested one,
out of band. It owns every htmx header (HX-Push-Url, HX-Reswap, HX-Retarget, Vary) for every
page: a page declares how it answers in a `Fragments` and decorates its route with
`fragment_page`; an answer that is no panel of the page htmx is on (an error) goes through
`page_or_block`, swapped where the request was to swap.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache, cached_property, wraps
from typing import Callable, Mapping
from urllib.parse import parse_qs, urlsplit

from flask import Response, current_app, make_response, render_template, request
from jinja2 import nodes
from werkzeug.exceptions import HTTPException

from ..core.inputs.store_faults import StoreUnwritable
from .state import PRICING_PARAMS, SETTING_PARAMS, URL_PARAMS, PageState, read_state
from .state_error import StateError

GROUPS = {"settings": SETTING_PARAMS, "pricing": PRICING_PARAMS, "state": URL_PARAMS}


@dataclass(frozen=True)
class Panel:
    block: str
    inputs: frozenset[str]  # URL parameter names

    def shows(self, changed: set[str]) -> bool:
        return not self.inputs.isdisjoint(changed)


@cache
def _declared(template: str, source: str) -> tuple[Panel, ...]:
    found = []
    for block in current_app.jinja_env.parse(source).find_all(nodes.Block):
        first = block.body[0] if block.body else None
        if isinstance(first, nodes.Assign) and isinstance(first.target, nodes.Name) and first.target.name == "inputs":
            if not isinstance(first.node, nodes.Const):
                raise ValueError(f"{template}: block {block.name} declares its inputs with a constant string")
            names: set[str] = set()
            for word in first.node.value.split():
                if word not in GROUPS and word not in URL_PARAMS:
                    raise ValueError(f"{template}: block {block.name} depends on {word!r}, which is no part of the page state")
                names.update(GROUPS.get(word, (word,)))
            found.append(Panel(block.name, frozenset(names)))
    return tuple(found)


def panels(template: str) -> tuple[Panel, ...]:
    """The panels a template declares, in the template's order: read once per compiled
    template (a template reloaded in debug mode is a new one), not from its file each request."""
    compiled = current_app.jinja_env.get_template(template)
    found = getattr(compiled, "panels", None)
    if found is None:
        source, _, _ = current_app.jinja_env.loader.get_source(current_app.jinja_env, template)
        found = compiled.panels = _declared(template, source)
    return found


def render_panels(template_name: str, blocks: list[str], **context) -> str:
    """The named blocks of a page template, one after the other, rendered as the whole page
    renders them: sharing one context. (jinja2-fragments' render_blocks makes a context for
    each block; a step sends about fifteen, and that was a tenth of its time.)"""
    app = current_app._get_current_object()
    app.update_template_context(context)
    template = app.jinja_env.get_template(template_name)
    shared = template.new_context(context)
    try:
        return "".join(app.jinja_env.concat(template.blocks[name](shared)) for name in blocks)
    except Exception:
        app.jinja_env.handle_exception()


def changed_inputs(before: PageState | None, after: PageState) -> set[str]:
    """The URL parameters whose values differ between two states; all of them when there is
    no state before (or another scenario)."""
    if before is None or before.scenario.id != after.scenario.id:
        return set(URL_PARAMS)
    old, new = before.params(), after.params()
    return {name for name in URL_PARAMS if old.get(name) != new.get(name)}


def state_before(endpoint: str) -> PageState | None:
    """The state of the page this request came from: the page htmx is on (HX-Current-URL), or
    for a plain page load the page linked from (Referer), when it is the same kind of page;
    else None. It is optional: a stored transcript there that the store cannot read now is no
    page before, and the page asked for answers as from any other."""
    url = request.headers.get("HX-Current-URL") if is_htmx() else request.headers.get("Referer")
    if not url:
        return None
    try:
        parts = urlsplit(url)
    except ValueError:  # a header no browser sends (http://[::1): no page it came from
        return None
    if parts.netloc and parts.netloc != request.host:
        return None
    adapter = current_app.url_map.bind(request.host)
    try:
        found, values = adapter.match(parts.path, method="GET")
    except HTTPException:  # not one of our pages, or not a page at all
        return None
    if found != endpoint:
        return None
    args = {name: given[-1] for name, given in parse_qs(parts.query, keep_blank_values=True).items()}
    try:
        return read_state(values["scenario_id"], args, found, values.get("settings", ""))
    except (StateError, StoreUnwritable):
        return None


def answer(body: str, view: PageState | None = None) -> Response:
    """An htmx answer. It depends on the page it came from and on what sent it, so caches must
    tell those apart. With a state, it puts that state's own URL in the address bar: a form
    sends every field, defaults too, and the link to share is the short one."""
    response = make_response(body)
    response.vary.update(["HX-Current-URL", "HX-Target", "HX-Trigger"])
    if view is not None:
        response.headers["HX-Push-Url"] = view.url(request.endpoint)
    return response


def page_or_block(template: str, block: str, status: int, context: dict) -> Response:
    """A page that is no panel of the page htmx is on (an error): the whole page for a plain
    GET; for htmx, its `block`, swapped into the element the request was to swap (its
    HX-Target: the well, the comparison panel, a collapsed view being opened; else the page's
    main), the address bar left as it is."""
    if not is_htmx():
        return make_response(render_template(template, **context), status)
    response = make_response(render_panels(template, [block], **context), status)
    response.headers.update({"HX-Retarget": f"#{request.headers.get('HX-Target') or 'main'}", "HX-Reswap": "innerHTML", "HX-Push-Url": "false"})
    response.vary.add("HX-Target")
    return response


def is_htmx() -> bool:
    """An htmx swap (not a history restore, which wants the whole page)."""
    return bool(request.headers.get("HX-Request")) and not request.headers.get("HX-History-Restore-Request")


@dataclass(frozen=True)
class Fragments:
    """How a page answers htmx: its `template`; the block htmx swaps in place (`target`); its
    settings form, as (element id, block): a form that sent the request already shows the
    state, and may be mid-edit, so it is left alone; collapsed views fetched when opened
    (`lazy`: element id -> block); and the blocks for a request from another kind of page
    (`from_elsewhere`: the target in place, then others out of band; None: every panel, as
    when everything changed); and the element that polls while the page's data is computed by
    a job (`poll`, web/jobs.py): its requests, and every answer whose data is still being
    computed (`waiting` in the context), get the target block whole, in place."""

    template: str
    target: str
    form: tuple[str, str]
    lazy: Mapping[str, str] = field(default_factory=dict)
    from_elsewhere: tuple[str, ...] | None = None
    poll: str | None = None


class CameFrom:
    """The page a request came from, looked up only if asked (`state_before`). A whole page
    that asked depends on the Referer, and says so in Vary."""

    def __init__(self, endpoint: str, view: PageState):
        self.endpoint = endpoint
        self.view = view
        self.asked = False

    @cached_property
    def state(self) -> PageState | None:
        self.asked = True
        return state_before(self.endpoint)

    @cached_property
    def changed(self) -> set[str]:
        """The URL parameters that differ between that page and this request's."""
        return changed_inputs(self.state, self.view)


def fragment_page(fragments: Fragments) -> Callable:
    """The route decorator of a page with panels. The view function takes the page state and
    where the request came from and returns the template's context; `respond` answers."""

    def decorate(make_context: Callable[[PageState, CameFrom], dict]) -> Callable:
        @wraps(make_context)
        def route(scenario_id: str, settings: str = "") -> Response:
            view = read_state(scenario_id, request.args, request.endpoint, settings)
            came_from = CameFrom(request.endpoint, view)
            return respond(fragments, view, came_from, make_context(view, came_from))

        return route

    return decorate


def respond(fragments: Fragments, view: PageState, came_from: CameFrom, context: dict) -> Response:
    """The whole page for a plain GET; for htmx, an opened view's block, or the panels whose
    inputs changed since the page the request came from."""
    template = fragments.template
    if not is_htmx():
        response = make_response(render_template(template, fragment=False, oob=False, lazy=False, **context))
        if came_from.asked:
            response.vary.add("Referer")
        return response
    lazy_block = fragments.lazy.get(request.headers.get("HX-Target", ""))
    if lazy_block:  # a collapsed view, opened: just that block, in place
        return answer(render_panels(template, [lazy_block], fragment=True, oob=False, lazy=False, **context))
    polled = fragments.poll is not None and request.headers.get("HX-Trigger") == fragments.poll
    if polled or context.get("waiting"):  # the progress, or what it waited for: the target whole
        body = render_panels(template, [fragments.target], fragment=True, oob=False, lazy=False, **context)
        return answer(body, None if polled else view)
    if fragments.from_elsewhere is not None and came_from.state is None:
        target, *others = fragments.from_elsewhere
        body = render_panels(template, [target], fragment=True, oob=False, lazy=True, **context)
        return answer(body + render_panels(template, others, fragment=True, oob=True, lazy=True, **context), view)
    changed = came_from.changed
    blocks = [panel.block for panel in panels(template) if panel.shows(changed)]
    form_id, form_block = fragments.form
    if request.headers.get("HX-Trigger") == form_id and form_block in blocks:
        blocks.remove(form_block)
    response = answer(render_panels(template, blocks, fragment=True, oob=True, lazy=True, **context), view)
    if fragments.target not in blocks:  # nothing for the target itself: leave it as it is
        response.headers["HX-Reswap"] = "none"
    return response
