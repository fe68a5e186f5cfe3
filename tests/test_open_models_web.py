"""The open models' counters as a user meets them: without the open-models extra the playground
works as before and says what the extra adds (the settings form, the 400, the command line);
with it, a session that names an open model is counted with that model's counter, and says so."""

from __future__ import annotations

import html
import json
import re

import pytest

from webapp.cli import main
from webapp.core import counter_catalog
from webapp.core.counter_catalog import BUILT_IN, FETCH, INSTALL, OPEN_NAMES, missing
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.settings import SettingsError, parse_settings

EXTRA_MODULES = frozenset(module for counter in counter_catalog.OPEN_COUNTERS for module in counter.modules) - {"tiktoken"}
INSTALLED = not any(missing(name) for name in OPEN_NAMES)
needs_the_extra = pytest.mark.skipif(not INSTALLED, reason="needs the open-models extra and fetch-vocab")

QWEN_SESSION = json.dumps({
    "model": "qwen3:8b",
    "messages": [
        {"role": "system", "content": "You help with orders."},
        {"role": "user", "content": "Where is order #4471?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_order", "arguments": {"q": "4471"}}}]},
        {"role": "tool", "content": "Shipped on Monday.", "tool_name": "get_order"},
        {"role": "assistant", "content": "It shipped on Monday."},
        {"role": "user", "content": "Thanks!"},
    ],
    "tools": [{"type": "function", "function": {"name": "get_order", "description": "Look an order up", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}],
})


@pytest.fixture
def without_the_extra(monkeypatch):
    """This installation as if the open-models extra were not installed."""
    found = counter_catalog.find_spec
    monkeypatch.setattr(counter_catalog, "find_spec", lambda name: None if name in EXTRA_MODULES else found(name))
    counter_catalog.forget_installed()  # what this process found installed is looked for once
    yield
    counter_catalog.forget_installed()


def words(response) -> str:
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.get_data(as_text=True))))


def counter_choices(response) -> list[str]:
    select = re.search(r'<select id="f-counter".*?</select>', response.get_data(as_text=True), re.S).group(0)
    return re.findall(r'<option value="([^"]+)"', select)


def test_without_the_extra_a_settings_error_names_what_the_extra_adds(without_the_extra):
    with pytest.raises(SettingsError) as refused:
        parse_settings({"counter": "qwen3"})
    assert "the open-models extra adds qwen3" in str(refused.value) and INSTALL in str(refused.value)
    assert parse_settings({"counter": "o200k_base"}).counter == "o200k_base"


def test_without_the_extra_the_page_answers_400_and_its_form_says_how_to_add_them(client, without_the_extra):
    refused = client.get("/play/bike-shop?counter=gemma3")
    assert refused.status_code == 400
    assert "counter" in words(refused) and "the open-models extra adds" in words(refused) and INSTALL in words(refused)
    page = client.get("/play/bike-shop?call=5")
    assert page.status_code == 200
    assert counter_choices(page) == list(BUILT_IN)
    note = words(page)
    assert "More counters, for open models: qwen3, qwen2.5, llama3" in note and INSTALL in note


def test_an_unknown_counter_is_refused_with_the_counters_accepted(client):
    refused = client.get("/play/bike-shop?counter=qwen9")
    assert refused.status_code == 400 and "qwen9" in words(refused) and "o200k_base" in words(refused)


def test_without_the_extra_the_command_line_says_what_to_install(without_the_extra, capsys):
    assert main(["replay", "bike-shop", "--counter", "llama3"]) == 2
    said = capsys.readouterr().err
    assert "llama3" in said and INSTALL in said
    assert main(["replay", "bike-shop", "--counter", "estimate"]) == 0


def test_without_the_extra_a_qwen_session_says_which_counter_the_extra_would_use(without_the_extra):
    scenario = parse_transcript(QWEN_SESSION, "qwen.json")
    assert scenario.settings.counter == "estimate"
    notes = [message % values for message, values in scenario.origin.notes]
    assert any("qwen3:8b" in note and "qwen3" in note and INSTALL in note for note in notes), notes


