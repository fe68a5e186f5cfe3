"""orjson reads a transcript's JSON only where it answers as the standard library does: the
same value, the same refusal with the same message, on every edge of strict JSON."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from webapp.core.inputs.formats import common
from webapp.core.inputs.scenarios import MAX_NESTING, ScenarioError
from webapp.core.inputs.transcripts import parse_transcript


def stdlib_only(monkeypatch) -> None:
    """The reading as it was before orjson: every text goes to the standard library."""

    def refuse(text):
        raise orjson.JSONDecodeError("off for this test", "", 0)

    monkeypatch.setattr(common.orjson, "loads", refuse)


def outcome(read, text: str):
    """What reading gives, compared exactly: repr tells 1 from 1.0, -0.0 from 0.0 and keeps
    key order; a refusal by its type and message."""
    try:
        return "value", repr(read(text))
    except (ValueError, RecursionError) as error:
        return type(error).__name__, str(error)


def string(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)


EDGE_NUMBERS = [
    "NaN", "Infinity", "-Infinity", "1e400", "-1E999", "1.5e-400", "-0", "0.0", "1E5", "01", "1.", ".5",
    str(2**63 - 1), str(2**63), str(2**64 - 1), str(2**64), str(-(2**63)), str(-(2**63) - 1), str(10**30), "9" * 5000,
    "1" * 19 + ".0", "12345678901234567890e0",
]
EDGE_STRINGS = ["\ud800", "a\udfff", "\udc00\ud800", "\ud83d\ude00", "\x00", "é中", "\u2028"]

scalars = st.one_of(
    st.sampled_from(["null", "true", "false", "tru", '"open', "\\"]),
    st.integers().map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(EDGE_NUMBERS),
    st.builds(string, st.one_of(st.text(max_size=8), st.sampled_from(EDGE_STRINGS)), st.booleans()),
)
# Few key names, so objects often repeat a key (the last value wins in both readers).
keys = st.builds(string, st.one_of(st.sampled_from(["a", "b", "\ud800"]), st.text(max_size=3)), st.booleans())
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda items: "[" + ",".join(items) + "]"),
        st.lists(st.tuples(keys, children), max_size=4).map(lambda pairs: "{" + ",".join(f"{k}:{v}" for k, v in pairs) + "}"),
    ),
    max_leaves=12,
)


@st.composite
def json_texts(draw) -> str:
    """A JSON-ish text: a value, perhaps nested deep around the limit or past both readers'
    recursion limits, perhaps with a byte order mark, odd whitespace, cut short, or several
    values on lines (JSON Lines)."""
    text = draw(values)
    depth = draw(st.sampled_from([0, 0, 0, MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1, 1010, 1030]))
    text = "[" * depth + text + "]" * depth
    if draw(st.booleans()):
        text = draw(st.sampled_from(["", " ", "\t\n", "\ufeff", "\u00a0"])) + text + draw(st.sampled_from(["", " \r\n", "\x0c", "x"]))
    if draw(st.integers(0, 5)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.integers(0, 3)) == 0:
        text = "\n".join([text, *draw(st.lists(values, min_size=1, max_size=3))])
    return text


@settings(max_examples=600, deadline=None)
@given(json_texts())
def test_orjson_reads_as_the_standard_library_does(text):
    """loads and parse_text give the same value, or the same refusal and message, with orjson
    as with the standard library alone."""
    fast = (outcome(common.loads, text), outcome(common.parse_text, text))
    with pytest.MonkeyPatch.context() as monkeypatch:
        stdlib_only(monkeypatch)
        slow = (outcome(common.loads, text), outcome(common.parse_text, text))
    assert fast == slow


@pytest.mark.parametrize(
    "text, expected",
    [
        ('{"n": NaN}', "NaN is not a JSON number (strict JSON has no NaN or Infinity)"),
        ("[-Infinity]", "-Infinity is not a JSON number (strict JSON has no NaN or Infinity)"),
        ('{"n": 1e400}', "the number 1e400 is too large for JSON (it would be Infinity)"),
    ],
)
def test_constants_and_infinite_numbers_are_refused_with_the_same_message(text, expected):
    with pytest.raises(ValueError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        common.loads(text)


def test_what_only_the_standard_library_reads_is_read_as_it_reads_it():
    """An integer past 64 bits stays an exact integer (orjson would make it a float), a lone
    surrogate is kept (orjson refuses it), a repeated key keeps its last value."""
    assert common.loads(f'{{"id": {2**64 + 1}, "low": {-(2**63) - 1}}}') == {"id": 2**64 + 1, "low": -(2**63) - 1}
    assert common.loads('["\\ud800", "\ud800"]') == ["\ud800", "\ud800"]
    assert list(common.loads('{"a": 1, "b": 2, "a": 3}').items()) == [("a", 3), ("b", 2)]


def nested(depth: int) -> str:
    return '{"messages": [{"role": "user", "content": "hi", "meta": ' + "[" * depth + "]" * depth + "}]}"


def test_a_session_nesting_too_deep_is_refused_whole_and_one_within_the_limit_is_read():
    with pytest.raises(ScenarioError, match=f"nest more than {MAX_NESTING} levels deep"):
        parse_transcript(nested(MAX_NESTING), "deep.json")
    assert parse_transcript(nested(MAX_NESTING - 3), "fits.json").script[0].message["content"] == "hi"
