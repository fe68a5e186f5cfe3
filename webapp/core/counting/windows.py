"""The context window of the models sessions name, for a transcript's own window.

Each entry is a model-name prefix, its input window in tokens, and where the figure comes from
(docs/transcripts.md, "Model windows", gives the same table with its sources in full). A name
is matched by its longest prefix that ends it or is followed by one of "-_:@" (so "qwen3-235b"
is a qwen3, but "qwen3.6" and "gpt-5.4" are other models), after any provider path
("openrouter/qwen/qwen3-…" is read as "qwen3-…"); a model not in the table keeps the
playground's own window."""

from __future__ import annotations

from dataclasses import dataclass

CODEX = "Codex fallback table (codex-rs/core/src/models_manager/model_info.rs @ 2f83b5d)"
LITELLM = "LiteLLM model_prices_and_context_window_backup.json (litellm 1.110.2)"
ANTHROPIC = "Anthropic's model overview and Claude support article 8606395"
GEMINI_CLI = "gemini-cli packages/core/src/core/tokenLimits.ts"


SEPARATORS = "-_:@"


@dataclass(frozen=True)
class ModelWindow:
    prefix: str
    window: int
    source: str


WINDOWS = (
    ModelWindow("gpt-4o", 128_000, CODEX),
    ModelWindow("gpt-4.1", 1_047_576, CODEX),
    ModelWindow("gpt-5", 272_000, CODEX),
    ModelWindow("gpt-5.1", 272_000, CODEX),
    ModelWindow("gpt-5.2", 272_000, CODEX),
    ModelWindow("o3", 200_000, CODEX),
    ModelWindow("o4-mini", 200_000, CODEX),
    ModelWindow("codex-mini", 200_000, CODEX),
    ModelWindow("gpt-oss", 96_000, CODEX),
    ModelWindow("gpt-3.5", 16_385, CODEX),
    ModelWindow("claude-sonnet-4", 200_000, ANTHROPIC),
    ModelWindow("claude-opus-4", 200_000, LITELLM),
    ModelWindow("claude-opus-4-6", 1_000_000, LITELLM),
    ModelWindow("claude-opus-4-7", 1_000_000, LITELLM),
    ModelWindow("claude-sonnet-4-6", 1_000_000, LITELLM),
    ModelWindow("claude-haiku-4-5", 200_000, LITELLM),
    ModelWindow("gemini-2.5", 1_048_576, GEMINI_CLI),
    ModelWindow("gemma-4", 256_000, GEMINI_CLI),
    ModelWindow("llama3", 8_192, LITELLM),
    ModelWindow("llama3.1", 131_072, LITELLM),
    ModelWindow("llama3.3", 131_072, LITELLM),
    ModelWindow("qwen3", 131_072, LITELLM),  # as hosted (YaRN); 32K natively
    ModelWindow("qwen3-coder", 262_144, LITELLM),
)


def model_window(model: str | None) -> ModelWindow | None:
    """The window of the model a session names, by the longest matching prefix; None when
    the table does not know it."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]
    found = [entry for entry in WINDOWS if name.startswith(entry.prefix) and name[len(entry.prefix):][:1] in ("", *SEPARATORS)]
    return max(found, key=lambda entry: len(entry.prefix), default=None)