@needs_the_extra
def test_a_session_that_names_an_open_model_is_counted_with_its_counter_and_says_so(client):
    scenario = parse_transcript(QWEN_SESSION, "qwen.json")
    assert scenario.settings.counter == "qwen3" and "counter" in scenario.origin.settings_from_file
    link = client.post("/transcripts", data={"transcript": QWEN_SESSION}).headers["Location"]
    page = client.get(link)
    assert page.status_code == 200
    assert "Counted with qwen3: the tokenizer and chat template of qwen3:8b" in words(page)
    assert re.search(r'<option value="qwen3" selected>', page.get_data(as_text=True))


@needs_the_extra
def test_with_the_extra_the_form_offers_every_counter_and_a_block_is_counted_with_the_chosen_one(client):
    page = client.get("/play/bike-shop?counter=mistral-tekken&call=3&block=m1")
    assert page.status_code == 200
    assert counter_choices(page) == [*BUILT_IN, *OPEN_NAMES]
    table = re.search(r"<caption>Tokens under each counter</caption>.*?</table>", page.get_data(as_text=True), re.S).group(0)
    assert "mistral-tekken" in table and "o200k_base" in table and "gemma3" not in table  # only the chosen open counter is loaded


@needs_the_extra
def test_a_missing_npm_vocabulary_is_asked_for_with_fetch_vocab(client, monkeypatch, tmp_path):
    monkeypatch.setenv("COMPACTION_PLAYGROUND_VOCAB", str(tmp_path))  # nothing fetched there
    assert missing("llama3") == FETCH and missing("qwen3") is None
    refused = client.get("/play/bike-shop?counter=llama3")
    assert refused.status_code == 400 and FETCH in words(refused)
    assert "More counters, for open models: llama3, gemma3. Add them with: " + FETCH in words(client.get("/play/bike-shop"))


@needs_the_extra
def test_the_floor_says_how_much_of_it_is_the_chat_templates_own_text(client):
    from webapp.core.counting.tokens import get_counter
    from webapp.core.inputs.library import open_scenario

    scenario = open_scenario("bike-shop")
    for name in ("qwen3", "llama3"):
        counter = get_counter(name)
        own, floor = counter.template_tokens(scenario.prefix, scenario.tools), scenario.floor_units(counter)
        assert 0 < own < floor
        said = words(client.get(f"/play/bike-shop?counter={name}&call=3&block=floor"))
        assert f"With {name}, {own:,} of the floor's {floor:,} tokens are the chat template's own text" in said
    # Qwen 2.5's template writes a system prompt of its own when the chat has none: the template's.
    assert get_counter("qwen2.5").template_tokens([], []) > get_counter("qwen3").template_tokens([], []) + 10
    assert "chat template's own text" not in words(client.get("/play/bike-shop?counter=o200k_base&call=3&block=floor"))


