"""Routes: the home page, the play page (the full page, or for htmx the panels a request
changes) and its JSON twin."""

from __future__ import annotations

from dataclasses import dataclass

from flask import Blueprint, current_app, jsonify, make_response, render_template, request, send_from_directory, url_for
from flask_babel import get_locale, get_translations
from flask_babel import gettext as _
from flask_babel import ngettext

from ..core.engine.history import searchable
from ..core.counting.images import REMOTE_IMAGE_SIZE, image_parts, inline_image_size
from ..core.engine.replay import Call, Event, Replay, per_replay, script_call_names
from ..core.output.serialize import call_json, origin_json
from ..core.settings import COUNTER_NAMES, STRATEGIES
from ..core.output.snippets import settings_code
from ..core.counting.tokens import COUNTERS, content_text, estimated
from .languages import number as format_number
from .languages import percent, whole_numbers
from ..core.analysis.story import narration_at
from ..core.drawing.well import block_kind, latest_version, tool_names
from .panels import answer, changed_inputs, is_htmx, panels, render_panels, state_before
from .state import SETTING_PARAMS, SPEEDS, PageState, StateError, read_state
from .story import call_story, close_up, message_name
from .layers import bands, budget_json, budget_rows, layer_budget, layered, layer_metric_rows, metric_rows, metrics, pin_checks, pin_control, pinned_set
from .well import block_label, draw

web = Blueprint("web", __name__)

# Collapsed views: an htmx answer sends a loader in their place, which fetches them (with this
# id as its HX-Target) when they are opened.
LAZY = {"table-view": "table_view", "settings-code": "settings_code"}
# What the growing lists (events, chat, bars) and the stack depend on besides the call.
STACK = frozenset({"call", *SETTING_PARAMS})


def replay_for(view: PageState) -> Replay:
    return current_app.extensions["replay_cache"].get(view.scenario, view.settings)


@web.route("/")
def home():
    library = current_app.extensions["scenario_library"]
    return render_template("home.html", library=library, lang=str(get_locale()))


@web.route("/favicon.ico")
def favicon():
    """Browsers ask for /favicon.ico whatever the page says: answer with the page's icon."""
    return send_from_directory(current_app.static_folder, "favicon.svg", mimetype="image/svg+xml", max_age=86400)


@web.route("/play/<scenario_id>")
def play(scenario_id: str):
    view = read_state(scenario_id, request.args)
    result = replay_for(view)
    before = state_before("web.play")
    changed = changed_inputs(before, view)
    # Growing lists append on an htmx +1 step that changes nothing else they show; a plain
    # page load (JavaScript off, or a key pressed before htmx is ready) has a Referer one call
    # back too, but it is a whole page and needs its lists whole.
    append = is_htmx() and before is not None and view.call == before.call + 1 and not (changed & (STACK | {"lang"})) - {"call"}
    context = play_context(view, result, before if append else None)
    # Motion only when the stack changed from the page the request came from: a selected
    # block, another language, a page opened from elsewhere stand still.
    context["still"] = before is None or not changed & STACK
    if not is_htmx():
        response = make_response(render_template("play.html", oob=False, append=False, lazy=False, **context))
        response.vary.add("Referer")
        return response
    lazy_block = LAZY.get(request.headers.get("HX-Target", ""))
    if lazy_block:  # a collapsed view, opened: just that block, in place
        return answer(render_panels("play.html", [lazy_block], oob=False, append=False, lazy=False, **context))
    blocks = [panel.block for panel in panels("play.html") if panel.shows(changed)]
    # The settings form sent this request itself: it already shows the state, and swapping it
    # would throw away what the user is typing in its next field.
    if request.headers.get("HX-Trigger") == "controls" and "controls" in blocks:
        blocks.remove("controls")
    body = render_panels("play.html", blocks, oob=True, append=append, lazy=True, **context)
    response = answer(body, view)
    if "well" not in blocks:  # nothing for the target itself: leave it as it is
        response.headers["HX-Reswap"] = "none"
    return response


