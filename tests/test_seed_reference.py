"""The seed loader runs the seed's own code, and says clearly when it cannot find it."""

import pytest

from tests.seed_reference import SEED_FILE, SeedMissing, load_seed_compact, seed_requests
from webapp.core.inputs.library import open_scenario


@pytest.mark.needs_seed
def test_the_seed_loop_makes_one_request_per_model_call_starting_with_the_system_prompt():
    scenario = open_scenario("bike-shop")
    seed = load_seed_compact(system=scenario.system)
    requests = seed_requests([item.message for item in scenario.script], seed)
    assert len(requests) == scenario.call_count
    assert requests[0] == [{"role": "system", "content": scenario.system}, scenario.script[0].message]


@pytest.mark.needs_seed
def test_the_seed_compact_shrinks_old_tool_results_when_the_window_is_small():
    scenario = open_scenario("bike-shop")
    seed = load_seed_compact(system=scenario.system, window=1500, keep=1)
    last = seed_requests([item.message for item in scenario.script], seed)[-1]
    assert any(m["role"] == "tool" and m["content"].startswith("[Truncated") for m in last)


def test_a_missing_seed_directory_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("SEEDS_DIR", str(tmp_path))
    with pytest.raises(SeedMissing, match="SEEDS_DIR"):
        load_seed_compact(system="s")


def test_a_seed_without_compact_is_refused(tmp_path, monkeypatch):
    (tmp_path / SEED_FILE).write_text("**Python**\n\n```python\ndef keep_from(m, k):\n    return 0\n```\n")
    monkeypatch.setenv("SEEDS_DIR", str(tmp_path))
    with pytest.raises(SeedMissing, match="estimate_tokens, compact"):
        load_seed_compact(system="s")
