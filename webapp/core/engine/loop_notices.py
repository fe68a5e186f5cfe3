"""What the loop says once a replay when its settings, not the chat, stand in the way: KEEP
cannot fit, KEEP covers the whole history, "clear at least" held a clearing back, a pin names
no message. Catalog messages (i18n), worded with the numbers each replay finds."""

from __future__ import annotations

from ..i18n import N_

# "Call N cannot fit": the floor and KEEP alone pass the window. KEEP is named as it is (never
# "the last 2 requests" when there is one), and "lower keep" is advised only when keep can go
# lower.
CANNOT_FIT = {
    ("requests", True): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last %(keep)s requests, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help: lower keep or raise the window."
    ),
    ("requests", False): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last request, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help while KEEP counts requests: keep the last "
        "few tool results instead, or raise the window."
    ),
    ("tool_results", True): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last %(keep)s tool results and what follows them, %(keep_tokens)s tokens) need "
        "%(needed)s tokens, more than the %(window)s-token window. No compaction can help: lower "
        "keep or raise the window."
    ),
    ("tool_results", False): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last tool result and what follows it, %(keep_tokens)s tokens) need %(needed)s tokens, "
        "more than the %(window)s-token window. No compaction can help: raise the window."
    ),
    ("turns", True): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last %(keep)s turns, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help: lower keep or raise the window."
    ),
    ("turns", False): N_(
        "Call %(call)s cannot fit: the system prompt and tools (%(floor)s tokens) and the KEEP zone "
        "(the last turn, %(keep_tokens)s tokens) need %(needed)s tokens, more than the "
        "%(window)s-token window. No compaction can help: raise the window."
    ),
}
# A compaction was needed and KEEP covered the whole history, so nothing could be cut.
KEEP_COVERS_ALL = {
    "only_request": N_(
        "Call %(call)s is above the line, but the only request is the first message: KEEP counts "
        "requests, so it covers the whole history and nothing can be compacted. Keep the last "
        "%(suggest)s tool results instead (KEEP in tool results)."
    ),
    "requests": N_(
        "Call %(call)s is above the line, but KEEP (the last %(keep)s requests) covers every "
        "request of the history (requests so far: %(count)s), so nothing can be compacted. Lower "
        "keep to %(lower)s, or count KEEP in tool results."
    ),
    "tool_results": N_(
        "Call %(call)s is above the line, but KEEP (the last %(keep)s tool results) covers every "
        "tool result of the history (tool results so far: %(count)s), so nothing can be "
        "compacted. Lower keep to %(lower)s."
    ),
    "turns": N_(
        "Call %(call)s is above the line, but KEEP (the last %(keep)s turns) covers every turn of "
        "the history (turns so far: %(count)s), so nothing can be compacted. Lower keep to "
        "%(lower)s."
    ),
}
HELD_BACK = N_(
    "Call %(call)s is above the line, but clearing every old tool result would take off only "
    "%(clearable)s tokens, fewer than \"clear at least\" (%(minimum)s): the request is sent as it "
    "is, and the prompt cache stays whole. Lower \"clear at least\" if the window is at risk."
)
# The pin setting names ids that are no message of the chat (a typo, or another transcript's).
PIN_UNKNOWN = N_(
    "Pinned ids that name no message of this chat: %(count)s (it has %(last)s messages, numbered "
    "from m1, the first request)."
)
# Anthropic's default number of tool uses to keep, suggested when KEEP should count them.
SUGGESTED_TOOL_RESULTS = 3