@web.route("/play/<scenario_id>.json")
def play_json(scenario_id: str):
    view = read_state(scenario_id, request.args)
    result = replay_for(view)
    call = result.calls[view.call - 1]
    return jsonify(
        {
            "scenario": view.scenario.id,
            "title": view.scenario.text("title", str(get_locale())),
            "settings": view.settings.model_dump(),
            "call": view.call,
            "calls": len(result.calls),
            "price_per_million": view.price,
            "cost": round(call.sent_total * view.price / 1_000_000, 6),
            "floor_tokens": round(result.floor_tokens, 2),
            "read_as": origin_json(view.scenario, view.settings.counter, _),
            "warnings": result.warnings,
            # What the page says at this call: the author's narration, or the generated explanation.
            "story": call_story(result, view.call, str(get_locale())),
            "current": call_json(result, call),
            # The manual's metrics (its step 10) at this call, with its keys, and its budget by
            # layer (step 1), as the page's table shows it.
            "metrics": metrics(view, result),
            "budget": budget_json(result, view.call),
        }
    )


def play_context(view: PageState, result: Replay, before: PageState | None = None) -> dict:
    """What play.html shows. With `before` (the previous call, on a +1 step), the growing lists
    hold only what that step adds."""
    call = result.calls[view.call - 1]
    lang = str(get_locale())
    selected = None
    if view.block:
        selected = block_detail(result, view.call, view.block)
        selected["pin"] = pin_control(view, result, view.block)
    pinned = pinned_set(result)
    well = draw(result, view.call, view.block, projector=view.projector, pinned=pinned, link=view.link_to("block"))
    # Each layer's use at this call, for the bands and the budget table alike.
    uses = layer_budget(result, view.call)[0] if layered(result) else []
    window = result.settings.real_window
    measured = metrics(view, result)
    return {
        "view": view,
        "tokens": whole_numbers(),  # the language's formatter looked up once: a page writes hundreds of counts
        "result": result,
        "call": call,
        "lang": lang,
        "scenario": view.scenario,
        "title": view.scenario.text("title", lang),
        "page_title": _("Call %(call)s of %(calls)s", call=view.call, calls=len(result.calls))
        + " · " + view.scenario.text("title", lang) + " · " + _("Compaction Playground"),
        "well": well,
        "bands": bands(uses, window, well),
        "layers": budget_rows(uses, window),
        "pinned": pinned,
        "pin_checks": pin_checks(result, view.call),
        "metrics": metric_rows(measured),
        "layer_metrics": layer_metric_rows(measured),
        "bill": bill(view, result, call),
        "log": event_log(result, view.call, first=before.call if before else 1),
        "chat": chat(result, view.call, before.call if before else 0),
        "story": call_story(result, view.call, lang),
        "path": lesson_path(view, lang),
        "next_event": next_event(result, view.call),
        "code": settings_code(view.settings),
        "sentence": call_sentence(result, call),
        "keep_legend": keep_legend(view.settings),
        "warnings": [_(message) % {name: format_number(value) for name, value in values.items()} for message, values in result.notices],
        "read_as": origin_json(view.scenario, view.settings.counter, _),
        "jumps": request_jumps(view, result),
        "selected": selected,
        "strategies": {name: _(description) for name, description in STRATEGIES.items()},
        "counters": {name: _(COUNTERS[name].label) for name in COUNTER_NAMES},
        "speeds": speed_links(view),
    }


def keep_legend(settings) -> str:
    """KEEP as the legend names it, in the unit it counts."""
    if settings.keep_unit == "tool_results":
        return ngettext(
            "KEEP, the last tool result and what follows it: never compacted",
            "KEEP, the last %(num)d tool results and what follows them: never compacted",
            settings.keep,
        )
    if settings.keep_unit == "turns":
        return ngettext("KEEP, the last turn: never compacted", "KEEP, the last %(num)d turns: never compacted", settings.keep)
    return ngettext("KEEP, the last request: never compacted", "KEEP, the last %(num)d requests: never compacted", settings.keep)


def lesson_path(view: PageState, lang: str) -> dict:
    """Where this scenario sits on the path of lessons: its number, and the next lesson."""
    library = current_app.extensions["scenario_library"]
    following = library.next_lesson(view.scenario.id)
    return {
        "number": library.lesson_number(view.scenario.id),
        "next": following
        and {
            "number": library.lesson_number(following.id),
            "title": following.text("title", lang),
            "url": url_for("web.play", scenario_id=following.id, lang=view.lang),
        },
    }


