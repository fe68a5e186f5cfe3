"""Cline and Roo Code task histories (api_conversation_history.json): the Anthropic messages
the extension sent (docs/transcripts.md). Older histories hold tool calls as XML in the
assistant's text; current ones (Cline v3.35 on) hold native tool_use blocks. Either way a
result is usually a user text block opening "[tool_name for 'argument'] Result:": Cline writes
a tool_result block only when it can map the call's id, else that text (ToolResultUtils.ts).

Facts from Cline's source (cline/cline, tag v3.53.0, commit of 2026-01-23):
- Before each request, ContextManager.ensureToolResultsFollowToolUse gives every tool_use
  left without a tool_result in the next user message a tool_result "result missing", put
  first with the other results in the calls' order; the rest of the message (the text
  results) follows. That is what the provider receives, and what is replayed.
- Each assistant message carries `modelInfo` {modelId, providerId, mode} and `metrics.tokens`
  {prompt, completion, cached}, the request's usage as the provider's handler reported it
  (src/core/task/index.ts; src/shared/messages/metrics.ts). `cached` is the cache writes
  plus reads, and `prompt` excludes them for the providers in INPUT_WITHOUT_CACHE.
- The context window is in no message's fields, but environment_details states it:
  "# Context Window Usage\\n78,199 / 128K tokens used (61%)" (getEnvironmentDetails).
- Near the window Cline drops half or three quarters of the history after the first
  exchange, or replaces files read twice by a notice (ContextManager
  .getNewContextMessagesAndMetadata). It keeps that apart, not in this file: a request
  smaller than the one before it, on the same model, is where it did."""

from __future__ import annotations

import re
from typing import Any

from ...i18n import N_
from ...model import RecordedCompaction, RecordedUsage
from .anthropic_messages import FORMAT as ANTHROPIC
from .claude_code import NOTES as CLAUDE_CODE_NOTES
from .common import Format, Imported, settle_calls

RESULT_OPENING = re.compile(r"^\[[^\]\n]{1,200}\] Result:")
# What ensureToolResultsFollowToolUse sends for a call with no tool_result (v3.53.0).
RESULT_MISSING = "result missing"
# The providers whose handler reports `inputTokens` without the cached part (v3.53.0,
# src/core/api/providers/: anthropic.ts, vertex.ts and minimax.ts give Anthropic's
# input_tokens; cline.ts, openrouter.ts, vercel-ai-gateway.ts, gemini.ts subtract the cache
# reads; openai-native.ts, deepseek.ts, groq.ts the reads and writes). Every other handler
# reports the whole prompt, cache included.
INPUT_WITHOUT_CACHE = frozenset(
    ("anthropic", "vertex", "minimax", "cline", "openrouter", "vercel-ai-gateway", "gemini", "openai-native", "deepseek", "groq")
)
# "(contextWindow / 1000).toLocaleString()K", as an en-US locale writes it: "200", "1,048.576".
WINDOW_USAGE = re.compile(r"# Context Window Usage\n[\d,]+ / ([\d,]+(?:\.\d+)?)K tokens used")


def _texts(messages: list) -> list[str]:
    return [
        block.get("text", "")
        for message in messages
        if isinstance(message, dict) and message.get("role") == "user" and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]


def _is_cline(raw: Any) -> bool:
    """A list of Anthropic messages where a user text block is a "[tool] Result:" or an
    <environment_details> block, Cline's own."""
    texts = _texts(raw) if isinstance(raw, list) else []
    return any(RESULT_OPENING.match(text) or text.lstrip().startswith("<environment_details>") for text in texts)


def _blocks(message: Any) -> list:
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _results_follow_calls(raw: list) -> tuple[list, int]:
    """The messages as Cline sends them: after an assistant message with tool_use blocks, the
    next user message opens with a tool_result for each call, in the calls' order, "result
    missing" where the history has none; its other blocks follow. And how many were missing."""
    sent = list(raw)
    missing = 0
    for index in range(len(sent) - 1):
        message, following = sent[index], sent[index + 1]
        if not isinstance(message, dict) or message.get("role") != "assistant" or not isinstance(following, dict) or following.get("role") != "user":
            continue
        calls = [block["id"] for block in _blocks(message) if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str)]
        if not calls:
            continue
        content = following.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else _blocks(following)
        results = {block.get("tool_use_id"): block for block in blocks if isinstance(block, dict) and block.get("type") == "tool_result"}
        missing += sum(1 for call in calls if call not in results)
        opening = [results.get(call, {"type": "tool_result", "tool_use_id": call, "content": RESULT_MISSING}) for call in calls]
        others = [block for block in blocks if not (isinstance(block, dict) and block.get("type") == "tool_result" and block.get("tool_use_id") in calls)]
        sent[index + 1] = {**following, "content": opening + others}
    return sent, missing


