"""A call's story in the reader's language: the author's narration when one applies, else
sentences worded here from the core's structured account (webapp/core/analysis/story.py)."""

from __future__ import annotations

import re

from babel.lists import format_list
from flask_babel import get_locale
from flask_babel import gettext as _
from flask_babel import ngettext

from ..core.engine.calls import Replay
from .languages import number
from ..core.analysis.story import Arrival, CallStory, FactChange, Outcome, Struck, explain, narration_at


def n(value: float) -> str:
    return number(round(value))


def listed(items: list[str]) -> str:
    return format_list(items, locale=get_locale()) if items else ""


def arrival_text(arrival: Arrival) -> str:
    if arrival.kind == "request":
        return ngettext("a user request (%(tokens)s tokens)", "%(num)d user requests (%(tokens)s tokens)", arrival.count, tokens=n(arrival.tokens))
    if arrival.kind == "reply":
        return ngettext("the assistant's reply (%(tokens)s tokens)", "%(num)d assistant replies (%(tokens)s tokens)", arrival.count, tokens=n(arrival.tokens))
    return ngettext(
        "the result of %(tool)s (%(tokens)s tokens)", "%(num)d results of %(tool)s (%(tokens)s tokens)", arrival.count, tool=arrival.tool, tokens=n(arrival.tokens)
    )


def struck_text(action: str, blocks: list[Struck]) -> str:
    before = n(sum(block.tokens_before for block in blocks))
    if action == "truncated":
        if len(blocks) == 1:
            block = blocks[0]
            return _(
                "shrank the result of %(tool)s from request %(request)s to a one-line note (%(before)s → %(after)s tokens)",
                tool=block.tool, request=block.request, before=before, after=n(block.tokens_after),
            )
        tools = listed(sorted({block.tool for block in blocks}))
        return _(
            "shrank %(num)d old tool results (%(tools)s) to one-line notes (%(before)s → %(after)s tokens)",
            num=len(blocks), tools=tools, before=before, after=n(sum(block.tokens_after for block in blocks)),
        )
    if action == "compressed":
        return ngettext(
            "compressed %(num)d retrieved document to a one-line note (%(before)s → %(after)s tokens)",
            "compressed %(num)d retrieved documents to one-line notes (%(before)s → %(after)s tokens)",
            len(blocks), before=before, after=n(sum(block.tokens_after for block in blocks)),
        )
    if action == "shortened":
        return ngettext(
            "shortened %(num)d old message to a one-line note (%(before)s → %(after)s tokens)",
            "shortened %(num)d old messages to one-line notes (%(before)s → %(after)s tokens)",
            len(blocks), before=before, after=n(sum(block.tokens_after for block in blocks)),
        )
    if action == "cleared":
        return ngettext(
            "cleared %(num)d old tool result (%(before)s → %(after)s tokens)",
            "cleared %(num)d old tool results (%(before)s → %(after)s tokens)",
            len(blocks), before=before, after=n(sum(block.tokens_after for block in blocks)),
        )
    numbers = sorted({block.request for block in blocks})
    which = ngettext("request %(requests)s", "requests %(requests)s", len(numbers), requests=listed([str(number) for number in numbers]))
    if action == "dropped":
        return ngettext(
            "dropped %(num)d old message (%(tokens)s tokens, from %(which)s)",
            "dropped %(num)d old messages (%(tokens)s tokens, from %(which)s)",
            len(blocks), which=which, tokens=before,
        )
    return ngettext(
        "folded %(num)d old message (%(tokens)s tokens, from %(which)s) into a summary",
        "folded %(num)d old messages (%(tokens)s tokens, from %(which)s) into a summary",
        len(blocks), which=which, tokens=before,
    )