def happens(result: Replay, call: Call) -> bool:
    """Something worth stopping at: narration, a compaction, or a request the provider rejects."""
    return bool(
        narration_at(result, call.number) is not None
        or (call.compaction is not None and call.compaction.changed)
        or call.overflow
        or not call.valid
        or call.no_room_for_reply
    )


def next_event(result: Replay, number: int) -> int | None:
    """The next call after `number` where something happens, for the "next thing" control."""
    return next((event for event in happenings(result) if event > number), None)


@per_replay
def happenings(result: Replay) -> list[int]:
    return [call.number for call in result.calls if happens(result, call)]


@dataclass
class Bill:
    sent_total: int
    this_call: int  # what SENT grew by on this call (the request, plus any summarizer input)
    tokens: int
    growth: int | None  # this request minus the previous one
    cost: float
    price: float
    bars: list[tuple[int, int]]  # (call, what SENT grew by) for every call
    bar_max: int
    summarizer_output: int

    @property
    def slot(self) -> float:
        """Width of one call's slot in the bars' 560-unit row."""
        return 560 / len(self.bars)

    @property
    def labelled(self) -> bool:
        """Whether each bar gets its call number under it (not when they would crowd)."""
        return len(self.bars) <= 24


@per_replay
def increments(result: Replay) -> list[tuple[int, int]]:
    """(call, what SENT grew by on it) for every call."""
    totals = [0] + [call.sent_total for call in result.calls]
    return [(call.number, totals[call.number] - totals[call.number - 1]) for call in result.calls]


def bill(view: PageState, result: Replay, call: Call) -> Bill:
    previous = result.calls[call.number - 2] if call.number > 1 else None
    bars = increments(result)
    return Bill(
        sent_total=call.sent_total,
        this_call=call.sent_total - (previous.sent_total if previous else 0),
        tokens=call.tokens,
        growth=call.tokens - previous.tokens if previous else None,
        cost=call.sent_total * view.price / 1_000_000,
        price=view.price,
        bars=bars,
        bar_max=max((amount for _, amount in bars), default=1) or 1,
        summarizer_output=call.summarizer_output_total,
    )


def event_text(event: Event) -> str:
    d = event.detail
    n = format_number
    texts = {
        "user_message": lambda: _("request %(request)s enters the history", request=d.get("request")),
        "compact": lambda: _("%(before)s → %(after)s tokens", before=n(d["before"]), after=n(d["after"])),
        "turn_start": lambda: _("request %(request)s, turn %(turn)s", request=d.get("request"), turn=d.get("turn")),
        "model_call": lambda: _("%(tokens)s tokens in %(messages)s messages", tokens=n(d["tokens"]), messages=d["messages"]),
        "tool_call": lambda: d.get("name", ""),
        "tool_result": lambda: _("result of %(name)s", name=d.get("name") or d.get("tool_call_id", "")),
        "turn_end": lambda: _("turn %(turn)s done", turn=d.get("turn")),
        "overflow": lambda: _("%(tokens)s tokens do not fit the %(window)s-token window", tokens=n(d["tokens"]), window=n(d["window"])),
        "invalid_request": lambda: "; ".join(d.get("problems", [])),
        "warning": lambda: _(
            "%(tokens)s tokens: past the alert line (%(alert)s), under the red line (%(line)s)", tokens=n(d["tokens"]), alert=n(d["alert"]), line=n(d["line"])
        ),
        "notice": lambda: _("still too big after every level: a notice tells the user that old details may be gone")
        if d.get("added")
        else _("the notice that old details may be gone stays in the request"),
        "pinned_kept": lambda: _(
            "stopped at %(tokens)s tokens, above its aim: only pinned messages were left to cut", tokens=n(d["tokens"])
        ),
        "no_room_for_reply": lambda: _(
            "%(tokens)s + a %(reply)s-token reply > %(window)s", tokens=n(d["tokens"]), reply=n(d["reply_tokens"]), window=n(d["window"])
        ),
    }
    return texts.get(event.kind, lambda: "")()


def event_log(result: Replay, number: int, first: int = 1) -> list[dict]:
    """The events of calls first..number, one group per call."""
    return [
        {
            "call": call.number,
            "current": call.number == number,
            "events": [{"kind": e.kind, "text": event_text(e)} for e in call.events],
        }
        for call in result.calls[first - 1 : number]
    ]


