"""The event log, one group of events per call, and the one sentence a screen reader hears of
a call."""

from __future__ import annotations

from flask_babel import get_locale
from flask_babel import gettext as _
from flask_babel import ngettext

from ....core.analysis.compaction_cost import CompactionCost
from ....core.engine.calls import Call, Event, Replay
from ....core.model import Scenario
from ...languages import number as format_number
from ...languages import money, percent
from ...story import close_up, message_name


def event_text(event: Event) -> str:
    d = event.detail
    n = format_number
    texts = {
        "user_message": lambda: _("request %(request)s enters the history", request=d.get("request")),
        "compact": lambda: _("%(before)s → %(after)s tokens", before=n(d["before"]), after=n(d["after"])),
        "recorded_compaction": lambda: _(
            "the harness compacted here, as its log records: %(before)s → a %(summary)s-token summary; the replay keeps the whole history",
            before=n(d["before"]) if d.get("before") else "?", summary=n(d["summary"]),
        ),
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
    if event.kind == "pitfall":
        return pitfall_text(d)
    return texts.get(event.kind, lambda: "")()


def pitfall_text(d: dict) -> str:
    """A harness pitfall (core/engine/pitfalls.py) in the page's words, with its numbers."""
    n = format_number
    kind = d.get("kind")
    if kind == "loop":
        return _(
            "still %(after)s tokens after compacting, above the line (%(line)s): the floor (%(floor)s) and what it keeps (%(kept)s) make it compact again at the next call",
            after=n(d["after"]), line=n(d["line"]), floor=n(d["floor"]), kept=n(d["kept"]),
        )
    if kind == "beyond":
        return _(
            "even the system messages and the latest message (%(after)s tokens) pass num_ctx (%(line)s): Ollama sends them anyway and its runner cuts the prompt's middle",
            after=n(d["after"]), line=n(d["line"]),
        )
    if kind == "small":
        return _("this compaction saved only %(saved)s tokens of %(before)s (%(percent)s%%)", saved=n(d["saved"]), before=n(d["before"]), percent=d["percent"])
    if kind == "grew":
        return _("this compaction made the request %(grew)s tokens bigger than the %(before)s it started from", grew=n(d["grew"]), before=n(d["before"]))
    if kind == "cache":
        return _("the summary sits before %(tokens)s tokens of unchanged messages: the prompt cache writes them again", tokens=n(d["tokens"]))
    if kind == "refused":
        return _("the summary was no smaller than the history: refused, and from now on only old tool output is cut")
    return ""


def event_log(result: Replay, number: int, first: int = 1, costs: dict[int, CompactionCost] | None = None) -> list[dict]:
    """The events of calls first..number, one group per call; a compaction's line says what it
    cost the prompt cache (`costs`, by call)."""
    costs = costs or {}

    def text(event: Event) -> str:
        said = event_text(event)
        if event.kind == "compact" and event.call in costs:
            said += " · " + cost_text(costs[event.call])
        return said

    return [
        {
            "call": call.number,
            "current": call.number == number,
            "events": [{"kind": e.kind, "text": text(e)} for e in call.events],
        }
        for call in result.calls[first - 1 : number]
    ]


def repaid_text(cost: CompactionCost) -> str:
    if cost.break_even == 0:
        return _("it costs no more than the whole request, so there is nothing to pay back")
    if cost.break_even is None:
        return _("it never pays for itself: the session ends first")
    return ngettext("it pays for itself after %(num)d call", "it pays for itself after %(num)d calls", cost.break_even)


# Figures are written to the ten-thousandth of a dollar: anything smaller is said, not written as $0.0000.
SMALLEST = 0.0001


def cost_text(cost: CompactionCost) -> str:
    """A compaction's cost to the prompt cache, in one line of the event log."""
    return _(
        "cache: changes the request from %(first)s on, giving up %(given)s cached tokens and writing %(rewritten)s again (%(cost)s); "
        "%(saved)s fewer tokens a call: %(repaid)s",
        first=message_name(cost.first_difference) if cost.first_difference else _("its end"),
        given=format_number(cost.given_up),
        rewritten=format_number(cost.rewritten),
        cost=money(cost.write_cost),
        saved=format_number(cost.saved),
        repaid=repaid_text(cost),
    )


def _this_call(cost: CompactionCost) -> str:
    """What the compaction's own call costs, against the whole request."""
    if cost.extra_cost >= SMALLEST / 2:
        return _("This call costs %(extra)s more than the whole request would have.", extra=money(cost.extra_cost))
    if cost.extra_cost <= -SMALLEST / 2:
        return _("This call still costs %(less)s less than the whole request would have.", less=money(-cost.extra_cost))
    return _("This call costs what the whole request would have, to less than %(smallest)s.", smallest=money(SMALLEST))


def _later_calls(cost: CompactionCost) -> str:
    """What each call after the compaction saves."""
    if not cost.calls_left:
        return _("No call comes after this one to send fewer tokens: %(repaid)s.", repaid=repaid_text(cost))
    if cost.saved <= 0:
        return _("The later calls send no fewer tokens: no saving.")
    values = {"saved": format_number(cost.saved), "repaid": repaid_text(cost)}
    if cost.saving_per_call < SMALLEST / 2:
        return ngettext(
            "The %(num)d later call sends %(saved)s fewer tokens, less than %(smallest)s cheaper: %(repaid)s.",
            "Each of the %(num)d later calls sends %(saved)s fewer tokens, less than %(smallest)s cheaper: %(repaid)s.",
            cost.calls_left, smallest=money(SMALLEST), **values,
        )
    return ngettext(
        "The %(num)d later call sends %(saved)s fewer tokens, %(saving)s less: %(repaid)s.",
        "Each of the %(num)d later calls sends %(saved)s fewer tokens, %(saving)s less: %(repaid)s.",
        cost.calls_left, saving=money(cost.saving_per_call), **values,
    )


def cost_story(cost: CompactionCost) -> dict[str, str]:
    """The selected compaction's cost to the prompt cache: what it is about, in one line
    (`headline`), and said in full with why it matters (`text`)."""
    first = message_name(cost.first_difference) if cost.first_difference else _("its end")
    said = [
        _(
            "What this compaction costs the prompt cache: the cache held what the previous call sent; this call's "
            "request differs from %(first)s on, after %(kept)s tokens, so %(given)s cached tokens are given up and "
            "%(rewritten)s go through the cache again (%(cost)s).",
            first=first, kept=format_number(cost.kept_prefix), given=format_number(cost.given_up),
            rewritten=format_number(cost.rewritten), cost=money(cost.write_cost),
        ),
        _this_call(cost),
        _later_calls(cost),
        _(
            "The later the first change, the cheaper: this is why a summary goes after the stable part of the request, "
            "and why clear-tool-results has \"clear at least\"."
        ),
    ]
    return {"headline": _("What it costs the prompt cache"), "text": " ".join(said)}


def cache_is_the_lesson(scenario: Scenario) -> bool:
    """Whether the lesson speaks of the prompt cache (its lesson or a narration names it):
    there a compaction's cost to the cache is told in full at once; elsewhere it is one line
    until opened."""
    texts = [scenario.text("lesson"), *(narration.text() for told in scenario.narration.values() for narration in told)]
    return any("cache" in text.lower() for text in texts)


def call_sentence(result: Replay, call: Call) -> str:
    """One sentence that says what this call did, for the live region."""
    settings = result.settings
    where = {"call": call.number, "calls": len(result.calls), "request": call.request_number, "tokens": format_number(call.tokens)}
    if settings.real_window == settings.window:
        base = _("Call %(call)s of %(calls)s, request %(request)s: %(tokens)s tokens sent, %(share)s of the window.", share=percent(call.tokens / settings.window), **where)
    else:  # two windows, two shares, each named (the metrics panel gives the model's share)
        base = _(
            "Call %(call)s of %(calls)s, request %(request)s: %(tokens)s tokens sent, %(share)s of the %(window)s-token window the compactor was told, %(real_share)s of the model's %(real_window)s.",
            share=percent(call.tokens / settings.window),
            window=format_number(settings.window),
            real_share=percent(call.tokens / settings.real_window, 1),
            real_window=format_number(settings.real_window),
            **where,
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
