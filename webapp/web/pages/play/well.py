"""The well's words: each block's label and accessible name, each trace's, and the levels'
(axis and zoomed view), in the page's language, beside the pure layout of
webapp/core/drawing/well.py (geometry, motion, zoom, label placement). `draw` returns the
layout as the core made it and its words as a `WellWords` record: the template reads the
geometry from the one and the words from the other, and the web changes nothing of the core's
shapes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable
from unicodedata import east_asian_width

from babel.numbers import format_compact_decimal
from flask_babel import get_locale, get_translations

from ....core.engine.history import Block
from ....core.i18n import N_
from ....core.model import LAYER_WORDS, MANUAL_KEYS
from ....core.settings import Settings
from ....core.triggers import TRIGGERS
from ....core.engine.calls import Replay
from ....core.drawing.block_versions import tool_names
from ....core.drawing.well import layout
from ....core.drawing.well_parts import NORMAL, PROJECTOR, Mark, Shape, Trace, Well, block_kind
from ...languages import percent, whole_numbers


@dataclass(frozen=True)
class BlockLabels:
    """What one block (or the floor) says, and the link and classes it is drawn with."""

    label: str  # its whole name, as the table view and the accessible name say it
    drawn: str  # the label as a wide screen's column draws it: long tool names clipped
    short: str  # the label without its kind (the colour says it), for a phone
    words: tuple[str, str, str] | None  # `drawn` as (long only, short, long only); None: short is no part of it
    name: str  # accessible name: what, tokens, state
    href: str  # the link that selects it
    classes: str  # its classes in the drawing (look, and orphan, pinned, selected)
    written: str  # its tokens as written on it, when it is tall enough ("" otherwise)
    tokens_short: str  # its tokens in a phone's narrow columns (15K for 14,996); "" when no shorter
    note: str  # the floor's line for its unlogged part ("137,283 of it not in the log"), or ""
    note_short: str  # the same, with the phone's short figure


@dataclass(frozen=True)
class TraceLabels:
    label: str  # "3 dropped"
    note: str  # the label's second line: the tokens they held
    note_short: str = ""  # the same in a narrow column: "3.1K so far"


@dataclass(frozen=True)
class LevelLabels:
    """A level's words: on the axis, its figure (`label`) and what it is (`caption`); in the
    zoomed view, one line (`label`) and its phone form (`short`, `words` as BlockLabels')."""

    label: str
    caption: str = ""
    short: str = ""
    words: tuple[str, str, str] | None = None
    # A line named by a setting (Ollama's num_ctx): its figure on the axis, in tokens, up to
    # six characters wide ("32,768"), in a smaller type than a share ("80%").
    named: bool = False


@dataclass(frozen=True)
class WellWords:
    """The words of one drawn well: the blocks' by id, the traces' and the levels' beside the
    core's parts they name, in the well's order."""

    blocks: dict[str, BlockLabels]
    traces: list[tuple[Trace, TraceLabels]]
    axis: list[tuple[Mark, LevelLabels]]
    zoom: list[tuple[Mark, LevelLabels]]


def draw(
    replay: Replay,
    number: int,
    selected: str | None = None,
    projector: bool = False,
    pinned: frozenset[str] = frozenset(),
    link: Callable[[str], str] = lambda block: f"?block={block}",
) -> tuple[Well, WellWords]:
    """The well of call `number` and its words; `pinned` blocks say so in their name; `link`
    writes the URL that selects a block. What each block's markup says is written here once,
    so the template's loop over the blocks only places it (a step redraws every block)."""
    well = layout(replay, number, selected, PROJECTOR if projector else NORMAL)
    names = tool_names(replay)
    # The catalog and number format looked up once: a well has up to hundreds of words to say.
    _ = get_translations().gettext
    tokens = whole_numbers()
    locale = str(get_locale())
    floor = _("floor: system prompt + tools")
    room = LABEL_ROOM if well.zoom else UNZOOMED_ROOM

    def block_labels(shape: Shape) -> BlockLabels:
        label = block_label(shape.block, names, _) if shape.block else floor
        drawn = drawn_label(shape.block, names, _, room) if shape.block else floor
        short = short_label(shape.block, names, _) if shape.block else _("floor")
        note = note_short = ""
        if shape.unlogged:  # measured from the recorded usage; said in full in the bill
            note = _("%(tokens)s of it not in the log") % {"tokens": tokens(shape.unlogged)}
            note_short = _("%(tokens)s not in the log") % {"tokens": short_figure(shape.unlogged, locale, tokens)}
        name = accessible_name(shape, label, note, _, tokens)
        whole, figure = tokens(shape.tokens), short_figure(shape.tokens, locale, tokens)
        return BlockLabels(
            label=label,
            drawn=drawn,
            short=short,
            words=split_label(drawn, short),
            name=(name + ", " + _("pinned")) if shape.id in pinned else name,
            href=link(shape.id),
            classes=" ".join(filter(None, [shape.look, shape.orphan and "orphan", shape.id in pinned and "pinned", shape.selected and "selected"])),
            written=f"{shape.sign}{whole}" if well.inside(shape) else "",
            tokens_short=figure if figure != whole else "",
            note=note,
            note_short=note_short,
        )

    traces = [(trace, trace_labels(trace, _, tokens, locale)) for trace in well.traces]
    shares, named = level_shares(replay.settings)
    axis = [(mark, LevelLabels(*axis_caption(mark, shares, _, tokens, named), named=mark.kind in named)) for mark in well.marks]
    zoom = [(mark, zoom_labels(mark, tokens(well.zoom.factor), shares, _, tokens, named)) for mark in well.zoom.marks] if well.zoom else []
    return well, WellWords({shape.id: block_labels(shape) for shape in well.shapes}, traces, axis, zoom)


def trace_labels(trace: Trace, _: Callable[[str], str], tokens: Callable[[float], str], locale: str) -> TraceLabels:
    """Every message dropped at a trace so far, not only at this call's compaction (the
    narration's): said on the note line, since the label's line has no room to spare on a phone."""
    return TraceLabels(
        _("%(count)d dropped") % {"count": len(trace.ids)},
        _("%(tokens)s tokens, so far") % {"tokens": tokens(trace.tokens)},
        _("%(tokens)s so far") % {"tokens": short_figure(trace.tokens, locale, tokens)},
    )


def level_shares(settings: Settings) -> tuple[dict[str, str], frozenset[str]]:
    """The lines as shares of the window: the red line, and the alert and target when set; and
    the lines named by a setting instead (Ollama's red line is num_ctx's tokens)."""
    trigger = TRIGGERS[settings.strategy]
    named = frozenset({"line"}) if trigger and trigger.line_setting else frozenset()
    line = trigger.line_setting if named else percent(settings.effective_threshold, 1)
    return {"line": line, "alert": percent(settings.alert, 1), "target": percent(settings.target, 1)}, named


def zoom_labels(
    mark: Mark, factor: str, shares: dict[str, str], _: Callable[[str], str], tokens: Callable[[float], str], named: frozenset[str] = frozenset()
) -> LevelLabels:
    """A level inside the zoomed view: its line among the block labels, and a phone's."""
    label = zoom_mark_label(mark, factor, shares, _, tokens)
    figure, caption = axis_caption(mark, shares, _, tokens, named)
    short = _("zoom ×%(factor)s") % {"factor": factor} if mark.kind == "zoom" else f"{caption} {figure}"
    return LevelLabels(label, short=short, words=split_label(label, short))


def split_label(label: str, short: str) -> tuple[str, str, str] | None:
    """A label around its short form, (what only the label says before it, the short form,
    what only the label says after it), so the drawing writes each word once; None when the
    short form is no part of the label."""
    if short and short in label:
        before, _, after = label.partition(short)
        return before, short, after
    return None


def axis_caption(
    mark: Mark, shares: dict[str, str], _: Callable[[str], str], tokens: Callable[[float], str], named: frozenset[str] = frozenset()
) -> tuple[str, str]:
    """A level as its two axis lines: the figure, and what it is (a line: its share, and its
    tokens; a line that is a setting's tokens, `named`: its tokens, and the setting's name)."""
    figure = axis_figure(mark.tokens, tokens)
    if mark.kind in named:  # the figure in the label's place: past six characters, in the short form (262K)
        short = format_compact_decimal(mark.tokens, locale=str(get_locale()), fraction_digits=0) if mark.tokens >= 100_000 else figure
        return short, shares[mark.kind]
    if mark.kind in shares:
        return shares[mark.kind], figure
    caption = {"model": _("model"), "window": _("window"), "zoom": _("zoom")}.get(mark.kind, "")
    return figure, caption


def axis_figure(value: float, tokens: Callable[[float], str]) -> str:
    """A level's tokens as the axis column has room for them: whole up to 999,999; past that in
    the language's short form (1M, 1 M, 100万), since a million-token window's figure is wider
    than the column. The accessible names and the table keep every digit."""
    if value < 1_000_000:
        return tokens(value)
    return format_compact_decimal(value, locale=str(get_locale()), fraction_digits=1)


def short_figure(value: float, locale: str, tokens: Callable[[float], str]) -> str:
    """Tokens in at most four characters where the language's short form allows (812, 5.1K,
    140K, 1.5万), for a phone's narrow columns: inside a block (41 px wide when zoomed; without
    the scissors of a cut result, which its colour and label already show) and beside a label."""
    whole = round(value)  # an estimate counts quarter tokens; Chinese has no short form under 万
    if whole < 1000:
        return tokens(value)
    figure = format_compact_decimal(whole, locale=locale, fraction_digits=1)
    return figure if len(figure) <= 4 else format_compact_decimal(whole, locale=locale, fraction_digits=0)


def zoom_mark_label(mark: Mark, factor: str, shares: dict[str, str], _: Callable[[str], str], tokens: Callable[[float], str]) -> str:
    """A level inside the zoomed view, labelled among the blocks in one line."""
    if mark.kind == "zoom":
        return _("zoom ×%(factor)s, up to %(tokens)s") % {"factor": factor, "tokens": tokens(mark.tokens)}
    if mark.kind == "line":
        return _("red line %(share)s: %(tokens)s") % {"share": shares["line"], "tokens": tokens(mark.tokens)}
    if mark.kind == "alert":
        return _("alert line %(share)s: %(tokens)s") % {"share": shares["alert"], "tokens": tokens(mark.tokens)}
    if mark.kind == "target":
        return _("target %(share)s: %(tokens)s") % {"share": shares["target"], "tokens": tokens(mark.tokens)}
    if mark.kind == "model":
        return _("the model's real window: %(tokens)s") % {"tokens": tokens(mark.tokens)}
    return _("window: %(tokens)s") % {"tokens": tokens(mark.tokens)}


def block_label(block: Block, names: dict[str, str], _: Callable[[str], str], tools: Callable[[str], str] = str) -> str:
    """What a block is, in words (through the catalog's `_`): its role, and the tool it calls
    or answers, as `tools` writes a tool's name."""
    if block.state == "summary":
        return _("summary of %(count)d messages") % {"count": len(block.replaces)}
    if block.state == "notice":
        return _("overflow notice")
    if block.role not in {"user", "assistant", "tool", "function"} and block.layer in LAYER_WORDS:
        return _(LAYER_WORDS[block.layer]) if block.layer != "history" else block.role
    if block.role in {"tool", "function"}:  # a legacy function result names its function itself
        return _("tool result: %(name)s") % {"name": tools(answered_tool(block, names))}
    if block.role == "assistant":
        called = called_tools(block, tools)
        if called:
            return _("assistant → %(tools)s") % {"tools": called}
        return _("assistant")
    if block.role == "user":
        return _("user")
    return block.role or _("message")


def answered_tool(block: Block, names: dict[str, str]) -> str:
    """The name of the tool a tool (or function) result answers, "?" when the chat does not say."""
    if block.role == "function":
        return block.message.get("name", "?")
    return names.get(block.message.get("tool_call_id", ""), "?")


def called_names(block: Block) -> Counter[str]:
    """How many times a message calls each tool, by the tool's name, in the order first called."""
    return Counter((call.get("function") or {}).get("name", "") for call in block.message.get("tool_calls") or [])


def called_tools(block: Block, name: Callable[[str], str] = str) -> str:
    """The tools an assistant message calls, each named once (as `name` writes it) with how
    many times when more than once ("get_stock ×3"), so parallel calls fit on one line."""
    return ", ".join(name(tool) if count == 1 else f"{name(tool)} ×{count}" for tool, count in called_names(block).items())


# The longest tool name a phone's label column writes whole, with its tokens beside it (15
# ran "mcp_…brary-docs 137" 2 px past a 390 px phone's edge).
SHORT_NAME = 14
# The characters a wide screen's label writes before its tokens (a CJK character counts two):
# the floor's label, which fits the narrowest column of a wide screen (beside a zoomed view at
# 1280 px) in every language; without a zoomed view the column is 30 px wider (3 characters
# of room: 4 ran a Chinese label a pixel past the edge). A label with longer tool names has
# them clipped to fit.
LABEL_ROOM = 30
UNZOOMED_ROOM = LABEL_ROOM + 3


def clipped(name: str, limit: int = SHORT_NAME) -> str:
    """A tool's name in at most `limit` characters: whole when it fits, else its start and its
    end around "…", the end the longer part, as tools that share a prefix (mcp__context7__…)
    differ at their end (mcp_…ibrary-id, mcp_…rary-docs in 14)."""
    if len(name) <= limit:
        return name
    head = (limit - 1) // 3
    return name[:head] + "…" + name[len(name) - (limit - 1 - head) :]


def width(text: str) -> int:
    """How many characters' room a text takes: two for a wide (CJK) character, one for others."""
    return sum(2 if east_asian_width(char) in "WF" else 1 for char in text)


def drawn_label(block: Block, names: dict[str, str], _: Callable[[str], str], room: int = LABEL_ROOM) -> str:
    """The label a wide screen draws: the whole label when it takes at most `room`, else its
    tool's name clipped to the room the rest of the label leaves, but never shorter than a
    phone's (so the phone's form is a part of it, written once: split_label); a message that
    calls several tools then says how many ("assistant → 2 tools"). The accessible name, the
    table view and the selected block's detail keep the whole names."""
    label = block_label(block, names, _)
    if width(label) <= room:
        return label
    tools = len(called_names(block))
    if tools > 1:  # no room for two names clipped to a phone's length: the tool results name each
        return _("assistant → %(count)d tools") % {"count": tools}
    each = max(SHORT_NAME, room - width(block_label(block, names, _, lambda tool: "")))
    return block_label(block, names, _, lambda tool: clipped(tool, each))


def short_label(block: Block, names: dict[str, str], _: Callable[[str], str]) -> str:
    """The label without what its colour already tells, for a narrow screen: the tool's name
    (clipped) for a tool call or result (how many tools, for a call of several that would take
    more room than one name), "summary" for a summary, the manual's name (rag, ltm)
    for retrieved pages or memory."""
    if block.state == "summary":
        return _("summary")
    if block.role in {"tool", "function"}:
        return clipped(answered_tool(block, names))
    if block_kind(block) in ("memory", "retrieval"):  # a context message: the manual's name (ltm, rag)
        return MANUAL_KEYS[block_kind(block)]
    if block.role == "assistant":
        called = called_tools(block, clipped)
        if len(called_names(block)) > 1 and width(called) > SHORT_NAME:  # wider than one clipped name
            return _("→ %(count)d tools") % {"count": len(called_names(block))}
        if called:
            return "→ " + called
    return block_label(block, names, _)


# A block's state as its name says it, translated when used (one string, not all, per block).
STATE_WORDS = {"original": N_("kept as sent"), "summary": N_("a summary"), "notice": N_("added by the loop")}


def accessible_name(shape: Shape, label: str, note: str, _: Callable[[str], str], tokens: Callable[[float], str]) -> str:
    """What a screen reader says of a block (`label`, and the floor's `note`): what it is, its
    tokens, its state, KEEP."""
    if shape.kind == "floor":
        name = _("%(label)s, %(tokens)s tokens, never compacted") % {"label": label, "tokens": tokens(shape.tokens)}
        return f"{name}, {note}" if note else name
    where = _("in KEEP") if shape.in_keep else _("outside KEEP")
    if shape.state == "truncated":
        state = _("truncated to a note (was %(was)s tokens)") % {"was": tokens(shape.was or 0)}
    elif shape.state == "cleared":
        state = _("cleared to a placeholder (was %(was)s tokens)") % {"was": tokens(shape.was or 0)}
    else:
        state = _(STATE_WORDS[shape.state]) if shape.state in STATE_WORDS else shape.state
    if shape.orphan:
        state += ", " + _("its call is gone: the API rejects the request")
    return _("%(label)s, %(tokens)s tokens, %(state)s, %(where)s") % {
        "label": label,
        "tokens": tokens(shape.tokens),
        "state": state,
        "where": where,
    }