def line_text(story: CallStory) -> str:
    if not story.above_line:
        return _("The request, %(tokens)s tokens, stays under the red line (%(line)s): the hammer does not fall.", tokens=n(story.tokens), line=n(story.line))
    if not story.compaction_tried:
        return _(
            "The request, %(tokens)s tokens, is above the red line (%(line)s), but strategy none never compacts: everything is sent.",
            tokens=n(story.tokens), line=n(story.line),
        )
    if not story.struck and story.held_back:
        return _(
            "The request, %(tokens)s tokens, is above the red line (%(line)s), but clearing would take off only %(held)s tokens, fewer than \"clear at least\": it is sent as it is.",
            tokens=n(story.tokens), line=n(story.line), held=n(story.held_back),
        )
    if not story.struck:
        return _(
            "The request, %(tokens)s tokens, is above the red line (%(line)s), but all that is left outside KEEP is already compacted: the hammer has nothing to strike.",
            tokens=n(story.tokens), line=n(story.line),
        )
    actions = [
        struck_text(action, [block for block in story.struck if block.action == action])
        for action in ("compressed", "truncated", "cleared", "dropped", "shortened", "summarized")
        if any(block.action == action for block in story.struck)
    ]
    return _(
        "The request, %(before)s tokens, crossed the red line (%(line)s), so before the call the hammer %(actions)s: %(after)s tokens are sent.",
        before=n(story.tokens_before), line=n(story.line), actions=listed(actions), after=n(story.tokens),
    )


def fact_text(change: FactChange, lang: str) -> str:
    values = {"label": change.fact.label_in(lang), "text": change.fact.text}
    return {
        "lost": lambda: _("Critical fact lost at this call: %(text)s (%(label)s) is no longer in the request.", **values),
        "kept": lambda: _("Critical fact kept through the compaction: %(text)s (%(label)s).", **values),
        "needed": lambda: _("This call needs %(text)s (%(label)s), and it is still in the request.", **values),
        "missing": lambda: _("This call needs %(text)s (%(label)s), and it is no longer in the request.", **values),
    }[change.change]()


def bill_text(story: CallStory) -> str:
    if story.sent_previous_call is None:
        text = _("SENT, the bill, starts at %(tokens)s tokens.", tokens=n(story.sent_this_call))
    else:
        difference = story.sent_this_call - story.sent_previous_call
        values = {"tokens": n(story.sent_this_call), "difference": n(abs(difference)), "total": n(story.sent_total)}
        if difference > 0:
            text = _("SENT grew by %(tokens)s tokens, %(difference)s more than at the previous call (%(total)s in all).", **values)
        elif difference < 0:
            text = _("SENT grew by %(tokens)s tokens, %(difference)s fewer than at the previous call (%(total)s in all).", **values)
        else:
            text = _("SENT grew by %(tokens)s tokens, as much as at the previous call (%(total)s in all).", **values)
    if story.summarizer_input:
        text = joined([text, _("%(tokens)s of them went to the summarizer: the messages it summarized and its instructions.", tokens=n(story.summarizer_input))], str(get_locale()))
    return text


def explanation(story: CallStory, lang: str) -> str:
    """What happened at a call, in a few sentences: what arrived, the line and the hammer, the
    facts, a rejected request, the bill."""
    items = [arrival_text(arrival) for arrival in story.arrived]
    if story.first:
        sentences = [_("In the well: %(items)s, on the floor (the system prompt and tools, %(floor)s tokens, sent with every request).", items=listed(items), floor=n(story.floor_tokens))]
    else:
        sentences = [_("New since the previous call: %(items)s.", items=listed(items))] if items else []
    sentences.append(line_text(story))
    if story.pinned_kept:
        sentences.append(
            ngettext(
                "Only a pinned message was left to cut (%(ids)s): it stays, and the request stays above the aim.",
                "Only pinned messages were left to cut (%(ids)s): they stay, and the request stays above the aim.",
                len(story.pinned_kept), ids=listed([message_name(block_id) for block_id in story.pinned_kept]),
            )
        )
    if story.notice:
        sentences.append(_("The levels were not enough: the notice the context-management manual prescribes, now in the request, tells the model that old details may be gone."))
    destroyed = sorted({block.tool for block in story.struck if block.fetch_once})
    if destroyed:
        sentences.append(_("%(tools)s cannot be called again: what its truncated result held is gone for good.", tools=listed(destroyed)))
    sentences += [fact_text(change, lang) for change in story.facts]
    if story.overflow:
        sentences.append(
            _("Gulp: the provider counts %(tokens)s tokens, more than the model's %(window)s-token window, and rejects the request.", tokens=n(story.provider_tokens), window=n(story.window))
        )
    if story.invalid_request:
        sentences.append(_("An API rejects this request: a tool result no longer follows the message with its call."))
    if story.no_room_for_reply:
        sentences.append(
            _(
                "The request fits, but its %(reply)s-token reply does not (%(tokens)s + %(reply)s > %(window)s): the reply is cut short or rejected.",
                reply=n(story.reply_tokens), tokens=n(story.provider_tokens), window=n(story.window),
            )
        )
    sentences.append(bill_text(story))
    return joined(sentences, lang)