@dataclass
class Chat:
    added: list[dict]  # the bubbles to add: all of them, or those a +1 step adds
    changed: list[dict]  # bubbles already shown that change (the one that was current)


@per_replay
def bubbles(result: Replay) -> list[dict]:
    """What the chat's user sees: requests and replies with text, each with the call whose
    reply it is or precedes (`call`)."""
    out = []
    replies = 0
    for item in result.scenario.script:
        role = item.role
        if role == "assistant":
            replies += 1
        if role not in {"user", "assistant"}:
            continue
        text = content_text(item.message.get("content"))
        if text.strip():
            out.append({"id": item.id, "role": role, "text": text, "call": replies, "reply": role == "assistant"})
    return out


def chat(result: Replay, number: int, shown: int = 0) -> Chat:
    """The chat up to call `number`'s reply, the reply marked current. With `shown` (the call a
    page already shows), only what comes after it, and the bubble that stops being current."""

    def at(call: int) -> list[dict]:
        return [{**bubble, "current": bubble["reply"] and bubble["call"] == call} for bubble in bubbles(result) if bubble["call"] <= call]

    now = at(number)
    if not shown:
        return Chat(now, [])
    then = at(shown)
    changed = [bubble for bubble, was in zip(now, then) if bubble["current"] != was["current"]]
    return Chat(now[len(then) :], changed)


def request_jumps(view: PageState, result: Replay) -> list[tuple[int, str, str]]:
    """(request number, the link to its first call, its name for a screen reader) for the
    stepper's jump chips: their words translated once, not once per chip."""
    to_call = view.link_to("call", play=False)
    name = _("Request %(number)s (call %(call)s)")
    return [(number, to_call(first), name % {"number": number, "call": first}) for number, first in request_starts(result)]


def speed_links(view: PageState) -> list[tuple[str, str, str]]:
    """(speed, its link, the speed written in the page's language) for the autoplay chips."""
    to_speed = view.link_to("speed")
    return [(speed, to_speed(speed), format_number(float(speed))) for speed in SPEEDS]


@per_replay
def request_starts(result: Replay) -> list[tuple[int, int]]:
    """(request number, its first call) for the jump links."""
    starts: dict[int, int] = {}
    for call in result.calls:
        starts.setdefault(call.request_number, call.number)
    return sorted(starts.items())


def call_sentence(result: Replay, call: Call) -> str:
    """One sentence that says what this call did, for the live region."""
    base = _(
        "Call %(call)s of %(calls)s, request %(request)s: %(tokens)s tokens sent, %(share)s of the window.",
        call=call.number,
        calls=len(result.calls),
        request=call.request_number,
        tokens=format_number(call.tokens),
        share=percent(call.tokens / result.settings.window),
    )
    compaction = call.compaction
    if compaction is not None:
        if compaction.changed:
            base += " " + _(
                "Compaction shrank the request from %(before)s to %(after)s tokens.",
                before=format_number(compaction.tokens_before),
                after=format_number(compaction.tokens_after),
            )
            if compaction.cleared:
                base += " " + ngettext(
                    "It cleared %(num)d old tool result (%(tokens)s tokens).",
                    "It cleared %(num)d old tool results (%(tokens)s tokens).",
                    len(compaction.cleared),
                    tokens=format_number(compaction.cleared_tokens),
                )
            if compaction.destroyed:
                base += " " + ngettext(
                    "It truncated %(num)d result of a tool that cannot be called again: that content is gone for good.",
                    "It truncated %(num)d results of a tool that cannot be called again: that content is gone for good.",
                    len(compaction.destroyed),
                )
        elif compaction.held_back:
            base += " " + _(
                "The request is over the line, but clearing would take off only %(tokens)s tokens, fewer than \"clear at least\": it is sent as it is and the prompt cache stays whole.",
                tokens=format_number(compaction.held_back),
            )
        else:
            base += " " + _("The request is over the line but there was nothing outside KEEP to compact.")
    if call.overflow:
        base += " " + _(
            "Gulp: the provider counts %(tokens)s tokens, more than the model's %(window)s-token window.",
            tokens=format_number(call.provider_tokens),
            window=format_number(result.settings.real_window),
        )
    elif call.no_room_for_reply:
        base += " " + _("The request fits, but the reply does not: it will be cut short or rejected.")
    if call.problems:
        base += " " + _("An API would reject this request: a tool call and its result were separated.")
    return close_up(base, str(get_locale()))


