"""The tokenizer guard (counting/guarded.py): a long run of whitespace panics tiktoken's o200k
encoder and would kill the worker; through the counters it is counted, and wherever tiktoken
does not panic the count is tiktoken's own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.core.counting import vocab
from webapp.core.counting.guarded import GUARDED_RUN
from webapp.core.counting.tokens import TiktokenCounter, get_counter

ROOT = Path(__file__).resolve().parents[1]
# The inputs tiktoken 0.14.0 panics on (measured: docs/hardening.md, "The tokenizer guard").
PANICKING = {"spaces": " " * 1_000_000, "tabs": "\t" * 1_000_000, "ideographic spaces": "\u3000" * 1_000_000}
ENCODINGS = ["cl100k_base", "o200k_base"]


def fresh(name: str) -> TiktokenCounter:
    """A counter of its own, so no cached count answers for the guard."""
    known = get_counter(name)
    return TiktokenCounter(known.name, known.label, known.format)


def test_the_unguarded_encoder_panics_on_a_million_spaces():
    """Why the guard exists: in a process of its own, tiktoken raises pyo3's PanicException,
    which is no Exception (Flask's error handler would not catch it)."""
    probe = (
        "from webapp.core.counting import vocab\n"
        "try:\n"
        "    vocab.get_encoding('o200k_base').encode_ordinary(' ' * 1_000_000)\n"
        "except Exception:\n"
        "    print('exception')\n"
        "except BaseException as error:\n"
        "    print('base exception', type(error).__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "base exception PanicException"


@pytest.mark.parametrize("what", PANICKING)
@pytest.mark.parametrize("name", ENCODINGS)
def test_the_counters_count_what_panics_the_encoder(name, what):
    text = PANICKING[what]
    counter = fresh(name)
    tokens = counter.text_tokens(text)
    # Plain whitespace takes one token per run of up to 128 (spaces), or one per character.
    assert len(text) // 128 <= tokens <= len(text)
    message = {"role": "user", "content": "look:" + text + "done"}
    assert counter.count_request([message]) > tokens


ALPHABET = st.sampled_from([" ", " ", "\t", "\n", "\r", "\u00a0", "\u3000", "\x1c", "a", "Z", "é", "中", "7", "!", "'", "s", "/", "\ud800"])


@st.composite
def texts_with_long_runs(draw):
    """Ordinary text around whitespace runs of every kind, some longer than the guard's
    threshold (so the guarded path is the one that counts) but shorter than what panics."""
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        parts.append("".join(draw(st.lists(ALPHABET, max_size=12))))
        run = "".join(draw(st.lists(st.sampled_from([" ", "\t", "\n", "\u00a0", "\u3000", "\r\n"]), min_size=1, max_size=3)))
        parts.append(run * draw(st.sampled_from([1, 3, GUARDED_RUN, GUARDED_RUN + 1, 3 * GUARDED_RUN])))
    return "".join(parts)


@settings(max_examples=40, deadline=None)
@given(text=texts_with_long_runs(), name=st.sampled_from(ENCODINGS))
def test_the_guarded_count_is_tiktokens_count(text, name):
    assert fresh(name).text_tokens(text) == len(vocab.get_encoding(name).encode_ordinary(text))


@settings(max_examples=200, deadline=None)
@given(text=st.text(ALPHABET, max_size=300), name=st.sampled_from(ENCODINGS))
def test_counting_in_pieces_is_tiktokens_count_on_any_text(text, name):
    """The guard's way of counting, on every short text, against encode_ordinary."""
    counter = fresh(name)
    counter.text_tokens("")  # loads the encoding
    assert counter._count._count_in_pieces(text) == len(vocab.get_encoding(name).encode_ordinary(text))
