"""A transcript as a scenario: read in any format formats/ knows, its requests hold exactly
its messages, and its id (the link of a pasted one) is the hash of its content."""

from __future__ import annotations

import hashlib

from dataclasses import replace

from ..engine.replay import replay
from ..i18n import N_
from ..model import Origin, Scenario, ScriptMessage, tool_pair_problems
from ..counter_catalog import missing
from ..counting.open_models import model_counter
from ..counting.windows import model_window
from ..settings import Settings
from .formats import FormatError, detect, import_transcript, parse
from .formats.common import TooDeep, message_layer, relocate
from .scenarios import ScenarioError, first_request, grouped

# A pasted transcript's title and lesson, in each language of the interface (like a scenario's).
TRANSCRIPT_WORD = {"en": "Transcript", "fr": "Transcription", "zh": "对话记录"}
TRANSCRIPT_LESSON = {
    "en": "Your own agent's chat, replayed call by call.",
    "fr": "Le chat de votre agent, rejoué appel par appel.",
    "zh": "你自己的智能体对话，逐次调用重放。",
}
NO_PREFIX = N_("No system prompt: each request starts with the first user message, and nothing is added ahead of it.")
PREFIX_KEPT = N_(
    "Messages ahead of the first user request: %(count)s (system prompt, examples, an opening reply). "
    "They are the floor: sent with every request, never compacted."
)

SMALL_CHAT = N_(
    "A chat this small never reaches the red line of the usual %(usual)s-token window: this one "
    "starts with a %(window)s-token window, so that the hammer falls. Change it in the settings."
)
WINDOW_FROM_MODEL = N_(
    "Window: %(window)s tokens, the context window of %(model)s, the model the file names "
    "(from %(source)s). Change it in the settings."
)
WINDOW_FROM_FILE = N_("Window: %(window)s tokens, as the file records it (%(source)s).")
# Said at the top of the page (and by the command line) while the window is the playground's own.
WINDOW_UNKNOWN_MODEL = N_(
    "The window is not known: the file records none, and the playground's table of models does not "
    "know %(model)s. The replay uses the playground's %(window)s tokens, which may be far from the "
    "model's: set the window of the model this session ran on."
)
WINDOW_UNKNOWN = N_(
    "The window is not known: the file names no model and records no window. The replay uses the "
    "playground's %(window)s tokens, which may be far from the model's: set the window of the model "
    "this session ran on."
)
KEEP_IN_TOOL_RESULTS = N_(
    "KEEP counts tool results: KEEP in requests covers a session of one or two requests whole "
    "(this one has %(count)s), so nothing could be compacted."
)
# Formats whose logs leave part of every request out (their readers say which part): the floor
# then holds what the provider's first recorded count measures of it, or nothing (the replay's
# notes say which, output/serialize.py), so no note says that nothing is added ahead.
LOGS_LEAVE_OUT = frozenset({"claude-code", "codex", "gemini-cli", "cline", "aider", "openhands", "swe-agent"})
WINDOW_STEP = 50  # a small chat's window is a multiple of this, a number a person would type


