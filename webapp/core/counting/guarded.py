"""tiktoken's count of a text, guarded against the one input that crashes it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import regex

# tiktoken 0.14.0's o200k encoder panics on a run of about a million horizontal whitespace
# characters (1,000,000 spaces, tabs, U+00A0 or U+3000; 800,000 spaces pass): its regex runs out
# of backtracking stack on `\s+(?!\S)` and raises pyo3's PanicException, a BaseException that
# kills the worker (docs/hardening.md). A text holding a long run of whitespace is split by the
# encoding's own pattern in Python instead (the `regex` module, as tiktoken's
# `_encode_only_native_bpe` does) and each piece is encoded without a split: the same pieces and
# the same tokens, without the Rust regex. Python's \s holds every character Rust's does.
GUARDED_RUN = 50_000
LONG_WHITESPACE = re.compile(r"\s{%d,}" % GUARDED_RUN)


class GuardedCount:
    """tiktoken's count of a text, safe from the panic above: a text holding a long run of
    whitespace is split into the encoding's pieces here and each piece encoded alone, which
    gives the count encode_ordinary gives wherever it does not panic."""

    def __init__(self, encoding):
        self.encoding = encoding
        self._pieces: regex.Pattern | None = None
        # Special tokens (<|im_end|>) cut a text first, as tiktoken's own encode() cuts it.
        specials = sorted(encoding.special_tokens_set, key=len, reverse=True)
        self._specials = re.compile("|".join(map(re.escape, specials))) if specials else None

    def ordinary(self, text: str) -> int:
        if len(text) >= GUARDED_RUN and LONG_WHITESPACE.search(text):
            return self._count_in_pieces(text)
        # encode_ordinary reads "<|endoftext|>" in user text as plain text, as an API does.
        return len(self.encoding.encode_ordinary(text))

    def with_specials(self, text: str) -> int:
        """Tokens of a text in which every special token counts as one, wherever it stands."""
        if self._specials is None:
            return self.ordinary(text)
        parts = self._specials.split(text)
        return len(parts) - 1 + sum(self.ordinary(part) for part in parts if part)

    def _count_in_pieces(self, text: str) -> int:
        if self._pieces is None:
            import regex  # here: only a long run of whitespace needs it, and it is slow to import

            self._pieces = regex.compile(self.encoding._pat_str)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates read as U+FFFD, as encode_ordinary reads them
            text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        encode_piece = self.encoding._core_bpe.encode_single_piece
        return sum(len(encode_piece(piece.encode("utf-8"))) for piece in self._pieces.findall(text))
