"""The package as a user installs it: a wheel built from the checkout, installed into a fresh
virtual environment, run from an empty folder (no checkout in sight)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.install


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(folder), str(ROOT)],
        check=True, timeout=600,
    )
    [built] = folder.glob("compaction_playground-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """The bin folder of a fresh virtual environment holding only the wheel and its dependencies."""
    home = tmp_path_factory.mktemp("fresh")
    venv.create(home / "venv", with_pip=True)
    python = home / "venv" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, timeout=900)
    return home / "venv" / "bin"


@pytest.fixture
def empty(tmp_path) -> Path:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    return folder


def run(installed: Path, folder: Path, *args: str, **environment: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if key not in {"PYTHONPATH", "SCENARIOS_DIR"}}
    return subprocess.run(
        [str(installed / "compaction-playground"), *args], cwd=folder, env={**env, **environment},
        capture_output=True, text=True, timeout=300,
    )


def test_the_wheel_carries_templates_static_files_scenarios_and_translations(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder, pattern in [("templates", ".html"), ("static", ".css"), ("scenarios", ".toml")]:
        expected = {f"webapp/{folder}/{path.name}" for path in (ROOT / folder).glob(f"*{pattern}")}
        assert expected and expected <= names, f"{folder} missing from the wheel: {sorted(expected - names)}"
    for language in ("fr", "zh"):
        assert f"webapp/translations/{language}/LC_MESSAGES/messages.mo" in names
    assert "webapp/static/vendor/htmx-2.0.11/htmx.min.js" in names
    # The open models' chat templates the open-models extra's counters render, with their sources.
    templates = {f"webapp/core/counting/chat_templates/{path.name}" for path in (ROOT / "webapp/core/counting/chat_templates").iterdir()}
    assert "webapp/core/counting/chat_templates/qwen3.jinja" in templates and templates <= names


def test_the_command_line_works_from_any_folder(installed, empty):
    listed = run(installed, empty, "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split()[0] == "bike-shop" and "long-haul" in listed.stdout
    replayed = run(installed, empty, "replay", "bike-shop", "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert len(json.loads(replayed.stdout)["calls"]) == 6
    compared = run(installed, empty, "compare", "bike-shop")
    assert compared.returncode == 0 and "verdict:" in compared.stdout, compared.stderr


def test_scenarios_dir_adds_a_users_folder_to_the_built_in_ones(installed, empty):
    mine = empty / "mine"
    mine.mkdir()
    text = (ROOT / "scenarios" / "bike-shop.toml").read_text(encoding="utf-8")
    (mine / "my-shop.toml").write_text(text.replace('id = "bike-shop"', 'id = "my-shop"', 1), encoding="utf-8")
    listed = run(installed, empty, "list", SCENARIOS_DIR=str(mine))
    ids = [line.split()[0] for line in listed.stdout.splitlines()]
    built_in = len(list((ROOT / "scenarios").glob("*.toml")))
    assert "my-shop" in ids and "bike-shop" in ids and len(ids) == built_in + 1, listed.stdout + listed.stderr
    assert run(installed, empty, "replay", "my-shop", SCENARIOS_DIR=str(mine)).returncode == 0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def fetch(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8")


def test_serve_answers_every_kind_of_page(installed, empty):
    port = free_port()
    server = subprocess.Popen(
        [str(installed / "compaction-playground"), "serve", "--port", str(port), "--workers", "1"],
        cwd=empty, env={**os.environ, "CONTROL_SOCKET": str(empty / "gunicorn.ctl")},
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                status, home = fetch(base + "/")
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode()
                assert time.monotonic() < deadline, "serve did not answer in 120 s"
                time.sleep(0.3)
        assert status == 200 and "bike-shop" in home
        assert fetch(base + "/play/bike-shop?call=5")[0] == 200
        assert fetch(base + "/compare/bike-shop")[0] == 200
        status, chinese = fetch(base + "/?lang=zh")
        assert status == 200 and "锤子" in chinese  # the catalogs came with the wheel
        script = next(part.split('"')[1] for part in home.split("<script")[1:] if "htmx" in part)
        assert fetch(base + script)[0] == 200
        status, missing = fetch(base + "/play/no-such-scenario")
        assert status == 404 and "<html" in missing  # the error page renders too
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