def small_chat_window(scenario: Scenario) -> int | None:
    """For a chat that never crosses the red line of the default window (a chat pasted by
    hand), the largest window, a multiple of WINDOW_STEP, at which the hammer falls at least
    once with every request fitting and no overflow (the scenario's other settings kept); None when its window already
    compacts or no window does (a chat of one or two requests is all KEEP). It is found from
    the chat's size: no window above its largest request over the red line compacts."""
    default = scenario.settings
    calls = replay(scenario, default).calls
    if any(call.compaction is not None for call in calls):
        return None
    largest = max((call.tokens for call in calls), default=0) / default.threshold
    for window in range(int(largest) // WINDOW_STEP * WINDOW_STEP, 99, -WINDOW_STEP):
        result = replay(scenario, default.model_copy(update={"window": window}))
        fits = not result.notices and not any(call.overflow or call.no_room_for_reply for call in result.calls)
        if fits and any(call.compaction is not None and call.compaction.changed for call in result.calls):
            return window
    return None


def transcript_id(content: str | bytes) -> str:
    """Same content, same id: the link of a pasted transcript is the hash of its bytes (of a
    text, its UTF-8)."""
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content
    return "t-" + hashlib.sha256(data).hexdigest()[:16]


def parse_transcript(
    text: str, source: str, *, scenario_id: str | None = None, title: str | None = None, run: int = 1
) -> Scenario:
    """A transcript in any format formats/ reads (of a file holding several runs, run `run`),
    as a scenario whose requests hold exactly its messages. A refusal names the format the
    text looks like (`ScenarioError.looks_like`) when one was recognised."""
    raw = parse(text)
    if isinstance(raw, TooDeep):
        raise ScenarioError(source, raw.problems)
    try:
        imported = import_transcript(raw, run)
    except FormatError as error:
        raise ScenarioError(source, error.problems, looks_like=_label(raw)) from None
    problems = tool_pair_problems(imported.messages, "messages")
    if imported.format != "openai-chat":
        problems = [relocate(where, what, imported.origins) for where, what in problems]
    if problems:
        raise ScenarioError(source, problems, looks_like=_label(raw))
    start = first_request(imported.messages, imported.examples)
    notes = list(imported.notes)
    if start == 0:
        if imported.format not in LOGS_LEAVE_OUT and not imported.usage:
            notes.append((NO_PREFIX, {}))
    elif start > 1 or imported.messages[0].get("role") != "system":
        notes.append((PREFIX_KEPT, {"count": start}))
    name = scenario_id or transcript_id(text)
    scenario = Scenario(
        id=name,
        title={"en": title} if title else {language: f"{word} {name}" for language, word in TRANSCRIPT_WORD.items()},
        lesson=dict(TRANSCRIPT_LESSON),
        prefix=tuple(imported.messages[:start]),
        prefix_layers=tuple(layer if layer != "history" else "system" for layer in map(message_layer, imported.messages[:start])),
        tools=imported.tools,
        script=grouped(
            [
                ScriptMessage(f"m{index + 1}", message, layer=message_layer(message))
                for index, message in enumerate(imported.messages[start:])
            ]
        ),
        source=source,
        kind="transcript",
        tools_field=imported.tools_field,
        origin=Origin(
            imported.format, tuple(notes), imported.model, imported.usage, imported.compactions,
            window=imported.window, window_source=imported.window_source,
            harness_settings=tuple(imported.harness_settings.items()),
        ),
    )
    return with_file_settings(scenario, notes)


# Where the session recorded the provider's counts, each call is built on the last one and the
# counter counts only what came since (engine/recorded.py): a tokenizer counts a tool's code or
# JSON within a few percent where the characters / 4 estimate can be off by half.
RECORDED_COUNTER = "o200k_base"
COUNTER_ON_RECORDED = N_(
    "Each call is counted from the provider's count of the last call the file records, plus what came "
    "since, counted with %(counter)s. Change the counter in the settings."
)


# A session that names an open model (Qwen, Llama, Mistral, Gemma, DeepSeek) is counted with that
# model's tokenizer and chat template when the open-models extra is installed (counting/open_models.py).
COUNTER_FROM_MODEL = N_(
    "Counted with %(counter)s: the tokenizer and chat template of %(model)s, the model the file "
    "names. Change the counter in the settings."
)
COUNTER_THE_EXTRA_WOULD = N_(
    "%(model)s, the model the file names, has a counter of its own, %(counter)s (its tokenizer and "
    "chat template), which the open-models extra adds: %(command)s. Meanwhile this replay counts "
    "with %(current)s."
)


def _model_counter(model: str | None, recorded: bool, notes: list) -> str | None:
    """The counter a session's own settings start from, each choice said in a note: the model's
    own when it is an open model whose counter is installed; else, where the provider's counts
    are recorded, RECORDED_COUNTER; else None (the playground's). An open model whose counter
    is not installed gets a note that says how to add it."""
    own = model_counter(model)
    needs = missing(own) if own else None
    if own and not needs:
        notes.append((COUNTER_FROM_MODEL, {"counter": own, "model": model}))
    chosen = own if own and not needs else RECORDED_COUNTER if recorded else None
    if recorded:
        notes.append((COUNTER_ON_RECORDED, {"counter": chosen}))
    if own and needs:
        notes.append((COUNTER_THE_EXTRA_WOULD, {"model": model, "counter": own, "command": needs, "current": chosen or Settings().counter}))
    return chosen


def with_file_settings(scenario: Scenario, notes: list) -> Scenario:
    """The scenario with its own default settings taken from the file, each said in a note:
    the window the file records, else that of the model it names (counting/windows.py), else,
    for a chat made by hand (no harness's log) that names no model and never reaches the usual
    window's line, a window where the hammer falls; the model's own counter for an open model
    (Qwen, Llama, …) when the extra is installed, else a tokenizer for a session that recorded
    the provider's counts; the settings the harness ran with, as the file says (Claude Code's output
    reserve, its reader's note saying so); and KEEP in tool results for a session of one or two
    requests. Where the window comes from is kept (`Origin.window_from`): where nothing gave it,
    the page asks for it (`unknown_window`). A model the table knows never gets the small
    chat's window."""
    origin = scenario.origin
    updates, from_file, window_from = {}, [], ""
    named = model_window(origin.model)
    if origin.window is not None:
        updates["window"], window_from = origin.window, "file"
        notes.append((WINDOW_FROM_FILE, {"window": origin.window, "source": origin.window_source}))
    elif named is not None:
        updates["window"], window_from = named.window, "model"
        notes.append((WINDOW_FROM_MODEL, {"window": named.window, "model": origin.model, "source": named.source}))
    if window_from:
        from_file.append("window")
    counter = _model_counter(origin.model, bool(origin.usage), notes)
    if counter:
        updates["counter"] = counter
        from_file.append("counter")
    updates.update(origin.harness_settings)
    from_file += [name for name, _value in origin.harness_settings]
    requests = sum(1 for item in scenario.script if item.role == "user")
    if scenario.kind == "transcript" and requests <= 2 and any(item.role == "tool" for item in scenario.script):
        updates["keep_unit"] = "tool_results"
        from_file.append("keep_unit")
        notes.append((KEEP_IN_TOOL_RESULTS, {"count": requests}))
    if not window_from and not origin.model and origin.format not in LOGS_LEAVE_OUT:  # a chat made by hand
        window = small_chat_window(replace(scenario, settings=Settings(**updates)))
        if window is not None:
            updates["window"], window_from = window, "small-chat"
            notes.append((SMALL_CHAT, {"usual": Settings().window, "window": window}))
    origin = replace(origin, notes=tuple(notes), settings_from_file=tuple(from_file), window_from=window_from)
    return replace(scenario, settings=Settings(**updates), origin=origin)


def unknown_window(scenario: Scenario, settings: Settings) -> tuple[str, dict] | None:
    """What the page says at its top (and the command line first) while a transcript's window
    came from nowhere and the user has not set one: (catalog message, its values); None
    otherwise."""
    origin = scenario.origin
    if origin is None or origin.window_from or settings.window != scenario.settings.window:
        return None
    if origin.model:
        return WINDOW_UNKNOWN_MODEL, {"model": origin.model, "window": settings.window}
    return WINDOW_UNKNOWN, {"window": settings.window}


def _label(raw) -> str | None:
    """The label of the agent format a refused value looks like, None for a bare chat."""
    try:
        found = detect(raw)
    except FormatError:
        return None
    return found.label if found.name != "openai-chat" else None
