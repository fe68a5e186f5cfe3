"""Of a transcript that is one JSON object, the top-level keys no format reads are checked as
JSON syntax only (formats/unread_keys.py): what a format reads is accepted or refused exactly
as before, bad syntax anywhere is still refused, and the rest no longer stops the reading."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.test_json_reading import keys, outcome, values
from webapp.core.inputs.formats import KEYS_READ, parse
from webapp.core.inputs.formats.common import PlainText, _stdlib_loads, parse_text
from webapp.core.inputs.scenarios import MAX_NESTING, ScenarioError
from webapp.core.inputs.transcripts import parse_transcript

CHAT = '"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]'
DEEP = "[" * (3 * MAX_NESTING) + "]" * (3 * MAX_NESTING)
# Values the full parse refuses (too large a number, nesting past MAX_NESTING) but whose
# syntax is JSON's; and one it reads differently with orjson (an integer past 64 bits).
REFUSED_BY_THE_PARSE = {"1e400": "1e400", "nested too deep": DEEP, "an integer past 64 bits": str(2**64)}


@pytest.mark.parametrize("value", REFUSED_BY_THE_PARSE.values(), ids=REFUSED_BY_THE_PARSE)
def test_an_unread_key_is_not_parsed_and_no_longer_stops_the_reading(value):
    text = f'{{{CHAT}, "events": [{{"progress": {value}}}]}}'
    scenario = parse_transcript(text, "session.json")
    assert [item.message["content"] for item in scenario.script] == ["hi", "hello"]
    assert "events" not in parse(text)


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"messages": [{"role": "user", "content": "hi", "n": 1e400}], "events": 1}', "the number 1e400 is too large for JSON (it would be Infinity)"),
        ('{"messages": [{"role": "user", "content": "hi", "n": NaN}], "events": 1}', "NaN is not a JSON number (strict JSON has no NaN or Infinity)"),
        ('{"messages": [{"role": "user", "content": "hi", "n": ' + DEEP + '}], "events": 1}', f"lists and objects nest more than {MAX_NESTING} levels deep"),
    ],
)
def test_the_same_in_a_key_read_is_refused_with_the_same_message_as_before(text, message):
    assert outcome(parse, text) == outcome(parse_text, text)
    with pytest.raises(ScenarioError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_transcript(text, "session.json")


WHERE = r"not valid JSON: .*line 1 column \d+"


@pytest.mark.parametrize(
    "text, message",
    [
        (f'{{{CHAT}, "events": [1, 2,]}}', WHERE),  # a trailing comma in a key no format reads
        (f'{{{CHAT}, "events": {{"a" 1}}}}', WHERE),  # a missing colon there
        (f'{{{CHAT}, "events": [1, 2]', WHERE),  # cut short
        (f'{{{CHAT}, "events": 1}} trailing', WHERE),
        ('{"messages": [{"role": "user" "content": "hi"}], "events": 1}', WHERE),  # in a key read
        # Not JSON syntax, so msgspec refuses it too: the whole text is read, and refused, as before.
        (f'{{{CHAT}, "events": NaN}}', r"not valid JSON: NaN is not a JSON number"),
    ],
)
def test_bad_syntax_anywhere_is_refused_as_before_with_what_and_where(text, message):
    assert isinstance(parse(text), PlainText) and outcome(parse, text) == outcome(parse_text, text)
    with pytest.raises(ScenarioError, match=message):
        parse_transcript(text, "session.json")


def test_an_unread_key_nesting_past_the_syntax_checks_own_limit_is_read_as_before():
    """msgspec's syntax check nests as deep as Python's recursion limit: past it, the whole
    text is read as today, and refused (the standard library's own recursion limit)."""
    text = f'{{{CHAT}, "events": {"[" * 2000 + "]" * 2000}}}'
    assert isinstance(parse(text), PlainText) and outcome(parse, text) == outcome(parse_text, text)
    with pytest.raises(ScenarioError, match="not valid JSON: maximum recursion depth"):
        parse_transcript(text, "session.json")


def test_an_object_whose_keys_are_all_read_is_read_whole_as_before():
    text = f'{{{CHAT}, "tools": []}}'
    assert parse(text) == parse_text(text) == json.loads(text)


# Top-level keys: some read by a format, some not, and the edge keys of the JSON reading tests.
top_keys = st.one_of(st.sampled_from(["messages", "tools", "history", "events", "sessionId", "cwd"]).map(json.dumps), keys)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(top_keys, values), min_size=1, max_size=6))
def test_the_keys_read_hold_what_the_standard_library_reads_there(pairs):
    """Of a generated object, what is kept is the standard library's value of the keys read (a
    repeated key's last value, as it reads one), or, when that part is refused, nests too deep
    or leaves nothing out, the answer of the whole text as before."""
    text = "{" + ",".join(f"{key}:{value}" for key, value in pairs) + "}"
    last: dict[str, str] = {}
    for key, value in pairs:
        try:
            name = json.loads(key)
        except ValueError:
            name = None
        if name in KEYS_READ:
            last[key] = value
    read_part = "{" + ",".join(f"{key}:{value}" for key, value in last.items()) + "}"
    part, whole = outcome(parse, text), outcome(parse_text, text)
    try:
        read = ("value", repr(_stdlib_loads(read_part)))
    except (ValueError, RecursionError):
        read = None
    assert part == whole or part == read
