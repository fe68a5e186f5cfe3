"""Each counting rule against what the OpenAI API reported (figures from the calibration
fixture's sources) or against OpenAI's published rule."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image

from webapp.core.counting.images import REMOTE_IMAGE_SIZE, image_rate, image_tokens, inline_image_size, patches, tiles
from webapp.core.counting.tokens import COUNTERS, estimated, get_counter
from webapp.core.counting.tooldefs import namespace_text

O200K, CL100K = COUNTERS["o200k_base"], COUNTERS["cl100k_base"]

# openai/openai-cookbook, How_to_count_tokens_with_tiktoken.ipynb, section 7.
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_current_weather",
        "description": "Get the current weather in a given location",
        "parameters": {
            "type": "object",
            "properties": {
                "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
                "unit": {"type": "string", "description": "The unit of temperature to return", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["location"],
        },
    },
}
WEATHER_CHAT = [
    {"role": "system", "content": "You are a helpful assistant that can answer to questions about the weather."},
    {"role": "user", "content": "What's the weather like in San Francisco?"},
]


def function(name: str, parameters: dict, description: str = "") -> dict:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


@pytest.mark.parametrize(("counter", "api"), [(CL100K, 105), (O200K, 101)])
def test_tool_definitions_match_the_cookbook_for_each_family(counter, api):
    """gpt-3.5-turbo / gpt-4 reported 105, gpt-4o / gpt-4o-mini 101."""
    assert counter.count_request(WEATHER_CHAT, [WEATHER_TOOL]) == api


def test_nested_objects_enums_and_optional_keys_are_read():
    """hmarr/openai-chat-tokens, checked against gpt-3.5-turbo: 68 tokens."""
    tool = function(
        "bing_bong",
        {"type": "object", "properties": {"foo": {"type": "object", "properties": {"bar": {"type": "string", "enum": ["a", "b", "c"]}, "baz": {"type": "boolean"}}}}},
        "Do a bing bong",
    )
    text = namespace_text([tool], nested_descriptions=False)
    assert 'bar?: "a" | "b" | "c",' in text and "baz?: boolean," in text
    assert CL100K.count_request([{"role": "user", "content": "hello"}], [tool]) == 68
    flat = function("bing_bong", {"type": "object", "properties": {"foo": {"type": "object"}}}, "Do a bing bong")
    assert CL100K.count_request([{"role": "user", "content": "hello"}], [flat]) < 68 - 10, "the nested keys cost tokens"


def test_descriptions_titles_defaults_and_refs_are_read():
    tool = function(
        "search",
        {
            "$defs": {"Scope": {"type": "object", "properties": {"path": {"type": "string", "description": "Where to look"}}}},
            "type": "object",
            "properties": {
                "query": {"type": "string", "title": "Query", "description": "What to find\n\n  in the docs"},
                "depth": {"type": "string", "default": "shallow"},
                "scope": {"$ref": "#/$defs/Scope"},
            },
            "required": ["query"],
        },
        "Search the docs.\nArgs:\n    query: what to find",
    )
    text = namespace_text([tool], nested_descriptions=True)
    assert "// Search the docs.\n// Args:\n// query: what to find\n" in text, "one trimmed comment line per line"
    assert "// Query\n// What to find\n// in the docs\nquery: string," in text
    assert 'depth?: string, // default: "shallow"' in text
    assert "  // Where to look\n  path?: string," in text, "a $ref is followed, nested descriptions shown"
    assert "// Where to look" not in namespace_text([tool], nested_descriptions=False)


def test_a_self_referencing_schema_ends():
    tool = function("tree", {"$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}}, "type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}})
    assert "any" in namespace_text([tool], nested_descriptions=True)


def test_the_system_message_takes_the_tool_definitions_or_one_is_made_for_them():
    """pydantic/pydantic-ai cassettes, gpt-4o: 48 tokens without a system message."""
    tool = function("get_weather", {"additionalProperties": False, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"})
    question = {"role": "user", "content": "What is the weather in Paris? Use the tool."}
    assert O200K.count_request([question], [tool]) == 48
    alone = O200K.count_request([question], [tool]) - O200K.count_request([question])
    with_system = O200K.count_request([{"role": "system", "content": "Hi."}, question], [tool]) - O200K.count_request([{"role": "system", "content": "Hi."}, question])
    assert alone - with_system == O200K.format.tools_alone - O200K.format.tools_with_system > 0


PARALLEL = [
    {"content": "Just call tools without asking for confirmation.", "role": "system"},
    {"content": "Delete the file `.env` and create `test.txt`", "role": "user"},
    {
        "content": None,
        "role": "assistant",
        "tool_calls": [
            {"function": {"arguments": '{"path": ".env"}', "name": "delete_file"}, "id": "call_jYdI", "type": "function"},
            {"function": {"arguments": '{"path": "test.txt"}', "name": "create_file"}, "id": "call_TmlT", "type": "function"},
        ],
    },
    {"content": "true", "role": "tool", "tool_call_id": "call_jYdI"},
    {"content": "Success", "role": "tool", "tool_call_id": "call_TmlT"},
]
FILE_TOOLS = [function(name, {"additionalProperties": False, "properties": {"path": {"type": "string"}}, "required": ["path"], "type": "object"}) for name in ("create_file", "delete_file")]


def test_parallel_tool_calls_and_their_results():
    """pydantic/pydantic-ai, test_dbos_agent_with_hitl_tool: gpt-4o reported 71, then 133 with two
    parallel calls and their results (the issue's example; 112 before)."""
    # Within the goal, not exact: the figure for tools beside a system prompt is the one most
    # of the fixture's requests agree on (docs/counting.md).
    assert abs(O200K.count_request(PARALLEL[:2], FILE_TOOLS) - 71) <= 2
    assert abs(O200K.count_request(PARALLEL, FILE_TOOLS) - 133) <= 2


def test_a_single_tool_call_and_result():
    """pydantic/pydantic-ai, test_openai_tool_call_roundtrip_wire_stable: gpt-4o 48, then 74."""
    tool = function("get_weather", {"additionalProperties": False, "properties": {"city": {"type": "string"}}, "required": ["city"], "type": "object"})
    chat = [
        {"content": "What is the weather in Paris? Use the tool.", "role": "user"},
        {"content": None, "role": "assistant", "tool_calls": [{"function": {"arguments": '{"city":"Paris"}', "name": "get_weather"}, "id": "call_J3aj", "type": "function"}]},
        {"content": "sunny in Paris", "role": "tool", "tool_call_id": "call_J3aj"},
    ]
    assert O200K.count_request(chat, [tool]) == 74


def test_a_tool_result_is_read_under_its_functions_name():
    result = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    call = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a_rather_long_function_name", "arguments": "{}"}}]}
    named = O200K.count_request([call, result]) - O200K.count_request([call])
    assert named == O200K.measure({**result, "name": "a_rather_long_function_name"}) > O200K.measure(result)


def test_legacy_function_calling():
    """hmarr/openai-chat-tokens, checked against gpt-3.5-turbo: a function_call message 26, a
    role-function message 24; `functions` are counted like tools."""
    call = {"role": "assistant", "content": "", "function_call": {"name": "do_stuff", "arguments": '{"foo": "bar", "baz": 1.5}'}}
    assert CL100K.count_request([call]) == 26
    result = {"role": "function", "name": "dance_the_tango", "content": '{"a": { "b" : { "c": false}}}'}
    assert CL100K.count_request([result]) == 24
    functions = [{"name": "foo", "description": "Do a foo", "parameters": {"type": "object", "properties": {}}}]
    assert CL100K.count_request([{"role": "user", "content": "hello"}], functions) == 36


def test_null_content_names_refusals_and_content_parts():
    counter = O200K
    base = counter.measure({"role": "assistant", "content": None})
    assert base == counter.measure({"role": "assistant", "content": ""}) == 3 + counter.text_tokens("assistant")
    refusal = "I can't help with that."
    assert counter.measure({"role": "assistant", "content": None, "refusal": refusal}) == base + counter.text_tokens(refusal)
    parts = {"role": "assistant", "content": [{"type": "refusal", "refusal": refusal}]}
    assert counter.measure(parts) == base + counter.text_tokens(refusal)
    text_parts = {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]}
    assert counter.measure(text_parts) == counter.measure({"role": "user", "content": "Hello there"})
    # The cookbook's few-shot example: system messages with names; 124 on gpt-4o, 129 on gpt-4.
    few_shot = [
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
    ]
    assert O200K.count_request(few_shot) == 124
    assert CL100K.count_request(few_shot) == 129


