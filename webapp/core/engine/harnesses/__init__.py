"""The production harnesses, one module each: its levels (each named once by `@level`), its KEEP
rule, its summary prompt, its settings as code and the citations of every figure, ending with
its `HARNESS` record. `HARNESSES` lists them in the order the pages show them. Adding one is its
module, its line here and its trigger's line in triggers.py (the settings read it there), plus
the translations of its description; docs/design.md shows it."""

from __future__ import annotations

from . import anthropic_compaction, claude_code, codex_cli, gemini_cli, langchain_summarization, ollama, openhands_masking, openhands_summarizing
from ..compaction import Strategy

HARNESSES: tuple[Strategy, ...] = (
    codex_cli.HARNESS,
    gemini_cli.HARNESS,
    claude_code.HARNESS,
    anthropic_compaction.HARNESS,
    openhands_summarizing.HARNESS,
    openhands_masking.HARNESS,
    langchain_summarization.HARNESS,
    ollama.HARNESS,
)