def prefix_text(prefix) -> str:
    """The floor's messages as a reader reads them: a lone system prompt as its text, several
    messages (examples, an opening reply) each under its role and name."""
    if len(prefix) == 1 and prefix[0].get("role") == "system" and not prefix[0].get("name"):
        return content_text(prefix[0].get("content"))
    return "\n\n".join(
        f"[{' '.join(filter(None, [str(m.get('role', '')), str(m.get('name') or '')]))}]\n{searchable(m)}" for m in prefix
    )


def block_detail(result: Replay, number: int, block_id: str) -> dict:
    """Everything about one block: its whole content and its tokens under each counter."""
    call = result.calls[number - 1]
    if block_id == "floor":
        prefix = result.scenario.prefix
        tools = result.scenario.tools
        return {
            "id": "floor",
            "label": _("floor: system prompt + tools"),
            "present": True,
            "content": prefix_text(prefix),
            "tools": [t.get("function", t).get("name", "") for t in tools],
            "tool_calls": [],
            "counts": [
                (name, _(counter.label), round(counter.block_tokens(result.scenario.floor_units(counter))))
                for name, counter in block_counters(result)
            ],
            "note": _("The estimate counter, like the reference compact() of the Compaction pattern, counts the system prompt only, not the tool definitions."),
            "estimated": "",
            "images": [],
        }
    current = {b.id: b for b in call.blocks}
    block = current.get(block_id) or latest_version(result, block_id, number)
    if block is None:
        known = any(item.id == block_id for item in result.scenario.script) or block_id[:1] in ("s", "n")
        if not known:
            raise StateError(400, [_("block: got %(got)r, this scenario has no such block", got=block_id)])
        return {"id": block_id, "label": message_name(block_id), "present": False, "content": "", "counts": [], "tools": [], "tool_calls": [], "note": _("This message has not entered the history yet at this call."), "estimated": "", "images": []}
    kind, label = block_kind(block), block_label(block, tool_names(result), get_translations().gettext)
    calls = [
        f"{(c.get('function') or {}).get('name', '')}({(c.get('function') or {}).get('arguments', '')})"
        for c in block.message.get("tool_calls") or []
    ]
    note = ""
    if block_id not in current:
        note = _("Not sent at this call: compaction removed it. This is its last version.")
    return {
        "id": block.id,
        "kind": kind,
        "label": label,
        "state": block.state,
        "present": block_id in current,
        "content": block.text,
        "tool_calls": calls,
        "tools": [],
        "counts": [(name, _(counter.label), round(counter.block_tokens(counter.measure(block.message)))) for name, counter in block_counters(result)],
        "note": note,
        "estimated": estimate_note(block.message),
        "images": [image_caption(url, detail) for url, detail in image_parts(block.message)],
    }


def image_caption(url: str, detail: str) -> str:
    """An image part in a few words: its link, or the kind and size of an inline image."""
    size = inline_image_size(url)
    if url.startswith("data:"):
        kind = url[5:].split(";", 1)[0].split(",", 1)[0] or "data"
        text = f"{kind} {size[0]} × {size[1]}" if size else kind
    else:
        text = url if len(url) <= 80 else url[:79] + "…"
    return text if detail == "auto" else f"{text} (detail: {detail})"


def estimate_note(message: dict) -> str:
    """Why a block's count is marked ≈, or "" when it is not an estimate."""
    if not estimated(message):
        return ""
    width, height = REMOTE_IMAGE_SIZE
    return _(
        "≈ estimated: this message holds an image given by a link, which the playground never downloads. It is counted as a %(width)s × %(height)s picture, by OpenAI's image rule.",
        width=width,
        height=height,
    )


def block_counters(result: Replay) -> list[tuple[str, object]]:
    """Every counter, reading tool results under their function's name as the replay does."""
    names = script_call_names(result.scenario)
    return [(name, counter.with_call_names(names)) for name, counter in COUNTERS.items()]