# Images ---------------------------------------------------------------------------------


def data_url(width: int, height: int, fmt: str) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(buffer, format=fmt)
    mime = {"PNG": "png", "JPEG": "jpeg", "GIF": "gif", "WEBP": "webp"}[fmt]
    return f"data:image/{mime};base64,{base64.b64encode(buffer.getvalue()).decode()}"


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_an_inline_images_size_is_read_from_its_header(fmt):
    url = data_url(1500, 700, fmt)
    assert inline_image_size(url) == (1500, 700)
    assert inline_image_size(url.replace("data:image/", "data:application/octet-stream;x=")) == (1500, 700), "the bytes tell, not the media type"


@pytest.mark.parametrize(
    ("size", "detail", "tokens"),
    [
        # OpenAI's published examples for gpt-4o.
        ((1024, 1024), "high", 765),
        ((2048, 4096), "high", 1105),
        ((4096, 8192), "low", 85),
        # auto is counted as high; a small image is never scaled up.
        ((100, 100), "auto", 255),
        ((3008, 2000), "auto", 1105),
    ],
)
def test_the_published_image_rule(size, detail, tokens):
    url = data_url(*size, "PNG")
    count = image_tokens(url, detail, image_rate("gpt-4o"))
    assert count.tokens == tokens and not count.estimated