def _usage(raw: list) -> tuple[RecordedUsage, ...]:
    usage = []
    call = 0
    for index, message in enumerate(raw):
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        call += 1
        metrics = message.get("metrics")
        tokens = metrics.get("tokens") if isinstance(metrics, dict) else None
        if not isinstance(tokens, dict) or not all(isinstance(tokens.get(key, 0), int) for key in ("prompt", "completion", "cached")):
            continue
        model = message.get("modelInfo") if isinstance(message.get("modelInfo"), dict) else {}
        cache_apart = model.get("providerId") in INPUT_WITHOUT_CACHE
        sent = tokens.get("prompt", 0) + (tokens.get("cached", 0) if cache_apart else 0)
        if sent > 0:
            # `cached` joins writes and reads: what was read from the cache is not known.
            usage.append(RecordedUsage(call, sent, tokens.get("completion"), None, f"messages[{index}].metrics.tokens"))
    return tuple(usage)


def _compactions(raw: list, usage: tuple[RecordedUsage, ...]) -> tuple[RecordedCompaction, ...]:
    """Where the recorded prompt fell on the same model: Cline cut the history it sent."""
    models = [message.get("modelInfo", {}).get("modelId") if isinstance(message.get("modelInfo"), dict) else None for message in raw if isinstance(message, dict) and message.get("role") == "assistant"]
    return tuple(
        RecordedCompaction(now.call, "", "auto", before.input_tokens + (before.output_tokens or 0), now.source)
        for before, now in zip(usage, usage[1:])
        if now.input_tokens < before.input_tokens and models[now.call - 1] == models[before.call - 1]
    )


def _model(raw: list) -> str | None:
    """The model of the last request that names one (Cline's own message-state.ts takes it so)."""
    for message in reversed(raw):
        model = message.get("modelInfo") if isinstance(message, dict) else None
        if isinstance(model, dict) and isinstance(model.get("modelId"), str) and model["modelId"]:
            return model["modelId"]
    return None


def _window(raw: list) -> tuple[int | None, str]:
    """The window the last environment_details states, and where."""
    for index in range(len(raw) - 1, -1, -1):
        for position, block in enumerate(_blocks(raw[index])):
            text = block.get("text") if isinstance(block, dict) else None
            found = WINDOW_USAGE.search(text) if isinstance(text, str) and "# Context Window Usage" in text else None
            if found:
                return round(float(found.group(1).replace(",", "")) * 1000), f"messages[{index}].content[{position}]"
    return None, ""


def _read_cline(raw: list) -> Imported:
    sent, missing = _results_follow_calls(raw)
    imported = ANTHROPIC.read({"messages": sent})
    # Calls of a history's last reply: no request followed them, so no result either.
    counts = {"moved": 0, "unanswered": 0}
    imported.messages, imported.origins = settle_calls(imported.messages, imported.origins, counts)
    results = sum(1 for text in _texts(raw) if RESULT_OPENING.match(text))
    imported.format = "cline"
    notes = [(N_("Tool results kept by Cline as text (\"[tool] Result:\" blocks in user messages): %(count)s. They are sent as the text they are, in user messages."), {"count": results})]
    if missing:
        notes.append((N_("Tool calls with no tool_result block: %(count)s. Cline sends each with the result \"result missing\" before the next user message's text, as it does before every request (ensureToolResultsFollowToolUse)."), {"count": missing}))
    if counts["unanswered"]:
        notes.append((CLAUDE_CODE_NOTES["unanswered"], {"count": counts["unanswered"]}))
    imported.usage = _usage(raw)
    imported.compactions = _compactions(raw, imported.usage)
    if imported.compactions:
        notes.append((N_("Requests smaller than the one before: %(count)s. There Cline cut the history it sent (it drops older messages near the window, or replaces a file read twice), which the history file does not record; the replay keeps the whole history and marks those calls."), {"count": len(imported.compactions)}))
    imported.notes = [
        *notes,
        *imported.notes,
        (N_("The history holds neither the system prompt nor the tool descriptions."), {}),
    ]
    imported.model = _model(raw)
    imported.window, imported.window_source = _window(raw)
    return imported


FORMAT = Format("cline", N_("Cline / Roo Code task history"), _is_cline, _read_cline, notes=ANTHROPIC.notes, reads_keys=frozenset(), shape='Anthropic messages with "[tool] Result:" or <environment_details> text (api_conversation_history.json)')