@pytest.mark.parametrize("model, counter", [
    ("qwen3:8b", "qwen3"), ("qwen3-coder:30b", "qwen3"), ("openrouter/qwen/qwen3-235b-a22b", "qwen3"),
    ("Qwen/Qwen2.5-Coder-32B-Instruct", "qwen2.5"), ("qwen3.5-9b", None),  # Qwen 3.5 has another vocabulary
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3"), ("llama3.2:3b", "llama3"), ("llama-4-maverick", None),
    ("mistral:7b", "mistral-v3"), ("mistral-small-latest", "mistral-tekken"), ("open-mistral-nemo", "mistral-tekken"),
    ("mistral-large-2411", "mistral-v7"), ("devstral-small-2505", "mistral-tekken"),
    ("gemma3:27b", "gemma3"), ("google/gemma-3-27b-it", "gemma3"), ("gemma-4-31b", None),
    ("deepseek-chat", "deepseek-v3"), ("deepseek-ai/DeepSeek-V3.1", "deepseek-v3"), ("gpt-4o", None), (None, None),
    # Mistral Small 3.x as Ollama tags it (tekken, docs/counting.md); the older API names
    # mistral-common gives v1 or v2, and Mistral Medium 3, whose tokenizer is not published: none.
    ("mistral-small3.1", "mistral-tekken"), ("mistral-small3.1:24b", "mistral-tekken"), ("mistral-small3.2:24b", "mistral-tekken"),
    ("mistralai/Mistral-Small-3.1-24B-Instruct-2503", "mistral-tekken"), ("mistral-small-2402", None), ("mistral-large-2402", None),
    ("mistral-medium-2505", None), ("mistral-medium-latest", None), ("mistral-tiny-2407", "mistral-v3"),
    # DeepSeek-R1 itself, and its distills, which keep their base's vocabulary (Ollama's tags too).
    ("deepseek-r1", "deepseek-v3"), ("deepseek-r1:671b", "deepseek-v3"), ("deepseek-ai/DeepSeek-R1-0528", "deepseek-v3"),
    ("deepseek-r1:7b", "qwen2.5"), ("deepseek-r1:1.5b", "qwen2.5"), ("deepseek-r1:32b-qwen-distill-q4_K_M", "qwen2.5"),
    ("deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "qwen2.5"), ("deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "llama3"),
    ("openrouter/deepseek/deepseek-r1-distill-llama-70b", "llama3"), ("deepseek-r1:70b", "llama3"),
    ("deepseek-r1:8b-llama-distill-q4_K_M", "llama3"), ("deepseek-r1:8b", "qwen3"), ("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B", "qwen3"),
])
def test_a_model_name_finds_its_counter(model, counter):
    from webapp.core.counting.open_models import model_counter

    assert model_counter(model) == counter


# -- chats a template refuses as they are: a page, never a 500 ----------------------------------

def ollama_body(model: str, *messages: dict, **fields) -> str:
    return json.dumps({"model": model, "options": {"num_ctx": 8192}, "messages": list(messages), **fields})


SYSTEM = {"role": "system", "content": "You answer the workshop's mechanics."}
MEMORY = {"role": "system", "content": "<memory>The fork of bike 12 is under recall.</memory>"}
EXCHANGE = ({"role": "user", "content": "Can bike 12 go home?"}, {"role": "assistant", "content": "Not with that fork."}, {"role": "user", "content": "Why?"})


@needs_the_extra
@pytest.mark.parametrize("page", ["/play/workshop-manuals?counter=gemma3", "/compare/workshop-manuals?counter=gemma3"])
def test_a_lesson_whose_prefix_is_two_system_messages_is_counted_with_gemma(client, page):
    """Gemma's template takes one system message; the workshop's lesson has its prompt and its
    memory: joined, as Ollama joins them."""
    assert client.get(page).status_code == 200


@needs_the_extra
def test_the_command_line_replays_a_lesson_of_two_system_messages_with_gemma(capsys):
    assert main(["replay", "workshop-manuals", "--counter", "gemma3"]) == 0
    assert "Traceback" not in capsys.readouterr().err


@needs_the_extra
def test_a_pasted_gemma_session_with_two_system_messages_is_counted_with_gemma(client):
    link = client.post("/transcripts", data={"transcript": ollama_body("gemma3:4b", SYSTEM, MEMORY, *EXCHANGE)}).headers["Location"]
    page = client.get(link)
    assert page.status_code == 200 and "Counted with gemma3" in words(page)


@needs_the_extra
def test_a_floor_the_template_refuses_is_counted_from_its_text(client):
    """An assistant's greeting before the first request: Gemma's template wants the user first,
    so the floor is counted as a refused message is, from its text."""
    greeting = {"role": "assistant", "content": "Hello, mechanic. What bike is on the stand?"}
    link = client.post("/transcripts", data={"transcript": ollama_body("gemma3:4b", SYSTEM, greeting, *EXCHANGE)}).headers["Location"]
    assert client.get(link).status_code == 200
    assert client.get(link.replace("/play/", "/compare/")).status_code == 200