def test_image_figures_differ_by_model_family():
    url = data_url(640, 480, "JPEG")
    assert tiles(640, 480) == 2
    assert image_tokens(url, "auto", image_rate("gpt-4o-2024-08-06")).tokens == 85 + 2 * 170
    assert image_tokens(url, "auto", image_rate("gpt-4o-mini-2024-07-18")).tokens == 2833 + 2 * 5667
    assert image_tokens(url, "auto", image_rate("gpt-4.1-mini")).tokens == 486  # 20 x 15 patches x 1.62
    assert patches(4000, 3000) <= 1536


def test_an_inline_image_counts_what_the_api_reported():
    """pydantic/pydantic-ai test_image_as_binary_content_input: a 3008 x 2000 JPEG on gpt-4o, 1,119."""
    url = data_url(3008, 2000, "JPEG")
    message = {"role": "user", "content": [{"type": "text", "text": "What fruit is in the image?"}, {"type": "image_url", "image_url": {"url": url}}]}
    assert O200K.count_request([message]) == 1119
    assert not estimated(message)


def test_a_remote_image_is_counted_under_the_stated_size_and_marked():
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}]}
    assert estimated(message)
    assert O200K.measure(message) == 3 + O200K.text_tokens("user") + 85 + 170 * tiles(*REMOTE_IMAGE_SIZE)
    low = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg", "detail": "low"}}]}
    assert not estimated(low), "at detail low the size does not matter"


@pytest.mark.parametrize("url", ["data:image/png;base64,not base64 at all", "data:text/plain;base64,aGVsbG8=", "data:image/png,raw"])
def test_an_unreadable_inline_image_is_estimated_not_an_error(url):
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    assert estimated(message)
    assert O200K.measure(message) > 85


def test_the_estimate_counts_an_image_by_its_tokens_not_its_base64():
    url = data_url(3008, 2000, "PNG")
    message = {"role": "user", "content": [{"type": "text", "text": "Look."}, {"type": "image_url", "image_url": {"url": url}}]}
    estimate = get_counter("estimate")
    assert len(json.dumps(message)) / 4 > 2000, "chars / 4 of the base64 would be far more"
    text_only = {"role": "user", "content": [{"type": "text", "text": "Look."}]}
    assert estimate.measure(message) == len(json.dumps(text_only)) + 4 * 1105
