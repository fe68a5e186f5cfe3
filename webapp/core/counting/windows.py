"""The context window of the models sessions name, for a transcript's own window.

Each entry is a model-name prefix, its input window in tokens, and where the figure comes from
(docs/transcripts.md, "Settings from the session", gives the same table). A name is matched by
its longest prefix that ends it or is followed by one of "-_:@" (so "qwen3-235b" is a qwen3,
and "claude-sonnet-4-5-20250929" a claude-sonnet-4-5, but "qwen3.7" and "gpt-5.9" are other
models), after `model_key` has taken off what hosts add to a name (case, a provider path, a
Bedrock vendor prefix); a model not in the table has no window here, and the page asks for it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, TypeVar

CODEX = "Codex's fallback table (codex-rs/core/src/models_manager/model_info.rs @ 2f83b5d)"
LITELLM = "LiteLLM's model_prices_and_context_window_backup.json (litellm 1.110.2)"
ANTHROPIC = "Anthropic's model overview and Claude support article 8606395"
GEMINI_CLI = "Gemini CLI's tokenLimit (packages/core/src/core/tokenLimits.ts, @google/gemini-cli 0.61.0)"


SEPARATORS = "-_:@"
# What a host puts ahead of a model's own name: a path ("openrouter/anthropic/…", "models/…")
# is cut at its last slash; Bedrock's ids add a region and a vendor ("us.anthropic.claude-…");
# a LiteLLM proxy's alias may keep the router's name ("openai/openrouter-llama-4-maverick", an
# OpenHands evaluation's model).
VENDOR = re.compile(r"^(?:(?:[a-z]{2,6}\.)?(?:anthropic|meta|mistral|deepseek|qwen|google)\.|openrouter-)")


@dataclass(frozen=True)
class ModelWindow:
    prefix: str
    window: int
    source: str


WINDOWS = (
    ModelWindow("gpt-4o", 128_000, CODEX),
    ModelWindow("gpt-4.1", 1_047_576, CODEX),
    ModelWindow("gpt-4", 8_192, LITELLM),
    ModelWindow("gpt-4-turbo", 128_000, LITELLM),
    ModelWindow("gpt-5", 272_000, CODEX),
    ModelWindow("gpt-5.1", 272_000, CODEX),
    ModelWindow("gpt-5.2", 272_000, CODEX),
    ModelWindow("gpt-5.3", 272_000, LITELLM),  # gpt-5.3-codex; Codex's own default window too
    ModelWindow("gpt-5.4", 1_050_000, LITELLM),
    ModelWindow("gpt-5.5", 1_050_000, LITELLM),
    ModelWindow("o1", 200_000, LITELLM),
    ModelWindow("o1-mini", 128_000, LITELLM),  # azure/o1-mini
    ModelWindow("o3", 200_000, CODEX),
    ModelWindow("o4-mini", 200_000, CODEX),
    ModelWindow("codex-mini", 200_000, CODEX),
    ModelWindow("gpt-oss", 96_000, CODEX),
    ModelWindow("gpt-3.5", 16_385, CODEX),
    ModelWindow("claude-3-haiku", 200_000, LITELLM),  # vertex_ai/claude-3-haiku
    ModelWindow("claude-3-opus", 200_000, LITELLM),  # anthropic.claude-3-opus-20240229-v1:0
    ModelWindow("claude-3-5-haiku", 200_000, LITELLM),  # anthropic.claude-3-5-haiku-20241022-v1:0
    ModelWindow("claude-3-5-sonnet", 200_000, LITELLM),  # anthropic.claude-3-5-sonnet-20241022-v2:0
    ModelWindow("claude-3-7-sonnet", 200_000, LITELLM),  # anthropic.claude-3-7-sonnet-20250219-v1:0
    ModelWindow("claude-sonnet-4", 200_000, ANTHROPIC),
    ModelWindow("claude-sonnet-4-5", 200_000, LITELLM),
    ModelWindow("claude-sonnet-4-6", 1_000_000, LITELLM),
    ModelWindow("claude-opus-4", 200_000, LITELLM),
    ModelWindow("claude-opus-4-1", 200_000, LITELLM),  # anthropic.claude-opus-4-1-20250805-v1:0
    ModelWindow("claude-opus-4-5", 200_000, LITELLM),
    # LiteLLM gives 1,000,000, the window of its 1M-context option ("claude-opus-4-6[1m]" in
    # Claude Code); without it Claude Code 2.1.39 ran it at 200,000: two real sessions
    # auto-compacted at 167,094 and 170,251 tokens, its line on 200,000 (tests/fixtures/compressed).
    ModelWindow("claude-opus-4-6", 200_000, "the window Claude Code 2.1.39 ran it at in two public sessions, auto-compacted on its 200,000-token line"),
    ModelWindow("claude-opus-4-6[1m]", 1_000_000, LITELLM),
    ModelWindow("claude-opus-4-7", 1_000_000, LITELLM),
    ModelWindow("claude-haiku-4-5", 200_000, LITELLM),
    # Gemini CLI gives every model it does not list this same limit (DEFAULT_TOKEN_LIMIT).
    ModelWindow("gemini", 1_048_576, GEMINI_CLI),
    ModelWindow("gemini-2.5", 1_048_576, GEMINI_CLI),
    ModelWindow("gemini-3", 1_048_576, GEMINI_CLI),  # gemini-3-pro-preview, gemini-3-flash-preview
    ModelWindow("gemini-3.1", 1_048_576, LITELLM),  # gemini-3.1-pro-preview, gemini-3.1-flash-lite
    ModelWindow("gemma-4", 256_000, GEMINI_CLI),
    ModelWindow("llama3", 8_192, LITELLM),
    ModelWindow("llama3.1", 131_072, LITELLM),
    ModelWindow("llama3.2", 131_072, LITELLM),  # lambda_ai/llama3.2-3b-instruct
    ModelWindow("llama3.3", 131_072, LITELLM),
    ModelWindow("llama-4-maverick", 1_000_000, LITELLM),  # meta_llama/Llama-4-Maverick-17B-128E-Instruct-FP8
    ModelWindow("llama-4-scout", 10_000_000, LITELLM),  # meta_llama/Llama-4-Scout-17B-16E-Instruct-FP8
    ModelWindow("qwen2.5", 32_768, LITELLM),  # deepinfra/Qwen/Qwen2.5-72B-Instruct
    ModelWindow("qwen3", 131_072, LITELLM),  # as hosted (YaRN); 32K natively
    ModelWindow("qwen3-coder", 262_144, LITELLM),
    ModelWindow("qwen3.5", 262_144, LITELLM),  # together_ai/Qwen/Qwen3.5-9B, nebius/Qwen/Qwen3.5-397B-A17B
    ModelWindow("qwen3.6", 262_144, LITELLM),  # sail/Qwen/Qwen3.6-35B-A3B, libertai/qwen3.6-27b
    ModelWindow("deepseek-chat", 131_072, LITELLM),
    ModelWindow("deepseek-reasoner", 131_072, LITELLM),
    ModelWindow("deepseek-coder", 128_000, LITELLM),
    ModelWindow("deepseek-v3", 163_840, LITELLM),  # deepinfra/deepseek-ai/DeepSeek-V3
    ModelWindow("deepseek-r1", 163_840, LITELLM),  # deepinfra/deepseek-ai/DeepSeek-R1
    ModelWindow("devstral", 256_000, LITELLM),  # mistral/devstral-latest, -medium-latest, -small-latest
    ModelWindow("devstral-small-2505", 131_072, LITELLM),  # fireworks_ai/…/devstral-small-2505
    ModelWindow("codestral", 128_000, LITELLM),  # mistral/codestral-latest
    ModelWindow("mistral-large-latest", 262_144, LITELLM),
    ModelWindow("mistral-small-latest", 262_144, LITELLM),
)

Entry = TypeVar("Entry")


def model_key(model: str) -> str:
    """A model's name as the tables spell it: lower case, without a host's path or Bedrock's
    vendor prefix, and a Claude name's dots as dashes ("anthropic/claude-3.5-sonnet")."""
    name = VENDOR.sub("", model.strip().lower().rsplit("/", 1)[-1])
    return name.replace(".", "-") if name.startswith("claude") else name


def longest_prefix(model: str | None, entries: Iterable[Entry]) -> Entry | None:
    """The entry (anything with a `prefix`) whose prefix is the longest that names `model`:
    it ends the name or is followed by a separator. None when none does."""
    if not model:
        return None
    name = model_key(model)
    found = [entry for entry in entries if name.startswith(entry.prefix) and name[len(entry.prefix):][:1] in ("", *SEPARATORS)]
    return max(found, key=lambda entry: len(entry.prefix), default=None)


def model_window(model: str | None) -> ModelWindow | None:
    """The window of the model a session names, by the longest matching prefix; None when
    the table does not know it."""
    return longest_prefix(model, WINDOWS)