def close_up(text: str, lang: str) -> str:
    """Sentences glued with spaces, as written for English: Chinese puts no space after 。！？"""
    return re.sub(r"([。！？]) +", r"\1", text) if lang == "zh" else text


def joined(sentences: list[str], lang: str) -> str:
    """Sentences one after the other: Chinese puts no space after its full stop."""
    return ("" if lang == "zh" else " ").join(sentences)


def call_story(result: Replay, number: int, lang: str) -> dict:
    """The text the play page shows for a call: the narration that applies, or the explanation."""
    note = narration_at(result, number)
    if note is not None:
        return {"text": note.text(lang), "author": True, "conditional": not note.when.always}
    return {"text": explanation(explain(result, number), lang), "author": False, "conditional": False}


def outcome_text(done: Outcome, lang: str) -> str:
    """What a strategy did on this scenario, for its column of the comparison."""
    if done.first_above_line is None:
        sentences = [_("Here the request never crossed the red line: there was nothing to compact.")]
    elif done.compactions:
        sentences = [
            ngettext(
                "Here the hammer fell once, at call %(first)s.",
                "Here the hammer fell %(num)d times, first at call %(first)s.",
                len(done.compactions),
                first=done.compactions[0],
            )
        ]
    elif done.strategy == "none":
        sentences = [_("Here the request crossed the red line at call %(call)s, and nothing was compacted.", call=done.first_above_line)]
    else:
        sentences = [_("Here the request crossed the red line at call %(call)s, but nothing outside KEEP could be compacted.", call=done.first_above_line)]
    if done.grown_notes:
        sentences.append(
            ngettext(
                "%(num)d truncation note was longer than the small result it replaced (+%(tokens)s tokens).",
                "%(num)d truncation notes were longer than the small results they replaced (+%(tokens)s tokens).",
                done.grown_notes,
                tokens=n(done.grown_tokens),
            )
        )
    if done.overflow_calls:
        sentences.append(
            ngettext(
                "The request overflowed the model's window at call %(call)s.",
                "The request overflowed the model's window at %(num)d calls, from call %(call)s.",
                len(done.overflow_calls),
                call=done.overflow_calls[0],
            )
        )
    if done.invalid_calls:
        sentences.append(_("From call %(call)s an API rejects the requests: tool calls were split from their results.", call=done.invalid_calls[0]))
    if done.no_room_calls:
        sentences.append(_("At call %(call)s the reply had no room left in the window.", call=done.no_room_calls[0]))
    if not (done.overflow_calls or done.invalid_calls or done.no_room_calls):
        sentences.append(_("Every request fit the model's window."))
    return joined(sentences, lang)


def message_name(block_id: str) -> str:
    """A block as people name it: its place in the chat, never the internal id ("m7")."""
    if block_id.startswith("m") and block_id[1:].isdigit():
        return _("message %(number)s of the chat", number=block_id[1:])
    if block_id.startswith("s") and block_id[1:].isdigit():
        return _("summary %(number)s", number=block_id[1:])
    return ""
