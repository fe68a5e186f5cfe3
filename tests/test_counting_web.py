"""What the replay, the play page and its JSON twin do with the counting rules: tool results
read under their function's name, and a block whose count rests on an assumed image size."""

from __future__ import annotations

import base64
import io
import json

from PIL import Image

from webapp import create_app
from webapp.core.engine.replay import replay
from webapp.core.inputs.transcripts import parse_transcript
from webapp.core.counting.tokens import get_counter

CALL = {"id": "call_1", "type": "function", "function": {"name": "look_up_the_order_in_the_warehouse", "arguments": '{"order": 4471}'}}
TRANSCRIPT = [
    {"role": "system", "content": "You help."},
    {"role": "user", "content": "Where is my order 4471? Here is a photo of the box."},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Shipped on Monday."},
    {"role": "assistant", "content": "It shipped on Monday."},
]


def photo(width: int, height: int) -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def app_with(tmp_path, name: str, messages: list[dict]):
    (tmp_path / f"{name}.json").write_text(json.dumps(messages))
    return create_app({"TESTING": True, "SCENARIOS_DIR": tmp_path}).test_client()


def with_image(url: str) -> list[dict]:
    messages = json.loads(json.dumps(TRANSCRIPT))
    messages[1]["content"] = [{"type": "text", "text": messages[1]["content"]}, {"type": "image_url", "image_url": {"url": url}}]
    return messages


def test_the_replay_counts_a_request_as_count_request_does(tmp_path):
    """The well adds per-message units; the whole request, counted at once, agrees (tool result
    under its function's name, image by the rule)."""
    client = app_with(tmp_path, "order", with_image(photo(1200, 900)))
    twin = client.get("/play/order.json?counter=o200k_base&call=2").get_json()
    sent = twin["current"]["request"]
    assert sent[-1]["role"] == "tool" and "name" not in sent[-1], "the request is sent as the transcript holds it"
    assert twin["current"]["tokens"] == get_counter("o200k_base").count_request(sent)


def test_a_remote_image_is_marked_estimated_on_the_page_and_the_json_twin(tmp_path):
    client = app_with(tmp_path, "remote", with_image("https://example.com/box.jpg"))
    twin = client.get("/play/remote.json?counter=o200k_base&call=2").get_json()
    marks = {block["id"]: block["estimated"] for block in twin["current"]["blocks"]}
    assert list(marks.values()).count(True) == 1, marks
    image_block = next(block_id for block_id, mark in marks.items() if mark)
    page = client.get(f"/play/remote?counter=o200k_base&call=2&block={image_block}").get_data(as_text=True)
    assert "≈ estimated: this message holds an image given by a link" in page and "768 × 512" in page
    assert "≈&#8239;" in page or "≈\u202f" in page
    other = next(block_id for block_id, mark in marks.items() if not mark)
    assert "≈ estimated" not in client.get(f"/play/remote?counter=o200k_base&call=2&block={other}").get_data(as_text=True)


def test_the_mark_is_said_in_french_and_chinese(tmp_path):
    client = app_with(tmp_path, "remote", with_image("https://example.com/box.jpg"))
    block = next(b["id"] for b in client.get("/play/remote.json?call=1").get_json()["current"]["blocks"] if b["estimated"])
    french = client.get(f"/play/remote?call=1&block={block}&lang=fr").get_data(as_text=True)
    chinese = client.get(f"/play/remote?call=1&block={block}&lang=zh").get_data(as_text=True)
    assert "≈ estimé" in french and "768 × 512" in french
    assert "≈ 估算" in chinese and "768 × 512" in chinese


def test_an_inline_image_is_counted_by_its_size_not_marked(tmp_path):
    small, large = (replay_tokens(tmp_path, photo(*size)) for size in [(200, 200), (2000, 1500)])
    assert large - small == 170 * (4 - 1), "a 2000 x 1500 photo is seen at 1024 x 768: 4 tiles; a 200 x 200 one: 1"
    client = app_with(tmp_path, "inline", with_image(photo(200, 200)))
    assert not any(b["estimated"] for b in client.get("/play/inline.json?call=1").get_json()["current"]["blocks"])


def replay_tokens(tmp_path, url: str) -> int:
    scenario = parse_transcript(json.dumps(with_image(url)), "photo.json")
    return replay(scenario, scenario.settings.model_copy(update={"counter": "o200k_base", "strategy": "none"})).calls[0].tokens


def test_the_block_details_name_each_image(tmp_path):
    messages = with_image(photo(640, 480))
    messages[1]["content"].append({"type": "image_url", "image_url": {"url": "https://example.com/label.jpg", "detail": "low"}})
    client = app_with(tmp_path, "two", messages)
    block = client.get("/play/two.json?call=1").get_json()["current"]["blocks"][0]["id"]
    page = client.get(f"/play/two?call=1&block={block}").get_data(as_text=True)
    assert "<code>image/png 640 × 480</code>" in page
    assert "<code>https://example.com/label.jpg (detail: low)</code>" in page
    assert "≈ estimated" not in page, "a remote image at detail low costs the same whatever its size"
