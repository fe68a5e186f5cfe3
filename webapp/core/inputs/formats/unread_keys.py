"""A transcript's text read without parsing what no format reads: of a file that is one JSON
object, the top-level keys no format's test or reader looks at (an agent's progress events,
most of a 20 MB session: bench/run.py benchmark 6) are checked as JSON syntax by msgspec and
left out; the keys read are parsed as `common.parse_text` parses any text, so what is read is
accepted or refused as before (docs/transcripts.md, "What is checked where")."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import orjson

from ..scenarios import value_problems
from .common import parse_text, read_strict

# A JSON object's top-level keys, each value kept as its text, unparsed.
_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])
# A text that opens an object, after JSON's whitespace (matched at the start: no copy of 20 MB).
_OBJECT = re.compile(r"[ \t\r\n]*\{")


def parse_reading(text: str, keys: frozenset[str] | None) -> Any:
    """`parse_text(text)`, except that of one JSON object only `keys` are kept (all of them when
    `keys` is None). Whenever that part reading could answer otherwise than the whole text (bad syntax
    anywhere, a refusal in a key read, nothing to leave out), the whole text is read as before."""
    read = None if keys is None else _read_keys(text, keys)
    return parse_text(text) if read is None else read


def _read_keys(text: str, keys: frozenset[str]) -> dict | None:
    """The object's keys among `keys`, parsed, or None to read the whole text: one that is not
    one JSON object msgspec reads, one with no key to leave out, or one whose keys read are
    refused or nest too deep (the whole text's reading words the refusal as it always has)."""
    if not _OBJECT.match(text):
        return None
    try:
        fields = _FIELDS.decode(text)
    except (msgspec.DecodeError, RecursionError, UnicodeEncodeError):  # the last: a lone surrogate, which UTF-8 cannot hold
        return None
    kept = [(key, raw) for key, raw in fields.items() if key in keys]
    if len(kept) == len(fields):
        return None
    try:
        # The keys read, as one object of their own texts: parsed and walked as a whole text is.
        value, shallow = read_strict("{" + ",".join(f"{orjson.dumps(key).decode()}:{bytes(raw).decode()}" for key, raw in kept) + "}")
    except (ValueError, RecursionError, orjson.JSONEncodeError):
        return None
    return None if not shallow and value_problems(value) else value