@needs_the_extra
@pytest.mark.parametrize("tool_name", ["web.search", "web search", "t" * 65])
def test_a_pasted_chat_with_a_tool_name_mistral_refuses_is_counted_with_mistral(client, tool_name):
    body = {"messages": [SYSTEM, *EXCHANGE], "tools": [{"type": "function", "function": {"name": tool_name, "parameters": {"type": "object"}}}]}
    link = client.post("/transcripts", data={"transcript": json.dumps(body)}).headers["Location"]
    for counter in ("mistral-tekken", "mistral-v3"):
        assert client.get(f"{link}?counter={counter}").status_code == 200


@needs_the_extra
def test_a_pasted_call_whose_arguments_nest_5000_deep_is_counted_by_every_open_counter(client):
    deep = "[" * 5000 + "]" * 5000
    body = {"messages": [SYSTEM, EXCHANGE[0], {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": deep}}]},
                         {"role": "tool", "tool_call_id": "c1", "content": "ok"}, EXCHANGE[2]]}
    link = client.post("/transcripts", data={"transcript": json.dumps(body)}).headers["Location"]
    assert {name: client.get(f"{link}?counter={name}").status_code for name in OPEN_NAMES} == dict.fromkeys(OPEN_NAMES, 200)


# -- a vocabulary there but wrong ---------------------------------------------------------------

def copy_the_vocabularies(target) -> None:
    """The counters' npm vocabularies, as fetch-vocab left them, copied into `target`."""
    from webapp.core.counter_catalog import NPM_FILES, vocab_dir

    for files in NPM_FILES:
        (target / files.folder).mkdir()
        for name, _sha in files.sha256:
            (target / files.folder / name).write_bytes((vocab_dir() / files.folder / name).read_bytes())


@needs_the_extra
def test_fetch_vocab_fetches_what_the_counters_read_and_the_tests_reference_only_when_asked(monkeypatch, tmp_path, capsys):
    """Qwen 3's tokenizer.json is the tests' reference, which no counter reads: a user's
    fetch-vocab leaves it out; --references (scripts/test) asks npm for it too."""
    copy_the_vocabularies(tmp_path)
    monkeypatch.setenv("COMPACTION_PLAYGROUND_VOCAB", str(tmp_path))
    monkeypatch.setenv("PATH", "")  # no npm: whatever is not there yet cannot be fetched
    assert main(["fetch-vocab"]) == 0
    said = capsys.readouterr().out
    assert "tokenizer-llama3_1" in said and "tokenizer-gemma3" in said and "qwen3" not in said
    assert main(["fetch-vocab", "--references"]) == 1
    assert "npm is needed" in capsys.readouterr().err


@pytest.fixture
def wrong_llama_vocabulary(monkeypatch, tmp_path):
    """COMPACTION_PLAYGROUND_VOCAB at a copy of the fetched vocabularies whose Llama 3
    tokenizer.json is `{}`: present (the form offers llama3) but not the pinned file; the
    counter is loaded afresh, as a new worker would."""
    from webapp.core.counting.open_models import open_counter

    copy_the_vocabularies(tmp_path)
    (tmp_path / "llama3_1" / "tokenizer.json").write_text("{}")
    monkeypatch.setenv("COMPACTION_PLAYGROUND_VOCAB", str(tmp_path))
    open_counter.cache_clear()
    yield
    open_counter.cache_clear()


@needs_the_extra
def test_a_wrong_vocabulary_is_a_503_naming_the_counter_and_the_command_that_mends_it(client, wrong_llama_vocabulary):
    assert "llama3" in counter_choices(client.get("/play/bike-shop"))  # the file is there: offered
    for page in ("/play/bike-shop?counter=llama3", "/compare/bike-shop?counter=llama3"):
        refused = client.get(page)
        assert refused.status_code == 503
        assert "The llama3 counter cannot run on this server" in words(refused) and FETCH in words(refused)
        assert "tokenizer.json" not in words(refused)  # the file's path is for the log
        assert way_out(refused) == ("estimate", page.split("?")[0])  # the lesson's own counter
    french = client.get("/play/bike-shop?counter=llama3&lang=fr")
    assert french.status_code == 503 and "Le compteur llama3" in words(french) and FETCH in words(french)
    assert client.get("/play/bike-shop?counter=qwen3").status_code == 200  # the other counters still work
    # A session of that model, counted with it by default: the way out is another counter.
    link = client.post("/transcripts", data={"transcript": ollama_body("llama3.1:8b", SYSTEM, *EXCHANGE)}).headers["Location"]
    refused = client.get(link)
    assert refused.status_code == 503 and way_out(refused)[0] == "o200k_base"
    assert client.get(way_out(refused)[1]).status_code == 200


def way_out(page) -> tuple[str, str]:
    """The error page's link to the same page under another counter: (the counter, the link)."""
    found = re.search(r'href="([^"]+)" hx-boost="false">The same page, counted with ([\w.-]+) ', page.get_data(as_text=True))
    return found.group(2), html.unescape(found.group(1))


@needs_the_extra
def test_a_wrong_vocabulary_is_one_line_and_status_2_on_the_command_line(wrong_llama_vocabulary, capsys):
    assert main(["replay", "bike-shop", "--counter", "llama3"]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "llama3" in said and "not the pinned file" in said and FETCH in said


@needs_the_extra
@pytest.mark.parametrize("model, counter", [("Qwen/Qwen3-32B", "qwen3"), ("gemma3:4b", "gemma3"), ("meta-llama/Llama-3.3-70B-Instruct", "llama3")])
def test_a_chat_completions_body_that_names_an_open_model_is_counted_with_its_counter(client, model, counter):
    """The usual vLLM or OpenRouter request body: OpenAI's chat completions, its model in "model"."""
    body = json.dumps({"model": model, "messages": [SYSTEM, *EXCHANGE]})
    scenario = parse_transcript(body, "request.json")
    assert scenario.origin.format == "openai-chat" and scenario.origin.model == model and scenario.settings.counter == counter
    link = client.post("/transcripts", data={"transcript": body}).headers["Location"]
    assert f"Counted with {counter}: the tokenizer and chat template of {model}" in words(client.get(link))


def test_what_is_installed_is_looked_for_once_per_process(client, monkeypatch):
    """Every page's settings form lists the counters this installation runs: which ones is found
    once (the extra's modules, the fetched vocabularies), not on every step."""
    counter_catalog.forget_installed()
    looked: list[str] = []
    found = counter_catalog.find_spec
    monkeypatch.setattr(counter_catalog, "find_spec", lambda name: looked.append(name) or found(name))
    assert client.get("/play/bike-shop?call=2").status_code == 200
    first = len(looked)
    assert client.get("/play/bike-shop?call=3").status_code == 200 and client.get("/compare/bike-shop").status_code == 200
    assert first > 0 and len(looked) == first
    counter_catalog.forget_installed()


def glossary_counter(client) -> str:
    page = client.get("/glossary").get_data(as_text=True)
    return html.unescape(re.sub(r"<[^>]+>", " ", re.search(r'<div id="counter">.*?</div>', page, re.S).group(0)))


def test_the_glossary_names_the_open_models_counters_and_how_to_add_them(client, without_the_extra):
    said = glossary_counter(client)
    assert all(name in said for name in OPEN_NAMES) and "chat template" in said and INSTALL in said


@needs_the_extra
def test_the_glossary_names_the_open_models_counters_once_installed(client):
    said = glossary_counter(client)
    assert all(name in said for name in OPEN_NAMES) and INSTALL not in said and FETCH not in said
